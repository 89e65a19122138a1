//! The seam: exarch uses `ral_host`'s public API only, and tokio and the
//! HTTP client only in the provider layer.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn sources() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in ["src", "benches"] {
        rust_files(&root.join(d), &mut files);
    }
    assert!(files.len() > 10, "found {files:?}");
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            (f, text)
        })
        .collect()
}

#[test]
fn exarch_names_no_internal_crate() {
    for (file, text) in sources() {
        for internal in [
            "ral_vm",
            "ral_types",
            "ral_syntax",
            "ral_ir",
            "TurnFrame",
            "IoFrame",
            "eval_turn",
        ] {
            assert!(
                !text.contains(internal),
                "{} names {internal}",
                file.display()
            );
        }
    }
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
            .unwrap_or_default();
    for internal in ["ral-vm", "ral-types", "ral-syntax", "ral-ir"] {
        assert!(
            !manifest.contains(internal),
            "Cargo.toml depends on {internal}"
        );
    }
}

#[test]
fn tokio_and_http_live_only_in_the_provider_layer() {
    for (file, text) in sources() {
        let in_provider = file.components().any(|c| c.as_os_str() == "provider");
        if !in_provider {
            for name in ["tokio::", "reqwest::"] {
                assert!(!text.contains(name), "{} names {name}", file.display());
            }
        }
    }
}
