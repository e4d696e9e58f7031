//! Gathering a [`ScopeInput`] from the process: `HOME`, `AI_MEMORY_WORKSPACE`,
//! `AI_MEMORY_PROJECT`, `AI_MEMORY_IGNORE_MARKER` and the cwd.

use std::ffi::OsString;
use std::path::Path;

use super::{paths, Mode, ScopeError, ScopeInput, Strategy};

pub const ENV_WORKSPACE: &str = "AI_MEMORY_WORKSPACE";
pub const ENV_PROJECT: &str = "AI_MEMORY_PROJECT";
pub const ENV_IGNORE_MARKER: &str = "AI_MEMORY_IGNORE_MARKER";

/// The home directory as the process's environment gives it: `HOME`, and
/// on Windows, where `HOME` is usually unset (Git Bash sets it, PowerShell
/// and cmd do not), `USERPROFILE`. Blank counts as unset. Every reader of
/// the user's home directory (scope discovery, `~/` in capture patterns)
/// goes through here; the installer looks for agents' configs where the
/// agents do (on Windows the profile first: memhook-cli's
/// `install::profile`).
pub fn home_var(var: impl Fn(&str) -> Option<OsString>) -> Option<OsString> {
    home_from(var, cfg!(windows))
}

fn home_from(var: impl Fn(&str) -> Option<OsString>, windows: bool) -> Option<OsString> {
    let set = |name: &str| var(name).filter(|v| !v.to_string_lossy().trim().is_empty());
    set("HOME").or_else(|| if windows { set("USERPROFILE") } else { None })
}

/// [`home_var`] of this process.
pub fn home_env() -> Option<OsString> {
    home_var(|n| std::env::var_os(n))
}

/// `true`/`1`/`yes`/`on`, surrounding whitespace ignored, case-insensitive.
pub fn is_truthy(value: &str) -> bool {
    let v = value.trim();
    ["true", "1", "yes", "on"]
        .iter()
        .any(|t| v.eq_ignore_ascii_case(t))
}

/// An environment value with blank meaning unset; surrounding whitespace is
/// trimmed. A value that is not UTF-8 is kept as a lossy string so that
/// validation can name it.
fn non_blank(value: Option<OsString>) -> Option<String> {
    let v = value?;
    let s = v.to_string_lossy();
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

impl ScopeInput {
    /// Gather everything resolution needs from the process environment.
    ///
    /// `cwd` is the directory to resolve (`--cwd` or the payload's cwd); a
    /// relative one is taken from the process cwd, and `None` means the
    /// process cwd itself (spelled as `$PWD` when that names the same
    /// directory). `AI_MEMORY_IGNORE_MARKER` is only read in [`Mode::Client`].
    pub fn from_env(
        mode: Mode,
        cwd: Option<&Path>,
        workspace_flag: Option<String>,
        project_flag: Option<String>,
        install_strategy: Option<Strategy>,
    ) -> Result<ScopeInput, ScopeError> {
        Self::from_vars(
            mode,
            cwd,
            workspace_flag,
            project_flag,
            install_strategy,
            |k| std::env::var_os(k),
        )
    }

    /// [`ScopeInput::from_env`] with an explicit variable lookup (for tests).
    pub fn from_vars(
        mode: Mode,
        cwd: Option<&Path>,
        workspace_flag: Option<String>,
        project_flag: Option<String>,
        install_strategy: Option<Strategy>,
        var: impl Fn(&str) -> Option<OsString>,
    ) -> Result<ScopeInput, ScopeError> {
        let cwd_err = |path: &Path, e: std::io::Error| ScopeError::Cwd {
            path: path.to_path_buf(),
            problem: format!("cannot determine the current directory: {e}"),
        };
        let cwd = match cwd {
            Some(p) => paths::absolute(p, None).map_err(|e| cwd_err(p, e))?,
            None => paths::logical_current_dir().map_err(|e| cwd_err(Path::new("."), e))?,
        };
        let home = home_var(&var).and_then(|h| paths::absolute(Path::new(&h), None).ok());
        let ignore_marker = mode == Mode::Client
            && var(ENV_IGNORE_MARKER).is_some_and(|v| is_truthy(&v.to_string_lossy()));
        Ok(ScopeInput {
            cwd,
            home,
            workspace_flag,
            project_flag,
            env_workspace: non_blank(var(ENV_WORKSPACE)),
            env_project: non_blank(var(ENV_PROJECT)),
            ignore_marker,
            install_strategy,
            mode: Some(mode),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_is_home_then_userprofile_on_windows_only() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| OsString::from(v))
            }
        };
        let both = env(&[("HOME", "/h"), ("USERPROFILE", r"C:\Users\me")]);
        assert_eq!(home_from(both, true), Some("/h".into()));
        let profile = env(&[("HOME", " "), ("USERPROFILE", r"C:\Users\me")]);
        assert_eq!(home_from(profile, true), Some(r"C:\Users\me".into()));
        assert_eq!(home_from(profile, false), None);
        assert_eq!(home_from(env(&[("USERPROFILE", "")]), true), None);
    }
    use std::collections::HashMap;
    use std::path::PathBuf;

    fn input(mode: Mode, vars: &[(&str, &str)]) -> ScopeInput {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), OsString::from(v)))
            .collect();
        ScopeInput::from_vars(mode, Some(Path::new("/a/./b/..")), None, None, None, |k| {
            map.get(k).cloned()
        })
        .unwrap()
    }

    #[test]
    fn truthy_tokens() {
        for t in ["true", "1", "yes", "on", "TRUE", " On ", "Yes"] {
            assert!(is_truthy(t), "{t}");
        }
        for f in ["", "0", "false", "no", "off", "y", "2", "maybe"] {
            assert!(!is_truthy(f), "{f}");
        }
    }

    #[test]
    fn reads_variables() {
        let i = input(
            Mode::Client,
            &[
                ("HOME", "/home/u/"),
                ("AI_MEMORY_WORKSPACE", " acme "),
                ("AI_MEMORY_PROJECT", "  "),
                ("AI_MEMORY_IGNORE_MARKER", "YES"),
            ],
        );
        // Rooted without a drive, `/a` is the current drive's `\a` on
        // Windows, as Windows opens it (docs/install.md, Windows).
        let rooted = |p: &str| {
            if cfg!(windows) {
                std::path::absolute(p).unwrap()
            } else {
                PathBuf::from(p)
            }
        };
        assert_eq!(i.cwd, rooted("/a"));
        assert_eq!(i.home, Some(rooted("/home/u")));
        assert_eq!(i.env_workspace.as_deref(), Some("acme"));
        assert_eq!(i.env_project, None);
        assert!(i.ignore_marker);
        assert_eq!(i.mode, Some(Mode::Client));
    }

    #[test]
    fn hooks_never_ignore_the_marker_and_empty_home_is_unset() {
        let i = input(
            Mode::Hook,
            &[("HOME", ""), ("AI_MEMORY_IGNORE_MARKER", "1")],
        );
        assert!(!i.ignore_marker);
        assert_eq!(i.home, None);
    }
}
