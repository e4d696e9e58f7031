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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::fs::{self, File};
use std::io;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use clap::Args;
use serde::{Deserialize, Serialize};

use crate::cmd::CmdResult;
use crate::data_dir;
use crate::sink::{ItemOutcome, Sink};
use crate::spool::{SinkTarget, Spool, SpoolEntry, SpoolError};
use crate::timefmt::now_ms;

/// The drain lock, in the data dir.
pub const LOCK_FILE: &str = "drain.lock";
/// When truthy, hooks deliver nothing themselves: no background drainer is
/// started and session start does not deliver first; `memhook drain` (run by
/// hand, cron, CI) is then the only delivery. For sandboxes that forbid
/// detached processes, and for tests that inspect the spool.
pub const NO_HOOK_DELIVERY_ENV: &str = "MEMHOOK_NO_HOOK_DELIVERY";

/// Whether [`NO_HOOK_DELIVERY_ENV`] is set to a truthy value.
pub fn hook_delivery_disabled() -> bool {
    std::env::var(NO_HOOK_DELIVERY_ENV).is_ok_and(|v| crate::scope::is_truthy(&v))
}

/// Held by the background drainer on duty: from the hook that starts it
/// (handed over on fd 3) until after its last look at the spool. Hooks
/// start no drainer while it is held.
pub const RUN_LOCK_FILE: &str = "drain.run.lock";
/// Held by a background drainer sleeping through a backoff (without the
/// other locks), so hooks start no drainer for a destination backing off.
pub const WAIT_LOCK_FILE: &str = "drain.wait.lock";
/// How long a background drainer waits for the drain lock while another
/// process holds it (a foreground drain, a session start delivering,
/// `memhook status` looking).
pub const HOLDER_WAIT: Duration = Duration::from_secs(10);
/// How long a drainer about to sleep through a backoff waits for the waiter
/// lock (a hook may be looking at it); past it another drainer sleeps.
pub const WAIT_LOCK_WAIT: Duration = Duration::from_millis(200);
/// The background drainer's log (its stderr), in the data dir.
pub const LOG_FILE: &str = "logs/drain.log";
/// The log is rotated to `drain.log.old` when it grows past this.
pub const MAX_LOG_BYTES: u64 = 1024 * 1024;
/// Most entries handed to an HTTP sink at once (the ai-memory batch limit).
pub const MAX_BATCH: usize = 256;
/// Most entries written to the embedded store in one transaction. Larger
/// than [`MAX_BATCH`]: each transaction pays a WAL fsync, a full-text index
/// flush and a counters write, so fewer, larger ones drain a backlog faster.
/// A drainer killed mid-batch delivers the batch again (idempotently).
pub const MAX_STORE_BATCH: usize = 1024;

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
/// Per-request timeout for HTTP sinks.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(3);
/// First backoff after a failed pass to a sink; doubles per failed pass.
pub const BACKOFF_BASE_MS: u64 = 5_000;
/// Longest backoff between passes to a failing sink.
pub const BACKOFF_MAX_MS: u64 = 15 * 60 * 1000;
/// How often a waiting drainer polls the lock.
pub const LOCK_POLL: Duration = Duration::from_millis(20);
/// Counter id for corrupt entries whose sink cannot be read.
pub const UNKNOWN_SINK: &str = "unknown";
/// Drop reasons, as counted and shown by `status`.
pub const DROP_CORRUPT: &str = "corrupt";
pub const DROP_INVALID: &str = "invalid";
pub const DROP_MAX_AGE: &str = "max_age";
pub const DROP_MAX_ATTEMPTS: &str = "max_attempts";
pub use crate::spool::{DROP_SPOOL_FULL, DROP_SPOOL_WRITE_FAILED};

#[derive(Debug, Args)]
pub struct DrainArgs {
    /// Stop after this many seconds even if records remain.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub budget_secs: u64,
    /// Internal: run as the detached background drainer.
    #[arg(long, hide = true)]
    pub background: bool,
    /// Start a detached background drainer (unless one is running) and
    /// return at once, as the hook does after each event.
    #[arg(long, conflicts_with = "background")]
    pub detach: bool,
}
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

/// Delivery state of one sink, persisted in `counters/<sink>.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkCounters {
    /// The sink, for status (absent for [`UNKNOWN_SINK`]).
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
const MAX_COUNTERS_BYTES: u64 = 1024 * 1024;

fn read_counters(path: &Path) -> Option<SinkCounters> {
    use std::io::Read;
    let f = crate::spool::open_nofollow(path).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    f.take(MAX_COUNTERS_BYTES).read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

fn save_counters(data_dir: &Path, sink_id: &str, c: &SinkCounters) -> io::Result<()> {
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

/// The drain lock, held while the value lives.
#[derive(Debug)]
pub struct DrainLock {
    _file: File,
}

fn open_named_lock(data_dir: &Path, name: &str) -> io::Result<File> {
    let mut opts = fs::OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK);
    }
    opts.open(data_dir.join(name))
}

/// Take the drain lock without waiting. `Ok(None)` when another process holds it.
pub fn try_lock(data_dir: &Path) -> io::Result<Option<DrainLock>> {
    try_named_lock(data_dir, LOCK_FILE)
}

/// Take the lock file `name` of the data dir without waiting.
fn try_named_lock(data_dir: &Path, name: &str) -> io::Result<Option<DrainLock>> {
    use fs2::FileExt;
    let f = open_named_lock(data_dir, name)?;
    match f.try_lock_exclusive() {
        Ok(()) => Ok(Some(DrainLock { _file: f })),
        Err(e) if is_contended(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

fn is_contended(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
        || e.raw_os_error() == fs2::lock_contended_error().raw_os_error()
}

/// Take the drain lock, polling until `deadline`. `Ok(None)` on timeout.
pub fn lock_until(data_dir: &Path, deadline: Instant) -> io::Result<Option<DrainLock>> {
    named_lock_until(data_dir, LOCK_FILE, deadline)
}

fn named_lock_until(
    data_dir: &Path,
    name: &str,
    deadline: Instant,
) -> io::Result<Option<DrainLock>> {
    loop {
        if let Some(l) = try_named_lock(data_dir, name)? {
            return Ok(Some(l));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        std::thread::sleep(LOCK_POLL.min(deadline - now));
    }
}

/// Whether a drainer holds the lock right now (status).
pub fn drainer_running(data_dir: &Path) -> bool {
    if !data_dir.join(LOCK_FILE).exists() {
        return false;
    }
    matches!(try_lock(data_dir), Ok(None))
}

/// Environment variable through which a spawned drainer learns which of its
/// file descriptors is the run lock its parent took for it.
pub const LOCK_FD_ENV: &str = "MEMHOOK_DRAIN_LOCK_FD";
/// The descriptor number the lock is handed over on.
const INHERITED_LOCK_FD: i32 = 3;

/// Start a detached background drainer for `data_dir`, unless the spool is
/// empty, a drainer is on duty ([`RUN_LOCK_FILE`]: it looks at the spool
/// again before it exits), or a drainer sleeps through a backoff
/// ([`WAIT_LOCK_FILE`]) and `sink` — the destination of what the caller
/// enqueued, `None` when unknown — is the one backing off (the sleeper
/// retries it). A holder of the drain lock that is not a drainer does not
/// count: the new drainer waits for it ([`HOLDER_WAIT`]).
/// Cheap: a directory look-up and one non-blocking lock attempt; a counters
/// read and one more lock attempt only while a destination backs off.
/// The run lock is taken here and handed to the child on fd 3, so no two
/// drainers are ever on duty (no stampede of drainers under load). The
/// child runs `<current_exe> --data-dir <dir> drain --background` in a new
/// session with stdin/stdout on /dev/null and stderr appended to
/// `<data>/logs/drain.log`; it inherits the environment (so a token travels
/// in `AI_MEMORY_AUTH_TOKEN`, never in argv). Returns whether a child was
/// started; with [`NO_HOOK_DELIVERY_ENV`] set, never starts one.
pub fn spawn_detached(data_dir: &Path, sink: Option<&SinkTarget>) -> io::Result<bool> {
    if hook_delivery_disabled() {
        return Ok(false);
    }
    if !has_pending(data_dir) {
        return Ok(false);
    }
    let backing_off =
        sink.is_none_or(|s| load_counters(data_dir, &s.id()).retry_after_ms > now_ms());
    if backing_off && try_named_lock(data_dir, WAIT_LOCK_FILE)?.is_none() {
        return Ok(false);
    }
    let Some(run) = try_named_lock(data_dir, RUN_LOCK_FILE)? else {
        return Ok(false);
    };
    let log = open_log(data_dir)?;
    let exe = std::env::current_exe()?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--data-dir")
        .arg(data_dir)
        .arg("drain")
        .arg("--background")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log);
    #[cfg(unix)]
    {
        use std::os::unix::io::AsRawFd;
        use std::os::unix::process::CommandExt;
        let fd = run._file.as_raw_fd();
        cmd.env(LOCK_FD_ENV, INHERITED_LOCK_FD.to_string());
        // SAFETY: only async-signal-safe calls (setsid, dup2, fcntl) between
        // fork and exec, touching no memory of ours.
        unsafe {
            cmd.pre_exec(move || {
                if libc::setsid() == -1 {
                    return Err(io::Error::last_os_error());
                }
                let ok = if fd == INHERITED_LOCK_FD {
                    libc::fcntl(fd, libc::F_SETFD, 0) != -1
                } else {
                    libc::dup2(fd, INHERITED_LOCK_FD) != -1
                };
                if !ok {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    // Not waited for: the child outlives us and is reparented to init. Our
    // copy of the lock closes here; the child's copy keeps the lock held.
    let res = cmd.spawn().map(|_| true);
    drop(run);
    res
}

/// Whether the spool holds at least one entry (stops at the first one).
fn has_pending(data_dir: &Path) -> bool {
    fs::read_dir(data_dir.join("spool"))
        .map(|rd| {
            rd.flatten().any(|e| {
                let n = e.file_name();
                let n = n.as_encoded_bytes();
                n.ends_with(b".json")
                    && !n.starts_with(b".")
                    && e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink())
            })
        })
        .unwrap_or(false)
}

/// The run lock handed over by [`spawn_detached`], if this process got one:
/// the descriptor must be the data dir's run lock file, and locking it must
/// succeed.
fn inherited_run_lock(data_dir: &Path) -> Option<DrainLock> {
    #[cfg(unix)]
    {
        use fs2::FileExt;
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::FromRawFd;
        let fd: i32 = std::env::var(LOCK_FD_ENV).ok()?.parse().ok()?;
        std::env::remove_var(LOCK_FD_ENV);
        if fd != INHERITED_LOCK_FD {
            return None;
        }
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes into `st` only; a bad fd just fails.
        if unsafe { libc::fstat(fd, &mut st) } != 0 {
            return None;
        }
        let want = fs::metadata(data_dir.join(RUN_LOCK_FILE)).ok()?;
        if st.st_dev as u64 != want.dev() || st.st_ino as u64 != want.ino() {
            return None;
        }
        // SAFETY: the descriptor is open (fstat succeeded), it is the lock
        // file, and nothing else in this process owns it.
        let file = unsafe { File::from_raw_fd(fd) };
        // Already ours when inherited; otherwise this takes it if free.
        file.try_lock_exclusive().ok()?;
        Some(DrainLock { _file: file })
    }
    #[cfg(not(unix))]
    {
        let _ = data_dir;
        None
    }
}

/// One line on the drainer's stderr through [`log_line`] (the background
/// drainer's stderr is the drain log, kept within its cap while written).
macro_rules! log {
    ($($arg:tt)*) => {
        $crate::drain::log_line(format_args!($($arg)*))
    };
}

/// The data dir whose drain log is this process's stderr (set by the
/// background drainer).
static LOG_OF: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
/// Serialises rotation and writing (the deleting thread logs too).
static LOG_WRITE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Write one line to stderr, never panicking. In the background drainer
/// (stderr is `<data>/logs/drain.log`) the log is rotated first when it is
/// past [`MAX_LOG_BYTES`], so a drainer that logs a lot never grows it
/// past the cap by more than one line.
pub fn log_line(line: fmt::Arguments) {
    use std::io::Write;
    let _guard = LOG_WRITE.lock();
    if let Some(dir) = LOG_OF.get() {
        cap_stderr_log(dir);
    }
    let _ = writeln!(io::stderr(), "{line}");
}

/// When stderr is a drain log past [`MAX_LOG_BYTES`]: rotate the log file
/// (unless someone else already did) and point stderr at a fresh one.
fn cap_stderr_log(data_dir: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: fstat writes into `st` only; a closed fd just fails.
        if unsafe { libc::fstat(2, &mut st) } != 0 || (st.st_size as u64) <= MAX_LOG_BYTES {
            return;
        }
        let path = data_dir.join(LOG_FILE);
        let ours = fs::symlink_metadata(&path)
            .is_ok_and(|m| m.dev() == st.st_dev as u64 && m.ino() == st.st_ino as u64);
        let rotated = path.with_file_name("drain.log.old");
        let is_old = fs::symlink_metadata(&rotated)
            .is_ok_and(|m| m.dev() == st.st_dev as u64 && m.ino() == st.st_ino as u64);
        // Only a stderr that is (or was) this drain log is replaced.
        if !(ours || is_old) {
            return;
        }
        if let Ok(f) = open_log(data_dir) {
            // SAFETY: both descriptors are open; dup2 replaces fd 2 atomically.
            unsafe { libc::dup2(f.as_raw_fd(), 2) };
        }
    }
}

/// Open the drain log for appending (0600), rotating it past [`MAX_LOG_BYTES`].
fn open_log(data_dir: &Path) -> io::Result<File> {
    let path = data_dir.join(LOG_FILE);
    let dir = path.parent().expect("log file has a parent");
    data_dir::ensure_private_dir(dir).map_err(|e| io::Error::other(e.to_string()))?;
    if fs::metadata(&path)
        .map(|m| m.len() > MAX_LOG_BYTES)
        .unwrap_or(false)
    {
        let _ = fs::rename(&path, dir.join("drain.log.old"));
    }
    let mut opts = fs::OpenOptions::new();
    opts.append(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    opts.open(&path)
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
            s.push_str(&format!("; {sink}: {e}"));
        }
        s
    }
}

/// The real sinks: the embedded store, or an HTTP server with the live token
/// and `timeout` per delivery call.
pub fn sink_factory(
    data_dir: &Path,
    timeout: Duration,
) -> impl FnMut(&SinkTarget) -> Box<dyn Sink> + '_ {
    sink_factory_until(data_dir, timeout, None)
}

/// [`sink_factory`]; with a `deadline` (session start), the store waits for
/// another connection's lock only until then.
pub fn sink_factory_until(
    data_dir: &Path,
    timeout: Duration,
    deadline: Option<Instant>,
) -> impl FnMut(&SinkTarget) -> Box<dyn Sink> + '_ {
    move |target| match target {
        SinkTarget::Store => Box::new(crate::sink::store::StoreSink::new(data_dir).until(deadline)),
        SinkTarget::Http { url } => Box::new(
            crate::sink::http::HttpSink::new(url, crate::sink::auth_token(data_dir), timeout)
                .with_data_dir(data_dir),
        ),
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
}

/// Deletes spool files on its own thread. Deleting a spool file is the
/// dearest step of a drain (the file system frees its blocks; on a mount
/// with online `discard` it also waits for the device), so it runs while the
/// drainer reads and delivers the next batch. [`Remover::settle`] waits until
/// every queued file is gone: the drainer settles before it writes counters
/// (their `inflight` list must never drop a name whose file still exists)
/// and before it lists the spool (so it never reads a file it already
/// counted).
struct Remover {
    queue: Option<mpsc::Sender<Arc<[PathBuf]>>>,
    done: mpsc::Receiver<()>,
    /// Batches sent and not yet acknowledged, oldest first (kept so that
    /// they are deleted here should the thread be gone).
    queued: std::collections::VecDeque<Arc<[PathBuf]>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Remover {
    /// `None` when no thread can be started (the caller deletes inline).
    fn start() -> Option<Remover> {
        let (queue, work) = mpsc::channel::<Arc<[PathBuf]>>();
        let (ack, done) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("memhook-remove".into())
            .spawn(move || {
                for batch in work {
                    remove_all(&batch);
                    if ack.send(()).is_err() {
                        return;
                    }
                }
            })
            .ok()?;
        Some(Remover {
            queue: Some(queue),
            done,
            queued: Default::default(),
            thread: Some(thread),
        })
    }

    /// Queue `paths` for deletion; deletes them here if the thread is gone.
    fn push(&mut self, paths: Vec<PathBuf>) {
        let paths: Arc<[PathBuf]> = paths.into();
        match &self.queue {
            Some(q) if q.send(Arc::clone(&paths)).is_ok() => self.queued.push_back(paths),
            _ => remove_all(&paths),
        }
    }

    /// Wait until every queued file is deleted.
    fn settle(&mut self) {
        while !self.queued.is_empty() {
            if self.done.recv().is_ok() {
                self.queued.pop_front();
                continue;
            }
            // The thread is gone (a bug): finish its work here. Deleting a
            // file it already deleted is harmless.
            self.queue = None;
            for paths in std::mem::take(&mut self.queued) {
                remove_all(&paths);
            }
        }
    }
}

impl Drop for Remover {
    fn drop(&mut self) {
        self.settle();
        self.queue = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// How many spool entries the reading thread may have read ahead of the
/// delivery (bounds the memory a pipelined drain holds: entries are at most
/// a few KiB).
pub const READ_AHEAD: usize = 256;
/// A pipelined drain reads a listing shorter than this, and deletes a
/// batch smaller than this, on its own thread: for the one or two records a
/// background drainer usually finds, starting a thread costs more than it
/// saves.
pub const PIPELINE_MIN: usize = 64;
/// Entries the reading thread hands over at once.
const READ_CHUNK: usize = 32;

/// Read `files` in order through [`Spool::load`] and hand each to `f` until it
/// breaks. With `ahead`, a second thread reads up to [`READ_AHEAD`] entries
/// ahead of `f`, so reading and parsing the spool overlaps delivering it;
/// without (or when no thread can be started), each file is read when `f`
/// is ready for it.
fn for_each_loaded(
    files: &[PathBuf],
    ahead: bool,
    mut f: impl FnMut(PathBuf, Result<SpoolEntry, SpoolError>) -> ControlFlow<()>,
) {
    let in_order =
        |f: &mut dyn FnMut(PathBuf, Result<SpoolEntry, SpoolError>) -> ControlFlow<()>,
         files: &[PathBuf]| {
            for path in files {
                if f(path.clone(), Spool::load(path)).is_break() {
                    return;
                }
            }
        };
    if !ahead || files.len() < PIPELINE_MIN {
        return in_order(&mut f, files);
    }
    std::thread::scope(|s| {
        // Entries travel in chunks: one wake-up per chunk, not per entry.
        let (tx, rx) = mpsc::sync_channel::<Vec<Loaded>>(READ_AHEAD / READ_CHUNK);
        let reader = std::thread::Builder::new()
            .name("memhook-read".into())
            .spawn_scoped(s, move || {
                for (c, chunk) in files.chunks(READ_CHUNK).enumerate() {
                    let loaded = chunk
                        .iter()
                        .enumerate()
                        .map(|(i, path)| (c * READ_CHUNK + i, Spool::load(path)))
                        .collect();
                    if tx.send(loaded).is_err() {
                        return;
                    }
                }
            });
        if reader.is_err() {
            return in_order(&mut f, files);
        }
        'all: for chunk in rx.iter() {
            for (i, loaded) in chunk {
                if f(files[i].clone(), loaded).is_break() {
                    break 'all;
                }
            }
        }
        // Dropping the receiver ends a reader still blocked on a full queue.
        drop(rx);
    });
}

/// A spool entry read by the reading thread, with its index in the listing.
type Loaded = (usize, Result<SpoolEntry, SpoolError>);

/// Delete spool files; a failure is logged (never a panic, even when the
/// log cannot be written) and the file is delivered again later.
fn remove_all(paths: &[PathBuf]) {
    for path in paths {
        if let Err(e) = crate::spool::remove_file(path) {
            log!("memhook: drain: {e}");
        }
    }
}

/// Deliver pending entries. The caller must hold the drain lock (`_lock`).
/// `factory` builds the sink for a target (see [`sink_factory`]; tests pass
/// their own).
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
        opts,
    };
    d.recover_inflight();
    spool.sweep_tmp(TMP_MAX_AGE_MS);
    sweep_counter_tmp(spool.data_dir(), TMP_MAX_AGE_MS);
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

    fn count_remaining(&mut self) -> Result<usize, DrainError> {
        Ok(self.pending()?.len())
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
        let files = self.pending()?;
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
        let entry = match loaded {
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

/// Remove temp files of counter writes (`counters/.<name>.<pid>.tmp`) that a
/// killed drainer left behind, once older than `max_age_ms`.
fn sweep_counter_tmp(data_dir: &Path, max_age_ms: u64) -> usize {
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

/// Best effort: the sink named inside a corrupt entry, if that part parses.
/// Only a sink a hook could have written counts (see [`SinkTarget::problem`]).
fn sink_of_corrupt(path: &Path) -> Option<SinkTarget> {
    use std::io::Read;
    let f = crate::spool::open_nofollow(path).ok()?;
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

/// `memhook drain`: deliver in the foreground (or, with `--background`, run
/// as the detached drainer). Exit 0 when the spool ends empty, 1 otherwise.
pub fn run(args: &DrainArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = data_dir::resolve(data_dir)?;
    if args.background {
        run_background(&dir);
        return Ok(ExitCode::SUCCESS);
    }
    if args.detach {
        let started =
            spawn_detached(&dir, None).map_err(|e| format!("cannot start the drainer: {e}"))?;
        println!(
            "{}",
            if started {
                "started a background drainer"
            } else {
                "nothing started: the spool is empty, or a drainer is already running (or waiting to retry)"
            }
        );
        return Ok(ExitCode::SUCCESS);
    }
    let spool = Spool::open(&dir)?;
    let deadline = Instant::now() + Duration::from_secs(args.budget_secs);
    let mut by_other = 0;
    let lock = match try_lock(&dir).map_err(|e| lock_error(&dir, e))? {
        Some(l) => l,
        None => {
            // Usually the background drainer a hook just started: what it
            // delivers meanwhile is part of this command's answer.
            eprintln!(
                "memhook: a background drainer is already delivering; waiting for it \
                 (at most {} s)",
                args.budget_secs
            );
            let before = delivered_so_far(&dir);
            let lock = lock_until(&dir, deadline)
                .map_err(|e| lock_error(&dir, e))?
                .ok_or("another drainer held the lock for the whole budget; try again later")?;
            by_other = delivered_so_far(&dir).saturating_sub(before);
            lock
        }
    };
    let mut factory = sink_factory(&dir, HTTP_TIMEOUT);
    let report = drain_locked(
        &lock,
        &spool,
        &mut factory,
        Options {
            deadline,
            only: None,
            honour_backoff: false,
            pipelined: true,
        },
    )?;
    let mut summary = report.summary();
    if by_other > 0 {
        // One answer for the user: what was delivered since they asked,
        // whichever drainer did it.
        let own = format!("delivered {}", report.delivered);
        let all = format!(
            "delivered {} ({by_other} by the background drainer that was already running)",
            report.delivered + by_other
        );
        summary = summary.replacen(&own, &all, 1);
    }
    if by_other == 0 && report == Report::default() {
        summary = "nothing was pending: every record is already delivered".to_string();
    }
    println!("memhook drain: {summary}");
    Ok(if report.remaining == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Records delivered so far, over every sink's counters.
fn delivered_so_far(dir: &Path) -> u64 {
    counter_sinks(dir)
        .iter()
        .map(|id| load_counters(dir, id).delivered)
        .sum()
}

fn lock_error(dir: &Path, e: io::Error) -> String {
    format!(
        "{}: cannot open the drain lock: {e}",
        dir.join(LOCK_FILE).display()
    )
}

/// The detached drainer: drain until the spool is empty or the budget ends.
/// It is on duty while it holds the run lock (handed over by the hook, or
/// taken here; exits at once when another drainer is on duty) and waits for
/// the drain lock up to [`HOLDER_WAIT`] each time it needs it. After each
/// run it gives up the run lock, then looks at the spool: anything it did
/// not see before the run (enqueued meanwhile, by a hook that found it on
/// duty) means another run. When only backing-off destinations remain and
/// their next try falls within the budget, it sleeps holding only the
/// waiter lock, so a session start never waits behind it and a record for
/// another destination gets a drainer of its own. Reports go to stderr,
/// which is the drain log.
pub fn run_background(dir: &Path) {
    let deadline = Instant::now() + BACKGROUND_BUDGET;
    let _ = LOG_OF.set(dir.to_path_buf());
    let spool = match Spool::open(dir) {
        Ok(s) => s,
        Err(e) => {
            log!("memhook: drain: {e}");
            return;
        }
    };
    let mut run = match inherited_run_lock(dir)
        .map_or_else(|| try_named_lock(dir, RUN_LOCK_FILE), |l| Ok(Some(l)))
    {
        Ok(Some(l)) => l,
        Ok(None) => return,
        Err(e) => {
            eprintln!("memhook: drain: {}", lock_error(dir, e));
            return;
        }
    };
    loop {
        // What this run will look at; anything else found after it is new.
        let seen: HashSet<PathBuf> = spool.pending().unwrap_or_default().into_iter().collect();
        let lock = match lock_until(dir, (Instant::now() + HOLDER_WAIT).min(deadline)) {
            Ok(Some(l)) => l,
            Ok(None) => {
                eprintln!(
                    "memhook: drain {}: another process held the drain lock for {} s; \
                     records stay queued for the next event or `memhook drain`",
                    crate::timefmt::rfc3339_ms(now_ms()),
                    HOLDER_WAIT.as_secs()
                );
                return;
            }
            Err(e) => {
                log!("memhook: drain: {}", lock_error(dir, e));
                return;
            }
        };
        let mut factory = sink_factory(dir, HTTP_TIMEOUT);
        let report = match drain_locked(
            &lock,
            &spool,
            &mut factory,
            Options {
                deadline,
                only: None,
                honour_backoff: true,
                pipelined: true,
            },
        ) {
            Ok(r) => r,
            Err(e) => {
                log!("memhook: drain: {e}");
                return;
            }
        };
        if report.dropped_total() > 0 || !report.errors.is_empty() {
            log!(
                "memhook: drain {}: {}",
                crate::timefmt::rfc3339_ms(now_ms()),
                report.summary()
            );
        }
        drop(lock);
        if Instant::now() >= deadline {
            return;
        }
        // Off duty: from here a hook that enqueues starts a drainer itself.
        // What a hook enqueued while we were on duty is ours to deliver.
        drop(run);
        let left = spool.pending().unwrap_or_default();
        if left.iter().any(|p| !seen.contains(p)) {
            run = match try_named_lock(dir, RUN_LOCK_FILE) {
                Ok(Some(l)) => l,
                _ => return,
            };
            continue;
        }
        if left.is_empty() {
            return;
        }
        match report.next_retry {
            Some(at) if at < deadline => {
                let wait = Instant::now() + WAIT_LOCK_WAIT;
                let Ok(Some(waiting)) = named_lock_until(dir, WAIT_LOCK_FILE, wait) else {
                    return;
                };
                std::thread::sleep(at.saturating_duration_since(Instant::now()));
                // Back on duty; when another drainer is on duty already, it
                // delivers what is due (it looks at the spool before it exits).
                run = match try_named_lock(dir, RUN_LOCK_FILE) {
                    Ok(Some(l)) => l,
                    _ => return,
                };
                drop(waiting);
            }
            _ => {
                log!(
                    "memhook: drain {}: {} record(s) left for later; `memhook status` shows why",
                    crate::timefmt::rfc3339_ms(now_ms()),
                    left.len()
                );
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Record;
    use std::cell::RefCell;
    use std::rc::Rc;

    fn entry(key: &str, sink: SinkTarget, enqueued_ms: u64) -> SpoolEntry {
        SpoolEntry {
            v: crate::spool::ENTRY_VERSION,
            sink,
            attempts: 0,
            enqueued_ms,
            record: Record {
                occurred_ms: enqueued_ms,
                session_id: Some("s".into()),
                cwd: None,
                ..crate::record::sample::record(key)
            },
        }
    }

    /// A sink that answers from a script and records batch sizes.
    struct Scripted {
        answer: Box<dyn FnMut(&SpoolEntry) -> ItemOutcome>,
        batches: Rc<RefCell<Vec<usize>>>,
        down: bool,
    }

    impl Sink for Scripted {
        fn deliver(&mut self, entries: &[SpoolEntry]) -> Vec<ItemOutcome> {
            self.batches.borrow_mut().push(entries.len());
            entries.iter().map(|e| (self.answer)(e)).collect()
        }
        fn unreachable(&self) -> bool {
            self.down
        }
    }

    fn opts() -> Options {
        Options {
            deadline: Instant::now() + Duration::from_secs(30),
            only: None,
            honour_backoff: false,
            pipelined: true,
        }
    }

    fn run_with(
        spool: &Spool,
        answer: impl FnMut(&SpoolEntry) -> ItemOutcome + Clone + 'static,
        down: bool,
        o: Options,
    ) -> (Report, Vec<usize>) {
        let batches = Rc::new(RefCell::new(Vec::new()));
        let b2 = batches.clone();
        let mut factory = move |_: &SinkTarget| -> Box<dyn Sink> {
            Box::new(Scripted {
                answer: Box::new(answer.clone()),
                batches: b2.clone(),
                down,
            })
        };
        let lock = try_lock(spool.data_dir()).unwrap().unwrap();
        let r = drain_locked(&lock, spool, &mut factory, o).unwrap();
        let b = batches.borrow().clone();
        (r, b)
    }

    fn identity_holds(spool: &Spool, id: &str) -> (u64, u64, u64, u64) {
        let c = load_counters(spool.data_dir(), id);
        let pending = spool
            .pending()
            .unwrap()
            .iter()
            .filter(|p| Spool::load(p).map(|e| e.sink.id() == id).unwrap_or(false))
            .count() as u64;
        let enq = spool.ledger(id, crate::spool::LEDGER_ENQUEUED);
        let at_enqueue: u64 = spool.ledger_drops(id).iter().map(|(_, n)| n).sum();
        let dropped = c.dropped_total() + at_enqueue;
        assert_eq!(
            enq,
            c.delivered + pending + dropped,
            "identity for {id}: {c:?}"
        );
        (enq, c.delivered, pending, dropped)
    }

    /// Fill the spool with `limit + 1` entries for `target`; the drain must
    /// hand them over oldest first in a full batch and a batch of one.
    fn batches_of_at_most(target: SinkTarget, limit: usize) {
        assert_eq!(batch_limit(&target), limit);
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let now = now_ms();
        for i in 0..(limit + 1) {
            spool
                .enqueue(&entry(&format!("{i:032x}"), target.clone(), now + i as u64))
                .unwrap();
        }
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s2 = seen.clone();
        let answer = move |e: &SpoolEntry| {
            s2.borrow_mut().push(e.record.key.clone());
            ItemOutcome::Delivered
        };
        let (r, batches) = run_with(&spool, answer, false, opts());
        assert_eq!(r.delivered, limit as u64 + 1);
        assert_eq!(r.remaining, 0);
        assert_eq!(batches, vec![limit, 1]);
        let keys = seen.borrow().clone();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "oldest first");
        let n = limit as u64 + 1;
        assert_eq!(identity_holds(&spool, &target.id()), (n, n, 0, 0));
    }

    #[test]
    fn delivers_in_batches_of_at_most_max_batch_oldest_first() {
        batches_of_at_most(
            SinkTarget::Http {
                url: "http://127.0.0.1:9/".into(),
            },
            MAX_BATCH,
        );
    }

    #[test]
    fn store_batches_are_larger() {
        batches_of_at_most(SinkTarget::Store, MAX_STORE_BATCH);
    }

    #[test]
    fn remover_deletes_queued_files_itself_when_its_thread_is_gone() {
        let t = tempfile::tempdir().unwrap();
        let file = |n: &str| {
            let p = t.path().join(n);
            fs::write(&p, b"x").unwrap();
            p
        };
        // The thread took the batch but never acknowledged it.
        let (queue, work) = mpsc::channel();
        let (ack, done) = mpsc::channel::<()>();
        drop(ack);
        let mut r = Remover {
            queue: Some(queue),
            done,
            queued: Default::default(),
            thread: None,
        };
        let (a, b) = (file("a.json"), file("b.json"));
        r.push(vec![a.clone(), b.clone()]);
        assert!(a.exists() && b.exists(), "queued, not yet deleted");
        r.settle();
        assert!(!a.exists() && !b.exists(), "settle finished the deletions");
        // A thread gone before the batch was sent: deleted right away.
        drop(work);
        let c = file("c.json");
        r.push(vec![c.clone()]);
        assert!(!c.exists());
    }

    #[test]
    fn reading_ahead_keeps_the_order_and_stops_when_told() {
        let t = tempfile::tempdir().unwrap();
        let n = READ_AHEAD * 2 + 10;
        let files: Vec<PathBuf> = (0..n)
            .map(|i| {
                let p = t.path().join(format!("{i:05}.json"));
                let e = entry(&format!("{i:032x}"), SinkTarget::Store, 1);
                if i == 7 {
                    fs::write(&p, b"{ not json").unwrap();
                } else {
                    fs::write(&p, serde_json::to_vec(&e).unwrap()).unwrap();
                }
                p
            })
            .collect();
        for ahead in [false, true] {
            let mut seen = Vec::new();
            for_each_loaded(&files, ahead, |path, loaded| {
                match loaded {
                    Ok(e) => assert_eq!(e.record.key, format!("{:032x}", seen.len())),
                    Err(SpoolError::Corrupt { .. }) => assert_eq!(seen.len(), 7),
                    Err(e) => panic!("{e}"),
                }
                seen.push(path);
                ControlFlow::Continue(())
            });
            assert_eq!(seen, files, "every file, in order (ahead: {ahead})");
            // Stopping early returns even though the reader is blocked on a
            // full queue with hundreds of files still to go.
            let mut taken = 0;
            for_each_loaded(&files, ahead, |_, _| {
                taken += 1;
                if taken == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            });
            assert_eq!(taken, 3);
        }
    }

    #[test]
    fn remover_thread_deletes_in_order_and_settles() {
        let t = tempfile::tempdir().unwrap();
        let mut r = Remover::start().expect("a thread");
        let mut all = Vec::new();
        for batch in 0..5 {
            let paths: Vec<PathBuf> = (0..20)
                .map(|i| {
                    let p = t.path().join(format!("{batch}-{i}.json"));
                    fs::write(&p, b"x").unwrap();
                    p
                })
                .collect();
            all.extend(paths.iter().cloned());
            r.push(paths);
        }
        r.settle();
        assert!(r.queued.is_empty());
        assert!(all.iter().all(|p| !p.exists()));
        drop(r);
    }

    #[test]
    fn single_flight_lock() {
        let t = tempfile::tempdir().unwrap();
        let a = try_lock(t.path()).unwrap();
        assert!(a.is_some());
        assert!(try_lock(t.path()).unwrap().is_none());
        assert!(drainer_running(t.path()));
        let dl = Instant::now() + Duration::from_millis(60);
        assert!(lock_until(t.path(), dl).unwrap().is_none());
        drop(a);
        assert!(!drainer_running(t.path()));
        assert!(try_lock(t.path()).unwrap().is_some());
    }

    #[test]
    fn attempts_cap_drops_at_the_edge_and_429_is_free() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        spool
            .enqueue(&entry(&"a".repeat(32), SinkTarget::Store, now_ms()))
            .unwrap();
        let fail = |_: &SpoolEntry| ItemOutcome::Retry {
            charge: true,
            reason: "HTTP 500".into(),
        };
        for n in 1..MAX_ATTEMPTS {
            let (r, _) = run_with(&spool, fail, false, opts());
            assert_eq!(r.remaining, 1, "attempt {n} keeps the entry");
            let p = &spool.pending().unwrap()[0];
            assert_eq!(Spool::load(p).unwrap().attempts, n);
        }
        // A free retry (429) does not move the count.
        let free = |_: &SpoolEntry| ItemOutcome::Retry {
            charge: false,
            reason: "HTTP 429".into(),
        };
        let (r, _) = run_with(&spool, free, false, opts());
        assert_eq!(r.remaining, 1);
        assert_eq!(
            Spool::load(&spool.pending().unwrap()[0]).unwrap().attempts,
            MAX_ATTEMPTS - 1
        );
        let (r, _) = run_with(&spool, fail, false, opts());
        assert_eq!(r.remaining, 0);
        assert_eq!(r.dropped.get(DROP_MAX_ATTEMPTS), Some(&1));
        let c = load_counters(t.path(), "store");
        assert_eq!(c.last_error.as_deref(), Some("HTTP 500"));
        identity_holds(&spool, "store");
    }

    #[test]
    fn age_cap_drops_just_past_the_edge() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let now = now_ms();
        // One just past the cap, one comfortably inside it.
        spool
            .enqueue(&entry(
                &"0".repeat(32),
                SinkTarget::Store,
                now - MAX_AGE_MS - 1_000,
            ))
            .unwrap();
        spool
            .enqueue(&entry(
                &"1".repeat(32),
                SinkTarget::Store,
                now - MAX_AGE_MS + 60_000,
            ))
            .unwrap();
        let (r, _) = run_with(
            &spool,
            |_: &SpoolEntry| ItemOutcome::Delivered,
            false,
            opts(),
        );
        assert_eq!(r.dropped.get(DROP_MAX_AGE), Some(&1));
        assert_eq!(r.delivered, 1);
        identity_holds(&spool, "store");
    }

    #[test]
    fn corrupt_entries_are_dropped_and_attributed() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let mut e = entry(&"c".repeat(32), SinkTarget::Store, now_ms());
        spool.enqueue(&e).unwrap();
        // Valid JSON naming its sink, but not an entry.
        let p = spool.pending().unwrap()[0].clone();
        fs::write(&p, br#"{"sink":{"kind":"store"},"v":"nonsense"}"#).unwrap();
        // Garbage with no readable sink.
        fs::write(
            spool.dir().join("0000000000001-1-00000000-zz.json"),
            b"\0\0garbage",
        )
        .unwrap();
        e.record.key = "d".repeat(32);
        spool.enqueue(&e).unwrap();
        let (r, _) = run_with(
            &spool,
            |_: &SpoolEntry| ItemOutcome::Delivered,
            false,
            opts(),
        );
        assert_eq!(r.dropped.get(DROP_CORRUPT), Some(&2));
        assert_eq!(r.delivered, 1);
        assert_eq!(
            load_counters(t.path(), "store").dropped.get(DROP_CORRUPT),
            Some(&1)
        );
        assert_eq!(
            load_counters(t.path(), UNKNOWN_SINK)
                .dropped
                .get(DROP_CORRUPT),
            Some(&1)
        );
        identity_holds(&spool, "store");
    }

    #[test]
    fn unreachable_sink_is_skipped_for_the_pass_without_charge() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let http = SinkTarget::Http {
            url: "http://127.0.0.1:9".into(),
        };
        for i in 0..(MAX_BATCH + 5) {
            spool
                .enqueue(&entry(&format!("{i:032x}"), http.clone(), now_ms()))
                .unwrap();
        }
        let down = |_: &SpoolEntry| ItemOutcome::Retry {
            charge: true,
            reason: "connection refused".into(),
        };
        let (r, batches) = run_with(&spool, down, true, opts());
        assert_eq!(batches, vec![MAX_BATCH], "one attempt, then skipped");
        assert_eq!(r.charged, 0);
        assert_eq!(r.remaining, MAX_BATCH + 5);
        let c = load_counters(t.path(), &http.id());
        assert_eq!(c.failed_passes, 1);
        assert!(c.retry_after_ms > now_ms());
        // Honouring backoff, the next background pass does not even try.
        let mut o = opts();
        o.honour_backoff = true;
        let (_, batches) = run_with(&spool, |_: &SpoolEntry| ItemOutcome::Delivered, false, o);
        assert!(batches.is_empty());
        // A foreground drain tries at once, and success resets the backoff.
        let (r, _) = run_with(
            &spool,
            |_: &SpoolEntry| ItemOutcome::Delivered,
            false,
            opts(),
        );
        assert_eq!(r.remaining, 0);
        assert_eq!(load_counters(t.path(), &http.id()).failed_passes, 0);
        identity_holds(&spool, &http.id());
    }

    #[test]
    fn only_delivers_the_named_sink_and_drops_by_reason() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let http = SinkTarget::Http {
            url: "http://127.0.0.1:9".into(),
        };
        spool
            .enqueue(&entry(&"1".repeat(32), http.clone(), now_ms()))
            .unwrap();
        spool
            .enqueue(&entry(&"2".repeat(32), SinkTarget::Store, now_ms()))
            .unwrap();
        let mut o = opts();
        o.only = Some(http.clone());
        let forbid = |_: &SpoolEntry| ItemOutcome::Drop {
            reason: "forbidden".into(),
        };
        let (r, _) = run_with(&spool, forbid, false, o);
        assert_eq!(r.dropped.get("forbidden"), Some(&1));
        assert_eq!(r.remaining, 1);
        identity_holds(&spool, &http.id());
        identity_holds(&spool, "store");
    }

    #[test]
    fn inflight_names_are_finished_without_recounting() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        spool
            .enqueue(&entry(&"f".repeat(32), SinkTarget::Store, now_ms()))
            .unwrap();
        let p = spool.pending().unwrap()[0].clone();
        // A drainer counted it and died before deleting it.
        let c = SinkCounters {
            sink: Some(SinkTarget::Store),
            delivered: 1,
            inflight: vec![p.file_name().unwrap().to_str().unwrap().to_string()],
            ..Default::default()
        };
        save_counters(t.path(), "store", &c).unwrap();
        let (r, batches) = run_with(
            &spool,
            |_: &SpoolEntry| ItemOutcome::Delivered,
            false,
            opts(),
        );
        assert!(batches.is_empty());
        assert_eq!(r.delivered, 0);
        let c = load_counters(t.path(), "store");
        assert_eq!((c.delivered, c.inflight.len()), (1, 0));
        identity_holds(&spool, "store");
    }

    /// A FIFO would block `open()` forever; a directory cannot be deleted,
    /// so counting it as dropped would repeat every pass until the
    /// deadline. Both are skipped (reported, never counted as records) and
    /// the drain ends as soon as the real entries are delivered.
    #[test]
    fn fifos_and_directories_in_the_spool_are_skipped_without_blocking() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        spool
            .enqueue(&entry(&"a".repeat(32), SinkTarget::Store, now_ms()))
            .unwrap();
        crate::spool::tests::mkfifo(&spool.dir().join("y.json"));
        fs::create_dir(spool.dir().join("x.json")).unwrap();
        let started = Instant::now();
        let (r, _) = run_with(
            &spool,
            |_: &SpoolEntry| ItemOutcome::Delivered,
            false,
            opts(),
        );
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!((r.delivered, r.dropped_total()), (1, 0));
        assert_eq!((r.remaining, r.not_regular), (0, 2));
        assert!(r.summary().contains("2 skipped"), "{}", r.summary());
        assert!(!has_pending(t.path()), "no drainer is started for them");
        identity_holds(&spool, "store");
    }

    /// Entries the hook could not have written are dropped as `invalid`,
    /// counted under no sink (the one they name did not enqueue them),
    /// never delivered.
    #[test]
    fn invalid_entries_are_dropped_never_delivered() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let good = entry(&"a".repeat(32), SinkTarget::Store, now_ms());
        spool.enqueue(&good).unwrap();
        let mut bad = good.clone();
        bad.record.key = "b".repeat(32);
        bad.record.scope.workspace = "../../etc".into();
        spool.enqueue(&bad).unwrap();
        bad.record.key = "../../x".into();
        bad.record.scope.workspace = "w".into();
        spool.enqueue(&bad).unwrap();
        bad.record.key = "c".repeat(32);
        bad.v = 7;
        spool.enqueue(&bad).unwrap();
        let seen = Rc::new(RefCell::new(Vec::new()));
        let s2 = seen.clone();
        let (r, _) = run_with(
            &spool,
            move |e: &SpoolEntry| {
                s2.borrow_mut().push(e.record.key.clone());
                ItemOutcome::Delivered
            },
            false,
            opts(),
        );
        assert_eq!(*seen.borrow(), vec!["a".repeat(32)]);
        assert_eq!(r.dropped.get(DROP_INVALID), Some(&3));
        assert_eq!(r.remaining, 0);
        let unknown = load_counters(t.path(), UNKNOWN_SINK);
        assert_eq!(unknown.dropped.get(DROP_INVALID), Some(&3));
    }

    #[test]
    fn counters_are_never_read_or_written_through_a_symlink() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let outside = t.path().join("outside.json");
        fs::write(&outside, br#"{"delivered": 41}"#).unwrap();
        std::os::unix::fs::symlink(&outside, counters_path(t.path(), "store")).unwrap();
        assert_eq!(load_counters(t.path(), "store").delivered, 0);
        spool
            .enqueue(&entry(&"a".repeat(32), SinkTarget::Store, now_ms()))
            .unwrap();
        run_with(
            &spool,
            |_: &SpoolEntry| ItemOutcome::Delivered,
            false,
            opts(),
        );
        assert_eq!(fs::read(&outside).unwrap(), br#"{"delivered": 41}"#);
        assert_eq!(load_counters(t.path(), "store").delivered, 1);
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        assert_eq!(backoff_ms(1), BACKOFF_BASE_MS);
        assert_eq!(backoff_ms(2), 2 * BACKOFF_BASE_MS);
        assert_eq!(backoff_ms(5), 16 * BACKOFF_BASE_MS);
        // 5 s << 7 = 640 s is the last step under the 900 s cap.
        assert_eq!(backoff_ms(8), 128 * BACKOFF_BASE_MS);
        assert_eq!(backoff_ms(9), BACKOFF_MAX_MS);
        assert_eq!(backoff_ms(u32::MAX), BACKOFF_MAX_MS);
        assert_eq!(backoff_ms(0), BACKOFF_BASE_MS);
    }

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

    #[test]
    fn many_drops_are_committed_in_bulk_and_counted() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let old = now_ms() - MAX_AGE_MS - 1;
        for i in 0..(MAX_BATCH + 3) {
            spool
                .enqueue(&entry(&format!("{i:032x}"), SinkTarget::Store, old))
                .unwrap();
        }
        let (r, batches) = run_with(
            &spool,
            |_: &SpoolEntry| ItemOutcome::Delivered,
            false,
            opts(),
        );
        assert!(batches.is_empty());
        assert_eq!(r.dropped.get(DROP_MAX_AGE), Some(&(MAX_BATCH as u64 + 3)));
        assert_eq!(r.remaining, 0);
        identity_holds(&spool, "store");
    }

    #[test]
    fn log_rotates_past_the_cap() {
        let t = tempfile::tempdir().unwrap();
        let log = t.path().join(LOG_FILE);
        drop(open_log(t.path()).unwrap());
        fs::write(&log, vec![b'x'; MAX_LOG_BYTES as usize]).unwrap();
        drop(open_log(t.path()).unwrap());
        assert!(log.exists() && !t.path().join("logs/drain.log.old").exists());
        fs::write(&log, vec![b'x'; MAX_LOG_BYTES as usize + 1]).unwrap();
        drop(open_log(t.path()).unwrap());
        assert_eq!(fs::metadata(&log).unwrap().len(), 0);
        assert!(t.path().join("logs/drain.log.old").exists());
    }
}
