//! Which containers an install created (`hooks`, `hooks.Stop`, `version`),
//! so an uninstall prunes exactly those when they end up empty and leaves a
//! container the user had before (even an empty one) in place.
//!
//! It also keeps a [`Snapshot`] per hook config: which text memhook last
//! wrote and which backup holds the text from before memhook's first
//! install, so an uninstall can give back the exact bytes when the file is
//! still what memhook wrote (even where the install had to lay out a
//! one-line object or list over several lines).
//!
//! Kept in `<data dir>/install-ledger.json`, keyed by the config file's
//! absolute path. The data dir is the one baked into the hooks (or the
//! default), so uninstall finds it from the file alone. Without a ledger
//! entry (written by another data dir, or lost), uninstall prunes a container
//! only when removing memhook's entries emptied it.

use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

const LEDGER_FILE: &str = "install-ledger.json";

fn ledger_path(data_dir: Option<&Path>) -> Option<PathBuf> {
    memhook_core::data_dir::resolve(data_dir)
        .ok()
        .map(|d| d.join(LEDGER_FILE))
}

fn load(file: &Path) -> Map<String, Value> {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

fn store(data_dir: Option<&Path>, file: &Path, map: &Map<String, Value>) -> std::io::Result<()> {
    let dir = file.parent().expect("ledger lives in the data dir");
    memhook_core::data_dir::ensure_private_dir(dir).map_err(std::io::Error::other)?;
    let _ = data_dir;
    let text = serde_json::to_string_pretty(map).expect("JSON");
    memhook_core::data_dir::write_private_file(file, text.as_bytes())
}

/// The entry of [`record`]'s list that says install created the file
/// itself (it did not exist before).
pub const CREATED_FILE: &str = "#file";

/// Add `created` to what is recorded for `config`.
pub fn record(data_dir: Option<&Path>, config: &Path, created: &[String]) -> std::io::Result<()> {
    let Some(file) = ledger_path(data_dir) else {
        return Ok(());
    };
    let mut map = load(&file);
    let key = config.to_string_lossy().into_owned();
    let entry = map.entry(key).or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(list) = entry {
        for c in created {
            if !list.iter().any(|v| v == c.as_str()) {
                list.push(Value::String(c.clone()));
            }
        }
    }
    store(data_dir, &file, &map)
}

/// What an install recorded for `config`, or `None` when nothing is known.
pub fn created(data_dir: Option<&Path>, config: &Path) -> Option<Vec<String>> {
    let file = ledger_path(data_dir)?;
    let map = load(&file);
    map.get(config.to_string_lossy().as_ref())?
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
}

/// Drop what is recorded for `config` (after an uninstall), snapshot
/// included.
pub fn forget(data_dir: Option<&Path>, config: &Path) {
    let Some(file) = ledger_path(data_dir) else {
        return;
    };
    let mut map = load(&file);
    let had = map.remove(config.to_string_lossy().as_ref()).is_some();
    if map.remove(&snapshot_key(config)).is_some() || had {
        let _ = store(data_dir, &file, &map);
    }
}

/// The text from before memhook's first install into a file (`before`,
/// SHA-256 hex, kept in `backup`) and the text memhook last wrote there
/// (`after`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Snapshot {
    pub before: String,
    pub after: String,
    pub backup: PathBuf,
}

/// SHA-256 of a text, in hex.
pub fn digest(text: &str) -> String {
    use sha2::{Digest, Sha256};
    memhook_core::hex::encode(&Sha256::digest(text.as_bytes()))
}

fn snapshot_key(config: &Path) -> String {
    format!("{}#snapshot", config.display())
}

/// The snapshot recorded for `config`.
pub fn snapshot(data_dir: Option<&Path>, config: &Path) -> Option<Snapshot> {
    let map = load(&ledger_path(data_dir)?);
    serde_json::from_value(map.get(&snapshot_key(config))?.clone()).ok()
}

/// Keep the snapshot for `config` after an apply replaced `before` (kept
/// at `backup`) with `after`: a later install over exactly what memhook
/// wrote moves `after` on; a first install (`fresh`: `before` holds none of
/// memhook's entries) starts a snapshot; anything else (the file was edited
/// since) drops it, and uninstall then takes memhook's entries out of the
/// tree instead.
pub fn after_apply(
    data_dir: Option<&Path>,
    config: &Path,
    before: &str,
    after: &str,
    backup: &Path,
    fresh: impl FnOnce() -> bool,
) -> std::io::Result<()> {
    let Some(file) = ledger_path(data_dir) else {
        return Ok(());
    };
    let mut map = load(&file);
    let key = snapshot_key(config);
    let old: Option<Snapshot> = map
        .get(&key)
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let snap = match old {
        Some(s) if s.after == digest(before) => Some(Snapshot {
            after: digest(after),
            ..s
        }),
        _ if fresh() => Some(Snapshot {
            before: digest(before),
            after: digest(after),
            backup: backup.to_path_buf(),
        }),
        _ => None,
    };
    match snap {
        Some(s) => {
            map.insert(key, serde_json::to_value(s).expect("JSON"));
        }
        None => {
            if map.remove(&key).is_none() {
                return Ok(());
            }
        }
    }
    store(data_dir, &file, &map)
}

/// The text from before memhook's first install, when `current` is still
/// exactly what memhook wrote and the backup still holds that text.
pub fn restorable(data_dir: Option<&Path>, config: &Path, current: &str) -> Option<String> {
    let snap = snapshot(data_dir, config)?;
    if snap.after != digest(current) {
        return None;
    }
    let before = std::fs::read_to_string(&snap.backup).ok()?;
    (digest(&before) == snap.before).then_some(before)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_starts_fresh_follows_memhook_and_drops_on_foreign_edits() {
        let t = tempfile::tempdir().unwrap();
        let dd = Some(t.path().join("data"));
        let dd = dd.as_deref();
        let cfg = t.path().join("settings.json");
        let backup = t.path().join("settings.json.bak");
        std::fs::write(&backup, "orig").unwrap();
        // Not fresh and nothing recorded: no snapshot.
        after_apply(dd, &cfg, "orig", "v1", &backup, || false).unwrap();
        assert_eq!(snapshot(dd, &cfg), None);
        after_apply(dd, &cfg, "orig", "v1", &backup, || true).unwrap();
        assert_eq!(restorable(dd, &cfg, "v1").as_deref(), Some("orig"));
        assert_eq!(restorable(dd, &cfg, "edited"), None);
        // A later install over exactly v1 moves on, keeping the original.
        after_apply(dd, &cfg, "v1", "v2", Path::new("/other.bak"), || false).unwrap();
        assert_eq!(restorable(dd, &cfg, "v2").as_deref(), Some("orig"));
        // A backup that no longer holds the original restores nothing.
        std::fs::write(&backup, "changed").unwrap();
        assert_eq!(restorable(dd, &cfg, "v2"), None);
        // An install over a file edited since drops the snapshot.
        after_apply(dd, &cfg, "edited", "v3", &backup, || false).unwrap();
        assert_eq!(snapshot(dd, &cfg), None);
        after_apply(dd, &cfg, "x", "v4", &backup, || true).unwrap();
        forget(dd, &cfg);
        assert_eq!(snapshot(dd, &cfg), None);
    }
}
