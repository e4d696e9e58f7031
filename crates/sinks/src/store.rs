//! The embedded store as a delivery sink: each batch of spool entries goes
//! into the data dir's SQLite database in one transaction.

use std::path::{Path, PathBuf};
use std::time::Instant;

use memhook_delivery::sink::{ItemOutcome, Sink};
use memhook_delivery::spool::SpoolEntry;
use memhook_store::sqlite::Store;

/// The store as a delivery sink: one transaction per batch.
pub struct StoreSink {
    data_dir: PathBuf,
    store: Option<Store>,
    deadline: Option<Instant>,
    /// The scopes (workspace, project) in which a turn or a session ended
    /// among the records delivered since the last `settle`.
    ended: std::collections::BTreeSet<(String, String)>,
}

/// Events after which the next session start of the scope may come: the
/// end of a turn or of a session. Only they make the drainer compose a
/// scope's kept briefing again. A tool call does not: a composition costs
/// about 4.7 ms of CPU at 1,000,000 records (docs/benchmarks.md, "A year
/// of heavy use, sixth pass"), several times the hook call it would follow.
pub const SETTLE_EVENTS: &[&str] = &["stop", "session-end"];

impl StoreSink {
    /// A sink for the store in `data_dir`; the database opens on first use.
    pub fn new(data_dir: &Path) -> StoreSink {
        StoreSink {
            data_dir: data_dir.to_path_buf(),
            store: None,
            deadline: None,
            ended: Default::default(),
        }
    }

    /// Wait for another connection's lock only until `deadline` (see
    /// [`Store::open_until`]); a batch still locked out then is retried later.
    pub fn until(mut self, deadline: Option<Instant>) -> StoreSink {
        self.deadline = deadline;
        self
    }
}

impl Drop for StoreSink {
    fn drop(&mut self) {
        if let Some(store) = &self.store {
            store.checkpoint();
        }
    }
}

impl StoreSink {
    /// Compose again each kept briefing that no longer holds
    /// ([`memhook_core::briefing_cache::stale`]) of a scope in which a
    /// turn or a session ended since the last time ([`SETTLE_EVENTS`]),
    /// each from a snapshot taken after its stamp was read. The others stay
    /// stale until their own scope's turn ends (a session start meanwhile
    /// composes its own).
    fn keep_briefings_ready(&mut self) {
        use memhook_core::briefing_cache;
        let ended = std::mem::take(&mut self.ended);
        let Some(store) = &self.store else {
            return;
        };
        if ended.is_empty() {
            return;
        }
        let stale = briefing_cache::stale(&self.data_dir, store.path());
        for key in stale
            .into_iter()
            .filter(|k| ended.contains(&(k.workspace.clone(), k.project.clone())))
        {
            let Some(stamp) = briefing_cache::stamp(&self.data_dir, store.path(), &key) else {
                return;
            };
            match memhook_store::briefing::compose_kept(store, &key) {
                Ok((text, looked_at)) => {
                    if let Err(e) =
                        briefing_cache::keep(&self.data_dir, &key, stamp, looked_at, text)
                    {
                        eprintln!("memhook: drain: cannot keep a briefing ready: {e}");
                    }
                }
                Err(e) => eprintln!("memhook: drain: cannot compose a briefing to keep: {e}"),
            }
        }
    }
}

impl Sink for StoreSink {
    fn settle(&mut self) {
        self.keep_briefings_ready();
    }

    /// One slice of retention under the data dir's policy
    /// (`memhook_store::sqlite::retention`); a policy or store that cannot
    /// be read is logged to the drain log and retention waits.
    fn maintain(&mut self) -> bool {
        use memhook_store::sqlite::retention::Retention;
        let policy = match Retention::load(&self.data_dir) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("memhook: retention: {e}");
                return false;
            }
        };
        if self.store.is_none() {
            // A data dir whose records all go to a server has no store:
            // retention never makes one.
            if !self
                .data_dir
                .join(memhook_store::sqlite::STORE_FILE)
                .exists()
            {
                return false;
            }
            match Store::open_until(&self.data_dir, self.deadline) {
                Ok(s) => self.store = Some(s),
                Err(e) => {
                    eprintln!("memhook: retention: {e}");
                    return false;
                }
            }
        }
        let store = self.store.as_mut().expect("opened above");
        match store.retention_slice(&policy, memhook_core::timefmt::now_ms()) {
            Ok(removed) => removed.iter().sum::<u64>() > 0,
            Err(e) => {
                eprintln!("memhook: retention: {e}");
                false
            }
        }
    }

    fn deliver(&mut self, entries: &[SpoolEntry]) -> Vec<ItemOutcome> {
        // A store failure (disk full, locked too long, newer schema) is never
        // the records' fault: retry without charging an attempt.
        let retry = |reason: String| {
            entries
                .iter()
                .map(|_| ItemOutcome::Retry {
                    charge: false,
                    reason: reason.clone(),
                })
                .collect()
        };
        if self.store.is_none() {
            match Store::open_until(&self.data_dir, self.deadline) {
                Ok(s) => self.store = Some(s),
                Err(e) => return retry(e.to_string()),
            }
        }
        let store = self.store.as_mut().expect("opened above");
        match store.insert_all(entries.iter().map(|e| &e.record)) {
            Ok(_) => {
                for e in entries {
                    if SETTLE_EVENTS.contains(&e.record.event.as_str()) {
                        let scope = &e.record.scope;
                        self.ended
                            .insert((scope.workspace.clone(), scope.project.clone()));
                    }
                }
                refresh_history(store, entries);
                entries.iter().map(|_| ItemOutcome::Delivered).collect()
            }
            Err(e) => {
                // A broken connection is reopened on the next batch.
                self.store = None;
                retry(e.to_string())
            }
        }
    }
}

/// Write again the file history (memhook_core::history) of each project
/// that a delivered record touched a file in
/// ([`memhook_store::history::rewrite`]); best effort (a project whose
/// history cannot be written simply has none at the next pre-tool call).
fn refresh_history(store: &Store, entries: &[SpoolEntry]) {
    let mut projects: Vec<(&str, &str)> = entries
        .iter()
        .filter(|e| !e.record.files.is_empty())
        .map(|e| {
            (
                e.record.scope.workspace.as_str(),
                e.record.scope.project.as_str(),
            )
        })
        .collect();
    projects.sort_unstable();
    projects.dedup();
    for scope in projects {
        memhook_store::history::rewrite(store, scope);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memhook_store::sqlite::STORE_FILE;

    #[test]
    fn sink_delivers_batches_idempotently() {
        let t = tempfile::tempdir().unwrap();
        let mut sink = StoreSink::new(t.path());
        let entries: Vec<SpoolEntry> = (0..3)
            .map(|i| SpoolEntry {
                v: memhook_delivery::spool::ENTRY_VERSION,
                sink: memhook_delivery::spool::SinkTarget::Store,
                attempts: 0,
                enqueued_ms: 1,
                record: memhook_core::record::sample::record(&format!("k{i}")),
                exclusions: None,
            })
            .collect();
        assert_eq!(sink.deliver(&entries), vec![ItemOutcome::Delivered; 3]);
        assert_eq!(sink.deliver(&entries), vec![ItemOutcome::Delivered; 3]);
        assert_eq!(Store::open(t.path()).unwrap().count().unwrap(), 3);
        // Done: the sink leaves no WAL behind.
        drop(sink);
        let wal = t.path().join(format!("{STORE_FILE}-wal"));
        assert_eq!(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0), 0);
    }

    /// A briefing overtaken by a commit while it was composed (the drainer
    /// delivered the session's own start meanwhile) is kept as its key
    /// alone, stale, and composed again when a turn of its scope ends.
    #[test]
    fn a_briefing_overtaken_while_composed_is_composed_again_at_the_end_of_a_turn() {
        use memhook_core::briefing_cache::{self, Key, Lookup};
        let t = tempfile::tempdir().unwrap();
        let entry = |key: &str, event: &str| SpoolEntry {
            v: memhook_delivery::spool::ENTRY_VERSION,
            sink: memhook_delivery::spool::SinkTarget::Store,
            attempts: 0,
            enqueued_ms: 1,
            record: memhook_core::record::Record {
                event: event.into(),
                ..memhook_core::record::sample::record(&key.repeat(16))
            },
            exclusions: None,
        };
        let lookup = |key: &Key| {
            briefing_cache::lookup(t.path(), &t.path().join(STORE_FILE), key, Some("new"))
        };
        let mut sink = StoreSink::new(t.path());
        assert_eq!(
            sink.deliver(&[entry("k1", "user-prompt")]),
            vec![ItemOutcome::Delivered]
        );
        let key = Key {
            workspace: "default".into(),
            project: "p".into(),
            max_chars: 4000,
            digest: false,
            mcp: false,
        };
        let stamp = briefing_cache::stamp(t.path(), &t.path().join(STORE_FILE), &key).unwrap();
        assert_eq!(
            sink.deliver(&[entry("k2", "session-start")]),
            vec![ItemOutcome::Delivered]
        );
        briefing_cache::keep(t.path(), &key, stamp, vec![], Some("zqxold".into())).unwrap();
        assert_eq!(lookup(&key), Lookup::Miss);
        // A tool call's delivery does not compose it.
        sink.deliver(&[entry("k3", "pre-tool-use")]);
        sink.settle();
        assert_eq!(lookup(&key), Lookup::Miss);
        // The end of a turn does.
        sink.deliver(&[entry("k4", "stop")]);
        sink.settle();
        match lookup(&key) {
            Lookup::Hit(Some(text)) => assert!(!text.contains("zqxold"), "{text}"),
            other => panic!("no briefing kept ready after the end of the turn: {other:?}"),
        }
    }

    #[test]
    fn maintain_applies_the_data_dirs_retention_and_a_bad_policy_removes_nothing() {
        use memhook_store::sqlite::retention::RETENTION_FILE;
        let t = tempfile::tempdir().unwrap();
        // No store yet (records go to a server): none is made.
        assert!(!StoreSink::new(t.path()).maintain());
        assert!(!t.path().join(STORE_FILE).exists());
        let now = memhook_core::timefmt::now_ms();
        {
            let mut s = Store::open(t.path()).unwrap();
            let mut old = memhook_core::record::sample::record(&"a".repeat(32));
            old.event = "pre-tool-use".into();
            old.occurred_ms = now - 40 * 86_400_000;
            let mut new = memhook_core::record::sample::record(&"b".repeat(32));
            new.event = "pre-tool-use".into();
            new.occurred_ms = now;
            s.insert_all([&old, &new]).unwrap();
        }
        std::fs::write(t.path().join(RETENTION_FILE), "tool-calls = soon\n").unwrap();
        let mut sink = StoreSink::new(t.path());
        assert!(!sink.maintain());
        assert_eq!(Store::open(t.path()).unwrap().count().unwrap(), 2);
        // The default policy: tool calls are kept 30 days.
        std::fs::remove_file(t.path().join(RETENTION_FILE)).unwrap();
        assert!(sink.maintain());
        assert!(!sink.maintain(), "nothing more to do");
        let s = Store::open(t.path()).unwrap();
        assert_eq!(s.count().unwrap(), 1);
        assert_eq!(s.retention_removed().unwrap().records, [1, 0, 0]);
    }
}
