//! Delivery and session-start benchmark for the embedded store (run by hand,
//! never by the tests). Figures go to docs/benchmarks.md.
//!
//! 1. `drain`: drain throughput of a full spool into the embedded store
//!    (`drain::drain_locked` with the real store sink), against a same-run
//!    baseline that only lists, reads, parses and deletes the same spool files
//!    with plain std calls (the spool's own floor: no store, no checks, no
//!    counters). Also times the real `memhook drain` binary.
//! 2. `start`: `briefing::session_start` with a populated store (a previous
//!    session to hand off), against a same-run baseline of session start on an
//!    empty store; plus the process floor (`memhook --version`).
//!
//! ```text
//! cargo build --release --bins --examples
//! target/release/examples/delivery_bench [drain|start] [RECORDS] [ROUNDS]
//! ```
//! RECORDS defaults to 10000 (the spool's cap), ROUNDS to 3; medians printed.
//! With `BENCH_EXCLUDED=DIR` every record is screened against the
//! fingerprints of `DIR/secret/**` (see [`exclusions`]).
//! CPU time comes from getrusage (steadier than wall time on a shared VM).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use memhook_core::record::{Record, RecordTool, RECORD_VERSION};
use memhook_delivery::drain::{self, Options};
use memhook_delivery::spool::{SinkTarget, Spool, SpoolEntry, ENTRY_VERSION};

mod bench_common;
use bench_common::{bin, children_cpu, median, record_scope, self_cpu};

/// A realistic post-tool record (~600 bytes of excerpt, one file).
fn record(i: usize, round: usize, project: &str, session: &str, ms: u64) -> Record {
    let prompt = i.is_multiple_of(25);
    Record {
        v: RECORD_VERSION,
        key: format!("{round:08x}{i:024x}"),
        occurred_ms: ms,
        agent: "claude-code".into(),
        event: if prompt {
            "user-prompt"
        } else {
            "post-tool-use"
        }
        .into(),
        native_event: if prompt {
            "UserPromptSubmit"
        } else {
            "PostToolUse"
        }
        .into(),
        session_id: Some(session.into()),
        cwd: Some(format!("/home/dev/projects/{project}")),
        scope: record_scope(project),
        subagent: false,
        tool: (!prompt).then(|| RecordTool {
            family: ["file", "shell", "search-list"][i % 3].into(),
            name: Some(["Edit", "Bash", "Grep"][i % 3].into()),
            call_id: Some(format!("toolu_{i:020}")),
            outcome: Some(
                if i.is_multiple_of(17) {
                    "error"
                } else {
                    "success"
                }
                .into(),
            ),
            exit_code: None,
        }),
        capture: None,
        disposition: "keep".into(),
        title: Some(if prompt {
            format!("Refactor module {} and fix the failing test", i % 40)
        } else {
            format!(
                "{} src/module_{}.rs",
                ["Edit", "Bash", "Grep"][i % 3],
                i % 40
            )
        }),
        body: Some(format!(
            "{} line {i}: compiled 42 crates, ran 118 tests, 1 warning about an unused \
             import in src/module_{}.rs; the retry loop now backs off exponentially. {}",
            if prompt { "prompt" } else { "output" },
            i % 40,
            "padding text to reach a typical excerpt size. ".repeat(10)
        )),
        files: if i.is_multiple_of(3) {
            vec![format!("src/module_{}.rs", i % 40)]
        } else {
            vec![]
        },
        command: None,
        plan: None,
    }
}

/// `BENCH_EXCLUDED=DIR`: every entry carries `ignore_paths = ["secret/**"]`
/// of a marker in DIR, so the drain screens each record with DIR's
/// fingerprint set (docs/benchmarks.md, "Fingerprints of excluded files").
fn exclusions() -> Option<memhook_core::fingerprint::Exclusions> {
    let dir = std::env::var("BENCH_EXCLUDED").ok()?;
    Some(memhook_core::fingerprint::Exclusions {
        marker: format!("{dir}/.ai-memory.toml"),
        patterns: vec!["secret/**".into()],
        home: None,
    })
}

fn fill(dir: &Path, n: usize, round: usize) {
    let spool = Spool::open(dir).unwrap();
    let now = memhook_core::timefmt::now_ms();
    for i in 0..n {
        spool
            .enqueue(&SpoolEntry {
                v: ENTRY_VERSION,
                sink: SinkTarget::Store,
                attempts: 0,
                enqueued_ms: now,
                record: record(i, round, "demo", &format!("s{}", i / 500), now + i as u64),
                exclusions: exclusions(),
            })
            .unwrap();
    }
}

/// A fresh data dir holding a copy of `template`'s spool and ledgers (copying
/// is much faster than enqueueing again with an fsync per record).
fn copy_of(template: &Path) -> tempfile::TempDir {
    let t = tempfile::tempdir().unwrap();
    Spool::open(t.path()).unwrap();
    for sub in ["spool", "counters"] {
        for e in std::fs::read_dir(template.join(sub)).unwrap().flatten() {
            if e.path().is_file() {
                std::fs::copy(e.path(), t.path().join(sub).join(e.file_name())).unwrap();
            }
        }
    }
    // The hook fsyncs every entry, so a real spool's files have their disk
    // blocks allocated; freeing them is a large part of an unlink's cost.
    // Without this the copies would still sit in the page cache unallocated
    // (delayed allocation) and deleting them would look much cheaper.
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    t
}

fn bench_drain(n: usize, rounds: usize) {
    let (mut floor_cpu, mut drain_cpu, mut floor_wall, mut drain_wall, mut bin_wall, mut bin_cpu) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    let template = tempfile::tempdir().unwrap();
    fill(template.path(), n, 0);
    for _ in 0..rounds {
        // Baseline: the spool's own floor (list, read, parse, delete).
        let t = copy_of(template.path());
        let spool = Spool::open(t.path()).unwrap();
        let (c0, w0) = (self_cpu(), Instant::now());
        let mut seen = 0;
        for p in spool.pending().unwrap() {
            let e: SpoolEntry = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            seen += e.record.key.len();
            std::fs::remove_file(&p).unwrap();
        }
        floor_wall.push(w0.elapsed().as_secs_f64());
        floor_cpu.push((self_cpu() - c0).as_secs_f64());
        assert!(seen > 0);

        // Drain into the embedded store, in process.
        let t = copy_of(template.path());
        let spool = Spool::open(t.path()).unwrap();
        let lock = drain::try_lock(t.path()).unwrap().unwrap();
        let mut factory = memhook_sinks::sink_factory(t.path(), drain::HTTP_TIMEOUT);
        let (c0, w0) = (self_cpu(), Instant::now());
        let r = drain::drain_locked(
            &lock,
            &spool,
            &mut factory,
            Options {
                deadline: Instant::now() + Duration::from_secs(600),
                only: None,
                honour_backoff: false,
                pipelined: true,
            },
        )
        .unwrap();
        drain_wall.push(w0.elapsed().as_secs_f64());
        drain_cpu.push((self_cpu() - c0).as_secs_f64());
        assert_eq!((r.delivered as usize, r.remaining), (n, 0));
        drop(lock);

        // The real binary, end to end.
        let t = copy_of(template.path());
        let (c0, w0) = (children_cpu(), Instant::now());
        let out = Command::new(bin())
            .arg("--data-dir")
            .arg(t.path())
            .arg("drain")
            .output()
            .unwrap();
        bin_wall.push(w0.elapsed().as_secs_f64());
        bin_cpu.push((children_cpu() - c0).as_secs_f64());
        assert!(out.status.success(), "{out:?}");
    }
    let rate = |s: f64| n as f64 / s;
    let (fc, dc, fw, dw, bw, bc) = (
        median(floor_cpu),
        median(drain_cpu),
        median(floor_wall),
        median(drain_wall),
        median(bin_wall),
        median(bin_cpu),
    );
    println!("drain {n} records x {rounds} rounds (medians)");
    println!(
        "  baseline spool floor (read+parse+delete): {:>9.0} rec/s CPU, {:>9.0} rec/s wall",
        rate(fc),
        rate(fw)
    );
    println!(
        "  drain into store (in process):            {:>9.0} rec/s CPU, {:>9.0} rec/s wall  \
         (CPU ratio to floor {:.2}x)",
        rate(dc),
        rate(dw),
        dc / fc
    );
    println!(
        "  `memhook drain` binary:                   {:>9.0} rec/s CPU, {:>9.0} rec/s wall",
        rate(bc),
        rate(bw)
    );
}

/// The store alone: `n` records inserted in batches of `drain::MAX_STORE_BATCH`
/// (one transaction each), no spool. Splits a drain's cost into its spool
/// part and its SQLite part.
fn bench_insert(n: usize, rounds: usize) {
    let now = memhook_core::timefmt::now_ms();
    let recs: Vec<Record> = (0..n)
        .map(|i| record(i, 0, "demo", &format!("s{}", i / 500), now + i as u64))
        .collect();
    let mut cpu = vec![];
    for _ in 0..rounds {
        let t = tempfile::tempdir().unwrap();
        let mut store = memhook_store::sqlite::Store::open(t.path()).unwrap();
        let c0 = self_cpu();
        for chunk in recs.chunks(drain::MAX_STORE_BATCH) {
            store.insert_all(chunk.iter()).unwrap();
        }
        cpu.push((self_cpu() - c0).as_secs_f64());
    }
    let c = median(cpu);
    println!(
        "insert {n} records x {rounds} rounds: {:.0} rec/s CPU, {:.1} µs/record",
        n as f64 / c,
        c * 1e6 / n as f64
    );
}

fn scope(project: &str, digest: bool) -> memhook_core::scope::Scope {
    use memhook_core::scope::*;
    Scope {
        workspace: "bench".into(),
        project: project.into(),
        workspace_source: Source::Marker,
        project_source: Source::Marker,
        marker: None,
        strategy: Strategy::Basename,
        settings: Settings {
            inject_on_session_start: digest,
            ..Settings::default()
        },
        capture: CaptureConfig::Absent,
        warnings: vec![],
    }
}

fn start_event() -> memhook_core::event::Event {
    memhook_core::event::Event {
        agent: memhook_core::event::Agent::ClaudeCode,
        kind: memhook_core::event::EventKind::SessionStart,
        native_name: "SessionStart".into(),
        session_id: Some("the-new-session".into()),
        cwd: Some("/home/dev/projects/demo".into()),
        tool_name: None,
        tool_input: None,
        tool_call_id: None,
        tool_response: None,
        tool_error: None,
        exit_status: None,
        prompt: None,
        message: None,
        summary: None,
        final_message: None,
        detail: Some("startup".into()),
        subagent: false,
    }
}

/// Mean CPU and median wall per call of `f`, over `iters` calls.
fn per_call(iters: usize, mut f: impl FnMut()) -> (f64, f64) {
    let mut walls = Vec::with_capacity(iters);
    let c0 = self_cpu();
    for _ in 0..iters {
        let w = Instant::now();
        f();
        walls.push(w.elapsed().as_secs_f64());
    }
    (
        (self_cpu() - c0).as_secs_f64() / iters as f64,
        median(walls),
    )
}

fn bench_start(rounds: usize) {
    const ITERS: usize = 200;
    const SESSIONS: usize = 20;
    const PER_SESSION: usize = 250;
    let budget = memhook_hook::budget::DEFAULT_BUDGET;
    // A store with 20 sessions x 250 records of this project and as many of another.
    let full = tempfile::tempdir().unwrap();
    {
        let mut store = memhook_store::sqlite::Store::open(full.path()).unwrap();
        let base = memhook_core::timefmt::now_ms() - 86_400_000;
        let mut recs = Vec::new();
        for project in ["demo", "other"] {
            for s in 0..SESSIONS {
                for i in 0..PER_SESSION {
                    let n = s * PER_SESSION + i;
                    let ms = base + (s * 3_600_000 + i * 1000) as u64;
                    let mut r = record(n, 0, project, &format!("sess-{s}"), ms);
                    r.key = format!("{project:>8}{n:024x}").replace(' ', "0");
                    recs.push(r);
                }
            }
        }
        store.insert_all(recs.iter()).unwrap();
        // As the drainer's store sink does when it is done.
        store.checkpoint();
    }
    // To look at this store by hand: copy it out and stop.
    if let Some(keep) = std::env::var_os("DELIVERY_BENCH_KEEP_STORE") {
        let keep = PathBuf::from(keep);
        std::fs::create_dir_all(&keep).unwrap();
        for f in ["store.sqlite3", "store.sqlite3-wal"] {
            if full.path().join(f).exists() {
                std::fs::copy(full.path().join(f), keep.join(f)).unwrap();
            }
        }
        println!("store copied to {}", keep.display());
        return;
    }
    let empty = tempfile::tempdir().unwrap();
    let ev = start_event();
    let (sc, sc_digest) = (scope("demo", false), scope("demo", true));
    let sample = memhook_sinks::session_start::session_start(
        full.path(),
        &SinkTarget::Store,
        &sc,
        &ev,
        budget,
    )
    .expect("a briefing");
    let (
        mut base_cpu,
        mut brief_cpu,
        mut dig_cpu,
        mut base_w,
        mut brief_w,
        mut dig_w,
        mut proc_cpu,
    ) = (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
    for _ in 0..rounds {
        let (c, w) = per_call(ITERS, || {
            let r = memhook_sinks::session_start::session_start(
                empty.path(),
                &SinkTarget::Store,
                &sc,
                &ev,
                budget,
            );
            assert!(r.is_none());
        });
        base_cpu.push(c);
        base_w.push(w);
        let (c, w) = per_call(ITERS, || {
            let r = memhook_sinks::session_start::session_start(
                full.path(),
                &SinkTarget::Store,
                &sc,
                &ev,
                budget,
            );
            assert!(r.is_some());
        });
        brief_cpu.push(c);
        brief_w.push(w);
        let (c, w) = per_call(ITERS, || {
            let r = memhook_sinks::session_start::session_start(
                full.path(),
                &SinkTarget::Store,
                &sc_digest,
                &ev,
                budget,
            );
            assert!(r.is_some());
        });
        dig_cpu.push(c);
        dig_w.push(w);
        let c0 = children_cpu();
        for _ in 0..50 {
            let out = Command::new(bin()).arg("--version").output().unwrap();
            assert!(out.status.success());
        }
        proc_cpu.push((children_cpu() - c0).as_secs_f64() / 50.0);
    }
    // End to end: the real hook binary on a real SessionStart payload, with
    // the populated store and with an empty one (same scope via env).
    let payload = std::fs::read_to_string(
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("fixtures/agents/claude-code/2.1.328/SessionStart-startup.json"),
    )
    .unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let hook_cpu = |data: &Path| -> (f64, bool) {
        let c0 = children_cpu();
        let mut briefed = true;
        for _ in 0..50 {
            let mut f = tempfile::tempfile().unwrap();
            std::io::Write::write_all(&mut f, payload.as_bytes()).unwrap();
            std::io::Seek::rewind(&mut f).unwrap();
            let out = Command::new(bin())
                .args(["--data-dir"])
                .arg(data)
                .args(["hook", "--agent", "claude-code"])
                .env("AI_MEMORY_WORKSPACE", "bench")
                .env("AI_MEMORY_PROJECT", "demo")
                .current_dir(cwd.path())
                .stdin(f)
                .output()
                .unwrap();
            briefed &= String::from_utf8_lossy(&out.stdout).contains("additionalContext");
        }
        ((children_cpu() - c0).as_secs_f64() / 50.0, briefed)
    };
    let (mut hook_empty, mut hook_full) = (vec![], vec![]);
    for _ in 0..rounds {
        let (c, b) = hook_cpu(empty.path());
        assert!(!b);
        hook_empty.push(c);
        let (c, b) = hook_cpu(full.path());
        assert!(b, "the hook printed no briefing");
        hook_full.push(c);
    }
    let ms = |s: f64| s * 1000.0;
    let (bc, fc, dc) = (median(base_cpu), median(brief_cpu), median(dig_cpu));
    println!(
        "session start, store of {} records, {ITERS} calls x {rounds} rounds (medians)",
        2 * SESSIONS * PER_SESSION
    );
    println!(
        "  baseline empty store:        {:.3} ms CPU/call, {:.3} ms wall p50",
        ms(bc),
        ms(median(base_w))
    );
    println!(
        "  briefing (handoff):          {:.3} ms CPU/call, {:.3} ms wall p50  ({:.2}x baseline, {} chars)",
        ms(fc),
        ms(median(brief_w)),
        fc / bc,
        sample.chars().count()
    );
    println!(
        "  briefing + digest (opt-in):  {:.3} ms CPU/call, {:.3} ms wall p50  ({:.2}x baseline)",
        ms(dc),
        ms(median(dig_w)),
        dc / bc
    );
    println!(
        "  process floor (memhook --version): {:.3} ms CPU/call",
        ms(median(proc_cpu))
    );
    let (he, hf) = (median(hook_empty), median(hook_full));
    println!(
        "  `memhook hook` SessionStart, empty store:    {:.3} ms CPU/call",
        ms(he)
    );
    println!(
        "  `memhook hook` SessionStart, with briefing:  {:.3} ms CPU/call  ({:.2}x the empty-store hook)",
        ms(hf),
        hf / he
    );
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    // `fill DIR N`: leave a data dir with N spooled records, for profiling
    // `memhook --data-dir DIR drain` under perf or callgrind.
    if args.first().map(String::as_str) == Some("insert") {
        let n = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
        let rounds = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(3);
        bench_insert(n, rounds);
        return;
    }
    if args.first().map(String::as_str) == Some("fill") {
        let dir = PathBuf::from(args.get(1).expect("usage: delivery_bench fill DIR N"));
        let n = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(10_000);
        fill(&dir, n, 0);
        return;
    }
    let only = match args.first().map(String::as_str) {
        Some("drain") | Some("start") => Some(args.remove(0)),
        _ => None,
    };
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let rounds: usize = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    if only.as_deref() != Some("start") {
        bench_drain(n, rounds);
    }
    if only.as_deref() != Some("drain") {
        bench_start(rounds);
    }
}
