//! Per-field resolution: flag > env > marker > fallback (DESIGN §2).

use std::path::Path;

use super::env::{ENV_PROJECT, ENV_WORKSPACE};
use super::marker::{self, Declared, Marker};
use super::walk::Walk;
use super::*;
use crate::names::{is_valid_name, name_problem};

/// The workspace used when nothing names one.
pub const DEFAULT_WORKSPACE: &str = "default";

/// Resolve the scope for `input`.
///
/// In [`Mode::Hook`] (also when `input.mode` is `None`) this never fails:
/// an unusable marker or environment value becomes one warning and the
/// field falls through to the next source. In [`Mode::Client`] the same
/// problems are errors.
pub fn resolve(input: &ScopeInput) -> Result<Scope, ScopeError> {
    let mode = input.mode.unwrap_or(Mode::Hook);
    let client = mode == Mode::Client;
    let mut warnings = Vec::new();

    let start = paths::absolute(&input.cwd, None).map_err(|e| ScopeError::Cwd {
        path: input.cwd.clone(),
        problem: format!("cannot be made absolute: {e}"),
    })?;
    let home = input
        .home
        .as_deref()
        .filter(|h| !h.as_os_str().is_empty())
        .and_then(|h| paths::absolute(h, None).ok());

    // Flags, then environment: validated before any file is read.
    let workspace_flag = flag("--workspace", input.workspace_flag.as_deref())?;
    let project_flag = flag("--project", input.project_flag.as_deref())?;
    let env_workspace = env_name(
        ENV_WORKSPACE,
        input.env_workspace.as_deref(),
        client,
        &mut warnings,
    )?;
    let env_project = env_name(
        ENV_PROJECT,
        input.env_project.as_deref(),
        client,
        &mut warnings,
    )?;

    if client {
        match std::fs::metadata(&start) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(ScopeError::Cwd {
                    path: start,
                    problem: "is not a directory: pass a directory with --cwd".into(),
                })
            }
            Err(e) => {
                return Err(ScopeError::Cwd {
                    path: start,
                    problem: format!("cannot be used ({e}): pass an existing directory with --cwd"),
                })
            }
        }
    }

    // The walk: the nearest marker decides capture; the nearest one that
    // declares a scope setting (or cannot be read at all) decides scope.
    let home_known = home.is_some();
    let mut walk = Walk::new(&start, home.as_deref());
    let nearest = walk.next().map(|p| marker::read(&p, home_known));
    let mut capture = nearest
        .as_ref()
        .map_or(CaptureConfig::Absent, |m| m.capture.clone());
    if matches!(capture, CaptureConfig::Inactive { .. }) {
        // A marker that names no capture policy (no `ignore_paths`, or an
        // empty one) is transparent for capture: an empty marker in a
        // subdirectory never switches off the project's exclusions. The
        // nearest marker further up that has a policy decides.
        // A nearer `assistant_text = false` still holds (the stricter wins).
        let nearer_words = capture.keeps_assistant_text();
        capture = Walk::new(&start, home.as_deref())
            .skip(1)
            .map(|p| marker::read(&p, home_known).capture)
            .find(|c| !matches!(c, CaptureConfig::Inactive { .. }))
            .unwrap_or(capture);
        if !nearer_words {
            if let CaptureConfig::Active { assistant_text, .. }
            | CaptureConfig::Inactive { assistant_text, .. } = &mut capture
            {
                *assistant_text = false;
            }
        }
    }
    let ignore_marker = client && input.ignore_marker;
    if let Some(Marker {
        declared: Ok(_),
        capture: CaptureConfig::Invalid { marker, reason },
        ..
    }) = &nearest
    {
        // The marker is usable but its [capture] is not (an unusable marker
        // is reported once, below).
        warnings.push(format!(
            "{}: {reason} (capture policy invalid: file and shell tool events keep metadata only)",
            marker.display()
        ));
    }

    let mut decided: Option<(std::path::PathBuf, Declared)> = None;
    let mut current = nearest;
    while let Some(m) = current.take() {
        let Marker {
            path,
            declared,
            capture: _,
            warnings: notes,
        } = m;
        warnings.extend(notes);
        match declared {
            Err(problem) => {
                if client && !ignore_marker {
                    return Err(ScopeError::Marker { path, problem });
                }
                let effect = if ignore_marker {
                    "capture policy invalid"
                } else {
                    "its settings are ignored and the capture policy counts as invalid"
                };
                warnings.push(format!("{}: {problem} ({effect})", path.display()));
                break;
            }
            Ok(_) if ignore_marker => break,
            Ok(d) if d.declares_scope => {
                decided = Some((path, d));
                break;
            }
            Ok(_) => current = walk.next().map(|p| marker::read(&p, home_known)),
        }
    }
    let (marker_path, declared) = match decided {
        Some((p, d)) => (Some(p), d),
        None => (None, Declared::default()),
    };
    let strategy = declared
        .strategy
        .or(input.install_strategy)
        .unwrap_or_default();

    let (workspace, workspace_source) = if let Some(w) = workspace_flag {
        (w, Source::Flag)
    } else if let Some(w) = env_workspace {
        (w, Source::Env)
    } else if let Some(w) = declared.workspace {
        (w, Source::Marker)
    } else {
        (DEFAULT_WORKSPACE.to_string(), Source::Fallback)
    };

    let (project, project_source) = if let Some(p) = project_flag {
        (p, Source::Flag)
    } else if let Some(p) = env_project {
        (p, Source::Env)
    } else if let Some(p) = declared.project {
        (p, Source::Marker)
    } else {
        fallback_project(&start, strategy, &mut warnings)
    };

    Ok(Scope {
        workspace,
        project,
        workspace_source,
        project_source,
        marker: marker_path,
        strategy,
        settings: declared.settings,
        capture,
        warnings,
    })
}

fn flag(name: &'static str, value: Option<&str>) -> Result<Option<String>, ScopeError> {
    match value {
        None => Ok(None),
        Some(v) if is_valid_name(v) => Ok(Some(v.to_string())),
        Some(v) => Err(ScopeError::Flag {
            flag: name,
            problem: name_problem(v),
        }),
    }
}

fn env_name(
    var: &'static str,
    value: Option<&str>,
    client: bool,
    warnings: &mut Vec<String>,
) -> Result<Option<String>, ScopeError> {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if is_valid_name(v) {
        return Ok(Some(v.to_string()));
    }
    if client {
        return Err(ScopeError::Env {
            var,
            problem: name_problem(v),
        });
    }
    warnings.push(format!("{var}: {} (value ignored)", name_problem(v)));
    Ok(None)
}

fn fallback_project(
    start: &Path,
    strategy: Strategy,
    warnings: &mut Vec<String>,
) -> (String, Source) {
    match strategy {
        Strategy::Basename => (paths::basename_name(start), Source::Fallback),
        Strategy::RepoRoot => match git::main_worktree_name(start) {
            Some(raw) => (paths::name_from_dir(&raw), Source::RepoRoot),
            None => {
                warnings.push(format!(
                    "repo-root strategy: {} is not inside a git repository; using the directory name",
                    start.display()
                ));
                (paths::basename_name(start), Source::Fallback)
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn world(marker: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let cwd = home.join("proj");
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(cwd.join(MARKER_FILE), marker).unwrap();
        (t, home, cwd)
    }

    fn input(home: &Path, cwd: &Path, mode: Option<Mode>) -> ScopeInput {
        ScopeInput {
            cwd: cwd.to_path_buf(),
            home: Some(home.to_path_buf()),
            mode,
            ..ScopeInput::default()
        }
    }

    #[test]
    fn a_nearer_marker_without_exclusions_keeps_the_outer_ones_and_its_own_assistant_text() {
        let (_t, home, cwd) = world("project = \"p\"\n[capture]\nignore_paths = [\"secret/**\"]\n");
        let sub = cwd.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(MARKER_FILE), "[capture]\nassistant_text = false\n").unwrap();
        let s = resolve(&input(&home, &sub, Some(Mode::Hook))).unwrap();
        match &s.capture {
            CaptureConfig::Active {
                patterns,
                assistant_text,
                marker,
            } => {
                assert_eq!(patterns, &vec!["secret/**".to_string()]);
                assert!(!assistant_text, "the nearer opt-out holds");
                assert_eq!(marker, &cwd.join(MARKER_FILE));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn hook_mode_degrades_and_client_mode_refuses() {
        let (_t, home, cwd) = world("workspace = \"Bad\"\n");
        for mode in [None, Some(Mode::Hook)] {
            let s = resolve(&input(&home, &cwd, mode)).unwrap();
            assert_eq!(
                (s.workspace.as_str(), s.project.as_str()),
                ("default", "proj")
            );
            assert_eq!(s.capture.state_str(), "invalid");
            assert_eq!(s.marker, None);
            assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        }
        let err = resolve(&input(&home, &cwd, Some(Mode::Client))).unwrap_err();
        assert!(matches!(err, ScopeError::Marker { .. }), "{err:?}");
        assert!(err.to_string().contains(MARKER_FILE), "{err}");
    }

    #[test]
    fn hooks_ignore_an_invalid_env_value_and_clients_refuse_it() {
        let (_t, home, cwd) = world("workspace = \"acme\"\n");
        let mut i = input(&home, &cwd, Some(Mode::Hook));
        i.env_workspace = Some("NOPE".into());
        i.ignore_marker = true; // hooks never honour it
        let s = resolve(&i).unwrap();
        assert_eq!(s.workspace, "acme");
        assert_eq!(s.workspace_source, Source::Marker);
        assert!(
            s.warnings[0].starts_with("AI_MEMORY_WORKSPACE:"),
            "{:?}",
            s.warnings
        );
        i.mode = Some(Mode::Client);
        i.ignore_marker = false;
        let err = resolve(&i).unwrap_err();
        assert!(matches!(
            err,
            ScopeError::Env {
                var: "AI_MEMORY_WORKSPACE",
                ..
            }
        ));
    }

    #[test]
    fn settings_come_from_the_deciding_marker() {
        let (_t, home, cwd) =
            world("[briefing]\ninject_on_session_start = \"yes\"\nmax_chars = 100000\n");
        let s = resolve(&input(&home, &cwd, Some(Mode::Client))).unwrap();
        assert!(s.settings.inject_on_session_start);
        assert_eq!(s.settings.max_chars, MAX_CHARS_MAX);
        assert_eq!(s.marker, Some(cwd.join(MARKER_FILE)));
        assert_eq!(s.strategy, Strategy::Basename);
    }
}
