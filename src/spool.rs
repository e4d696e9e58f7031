//! The durable outbox: one file per record under `<data>/spool/`.
//!
//! Enqueue writes `spool/tmp/<name>` (0600), fsyncs it and renames it to
//! `spool/<name>.json`; it never takes a lock and never touches the network.
//! Names sort oldest first. The drainer (see `drain.rs`) reads, delivers and
//! deletes under the drain lock.
//!
//! Accounting: every accepted enqueue appends one byte to
//! `counters/<sink>.enqueued`; a refusal because the spool is full appends one
//! byte to `counters/<sink>.full` (both `O_APPEND`, lock-free). The drainer
//! keeps delivered and dropped counts in `counters/<sink>.json` under the
//! drain lock. So per sink: `enqueued = delivered + pending + dropped`.

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};

use crate::data_dir::{self, DirError};
use crate::record::Record;

/// Most records the spool holds; an enqueue past it is refused and counted.
pub const MAX_SPOOL_FILES: usize = 10_000;
/// Largest spool file accepted when reading (a record is bounded far below).
pub const MAX_ENTRY_BYTES: u64 = 256 * 1024;
/// Version of the spool entry format.
pub const ENTRY_VERSION: u32 = 1;

/// Where a spooled record must be delivered. Fixed at enqueue, so whichever
/// drainer runs later delivers it to the sink that was in effect for the hook.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SinkTarget {
    /// The embedded SQLite store in the data dir.
    Store,
    /// An ai-memory compatible server (base URL, no credentials).
    Http { url: String },
}

impl SinkTarget {
    /// A short, file-name-safe id for counters: `store` or `http-<16 hex>`.
    pub fn id(&self) -> String {
        match self {
            SinkTarget::Store => "store".to_string(),
            SinkTarget::Http { url } => {
                use sha2::{Digest, Sha256};
                let d = Sha256::digest(url.as_bytes());
                let mut s = String::from("http-");
                for b in &d[..8] {
                    s.push_str(&format!("{b:02x}"));
                }
                s
            }
        }
    }

    /// Human description for status output.
    pub fn describe(&self) -> String {
        match self {
            SinkTarget::Store => "embedded store".to_string(),
            SinkTarget::Http { url } => url.clone(),
        }
    }
}

/// One spooled record and its delivery state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpoolEntry {
    pub v: u32,
    pub sink: SinkTarget,
    /// Failed delivery attempts so far (429 never counts).
    #[serde(default)]
    pub attempts: u32,
    pub enqueued_ms: u64,
    pub record: Record,
}

/// Why an enqueue or read failed.
#[derive(Debug)]
pub enum SpoolError {
    Dir(DirError),
    /// The spool already holds [`MAX_SPOOL_FILES`] records.
    Full {
        pending: usize,
    },
    Io {
        path: PathBuf,
        source: io::Error,
    },
    /// A spool file is not a valid entry.
    Corrupt {
        path: PathBuf,
        problem: String,
    },
}

impl fmt::Display for SpoolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpoolError::Dir(e) => write!(f, "spool directory unusable: {e}"),
            SpoolError::Full { pending } => write!(
                f,
                "spool is full ({pending} records pending, cap {MAX_SPOOL_FILES}); \
                 the event was not captured. Run `memhook status` and `memhook drain`"
            ),
            SpoolError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            SpoolError::Corrupt { path, problem } => {
                write!(f, "{}: not a spool entry: {problem}", path.display())
            }
        }
    }
}

impl std::error::Error for SpoolError {}

impl From<DirError> for SpoolError {
    fn from(e: DirError) -> Self {
        SpoolError::Dir(e)
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> SpoolError + '_ {
    move |source| SpoolError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The spool of one data dir.
#[derive(Debug, Clone)]
pub struct Spool {
    data_dir: PathBuf,
    dir: PathBuf,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

impl Spool {
    /// Open (creating 0700 directories as needed) the spool in `data_dir`.
    /// A symlinked or foreign-owned data dir or spool dir is refused.
    pub fn open(data_dir: &Path) -> Result<Spool, SpoolError> {
        data_dir::ensure_private_dir(data_dir)?;
        let dir = data_dir.join("spool");
        data_dir::ensure_private_dir(&dir)?;
        data_dir::ensure_private_dir(&dir.join("tmp"))?;
        data_dir::ensure_private_dir(&data_dir.join("counters"))?;
        Ok(Spool {
            data_dir: data_dir.to_path_buf(),
            dir,
        })
    }

    /// The spool directory (`<data>/spool`).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The data dir this spool lives in.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Durably add `entry`. Refuses (and counts) when the spool is full.
    pub fn enqueue(&self, entry: &SpoolEntry) -> Result<PathBuf, SpoolError> {
        let sink_id = entry.sink.id();
        let pending = count_entries(&self.dir, MAX_SPOOL_FILES).map_err(io_err(&self.dir))?;
        if pending >= MAX_SPOOL_FILES {
            self.bump(&sink_id, "enqueued");
            self.bump(&sink_id, "full");
            return Err(SpoolError::Full { pending });
        }
        let name = format!(
            "{:013}-{:010}-{:08x}-{}",
            entry.enqueued_ms,
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed),
            &entry.record.key[..entry.record.key.len().min(8)]
        );
        let tmp = self.dir.join("tmp").join(&name);
        let dest = self.dir.join(format!("{name}.json"));
        let bytes = serde_json::to_vec(entry).map_err(|e| SpoolError::Corrupt {
            path: dest.clone(),
            problem: e.to_string(),
        })?;
        write_synced(&tmp, &bytes).map_err(io_err(&tmp))?;
        if let Err(e) = fs::rename(&tmp, &dest) {
            let _ = fs::remove_file(&tmp);
            return Err(io_err(&dest)(e));
        }
        self.bump(&sink_id, "enqueued");
        Ok(dest)
    }

    /// Pending entry files, oldest first.
    pub fn pending(&self) -> Result<Vec<PathBuf>, SpoolError> {
        let mut names = Vec::new();
        for ent in fs::read_dir(&self.dir).map_err(io_err(&self.dir))? {
            let ent = ent.map_err(io_err(&self.dir))?;
            let Ok(name) = ent.file_name().into_string() else {
                continue;
            };
            if name.ends_with(".json") && !name.starts_with('.') {
                names.push(name);
            }
        }
        // Names sort as plain strings (cheaper than comparing paths by
        // component); their fixed-width time prefix makes that oldest first.
        names.sort_unstable();
        Ok(names.into_iter().map(|n| self.dir.join(n)).collect())
    }

    /// Read one entry file.
    pub fn load(path: &Path) -> Result<SpoolEntry, SpoolError> {
        let meta = fs::symlink_metadata(path).map_err(io_err(path))?;
        if !meta.is_file() || meta.len() > MAX_ENTRY_BYTES {
            return Err(SpoolError::Corrupt {
                path: path.to_path_buf(),
                problem: "not a regular file of reasonable size".into(),
            });
        }
        let bytes = fs::read(path).map_err(io_err(path))?;
        serde_json::from_slice(&bytes).map_err(|e| SpoolError::Corrupt {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })
    }

    /// Replace an entry in place (used to persist a charged attempt).
    pub fn rewrite(&self, path: &Path, entry: &SpoolEntry) -> Result<(), SpoolError> {
        let bytes = serde_json::to_vec(entry).map_err(|e| SpoolError::Corrupt {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
        let tmp = self.dir.join("tmp").join(format!("rewrite-{name}"));
        write_synced(&tmp, &bytes).map_err(io_err(&tmp))?;
        fs::rename(&tmp, path).map_err(io_err(path))
    }

    /// Delete a delivered or dropped entry.
    pub fn remove(&self, path: &Path) -> Result<(), SpoolError> {
        remove_file(path)
    }

    /// Remove temp files older than `max_age_ms` left by killed writers.
    pub fn sweep_tmp(&self, max_age_ms: u64) -> usize {
        let mut n = 0;
        let Ok(rd) = fs::read_dir(self.dir.join("tmp")) else {
            return 0;
        };
        for ent in rd.flatten() {
            let old = ent
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .map(|d| d.as_millis() as u64 >= max_age_ms)
                .unwrap_or(false);
            if old && fs::remove_file(ent.path()).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Path of the counters directory.
    pub fn counters_dir(&self) -> PathBuf {
        self.data_dir.join("counters")
    }

    /// Count of lock-free ledger bumps `kind` (`enqueued` or `full`) for `sink_id`.
    pub fn ledger(&self, sink_id: &str, kind: &str) -> u64 {
        fs::metadata(self.counters_dir().join(format!("{sink_id}.{kind}")))
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// Sink ids that have a ledger.
    pub fn ledger_sinks(&self) -> Vec<String> {
        let mut out: Vec<String> = fs::read_dir(self.counters_dir())
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let n = e.file_name().into_string().ok()?;
                n.strip_suffix(".enqueued").map(str::to_string)
            })
            .collect();
        out.sort();
        out
    }

    fn bump(&self, sink_id: &str, kind: &str) {
        let path = self.counters_dir().join(format!("{sink_id}.{kind}"));
        let mut opts = fs::OpenOptions::new();
        opts.append(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600);
        }
        if let Ok(mut f) = opts.open(&path) {
            let _ = f.write_all(b".");
        }
    }
}

/// Delete an entry file; one already gone is fine.
pub fn remove_file(path: &Path) -> Result<(), SpoolError> {
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// Count `*.json` entries in `dir`, stopping at `cap`.
fn count_entries(dir: &Path, cap: usize) -> io::Result<usize> {
    let mut n = 0;
    for ent in fs::read_dir(dir)? {
        let ent = ent?;
        if ent.file_name().as_encoded_bytes().ends_with(b".json") {
            n += 1;
            if n >= cap {
                break;
            }
        }
    }
    Ok(n)
}

/// Create `path` (must not exist), write, fsync, close. Mode 0600.
fn write_synced(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = match opts.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            fs::remove_file(path)?;
            opts.open(path)?
        }
        Err(e) => return Err(e),
    };
    let res = f.write_all(bytes).and_then(|_| f.sync_data());
    if res.is_err() {
        let _ = fs::remove_file(path);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn sample(key: &str) -> SpoolEntry {
        SpoolEntry {
            v: ENTRY_VERSION,
            sink: SinkTarget::Store,
            attempts: 0,
            enqueued_ms: 1_700_000_000_000,
            record: crate::record::sample::record(key),
        }
    }

    #[test]
    fn enqueue_list_load_remove_and_count() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(&t.path().join("data")).unwrap();
        let a = s.enqueue(&sample("aaaaaaaa11")).unwrap();
        let b = s.enqueue(&sample("bbbbbbbb22")).unwrap();
        assert_eq!(
            fs::metadata(&a).unwrap().permissions().mode() & 0o777,
            0o600
        );
        assert_eq!(s.pending().unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(Spool::load(&a).unwrap(), sample("aaaaaaaa11"));
        let mut e = Spool::load(&b).unwrap();
        e.attempts = 3;
        s.rewrite(&b, &e).unwrap();
        assert_eq!(Spool::load(&b).unwrap().attempts, 3);
        s.remove(&a).unwrap();
        s.remove(&a).unwrap();
        assert_eq!(s.pending().unwrap(), vec![b]);
        assert_eq!(s.ledger("store", "enqueued"), 2);
        assert_eq!(s.ledger_sinks(), vec!["store".to_string()]);
        assert_eq!(fs::read_dir(s.dir().join("tmp")).unwrap().count(), 0);
    }

    #[test]
    fn refuses_when_full_and_counts_it() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        for i in 0..MAX_SPOOL_FILES {
            fs::write(s.dir().join(format!("{i:013}-x.json")), b"{}").unwrap();
        }
        let err = s.enqueue(&sample("cccccccc33")).unwrap_err();
        assert!(matches!(err, SpoolError::Full { pending } if pending == MAX_SPOOL_FILES));
        assert_eq!(s.ledger("store", "full"), 1);
        assert_eq!(s.ledger("store", "enqueued"), 1);
        fs::remove_file(s.dir().join("0000000000000-x.json")).unwrap();
        s.enqueue(&sample("dddddddd44")).unwrap();
    }

    #[test]
    fn refuses_symlinked_spool() {
        let t = tempfile::tempdir().unwrap();
        let real = t.path().join("real");
        fs::create_dir(&real).unwrap();
        let data = t.path().join("data");
        fs::create_dir(&data).unwrap();
        std::os::unix::fs::symlink(&real, data.join("spool")).unwrap();
        assert!(matches!(
            Spool::open(&data),
            Err(SpoolError::Dir(DirError::Symlink(_)))
        ));
    }

    #[test]
    fn sink_ids_are_stable_and_distinct() {
        let a = SinkTarget::Http {
            url: "http://127.0.0.1:1".into(),
        };
        let b = SinkTarget::Http {
            url: "http://127.0.0.1:2".into(),
        };
        assert_eq!(a.id(), a.clone().id());
        assert_ne!(a.id(), b.id());
        assert!(a.id().starts_with("http-") && a.id().len() == 21);
        assert_eq!(SinkTarget::Store.id(), "store");
    }
}
