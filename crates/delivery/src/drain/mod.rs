//! Single-flight delivery of the spool to its sinks.
//!
//! One lock, `<data>/drain.lock` (an fs2 exclusive lock, released by the
//! kernel when the holder dies), guards every delivery in a data dir: the
//! detached background drainer, `memhook drain` and the session-start drain
//! all take it, so at most one process delivers at any time.
//!
//! Who starts a drainer is decided by two more locks, never by the drain
//! lock (any process may hold that one for a moment — `memhook status`
//! looking, a session start delivering — and a hook that took it for a
//! running drainer left its record waiting for the next event):
//! `drain.run.lock` is held by the one background drainer on duty, from
//! the hook that starts it until after its last look at the spool, and
//! `drain.wait.lock` by a drainer sleeping through a backoff. After each
//! enqueue the hook starts a drainer unless one is on duty, or one sleeps
//! and the record's destination is the one backing off.
//!
//! A pass reads the spool oldest first, sends each entry to the sink it was
//! enqueued for in batches of at most [`batch_limit`], and applies the sink's
//! verdict per entry: delivered → delete and count; retry → keep (a charged
//! retry adds one attempt); drop → delete and count under its reason. Entries
//! past [`MAX_ATTEMPTS`] or [`MAX_AGE_MS`], and corrupt entries, are dropped
//! and counted too. Counts live in `counters/<sink>.json` and are written
//! before the files are deleted (with the names in flight, so a drainer killed
//! between the two finishes the deletion on its next start without counting
//! twice). That keeps, per sink, `enqueued = delivered + pending + dropped`.
//!
//! A sink that fails (transport error or any retry) is skipped for the rest of
//! the pass and backs off ([`BACKOFF_BASE_MS`] doubling up to
//! [`BACKOFF_MAX_MS`]); the background drainer sleeps through short backoffs
//! within its budget and exits when the spool is empty or its budget ends.
//!
//! The parts, one job each: `lock.rs` (the three locks), `spawn.rs` (starting
//! the detached drainer), `counters.rs` (per-sink counters), `pipeline.rs`
//! (reading ahead and deleting behind the delivery), `log.rs` (the drainer's
//! log), `linger.rs` (the idle drainer waiting for the next record), `run.rs`
//! (`memhook drain` and the background drainer); the drain loop itself is
//! here.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::sink::{ItemOutcome, Sink};
use crate::spool::{SinkTarget, Spool, SpoolEntry, SpoolError};
use memhook_core::fingerprint::{self, Fingerprints, Screened};
use memhook_core::timefmt::now_ms;

/// One line on the drainer's stderr through [`log_line`] (the background
/// drainer's stderr is the drain log, kept within its cap while written).
macro_rules! log {
    ($($arg:tt)*) => {
        $crate::drain::log_line(format_args!($($arg)*))
    };
}

pub mod counters;
pub mod linger;
pub mod lock;
pub mod log;
pub mod pipeline;
mod run;
pub mod spawn;
#[cfg(test)]
mod tests;

use counters::{save_counters, sweep_counter_tmp};
use pipeline::{for_each_loaded, remove_all, Remover};

pub use counters::{counter_sinks, counters_path, drop_pending, load_counters, SinkCounters};
pub use linger::{DRAIN_LINGER, LINGER_GATHER, LINGER_POLL};
pub use lock::{
    drainer_running, lock_until, try_lock, DrainLock, HOLDER_WAIT, LOCK_FILE, LOCK_POLL,
    RUN_LOCK_FILE, WAIT_LOCK_FILE, WAIT_LOCK_WAIT,
};
pub use log::{log_line, open as open_stderr_log, Lines, StderrLog, LOG_FILE, MAX_LOG_BYTES};
pub use pipeline::{PIPELINE_MIN, READ_AHEAD};
pub use run::{foreground, run_background, run_background_lingering, MakeSink};
pub use spawn::{
    hook_delivery_disabled, spawn_after_enqueue, spawn_detached, LOCK_FD_ENV, NO_HOOK_DELIVERY_ENV,
};

/// Most entries handed to an HTTP sink at once (the ai-memory batch limit).
pub const MAX_BATCH: usize = 256;
/// Most entries written to the embedded store in one transaction. Larger
/// than [`MAX_BATCH`]: each transaction pays a WAL fsync, a full-text index
/// flush and a counters write, so fewer, larger ones drain a backlog faster.
/// A drainer killed mid-batch delivers the batch again (idempotently).
pub const MAX_STORE_BATCH: usize = 1024;

/// Fold every sink's settled `enqueued` slots into its base, so the
/// ledgers stay bounded (`spool/fold.rs`); the caller holds the drain lock
/// and has swept `tmp/`. A fold that fails is logged and changes nothing.
fn fold_ledgers(spool: &Spool) {
    for sink in spool.ledger_sinks() {
        if let Err(e) = spool.fold(&sink, now_ms()) {
            log!("memhook: drain: cannot fold the enqueued ledger of {sink}: {e}");
        }
    }
}

/// Most entries handed to `target` at once.
pub fn batch_limit(target: &SinkTarget) -> usize {
    match target {
        SinkTarget::Store => MAX_STORE_BATCH,
        SinkTarget::Http { .. } => MAX_BATCH,
    }
}
/// An entry whose delivery failed this many times (charged) is dropped.
pub const MAX_ATTEMPTS: u32 = 8;
/// An entry older than this (7 days since enqueue) is dropped.
pub const MAX_AGE_MS: u64 = 7 * 24 * 60 * 60 * 1000;
/// Temp files of killed writers older than this are swept.
pub const TMP_MAX_AGE_MS: u64 = 10 * 60 * 1000;
/// How long the detached background drainer may run.
pub const BACKGROUND_BUDGET: Duration = Duration::from_secs(300);
/// Slices of the store's housekeeping (`Sink::maintain`: retention) the
/// background drainer runs each time it is idle, at most (it stops sooner
/// when there is nothing left or a record arrives).
pub const MAINTAIN_SLICES: usize = 8;
/// Per-request timeout for HTTP sinks.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(3);
/// First backoff after a failed pass to a sink; doubles per failed pass.
pub const BACKOFF_BASE_MS: u64 = 5_000;
/// Longest backoff between passes to a failing sink.
pub const BACKOFF_MAX_MS: u64 = 15 * 60 * 1000;
/// Counter id for corrupt entries whose sink cannot be read.
pub const UNKNOWN_SINK: &str = "unknown";
/// Drop reasons, as counted and shown by `status`.
pub const DROP_CORRUPT: &str = "corrupt";
pub const DROP_INVALID: &str = "invalid";
pub const DROP_MAX_AGE: &str = "max_age";
pub const DROP_MAX_ATTEMPTS: &str = "max_attempts";
pub use crate::spool::{DROP_SPOOL_FULL, DROP_SPOOL_WRITE_FAILED};

/// Pending records removed by `memhook forget` before delivery.
pub const DROP_FORGOTTEN: &str = "forgotten";

/// Why a drain could not run.
#[derive(Debug)]
pub enum DrainError {
    Spool(SpoolError),
    Io { path: PathBuf, source: io::Error },
}

impl fmt::Display for DrainError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DrainError::Spool(e) => write!(f, "{e}"),
            DrainError::Io { path, source } => write!(f, "{}: {source}", path.display()),
        }
    }
}

impl std::error::Error for DrainError {}

impl From<SpoolError> for DrainError {
    fn from(e: SpoolError) -> Self {
        DrainError::Spool(e)
    }
}

/// How one drain behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// Stop delivering at this instant.
    pub deadline: Instant,
    /// Deliver only entries of this sink (session start).
    pub only: Option<SinkTarget>,
    /// Skip sinks still backing off from an earlier failure.
    pub honour_backoff: bool,
    /// Read the spool ahead ([`for_each_loaded`]) and delete delivered files
    /// behind ([`Remover`]) on two more threads, overlapping the delivery.
    /// For `memhook drain` and the background drainer; the hook's own
    /// session-start drain stays on one thread.
    pub pipelined: bool,
}

/// What a drain did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub delivered: u64,
    pub dropped: BTreeMap<String, u64>,
    /// Charged retries (attempts added).
    pub charged: u64,
    /// Entries still in the spool at the end.
    pub remaining: usize,
    /// `*.json` names in the spool that are not regular files (FIFOs,
    /// directories, …): never opened, never deleted.
    pub not_regular: usize,
    /// The last failure seen, per sink id.
    pub errors: BTreeMap<String, String>,
    /// When records remain: the earliest moment a backing-off sink may be
    /// tried again.
    pub next_retry: Option<Instant>,
}

impl Report {
    pub fn dropped_total(&self) -> u64 {
        self.dropped.values().sum()
    }

    /// One line for humans.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "delivered {}, dropped {}",
            self.delivered,
            self.dropped_total()
        );
        if !self.dropped.is_empty() {
            let parts: Vec<String> = self
                .dropped
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            s.push_str(&format!(" ({})", parts.join(", ")));
        }
        s.push_str(&format!(", {} pending", self.remaining));
        if self.not_regular > 0 {
            s.push_str(&format!(
                ", {} skipped (not regular files in the spool directory: remove them)",
                self.not_regular
            ));
        }
        for (sink, e) in &self.errors {
            // Error text can quote a server or a stored URL: one clean line.
            s.push_str(&format!(
                "; {}: {}",
                memhook_core::term::line(sink),
                memhook_core::term::line(e)
            ));
        }
        s
    }
}

/// Entries for one sink, with their spool files.
#[derive(Default)]
struct Batch {
    paths: Vec<PathBuf>,
    entries: Vec<SpoolEntry>,
}

/// One drain run under a held lock.
struct Drainer<'a, F> {
    spool: &'a Spool,
    factory: &'a mut F,
    sinks: HashMap<SinkTarget, Box<dyn Sink>>,
    counters: HashMap<String, SinkCounters>,
    /// Sinks that failed in the current pass.
    failed: HashSet<String>,
    /// Sinks whose counters changed since they were last written.
    dirty: HashSet<String>,
    /// Drops waiting to be committed in bulk: (sink, sink id, file, reason).
    drops: Vec<(Option<SinkTarget>, String, PathBuf, &'static str)>,
    report: Report,
    opts: Options,
    /// Deletes committed files behind the delivery (with `pipelined`).
    remover: Option<Remover>,
    /// Files counted (delivered or dropped) in this run.
    committed: HashSet<PathBuf>,
    /// The watermark of the last group commit ([`Spool::commit`]).
    durable_before: Option<u64>,
    /// The fingerprint sets, opened at the first entry that needs them.
    fingerprints: Option<Result<Fingerprints, String>>,
}

/// Deliver pending entries. The caller must hold the drain lock (`_lock`).
/// `factory` builds the sink for a target (`memhook_sinks::factory::sink_factory`;
/// tests pass their own).
pub fn drain_locked<F>(
    _lock: &DrainLock,
    spool: &Spool,
    factory: &mut F,
    opts: Options,
) -> Result<Report, DrainError>
where
    F: FnMut(&SinkTarget) -> Box<dyn Sink>,
{
    let mut d = Drainer {
        spool,
        factory,
        sinks: HashMap::new(),
        counters: HashMap::new(),
        failed: HashSet::new(),
        dirty: HashSet::new(),
        drops: Vec::new(),
        report: Report::default(),
        remover: None,
        committed: HashSet::new(),
        fingerprints: None,
        durable_before: spool.read_mark().and_then(|m| m.durable_before_ms),
        opts,
    };
    d.recover_inflight();
    spool.sweep_tmp(TMP_MAX_AGE_MS);
    sweep_counter_tmp(spool.data_dir(), TMP_MAX_AGE_MS);
    fold_ledgers(spool);
    let mut first = true;
    loop {
        let progressed = d.pass(first)?;
        first = false;
        d.flush_counters();
        if Instant::now() >= d.opts.deadline {
            break;
        }
        // Go on while records move and more remain (new ones may have
        // arrived); a sink that failed stays skipped for the whole run.
        if !progressed || d.spool_is_empty()? {
            break;
        }
    }
    d.report.remaining = d.count_remaining()?;
    if d.report.remaining > 0 {
        d.report.next_retry = d.next_retry_instant();
    }
    Ok(d.report)
}

impl<F: FnMut(&SinkTarget) -> Box<dyn Sink>> Drainer<'_, F> {
    fn data_dir(&self) -> &Path {
        self.spool.data_dir()
    }

    /// Wait for queued deletions (see [`Remover`]).
    fn settle(&mut self) {
        if let Some(r) = &mut self.remover {
            r.settle();
        }
    }

    fn counters_mut(&mut self, sink_id: &str, sink: Option<&SinkTarget>) -> &mut SinkCounters {
        if !self.counters.contains_key(sink_id) {
            let c = load_counters(self.spool.data_dir(), sink_id);
            self.counters.insert(sink_id.to_string(), c);
        }
        let c = self.counters.get_mut(sink_id).expect("inserted above");
        if c.sink.is_none() {
            c.sink = sink.cloned();
        }
        c
    }

    /// Finish deletions a killed drainer had already counted.
    fn recover_inflight(&mut self) {
        for id in counter_sinks(self.data_dir()) {
            let c = load_counters(self.data_dir(), &id);
            if c.inflight.is_empty() {
                continue;
            }
            for name in &c.inflight {
                let _ = self.spool.remove(&self.spool.dir().join(name));
            }
            let c = self.counters_mut(&id, None);
            c.inflight.clear();
            let snapshot = c.clone();
            if let Err(e) = save_counters(self.data_dir(), &id, &snapshot) {
                log!("memhook: drain: cannot update counters for {id}: {e}");
            }
        }
    }

    /// Write the counters that changed since their last write. (Names left
    /// in `inflight` by the last commit are gone already; clearing them can
    /// wait for the next write: finishing a deletion twice is harmless.)
    fn flush_counters(&mut self) {
        self.settle();
        let dir = self.data_dir().to_path_buf();
        for id in std::mem::take(&mut self.dirty) {
            let Some(c) = self.counters.get_mut(&id) else {
                continue;
            };
            c.inflight.clear();
            if let Err(e) = save_counters(&dir, &id, c) {
                log!("memhook: drain: cannot write counters for {id}: {e}");
            }
        }
    }

    /// The spool's pending files, once every queued deletion is done (a
    /// listing must never hold a file already counted).
    fn pending(&mut self) -> Result<Vec<PathBuf>, DrainError> {
        self.settle();
        let listing = self.spool.list()?;
        self.report.not_regular = listing.not_regular;
        let mut files = listing.files;
        if !self.committed.is_empty() {
            files.retain(|f| !self.committed.contains(f));
        }
        Ok(files)
    }

    fn spool_is_empty(&mut self) -> Result<bool, DrainError> {
        Ok(self.pending()?.is_empty())
    }

    /// What is left, noted as the spool's mark (`spool/pending.rs`): the
    /// count hooks start from for the cap.
    fn count_remaining(&mut self) -> Result<usize, DrainError> {
        let ledgers = self.spool.ledger_lengths();
        let left = self.pending()?.len();
        if let Err(e) = self.spool.write_mark(ledgers, left, self.durable_before) {
            log!("memhook: drain: cannot write the spool's mark: {e}");
        }
        Ok(left)
    }

    fn next_retry_instant(&self) -> Option<Instant> {
        let now = now_ms();
        self.counters
            .values()
            .filter(|c| c.retry_after_ms > now || c.failed_passes > 0)
            .map(|c| Instant::now() + Duration::from_millis(c.retry_after_ms.saturating_sub(now)))
            .min()
    }

    /// Whether `sink_id` must be skipped now.
    fn skipped(&mut self, sink_id: &str, first_pass: bool) -> bool {
        if self.failed.contains(sink_id) {
            return true;
        }
        if !self.opts.honour_backoff && first_pass {
            return false;
        }
        let c = self.counters_mut(sink_id, None);
        c.retry_after_ms > now_ms()
    }

    /// One pass over the spool. Returns whether anything was delivered or dropped.
    fn pass(&mut self, first_pass: bool) -> Result<bool, DrainError> {
        let listed_at = now_ms();
        let files = self.pending()?;
        self.commit(&files, listed_at);
        let before = (self.report.delivered, self.report.dropped_total());
        let now = now_ms();
        // Per-sink batches being filled, in first-seen order.
        let mut order: Vec<SinkTarget> = Vec::new();
        let mut batches: HashMap<SinkTarget, Batch> = HashMap::new();
        let ahead = self.opts.pipelined;
        for_each_loaded(&files, ahead, |path, loaded| {
            if Instant::now() >= self.opts.deadline {
                return ControlFlow::Break(());
            }
            self.take(path, loaded, now, first_pass, &mut order, &mut batches);
            ControlFlow::Continue(())
        });
        self.flush_drops();
        order.dedup();
        for target in order {
            if Instant::now() >= self.opts.deadline {
                break;
            }
            let batch = batches.remove(&target).unwrap_or_default();
            if !batch.paths.is_empty() && !self.failed.contains(&target.id()) {
                self.deliver(&target, batch);
            }
        }
        Ok((self.report.delivered, self.report.dropped_total()) != before)
    }

    /// Hooks flush nothing: make what this pass found durable (the new
    /// entries, the spool directory, the ledgers) before any of it is
    /// delivered or deleted, in one group commit ([`Spool::commit`]).
    /// `files` was listed after `listed_at`.
    fn commit(&mut self, files: &[PathBuf], listed_at: u64) {
        match self.spool.commit(files, listed_at, self.durable_before) {
            Ok(w) => self.durable_before = Some(w),
            // Delivering is then the best way to keep the records.
            Err(e) => log!(
                "memhook: drain: cannot flush {}: {e}",
                self.spool.dir().display()
            ),
        }
    }

    /// Place one read spool entry: into its sink's batch (delivering the
    /// batch when full), or among the drops, or nowhere (skipped this pass).
    fn take(
        &mut self,
        path: PathBuf,
        loaded: Result<SpoolEntry, SpoolError>,
        now: u64,
        first_pass: bool,
        order: &mut Vec<SinkTarget>,
        batches: &mut HashMap<SinkTarget, Batch>,
    ) {
        // Counted already in this run, but its deletion failed: counting
        // it again would break the books (and a pass that only does that
        // would repeat until the deadline).
        if self.committed.contains(&path) {
            return;
        }
        let mut entry = match loaded {
            Ok(e) => e,
            Err(SpoolError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
                return
            }
            Err(SpoolError::Corrupt { .. }) => {
                // The parser's message may quote the file's content: the
                // log names the file only.
                log!(
                    "memhook: drain: {} is not a valid spool entry; dropped as corrupt",
                    path.display()
                );
                let sink = sink_of_corrupt(&path);
                let id = sink.as_ref().map(SinkTarget::id);
                self.queue_drop(sink, id, path, DROP_CORRUPT);
                return;
            }
            Err(e @ SpoolError::Invalid { .. }) => {
                // Counted under no sink: no hook enqueued it where it says.
                log!("memhook: drain: {e}; dropped as invalid");
                self.queue_drop(None, None, path, DROP_INVALID);
                return;
            }
            // Replaced by a FIFO, directory, … since the listing (which
            // leaves those out): skipped, counted by the final listing.
            Err(SpoolError::NotRegular { .. }) => return,
            Err(e) => {
                log!("memhook: drain: {e}");
                return;
            }
        };
        if let Some(only) = &self.opts.only {
            if &entry.sink != only {
                return;
            }
        }
        let id = entry.sink.id();
        if now.saturating_sub(entry.enqueued_ms) > MAX_AGE_MS {
            self.queue_drop(Some(entry.sink), Some(id), path, DROP_MAX_AGE);
            return;
        }
        if entry.attempts >= MAX_ATTEMPTS {
            self.queue_drop(Some(entry.sink), Some(id), path, DROP_MAX_ATTEMPTS);
            return;
        }
        if self.skipped(&id, first_pass) {
            return;
        }
        self.screen(&path, &mut entry);
        let target = entry.sink.clone();
        let batch = batches.entry(target.clone()).or_default();
        if batch.paths.is_empty() {
            order.push(target.clone());
        }
        batch.paths.push(path);
        batch.entries.push(entry);
        if batch.paths.len() >= batch_limit(&target) {
            let full = std::mem::take(batch);
            self.deliver(&target, full);
        }
    }

    /// The second line of exclusion: remove from the record the lines of
    /// the files its project excludes (or withhold its texts when their
    /// fingerprints are not available), before any sink sees it. A record
    /// that changed is written back, so the spool no longer holds those
    /// lines either.
    fn screen(&mut self, path: &Path, entry: &mut SpoolEntry) {
        let Some(ex) = entry.exclusions.take() else {
            return;
        };
        let data_dir = self.data_dir().to_path_buf();
        let fp = self
            .fingerprints
            .get_or_insert_with(|| Fingerprints::open(&data_dir).map_err(|e| e.to_string()));
        let key = entry.record.key.chars().take(8).collect::<String>();
        let screened = match fp {
            Ok(fp) => fp.screen(&ex, &mut entry.record),
            Err(why) => fingerprint::withhold(&mut entry.record, why.clone()),
        };
        match screened {
            Screened::Clean => return,
            Screened::Removed(n) => {
                log!("memhook: drain: record {key}: {n} lines that match excluded files removed")
            }
            Screened::Withheld(why) => {
                log!("memhook: drain: record {key}: texts withheld: {why}")
            }
        }
        if let Err(e) = self.spool.rewrite(path, entry) {
            log!("memhook: drain: {e}");
        }
    }

    /// Hand one batch to its sink and apply the outcomes.
    fn deliver(&mut self, target: &SinkTarget, batch: Batch) {
        let id = target.id();
        if self.failed.contains(&id) {
            return;
        }
        if !self.sinks.contains_key(target) {
            let s = (self.factory)(target);
            self.sinks.insert(target.clone(), s);
        }
        let Batch { paths, entries } = batch;
        for p in &paths {
            crate::spool::probe::note("deliver", p);
        }
        let sink = self.sinks.get_mut(target).expect("inserted above");
        let mut outcomes = sink.deliver(&entries);
        let unreachable = sink.unreachable();
        if outcomes.len() != entries.len() {
            // A sink bug: never guess which entries arrived.
            outcomes = vec![
                ItemOutcome::Retry {
                    charge: false,
                    reason: format!(
                        "sink returned {} outcomes for {} entries",
                        outcomes.len(),
                        entries.len()
                    ),
                };
                entries.len()
            ];
        }
        let mut done: Vec<(PathBuf, &'static str)> = Vec::new();
        let mut drop_reasons: Vec<(PathBuf, String)> = Vec::new();
        let mut error: Option<String> = None;
        let mut delivered_any = false;
        for ((path, mut entry), outcome) in paths.into_iter().zip(entries).zip(outcomes) {
            match outcome {
                ItemOutcome::Delivered => {
                    delivered_any = true;
                    done.push((path, ""));
                }
                ItemOutcome::Drop { reason } => drop_reasons.push((path, reason)),
                ItemOutcome::Retry { charge, reason } => {
                    error.get_or_insert(reason);
                    if charge && !unreachable {
                        entry.attempts += 1;
                        self.report.charged += 1;
                        if entry.attempts >= MAX_ATTEMPTS {
                            done.push((path, DROP_MAX_ATTEMPTS));
                        } else if let Err(e) = self.spool.rewrite(&path, &entry) {
                            log!("memhook: drain: cannot record attempt: {e}");
                        }
                    }
                }
            }
        }
        // Free-text drop reasons are folded into the same commit.
        let mut items: Vec<(PathBuf, String)> =
            done.into_iter().map(|(p, r)| (p, r.to_string())).collect();
        items.extend(drop_reasons);
        // Delivery state first, so the commit below writes it with the counts.
        let now = now_ms();
        let c = self.counters_mut(&id, Some(target));
        if delivered_any {
            c.last_delivery_ms = Some(now);
        }
        if error.is_some() || unreachable {
            let e = error.unwrap_or_else(|| "endpoint unreachable".to_string());
            c.last_error = Some(e.clone());
            c.last_error_ms = Some(now);
            c.failed_passes = c.failed_passes.saturating_add(1);
            c.retry_after_ms = now + backoff_ms(c.failed_passes);
            self.report.errors.insert(id.clone(), e);
            self.failed.insert(id.clone());
        } else if delivered_any {
            c.failed_passes = 0;
            c.retry_after_ms = 0;
        }
        self.dirty.insert(id.clone());
        self.commit_owned(Some(target), &id, items);
    }

    /// Drop `path` (counted under `reason`), committed in bulk.
    fn queue_drop(
        &mut self,
        sink: Option<SinkTarget>,
        sink_id: Option<String>,
        path: PathBuf,
        reason: &'static str,
    ) {
        let id = sink_id.unwrap_or_else(|| UNKNOWN_SINK.to_string());
        self.drops.push((sink, id, path, reason));
        if self.drops.len() >= MAX_BATCH {
            self.flush_drops();
        }
    }

    /// Commit queued drops, one counters write per sink.
    fn flush_drops(&mut self) {
        type Items = Vec<(PathBuf, String)>;
        let mut by_sink: BTreeMap<String, (Option<SinkTarget>, Items)> = BTreeMap::new();
        for (sink, id, path, reason) in std::mem::take(&mut self.drops) {
            let slot = by_sink.entry(id).or_insert((sink, Vec::new()));
            slot.1.push((path, reason.to_string()));
        }
        for (id, (sink, items)) in by_sink {
            self.commit_owned(sink.as_ref(), &id, items);
        }
    }

    /// Count then delete: `(path, reason)` with reason "" for delivered.
    fn commit_owned(&mut self, sink: Option<&SinkTarget>, id: &str, items: Vec<(PathBuf, String)>) {
        if items.is_empty() {
            return;
        }
        let dir = self.data_dir().to_path_buf();
        let c = self.counters_mut(id, sink);
        let mut names = Vec::with_capacity(items.len());
        for (path, reason) in &items {
            if reason.is_empty() {
                c.delivered += 1;
            } else {
                *c.dropped.entry(reason.clone()).or_default() += 1;
            }
            if let Some(n) = path.file_name().and_then(|n| n.to_str()) {
                names.push(n.to_string());
            }
        }
        c.inflight = names;
        let snapshot = c.clone();
        // The names this write drops from `inflight` must be gone first.
        self.settle();
        if let Err(e) = save_counters(&dir, id, &snapshot) {
            // Without the count the deletion would break the accounting: keep
            // the files (they are delivered again, idempotently, next time).
            log!("memhook: drain: cannot write counters for {id}: {e}; will retry");
            let c = self.counters_mut(id, sink);
            *c = load_counters(&dir, id);
            self.failed.insert(id.to_string());
            return;
        }
        self.dirty.remove(id);
        let mut paths = Vec::with_capacity(items.len());
        for (path, reason) in items {
            self.committed.insert(path.clone());
            paths.push(path);
            if reason.is_empty() {
                self.report.delivered += 1;
            } else {
                *self.report.dropped.entry(reason).or_default() += 1;
            }
        }
        if self.opts.pipelined && self.remover.is_none() && paths.len() >= PIPELINE_MIN {
            self.remover = Remover::start();
        }
        match &mut self.remover {
            Some(r) => r.push(paths),
            None => remove_all(&paths),
        }
    }
}

/// The wait after `failed_passes` consecutive failed passes (at least 1):
/// [`BACKOFF_BASE_MS`] doubling per pass, at most [`BACKOFF_MAX_MS`].
pub fn backoff_ms(failed_passes: u32) -> u64 {
    let shift = failed_passes.saturating_sub(1).min(20);
    (BACKOFF_BASE_MS << shift).min(BACKOFF_MAX_MS)
}

/// Best effort: the sink named inside a corrupt entry, if that part parses.
/// Only a sink a hook could have written counts (see [`SinkTarget::problem`]).
fn sink_of_corrupt(path: &Path) -> Option<SinkTarget> {
    use std::io::Read;
    let f = memhook_core::data_dir::open_nofollow(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(crate::spool::MAX_ENTRY_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    #[derive(Deserialize)]
    struct Named {
        sink: SinkTarget,
    }
    let sink = serde_json::from_slice::<Named>(&bytes).ok()?.sink;
    sink.problem().is_none().then_some(sink)
}
