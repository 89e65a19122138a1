//! The front end fits in `ral_syntax::RED_ZONE` of stack on the deepest
//! inputs it accepts, in a debug build (the larger frames): each case runs
//! on a thread whose stack is just over the red zone, so `with_stack` does
//! not switch segments and an overrun would crash this test.

use ral_syntax::{parse, SourceId, RED_ZONE};

fn on_tight_stack(src: String) {
    std::thread::Builder::new()
        .stack_size(RED_ZONE + 512 * 1024)
        .spawn(move || {
            let _ = parse(&src, SourceId(0));
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn the_deepest_inputs_fit_the_red_zone() {
    for (open, close) in [("{", "}"), ("[", "]"), ("(", ")"), ("$[", "]"), ("!{", "}")] {
        on_tight_stack(format!("echo {}x{}", open.repeat(63), close.repeat(63)));
        on_tight_stack(format!("echo {}x{}", open.repeat(300), close.repeat(300)));
    }
    // Nested blocks holding statements, each with a long operator chain.
    let mut src = String::new();
    for _ in 0..60 {
        src.push_str("{ let a = $[1");
        for _ in 0..120 {
            src.push_str(" + 1");
        }
        src.push_str("]\n");
    }
    src.push_str(&"}".repeat(60));
    on_tight_stack(src);
    // Prefix runs and tags.
    on_tight_stack(format!("echo $[{}1]", "-".repeat(200)));
    on_tight_stack(format!("echo {}x", "`t ".repeat(200)));
}
