//! The drain loop's tests: batching, caps, corrupt and invalid entries,
//! per-sink failure, in-flight names, bulk drops.

use super::lock::try_named_lock;
#[cfg(unix)]
use super::spawn::has_pending;
use super::*;
use memhook_core::record::Record;
use std::cell::RefCell;
use std::fs;
use std::rc::Rc;

pub fn entry(key: &str, sink: SinkTarget, enqueued_ms: u64) -> SpoolEntry {
    SpoolEntry {
        v: crate::spool::ENTRY_VERSION,
        sink,
        attempts: 0,
        enqueued_ms,
        record: Record {
            occurred_ms: enqueued_ms,
            session_id: Some("s".into()),
            cwd: None,
            ..memhook_core::record::sample::record(key)
        },
        exclusions: None,
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
#[cfg(unix)]
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

#[cfg(unix)]
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
fn a_drain_leaves_the_mark_the_cap_counts_from() {
    let t = tempfile::tempdir().unwrap();
    let spool = Spool::open(t.path()).unwrap();
    for i in 0..3 {
        spool
            .enqueue(&entry(&format!("{i:032x}"), SinkTarget::Store, now_ms()))
            .unwrap();
    }
    // The last one is refused by its sink for now: it stays pending.
    let mut n = 0;
    let (r, _) = run_with(
        &spool,
        move |_| {
            n += 1;
            if n < 3 {
                ItemOutcome::Delivered
            } else {
                ItemOutcome::Retry {
                    charge: false,
                    reason: "later".into(),
                }
            }
        },
        false,
        opts(),
    );
    assert_eq!((r.delivered, r.remaining), (2, 1));
    let mark = spool.read_mark().unwrap();
    assert_eq!(mark.pending, 1);
    assert_eq!(mark.ledgers.get("store"), Some(&3));
}

/// The store's record count, through a fresh connection.
fn stored(dir: &Path) -> usize {
    memhook_store::sqlite::Store::open(dir)
        .map(|s| s.count().unwrap_or(0) as usize)
        .unwrap_or(0)
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < until, "still waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The embedded store as a sink, for the drain's own tests (the real one,
/// with its lock waits and checkpoint, is `memhook-sinks`').
struct TestStore(memhook_store::sqlite::Store);

impl Sink for TestStore {
    fn deliver(&mut self, entries: &[SpoolEntry]) -> Vec<ItemOutcome> {
        self.0
            .insert_all(entries.iter().map(|e| &e.record))
            .unwrap();
        entries.iter().map(|_| ItemOutcome::Delivered).collect()
    }
}

fn test_store(dir: &Path, _: &SinkTarget, _: Duration, _: Option<Instant>) -> Box<dyn Sink> {
    Box::new(TestStore(memhook_store::sqlite::Store::open(dir).unwrap()))
}

#[test]
fn a_lingering_drainer_delivers_a_burst_alone_and_then_leaves() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().to_path_buf();
    let spool = Spool::open(&dir).unwrap();
    let enqueue = |i: u32| {
        spool
            .enqueue(&entry(&format!("{i:032x}"), SinkTarget::Store, now_ms()))
            .unwrap()
    };
    let mut paths = vec![enqueue(1)];
    let d = dir.clone();
    // Long enough that the burst below always falls within it.
    let drainer = std::thread::spawn(move || {
        run_background_lingering(&d, Duration::from_secs(5), test_store)
    });
    wait_for("the first record", || stored(&dir) == 1);
    // The drainer lingers on duty: a hook now starts no other drainer...
    assert!(try_named_lock(&dir, RUN_LOCK_FILE).unwrap().is_none());
    // ...and what arrives meanwhile is delivered by it (nothing else runs
    // here: without the linger the burst would stay pending).
    for i in 2..=4 {
        paths.push(enqueue(i));
    }
    wait_for("the burst", || stored(&dir) == 4);
    // Then it leaves, off duty, with nothing pending.
    drainer.join().unwrap();
    assert!(try_named_lock(&dir, RUN_LOCK_FILE).unwrap().is_some());
    assert!(spool.pending().unwrap().is_empty());
    assert_eq!(load_counters(&dir, "store").delivered, 4);
    // Each run flushed what it picked up before handing it to the store.
    let ev = crate::spool::probe::under(&dir);
    for p in &paths {
        assert!(first(&ev, "sync", p) < first(&ev, "deliver", p), "{ev:#?}");
        assert!(first(&ev, "deliver", p) < first(&ev, "delete", p));
    }
}

/// Where the first `what` (`sync`, `deliver`, `delete`) of `path` is among
/// `events`, as the spool's probe recorded them.
fn first(events: &[(&'static str, PathBuf)], what: &str, path: &Path) -> usize {
    events
        .iter()
        .position(|(w, p)| *w == what && p == path)
        .unwrap_or_else(|| panic!("no {what} of {}: {events:#?}", path.display()))
}

/// DESIGN §5: hooks do not flush; a drain makes what it found durable
/// (each new entry, the spool directory, the ledger) before it hands any
/// of it to a sink or deletes any of it, in one pass. Before: only the
/// spool directory was flushed.
#[test]
fn a_drain_flushes_what_it_found_before_it_delivers_or_deletes_any_of_it() {
    use crate::spool::probe;
    let t = tempfile::tempdir().unwrap();
    let spool = Spool::open(t.path()).unwrap();
    let mut paths: Vec<PathBuf> = (0..3)
        .map(|i| {
            spool
                .enqueue(&entry(&format!("{i:032x}"), SinkTarget::Store, now_ms()))
                .unwrap()
        })
        .collect();
    // A corrupt entry: dropped, so deleted too.
    let bad = spool.dir().join("0000000000001-1-00000000-bad.json");
    fs::write(&bad, b"{ not json").unwrap();
    let seen = probe::under(t.path()).len();
    let (r, _) = run_with(&spool, |_| ItemOutcome::Delivered, false, opts());
    assert_eq!((r.delivered, r.dropped_total(), r.remaining), (3, 1, 0));
    // The drain's own events.
    let ev = probe::under(t.path()).split_off(seen);
    let out = ev
        .iter()
        .position(|(w, _)| *w == "deliver" || *w == "delete")
        .expect("deliveries");
    let ledger = spool.counters_dir().join("store.enqueued");
    assert!(first(&ev, "sync", spool.dir()) < out, "{ev:#?}");
    assert!(first(&ev, "sync", &ledger) < out, "{ev:#?}");
    for p in &paths {
        assert!(first(&ev, "sync", p) < out, "{ev:#?}");
        assert!(first(&ev, "deliver", p) < first(&ev, "delete", p));
    }
    assert!(first(&ev, "sync", &bad) < first(&ev, "delete", &bad));
    // One flush per entry, one of the directory, one of the ledger.
    paths.push(bad);
    let syncs = |p: &Path| ev.iter().filter(|(w, q)| *w == "sync" && q == p).count();
    assert!(paths.iter().all(|p| syncs(p) == 1), "{ev:#?}");
    assert_eq!((syncs(spool.dir()), syncs(&ledger)), (1, 1), "{ev:#?}");
}

/// A drain flushes what arrived since the last flush, not again what an
/// earlier drain left pending (flushing a clean file still costs the disk a
/// cache flush): the next run of a lingering drainer pays for its new
/// entries only.
#[test]
fn the_next_drain_flushes_only_what_arrived_since_the_last() {
    use crate::spool::probe;
    let t = tempfile::tempdir().unwrap();
    let spool = Spool::open(t.path()).unwrap();
    let key = |i: u32| format!("{i:032x}");
    let old = spool
        .enqueue(&entry(&key(1), SinkTarget::Store, now_ms()))
        .unwrap();
    // Renamed in well before the first drain looks (past the slack).
    std::thread::sleep(Duration::from_millis(300));
    let later = |e: &SpoolEntry| {
        if e.record.key == format!("{:032x}", 1) {
            ItemOutcome::Retry {
                charge: false,
                reason: "later".into(),
            }
        } else {
            ItemOutcome::Delivered
        }
    };
    let (r, _) = run_with(&spool, later, false, opts());
    assert_eq!((r.delivered, r.remaining), (0, 1));
    let new = spool
        .enqueue(&entry(&key(2), SinkTarget::Store, now_ms()))
        .unwrap();
    let (r, _) = run_with(&spool, later, false, opts());
    assert_eq!((r.delivered, r.remaining), (1, 1));
    let ev = probe::under(t.path());
    let syncs = |p: &Path| ev.iter().filter(|(w, q)| *w == "sync" && q == p).count();
    assert_eq!(syncs(&old), 1, "{ev:#?}");
    assert_eq!(syncs(&new), 1, "{ev:#?}");
    assert!(first(&ev, "sync", &new) < first(&ev, "deliver", &new));
}

/// A drain folds each ledger's settled slots (`spool/fold.rs`) and the
/// books still balance: here a ledger of `FOLD_MIN_BYTES` delivered
/// records whose candidate was noted past the settle time.
#[test]
fn a_drain_folds_settled_ledgers_and_the_books_balance() {
    use crate::spool::{Base, FOLD_MIN_BYTES, FOLD_SETTLE_MS};
    use std::io::Write;
    let t = tempfile::tempdir().unwrap();
    let spool = Spool::open(t.path()).unwrap();
    let now = now_ms();
    spool
        .enqueue(&entry(&"a".repeat(32), SinkTarget::Store, now))
        .unwrap();
    let (r, _) = run_with(&spool, |_| ItemOutcome::Delivered, false, opts());
    assert_eq!(r.delivered, 1);
    // As if FOLD_MIN_BYTES more records had been delivered long ago.
    let ledger = spool.counters_dir().join("store.enqueued");
    let mut f = fs::OpenOptions::new().append(true).open(&ledger).unwrap();
    f.write_all(&vec![b'.'; FOLD_MIN_BYTES as usize]).unwrap();
    let mut c = load_counters(t.path(), "store");
    c.delivered += FOLD_MIN_BYTES;
    counters::save_counters(t.path(), "store", &c).unwrap();
    let len = FOLD_MIN_BYTES + 1;
    let base = Base {
        v: 1,
        candidate: Some(crate::spool::Candidate {
            offset: len,
            at_ms: now - FOLD_SETTLE_MS,
        }),
        ..Base::default()
    };
    fs::write(spool.base_path("store"), serde_json::to_vec(&base).unwrap()).unwrap();
    let before = identity_holds(&spool, "store");
    run_with(&spool, |_| ItemOutcome::Delivered, false, opts());
    assert_eq!(spool.read_base("store").unwrap().offset, len);
    assert_eq!(identity_holds(&spool, "store"), before);
}
