//! Per-sink delivery counters, `counters/<sink>.json`: what keeps
//! `enqueued = delivered + pending + dropped` true across drains.

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::DrainLock;
use crate::spool::SinkTarget;
use memhook_core::data_dir;

/// Delivery state of one sink, persisted in `counters/<sink>.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkCounters {
    /// The sink, for status (absent for [`UNKNOWN_SINK`](super::UNKNOWN_SINK)).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink: Option<SinkTarget>,
    #[serde(default)]
    pub delivered: u64,
    /// Dropped entries by reason.
    #[serde(default)]
    pub dropped: BTreeMap<String, u64>,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub last_error_ms: Option<u64>,
    #[serde(default)]
    pub last_delivery_ms: Option<u64>,
    /// Consecutive passes that ended in a failure.
    #[serde(default)]
    pub failed_passes: u32,
    /// No background pass delivers to this sink before this time (Unix ms).
    #[serde(default)]
    pub retry_after_ms: u64,
    /// Spool file names already counted whose deletion may not have happened.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inflight: Vec<String>,
}

impl SinkCounters {
    /// Total dropped, every reason.
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }
}

/// Path of `counters/<id>.json`.
pub fn counters_path(data_dir: &Path, sink_id: &str) -> PathBuf {
    data_dir.join("counters").join(format!("{sink_id}.json"))
}

/// Read a sink's counters (default when absent or unreadable).
/// A symlink or anything but a regular file is never read.
pub fn load_counters(data_dir: &Path, sink_id: &str) -> SinkCounters {
    read_counters(&counters_path(data_dir, sink_id)).unwrap_or_default()
}

/// Most bytes of a counters file read (it holds a few numbers and at most
/// one batch of in-flight names).
pub const MAX_COUNTERS_BYTES: u64 = 1024 * 1024;

pub fn read_counters(path: &Path) -> Option<SinkCounters> {
    let f = data_dir::open_nofollow(path).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let bytes = data_dir::read_capped(&f, meta.len(), MAX_COUNTERS_BYTES).ok()?;
    serde_json::from_slice(&bytes).ok()
}

pub fn save_counters(data_dir: &Path, sink_id: &str, c: &SinkCounters) -> io::Result<()> {
    let bytes = serde_json::to_vec_pretty(c).map_err(io::Error::other)?;
    data_dir::write_private_file(&counters_path(data_dir, sink_id), &bytes)
}

/// Remove pending spool files without delivering them (`memhook forget`)
/// and count each removed one as dropped for `reason`, so the accounting
/// stays exact. Holding `_lock` proves no drainer is delivering them
/// meanwhile. Returns how many were removed.
pub fn drop_pending(
    _lock: &DrainLock,
    data_dir: &Path,
    entries: &[(PathBuf, SinkTarget)],
    reason: &str,
) -> io::Result<u64> {
    let mut by_sink: BTreeMap<String, (SinkTarget, Vec<&Path>)> = BTreeMap::new();
    for (path, sink) in entries {
        by_sink
            .entry(sink.id())
            .or_insert_with(|| (sink.clone(), Vec::new()))
            .1
            .push(path);
    }
    let mut removed = 0;
    for (id, (sink, paths)) in by_sink {
        let mut gone = 0;
        let mut failed = None;
        for p in paths {
            match fs::remove_file(p) {
                Ok(()) => gone += 1,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if gone > 0 {
            let mut c = load_counters(data_dir, &id);
            c.sink.get_or_insert(sink);
            *c.dropped.entry(reason.to_string()).or_default() += gone;
            save_counters(data_dir, &id, &c).map_err(|e| {
                io::Error::other(format!(
                    "removed {gone} pending records of {id} but could not count them \
                     ({e}); `memhook status` will show them as unaccounted"
                ))
            })?;
        }
        removed += gone;
        if let Some(e) = failed {
            return Err(e);
        }
    }
    // The cap counts from the spool's mark: note the room made.
    if removed > 0 {
        if let Ok(spool) = crate::spool::Spool::open(data_dir) {
            let _ = spool.mark_pending();
        }
    }
    Ok(removed)
}

/// Sink ids that have a counters file.
pub fn counter_sinks(data_dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(data_dir.join("counters"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            if n.starts_with('.') {
                return None;
            }
            n.strip_suffix(".json").map(str::to_string)
        })
        .collect();
    out.sort();
    out
}

/// Remove temp files of counter writes (`counters/.<name>.<pid>.tmp`) that a
/// killed drainer left behind, once older than `max_age_ms`.
pub fn sweep_counter_tmp(data_dir: &Path, max_age_ms: u64) -> usize {
    let Ok(rd) = fs::read_dir(data_dir.join("counters")) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if !(name.starts_with('.') && name.ends_with(".tmp")) {
            continue;
        }
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|d| d.as_millis() as u64 >= max_age_ms);
        if old && fs::remove_file(e.path()).is_ok() {
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spool::Spool;

    #[test]
    fn stale_counter_temp_files_are_swept() {
        let t = tempfile::tempdir().unwrap();
        Spool::open(t.path()).unwrap();
        let c = t.path().join("counters");
        fs::write(c.join(".store.json.123.tmp"), b"{").unwrap();
        fs::write(c.join("store.json"), b"{}").unwrap();
        fs::write(c.join("store.enqueued"), b".").unwrap();
        assert_eq!(sweep_counter_tmp(t.path(), 60_000), 0, "too young");
        assert_eq!(sweep_counter_tmp(t.path(), 0), 1);
        assert!(c.join("store.json").exists() && c.join("store.enqueued").exists());
    }
}
