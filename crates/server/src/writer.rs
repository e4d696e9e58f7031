//! The one thread that writes to the store: connection threads hand it
//! their records and wait; it commits whatever is waiting together (group
//! commit), so concurrent clients never race for SQLite's write lock and
//! many small requests share one transaction and one fsync.
//!
//! A write that fails (disk full, the database locked by another process for
//! longer than the store's busy timeout, a store that cannot be opened) is
//! answered [`Unavailable`]: the server turns it into `503`, which drainers
//! retry without charging an attempt.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use memhook_core::record::Record;
use memhook_store::model::Database;

/// Most records committed in one transaction.
pub const MAX_GROUP_RECORDS: usize = 4096;
/// How often an idle writer looks at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// The store could not take the records; the text says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

/// One request's records and where to send their fate: for each record,
/// whether it was new.
struct Job {
    records: Vec<Record>,
    /// The named token that delivered them (`None`: no token, `--no-auth`).
    token_name: Option<String>,
    reply: mpsc::SyncSender<Result<Vec<bool>, Unavailable>>,
}

/// A handle on the writer thread (cheap to share between connections).
#[derive(Clone)]
pub struct Writer {
    tx: mpsc::Sender<Job>,
}

impl Writer {
    /// Start the writer on `db` (whose SQLite write connection is reopened
    /// after a failure). It runs until every handle is dropped, or until
    /// `done` is set and nothing is waiting.
    pub fn start(
        db: Arc<dyn Database>,
        done: Arc<AtomicBool>,
    ) -> std::io::Result<(Writer, JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("serve-writer".into())
            .spawn(move || run(&*db, &rx, &done))?;
        Ok((Writer { tx }, handle))
    }

    /// Store `records`, committed before this returns; for each, whether it
    /// was new (a replay of a stored key is not).
    /// `token_name` is stored with each new record (which token delivered it).
    pub fn insert(
        &self,
        records: Vec<Record>,
        token_name: Option<String>,
    ) -> Result<Vec<bool>, Unavailable> {
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = mpsc::sync_channel(1);
        self.tx
            .send(Job {
                records,
                token_name,
                reply,
            })
            .map_err(|_| Unavailable("the server is stopping".into()))?;
        answer
            .recv()
            .unwrap_or_else(|_| Err(Unavailable("the server is stopping".into())))
    }
}

fn run(db: &dyn Database, rx: &mpsc::Receiver<Job>, done: &AtomicBool) {
    loop {
        let first = match rx.recv_timeout(POLL) {
            Ok(job) => job,
            Err(RecvTimeoutError::Timeout) if done.load(Ordering::SeqCst) => return,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        let mut n = first.records.len();
        let mut jobs = vec![first];
        while n < MAX_GROUP_RECORDS {
            match rx.try_recv() {
                Ok(job) => {
                    n += job.records.len();
                    jobs.push(job);
                }
                Err(_) => break,
            }
        }
        match commit(db, &jobs) {
            Ok(mut fates) => {
                for job in jobs {
                    let rest = fates.split_off(job.records.len());
                    let _ = job.reply.send(Ok(fates));
                    fates = rest;
                }
            }
            // One bad request must not fail the others that shared its
            // transaction: commit each alone.
            Err(_) if jobs.len() > 1 => {
                for job in jobs {
                    let fate = commit(db, std::slice::from_ref(&job));
                    let _ = job.reply.send(fate);
                }
            }
            Err(e) => {
                for job in jobs {
                    let _ = job.reply.send(Err(e.clone()));
                }
            }
        }
    }
}

/// Commit every record of `jobs` in one transaction.
fn commit(db: &dyn Database, jobs: &[Job]) -> Result<Vec<bool>, Unavailable> {
    let records: Vec<(&Record, Option<&str>)> = jobs
        .iter()
        .flat_map(|j| j.records.iter().map(|r| (r, j.token_name.as_deref())))
        .collect();
    db.insert_each(&records).map_err(|e| unavailable(&e))
}

fn unavailable(e: &memhook_store::sqlite::StoreError) -> Unavailable {
    crate::log::say!("memhook serve: store error: {e}");
    Unavailable(format!("the store is unavailable: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use memhook_core::record::sample;
    use memhook_store::sqlite::database::SqliteDatabase;
    use memhook_store::sqlite::Store;

    #[test]
    fn concurrent_inserts_are_committed_and_replays_reported() {
        let t = tempfile::tempdir().unwrap();
        let done = Arc::new(AtomicBool::new(false));
        let db: Arc<dyn Database> = Arc::new(SqliteDatabase::open(t.path()).unwrap());
        let (w, handle) = Writer::start(db, Arc::clone(&done)).unwrap();
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let w = w.clone();
                std::thread::spawn(move || {
                    (0..50)
                        .map(|j| {
                            let r = sample::record(&format!("{:032x}", i * 1000 + j));
                            w.insert(vec![r.clone(), r], None).unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for t in threads {
            for fates in t.join().unwrap() {
                // The same key twice in one request: new, then a replay.
                assert_eq!(fates, vec![true, false]);
            }
        }
        assert_eq!(Store::open(t.path()).unwrap().count().unwrap(), 400);
        done.store(true, Ordering::SeqCst);
        drop(w);
        handle.join().unwrap();
    }

    #[test]
    fn a_store_that_cannot_open_is_unavailable() {
        let t = tempfile::tempdir().unwrap();
        // A file where the data dir should be: the store cannot open.
        let dir = t.path().join("data");
        std::fs::write(&dir, "a file, not a directory").unwrap();
        let (reply, _answer) = mpsc::sync_channel(1);
        let job = Job {
            records: vec![sample::record(&format!("{:032x}", 1))],
            token_name: None,
            reply,
        };
        let e = commit(&SqliteDatabase::lazy(&dir), &[job]).unwrap_err();
        assert!(e.0.contains("unavailable"), "{e:?}");
    }
}
