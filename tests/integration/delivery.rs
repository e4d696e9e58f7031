//! Integration tests for delivery: the real `memhook` binary drains a real
//! spool into a real SQLite store (and to a local HTTP peer), the detached
//! drainer is started with `memhook drain --detach` (the same
//! `drain::spawn_detached` the hook calls after each enqueue) and killed with
//! SIGKILL mid-run, and `status`/`recent`/`search` read the result.
//!
//! Events come from real agent payloads run through `memhook hook`; a few
//! tests write spool entries with the library's `Spool::enqueue` (the code
//! path the hook uses) to reach states a hook cannot produce on demand
//! (old, over-tried or corrupt entries).

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use memhook_core::record::{Record, RecordScope, RecordTool, RECORD_VERSION};
use memhook_core::timefmt::now_ms;
use memhook_delivery::drain::{self, MAX_AGE_MS, MAX_ATTEMPTS};
use memhook_delivery::spool::{SinkTarget, Spool, SpoolEntry, ENTRY_VERSION};
use serde_json::Value;

use crate::support::binaries::{memhook, status};
use crate::support::fixtures::{fixture, key};
use crate::support::home::data_dir;
use crate::support::process::{drainer_pids, kill};

/// A Claude Code payload from fixtures/, with `/home/dev` moved under `home`.
fn fixture_payload(name: &str, home: &Path) -> Value {
    let text = std::fs::read_to_string(fixture(&format!("agents/claude-code/2.1.328/{name}.json")))
        .unwrap()
        .replace("/home/dev", home.to_str().unwrap());
    let v: Value = serde_json::from_str(&text).unwrap();
    if let Some(cwd) = v["cwd"].as_str() {
        std::fs::create_dir_all(cwd).unwrap();
    }
    v
}

/// Run `memhook hook --agent claude-code` on `payload` from its cwd.
/// The session-start budget is raised (`MEMHOOK_START_BUDGET_MS`) so a loaded
/// test machine cannot turn a briefing into `{}`; the budget itself is
/// exercised by the session_start tests below. Stdin
/// is a file holding the payload, so a loaded machine cannot starve a writer
/// thread past the hook's stdin time bound (that bound is the hook's tests'
/// business; these tests are about delivery).
fn run_hook(home: &Path, payload: &Value) -> std::process::Output {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(payload.to_string().as_bytes()).unwrap();
    std::io::Seek::rewind(&mut f).unwrap();
    let mut c = memhook(home);
    c.args(["hook", "--agent", "claude-code"])
        .stdin(f)
        .env(memhook_hook::budget::BUDGET_ENV, "10000");
    if let Some(cwd) = payload["cwd"].as_str() {
        c.current_dir(cwd);
    }
    c.output().unwrap()
}

/// Wait (bounded) until the spool is empty and no drainer runs.
fn wait_delivered(dir: &Path, within: Duration) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        let empty = Spool::open(dir).unwrap().pending().unwrap().is_empty();
        if empty && !drain::drainer_running(dir) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

fn record(key: &str, project: &str, session: &str, event: &str, ms: u64) -> Record {
    Record {
        v: RECORD_VERSION,
        key: key.to_string(),
        occurred_ms: ms,
        agent: "claude-code".into(),
        event: event.into(),
        native_event: event.into(),
        session_id: Some(session.into()),
        cwd: Some(format!("/work/{project}")),
        scope: RecordScope {
            workspace: "default".into(),
            project: project.into(),
            workspace_source: "fallback".into(),
            project_source: "fallback".into(),
            project_strategy: "basename".into(),
            drop_subagent: false,
            default_global: false,
            briefing: false,
            briefing_budget: 4000,
        },
        subagent: false,
        tool: None,
        capture: None,
        disposition: "keep".into(),
        title: None,
        body: None,
        files: vec![],
        command: None,
        plan: None,
    }
}

fn tool_record(key: &str, project: &str, session: &str, call: &str, ok: bool) -> Record {
    let mut r = record(
        key,
        project,
        session,
        if ok {
            "post-tool-use"
        } else {
            "post-tool-use-failure"
        },
        now_ms(),
    );
    r.tool = Some(RecordTool {
        family: if ok { "file" } else { "shell" }.into(),
        name: Some(if ok { "Edit" } else { "Bash" }.into()),
        call_id: Some(call.into()),
        outcome: Some(if ok { "success" } else { "error" }.into()),
        exit_code: None,
    });
    if ok {
        r.files = vec!["src/spool.rs".into()];
        r.body = Some("edited the writer".into());
    } else {
        r.body = Some("cargo test: 1 failed".into());
    }
    r
}

fn enqueue(
    dir: &Path,
    sink: SinkTarget,
    record: Record,
    attempts: u32,
    enqueued_ms: u64,
) -> PathBuf {
    Spool::open(dir)
        .unwrap()
        .enqueue(&SpoolEntry {
            v: ENTRY_VERSION,
            sink,
            attempts,
            enqueued_ms,
            record,
            exclusions: None,
        })
        .unwrap()
}

fn json_lines(out: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn sink_status<'a>(st: &'a Value, id: &str) -> &'a Value {
    st["sinks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .unwrap_or_else(|| panic!("no sink {id} in {st}"))
}

#[test]
fn drain_delivers_into_the_store_and_recent_search_status_show_it() {
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    let t0 = now_ms() - 10_000;
    let mut prompt = record(&key(1), "api", "s1", "user-prompt", t0);
    prompt.title = Some("Fix the parser bug in foo-bar".into());
    prompt.body = Some("Fix the parser bug in foo-bar\nthen run the tests".into());
    enqueue(&dir, SinkTarget::Store, prompt, 0, t0);
    let mut edit = tool_record(&key(2), "api", "s1", "call-edit", true);
    edit.occurred_ms = t0 + 1;
    enqueue(&dir, SinkTarget::Store, edit, 0, t0);
    let mut fail = tool_record(&key(3), "api", "s1", "call-bash", false);
    fail.occurred_ms = t0 + 2;
    enqueue(&dir, SinkTarget::Store, fail, 0, t0);
    let other = record(&key(4), "web", "s9", "user-prompt", t0 + 3);
    enqueue(&dir, SinkTarget::Store, other, 0, t0);

    let out = memhook(home.path()).arg("drain").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("delivered 4, dropped 0, 0 pending"), "{text}");
    assert!(Spool::open(&dir).unwrap().pending().unwrap().is_empty());
    // A second drain has nothing to do and still succeeds.
    let out = memhook(home.path()).arg("drain").output().unwrap();
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("memhook drain: nothing was pending: every record is already delivered"));

    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(dir.join("store.sqlite3"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // recent --all: newest first, every required field.
    let out = memhook(home.path())
        .args(["recent", "--all", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let rows = json_lines(&out.stdout);
    assert_eq!(rows.len(), 4);
    let keys: Vec<&str> = rows.iter().map(|r| r["key"].as_str().unwrap()).collect();
    assert_eq!(keys, [key(4), key(3), key(2), key(1)]);
    for r in &rows {
        for f in [
            "key",
            "occurred_at",
            "agent",
            "event",
            "workspace",
            "project",
            "session_id",
            "tool_family",
            "tool_call_id",
            "disposition",
        ] {
            assert!(r.get(f).is_some(), "{f} missing in {r}");
        }
        assert!(r["occurred_at"].as_str().unwrap().ends_with('Z'));
    }
    assert_eq!(rows[1]["tool_call_id"], "call-bash");
    assert_eq!(rows[1]["tool_family"], "shell");

    // recent in the cwd's scope (project "api" from the directory name).
    let api = home.path().join("api");
    std::fs::create_dir(&api).unwrap();
    let out = memhook(home.path())
        .args(["recent", "--json", "--limit", "2"])
        .current_dir(&api)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let rows = json_lines(&out.stdout);
    assert_eq!(rows.len(), 2);
    assert!(rows.iter().all(|r| r["project"] == "api"));

    // search: user text is never FTS syntax.
    let out = memhook(home.path())
        .args(["search", "parser foo-bar", "--all", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let rows = json_lines(&out.stdout);
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["key"], key(1));
    // Other inflections are found, and each hit says why it matched.
    let out = memhook(home.path())
        .args(["search", "fixing bugs", "--all", "--json"])
        .output()
        .unwrap();
    let rows = json_lines(&out.stdout);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["key"], key(1));
    let matched = rows[0]["matched"].as_str().unwrap();
    assert!(matched.contains("**Fix** the parser **bug**"), "{matched}");
    let out = memhook(home.path())
        .args(["search", "fixing bugs", "--all"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\n    **Fix** the parser **bug**"), "{text}");
    for q in [
        "\"unbalanced",
        "NEAR(",
        "a OR",
        "*",
        "title:x",
        "'; DROP TABLE records",
    ] {
        let out = memhook(home.path())
            .args(["search", q, "--all"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{q}: {out:?}");
    }

    let st = status(home.path());
    let s = sink_status(&st, "store");
    assert_eq!(s["enqueued"], 4);
    assert_eq!(s["delivered"], 4);
    assert_eq!(s["pending"], 0);
    assert_eq!(s["balanced"], true);
    assert_eq!(st["drainer_running"], false);
    let out = memhook(home.path()).arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("enqueued 4 = delivered 4 + pending 0 + dropped 0  (balanced)"),
        "{text}"
    );
}

/// A loopback HTTP peer answering every request with `status` and counting
/// requests. Stops when the returned flag is set.
fn http_peer(status: u16) -> (String, Arc<AtomicBool>, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.set_nonblocking(true).unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let hits = Arc::new(AtomicUsize::new(0));
    let (s2, h2) = (stop.clone(), hits.clone());
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while !s2.load(Ordering::Relaxed) && Instant::now() < deadline {
            match l.accept() {
                Ok((mut c, _)) => {
                    c.set_nonblocking(false).unwrap();
                    c.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
                    let mut buf = Vec::new();
                    let mut chunk = [0u8; 8192];
                    // Read headers and the declared body.
                    loop {
                        let n = c.read(&mut chunk).unwrap_or(0);
                        if n == 0 {
                            break;
                        }
                        buf.extend_from_slice(&chunk[..n]);
                        let text = String::from_utf8_lossy(&buf).to_string();
                        if let Some(end) = text.find("\r\n\r\n") {
                            let len = text[..end]
                                .lines()
                                .find_map(|l| {
                                    let (k, v) = l.split_once(':')?;
                                    k.eq_ignore_ascii_case("content-length")
                                        .then(|| v.trim().parse::<usize>().ok())?
                                })
                                .unwrap_or(0);
                            if buf.len() >= end + 4 + len {
                                break;
                            }
                        }
                    }
                    h2.fetch_add(1, Ordering::Relaxed);
                    let body = "server exploded";
                    let _ = write!(
                        c,
                        "HTTP/1.1 {status} Oops\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
    });
    (url, stop, hits)
}

#[test]
fn caps_and_corrupt_entries_are_counted_and_the_books_balance() {
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    let (url, stop, hits) = http_peer(500);
    let http = SinkTarget::Http { url: url.clone() };
    let now = now_ms();

    // Attempts cap: one charged failure short of the cap survives a drain...
    enqueue(
        &dir,
        http.clone(),
        tool_record(&key(10), "api", "s", "c10", true),
        MAX_ATTEMPTS - 2,
        now,
    );
    // Age cap: just past seven days is dropped, just inside is delivered.
    enqueue(
        &dir,
        SinkTarget::Store,
        record(&key(11), "api", "s", "stop", now),
        0,
        now - MAX_AGE_MS - 60_000,
    );
    enqueue(
        &dir,
        SinkTarget::Store,
        record(&key(12), "api", "s", "stop", now),
        0,
        now - MAX_AGE_MS + 60_000,
    );
    // A corrupt entry whose sink is still readable.
    let bad = enqueue(
        &dir,
        SinkTarget::Store,
        record(&key(13), "api", "s", "stop", now),
        0,
        now,
    );
    std::fs::write(
        &bad,
        br#"{"v":1,"sink":{"kind":"store"},"record":"mangled"}"#,
    )
    .unwrap();

    let out = memhook(home.path())
        .args(["drain", "--budget-secs", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "records remain: {out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("1 pending"), "{text}");
    assert!(hits.load(Ordering::Relaxed) >= 1, "the server was asked");
    let pending = Spool::open(&dir).unwrap().pending().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(Spool::load(&pending[0]).unwrap().attempts, MAX_ATTEMPTS - 1);

    let st = status(home.path());
    let s = sink_status(&st, "store");
    assert_eq!(
        (s["enqueued"].as_u64(), s["delivered"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(s["dropped"]["max_age"], 1);
    assert_eq!(s["dropped"]["corrupt"], 1);
    assert_eq!(s["balanced"], true, "{st}");
    let h = sink_status(&st, &http.id());
    assert_eq!(h["pending"], 1);
    assert_eq!(h["balanced"], true, "{st}");
    assert_eq!(h["sink"], url.as_str());
    assert!(
        h["last_error"].as_str().unwrap_or("").contains("500"),
        "{st}"
    );

    // ...and the next charged failure reaches the cap: dropped and counted.
    let out = memhook(home.path())
        .args(["drain", "--budget-secs", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let st = status(home.path());
    let h = sink_status(&st, &http.id());
    assert_eq!(h["pending"], 0);
    assert_eq!(h["dropped"]["max_attempts"], 1);
    assert_eq!(h["enqueued"], 1);
    assert_eq!(h["balanced"], true, "{st}");
    stop.store(true, Ordering::Relaxed);
}

/// Locks held on `file` right now (from /proc/locks).
fn lock_holders(file: &Path) -> usize {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::metadata(file) else {
        return 0;
    };
    let dev = m.dev();
    let ino = format!(
        "{:02x}:{:02x}:{}",
        libc::major(dev),
        libc::minor(dev),
        m.ino()
    );
    // One read(2) call: /proc/locks is a consistent snapshot only within a
    // single read (several reads may see the list shift and repeat a line).
    let mut buf = vec![0u8; 1 << 20];
    let n = std::fs::File::open("/proc/locks")
        .and_then(|mut f| f.read(&mut buf))
        .unwrap_or(0);
    String::from_utf8_lossy(&buf[..n])
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .nth(5)
                .map(|id| id == ino)
                .unwrap_or(false)
        })
        .count()
}

#[test]
fn concurrent_enqueues_with_a_killed_drainer_store_each_event_exactly_once() {
    const WRITERS: usize = 64;
    const EVENTS: usize = 20;
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    Spool::open(&dir).unwrap();
    let home_path = home.path().to_path_buf();
    let enqueued = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicBool::new(false));

    // Watcher: never more than one lock holder; SIGKILL one drainer mid-run.
    let watcher = {
        let (dir, enqueued, done) = (dir.clone(), enqueued.clone(), done.clone());
        std::thread::spawn(move || {
            let mut max_holders = 0;
            let mut max_procs = 0;
            let mut killed = None;
            let mut seen = BTreeSet::new();
            let lock = dir.join(drain::LOCK_FILE);
            while !done.load(Ordering::Relaxed) {
                max_holders = max_holders.max(lock_holders(&lock));
                let pids = drainer_pids(&dir);
                max_procs = max_procs.max(pids.len());
                seen.extend(pids.iter().copied());
                if killed.is_none() && enqueued.load(Ordering::Relaxed) >= WRITERS * EVENTS / 5 {
                    if let Some(&pid) = pids.first() {
                        kill(pid, libc::SIGKILL);
                        killed = Some(pid);
                    }
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            (max_holders, max_procs, killed, seen.len())
        })
    };

    let bash = fixture_payload("PostToolUse-Bash", &home_path);
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (home, enqueued, bash) = (home_path.clone(), enqueued.clone(), bash.clone());
            std::thread::spawn(move || {
                for e in 0..EVENTS {
                    let mut p = bash.clone();
                    p["session_id"] = format!("s{w}").into();
                    p["tool_use_id"] = format!("w{w}-e{e}").into();
                    // The real hook: enqueue, then start a drainer if none runs.
                    let out = run_hook(&home, &p);
                    assert_eq!(out.status.code(), Some(0), "{out:?}");
                    assert!(
                        out.stderr.is_empty(),
                        "{}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    enqueued.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    // Let the last background drainer finish (bounded), then stop watching.
    let until = Instant::now() + Duration::from_secs(60);
    while !drainer_pids(&dir).is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    done.store(true, Ordering::Relaxed);
    let (max_holders, max_procs, killed, distinct) = watcher.join().unwrap();
    assert!(killed.is_some(), "a drainer was running and got SIGKILLed");
    assert_eq!(max_holders, 1, "exactly one lock holder at a time");
    // A drainer that released the lock may still be exiting while its
    // successor starts: never more than that one overlap.
    assert!(max_procs <= 2, "{max_procs} drainer processes at once");
    assert!(
        distinct < WRITERS * EVENTS / 2,
        "{distinct} drainers for {} events: one per event is a stampede",
        WRITERS * EVENTS
    );

    let out = memhook(home.path())
        .args(["drain", "--budget-secs", "60"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");

    // Every event exactly once, by call id, in the real SQLite file.
    let conn = rusqlite::Connection::open(dir.join("store.sqlite3")).unwrap();
    memhook_store::sqlite::register_functions(&conn).unwrap();
    let (total, distinct_calls): (i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT tool_call_id) FROM records",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(total as usize, WRITERS * EVENTS);
    assert_eq!(distinct_calls as usize, WRITERS * EVENTS);
    let mut st = conn.prepare("SELECT tool_call_id FROM records").unwrap();
    let calls: BTreeSet<String> = st
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for w in 0..WRITERS {
        for e in 0..EVENTS {
            assert!(calls.contains(&format!("w{w}-e{e}")), "w{w}-e{e} lost");
        }
    }

    let st = status(home.path());
    let s = sink_status(&st, "store");
    assert_eq!(s["enqueued"].as_u64(), Some((WRITERS * EVENTS) as u64));
    assert_eq!(s["delivered"].as_u64(), Some((WRITERS * EVENTS) as u64));
    assert_eq!(s["pending"], 0);
    assert_eq!(s["balanced"], true, "{st}");
}

fn scope(project: &str, max_chars: usize) -> memhook_core::scope::Scope {
    use memhook_core::scope::*;
    Scope {
        workspace: "default".into(),
        project: project.into(),
        workspace_source: Source::Fallback,
        project_source: Source::Fallback,
        marker: None,
        strategy: Strategy::Basename,
        settings: Settings {
            max_chars,
            ..Settings::default()
        },
        capture: CaptureConfig::Absent,
        warnings: vec![],
    }
}

fn start_event(session: &str) -> memhook_core::event::Event {
    memhook_core::event::Event {
        agent: memhook_core::event::Agent::ClaudeCode,
        kind: memhook_core::event::EventKind::SessionStart,
        native_name: "SessionStart".into(),
        session_id: Some(session.into()),
        cwd: Some("/work/api".into()),
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

#[test]
fn session_start_briefs_from_the_store_within_budget() {
    use memhook_sinks::session_start::session_start;
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    let sc = scope("api", 4000);
    let budget = Duration::from_millis(1500);

    // Empty store: nothing to say.
    assert_eq!(
        session_start(&dir, &SinkTarget::Store, &sc, &start_event("new"), budget),
        None
    );

    // A previous session still in the spool: session start delivers it first.
    let t0 = now_ms() - 60_000;
    let mut p = record(&key(1), "api", "prev", "user-prompt", t0);
    p.title = Some("Refactor the spool writer".into());
    enqueue(&dir, SinkTarget::Store, p, 0, t0);
    let mut fail = tool_record(&key(2), "api", "prev", "c2", false);
    fail.occurred_ms = t0 + 1;
    enqueue(&dir, SinkTarget::Store, fail, 0, t0);
    let b = session_start(&dir, &SinkTarget::Store, &sc, &start_event("new"), budget)
        .expect("a briefing");
    assert!(b.starts_with("memhook briefing for default/api: "), "{b}");
    assert!(
        b.contains("Goal (the last prompt): \"Refactor the spool writer\""),
        "{b}"
    );
    assert!(b.contains("shell 1 (1 failed)"), "{b}");
    assert!(Spool::open(&dir).unwrap().pending().unwrap().is_empty());
    // Not destructive: the next start sees the same handoff.
    let again = session_start(&dir, &SinkTarget::Store, &sc, &start_event("new2"), budget);
    assert_eq!(again.as_deref(), Some(b.as_str()));
    // Another project of the same store has nothing.
    assert_eq!(
        session_start(
            &dir,
            &SinkTarget::Store,
            &scope("web", 4000),
            &start_event("x"),
            budget
        ),
        None
    );
    // max_chars bounds the briefing.
    let small = session_start(
        &dir,
        &SinkTarget::Store,
        &scope("api", 500),
        &start_event("y"),
        budget,
    )
    .unwrap();
    assert!(small.chars().count() <= 500);

    // A drainer holding the lock: the wait is bounded, the briefing still comes
    // from what is stored, and the pending record stays for the drainer.
    enqueue(
        &dir,
        SinkTarget::Store,
        record(&key(3), "api", "prev", "stop", now_ms()),
        0,
        now_ms(),
    );
    // (lock_until: a process forked by another test thread may hold a copy
    // of a just-closed descriptor for a moment.)
    let held = drain::lock_until(&dir, Instant::now() + Duration::from_secs(10))
        .unwrap()
        .expect("lock free");
    let t = Instant::now();
    let b2 = session_start(
        &dir,
        &SinkTarget::Store,
        &sc,
        &start_event("new3"),
        Duration::from_millis(300),
    );
    let took = t.elapsed();
    drop(held);
    assert!(b2.is_some());
    assert_eq!(Spool::open(&dir).unwrap().pending().unwrap().len(), 1);
    // A hang guard, not a benchmark: 300 ms budget, 3 s ceiling.
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn session_start_degrades_to_nothing_against_a_black_holed_server() {
    use memhook_sinks::session_start::session_start;
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    // Accepts connections and never answers.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let held = Arc::new(std::sync::Mutex::new(Vec::new()));
    let h2 = held.clone();
    l.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let th = std::thread::spawn(move || {
        while !s2.load(Ordering::Relaxed) {
            if let Ok((c, _)) = l.accept() {
                h2.lock().unwrap().push(c);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let http = SinkTarget::Http { url };
    enqueue(
        &dir,
        http.clone(),
        record(&key(1), "api", "prev", "user-prompt", now_ms()),
        0,
        now_ms(),
    );
    let t = Instant::now();
    let b = session_start(
        &dir,
        &http,
        &scope("api", 4000),
        &start_event("new"),
        Duration::from_millis(600),
    );
    let took = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    th.join().unwrap();
    assert_eq!(b, None);
    // The record is kept for later, uncharged.
    let pending = Spool::open(&dir).unwrap().pending().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(Spool::load(&pending[0]).unwrap().attempts, 0);
    // A hang guard, not a benchmark: 600 ms budget, 4 s ceiling.
    assert!(took < Duration::from_secs(4), "took {took:?}");
}

#[test]
fn a_drainer_backing_off_from_a_dead_server_frees_the_lock_and_is_not_duplicated() {
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    // A port with nothing listening: connection refused.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let http = SinkTarget::Http {
        url: format!("http://127.0.0.1:{port}"),
    };
    enqueue(
        &dir,
        http.clone(),
        record(&key(1), "api", "s", "stop", now_ms()),
        0,
        now_ms(),
    );
    let out = memhook(home.path())
        .args(["drain", "--detach"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("started"));
    // The drainer fails its pass, then sleeps through the backoff.
    let until = Instant::now() + Duration::from_secs(20);
    let mut sleeping = false;
    while Instant::now() < until {
        let c = drain::load_counters(&dir, &http.id());
        if c.failed_passes > 0 && lock_holders(&dir.join(drain::WAIT_LOCK_FILE)) == 1 {
            sleeping = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pids = drainer_pids(&dir);
    assert!(sleeping, "drainer did not back off; pids {pids:?}");
    assert_eq!(pids.len(), 1);
    // The drain lock is free for a session start meanwhile...
    let free = drain::try_lock(&dir).unwrap();
    assert!(
        free.is_some(),
        "the sleeping drainer must not hold the drain lock"
    );
    drop(free);
    // ...and hooks do not start a second drainer.
    for _ in 0..5 {
        let out = memhook(home.path())
            .args(["drain", "--detach"])
            .output()
            .unwrap();
        assert!(String::from_utf8_lossy(&out.stdout).contains("already running"));
    }
    assert_eq!(drainer_pids(&dir), pids);
    // Unreachable: nothing charged, the record waits.
    let pending = Spool::open(&dir).unwrap().pending().unwrap();
    assert_eq!(Spool::load(&pending[0]).unwrap().attempts, 0);
    let st = status(home.path());
    let h = sink_status(&st, &http.id());
    assert_eq!(
        (h["pending"].as_u64(), h["balanced"].as_bool()),
        (Some(1), Some(true))
    );
    assert!(h["retry_after"].is_string(), "{st}");
    for pid in pids {
        kill(pid, libc::SIGKILL);
    }
}

/// Serialises the tests that load the machine most (or that must not be
/// slowed down by them).
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn hook_captures_reach_the_store_and_brief_the_next_session() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());

    // First session start on an empty store: nothing to say.
    let mut start = fixture_payload("SessionStart-startup", home.path());
    start["session_id"] = "session-a".into();
    let out = run_hook(home.path(), &start);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");

    let mut prompt = fixture_payload("UserPromptSubmit", home.path());
    prompt["session_id"] = "session-a".into();
    prompt["prompt"] = "Make the drainer survive SIGKILL\nwith details below".into();
    let mut bash = fixture_payload("PostToolUse-Bash", home.path());
    bash["session_id"] = "session-a".into();
    let mut stop = fixture_payload("Stop", home.path());
    stop["session_id"] = "session-a".into();
    stop["cwd"] = bash["cwd"].clone();
    for p in [&prompt, &bash, &stop] {
        let out = run_hook(home.path(), p);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    }
    // The hook started the background drainer; it empties the spool and exits.
    assert!(
        wait_delivered(&dir, Duration::from_secs(30)),
        "not delivered"
    );

    let cwd = bash["cwd"].as_str().unwrap().to_string();
    let out = memhook(home.path())
        .args(["recent", "--json"])
        .current_dir(&cwd)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let rows = json_lines(&out.stdout);
    let events: Vec<&str> = rows.iter().map(|r| r["event"].as_str().unwrap()).collect();
    for e in ["user-prompt", "post-tool-use", "stop", "session-start"] {
        assert!(events.contains(&e), "{e} missing from {events:?}");
    }
    let project = rows[0]["project"].as_str().unwrap().to_string();

    // The next session start is briefed with the previous session's work.
    let mut start2 = fixture_payload("SessionStart-startup", home.path());
    start2["session_id"] = "session-b".into();
    let out = run_hook(home.path(), &start2);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let env: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ctx = env["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no briefing in {env}"));
    assert_eq!(env["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(
        ctx.starts_with(&format!("memhook briefing for default/{project}: ")),
        "{ctx}"
    );
    // The whole goal, quoted (its second line too), and the conclusion.
    assert!(
        ctx.contains(
            "Goal (the last prompt): \"Make the drainer survive SIGKILL\\nwith details below\""
        ),
        "{ctx}"
    );
    assert!(ctx.contains("The agent concluded: \"All done.\""), "{ctx}");
    assert!(ctx.contains("shell 1"), "{ctx}");
    // Not destructive: a third start sees the same handoff.
    let mut start3 = start2.clone();
    start3["session_id"] = "session-c".into();
    let out = run_hook(home.path(), &start3);
    let env3: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(env3["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("")
        .contains("Make the drainer survive SIGKILL"));

    assert!(wait_delivered(&dir, Duration::from_secs(30)));
    let st = status(home.path());
    let s = sink_status(&st, "store");
    assert_eq!(s["enqueued"], 6);
    assert_eq!(s["delivered"], 6);
    assert_eq!(s["balanced"], true, "{st}");
}

/// A burst of hook events (issue 12): every record reaches the store, and
/// the drainer that served it (lingering for more, `DRAIN_LINGER`) leaves:
/// no drainer process and no lock on duty remain.
#[test]
fn a_burst_of_events_is_delivered_and_no_drainer_is_left_behind() {
    let _heavy = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    let names = ["UserPromptSubmit", "PreToolUse-Bash", "PostToolUse-Bash"];
    for round in 0..5 {
        for name in names {
            let mut p = fixture_payload(name, home.path());
            p["session_id"] = "burst".into();
            if name == "UserPromptSubmit" {
                p["prompt"] = format!("step {round}").into();
            }
            let out = run_hook(home.path(), &p);
            assert_eq!(out.status.code(), Some(0), "{out:?}");
        }
    }
    let until = Instant::now() + Duration::from_secs(60) + drain::DRAIN_LINGER;
    loop {
        let st = status(home.path());
        let s = sink_status(&st, "store");
        let (enqueued, delivered) = (s["enqueued"].as_u64(), s["delivered"].as_u64());
        let idle =
            drainer_pids(&dir).is_empty() && lock_holders(&dir.join(drain::RUN_LOCK_FILE)) == 0;
        if enqueued == delivered && idle {
            // Every prompt and tool result at least.
            assert!(enqueued >= Some(10), "{st}");
            assert_eq!(s["balanced"], true, "{st}");
            break;
        }
        assert!(
            Instant::now() < until,
            "delivered {delivered:?} of {enqueued:?}, drainers {:?}",
            drainer_pids(&dir)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Issue: a previous session holding only tool results without an outcome
/// (metadata-only records) made the activity query read a NULL sum, and the
/// next session start printed `{}` without a word. Both the all-outcome-less
/// session and a mixed one must brief; a compose error must say why.
#[test]
fn outcome_less_tool_results_still_brief_and_a_failed_briefing_says_why() {
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    let mut read = fixture_payload("PostToolUse-Read", home.path());
    let cwd = read["cwd"].as_str().unwrap().to_string();
    // An active policy, and a Read whose path is missing: metadata-only,
    // which stores the tool result with no outcome.
    std::fs::write(
        Path::new(&cwd).join(".ai-memory.toml"),
        "[capture]\nignore_paths = [\"secret/**\"]\n",
    )
    .unwrap();
    read["tool_input"] = serde_json::json!({});
    let session = |id: &str, payloads: &[&Value]| {
        for p in payloads {
            let mut p = (*p).clone();
            p["session_id"] = id.into();
            let out = run_hook(home.path(), &p);
            assert_eq!(out.status.code(), Some(0), "{out:?}");
        }
    };
    let brief = |id: &str| -> (String, String) {
        let mut start = fixture_payload("SessionStart-startup", home.path());
        start["session_id"] = id.into();
        start["cwd"] = cwd.clone().into();
        let out = run_hook(home.path(), &start);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let env: Value = serde_json::from_slice(&out.stdout).unwrap();
        let ctx = env["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap_or("")
            .to_string();
        (ctx, String::from_utf8_lossy(&out.stderr).into_owned())
    };

    session("only-bare", &[&read, &read]);
    assert!(wait_delivered(&dir, Duration::from_secs(30)));
    let rows = json_lines(
        &memhook(home.path())
            .args(["recent", "--json"])
            .current_dir(&cwd)
            .output()
            .unwrap()
            .stdout,
    );
    assert!(
        rows.iter()
            .any(|r| r["event"] == "post-tool-use" && r["tool"]["outcome"].is_null()),
        "the fixture must store an outcome-less tool result: {rows:?}"
    );
    let (ctx, stderr) = brief("next-1");
    assert!(ctx.contains("## Previous session"), "{ctx:?} {stderr}");
    assert!(ctx.contains("file 2"), "{ctx}");

    // A mixed session: outcome-less results beside a success and a failure.
    let bash = fixture_payload("PostToolUse-Bash", home.path());
    let fail = fixture_payload("PostToolUseFailure-Bash-exit1", home.path());
    session("mixed", &[&read, &bash, &fail, &read]);
    assert!(wait_delivered(&dir, Duration::from_secs(30)));
    let (ctx, stderr) = brief("next-2");
    assert!(ctx.contains("## Previous session"), "{ctx:?} {stderr}");
    assert!(ctx.contains("shell 2 (1 failed)"), "{ctx}");
    assert!(ctx.contains("file 2"), "{ctx}");
    // Claude Code puts `Exit code 1` before the output: the briefing
    // gives the status and the output's line, not the status alone.
    assert!(
        ctx.contains(
            "- Failed, not fixed since: Bash \"echo failing >&2; exit 1\", exit 1: \"failing\""
        ),
        "{ctx}"
    );
    let st = status(home.path());
    assert!(st["last_briefing_error"].is_null(), "{st}");

    // A briefing that cannot be composed (the store is not a database):
    // still `{}` and exit 0, but one `memhook:` line says why, and status
    // remembers it.
    assert!(wait_delivered(&dir, Duration::from_secs(30)));
    let db = dir.join(memhook_store::sqlite::STORE_FILE);
    for ext in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{ext}", db.display()));
    }
    std::fs::write(&db, vec![b'x'; 8192]).unwrap();
    let (ctx, stderr) = brief("next-3");
    assert_eq!(ctx, "");
    let line = stderr
        .lines()
        .find(|l| l.starts_with("memhook: no briefing this session: "))
        .unwrap_or_else(|| panic!("no stderr line saying why: {stderr:?}"));
    assert!(line.contains("store.sqlite3"), "{line}");
    let st = status(home.path());
    let e = st["last_briefing_error"]
        .as_str()
        .unwrap_or_else(|| panic!("{st}"));
    assert!(e.contains("store.sqlite3"), "{e}");
    assert!(st["last_briefing_error_at"].is_string(), "{st}");
    let text = memhook(home.path()).arg("status").output().unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).contains("last briefing error"),
        "{text:?}"
    );
}

/// `recent` and `search` never answer with silence: an empty result names
/// the scope that was searched and the way to widen it, an unreadable data
/// dir is an error, a limit past the store's cap is refused with the cap, and
/// a configured server is named as where new events go.
#[test]
fn recent_and_search_say_what_they_looked_at() {
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    let api = home.path().join("api");
    std::fs::create_dir(&api).unwrap();
    let run = |args: &[&str], env: Option<(&str, &str)>| {
        let mut c = memhook(home.path());
        c.args(args).current_dir(&api);
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };

    // Nothing stored yet.
    let (code, out, err) = run(&["recent"], None);
    assert_eq!((code, out.as_str()), (Some(0), ""));
    assert!(err.contains("nothing has been stored in"), "{err}");

    enqueue(
        &dir,
        SinkTarget::Store,
        record(&key(1), "web", "s1", "user-prompt", now_ms()),
        0,
        now_ms(),
    );
    assert!(memhook(home.path())
        .arg("drain")
        .status()
        .unwrap()
        .success());

    // Stored, but not in this directory's project: say where we looked.
    let (code, out, err) = run(&["recent"], None);
    assert_eq!((code, out.as_str()), (Some(0), ""));
    assert!(
        err.contains(
            "no records in default/api (only this project; `--all` looks in every project)"
        ),
        "{err}"
    );
    let (_, out, err) = run(&["recent", "--all"], None);
    assert!(out.contains("default/web"), "{out}");
    assert!(!err.contains("no records"), "{err}");
    let (code, _, err) = run(&["search", "absent", "--all"], None);
    assert_eq!(code, Some(0));
    assert!(
        err.contains("nothing matched every word of the query in any project"),
        "{err}"
    );
    let (_, _, err) = run(&["search", "--", "-- *"], None);
    assert!(err.contains("no word to search for"), "{err}");

    // The cap is said, not applied in silence.
    let (code, _, err) = run(&["recent", "--limit", "5000"], None);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("from 1 to 1000"), "{err}");
    let (code, _, _) = run(&["search", "x", "--limit", "0"], None);
    assert_eq!(code, Some(2));

    // A server configured for hooks: the local listing says so.
    let (_, _, err) = run(
        &["recent", "--all"],
        Some(("AI_MEMORY_HOOK_URL", "http://127.0.0.1:9")),
    );
    assert!(err.contains("AI_MEMORY_HOOK_URL is set"), "{err}");

    // A data dir that cannot be read is an error, not an empty answer.
    let file = home.path().join("not-a-dir");
    std::fs::write(&file, "x").unwrap();
    for cmd in [vec!["recent"], vec!["search", "x"]] {
        let mut args = cmd.clone();
        let bad = file.join("data");
        args.extend(["--data-dir", bad.to_str().unwrap()]);
        let (code, out, err) = run(&args, None);
        assert_eq!(code, Some(2), "{cmd:?}: {out} {err}");
        assert!(err.contains("cannot read the store"), "{err}");
    }
}

/// `memhook drain` right after a hook (README's first command): the hook's
/// background drainer holds the lock and delivers the record. The foreground
/// drain waits for it and says what it delivered, instead of a bare
/// "delivered 0" that reads like a failure.
#[test]
fn drain_reports_what_the_running_drainer_delivered_while_it_waited() {
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    // Create the store, then hold a write transaction on it so the
    // background drainer (which holds the drain lock) has to wait.
    memhook_store::sqlite::Store::open(&dir).unwrap();
    let db = rusqlite::Connection::open(dir.join("store.sqlite3")).unwrap();
    db.execute_batch("BEGIN IMMEDIATE").unwrap();
    for n in 1..=3 {
        enqueue(
            &dir,
            SinkTarget::Store,
            record(&key(n), "api", "s1", "user-prompt", now_ms()),
            0,
            now_ms(),
        );
    }
    let mut bg = memhook(home.path())
        .args(["drain", "--background"])
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(20);
    while !drain::drainer_running(&dir) && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        drain::drainer_running(&dir),
        "the background drainer never took the lock"
    );
    let fg = memhook(home.path())
        .arg("drain")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    db.execute_batch("COMMIT").unwrap();
    let out = fg.wait_with_output().unwrap();
    let _ = bg.wait();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout} {stderr}");
    assert!(
        stderr.contains("a background drainer is already delivering; waiting for it"),
        "{stderr}"
    );
    assert!(
        stdout.contains("delivered 3 (3 by the background drainer that was already running), dropped 0, 0 pending"),
        "{stdout}"
    );
}

/// `memhook drain --budget-secs N` is a deadline, a request in flight
/// included: against a server that accepts and never answers, a 1 s budget
/// ends after about 1 s (it used to wait out the 3 s request timeout), and
/// the record stays pending, uncharged.
#[test]
fn drain_budget_is_a_deadline_even_for_a_request_in_flight() {
    let home = tempfile::tempdir().unwrap();
    let dir = data_dir(home.path());
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    l.set_nonblocking(true).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let s2 = stop.clone();
    let th = std::thread::spawn(move || {
        let mut held = Vec::new();
        let until = Instant::now() + Duration::from_secs(30);
        while !s2.load(Ordering::Relaxed) && Instant::now() < until {
            if let Ok((c, _)) = l.accept() {
                held.push(c);
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    enqueue(
        &dir,
        SinkTarget::Http { url },
        record(&key(1), "api", "s", "user-prompt", now_ms()),
        0,
        now_ms(),
    );
    let t = Instant::now();
    let out = memhook(home.path())
        .args(["drain", "--budget-secs", "1"])
        .output()
        .unwrap();
    let took = t.elapsed();
    stop.store(true, Ordering::Relaxed);
    th.join().unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    // The request timeout is 3 s: finishing well before it shows the budget
    // cut the request short (a hang guard with room for a loaded machine).
    assert!(took < Duration::from_millis(2_700), "took {took:?}");
    let pending = Spool::open(&dir).unwrap().pending().unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!(Spool::load(&pending[0]).unwrap().attempts, 0);
}
