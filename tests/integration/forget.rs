//! `memhook forget` through the real binary: a dry run changes nothing; with
//! `--yes` the session's text is in no file of the data dir (store, WAL,
//! spool, counters, logs), its pending spool files are gone and counted, and
//! the rest of the memory is intact.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::binaries::memhook;
use crate::support::files::files_holding;
use crate::support::fixtures::claude_payload as payload;

const SENTINEL: &str = "qzvforgetmesentinel";

fn hook(home: &Path, p: &Value, spool_only: bool) {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(p.to_string().as_bytes()).unwrap();
    std::io::Seek::rewind(&mut f).unwrap();
    let mut c = memhook(home);
    c.args(["hook", "--agent", "claude-code"])
        .stdin(f)
        .current_dir(p["cwd"].as_str().unwrap());
    if spool_only {
        c.env("MEMHOOK_NO_HOOK_DELIVERY", "1");
    }
    assert!(c.output().unwrap().status.success());
}

fn run(home: &Path, args: &[&str]) -> (i32, String, String) {
    let out = memhook(home).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn forget_a_session_removes_its_text_from_every_file_and_keeps_the_books() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    // Session "doomed": a prompt and a tool result carrying the sentinel.
    let mut prompt = payload("UserPromptSubmit", home.path(), "doomed");
    prompt["prompt"] = format!("please remember {SENTINEL} for me").into();
    let mut bash = payload("PostToolUse-Bash", home.path(), "doomed");
    bash["tool_response"]["stdout"] = format!("{SENTINEL}\n{}", "line\n".repeat(200)).into();
    // Session "kept": ordinary work.
    let kept = payload("UserPromptSubmit", home.path(), "kept");
    for p in [&prompt, &bash, &kept] {
        hook(home.path(), p, true);
    }
    assert!(memhook(home.path())
        .arg("drain")
        .status()
        .unwrap()
        .success());
    // One more record of the doomed session still waiting in the spool.
    let mut late = payload("UserPromptSubmit", home.path(), "doomed");
    late["prompt"] = format!("and {SENTINEL} again").into();
    hook(home.path(), &late, true);
    assert!(!files_holding(&data, SENTINEL).is_empty(), "seeded");

    // A dry run says what would go and changes nothing.
    let (code, out, err) = run(home.path(), &["forget", "--session", "doomed"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("would forget 2 stored records (emptying 1 session and 0 projects) and 1 pending record: session doomed"),
        "{out}"
    );
    assert!(out.contains("--yes"), "{out}");
    let (_, out, _) = run(home.path(), &["search", SENTINEL, "--all"]);
    assert!(out.contains("user-prompt"), "{out}");

    let (code, out, err) = run(home.path(), &["forget", "--session", "doomed", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("forgot 2 stored records (emptying 1 session and 0 projects) and 1 pending record: session doomed"),
        "{out}"
    );
    assert_eq!(files_holding(&data, SENTINEL), Vec::<PathBuf>::new());
    let (_, out, _) = run(home.path(), &["search", SENTINEL, "--all"]);
    assert_eq!(out, "");
    let (_, out, _) = run(home.path(), &["recent", "--all", "--json"]);
    let sessions: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["session_id"].to_string())
        .collect();
    assert_eq!(sessions, vec!["\"kept\"".to_string()]);

    // The books balance: the pending record is counted as forgotten.
    let (_, out, _) = run(home.path(), &["status", "--json"]);
    let st: Value = serde_json::from_str(&out).unwrap();
    let store = &st["sinks"][0];
    assert_eq!(store["balanced"], true, "{st}");
    assert_eq!(store["dropped"]["forgotten"], 1, "{st}");
    assert_eq!(store["pending"], 0, "{st}");

    // The forget is logged without the text.
    let (_, out, _) = run(home.path(), &["forget", "--history"]);
    assert!(
        out.contains("forgot 2 records, 1 session, 0 projects: session doomed"),
        "{out}"
    );
    assert!(!out.contains(SENTINEL));
}

#[test]
fn forget_refuses_what_it_cannot_read_and_needs_a_selector() {
    let home = tempfile::tempdir().unwrap();
    for (args, want) in [
        (vec!["forget"], "say what to forget"),
        (vec!["forget", "--project", "api"], "WORKSPACE/PROJECT"),
        (
            vec!["forget", "--project", "default/Api"],
            "not a valid name",
        ),
        (vec!["forget", "--before", "last week"], "UTC date"),
    ] {
        let (code, _, err) = run(home.path(), &args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    let (code, _, _) = run(
        home.path(),
        &["forget", "--record", "abc", "--session", "x"],
    );
    assert_eq!(code, 2);
    // Nothing stored: says so, creates nothing.
    let (code, out, _) = run(home.path(), &["forget", "--session", "x", "--yes"]);
    assert_eq!(code, 0);
    assert!(out.contains("nothing is stored"), "{out}");
    assert!(!home.path().join(".memhook-data").exists());
}

/// Seed a data dir with the session "doomed" (the sentinel in a prompt and
/// a long tool result) and the session "kept", delivered into the store.
fn seed_doomed(home: &Path) {
    let mut prompt = payload("UserPromptSubmit", home, "doomed");
    prompt["prompt"] = format!("please remember {SENTINEL} for me").into();
    let mut bash = payload("PostToolUse-Bash", home, "doomed");
    bash["tool_response"]["stdout"] = format!("{SENTINEL}\n{}", "line\n".repeat(200)).into();
    let kept = payload("UserPromptSubmit", home, "kept");
    for p in [&prompt, &bash, &kept] {
        hook(home, p, true);
    }
    assert!(memhook(home).arg("drain").status().unwrap().success());
}

/// The files of the store (database and WAL) whose raw bytes hold the sentinel.
fn store_files_holding(data: &Path) -> Vec<String> {
    ["store.sqlite3", "store.sqlite3-wal"]
        .iter()
        .filter(|f| {
            std::fs::read(data.join(f))
                .unwrap_or_default()
                .windows(SENTINEL.len())
                .any(|w| w == SENTINEL.as_bytes())
        })
        .map(|f| f.to_string())
        .collect()
}

/// A second connection holding a read transaction on the store (as `memhook
/// serve`, `memhook search` or a `sqlite3` shell would while forget runs).
fn reader(data: &Path) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(data.join("store.sqlite3")).unwrap();
    memhook_store::sqlite::register_functions(&c).unwrap();
    c.execute_batch("BEGIN").unwrap();
    let n: i64 = c
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .unwrap();
    assert!(n > 0);
    c
}

fn run_env(home: &Path, args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut c = memhook(home);
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Shorter than the real wait, so the tests do not sit through it.
const SHORT_WAIT: (&str, &str) = ("MEMHOOK_FORGET_READER_WAIT_MS", "300");

#[test]
fn forget_behind_a_reader_records_the_cleanup_and_the_next_run_finishes_it() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    seed_doomed(home.path());
    let r = reader(&data);
    let args = ["forget", "--session", "doomed", "--yes"];
    let (code, out, err) = run_env(home.path(), &args, &[SHORT_WAIT]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("forgot 2 stored records"), "{out}");
    // The truth: the text is still in the store's files, and it says so,
    // with what will finish the job.
    assert!(!store_files_holding(&data).is_empty(), "a reader held it");
    assert!(
        err.contains("another process is reading the store")
            && err.contains("forget-pending")
            && err.contains("next `memhook forget` or `memhook drain`"),
        "{err}"
    );
    assert!(data.join("forget-pending").exists());
    // Still held: a re-run cannot finish either, and says so again.
    let (code, _, err) = run_env(home.path(), &args, &[SHORT_WAIT]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("still pending"), "{err}");
    assert!(!store_files_holding(&data).is_empty());
    // The reader lets go; the re-run the message suggested does the cleanup.
    drop(r);
    let (code, out, err) = run_env(home.path(), &args, &[SHORT_WAIT]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("forgot 0 stored records"), "{out}");
    assert!(
        err.contains("finished the cleanup an earlier forget left pending"),
        "{err}"
    );
    assert_eq!(store_files_holding(&data), Vec::<String>::new());
    assert_eq!(files_holding(&data, SENTINEL), Vec::<PathBuf>::new());
    assert!(!data.join("forget-pending").exists());
    // Nothing left to say the next time.
    let (_, _, err) = run_env(home.path(), &args, &[SHORT_WAIT]);
    assert!(!err.contains("cleanup"), "{err}");
}

#[test]
fn drain_finishes_a_pending_forget_cleanup() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    seed_doomed(home.path());
    let r = reader(&data);
    let (code, _, err) = run_env(
        home.path(),
        &["forget", "--session", "doomed", "--yes"],
        &[SHORT_WAIT],
    );
    assert_eq!(code, 0, "{err}");
    assert!(data.join("forget-pending").exists(), "{err}");
    drop(r);
    let (code, _, err) = run_env(home.path(), &["drain"], &[]);
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("finished the cleanup an earlier forget left pending"),
        "{err}"
    );
    assert_eq!(files_holding(&data, SENTINEL), Vec::<PathBuf>::new());
    assert!(!data.join("forget-pending").exists());
}

#[test]
fn forget_waits_for_a_short_reader_and_finishes_at_once() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    seed_doomed(home.path());
    let r = reader(&data);
    // The reader lets go well within forget's wait.
    let t = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(700));
        drop(r);
    });
    let (code, out, err) = run(home.path(), &["forget", "--session", "doomed", "--yes"]);
    t.join().unwrap();
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("forgot 2 stored records"), "{out}");
    assert!(!err.contains("reading the store"), "{err}");
    assert_eq!(files_holding(&data, SENTINEL), Vec::<PathBuf>::new());
    assert!(!data.join("forget-pending").exists());
}

/// Write `/MEMORY.md` and `/notes/x.md` into the project `default/<name>`
/// through `memhook mcp` (the way agents write them).
fn write_memory(home: &Path, cwd: &Path) {
    let lines: Vec<String> = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "memory_write", "arguments": {"path": "/MEMORY.md", "content": format!("index {SENTINEL}"), "if_version": "new"}}}),
        serde_json::json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "memory_write", "arguments": {"path": "/notes/x.md", "content": "notes", "if_version": "new"}}}),
    ]
    .iter()
    .map(|v| v.to_string())
    .collect();
    let mut cmd = memhook(home);
    cmd.arg("mcp").arg("--cwd").arg(cwd);
    let out = crate::support::binaries::run_with_stdin(cmd, (lines.join("\n") + "\n").as_bytes());
    assert!(out.status.success());
    let oks = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["result"]["structuredContent"]["outcome"] == "ok")
        .count();
    assert_eq!(oks, 2, "{}", String::from_utf8_lossy(&out.stdout));
}

#[test]
fn forget_project_says_what_happens_to_memory_documents_and_memory_deletes_them() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    seed_doomed(home.path());
    let cwd = PathBuf::from(
        payload("UserPromptSubmit", home.path(), "x")["cwd"]
            .as_str()
            .unwrap(),
    );
    write_memory(home.path(), &cwd);
    let (_, out, _) = run(home.path(), &["recent", "--all", "--json"]);
    let first: Value = serde_json::from_str(out.lines().next().unwrap()).unwrap();
    let project = format!(
        "{}/{}",
        first["workspace"].as_str().unwrap(),
        first["project"].as_str().unwrap()
    );
    let docs = data.join("memory").join(&project);
    assert!(docs.join("MEMORY.md").exists());

    // Dry run: the records would go, the memory documents would stay, and it says so.
    let (code, out, err) = run(home.path(), &["forget", "--project", &project]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("its 2 memory documents"), "{out}");
    assert!(
        out.contains("are kept; add --memory to delete them too"),
        "{out}"
    );
    // Without --memory: kept, and the result says so.
    let (code, out, err) = run(home.path(), &["forget", "--project", &project, "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kept its 2 memory documents"), "{out}");
    assert!(docs.join("MEMORY.md").exists());
    // With --memory: the dry run says they would go, --yes deletes them.
    let (code, out, err) = run(home.path(), &["forget", "--project", &project, "--memory"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("would delete its 2 memory documents"), "{out}");
    assert!(out.contains("--yes"), "{out}");
    assert!(docs.join("MEMORY.md").exists(), "a dry run changes nothing");
    let (code, out, err) = run(
        home.path(),
        &["forget", "--project", &project, "--memory", "--yes"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("deleted its 2 memory documents"), "{out}");
    assert!(!docs.exists());
    assert_eq!(files_holding(&data, SENTINEL), Vec::<PathBuf>::new());
    // --memory needs a whole project.
    let (code, _, err) = run(home.path(), &["forget", "--memory", "--session", "x"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = run(
        home.path(),
        &[
            "forget",
            "--project",
            &project,
            "--before",
            "2026-01-01",
            "--memory",
        ],
    );
    assert_eq!(code, 2, "{err}");
}

/// `forget --session` takes the short id `memhook recent` prints (8 or
/// more characters) when one stored session starts with it, and refuses a
/// prefix two sessions share, naming them and forgetting nothing.
#[test]
fn forget_session_accepts_a_unique_prefix_and_refuses_an_ambiguous_one() {
    let home = tempfile::tempdir().unwrap();
    let a = "371ef597-1111-4a4a-8b8b-000000000001";
    let b = "371ef597-2222-4a4a-8b8b-000000000002";
    let c = "9c0ffee5-3333-4a4a-8b8b-000000000003";
    for s in [a, b, c] {
        let mut p = payload("UserPromptSubmit", home.path(), s);
        p["prompt"] = format!("words of {s}").into();
        hook(home.path(), &p, true);
    }
    assert!(memhook(home.path())
        .arg("drain")
        .status()
        .unwrap()
        .success());
    // Shared by a and b: refused, nothing forgotten.
    let (code, out, err) = run(home.path(), &["forget", "--session", "371ef597", "--yes"]);
    assert_eq!(code, 2, "{out} {err}");
    assert!(
        err.contains("--session 371ef597: 2 stored sessions start with it"),
        "{err}"
    );
    assert!(
        err.contains(a) && err.contains(b) && err.contains("give more of the id"),
        "{err}"
    );
    // Unique: completed, and said so.
    let (code, out, err) = run(home.path(), &["forget", "--session", "371ef597-2", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains(&format!("session {b}")), "{err}");
    assert!(
        out.contains(
            "forgot 1 stored record (emptying 1 session and 0 projects) and 0 pending records"
        ),
        "{out}"
    );
    assert!(out.contains(&format!("session {b}")), "{out}");
    let (_, out, _) = run(home.path(), &["forget", "--session", "9c0ffee5"]);
    assert!(
        out.contains("would forget 1 stored record (") && out.contains(c),
        "{out}"
    );
    let (_, out, _) = run(home.path(), &["recent", "--all", "--json"]);
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(!out.contains(b), "{out}");
}

#[test]
fn the_background_drainer_applies_retention_when_idle_and_the_hook_does_not() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    // A tool call of 40 days ago (the default keeps tool calls 30 days).
    let old_ms = memhook_core::timefmt::now_ms() - 40 * 86_400_000;
    let line = serde_json::json!({
        "v": 1, "key": "c".repeat(32),
        "occurred_at": memhook_core::timefmt::rfc3339_ms(old_ms),
        "workspace": "default", "project": "old", "agent": "claude-code",
        "event": "pre-tool-use", "native_event": "PreToolUse",
        "disposition": "keep", "title": "Bash (shell)"
    });
    let file = home.path().join("old.jsonl");
    std::fs::write(&file, format!("{line}\n")).unwrap();
    let (code, _, err) = run(home.path(), &["import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let count = || -> i64 {
        let db = rusqlite::Connection::open(data.join("store.sqlite3")).unwrap();
        memhook_store::sqlite::register_functions(&db).unwrap();
        db.query_row("SELECT count(*) FROM records", [], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(count(), 1);
    // The hook itself (spool only) removes nothing.
    hook(
        home.path(),
        &payload("UserPromptSubmit", home.path(), "s"),
        true,
    );
    assert_eq!(count(), 1);
    // The drainer a hook starts delivers, then, idle, removes the old call.
    hook(
        home.path(),
        &payload("UserPromptSubmit", home.path(), "s"),
        false,
    );
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let mut left = count();
    while left != 2 && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = count();
    }
    assert_eq!(left, 2, "the two prompts stay and the old call goes");
    let removed: i64 = rusqlite::Connection::open(data.join("store.sqlite3"))
        .unwrap()
        .query_row(
            "SELECT removed FROM retention WHERE class = 'tool-calls'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(removed, 1);
    // `memhook status` shows the store and what retention removed.
    let (code, out, err) = run(home.path(), &["status"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(", 2 records, oldest "), "{out}");
    assert!(
        out.contains("retention removed: tool-calls 1, tool-results 0, everything-else 0 (last "),
        "{out}"
    );
    let (_, out, _) = run(home.path(), &["status", "--json"]);
    let st: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(st["store"]["records"], 2);
    assert_eq!(st["store"]["retention_removed"]["tool-calls"], 1);
    assert!(st["store"]["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn an_idle_drainer_runs_at_most_its_maintain_slices_of_retention() {
    use memhook_delivery::drain::MAINTAIN_SLICES;
    use memhook_store::sqlite::retention::RETENTION_SLICE;
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    // One more old tool call than one idle moment removes.
    let old = MAINTAIN_SLICES * RETENTION_SLICE + 1;
    let old_ms = memhook_core::timefmt::now_ms() - 40 * 86_400_000;
    let mut lines = String::new();
    for i in 0..old {
        let line = serde_json::json!({
            "v": 1, "key": format!("{i:032x}"),
            "occurred_at": memhook_core::timefmt::rfc3339_ms(old_ms + i as u64),
            "workspace": "default", "project": "old", "agent": "claude-code",
            "event": "pre-tool-use", "native_event": "PreToolUse",
            "disposition": "keep", "title": "Bash (shell)"
        });
        lines.push_str(&format!("{line}\n"));
    }
    let file = home.path().join("old.jsonl");
    std::fs::write(&file, lines).unwrap();
    let (code, _, err) = run(home.path(), &["import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let removed = || -> i64 {
        rusqlite::Connection::open(data.join("store.sqlite3"))
            .unwrap()
            .query_row("SELECT coalesce(sum(removed), 0) FROM retention", [], |r| {
                r.get(0)
            })
            .unwrap()
    };
    hook(
        home.path(),
        &payload("UserPromptSubmit", home.path(), "s"),
        false,
    );
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let want = (MAINTAIN_SLICES * RETENTION_SLICE) as i64;
    while removed() < want && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Wait for the drainer to finish its idle moment, then look again.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(removed(), want, "one idle moment, MAINTAIN_SLICES slices");
}

/// `forget --yes --rebuild` rebuilds the store's file after forgetting
/// (no free page is left, so no page of the old file), and says so;
/// `--rebuild` needs `--yes` and is the SQLite store's only.
#[test]
fn forget_rebuild_rebuilds_the_file_and_needs_yes() {
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    seed_doomed(home.path());
    let (code, _, err) = run(home.path(), &["forget", "--session", "doomed", "--rebuild"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--yes"), "{err}");
    let (code, _, err) = run(
        home.path(),
        &[
            "forget",
            "--session",
            "doomed",
            "--yes",
            "--rebuild",
            "--database",
            "postgres://memhook@127.0.0.1:9/memhook",
        ],
    );
    assert_ne!(code, 0);
    assert!(
        err.contains("--rebuild rebuilds the data dir's SQLite store"),
        "{err}"
    );
    let (code, out, err) = run(
        home.path(),
        &["forget", "--session", "doomed", "--yes", "--rebuild"],
    );
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("memhook forget: rebuilt "), "{out}");
    assert_eq!(store_files_holding(&data), Vec::<String>::new());
    let free: i64 = rusqlite::Connection::open(data.join("store.sqlite3"))
        .unwrap()
        .query_row("PRAGMA freelist_count", [], |r| r.get(0))
        .unwrap();
    assert_eq!(free, 0);
}
