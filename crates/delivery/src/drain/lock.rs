//! The drain's locks: `drain.lock` (single-flight delivery), `drain.run.lock`
//! (the background drainer on duty) and `drain.wait.lock` (a drainer
//! sleeping through a backoff). fs2 exclusive locks, released by the kernel
//! when the holder dies.

use std::fs::{self, File};
use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

/// The drain lock, in the data dir.
pub const LOCK_FILE: &str = "drain.lock";
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
/// How often a waiting drainer polls the lock.
pub const LOCK_POLL: Duration = Duration::from_millis(20);

/// The drain lock, held while the value lives.
#[derive(Debug)]
pub struct DrainLock {
    pub _file: File,
}

pub fn open_named_lock(data_dir: &Path, name: &str) -> io::Result<File> {
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
pub fn try_named_lock(data_dir: &Path, name: &str) -> io::Result<Option<DrainLock>> {
    use fs2::FileExt;
    let f = open_named_lock(data_dir, name)?;
    match f.try_lock_exclusive() {
        Ok(()) => Ok(Some(DrainLock { _file: f })),
        Err(e) if is_contended(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

pub fn is_contended(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::WouldBlock
        || e.raw_os_error() == fs2::lock_contended_error().raw_os_error()
}

/// Take the drain lock, polling until `deadline`. `Ok(None)` on timeout.
pub fn lock_until(data_dir: &Path, deadline: Instant) -> io::Result<Option<DrainLock>> {
    named_lock_until(data_dir, LOCK_FILE, deadline)
}

pub fn named_lock_until(
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
