//! Starting the detached background drainer, and the run lock it inherits.

use std::fs;
#[cfg(unix)]
use std::fs::File;
use std::io;
use std::path::Path;

use super::lock::try_named_lock;
use super::log::{open, DRAIN_LOG};
use super::{load_counters, DrainLock, RUN_LOCK_FILE, WAIT_LOCK_FILE};
use crate::spool::SinkTarget;
use memhook_core::timefmt::now_ms;

/// When truthy, hooks deliver nothing themselves: no background drainer is
/// started and session start does not deliver first; `memhook drain` (run by
/// hand, cron, CI) is then the only delivery. For sandboxes that forbid
/// detached processes, and for tests that inspect the spool.
pub const NO_HOOK_DELIVERY_ENV: &str = "MEMHOOK_NO_HOOK_DELIVERY";

/// Whether [`NO_HOOK_DELIVERY_ENV`] is set to a truthy value.
pub fn hook_delivery_disabled() -> bool {
    std::env::var(NO_HOOK_DELIVERY_ENV).is_ok_and(|v| memhook_core::scope::is_truthy(&v))
}

/// Environment variable through which a spawned drainer learns which of its
/// file descriptors is the run lock its parent took for it.
pub const LOCK_FD_ENV: &str = "MEMHOOK_DRAIN_LOCK_FD";
/// The descriptor number the lock is handed over on.
pub const INHERITED_LOCK_FD: i32 = 3;

/// Start a detached background drainer for `data_dir`, unless the spool is
/// empty, a drainer is on duty ([`RUN_LOCK_FILE`]: it looks at the spool
/// again before it exits), or a drainer sleeps through a backoff
/// ([`WAIT_LOCK_FILE`]) and `sink` — the destination of what the caller
/// enqueued, `None` when unknown — is the one backing off (the sleeper
/// retries it). A holder of the drain lock that is not a drainer does not
/// count: the new drainer waits for it ([`HOLDER_WAIT`](super::HOLDER_WAIT)).
/// Cheap: a directory look-up and one non-blocking lock attempt; a counters
/// read and one more lock attempt only when no drainer is on duty.
/// The run lock is taken here and handed to the child on fd 3, so no two
/// drainers are ever on duty (no stampede of drainers under load). The
/// child runs `<current_exe> --data-dir <dir> drain --background` in a new
/// session with stdin/stdout on /dev/null and stderr appended to
/// `<data>/logs/drain.log`; it inherits the environment (so a token travels
/// in `AI_MEMORY_AUTH_TOKEN`, never in argv). Returns whether a child was
/// started; with [`NO_HOOK_DELIVERY_ENV`] set, never starts one.
pub fn spawn_detached(data_dir: &Path, sink: Option<&SinkTarget>) -> io::Result<bool> {
    if hook_delivery_disabled() || !has_pending(data_dir) {
        return Ok(false);
    }
    spawn_unless_on_duty(data_dir, sink)
}

/// [`spawn_detached`] right after enqueueing a record for `sink`: the spool
/// is known to hold one, so it is not looked at. While a drainer is on duty
/// (or lingers, see [`DRAIN_LINGER`](super::DRAIN_LINGER)) this costs one
/// open and one lock attempt.
pub fn spawn_after_enqueue(data_dir: &Path, sink: &SinkTarget) -> io::Result<bool> {
    if hook_delivery_disabled() {
        return Ok(false);
    }
    spawn_unless_on_duty(data_dir, Some(sink))
}

fn spawn_unless_on_duty(data_dir: &Path, sink: Option<&SinkTarget>) -> io::Result<bool> {
    let Some(run) = try_named_lock(data_dir, RUN_LOCK_FILE)? else {
        return Ok(false);
    };
    let backing_off =
        sink.is_none_or(|s| load_counters(data_dir, &s.id()).retry_after_ms > now_ms());
    if backing_off && try_named_lock(data_dir, WAIT_LOCK_FILE)?.is_none() {
        return Ok(false);
    }
    let log = open(data_dir, &DRAIN_LOG)?;
    let mut cmd = std::process::Command::new(drainer_program()?);
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
    // Windows: a handle cannot be handed over on a number, so the run lock
    // is released before the start and the child takes it itself (the
    // drain lock still keeps a second drainer from delivering). The child
    // gets no console window and no console of ours (`CREATE_NO_WINDOW`,
    // `DETACHED_PROCESS`), is not in our Ctrl-C group, and leaves the
    // agent's job object when the job allows it (Node's does: an agent
    // that exits would otherwise take the drainer with it).
    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt;
        drop(run);
        cmd.creation_flags(DETACHED_FLAGS | CREATE_BREAKAWAY_FROM_JOB);
        match cmd.spawn() {
            Ok(_) => Ok(true),
            Err(_) => cmd.creation_flags(DETACHED_FLAGS).spawn().map(|_| true),
        }
    }
    // Not waited for: the child outlives us and is reparented to init. Our
    // copy of the lock closes here; the child's copy keeps the lock held.
    #[cfg(not(windows))]
    {
        let res = cmd.spawn().map(|_| true);
        drop(run);
        res
    }
}

/// `CREATE_NO_WINDOW | DETACHED_PROCESS | CREATE_NEW_PROCESS_GROUP`
/// (winbase.h): the drainer a hook starts on Windows.
#[cfg(windows)]
pub const DETACHED_FLAGS: u32 = 0x0800_0000 | 0x0000_0008 | 0x0000_0200;
/// `CREATE_BREAKAWAY_FROM_JOB` (winbase.h).
#[cfg(windows)]
const CREATE_BREAKAWAY_FROM_JOB: u32 = 0x0100_0000;

/// Whether the spool holds at least one entry (stops at the first one).
pub fn has_pending(data_dir: &Path) -> bool {
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
pub fn inherited_run_lock(data_dir: &Path) -> Option<DrainLock> {
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
/// The binary that delivers: the sinks (SQLite, TLS) are not in the
/// per-event `memhook`, so a hook starts the drainer from
/// `memhook-session` beside it, or from `memhook-cli` where an older
/// install has no `memhook-session` (docs/architecture.md, "Four
/// binaries"). Any other binary (those two, a test) runs its own drain.
pub fn drainer_program() -> io::Result<std::path::PathBuf> {
    let exe = std::env::current_exe()?;
    let lean = exe.file_name().is_some_and(|n| n == LEAN_BINARY);
    if lean {
        for name in [SESSION_BINARY, FULL_BINARY] {
            let sibling = exe.with_file_name(name);
            if sibling.is_file() {
                return Ok(sibling);
            }
        }
    }
    Ok(exe)
}

/// The file name of the per-event binary agents run and users type.
pub const LEAN_BINARY: &str = if cfg!(windows) {
    "memhook.exe"
} else {
    "memhook"
};

/// The file name of the binary that runs session start and the drainer:
/// the per-event crates, the store and the sinks.
pub const SESSION_BINARY: &str = if cfg!(windows) {
    "memhook-session.exe"
} else {
    "memhook-session"
};

/// The file name of the binary that composes a briefing for the
/// per-event `memhook` when none kept ready holds: the store only.
pub const BRIEF_BINARY: &str = if cfg!(windows) {
    "memhook-brief.exe"
} else {
    "memhook-brief"
};

/// The file name of the binary that holds every command and the sinks.
pub const FULL_BINARY: &str = if cfg!(windows) {
    "memhook-cli.exe"
} else {
    "memhook-cli"
};
