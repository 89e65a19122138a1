//! The capability profiles exarch runs its tool calls under (spec §12.12).
//!
//! Every call runs under a session ceiling made of one named profile,
//! shipped in the binary as an ordinary profile script (`data/profiles/`),
//! and any `--capabilities` files, which meet it and so can only narrow
//! it. Both enforcement layers hold the ceiling: ral's own file operations
//! fail with `denied by grant: … (exarch profile `NAME`)`, and every
//! program a call starts runs in the OS sandbox, whose refusals carry a
//! hint naming the profile. The system prompt tells the model what its
//! profile allows ([`Profile::prompt_section`]).
//!
//! In descending authority:
//!
//! | profile | reads | writes | network |
//! |---|---|---|---|
//! | `dangerous` | anywhere | anywhere | on |
//! | `reasonable` (default) | anywhere | workspace, Git directory, scratch, caches | on |
//! | `read-only` | anywhere | nowhere | on |
//! | `minimal` | anywhere | nowhere | off |
//! | `confined` | workspace, scratch | workspace, scratch | off |

use std::path::Path;

use clap::ValueEnum;
use ral_host::profile::{load_builtin_profile, load_profile};
use ral_host::{Capabilities, Color};

/// A named profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Profile {
    /// No attenuation: for an agent already inside a container or VM.
    Dangerous,
    /// Reads anywhere; writes to the workspace, scratch and caches; network.
    #[default]
    Reasonable,
    /// Reads anywhere; writes nowhere; network.
    ReadOnly,
    /// Reads anywhere; writes nowhere; no network.
    Minimal,
    /// Reads and writes only the workspace and scratch; no network.
    Confined,
}

impl Profile {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Dangerous => "dangerous",
            Profile::Reasonable => "reasonable",
            Profile::ReadOnly => "read-only",
            Profile::Minimal => "minimal",
            Profile::Confined => "confined",
        }
    }

    /// The profile script.
    pub fn source(self) -> &'static str {
        match self {
            Profile::Dangerous => include_str!("../data/profiles/dangerous.ral"),
            Profile::Reasonable => include_str!("../data/profiles/reasonable.ral"),
            Profile::ReadOnly => include_str!("../data/profiles/read-only.ral"),
            Profile::Minimal => include_str!("../data/profiles/minimal.ral"),
            Profile::Confined => include_str!("../data/profiles/confined.ral"),
        }
    }

    /// What it allows, in one sentence for the model.
    pub fn allows(self) -> &'static str {
        match self {
            Profile::Dangerous => {
                "everything the exarch process itself may do (no attenuation: the container or \
                 machine around you is the boundary)"
            }
            Profile::Reasonable => {
                "reading anywhere; writing only in the workspace (the starting directory and its \
                 Git directory), the scratch directory and the package caches; network access"
            }
            Profile::ReadOnly => "reading anywhere; writing nowhere; network access",
            Profile::Minimal => "reading anywhere; writing nowhere; no network",
            Profile::Confined => {
                "reading and writing only the workspace (the starting directory) and the scratch \
                 directory; no network"
            }
        }
    }

    /// The label its denials carry.
    pub fn label(self) -> String {
        format!("exarch profile `{}`", self.name())
    }
}

/// The session's ceiling and the warnings to print: `profile`, then each
/// `--capabilities` file, all decoded against `cwd`.
///
/// The named profile is exarch's own, so it loads leniently
/// ([`load_builtin_profile`]): a path it cannot resolve here (no `HOME`, an
/// XDG directory that is the root, an unclaimed `gitdir:` pointer) is left
/// out, which only narrows it, and named in one warning line each, and
/// exarch starts. A `--capabilities` file is the user's and loads
/// strictly: any failure is the error, the report for standard error.
pub fn ceiling(
    profile: Profile,
    files: &[String],
    cwd: &Path,
) -> Result<(Capabilities, Vec<String>), String> {
    let name = format!("<profile {}>", profile.name());
    let (layer, left_out) =
        load_builtin_profile(&name, profile.source(), cwd, &profile.label(), Color::Never)
            .map_err(|e| format!("the {} profile could not be loaded:\n{e}", profile.name()))?;
    let warnings = left_out
        .iter()
        .map(|o| {
            format!(
                "warning: the {} profile leaves out its {} entry `{}`: {}",
                profile.name(),
                o.list,
                o.entry,
                o.reason
            )
        })
        .collect();
    let mut caps = Capabilities::root().with_layer(layer);
    for file in files {
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read capability profile {file}: {e}"))?;
        let label = format!(
            "profile `{}`",
            Path::new(file)
                .file_name()
                .map_or_else(|| file.clone(), |n| n.to_string_lossy().into_owned())
        );
        let layer = load_profile(file, &text, cwd, &label, Color::Never)?;
        caps = caps.with_layer(layer);
    }
    Ok((caps, warnings))
}

/// The system prompt's section on capabilities.
pub fn prompt_section(profile: Profile, ceiling: &Capabilities, extra_files: usize) -> String {
    let mut out = format!(
        "# Capabilities\n\nYour tool calls run under the capability profile `{}`, which allows {}.\n",
        profile.name(),
        profile.allows()
    );
    if extra_files > 0 {
        out.push_str(
            "The user narrowed it further with capability files; where they are stricter, they \
             win.\n",
        );
    }
    let detail = ceiling.describe();
    if !detail.is_empty() {
        out.push_str(&format!("In detail: {detail}.\n"));
    }
    if profile != Profile::Dangerous || extra_files > 0 {
        out.push_str(
            "What it refuses fails at once, it never hangs. ral's own reads and writes (redirects, \
             file builtins) fail with `denied by grant: … (exarch profile …)`. Programs you start \
             run in an OS sandbox: a refused file access shows as \"Permission denied\" or \
             \"Operation not permitted\", a refused network access as a socket error, and the \
             failure carries a hint naming the profile. A `grant` you write can narrow the profile \
             but never widen it. Do not retry a refused action or look for a way around it: work \
             within the profile, or tell the user what you need and why.\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_named_profile_loads() {
        let cwd = std::env::temp_dir();
        for p in Profile::value_variants() {
            let caps = ceiling(*p, &[], &cwd).unwrap().0;
            assert_eq!(caps.layers().len(), 1);
            let confines = caps.layers()[0].confines();
            assert_eq!(confines, *p != Profile::Dangerous, "{p:?}");
            assert_eq!(caps.layers()[0].label.as_deref(), Some(p.label().as_str()));
        }
    }

    #[test]
    fn the_descending_profiles_take_away_what_they_say() {
        let cwd = std::env::temp_dir();
        let layer = |p: Profile| ceiling(p, &[], &cwd).unwrap().0.layers()[0].clone();
        assert_eq!(layer(Profile::Reasonable).net, None);
        assert_eq!(layer(Profile::ReadOnly).net, None);
        assert_eq!(layer(Profile::Minimal).net, Some(false));
        assert_eq!(layer(Profile::Confined).net, Some(false));
        for p in [Profile::ReadOnly, Profile::Minimal] {
            let l = layer(p);
            let (_, write) = l.fs.as_ref().unwrap().lists();
            assert!(write.is_empty(), "{p:?} writes {write:?}");
        }
    }

    #[test]
    fn the_prompt_section_names_the_profile_and_how_denials_look() {
        let cwd = std::env::temp_dir();
        let (caps, _) = ceiling(Profile::Confined, &[], &cwd).unwrap();
        let s = prompt_section(Profile::Confined, &caps, 0);
        assert!(s.contains("`confined`") && s.contains("no network"), "{s}");
        assert!(s.contains("denied by grant"), "{s}");
        assert!(
            s.contains(&cwd.canonicalize().unwrap().display().to_string()),
            "{s}"
        );
    }
}
