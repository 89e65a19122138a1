//! The compiler's last-use moves, read off the bytecode: a local read for
//! the last time on every path is moved out of its register (`move`, or an
//! instruction marked `(taken)`), so the value it held can be updated in
//! place by whoever receives it; a local read again later, or twice by one
//! instruction, is copied. What the moves make observable (nothing: updates
//! in place are never visible through another reference) is checked by the
//! golden cases of `golden/in_place.ral`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use ral_syntax::SourceId;
use ral_types::{check_program, CheckOptions, TypeEnv};
use ral_vm::{Mobile, Vm};

/// The disassembly of every proto `src` compiles to, one string each.
fn bytecode(src: &str) -> Vec<String> {
    let parsed = ral_syntax::parse(src, SourceId(0));
    assert!(!parsed.has_errors(), "{:?}", parsed.diagnostics);
    let opts = CheckOptions { is_script: true };
    let checked = check_program(&parsed.program, SourceId(0), &TypeEnv::new(), &opts);
    assert!(!checked.has_errors(), "{:?}", checked.diagnostics);
    let module = ral_ir::lower(&parsed.program, &checked, SourceId(0));
    let mut vm = Vm::new(Mobile::default());
    vm.load(&module).expect("compiles");
    (0..vm.proto_count())
        .filter_map(|i| vm.proto(u32::try_from(i).ok()?))
        .map(ral_vm::op::disassemble)
        .collect()
}

/// The lines of the protos whose code has an instruction named `op`.
fn lines_of<'a>(protos: &'a [String], op: &str) -> Vec<&'a str> {
    protos
        .iter()
        .flat_map(|p| p.lines())
        .filter(|l| l.split_whitespace().nth(1) == Some(op))
        .collect()
}

#[test]
fn a_fold_callback_hands_its_accumulator_on() {
    let code = bytecode(
        "let m = fold { |acc i|\n  let k = \"k$i\"\n  return [:, ...$acc, $k: $i]\n} [:] !{range 0 3}\n",
    );
    let spreads = lines_of(&code, "map-spread");
    assert_eq!(spreads.len(), 1, "{code:#?}");
    assert!(spreads[0].ends_with("(taken)"), "{code:#?}");
    let inserts = lines_of(&code, "map-insert");
    assert!(inserts[0].ends_with("(taken)"), "{code:#?}");
    // The literal is built in a temporary and moved, not copied, into the
    // result.
    let callback = code
        .iter()
        .find(|p| p.contains("map-spread"))
        .expect("the callback");
    assert!(callback.contains(" move "), "{callback}");
}

#[test]
fn a_local_read_again_later_is_copied() {
    let code = bytecode(
        "!{\n  let a = [:, x: 1]\n  let b = [:, ...$a, y: 2]\n  echo !{to-json $a} !{to-json $b}\n}\n",
    );
    let spreads = lines_of(&code, "map-spread");
    assert_eq!(spreads.len(), 1, "{code:#?}");
    assert!(!spreads[0].contains("taken"), "{code:#?}");
}

#[test]
fn each_branch_of_an_if_takes_what_no_later_code_reads() {
    let code = bytecode(
        "let m = fold { |acc i|\n  let k = \"k$i\"\n  if $[$i % 2 == 0] { [:, ...$acc, $k: 1] } else { [:, ...$acc, $k: 2] }\n} [:] !{range 0 3}\n",
    );
    let spreads = lines_of(&code, "map-spread");
    assert_eq!(spreads.len(), 2, "{code:#?}");
    assert!(spreads.iter().all(|l| l.ends_with("(taken)")), "{code:#?}");
}

#[test]
fn a_read_before_a_branch_that_reads_again_is_copied() {
    let code = bytecode(
        "let f = { |acc|\n  let b = [:, ...$acc, x: 1]\n  if !{has $b y} { $acc } else { $b }\n}\necho !{to-json !{f [:]}}\n",
    );
    let spreads = lines_of(&code, "map-spread");
    assert_eq!(spreads.len(), 1, "{code:#?}");
    assert!(!spreads[0].contains("taken"), "{code:#?}");
}

#[test]
fn a_local_read_twice_by_one_instruction_is_copied() {
    let code =
        bytecode("let f = { |a| [:, ...$a, ...$a, z: 1] }\necho !{to-json !{f [:, x: 2]}}\n");
    let spreads = lines_of(&code, "map-spread");
    assert_eq!(spreads.len(), 2, "{code:#?}");
    assert!(spreads.iter().all(|l| !l.contains("taken")), "{code:#?}");
}

#[test]
fn call_arguments_move_at_their_last_use_only() {
    let code = bytecode(
        "let f = { |x| length $x }\nlet g = { |xs|\n  let n = f $xs\n  let m = f $xs\n  $[$n + $m]\n}\necho !{g [1, 2]}\n",
    );
    // In `g`, the first call copies `xs` into the argument register and
    // the second moves it.
    let g = code
        .iter()
        .find(|p| p.matches("call-").count() == 2)
        .expect("g's proto");
    let copies = g.lines().filter(|l| l.contains(" copy ")).count();
    let moves = g.lines().filter(|l| l.contains(" move ")).count();
    assert!(copies >= 1 && moves >= 1, "{g}");
}

#[test]
fn a_guard_cleanup_compiled_twice_takes_only_what_both_copies_may() {
    // The cleanup reads `m` after the body spread it: the body's read is
    // not the last, and the cleanup's two copies agree.
    let code = bytecode(
        "let f = { |m|\n  guard { [:, ...$m, b: 2] } { echo !{to-json $m} }\n}\necho !{to-json !{f [:, a: 1]}}\n",
    );
    let spreads = lines_of(&code, "map-spread");
    assert_eq!(spreads.len(), 1, "{code:#?}");
    assert!(!spreads[0].contains("taken"), "{code:#?}");
}

#[test]
fn a_field_nothing_reads_again_is_taken_from_its_record() {
    // `acc[m]` is read once and `acc` is read afterwards only for `n`:
    // the map is taken out of the accumulator, so the spread can update
    // it in place.
    let code = bytecode(
        "let r = fold { |acc w|\n  let m = [:, ...$acc[m], $w: 1]\n  [m: $m, n: $[$acc[n] + 1]]\n} [m: [:], n: 0] [a, b]\n",
    );
    let fields = lines_of(&code, "index-field");
    let m = fields
        .iter()
        .find(|l| l.contains("'m'"))
        .expect("the read of acc[m]");
    assert!(m.contains("(taken)"), "{code:#?}");
}

#[test]
fn a_field_read_again_is_not_taken() {
    let code = bytecode(
        "let f = { |r|\n  let a = $r[x]\n  let b = $r[x]\n  [...$a, ...$b]\n}\necho !{to-json !{f [x: [1]]}}\n",
    );
    let fields = lines_of(&code, "index-field");
    assert_eq!(fields.len(), 2, "{code:#?}");
    assert!(!fields[0].contains("taken"), "{code:#?}");
    assert!(fields[1].contains("(taken)"), "{code:#?}");
}

#[test]
fn a_field_read_before_a_whole_read_in_a_branch_is_not_taken() {
    let code = bytecode(
        "let f = { |r flag|\n  let a = $r[x]\n  if $flag { $a } else { [...$a, ...!{map { |v| $v } $r[y]}] }\n}\necho !{to-json !{f [x: [1], y: [2]] true}}\n",
    );
    // `r[x]` is read once, and later only `r[y]`: taken. Had the branch
    // read `r` whole, it would not be.
    let fields = lines_of(&code, "index-field");
    assert!(
        fields
            .iter()
            .any(|l| l.contains("'x'") && l.contains("(taken)")),
        "{code:#?}"
    );
    let whole = bytecode(
        "let f = { |r flag|\n  let a = $r[x]\n  if $flag { $a } else { [...$a, ...!{map { |v| $v[0] } [$r[y]]}] }\n  to-json $r\n}\necho !{f [x: [1], y: [2]] true}\n",
    );
    let fields = lines_of(&whole, "index-field");
    assert!(fields.iter().all(|l| !l.contains("taken")), "{whole:#?}");
}
