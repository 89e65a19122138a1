//! `help NAME` (deviations.md S12): every name the catalogue lists, each
//! builtin and prelude function, `map` among them, answers with its own
//! entry; a name the catalogue does not hold is a message, never a
//! failure; bare `help` is still the catalogue.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;
use support::run_program;

/// Every public name of the builtin table a bare machine installs.
fn catalogue() -> Vec<&'static str> {
    let vm = ral_vm::Vm::new(ral_vm::Mobile::default());
    ral_types::builtin_table()
        .iter()
        .map(|b| b.name)
        .filter(|n| !n.starts_with('_'))
        .filter(|n| vm.has_builtin(n))
        .collect()
}

#[test]
fn help_answers_for_every_name_in_the_catalogue() {
    let names = catalogue();
    assert!(names.contains(&"map") && names.contains(&"from-json"));
    assert!(names.len() > 100, "{} names", names.len());
    // One `help` per name, each quoted so a name is never read as syntax.
    let program: String = names.iter().map(|n| format!("help '{n}'\n")).collect();
    let out = run_program(&program);
    assert_eq!(out.status, 0, "{:?}", out.detail);
    // Each entry begins with its name and scheme, in the order asked.
    let headers: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| !l.starts_with(' '))
        .filter_map(|l| l.split(" : ").next())
        .collect();
    assert_eq!(headers, names);
    for b in ral_types::builtin_table()
        .iter()
        .filter(|b| names.contains(&b.name))
    {
        assert!(
            out.stdout.contains(&format!("\n  {}\n", b.doc)),
            "{}",
            b.name
        );
    }
}

#[test]
fn help_map_has_its_scheme_and_several_names_their_entries() {
    let out = run_program("help map\nhelp length from-json\n");
    assert_eq!(out.status, 0, "{:?}", out.detail);
    let map = ral_types::builtin_table().get("map").unwrap();
    let first = out.stdout.lines().next().unwrap();
    assert_eq!(
        first,
        format!("map : {}", ral_types::print_scheme(map.scheme(), None))
    );
    assert!(out.stdout.contains("\nlength : "), "{}", out.stdout);
    assert!(out.stdout.contains("\nfrom-json : "), "{}", out.stdout);
}

#[test]
fn an_unknown_name_is_a_message_and_bare_help_is_the_catalogue() {
    let out = run_program("help no-such-thing _admit\necho still\n");
    assert_eq!(out.status, 0, "{:?}", out.detail);
    assert_eq!(
        out.stdout,
        "help: `no-such-thing` is not in the catalogue; `explain no-such-thing` says what it is\n\
         help: `_admit` is not in the catalogue; `explain _admit` says what it is\n\
         still\n"
    );
    let out = run_program("help\n");
    assert!(out.stdout.starts_with("Builtins:\n"), "{}", out.stdout);
    assert!(out.stdout.contains("\nPrelude:\n"), "{}", out.stdout);
}
