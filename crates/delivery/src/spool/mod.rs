//! The durable outbox: one file per record under `<data>/spool/`.
//!
//! Enqueue writes `spool/tmp/<name>.<sink>.<slot>` (0600) and renames it
//! to `spool/<name>.json`; it never waits on a lock, the network or the
//! disk (it flushes nothing). Names sort oldest first. The drainer (see
//! `drain/`) makes what it finds durable in one group commit per pass
//! ([`Spool::commit`]), then reads, delivers and deletes under the drain
//! lock.
//!
//! Accounting: every enqueue attempt appends one byte, its slot, to
//! `counters/<sink>.enqueued` (`O_APPEND`, lock-free, never through a
//! symlink) before anything else, and sets it to the attempt's fate: `.`
//! counted (pending, then delivered or dropped by the drainer), `x`
//! interrupted, `w` write failed (a full disk), `f` spool full. The ledger
//! keeps blocks allocated ahead of its end, so fates are kept on a full
//! disk too. The drainer keeps delivered and dropped counts in
//! `counters/<sink>.json` under the drain lock. So per sink: `enqueued
//! (slots) = delivered + pending + dropped`, after the process dies at any
//! step too ([`Spool::enqueue`] has the argument).

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use serde::{Deserialize, Serialize};

use memhook_core::data_dir::{self, DirError};
use memhook_core::fingerprint::Exclusions;
use memhook_core::record::check::Origin;
use memhook_core::record::Record;

mod briefing;
mod commit;
mod fold;
mod pending;
mod target;
pub use briefing::{briefing_may_change, PENDING_SCAN};
pub use commit::COMMIT_SLACK_MS;
pub use fold::{Base, Candidate, FoldError, Folded, BASE_SUFFIX, FOLD_MIN_BYTES, FOLD_SETTLE_MS};
pub use pending::{Mark, MARK_FILE};
pub use target::{check_base_url, redact_url, SinkTarget, UrlError, HOOK_URL_ENV};

/// Most records the spool holds; an enqueue past it is refused and counted.
pub const MAX_SPOOL_FILES: usize = 10_000;
/// Largest spool file accepted when reading (a record is bounded far below).
pub const MAX_ENTRY_BYTES: u64 = 256 * 1024;
/// Version of the spool entry format.
pub const ENTRY_VERSION: u32 = 1;

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
    /// The exclusions that applied to the event: the drainer removes the
    /// lines of those files from the record before delivering it
    /// ([`memhook_core::fingerprint`]). Never delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclusions: Option<Exclusions>,
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
    /// A spool file that parses but is no entry this memhook would write:
    /// another user's file, an unknown version, a field the hook would
    /// never write. Its sink is not believed: no hook enqueued it there.
    Invalid {
        path: PathBuf,
        problem: String,
    },
    /// A spool name that is not a regular file (a FIFO, directory, socket
    /// or device): never read, never deleted, only reported.
    NotRegular {
        path: PathBuf,
    },
    /// Writing the entry failed (a full disk, an I/O error); counted as
    /// dropped ([`DROP_SPOOL_WRITE_FAILED`]).
    WriteFailed {
        path: PathBuf,
        source: io::Error,
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
            SpoolError::Invalid { path, problem, .. } => {
                write!(
                    f,
                    "{}: not an entry memhook writes: {problem}",
                    path.display()
                )
            }
            SpoolError::WriteFailed { path, source } => write!(
                f,
                "cannot write {}: {source}; the event was not captured \
                 (`memhook status` counts it as {DROP_SPOOL_WRITE_FAILED})",
                path.display()
            ),
            SpoolError::NotRegular { path } => write!(
                f,
                "{}: not a regular file; skipped (remove it by hand)",
                path.display()
            ),
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

    /// Add `entry`, flushing nothing. Refuses (and counts) when the spool
    /// is full.
    ///
    /// Crash consistency: `enqueued = delivered + pending + dropped` holds
    /// after the process dies (kill -9, abort, out of memory) between any
    /// two steps. Every attempt owns one byte of `counters/<sink>.enqueued`,
    /// its *slot*, whose value is the attempt's fate (`x` interrupted, `.`
    /// counted, `w` write failed, `f` spool full); each fate counts once as
    /// enqueued and every fate but `.` as one drop of its reason. Setting
    /// a slot is one `pwrite` at a known offset, so it is atomic and
    /// idempotent: the drainer can finish a dead hook's work without
    /// knowing how far it got. The steps:
    ///
    /// 1. `reserved`: append `x` to the ledger (lock-free `O_APPEND`); the
    ///    offset is the slot. Dying here: counted and dropped as
    ///    `enqueue_interrupted` (nothing of the event was written).
    ///    Then the cap: the pending count comes from the drainer's last
    ///    mark and the slot's offset (`pending.rs`), never from listing
    ///    the directory; past [`MAX_SPOOL_FILES`] the slot is set to `f`.
    /// 2. `written`: create `tmp/<name>.<sink>.<slot>` (0600, `flock`ed
    ///    while the hook lives: created under a hidden name and renamed
    ///    once locked) and write the entry.
    /// 3. `counted`: set the slot to `.`.
    /// 4. `renamed`: rename to `spool/<name>.json` (now pending).
    ///
    /// None of this is flushed, and process death needs no flush: each
    /// step is done when its system call returns, and from then on the
    /// kernel holds it in the page cache, which outlives the process.
    /// Every other process (the drainer) sees the steps a dead hook
    /// finished, in the order it made them, whether or not they have
    /// reached the disk. That order is what the books rest on: the slot
    /// exists before anything else, the entry is whole under its temp name
    /// before it is counted, and counted before it is pending.
    ///
    /// A hook that dies after step 1 leaves a temp file whose lock is free
    /// (or nothing). The drainer's [`Spool::sweep_tmp`] finishes it: a
    /// whole entry gets its slot set to `.` and is renamed in (delivered
    /// like any other); a torn or missing one leaves (or sets) `x` and is
    /// removed. Either way the books balance, and until then `status`
    /// shows the attempt as dropped (`x`), which is also balanced.
    ///
    /// A power cut loses what the kernel had not yet written, in any
    /// order: guarding against it is the drainer's job, not the hook's.
    /// A drainer runs within about a second of an enqueue and, once per
    /// pass, before it delivers or deletes anything it found, flushes the
    /// new entries, the spool directory and the ledgers in one group
    /// commit ([`Spool::commit`]). So a power cut can take the events of
    /// about the last second (docs/operations.md, "Crash consistency"),
    /// never one that a drainer delivered or counted.
    ///
    /// Crash points for tests: [`CRASH_AT_ENV`] names a step.
    pub fn enqueue(&self, entry: &SpoolEntry) -> Result<PathBuf, SpoolError> {
        let sink_id = entry.sink.id();
        let ledger = self.ledger_path(&sink_id, LEDGER_ENQUEUED);
        // The key's first hex digits make names easy to match by eye; only
        // hex digits, so no key can put a name outside the spool.
        let tag: String = entry
            .record
            .key
            .chars()
            .take(8)
            .filter(char::is_ascii_hexdigit)
            .collect();
        let name = format!(
            "{:013}-{:010}-{:08x}-{tag}",
            entry.enqueued_ms,
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed),
        );
        let dest = self.dir.join(format!("{name}.json"));
        let bytes = serde_json::to_vec(entry).map_err(|e| SpoolError::Corrupt {
            path: dest.clone(),
            problem: e.to_string(),
        })?;
        // A record that cannot be counted is not kept.
        let slot = self.reserve(&sink_id).map_err(io_err(&ledger))?;
        crash_point("reserved");
        // The cap, from the mark and the slot's offset (pending.rs): the
        // spool directory is not read.
        let pending = self
            .pending_estimate(&sink_id, slot.offset)
            .map_err(io_err(&self.dir))?;
        if pending >= MAX_SPOOL_FILES {
            let _ = slot.set(SLOT_FULL);
            return Err(SpoolError::Full { pending });
        }
        let tmp_dir = self.dir.join("tmp");
        let tmp = tmp_dir.join(format!("{name}.{sink_id}.{}", slot.offset));
        let fail = |path: PathBuf, source: io::Error| {
            let _ = fs::remove_file(&tmp);
            let _ = slot.set(SLOT_WRITE_FAILED);
            SpoolError::WriteFailed { path, source }
        };
        let written = (|| {
            let mut f = create_locked(&tmp)?;
            f.write_all(&bytes)?;
            crash_point("written");
            Ok(f)
        })();
        // Held (with its lock) until the rename: a drainer leaves it alone.
        let _file = match written {
            Ok(f) => f,
            Err(source) => return Err(fail(tmp.clone(), source)),
        };
        if let Err(source) = slot.set(SLOT_COUNTED) {
            return Err(fail(ledger, source));
        }
        crash_point("counted");
        if let Err(source) = fs::rename(&tmp, &dest) {
            return Err(fail(dest, source));
        }
        crash_point("renamed");
        // Pending and counted, in the page cache: a drainer flushes it
        // ([`Spool::commit`]) before it delivers it.
        Ok(dest)
    }

    /// Append the fate byte of a new attempt to the `enqueued` ledger of
    /// `sink_id`; returns the ledger (still appending) and the slot's
    /// offset. The ledger keeps [`LEDGER_RESERVE`] bytes allocated ahead,
    /// so this succeeds on a full disk too.
    fn append_fate(&self, sink_id: &str, fate: u8) -> io::Result<(fs::File, u64)> {
        use std::io::Seek;
        let mut f = self.open_ledger(sink_id, LEDGER_ENQUEUED)?;
        reserve_ahead(&f);
        f.write_all(&[fate])?;
        // O_APPEND leaves the offset just past this write, whatever other
        // hooks appended meanwhile.
        let end = f.stream_position()?;
        Ok((f, end - 1))
    }

    /// Reserve a slot for a new attempt (fate `x` until it is counted).
    fn reserve(&self, sink_id: &str) -> io::Result<Slot> {
        let (file, offset) = self.append_fate(sink_id, SLOT_INTERRUPTED)?;
        // Windows: a handle opened to append can only append, whatever the
        // offset of the write; the slot gets a handle of its own.
        #[cfg(windows)]
        {
            drop(file);
            self.slot_at(sink_id, offset)
        }
        // A positioned write on an O_APPEND descriptor appends on Linux.
        #[cfg(not(windows))]
        clear_append(&file)?;
        #[cfg(not(windows))]
        Ok(Slot {
            file,
            offset,
            path: self.ledger_path(sink_id, LEDGER_ENQUEUED),
        })
    }

    /// The slot at `offset` of an existing `enqueued` ledger (for the
    /// drainer's recovery): never through a symlink, never a non-file.
    fn slot_at(&self, sink_id: &str, offset: u64) -> io::Result<Slot> {
        let mut opts = fs::OpenOptions::new();
        opts.write(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
        }
        let path = self.ledger_path(sink_id, LEDGER_ENQUEUED);
        let file = opts.open(&path)?;
        let m = file.metadata()?;
        if !m.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        // A slot past what any hook could have reserved is no slot.
        if offset >= m.len() + LEDGER_RESERVE {
            return Err(io::Error::other("slot past the ledger's end"));
        }
        Ok(Slot { file, offset, path })
    }

    /// What the `enqueued` ledger of `sink_id` holds: attempts, and drops
    /// by fate. A symlink or anything but a regular file holds nothing.
    fn tally(&self, sink_id: &str) -> Tally {
        // A base that cannot be read counts nothing: `status` shows the
        // books unbalanced, and the drainer's log names the file.
        let base = self.read_base(sink_id).unwrap_or_default();
        let mut t = base.tally();
        let Ok(f) = data_dir::open_nofollow(&self.ledger_path(sink_id, LEDGER_ENQUEUED)) else {
            return t;
        };
        if !f.metadata().is_ok_and(|m| m.is_file()) {
            return t;
        }
        // Slots before the base's offset are counted in it (fold.rs).
        if let Ok(live) = fold::tally_range(&f, base.offset, u64::MAX) {
            t.add(&live);
        }
        t
    }

    /// Drops counted at enqueue, by reason (`status` adds them to the
    /// drainer's counts): the slots' fates, plus the refusal ledgers that
    /// memhook before slots kept (`<sink>.full`, `<sink>.write_failed`).
    pub fn ledger_drops(&self, sink_id: &str) -> Vec<(&'static str, u64)> {
        let t = self.tally(sink_id);
        SLOT_DROPS
            .iter()
            .zip(t.dropped)
            .map(|((_, reason), n)| {
                let legacy = LEGACY_LEDGERS
                    .iter()
                    .filter(|(_, r)| r == reason)
                    .map(|(kind, _)| self.ledger(sink_id, kind))
                    .sum::<u64>();
                (*reason, n + legacy)
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    fn ledger_path(&self, sink_id: &str, kind: &str) -> PathBuf {
        self.counters_dir().join(format!("{sink_id}.{kind}"))
    }

    /// Pending entry files, oldest first (see [`Spool::list`]).
    pub fn pending(&self) -> Result<Vec<PathBuf>, SpoolError> {
        Ok(self.list()?.files)
    }

    /// The spool's `*.json` names: regular files (and symlinks, which are
    /// dropped as corrupt when read) oldest first, and how many other
    /// names (FIFOs, directories, sockets, devices) are skipped. The type
    /// comes from the directory listing: nothing is opened.
    pub fn list(&self) -> Result<Listing, SpoolError> {
        let mut names = Vec::new();
        let mut not_regular = 0;
        for ent in fs::read_dir(&self.dir).map_err(io_err(&self.dir))? {
            let ent = ent.map_err(io_err(&self.dir))?;
            let Ok(name) = ent.file_name().into_string() else {
                continue;
            };
            if !name.ends_with(".json") || name.starts_with('.') {
                continue;
            }
            match ent.file_type() {
                Ok(t) if t.is_file() || t.is_symlink() => names.push(name),
                Ok(_) => not_regular += 1,
                // Gone since the listing.
                Err(_) => {}
            }
        }
        // Names sort as plain strings (cheaper than comparing paths by
        // component); their fixed-width time prefix makes that oldest first.
        names.sort_unstable();
        Ok(Listing {
            files: names.into_iter().map(|n| self.dir.join(n)).collect(),
            not_regular,
        })
    }

    /// Read and check one entry file (see [`load_as`]) as the current user.
    pub fn load(path: &Path) -> Result<SpoolEntry, SpoolError> {
        load_as(path, memhook_core::data_dir::current_uid())
    }

    /// Replace an entry in place (used to persist a charged attempt).
    pub fn rewrite(&self, path: &Path, entry: &SpoolEntry) -> Result<(), SpoolError> {
        let bytes = serde_json::to_vec(entry).map_err(|e| SpoolError::Corrupt {
            path: path.to_path_buf(),
            problem: e.to_string(),
        })?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
        let tmp = self.dir.join("tmp").join(format!("rewrite-{name}"));
        data_dir::write_new_synced(&tmp, &bytes, 0o600).map_err(io_err(&tmp))?;
        fs::rename(&tmp, path).map_err(io_err(path))
    }

    /// Delete a delivered or dropped entry.
    pub fn remove(&self, path: &Path) -> Result<(), SpoolError> {
        remove_file(path)
    }

    /// Finish or account for what killed writers left in `tmp/` (the
    /// drainer calls it under the drain lock). A hook's temp file
    /// (`<name>.<sink>.<slot>`) whose lock is free has lost its writer: a
    /// whole entry of that sink is counted in its slot and renamed in; a
    /// torn one is removed and its slot says `enqueue_interrupted`. Other
    /// temp files (rewrites) are removed once older than `max_age_ms`.
    /// Returns how many files it finished or removed.
    pub fn sweep_tmp(&self, max_age_ms: u64) -> usize {
        let mut n = 0;
        let Ok(rd) = fs::read_dir(self.dir.join("tmp")) else {
            return 0;
        };
        for ent in rd.flatten() {
            let path = ent.path();
            let name = ent.file_name();
            let slotted = name.to_str().and_then(parse_tmp_name);
            if let Some((base, sink_id, offset)) = slotted {
                if self.recover(&path, base, sink_id, offset) {
                    n += 1;
                    continue;
                }
            }
            let old = ent
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .map(|d| d.as_millis() as u64 >= max_age_ms)
                .unwrap_or(false);
            if old && fs::remove_file(&path).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// Finish one hook's temp file if its writer is gone (see
    /// [`Spool::sweep_tmp`]). Every step can be repeated: a drainer killed
    /// here leaves work the next one finishes the same way.
    fn recover(&self, path: &Path, base: &str, sink_id: &str, offset: u64) -> bool {
        match data_dir::open_nofollow(path) {
            Ok(f) => self.recover_opened(&f, path, base, sink_id, offset),
            Err(_) => false,
        }
    }

    /// [`Spool::recover`] of the temp file `f`, opened at `path`.
    fn recover_opened(
        &self,
        f: &fs::File,
        path: &Path,
        base: &str,
        sink_id: &str,
        offset: u64,
    ) -> bool {
        use fs2::FileExt;
        // Its hook holds the lock until the rename: alive, leave it.
        let Ok(opened) = f.metadata() else {
            return false;
        };
        if !opened.is_file() || f.try_lock_exclusive().is_err() {
            return false;
        }
        // Free now, but opened before its hook renamed it into the spool
        // and exited: finished, not dead. Only a file still at its temp
        // name lost its writer.
        if !same_file(path, &opened) {
            return false;
        }
        let Ok(slot) = self.slot_at(sink_id, offset) else {
            return false;
        };
        let whole = Spool::load(path).is_ok_and(|e| e.sink.id() == sink_id);
        if !whole {
            return slot.set_synced(SLOT_INTERRUPTED).is_ok() && remove_file(path).is_ok();
        }
        if slot.set_synced(SLOT_COUNTED).is_err() {
            return false;
        }
        let dest = self.dir.join(format!("{base}.json"));
        // Both names after a power cut: the entry is pending already.
        let done = if fs::symlink_metadata(&dest).is_ok() {
            remove_file(path).is_ok()
        } else {
            fs::rename(path, &dest).is_ok()
        };
        let _ = sync_dir(&self.dir);
        done
    }

    /// Path of the counters directory.
    pub fn counters_dir(&self) -> PathBuf {
        self.data_dir.join("counters")
    }

    /// Count kept by the ledger `kind` of `sink_id`: enqueue attempts for
    /// [`LEDGER_ENQUEUED`] (its slots), the length of a legacy refusal
    /// ledger otherwise. A symlink or anything but a regular file counts
    /// nothing.
    pub fn ledger(&self, sink_id: &str, kind: &str) -> u64 {
        if kind == LEDGER_ENQUEUED {
            return self.tally(sink_id).attempts();
        }
        fs::symlink_metadata(self.ledger_path(sink_id, kind))
            .ok()
            .filter(fs::Metadata::is_file)
            .map_or(0, |m| m.len())
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

    /// Open (creating) a ledger for appending: never through a symlink,
    /// never blocking, only a regular file.
    fn open_ledger(&self, sink_id: &str, kind: &str) -> io::Result<fs::File> {
        let mut opts = fs::OpenOptions::new();
        opts.append(true).create(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            opts.mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY);
        }
        let f = opts.open(self.ledger_path(sink_id, kind))?;
        if !f.metadata()?.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        Ok(f)
    }
}

/// Ledger kinds (`counters/<sink>.<kind>`): the slots of every enqueue
/// attempt, and the refusal ledgers memhook kept before slots (still read).
pub const LEDGER_ENQUEUED: &str = "enqueued";
pub const LEDGER_FULL: &str = "full";
pub const LEDGER_WRITE_FAILED: &str = "write_failed";
/// Drop reasons counted at enqueue: the spool was full, writing the entry
/// failed (a full disk, an I/O error), or the hook died before the entry
/// was whole.
pub const DROP_SPOOL_FULL: &str = "spool_full";
pub const DROP_SPOOL_WRITE_FAILED: &str = "spool_write_failed";
pub const DROP_ENQUEUE_INTERRUPTED: &str = "enqueue_interrupted";
/// Fates of an attempt's slot (see [`Spool::enqueue`]).
const SLOT_COUNTED: u8 = b'.';
const SLOT_INTERRUPTED: u8 = b'x';
const SLOT_FULL: u8 = b'f';
const SLOT_WRITE_FAILED: u8 = b'w';
/// Fate → the drop reason it counts (the order of [`Tally::dropped`]).
const SLOT_DROPS: [(u8, &str); 3] = [
    (SLOT_INTERRUPTED, DROP_ENQUEUE_INTERRUPTED),
    (SLOT_FULL, DROP_SPOOL_FULL),
    (SLOT_WRITE_FAILED, DROP_SPOOL_WRITE_FAILED),
];
/// Legacy refusal ledger → the drop reason it counts.
const LEGACY_LEDGERS: [(&str, &str); 2] = [
    (LEDGER_FULL, DROP_SPOOL_FULL),
    (LEDGER_WRITE_FAILED, DROP_SPOOL_WRITE_FAILED),
];

/// What an `enqueued` ledger holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Tally {
    counted: u64,
    /// By fate, in the order of [`SLOT_DROPS`].
    dropped: [u64; 3],
}

impl Tally {
    fn attempts(&self) -> u64 {
        self.counted + self.dropped.iter().sum::<u64>()
    }

    /// Count the slots `bytes`.
    fn count(&mut self, bytes: &[u8]) {
        for &b in bytes {
            match b {
                SLOT_COUNTED => self.counted += 1,
                SLOT_INTERRUPTED => self.dropped[0] += 1,
                SLOT_FULL => self.dropped[1] += 1,
                SLOT_WRITE_FAILED => self.dropped[2] += 1,
                // A hole (a lost reservation, or a folded slot): no attempt.
                _ => {}
            }
        }
    }

    fn add(&mut self, other: &Tally) {
        self.counted += other.counted;
        for (a, b) in self.dropped.iter_mut().zip(other.dropped) {
            *a += b;
        }
    }
}

/// One attempt's byte in an `enqueued` ledger (a descriptor without
/// `O_APPEND`, so a positioned write lands at the slot).
struct Slot {
    file: fs::File,
    offset: u64,
    /// The ledger's path (for [`probe`]).
    path: PathBuf,
}

impl Slot {
    /// Set the fate: one `pwrite` (atomic, and the same result however
    /// often it is repeated).
    fn set(&self, fate: u8) -> io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileExt;
            self.file.write_all_at(&[fate], self.offset)
        }
        #[cfg(windows)]
        {
            use std::os::windows::fs::FileExt;
            match self.file.seek_write(&[fate], self.offset)? {
                1 => Ok(()),
                _ => Err(io::ErrorKind::WriteZero.into()),
            }
        }
    }

    /// [`Slot::set`] and make it durable (`fdatasync`).
    fn set_synced(&self, fate: u8) -> io::Result<()> {
        self.set(fate)?;
        sync_file(&self.file, &self.path)
    }
}

/// Whether `path` still names the file `opened` (not a file made since
/// under the same name): device and inode on Unix. Windows: the file is
/// open with its lock held by us, so no other file can have been renamed
/// over the name while it still exists there; what is there is a file
/// of the same size and creation time.
fn same_file(path: &Path, opened: &fs::Metadata) -> bool {
    let here = fs::symlink_metadata(path);
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        here.is_ok_and(|m| m.dev() == opened.dev() && m.ino() == opened.ino())
    }
    #[cfg(not(unix))]
    {
        here.is_ok_and(|m| {
            m.is_file() && m.len() == opened.len() && m.created().ok() == opened.created().ok()
        })
    }
}

/// Clear `O_APPEND` on `f`.
#[cfg(unix)]
fn clear_append(f: &fs::File) -> io::Result<()> {
    use std::os::unix::io::AsRawFd;
    let fd = f.as_raw_fd();
    // SAFETY: fcntl on a valid open descriptor, no pointers.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_APPEND) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `fdatasync` the file `f`, opened at `path`: every flush of a spool
/// file goes through here (or [`sync_dir`]), so [`probe`] sees it.
fn sync_file(f: &fs::File, path: &Path) -> io::Result<()> {
    probe::note("sync", path);
    f.sync_data()
}

/// `fsync` a directory so the names in it survive a power cut. A file
/// system that cannot sync directories (`EINVAL`) is taken as it is.
fn sync_dir(dir: &Path) -> io::Result<()> {
    probe::note("sync", dir);
    #[cfg(unix)]
    match fs::File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        other => other,
    }
    // Windows: `FlushFileBuffers` on a directory handle (opened with
    // `FILE_FLAG_BACKUP_SEMANTICS`, which a directory needs) commits its
    // names; a volume that refuses it is taken as it is.
    #[cfg(windows)]
    {
        memhook_core::data_dir::sync_dir(dir);
        Ok(())
    }
}

/// Split a hook's temp name `<name>.<sink id>.<slot>`; anything else
/// (a rewrite, a name from before slots) is `None`.
fn parse_tmp_name(name: &str) -> Option<(&str, &str, u64)> {
    let mut parts = name.rsplitn(3, '.');
    let offset = parts.next()?;
    let sink_id = parts.next()?;
    let base = parts.next()?;
    let sink_ok = !sink_id.is_empty()
        && sink_id.len() <= 32
        && sink_id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    let offset_ok = !offset.is_empty() && offset.bytes().all(|b| b.is_ascii_digit());
    let base_ok = !base.is_empty() && !base.starts_with('.') && !base.contains('.');
    (sink_ok && offset_ok && base_ok).then_some((base, sink_id, offset.parse().ok()?))
}

/// Bytes kept allocated past a ledger's end: this many events can still be
/// counted on a full disk.
pub const LEDGER_RESERVE: u64 = 64 * 1024;
/// The reserve is topped up when less than this is left.
pub const LEDGER_LOW: u64 = 16 * 1024;
/// A hook tops the reserve up only while the ledger's length is in the
/// first [`LEDGER_TOPUP_WINDOW`] bytes of a stride of this many: at most
/// this many appends after the reserve runs low (less than
/// [`LEDGER_LOW`], so the reserve never runs out first). A folded ledger
/// (`fold.rs`) has freed blocks, so it always looks low: the stride keeps
/// its `fallocate` to one append in 64 instead of every one.
pub const LEDGER_TOPUP_STRIDE: u64 = 4 * 1024;
/// See [`LEDGER_TOPUP_STRIDE`]: wide enough that hooks appending at once
/// do not all miss it.
pub const LEDGER_TOPUP_WINDOW: u64 = 64;

/// Whether a ledger of length `len` with `allocated` bytes of blocks is
/// topped up now (see [`LEDGER_TOPUP_STRIDE`]).
fn needs_top_up(allocated: u64, len: u64) -> bool {
    allocated < len + LEDGER_LOW && len % LEDGER_TOPUP_STRIDE < LEDGER_TOPUP_WINDOW
}

/// Keep [`LEDGER_RESERVE`] bytes allocated past the end of `f` (Linux
/// `fallocate` with `FALLOC_FL_KEEP_SIZE`: the length, which is the count,
/// does not change). Returns whether it had to top up. Best effort: on a
/// file system without it, a full disk fails the append as before.
fn reserve_ahead(f: &fs::File) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let Ok(m) = f.metadata() else { return false };
        if !needs_top_up(m.blocks() * 512, m.len()) {
            return false;
        }
        // From the end only: the blocks the drainer freed before it
        // (fold.rs) stay free; on an allocated range it allocates nothing.
        // SAFETY: a valid open descriptor; KEEP_SIZE only allocates blocks.
        unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                m.len() as libc::off_t,
                LEDGER_RESERVE as libc::off_t,
            )
        };
        true
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (f, needs_top_up as fn(u64, u64) -> bool);
        false
    }
}

/// What [`Spool::list`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Entry files, oldest first.
    pub files: Vec<PathBuf>,
    /// `*.json` names that are not regular files (skipped, never opened).
    pub not_regular: usize,
}

/// Read one entry file and check it as the drainer must before delivering
/// it: a regular file owned by `uid`, at most [`MAX_ENTRY_BYTES`], a valid
/// entry of [`ENTRY_VERSION`] whose every field is one the hook could have
/// written ([`SpoolEntry::problem`]). One open, one `fstat`, one read; a
/// symlink, FIFO or device never blocks and is never followed.
pub fn load_as(path: &Path, uid: u32) -> Result<SpoolEntry, SpoolError> {
    use std::io::Read;
    let corrupt = |problem: &str| SpoolError::Corrupt {
        path: path.to_path_buf(),
        problem: problem.to_string(),
    };
    let f = match data_dir::open_nofollow(path) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(corrupt("a symlink")),
        Err(source) => return Err(io_err(path)(source)),
    };
    let meta = f.metadata().map_err(io_err(path))?;
    if !meta.is_file() {
        return Err(SpoolError::NotRegular {
            path: path.to_path_buf(),
        });
    }
    if meta.len() > MAX_ENTRY_BYTES {
        return Err(corrupt("larger than a spool entry can be"));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(io_err(path))?;
    let entry: SpoolEntry = serde_json::from_slice(&bytes).map_err(|e| corrupt(&e.to_string()))?;
    let invalid = |problem: String| SpoolError::Invalid {
        path: path.to_path_buf(),
        problem,
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != uid {
            return Err(invalid(format!(
                "owned by uid {}, not by uid {uid}",
                meta.uid()
            )));
        }
    }
    #[cfg(not(unix))]
    let _ = uid;
    if let Some(problem) = entry.problem() {
        return Err(invalid(problem));
    }
    Ok(entry)
}

impl SpoolEntry {
    /// Why this entry is not one the hook writes, if it is not: the
    /// versions, the sink, the key's shape, the scope names, the canonical
    /// agent and event names, and every text within the bound the record
    /// builder applies and free of what [`memhook_core::redact::clean`] strips.
    pub fn problem(&self) -> Option<String> {
        if self.v != ENTRY_VERSION {
            return Some(format!(
                "entry version {} (this memhook writes {ENTRY_VERSION})",
                self.v
            ));
        }
        if let Some(p) = self.sink.problem() {
            return Some(p);
        }
        if let Some(p) = self.exclusions.as_ref().and_then(Exclusions::problem) {
            return Some(p);
        }
        memhook_core::record::check::problem(&self.record, Origin::Hook)
    }
}

/// Variable naming an enqueue step after which a debug build aborts
/// (fault injection for the crash tests; release builds never read it).
pub const CRASH_AT_ENV: &str = "MEMHOOK_TEST_CRASH_AT";

/// Abort the process right after `step` when [`CRASH_AT_ENV`] names it
/// (debug builds only): a crash with the page cache intact.
fn crash_point(step: &str) {
    if cfg!(debug_assertions) && std::env::var_os(CRASH_AT_ENV).is_some_and(|v| v == step) {
        std::process::abort();
    }
}

/// Delete an entry file; one already gone is fine.
pub fn remove_file(path: &Path) -> Result<(), SpoolError> {
    probe::note("delete", path);
    match fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(io_err(path)(e)),
    }
}

/// What unit tests see of the spool's I/O: each flush (`sync`, through
/// [`sync_file`] and [`sync_dir`]), each entry the drainer hands to a sink
/// (`deliver`) and each deletion (`delete`, through [`remove_file`]), with
/// its path, in the order they happened, from every thread. Tests run in
/// parallel: each reads the events under its own temp dir.
#[cfg(test)]
pub(crate) mod probe {
    use std::path::{Path, PathBuf};
    use std::sync::Mutex;

    static EVENTS: Mutex<Vec<(&'static str, PathBuf)>> = Mutex::new(Vec::new());

    pub(crate) fn note(what: &'static str, path: &Path) {
        let mut events = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
        events.push((what, path.to_path_buf()));
    }

    /// The events whose path lies under `dir`, oldest first.
    pub(crate) fn under(dir: &Path) -> Vec<(&'static str, PathBuf)> {
        let events = EVENTS.lock().unwrap_or_else(|e| e.into_inner());
        events
            .iter()
            .filter(|(_, p)| p.starts_with(dir))
            .cloned()
            .collect()
    }
}

/// Outside unit tests the probe records nothing (compiled away).
#[cfg(not(test))]
pub(crate) mod probe {
    #[inline(always)]
    pub(crate) fn note(_: &'static str, _: &std::path::Path) {}
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

/// Create `path` (must not exist, mode 0600) holding its `flock`: the
/// drainer leaves a locked temp file alone (its writer is alive). The file
/// is created under a hidden name (which the drainer never finishes, only
/// removes when old) and renamed to `path` once locked, so no drainer can
/// ever see `path` unlocked while its writer lives.
fn create_locked(path: &Path) -> io::Result<fs::File> {
    use fs2::FileExt;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("entry");
    let hidden = path.with_file_name(format!(".{name}"));
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    let f = opts.open(&hidden)?;
    let locked = f
        .try_lock_exclusive()
        .and_then(|_| fs::rename(&hidden, path));
    if let Err(e) = locked {
        let _ = fs::remove_file(&hidden);
        return Err(e);
    }
    Ok(f)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    pub fn sample(key: &str) -> SpoolEntry {
        SpoolEntry {
            v: ENTRY_VERSION,
            sink: SinkTarget::Store,
            attempts: 0,
            enqueued_ms: 1_700_000_000_000,
            record: memhook_core::record::sample::record(key),
            exclusions: None,
        }
    }

    #[test]
    fn enqueue_list_load_remove_and_count() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(&t.path().join("data")).unwrap();
        let a = s.enqueue(&sample(&"a".repeat(32))).unwrap();
        let b = s.enqueue(&sample(&"b".repeat(32))).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                fs::metadata(&a).unwrap().permissions().mode() & 0o777,
                0o600
            );
        }
        assert_eq!(s.pending().unwrap(), vec![a.clone(), b.clone()]);
        assert_eq!(Spool::load(&a).unwrap(), sample(&"a".repeat(32)));
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
        // No mark yet (a spool from before marks): the directory is
        // counted once.
        let err = s.enqueue(&sample(&"c".repeat(32))).unwrap_err();
        assert!(matches!(err, SpoolError::Full { pending } if pending == MAX_SPOOL_FILES));
        assert_eq!(s.ledger_drops("store"), vec![(DROP_SPOOL_FULL, 1)]);
        assert_eq!(s.ledger("store", "enqueued"), 1);
        // Room again once a drain (which writes the mark) sees it.
        fs::remove_file(s.dir().join("0000000000000-x.json")).unwrap();
        s.mark_pending().unwrap();
        s.enqueue(&sample(&"d".repeat(32))).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn counters_are_never_written_or_read_through_a_symlink() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(&t.path().join("data")).unwrap();
        let outside = t.path().join("outside");
        fs::write(&outside, b"precious").unwrap();
        let ledger = s.counters_dir().join("store.enqueued");
        std::os::unix::fs::symlink(&outside, &ledger).unwrap();
        // A record that cannot be counted is not kept (the error names
        // the ledger); nothing is written through the link.
        let err = s.enqueue(&sample(&"a".repeat(32))).unwrap_err();
        assert!(err.to_string().contains("store.enqueued"), "{err}");
        assert!(s.pending().unwrap().is_empty());
        assert_eq!(fs::read(&outside).unwrap(), b"precious");
        assert_eq!(s.ledger("store", "enqueued"), 0);
        assert!(fs::symlink_metadata(&ledger).unwrap().is_symlink());
    }

    #[cfg(unix)]
    #[test]
    fn ledgers_keep_room_ahead_to_count_on_a_full_disk() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        s.enqueue(&sample(&"a".repeat(32))).unwrap();
        let m = fs::metadata(s.counters_dir().join("store.enqueued")).unwrap();
        assert_eq!(m.len(), 1);
        // Best effort per file system; tmpfs and ext4 (CI) have it.
        if m.blocks() * 512 < LEDGER_LOW {
            eprintln!("no fallocate here: the reserve is not checked");
            return;
        }
        assert!(m.blocks() * 512 >= LEDGER_RESERVE, "{}", m.blocks());
    }

    /// The top-up's edges: low and in the window; not low, or low outside
    /// it; and the window comes before the reserve runs out.
    #[test]
    fn the_reserve_is_topped_up_in_its_window_when_low() {
        let len = 10 * LEDGER_TOPUP_STRIDE;
        let low = len + LEDGER_LOW - 1;
        assert!(needs_top_up(low, len));
        assert!(needs_top_up(
            low + LEDGER_TOPUP_WINDOW - 1,
            len + LEDGER_TOPUP_WINDOW - 1
        ));
        assert!(!needs_top_up(
            low + LEDGER_TOPUP_WINDOW,
            len + LEDGER_TOPUP_WINDOW
        ));
        assert!(!needs_top_up(len + LEDGER_LOW, len), "not low");
        // A folded ledger (few blocks) only in the window.
        assert!(needs_top_up(0, len));
        assert!(!needs_top_up(0, len + LEDGER_TOPUP_WINDOW));
        // Low from just past a window, it is topped up at the next one,
        // with part of the reserve still left.
        const { assert!(LEDGER_TOPUP_STRIDE < LEDGER_LOW) };
        let first = (len + LEDGER_TOPUP_WINDOW..)
            .find(|l| needs_top_up(len + LEDGER_LOW - 1, *l))
            .unwrap();
        assert_eq!(first, len + LEDGER_TOPUP_STRIDE);
        // A new ledger gets its reserve with its first slot.
        assert!(needs_top_up(0, 0));
    }

    /// A folded ledger's freed blocks stay free while hooks append.
    #[cfg(target_os = "linux")]
    #[test]
    fn appends_to_a_folded_ledger_keep_its_freed_blocks_free() {
        use std::os::unix::fs::MetadataExt;
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let path = s.ledger_path("store", LEDGER_ENQUEUED);
        fs::write(&path, vec![b'.'; 1 << 20]).unwrap();
        let f = fs::OpenOptions::new().write(true).open(&path).unwrap();
        use std::os::unix::io::AsRawFd;
        // SAFETY: a valid descriptor; the punch as fold.rs does it.
        let punched = unsafe {
            libc::fallocate(
                f.as_raw_fd(),
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                0,
                1 << 20,
            )
        };
        if punched != 0 {
            eprintln!("no hole punching here");
            return;
        }
        for _ in 0..LEDGER_TOPUP_STRIDE {
            s.append_fate("store", SLOT_COUNTED).unwrap();
        }
        let m = fs::metadata(&path).unwrap();
        assert!(m.blocks() * 512 <= 2 * LEDGER_RESERVE, "{}", m.blocks());
    }

    /// DESIGN §5: the hook does not flush (the drainer group-commits,
    /// [`Spool::commit`]). Before: three flushes per enqueue (the entry,
    /// `tmp/`, the ledger), and one more for a failed write.
    #[test]
    fn enqueue_makes_no_flush() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        // Without a mark (the hook writes one), then with one, to two sinks.
        s.enqueue(&sample(&"a".repeat(32))).unwrap();
        let mut e = sample(&"b".repeat(32));
        e.sink = SinkTarget::Http {
            url: "http://127.0.0.1:9".into(),
        };
        s.enqueue(&e).unwrap();
        // A write that fails, counted as spool_write_failed.
        let busy = s.dir().join("tmp");
        fs::remove_dir(&busy).unwrap();
        fs::write(&busy, b"").unwrap();
        assert!(matches!(
            s.enqueue(&sample(&"c".repeat(32))),
            Err(SpoolError::WriteFailed { .. })
        ));
        let events = probe::under(t.path());
        let syncs: Vec<_> = events.iter().filter(|(what, _)| *what == "sync").collect();
        assert!(syncs.is_empty(), "the hook flushed: {syncs:#?}");
        assert_eq!(s.pending().unwrap().len(), 2);
    }

    #[test]
    fn a_failed_write_is_counted_and_the_books_balance() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        // A directory where the temp file must go: the write fails.
        let e = sample(&"a".repeat(32));
        let busy = s.dir().join("tmp");
        fs::remove_dir(&busy).unwrap();
        fs::write(&busy, b"").unwrap();
        assert!(matches!(s.enqueue(&e), Err(SpoolError::WriteFailed { .. })));
        assert_eq!(s.ledger("store", LEDGER_ENQUEUED), 1);
        assert_eq!(s.ledger_drops("store"), vec![(DROP_SPOOL_WRITE_FAILED, 1)]);
        assert!(s.pending().unwrap().is_empty());
    }

    /// A temp file as a hook killed after reserving `fate`'s slot and
    /// writing `bytes` leaves it; returns its path.
    fn orphan(s: &Spool, bytes: &[u8]) -> PathBuf {
        let (_, offset) = s.append_fate("store", SLOT_INTERRUPTED).unwrap();
        let p = s.dir().join("tmp").join(format!(
            "1700000000000-0000000001-{offset:08x}-abcd.store.{offset}"
        ));
        fs::write(&p, bytes).unwrap();
        p
    }

    /// The books of the store sink: (enqueued, pending, drops at enqueue).
    fn books(s: &Spool) -> (u64, usize, Vec<(&'static str, u64)>) {
        (
            s.ledger("store", LEDGER_ENQUEUED),
            s.pending().unwrap().len(),
            s.ledger_drops("store"),
        )
    }

    #[test]
    fn a_dead_writers_whole_entry_is_counted_and_renamed_in_once() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let e = sample(&"a".repeat(32));
        let p = orphan(&s, &serde_json::to_vec(&e).unwrap());
        // Until a drainer looks, the attempt counts as interrupted.
        assert_eq!(books(&s), (1, 0, vec![(DROP_ENQUEUE_INTERRUPTED, 1)]));
        assert_eq!(s.sweep_tmp(u64::MAX), 1);
        assert_eq!(books(&s), (1, 1, vec![]));
        assert_eq!(Spool::load(&s.pending().unwrap()[0]).unwrap(), e);
        assert!(!p.exists());
        // A power cut that kept both names: the pending one stays, once.
        fs::write(&p, serde_json::to_vec(&e).unwrap()).unwrap();
        assert_eq!(s.sweep_tmp(u64::MAX), 1);
        assert_eq!(books(&s), (1, 1, vec![]));
        assert!(!p.exists());
    }

    #[test]
    fn a_dead_writers_torn_entry_is_dropped_as_interrupted() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        // Counted already (the hook died after the count, the disk lost
        // the data): the fate goes back to interrupted.
        let p = orphan(&s, b"{\"v\":1,\"sink");
        let offset: u64 = p
            .to_str()
            .unwrap()
            .rsplit('.')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        s.slot_at("store", offset)
            .unwrap()
            .set_synced(SLOT_COUNTED)
            .unwrap();
        assert_eq!(books(&s), (1, 0, vec![]));
        assert_eq!(s.sweep_tmp(u64::MAX), 1);
        assert_eq!(books(&s), (1, 0, vec![(DROP_ENQUEUE_INTERRUPTED, 1)]));
        assert!(!p.exists());
    }

    #[test]
    fn a_live_writers_temp_file_and_odd_names_are_left_alone() {
        use fs2::FileExt;
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let p = orphan(&s, b"");
        let held = fs::File::open(&p).unwrap();
        held.try_lock_exclusive().unwrap();
        assert_eq!(s.sweep_tmp(u64::MAX), 0);
        assert!(p.exists());
        drop(held);
        assert_eq!(s.sweep_tmp(u64::MAX), 1);
        // A slot no hook could have reserved is never written.
        let far = s.dir().join("tmp").join("1-2-3-x.store.99999999999");
        fs::write(&far, b"").unwrap();
        assert_eq!(s.sweep_tmp(u64::MAX), 0);
        assert_eq!(books(&s).0, 1);
        for bad in [
            "a.b",
            "a.Store.1",
            "a..1",
            ".a.store.1",
            "a.store.",
            "a.b.store.1",
        ] {
            assert_eq!(parse_tmp_name(bad), None, "{bad}");
        }
        assert_eq!(parse_tmp_name("n.http-0a.7"), Some(("n", "http-0a", 7)));
    }

    /// Issue: a drainer that opened a temp file just before its hook renamed
    /// it into the spool and exited found the lock free and the name gone,
    /// took the entry for torn and set its slot to `x`, while the entry was
    /// pending and then delivered (the books one short; seen once in
    /// `delivery::concurrent_enqueues_…` after the hook stopped syncing the
    /// spool directory and so exited sooner after its rename).
    #[test]
    fn a_temp_file_renamed_in_after_the_drainer_opened_it_is_left_alone() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let e = sample(&"a".repeat(32));
        let (_, offset) = s.append_fate("store", SLOT_INTERRUPTED).unwrap();
        let base = format!("1700000000000-0000000001-{offset:08x}-abcd");
        let tmp = s.dir().join("tmp").join(format!("{base}.store.{offset}"));
        let mut writer = create_locked(&tmp).unwrap();
        writer.write_all(&serde_json::to_vec(&e).unwrap()).unwrap();
        // The drainer opens it while the hook still runs...
        let seen = data_dir::open_nofollow(&tmp).unwrap();
        // ...the hook counts it, renames it in and exits...
        s.slot_at("store", offset)
            .unwrap()
            .set_synced(SLOT_COUNTED)
            .unwrap();
        fs::rename(&tmp, s.dir().join(format!("{base}.json"))).unwrap();
        drop(writer);
        // ...and the drainer's lock attempt succeeds: still not its to judge.
        assert!(!s.recover_opened(&seen, &tmp, &base, "store", offset));
        assert_eq!(books(&s), (1, 1, vec![]));
    }

    /// A hook's temp file is locked under its final name and leaves no
    /// hidden name behind. (The race this closes, a drainer sweeping
    /// between create and lock, is what the concurrent delivery tests
    /// caught: `delivery::concurrent_enqueues_…`, `serve::crash_restart_…`.)
    #[test]
    fn a_temp_file_has_its_final_name_only_once_locked() {
        use fs2::FileExt;
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let p = s.dir().join("tmp").join("1-2-3-abcd.store.0");
        let held = create_locked(&p).unwrap();
        let names: Vec<_> = fs::read_dir(s.dir().join("tmp"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["1-2-3-abcd.store.0"]);
        assert!(fs::File::open(&p).unwrap().try_lock_exclusive().is_err());
        assert_eq!(s.sweep_tmp(u64::MAX), 0);
        drop(held);
    }

    #[cfg(unix)]
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

    #[cfg(unix)]
    pub fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    #[cfg(unix)]
    #[test]
    fn listing_leaves_out_what_is_not_a_regular_file_and_never_opens_it() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let a = s.enqueue(&sample(&"a".repeat(32))).unwrap();
        let fifo = s.dir().join("0000000000001-y.json");
        mkfifo(&fifo);
        fs::create_dir(s.dir().join("0000000000002-x.json")).unwrap();
        let link = s.dir().join("0000000000003-l.json");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let l = s.list().unwrap();
        assert_eq!(l.files, vec![link.clone(), a.clone()]);
        assert_eq!(l.not_regular, 2);
        // Loading a FIFO returns at once (no writer ever opens it).
        assert!(matches!(
            Spool::load(&fifo),
            Err(SpoolError::NotRegular { .. })
        ));
        assert!(matches!(
            Spool::load(&link),
            Err(SpoolError::Corrupt { .. })
        ));
    }

    #[test]
    fn load_refuses_what_the_hook_never_writes() {
        let t = tempfile::tempdir().unwrap();
        let s = Spool::open(t.path()).unwrap();
        let good = sample(&"e".repeat(32));
        let p = s.enqueue(&good).unwrap();
        assert_eq!(Spool::load(&p).unwrap(), good);
        // Another user's file (the uid is the seam: root runs the tests).
        // Windows has no uids: the data dir's owner-only ACL is the guard.
        #[cfg(unix)]
        {
            let me = memhook_core::data_dir::current_uid();
            match load_as(&p, me + 1) {
                Err(SpoolError::Invalid { problem, .. }) => {
                    assert!(problem.contains("owned by uid"), "{problem}");
                }
                other => panic!("{other:?}"),
            }
        }
        let http = SinkTarget::Http {
            url: "http://127.0.0.1:9".into(),
        };
        type Change = Box<dyn Fn(&mut SpoolEntry)>;
        let cases: Vec<(&str, Change)> = vec![
            ("version", Box::new(|e| e.v = ENTRY_VERSION + 1)),
            ("record version", Box::new(|e| e.record.v = 99)),
            ("key", Box::new(|e| e.record.key = "../../x".into())),
            (
                "workspace",
                Box::new(|e| e.record.scope.workspace = "../../etc".into()),
            ),
            (
                "project",
                Box::new(|e| e.record.scope.project = "A/b".into()),
            ),
            ("agent", Box::new(|e| e.record.agent = "Claude Code".into())),
            ("event", Box::new(|e| e.record.event = "../x".into())),
            ("native", Box::new(|e| e.record.native_event = "a/b".into())),
            (
                "disposition",
                Box::new(|e| e.record.disposition = "drop".into()),
            ),
            ("cwd", Box::new(|e| e.record.cwd = Some("x".repeat(5000)))),
            (
                "control",
                Box::new(|e| e.record.body = Some("\x1b[2J".into())),
            ),
            ("files", Box::new(|e| e.record.files = vec!["f".into(); 33])),
            (
                "credentials",
                Box::new(|e| {
                    e.sink = SinkTarget::Http {
                        url: "http://u:pw@h".into(),
                    }
                }),
            ),
            (
                "scheme",
                Box::new(|e| {
                    e.sink = SinkTarget::Http {
                        url: "ftp://h".into(),
                    }
                }),
            ),
        ];
        for (what, change) in cases {
            let mut e = good.clone();
            e.sink = http.clone();
            change(&mut e);
            fs::write(&p, serde_json::to_vec(&e).unwrap()).unwrap();
            match Spool::load(&p) {
                Err(SpoolError::Invalid { problem, .. }) => {
                    assert!(!problem.contains("pw@"), "{what}: {problem}");
                }
                other => panic!("{what}: {other:?}"),
            }
        }
        let big = s.dir().join("0000000000010-1-00000000-big.json");
        fs::write(&big, vec![b' '; MAX_ENTRY_BYTES as usize + 1]).unwrap();
        assert!(matches!(Spool::load(&big), Err(SpoolError::Corrupt { .. })));
        fs::write(&big, b"{").unwrap();
        assert!(matches!(Spool::load(&big), Err(SpoolError::Corrupt { .. })));
        let gone = s.dir().join("0000000000011-1-00000000-gone.json");
        assert!(matches!(Spool::load(&gone), Err(SpoolError::Io { .. })));
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
