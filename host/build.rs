//! Link settings of the `ral` and `ralc` binaries.
//!
//! On Linux they are linked as position-dependent executables (`-no-pie`):
//! a position-independent one is relocated by the dynamic loader at every
//! start (about 14,000 relative relocations, writing and so copying the
//! pages they land in), which was a quarter of the instructions and a third
//! of the page faults of `ral -c ''`. The code itself is unchanged (it is
//! compiled position-independent either way); only the executable's load
//! address is fixed, so the executable image is not randomised.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" {
        for bin in ["ral", "ralc"] {
            println!("cargo:rustc-link-arg-bin={bin}=-no-pie");
        }
    }
}
