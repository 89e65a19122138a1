//! The `exarch` binary: see `exarch::cli`.

fn main() {
    std::process::exit(exarch::cli::main());
}
