//! Which containers an install created (`hooks`, `hooks.Stop`, `version`),
//! so an uninstall prunes exactly those when they end up empty and leaves a
//! container the user had before (even an empty one) in place.
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
    crate::data_dir::resolve(data_dir)
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
    crate::data_dir::ensure_private_dir(dir).map_err(std::io::Error::other)?;
    let _ = data_dir;
    let text = serde_json::to_string_pretty(map).expect("JSON");
    crate::data_dir::write_private_file(file, text.as_bytes())
}

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

/// Drop what is recorded for `config` (after an uninstall).
pub fn forget(data_dir: Option<&Path>, config: &Path) {
    let Some(file) = ledger_path(data_dir) else {
        return;
    };
    let mut map = load(&file);
    if map.remove(config.to_string_lossy().as_ref()).is_some() {
        let _ = store(data_dir, &file, &map);
    }
}
