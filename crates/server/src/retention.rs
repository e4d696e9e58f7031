//! Retention on a server's store (docs/retention.md): records sent to
//! `memhook serve` arrive over HTTP, not through a drainer, so the server
//! applies the data dir's policy itself, off the request path: a thread
//! that every [`RETENTION_EVERY`] runs up to [`RETENTION_SLICES`] slices
//! (stopping sooner when a slice removes nothing), on PostgreSQL
//! (`memhook_store_pg::retention`) or on the embedded store (its own
//! connection; slices are short immediate transactions beside the writer's).
//! A policy or store that cannot be read is logged once per different
//! message, and retention waits until it can.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use memhook_core::timefmt::now_ms;
use memhook_store::retention::Retention;
use memhook_store::sqlite::Store;
use memhook_store_pg::PgStore;

/// Time between two rounds of retention.
pub const RETENTION_EVERY: Duration = Duration::from_secs(60);
/// Most slices in one round (as the drainer's `MAINTAIN_SLICES`).
pub const RETENTION_SLICES: usize = 8;
/// How often the thread looks whether the server is stopping.
const POLL: Duration = Duration::from_millis(100);
/// Test-only, honoured by debug builds alone: milliseconds between rounds
/// instead of [`RETENTION_EVERY`].
pub const TEST_EVERY_ENV: &str = "MEMHOOK_TEST_RETENTION_EVERY_MS";

/// The store retention applies to.
pub enum Target {
    Pg(Arc<PgStore>),
    /// The embedded store of this data dir.
    Sqlite,
}

fn every() -> Duration {
    if cfg!(debug_assertions) {
        if let Some(ms) = std::env::var(TEST_EVERY_ENV)
            .ok()
            .and_then(|v| v.parse::<u64>().ok())
        {
            return Duration::from_millis(ms);
        }
    }
    RETENTION_EVERY
}

/// Start the thread; it ends when `done` is set.
pub fn start(target: Target, data_dir: PathBuf, done: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let every = every();
        let mut last_problem = String::new();
        let mut next = Instant::now() + every;
        let mut sqlite: Option<Store> = None;
        while !done.load(Ordering::SeqCst) {
            if Instant::now() < next {
                std::thread::sleep(POLL.min(next - Instant::now()));
                continue;
            }
            next = Instant::now() + every;
            let problem = match round(&target, &data_dir, &mut sqlite, &done) {
                Ok(()) => String::new(),
                Err(p) => p,
            };
            if !problem.is_empty() && problem != last_problem {
                crate::log::say!("memhook serve: retention: {problem}");
            }
            last_problem = problem;
        }
    })
}

/// One round: the policy as the file says now, then slices.
fn round(
    target: &Target,
    data_dir: &std::path::Path,
    sqlite: &mut Option<Store>,
    done: &AtomicBool,
) -> Result<(), String> {
    let policy = Retention::load(data_dir).map_err(|e| e.to_string())?;
    for _ in 0..RETENTION_SLICES {
        if done.load(Ordering::SeqCst) {
            break;
        }
        let removed = match target {
            Target::Pg(pg) => pg
                .retention_slice(&policy, now_ms())
                .map_err(|e| e.to_string())?,
            Target::Sqlite => {
                if sqlite.is_none() {
                    *sqlite = Some(Store::open(data_dir).map_err(|e| e.to_string())?);
                }
                let store = sqlite.as_mut().expect("opened above");
                match store.retention_slice(&policy, now_ms()) {
                    Ok(r) => r,
                    Err(e) => {
                        // Reopened next round.
                        *sqlite = None;
                        return Err(e.to_string());
                    }
                }
            }
        };
        if removed.iter().sum::<u64>() == 0 {
            break;
        }
    }
    Ok(())
}
