//! Markers below the working directory. An agent working from a directory
//! above a project (its parent, say) that names a file inside it
//! (`cat proj/secret/key.txt`) never meets the project's marker on the
//! walk up from its working directory. So each candidate path below the
//! working directory is also checked against the nearest marker between
//! it and the working directory: a marker there with an active policy that
//! matches drops the event, one whose capture policy is invalid makes it
//! metadata-only (fail closed), and a marker without a policy is
//! transparent, as on the walk up.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::path::{self, NormPath};
use super::policy::{MatchOutcome, Policy};
use super::{Decision, Disposition, ExtractionState, PolicyState, ToolFamily};
use crate::event::Event;
use crate::scope::{marker, CaptureConfig};

/// Directories looked at below the working directory, for one event.
pub const MAX_NESTED_LOOKS: usize = 64;

/// The decision a marker below the working directory imposes on a call
/// with these candidate `paths`, if any.
pub fn decide(paths: &[NormPath], home: Option<&NormPath>, event: &Event) -> Option<Decision> {
    let cwd = event.cwd.as_deref().and_then(super::norm_abs)?;
    if !path::native(cwd.flavour) {
        return None;
    }
    let cwd_dir = PathBuf::from(&cwd.text);
    let mut looks = 0usize;
    let mut seen: HashMap<PathBuf, Option<CaptureConfig>> = HashMap::new();
    let family = event.tool_name.as_deref().map_or(ToolFamily::Unknown, |n| {
        super::classify_tool(&event.agent, n).0
    });
    for p in paths {
        if !path::native(p.flavour) {
            continue;
        }
        let file = Path::new(&p.text);
        let Ok(below) = file.strip_prefix(&cwd_dir) else {
            continue;
        };
        if below.components().count() < 2 {
            continue;
        }
        // From the candidate's directory up to, not including, the cwd.
        let mut dir = file.parent();
        while let Some(d) = dir {
            if d == cwd_dir || !d.starts_with(&cwd_dir) {
                break;
            }
            looks += 1;
            if looks > MAX_NESTED_LOOKS {
                return None;
            }
            let cfg = seen
                .entry(d.to_path_buf())
                .or_insert_with(|| marker_policy(d, home.is_some()))
                .clone();
            match cfg {
                None | Some(CaptureConfig::Inactive { .. }) | Some(CaptureConfig::Absent) => {
                    dir = d.parent();
                    continue;
                }
                Some(CaptureConfig::Invalid { .. }) => {
                    return Some(Decision::new(
                        PolicyState::Invalid,
                        family,
                        paths.len(),
                        Disposition::MetadataOnly,
                        ExtractionState::Extracted,
                    ));
                }
                Some(CaptureConfig::Active { patterns, .. }) => {
                    let md = super::norm_abs(d.to_str()?)?;
                    let mut policy = Policy::compile(&patterns, &md, home).ok()?;
                    policy.reset_work();
                    if policy.matches(p) != MatchOutcome::NoMatch {
                        return Some(Decision::new(
                            PolicyState::Active,
                            family,
                            paths.len(),
                            Disposition::Drop,
                            ExtractionState::Extracted,
                        ));
                    }
                    // The nearest marker with a policy decides for this path.
                    break;
                }
            }
        }
    }
    None
}

/// The capture policy of `dir`'s marker, when it has one (a directory of
/// that name is no marker; anything else that cannot be read fails closed).
fn marker_policy(dir: &Path, home_known: bool) -> Option<CaptureConfig> {
    crate::scope::walk::marker_in(dir).map(|m| marker::read(&m, home_known).capture)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_project_below_the_working_directory_keeps_its_exclusions() {
        let t = tempfile::tempdir().unwrap();
        let top = t.path().join("work");
        std::fs::create_dir_all(top.join("proj/secret")).unwrap();
        std::fs::create_dir_all(top.join("proj/src")).unwrap();
        std::fs::write(
            top.join("proj/.ai-memory.toml"),
            "[capture]\nignore_paths = [\"secret/**\"]\n",
        )
        .unwrap();
        let ev = |cmd: &str| {
            crate::event::normalize(
                "claude-code",
                None,
                &json!({"hook_event_name": "PreToolUse", "cwd": top.to_str().unwrap(),
                        "tool_name": "Bash", "tool_input": {"command": cmd}}),
            )
        };
        let read = |p: &str| {
            crate::event::normalize(
                "claude-code",
                None,
                &json!({"hook_event_name": "PreToolUse", "cwd": top.to_str().unwrap(),
                        "tool_name": "Read", "tool_input": {"file_path": p}}),
            )
        };
        let d = |e: &Event| super::super::decide(&CaptureConfig::Absent, None, e).disposition;
        assert_eq!(d(&ev("cat proj/secret/key.txt")), Disposition::Drop);
        assert_eq!(d(&read("proj/secret/key.txt")), Disposition::Drop);
        assert_eq!(d(&ev("cat proj/src/main.rs")), Disposition::Keep);
        assert_eq!(d(&ev("ls")), Disposition::Keep);
        // A broken marker below fails closed.
        std::fs::create_dir_all(top.join("other/x")).unwrap();
        std::fs::write(
            top.join("other/.ai-memory.toml"),
            "[capture]\nignore_paths = 3\n",
        )
        .unwrap();
        assert_eq!(d(&ev("cat other/x/y.txt")), Disposition::MetadataOnly);
    }
}
