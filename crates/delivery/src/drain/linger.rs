//! The background drainer's linger: once the spool is empty it stays on
//! duty for up to [`DRAIN_LINGER`], woken at once by the next entry renamed
//! into the spool (inotify on Linux, a poll every [`LINGER_POLL`]
//! elsewhere), so a burst of events is delivered by one process instead of
//! one process per event. Then it exits: nothing runs at rest.
//!
//! A drainer sleeping through a backoff watches the spool the same way, to
//! flush what arrives meanwhile ([`sleep_committing`]).

use std::path::Path;
use std::time::{Duration, Instant};

use super::spawn::has_pending;
use crate::spool::Spool;
use memhook_core::timefmt::now_ms;

/// How long an idle background drainer waits for the next record before it
/// exits. Hooks start no drainer while it waits (it keeps the run lock).
/// Short enough that no memhook process is left a few seconds after an
/// agent's last event.
pub const DRAIN_LINGER: Duration = Duration::from_secs(2);
/// How long a lingering drainer woken by a record waits before it delivers,
/// so that the records an agent sends right after it (a tool's
/// `PostToolUse` after its `PreToolUse`) share one store transaction and
/// one counters write instead of paying for one each.
pub const LINGER_GATHER: Duration = Duration::from_millis(25);
/// Without inotify: how often a lingering drainer looks at the spool.
pub const LINGER_POLL: Duration = Duration::from_millis(25);
/// Without inotify: how often a drainer sleeping through a backoff looks
/// for new entries to flush.
pub const COMMIT_POLL: Duration = Duration::from_millis(500);

/// New entries arriving in a spool directory.
pub struct Arrivals {
    #[cfg(target_os = "linux")]
    fd: Option<std::os::fd::OwnedFd>,
}

impl Arrivals {
    /// Watch `spool_dir` for entries renamed into it. Set up before the
    /// spool is looked at, so no arrival falls between the look and the
    /// wait. Without inotify (or where it fails) [`Arrivals::wait`] polls.
    pub fn watch(spool_dir: &Path) -> Arrivals {
        #[cfg(target_os = "linux")]
        {
            Arrivals {
                fd: inotify_moved_to(spool_dir),
            }
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = spool_dir;
            Arrivals {}
        }
    }

    /// Wait until the spool of `data_dir` holds an entry (`true`) or
    /// `until` passes (`false`).
    pub fn wait(&mut self, data_dir: &Path, until: Instant) -> bool {
        loop {
            if has_pending(data_dir) {
                return true;
            }
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            #[cfg(target_os = "linux")]
            if let Some(fd) = &self.fd {
                wait_readable_and_clear(fd, left);
                continue;
            }
            std::thread::sleep(LINGER_POLL.min(left));
        }
    }

    /// Wait until an entry may have been renamed into the spool (`true`:
    /// an inotify event, or without inotify every [`COMMIT_POLL`]) or
    /// `until` passes (`false`). Unlike [`Arrivals::wait`], entries already
    /// pending do not end it.
    // Without inotify the loop body runs once (one bounded poll).
    #[cfg_attr(not(target_os = "linux"), allow(clippy::never_loop))]
    pub fn wait_new(&mut self, until: Instant) -> bool {
        loop {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            #[cfg(target_os = "linux")]
            if let Some(fd) = &self.fd {
                if wait_readable_and_clear(fd, left) {
                    return true;
                }
                continue;
            }
            std::thread::sleep(COMMIT_POLL.min(left));
            return !until.saturating_duration_since(Instant::now()).is_zero();
        }
    }
}

/// Sleep until `until` (a backoff), flushing what hooks enqueue meanwhile.
/// A hook whose record is for the destination this drainer waits to retry
/// starts no drainer (this one will deliver it), so without this nothing
/// would flush that record before the retry, minutes away. Each arrival
/// (with [`LINGER_GATHER`] for the rest of its burst) costs one group
/// commit of what is new ([`Spool::commit`]). No lock is needed to flush;
/// the watermark stays in this process (the spool's mark is written under
/// the drain lock only).
pub fn sleep_committing(spool: &Spool, arrivals: &mut Arrivals, until: Instant) {
    let mut durable = spool.read_mark().and_then(|m| m.durable_before_ms);
    while arrivals.wait_new(until) {
        std::thread::sleep(LINGER_GATHER.min(until.saturating_duration_since(Instant::now())));
        let listed_at = now_ms();
        let Ok(files) = spool.pending() else {
            continue;
        };
        match spool.commit(&files, listed_at, durable) {
            Ok(w) => durable = Some(w),
            Err(e) => log!(
                "memhook: drain: cannot flush {}: {e}",
                spool.dir().display()
            ),
        }
    }
}

/// An inotify descriptor watching `dir` for names moved into it.
#[cfg(target_os = "linux")]
fn inotify_moved_to(dir: &Path) -> Option<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: no pointers; a new descriptor or -1.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    if fd < 0 {
        return None;
    }
    // SAFETY: `fd` is a fresh descriptor owned by nothing else.
    let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: a valid descriptor and a NUL-terminated path.
    let wd = unsafe {
        libc::inotify_add_watch(
            fd,
            path.as_ptr(),
            libc::IN_MOVED_TO | libc::IN_DONT_FOLLOW | libc::IN_ONLYDIR,
        )
    };
    (wd >= 0).then_some(owned)
}

/// Wait up to `wait` for events on `fd`, then read them all (they only
/// say "look again"). Returns whether there were any.
#[cfg(target_os = "linux")]
fn wait_readable_and_clear(fd: &std::os::fd::OwnedFd, wait: Duration) -> bool {
    use std::os::fd::AsRawFd;
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd, count 1.
    let ready = unsafe { libc::poll(&mut pfd, 1, ms) } > 0;
    let mut buf = [0u8; 4096];
    // SAFETY: a valid writable buffer; the descriptor is non-blocking.
    while unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
    ready
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 12: no memhook process is left 5 s after an agent's last
    /// event; an idle drainer waits at most the linger, the gather and a
    /// drain of what arrived.
    #[test]
    fn an_idle_drainer_leaves_well_within_five_seconds() {
        let bound = Duration::from_secs(5);
        assert!(DRAIN_LINGER + LINGER_GATHER <= bound / 2);
        assert!(LINGER_GATHER < DRAIN_LINGER && LINGER_POLL < DRAIN_LINGER);
    }

    #[test]
    fn an_entry_renamed_in_ends_the_wait_and_none_lets_it_time_out() {
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let mut arrivals = Arrivals::watch(spool.dir());
        assert!(!arrivals.wait(t.path(), Instant::now() + Duration::from_millis(50)));
        let dir = spool.dir().to_path_buf();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::write(dir.join("tmp").join("x"), b"{}").unwrap();
            std::fs::rename(dir.join("tmp").join("x"), dir.join("1-x.json")).unwrap();
        });
        // Far longer than the writer needs: it returns on the arrival.
        assert!(arrivals.wait(t.path(), Instant::now() + Duration::from_secs(60)));
        writer.join().unwrap();
    }

    /// A drainer sleeping through a backoff flushes what arrives meanwhile,
    /// well before it wakes to retry (no other drainer would: the hook of a
    /// record for the destination backing off starts none).
    #[test]
    fn a_drainer_sleeping_through_a_backoff_flushes_what_arrives() {
        use crate::spool::probe;
        let t = tempfile::tempdir().unwrap();
        let spool = Spool::open(t.path()).unwrap();
        let mut arrivals = Arrivals::watch(spool.dir());
        let s2 = spool.clone();
        let hook = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            s2.enqueue(&crate::spool::tests::sample(&"a".repeat(32)))
                .unwrap()
        });
        let until = Instant::now() + Duration::from_millis(1500);
        sleep_committing(&spool, &mut arrivals, until);
        assert!(Instant::now() >= until, "slept to the end");
        let entry = hook.join().unwrap();
        let syncs: Vec<_> = probe::under(t.path())
            .into_iter()
            .filter(|(w, _)| *w == "sync")
            .map(|(_, p)| p)
            .collect();
        let ledger = spool.counters_dir().join("store.enqueued");
        assert_eq!(syncs, vec![entry, spool.dir().to_path_buf(), ledger]);
    }
}
