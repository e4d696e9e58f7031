//! The three-thread pipeline of a large drain: a thread reads spool entries
//! ahead of delivery, the drainer delivers, and a thread deletes committed
//! files behind it.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::{mpsc, Arc};

use crate::spool::{Spool, SpoolEntry, SpoolError};

/// Deletes spool files on its own thread. Deleting a spool file is the
/// dearest step of a drain (the file system frees its blocks; on a mount
/// with online `discard` it also waits for the device), so it runs while the
/// drainer reads and delivers the next batch. [`Remover::settle`] waits until
/// every queued file is gone: the drainer settles before it writes counters
/// (their `inflight` list must never drop a name whose file still exists)
/// and before it lists the spool (so it never reads a file it already
/// counted).
pub struct Remover {
    queue: Option<mpsc::Sender<Arc<[PathBuf]>>>,
    done: mpsc::Receiver<()>,
    /// Batches sent and not yet acknowledged, oldest first (kept so that
    /// they are deleted here should the thread be gone).
    queued: std::collections::VecDeque<Arc<[PathBuf]>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Remover {
    /// `None` when no thread can be started (the caller deletes inline).
    pub fn start() -> Option<Remover> {
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
    pub fn push(&mut self, paths: Vec<PathBuf>) {
        let paths: Arc<[PathBuf]> = paths.into();
        match &self.queue {
            Some(q) if q.send(Arc::clone(&paths)).is_ok() => self.queued.push_back(paths),
            _ => remove_all(&paths),
        }
    }

    /// Wait until every queued file is deleted.
    pub fn settle(&mut self) {
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
pub const READ_CHUNK: usize = 32;

/// Read `files` in order through [`Spool::load`] and hand each to `f` until it
/// breaks. With `ahead`, a second thread reads up to [`READ_AHEAD`] entries
/// ahead of `f`, so reading and parsing the spool overlaps delivering it;
/// without (or when no thread can be started), each file is read when `f`
/// is ready for it.
pub fn for_each_loaded(
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
pub type Loaded = (usize, Result<SpoolEntry, SpoolError>);

/// Delete spool files; a failure is logged (never a panic, even when the
/// log cannot be written) and the file is delivered again later.
pub fn remove_all(paths: &[PathBuf]) {
    for path in paths {
        if let Err(e) = crate::spool::remove_file(path) {
            log!("memhook: drain: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drain::tests::entry;
    use crate::spool::SinkTarget;
    use std::fs;

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
}
