//! The system prompt, in three parts: the persona (`data/persona.md`, or
//! the file given with `--system`), the guide to the tool and the language
//! (`data/ral.md`: persistence, what a failed call keeps, walls, which
//! work dies with the session and which survives), and a host section
//! with the facts of this run, ending with what the capability profile
//! allows.

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
}
