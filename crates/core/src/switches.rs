//! Opt-in and pause: whether memhook captures at all, per install, per
//! project and for a while (DESIGN §12's "turn it off for this repo").
//!
//! - `<data>/capture-mode` (ai-memory's per-install file): `allowlist` means
//!   nothing is captured where no marker exists, unless the project was
//!   turned on with `memhook enable`. Anything else, or no file: denylist
//!   (capture everywhere but what markers exclude).
//! - `<data>/switches.json`: projects turned off (`memhook disable`: nothing
//!   captured or briefed there) or on (`memhook enable`), and a pause for
//!   every project (`memhook pause [--for 2h]`, ended by `memhook resume`).
//!
//! None of them edits a file in a repository. Both files are small, read
//! without following links, and an unreadable one means "no switch" — except
//! that an unreadable capture-mode file of allowlist size fails closed.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::scope::Scope;
use crate::timefmt::{local_text, now_ms};

/// The per-install capture mode file (ai-memory's name and content).
pub const CAPTURE_MODE_FILE: &str = "capture-mode";
/// Project switches and the pause.
pub const SWITCHES_FILE: &str = "switches.json";
/// Largest switches file read (a few thousand projects).
pub const MAX_SWITCHES_BYTES: u64 = 256 * 1024;
/// Longest pause `--for` accepts.
pub const MAX_PAUSE_MS: u64 = 366 * 24 * 3600 * 1000;

/// The per-install capture mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureMode {
    /// Capture everywhere but what markers exclude (the default).
    Denylist,
    /// Capture only where a marker exists or the project was enabled.
    Allowlist,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Switches {
    /// `workspace/project` names turned off.
    #[serde(default)]
    pub disabled: BTreeSet<String>,
    /// `workspace/project` names turned on (they count as opted in under
    /// allowlist).
    #[serde(default)]
    pub enabled: BTreeSet<String>,
    /// Capture is paused for every project until then (Unix ms); `u64::MAX`
    /// means until `memhook resume`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_until_ms: Option<u64>,
    /// `workspace/project` names whose marker's `[recall] default_global`
    /// the user allowed (`memhook trust --recall-all`): a marker is a
    /// repository's file, so it never opens other projects' memory alone.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub recall_all: BTreeSet<String>,
}

/// What the switches say about one event's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gate {
    /// Capture (and brief) as usual.
    Open,
    /// `memhook pause`: nothing captured; the briefing still comes.
    Paused,
    /// `memhook disable` for this project: nothing captured or briefed.
    Disabled,
    /// Allowlist mode and this project has no marker and was not enabled:
    /// nothing captured or briefed.
    NotOptedIn,
}

impl Gate {
    pub fn captures(self) -> bool {
        self == Gate::Open
    }
    pub fn briefs(self) -> bool {
        matches!(self, Gate::Open | Gate::Paused)
    }
}

fn read_small(path: &Path, max: u64) -> Option<Vec<u8>> {
    let buf = crate::data_dir::read_private_file(path, max + 1).ok()?;
    (buf.len() as u64 <= max).then_some(buf)
}

/// The capture mode of the install whose data dir is `dir`.
pub fn capture_mode(dir: &Path) -> CaptureMode {
    let path = dir.join(CAPTURE_MODE_FILE);
    match read_small(&path, 64) {
        Some(b)
            if String::from_utf8_lossy(&b)
                .trim()
                .eq_ignore_ascii_case("allowlist") =>
        {
            CaptureMode::Allowlist
        }
        Some(_) => CaptureMode::Denylist,
        // A file that is there but cannot be trusted (a link, another
        // owner, too big) fails closed; no file is the default.
        None if std::fs::symlink_metadata(&path).is_ok() => CaptureMode::Allowlist,
        None => CaptureMode::Denylist,
    }
}

/// The switches of `dir` (none when absent or unreadable).
pub fn load(dir: &Path) -> Switches {
    read_small(&dir.join(SWITCHES_FILE), MAX_SWITCHES_BYTES)
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

pub fn save(dir: &Path, s: &Switches) -> std::io::Result<()> {
    crate::data_dir::ensure_private_dir(dir).map_err(std::io::Error::other)?;
    let text = serde_json::to_vec_pretty(s).expect("switches serialise");
    crate::data_dir::write_private_file(&dir.join(SWITCHES_FILE), &text)
}

pub fn key(scope: &Scope) -> String {
    format!("{}/{}", scope.workspace, scope.project)
}

/// Whether any marker applies to `scope` (the allowlist's opt-in).
pub fn has_marker(scope: &Scope) -> bool {
    scope.marker.is_some() || !matches!(scope.capture, crate::scope::CaptureConfig::Absent)
}

/// The gate for an event of `scope`, at `now`.
pub fn gate(dir: &Path, scope: &Scope, now: u64) -> Gate {
    gate_of(dir, &load(dir), scope, now)
}

/// [`gate`] with the switches already loaded.
fn gate_of(dir: &Path, s: &Switches, scope: &Scope, now: u64) -> Gate {
    let k = key(scope);
    if s.disabled.contains(&k) || !scope.settings.enabled {
        return Gate::Disabled;
    }
    if capture_mode(dir) == CaptureMode::Allowlist && !has_marker(scope) && !s.enabled.contains(&k)
    {
        return Gate::NotOptedIn;
    }
    if s.paused_until_ms.is_some_and(|u| now < u) {
        return Gate::Paused;
    }
    Gate::Open
}

/// Whether recall across every project is in force for `scope`: its
/// marker asks for it (`[recall] default_global`) and the user allowed it
/// for this scope in the data dir `dir` (`memhook trust --recall-all`).
/// Neither alone is enough: a cloned repository's marker is someone
/// else's words, and the allowance follows the marker's setting.
pub fn recall_all(dir: &Path, scope: &Scope) -> bool {
    scope.settings.default_global && load(dir).recall_all.contains(&key(scope))
}

/// `--for` text: `90s`, `30m`, `2h`, `1d` (a number and one unit).
pub fn parse_duration_ms(text: &str) -> Option<u64> {
    let t = text.trim();
    let unit = t.chars().last()?;
    let n: u64 = t[..t.len() - unit.len_utf8()].trim().parse().ok()?;
    let ms = match unit {
        's' => n.checked_mul(1000)?,
        'm' => n.checked_mul(60_000)?,
        'h' => n.checked_mul(3_600_000)?,
        'd' => n.checked_mul(86_400_000)?,
        _ => return None,
    };
    (ms > 0 && ms <= MAX_PAUSE_MS).then_some(ms)
}

/// `until 2026-12-01 19:00:00 +01:00` (local time, for people), or
/// `until \`memhook resume\``.
pub fn until_words(until: u64) -> String {
    if until == u64::MAX {
        "until `memhook resume`".to_string()
    } else {
        format!("until {}", local_text(until))
    }
}

/// One line for `show` and `status` when a switch is in force for `scope`
/// (or, without a scope, the pause alone).
pub fn describe(dir: &Path, scope: Option<&Scope>) -> Option<String> {
    let s = load(dir);
    let now = now_ms();
    if let Some(sc) = scope {
        match gate_of(dir, &s, sc, now) {
            Gate::Disabled if !sc.settings.enabled && !s.disabled.contains(&key(sc)) => {
                return Some(format!(
                    "{} is disabled by its marker ({}: enabled = false): nothing captured or \
                     briefed; `memhook enable --marker` turns it on",
                    key(sc),
                    sc.marker
                        .as_deref()
                        .map_or("?".into(), |m| m.display().to_string())
                ))
            }
            Gate::Disabled => {
                return Some(format!(
                    "{} is disabled (`memhook disable`): nothing captured or briefed; \
                     `memhook enable` turns it on",
                    key(sc)
                ))
            }
            Gate::NotOptedIn => {
                return Some(format!(
                    "allowlist mode: {} has no marker and is not enabled, so nothing is \
                     captured; `memhook enable` opts it in",
                    key(sc)
                ))
            }
            _ => {}
        }
    }
    s.paused_until_ms
        .filter(|&u| now < u)
        .map(|u| format!("capture is paused for every project {}", until_words(u)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(project: &str, marker: bool) -> Scope {
        use crate::scope::{CaptureConfig, Settings, Source, Strategy};
        Scope {
            workspace: "default".into(),
            project: project.into(),
            workspace_source: Source::Fallback,
            project_source: Source::Fallback,
            marker: marker.then(|| "/w/.ai-memory.toml".into()),
            strategy: Strategy::Basename,
            settings: Settings::default(),
            capture: CaptureConfig::Absent,
            warnings: vec![],
        }
    }

    #[test]
    fn durations_at_their_edges() {
        assert_eq!(parse_duration_ms("90s"), Some(90_000));
        assert_eq!(parse_duration_ms("2h"), Some(7_200_000));
        assert_eq!(parse_duration_ms("366d"), Some(MAX_PAUSE_MS));
        for bad in ["", "0m", "367d", "2", "h", "2 weeks", "-1h"] {
            assert_eq!(parse_duration_ms(bad), None, "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn gates_disable_allowlist_and_pause() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        let api = scope("api", false);
        assert_eq!(gate(d, &api, 0), Gate::Open);
        save(
            d,
            &Switches {
                disabled: ["default/api".into()].into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(gate(d, &api, 0), Gate::Disabled);
        assert!(!Gate::Disabled.briefs());
        assert_eq!(gate(d, &scope("web", false), 0), Gate::Open);

        std::fs::write(d.join(CAPTURE_MODE_FILE), " AllowList\n").unwrap();
        assert_eq!(gate(d, &scope("web", false), 0), Gate::NotOptedIn);
        assert_eq!(gate(d, &scope("web", true), 0), Gate::Open);
        save(
            d,
            &Switches {
                enabled: ["default/web".into()].into(),
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(gate(d, &scope("web", false), 0), Gate::Open);

        save(
            d,
            &Switches {
                paused_until_ms: Some(100),
                ..Default::default()
            },
        )
        .unwrap();
        std::fs::remove_file(d.join(CAPTURE_MODE_FILE)).unwrap();
        assert_eq!(gate(d, &api, 99), Gate::Paused);
        assert!(Gate::Paused.briefs() && !Gate::Paused.captures());
        assert_eq!(gate(d, &api, 100), Gate::Open);

        // A capture-mode file that cannot be trusted fails closed.
        std::os::unix::fs::symlink("/etc/hostname", d.join(CAPTURE_MODE_FILE)).unwrap();
        assert_eq!(capture_mode(d), CaptureMode::Allowlist);
    }

    #[test]
    fn recall_across_projects_needs_the_marker_and_the_users_word() {
        let t = tempfile::tempdir().unwrap();
        let mut sc = scope("api", true);
        sc.workspace = "acme".into();
        assert!(!recall_all(t.path(), &sc));
        sc.settings.default_global = true;
        // The marker alone: no.
        assert!(!recall_all(t.path(), &sc));
        let mut s = load(t.path());
        s.recall_all.insert("acme/api".into());
        save(t.path(), &s).unwrap();
        assert!(recall_all(t.path(), &sc));
        // The allowance alone: no.
        sc.settings.default_global = false;
        assert!(!recall_all(t.path(), &sc));
        // Another scope's allowance is not this one's.
        sc.settings.default_global = true;
        sc.project = "web".into();
        assert!(!recall_all(t.path(), &sc));
    }
}
