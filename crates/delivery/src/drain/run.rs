//! The foreground drain `memhook drain` runs and the detached background
//! drainer. Both deliver through the sinks a [`MakeSink`] makes: the real
//! ones (the embedded store, an ai-memory server) are `memhook-sinks`'s, so
//! that this crate, which the per-event binary links, carries neither SQLite
//! nor TLS.

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Makes the sink a spool entry's target names: (data dir, target, timeout
/// of one delivery call, deadline of the whole drain).
pub type MakeSink = fn(&Path, &SinkTarget, Duration, Option<Instant>) -> Box<dyn Sink>;

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use std::cell::RefCell;
use std::rc::Rc;

use super::linger::{sleep_committing, Arrivals, DRAIN_LINGER, LINGER_GATHER};
use super::lock::{named_lock_until, try_named_lock};
use super::log::DRAIN_LINES;
use super::spawn::inherited_run_lock;
use super::{
    counter_sinks, drain_locked, load_counters, lock_until, spawn_detached, try_lock, Options,
    Report, BACKGROUND_BUDGET, HOLDER_WAIT, HTTP_TIMEOUT, LOCK_FILE, MAINTAIN_SLICES,
    RUN_LOCK_FILE, WAIT_LOCK_FILE, WAIT_LOCK_WAIT,
};
use crate::sink::Sink;
use crate::spool::{SinkTarget, Spool};
use memhook_core::timefmt::now_ms;

/// `memhook drain`: deliver in the foreground for at most `budget_secs`
/// (or, with `detach`, start a background drainer and return), printing
/// what happened. Exit 0 when the spool ends empty, 1 otherwise.
pub fn foreground(
    dir: &Path,
    budget_secs: u64,
    detach: bool,
    make: MakeSink,
) -> Result<ExitCode, Error> {
    let dir = dir.to_path_buf();
    if detach {
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
    let deadline = Instant::now() + Duration::from_secs(budget_secs);
    let mut by_other = 0;
    let lock = match try_lock(&dir).map_err(|e| lock_error(&dir, e))? {
        Some(l) => l,
        None => {
            // Usually the background drainer a hook just started: what it
            // delivers meanwhile is part of this command's answer.
            eprintln!(
                "memhook: a background drainer is already delivering; waiting for it \
                 (at most {} s)",
                budget_secs
            );
            let before = delivered_so_far(&dir);
            let lock = lock_until(&dir, deadline)
                .map_err(|e| lock_error(&dir, e))?
                .ok_or("another drainer held the lock for the whole budget; try again later")?;
            by_other = delivered_so_far(&dir).saturating_sub(before);
            lock
        }
    };
    // The budget is a deadline for every wait inside it, a request in flight
    // included.
    let mut factory = |t: &SinkTarget| make(&dir, t, HTTP_TIMEOUT, Some(deadline));
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
pub(super) fn delivered_so_far(dir: &Path) -> u64 {
    counter_sinks(dir)
        .iter()
        .map(|id| load_counters(dir, id).delivered)
        .sum()
}

pub(super) fn lock_error(dir: &Path, e: io::Error) -> String {
    format!(
        "{}: cannot open the drain lock: {e}",
        dir.join(LOCK_FILE).display()
    )
}

/// A sink shared by every run of one background drainer: the store stays
/// open while the drainer lingers, so a burst costs one database open and
/// one WAL checkpoint (when the drainer exits), not one per record.
struct Shared(Rc<RefCell<Box<dyn Sink>>>);

impl Sink for Shared {
    fn deliver(&mut self, entries: &[crate::spool::SpoolEntry]) -> Vec<crate::sink::ItemOutcome> {
        self.0.borrow_mut().deliver(entries)
    }
    fn unreachable(&self) -> bool {
        self.0.borrow().unreachable()
    }
    fn settle(&mut self) {
        self.0.borrow_mut().settle()
    }
}

/// [`run_background_lingering`] with [`DRAIN_LINGER`].
pub fn run_background(dir: &Path, make: MakeSink) {
    run_background_lingering(dir, DRAIN_LINGER, make)
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
/// another destination gets a drainer of its own. When the spool is empty
/// it stays on duty for up to `linger` ([`DRAIN_LINGER`]) and runs again as
/// soon as a record arrives (`linger.rs`). Reports go to stderr, which is
/// the drain log.
pub fn run_background_lingering(dir: &Path, linger: Duration, make: MakeSink) {
    let deadline = Instant::now() + BACKGROUND_BUDGET;
    DRAIN_LINES.log_into(dir);
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
    let mut arrivals = Arrivals::watch(spool.dir());
    let store: Rc<RefCell<Box<dyn Sink>>> = Rc::new(RefCell::new(make(
        dir,
        &SinkTarget::Store,
        HTTP_TIMEOUT,
        Some(deadline),
    )));
    loop {
        // What this run will look at; anything else found after it is new.
        let seen: HashSet<PathBuf> = spool.pending().unwrap_or_default().into_iter().collect();
        let lock = match lock_until(dir, (Instant::now() + HOLDER_WAIT).min(deadline)) {
            Ok(Some(l)) => l,
            Ok(None) => {
                eprintln!(
                    "memhook: drain {}: another process held the drain lock for {} s; \
                     records stay queued for the next event or `memhook drain`",
                    memhook_core::timefmt::rfc3339_ms(now_ms()),
                    HOLDER_WAIT.as_secs()
                );
                return;
            }
            Err(e) => {
                log!("memhook: drain: {}", lock_error(dir, e));
                return;
            }
        };
        let fresh = |t: &SinkTarget| make(dir, t, HTTP_TIMEOUT, Some(deadline));
        let mut factory = |target: &SinkTarget| -> Box<dyn Sink> {
            match target {
                SinkTarget::Store => Box::new(Shared(store.clone())),
                // An HTTP sink remembers an unreachable endpoint for its
                // life: a fresh one per run.
                SinkTarget::Http { .. } => fresh(target),
            }
        };
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
                memhook_core::timefmt::rfc3339_ms(now_ms()),
                report.summary()
            );
        }
        drop(lock);
        if Instant::now() >= deadline {
            return;
        }
        // Idle: the store's housekeeping (retention), off the hook's path
        // and outside the drain lock, a slice at a time (each its own short
        // transaction), at most MAINTAIN_SLICES, while nothing new arrives.
        if report.remaining == 0 {
            for _ in 0..MAINTAIN_SLICES {
                if !store.borrow_mut().maintain()
                    || Instant::now() >= deadline
                    || !spool.pending().unwrap_or_default().is_empty()
                {
                    break;
                }
            }
        }
        // Idle and still on duty: the next record is ours. The drain lock
        // is free meanwhile (a session start or `memhook drain` never
        // waits for a lingering drainer).
        if report.remaining == 0 && arrivals.wait(dir, (Instant::now() + linger).min(deadline)) {
            // Let the rest of the burst join this record's batch.
            std::thread::sleep(
                LINGER_GATHER.min(deadline.saturating_duration_since(Instant::now())),
            );
            continue;
        }
        // Going off duty: keep the next session's briefings ready (the
        // store's `settle`), while still on duty, so that no other drainer
        // composes them at the same time. Also when records are left (a
        // server that is down keeps its own): a kept briefing is never used
        // while a record of another session waits for the store.
        store.borrow_mut().settle();
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
                sleep_committing(&spool, &mut arrivals, at);
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
                    memhook_core::timefmt::rfc3339_ms(now_ms()),
                    left.len()
                );
                return;
            }
        }
    }
}
