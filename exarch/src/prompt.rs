//! The system prompt, in three parts: the persona (`data/persona.md`, or
//! the file given with `--system`), the guide to the tool and the language
//! (`data/ral.md`: persistence, what a failed call keeps, walls, which
//! work dies with the session and which survives), and a host section
//! with the facts of this run, ending with what the capability profile
//! allows. Then the project's own instructions ([`project_instructions`]):
//! every `AGENTS.md` from the repository root down to the working
//! directory, nearest last, each under its path, size-capped; off with
//! `--no-project-instructions`.

use std::path::Path;

/// The built-in persona.
pub const PERSONA: &str = include_str!("../data/persona.md");
/// The guide to the `ral` tool and the language.
pub const RAL_GUIDE: &str = include_str!("../data/ral.md");

/// The facts of this run the prompt states.
#[derive(Clone, Debug)]
pub struct HostFacts<'a> {
    pub cwd: &'a Path,
    /// The default call wall, seconds.
    pub default_timeout: u64,
    pub headless: bool,
    /// `YYYY-MM-DD`.
    pub date: &'a str,
    /// The capabilities section ([`crate::profiles::prompt_section`]).
    pub capabilities: Option<&'a str>,
}

/// The system prompt in the parts that change separately: the base
/// (persona, guide, the session's facts), the capabilities section (a
/// profile switch replaces it) and the project instructions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SystemPrompt {
    pub base: String,
    pub capabilities: String,
    pub project: String,
}

impl SystemPrompt {
    /// A prompt that is all base (tests, `--system` experiments).
    pub fn plain(text: impl Into<String>) -> SystemPrompt {
        SystemPrompt {
            base: text.into(),
            ..SystemPrompt::default()
        }
    }

    /// The text sent: the base, then the capabilities, then the project
    /// instructions, each set off by a blank line.
    pub fn render(&self) -> String {
        let mut out = self.base.trim_end().to_owned();
        for part in [&self.capabilities, &self.project] {
            let part = part.trim();
            if !part.is_empty() {
                if !out.is_empty() {
                    out.push_str("\n\n");
                }
                out.push_str(part);
            }
        }
        if !out.is_empty() {
            out.push('\n');
        }
        out
    }
}

/// Assembles the prompt; `persona` replaces the built-in persona.
pub fn system_prompt(persona: Option<&str>, facts: &HostFacts<'_>) -> String {
    build(persona, facts).render()
}

/// The prompt's parts; the capabilities section is `facts.capabilities`.
pub fn build(persona: Option<&str>, facts: &HostFacts<'_>) -> SystemPrompt {
    let mut out = String::new();
    out.push_str(persona.unwrap_or(PERSONA).trim());
    out.push_str("\n\n");
    let guide = RAL_GUIDE.replace(
        "60 seconds unless",
        &format!("{} seconds unless", facts.default_timeout),
    );
    out.push_str(guide.trim());
    out.push_str("\n\n# This session\n\n");
    out.push_str(&format!(
        "- Working directory at the start: {}\n- Operating system: {} ({})\n- Date: {}\n",
        facts.cwd.display(),
        std::env::consts::OS,
        std::env::consts::ARCH,
        facts.date
    ));
    if facts.headless {
        out.push_str(
            "- You are running unattended: nobody will answer questions. Do the whole task, \
             then end with a short final message that states the outcome; that message is the \
             run's result.\n",
        );
    }
    SystemPrompt {
        base: out,
        capabilities: facts.capabilities.unwrap_or_default().to_owned(),
        project: String::new(),
    }
}

/// The file name of project instructions.
pub const INSTRUCTIONS_FILE: &str = "AGENTS.md";
/// The most of one instructions file the prompt holds, in bytes.
pub const INSTRUCTIONS_FILE_CAP: usize = 16 * 1024;
/// The most of all of them, in bytes; the nearest files are kept first.
pub const INSTRUCTIONS_TOTAL_CAP: usize = 48 * 1024;

/// The directories whose instructions apply to `cwd`, farthest first: the
/// repository root (the nearest ancestor holding `.git`) down to `cwd`, or
/// `cwd` alone outside a repository.
pub fn instruction_dirs(cwd: &Path) -> Vec<std::path::PathBuf> {
    let mut chain: Vec<std::path::PathBuf> = Vec::new();
    let mut dir = Some(cwd);
    while let Some(d) = dir {
        chain.push(d.to_path_buf());
        if d.join(".git").exists() {
            chain.reverse();
            return chain;
        }
        dir = d.parent();
    }
    vec![cwd.to_path_buf()]
}

/// The project-instructions section for `cwd` (empty when there are
/// none): each `AGENTS.md` under a heading naming its path, farthest
/// first so the nearest comes last, each cut at [`INSTRUCTIONS_FILE_CAP`]
/// and all of them within [`INSTRUCTIONS_TOTAL_CAP`] (the farthest are
/// left out first). A cut or a left-out file says how to read it whole.
pub fn project_instructions(cwd: &Path) -> String {
    let files: Vec<(std::path::PathBuf, String)> = instruction_dirs(cwd)
        .into_iter()
        .map(|d| d.join(INSTRUCTIONS_FILE))
        .filter(|p| p.is_file())
        .filter_map(|p| {
            let bytes = std::fs::read(&p).ok()?;
            Some((p, String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect();
    if files.is_empty() {
        return String::new();
    }
    // Nearest first while budgeting, so the farthest give way.
    let mut kept: Vec<String> = Vec::new();
    let mut left_out: Vec<String> = Vec::new();
    let mut total = 0usize;
    for (path, text) in files.iter().rev() {
        let shown = path.display();
        let body = text.trim();
        let body = if body.len() > INSTRUCTIONS_FILE_CAP {
            let mut cut = INSTRUCTIONS_FILE_CAP;
            while !body.is_char_boundary(cut) {
                cut -= 1;
            }
            format!(
                "{}\n\n[… cut here: the file is {} bytes; read the rest with `cat '{shown}'`]",
                &body[..cut],
                body.len()
            )
        } else {
            body.to_owned()
        };
        if total + body.len() > INSTRUCTIONS_TOTAL_CAP {
            left_out.push(shown.to_string());
            continue;
        }
        total += body.len();
        kept.push(format!("## {shown}\n\n{body}\n"));
    }
    kept.reverse();
    let mut out = String::from(
        "# Project instructions\n\nThe project gives these instructions for working in it. \
         Where they disagree, the file nearest the working directory (the last) wins; what the \
         user asks wins over all of them.\n\n",
    );
    out.push_str(&kept.join("\n"));
    if !left_out.is_empty() {
        out.push_str(&format!(
            "\n(Left out for size, farthest first: {}. Read them with `cat` if they matter.)\n",
            left_out.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_states_the_session_truths() {
        let p = system_prompt(
            None,
            &HostFacts {
                cwd: Path::new("/work/x"),
                default_timeout: 45,
                headless: true,
                date: "2026-01-02",
                capabilities: Some("# Capabilities\n\nprofile `x`"),
            },
        );
        assert!(p.contains("stay bound in every later call"));
        assert!(p.contains("their bindings are still bound"));
        assert!(p.contains("Do not replay"));
        assert!(p.contains("45 seconds unless"));
        assert!(p.contains("stopped when the session ends"));
        assert!(p.contains("survives the session"));
        assert!(p.contains("/work/x") && p.contains("unattended"));
        assert!(p.ends_with("# Capabilities\n\nprofile `x`\n"), "{p}");
        // Nothing claims a failed call's bindings are gone.
        let lower = p.to_lowercase();
        for false_claim in ["rolled back", "discarded", "are lost", "transaction"] {
            assert!(!lower.contains(false_claim), "{false_claim}");
        }
        let custom = system_prompt(
            Some("Be terse."),
            &HostFacts {
                cwd: Path::new("/"),
                default_timeout: 60,
                headless: false,
                date: "2026-01-02",
                capabilities: None,
            },
        );
        assert!(custom.starts_with("Be terse.\n\n# Your tool"));
        assert!(!custom.contains("unattended"));
    }

    #[allow(clippy::unwrap_used)]
    #[test]
    fn instructions_run_from_the_repository_root_to_the_working_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("repo");
        let sub = root.join("crates/app");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        // Above the repository: not read.
        std::fs::write(tmp.path().join(INSTRUCTIONS_FILE), "OUTSIDE").unwrap();
        std::fs::write(root.join(INSTRUCTIONS_FILE), "Use tabs.\n").unwrap();
        std::fs::write(sub.join(INSTRUCTIONS_FILE), "Run `cargo test -p app`.\n").unwrap();
        let s = project_instructions(&sub);
        assert!(s.starts_with("# Project instructions"), "{s}");
        assert!(!s.contains("OUTSIDE"), "{s}");
        let outer = s
            .find(&format!("## {}", root.join(INSTRUCTIONS_FILE).display()))
            .unwrap();
        let inner = s
            .find(&format!("## {}", sub.join(INSTRUCTIONS_FILE).display()))
            .unwrap();
        assert!(outer < inner, "nearest last:\n{s}");
        assert!(s.contains("Use tabs.") && s.contains("cargo test -p app"));
        // Outside a repository, only the working directory's file.
        let lone = tmp.path().join("lone");
        std::fs::create_dir_all(&lone).unwrap();
        assert_eq!(instruction_dirs(&lone), vec![lone.clone()]);
        assert_eq!(project_instructions(&lone), "");
        std::fs::write(lone.join(INSTRUCTIONS_FILE), "alone").unwrap();
        assert!(project_instructions(&lone).contains("alone"));
        // A worktree's `.git` file marks the root too.
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(wt.join("x")).unwrap();
        std::fs::write(wt.join(".git"), "gitdir: /elsewhere\n").unwrap();
        assert_eq!(
            instruction_dirs(&wt.join("x")),
            vec![wt.clone(), wt.join("x")]
        );
    }

    #[allow(clippy::unwrap_used)]
    #[test]
    fn instructions_are_capped_per_file_and_in_all_nearest_kept_first() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let mut dir = root.clone();
        for i in 0..4 {
            std::fs::write(
                dir.join(INSTRUCTIONS_FILE),
                format!("level {i}\n{}", "é".repeat(20_000)),
            )
            .unwrap();
            dir = dir.join(format!("d{i}"));
            std::fs::create_dir_all(&dir).unwrap();
        }
        let cwd = dir.parent().unwrap();
        let s = project_instructions(cwd);
        assert!(s.len() < INSTRUCTIONS_TOTAL_CAP + 2048, "{}", s.len());
        // Each file is cut, saying how to read it whole.
        assert_eq!(
            s.matches("[… cut here: the file is 40008 bytes").count(),
            2,
            "{}",
            &s[..200]
        );
        // The two nearest are kept; the two farthest are named as left out.
        assert!(s.contains("level 3") && s.contains("level 2"));
        assert!(!s.contains("level 0") && !s.contains("level 1"));
        assert!(s.contains("Left out for size"), "{}", &s[s.len() - 400..]);
    }
}
