//! The team-server storm (issue 14): three `memhook serve` processes on one
//! PostgreSQL database; 64 agents (hook processes, 20 events each) on 16
//! machines (data dirs), each machine delivering to one of the servers
//! through the HTTP sink (`--server-url`, its own background drainers);
//! one server SIGKILLed and started again on its address, the database
//! restarted once, both while the hooks run. After `memhook drain` on every
//! machine: every event stored exactly once, none lost, none dropped, and
//! the session roll-ups equal a recount.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::Db;
use crate::support::binaries::memhook;
use crate::support::fixtures::fixture;
use crate::support::serve::Serve;

const SERVERS: usize = 3;
const MACHINES: usize = 16;
const AGENTS_PER_MACHINE: usize = 4;
const EVENTS_PER_AGENT: usize = 20;
const TOTAL: usize = MACHINES * AGENTS_PER_MACHINE * EVENTS_PER_AGENT;
/// The owner token every server and machine shares.
const TOKEN: &str = "storm-owner-token";
/// Longest the final drains may take together.
const DRAIN_DEADLINE: Duration = Duration::from_secs(180);

/// A Claude Code fixture payload of `name` for one agent's event `n`:
/// its own session, a prompt text or a tool call id of its own (every
/// event is a distinct record).
fn payload(name: &str, home: &Path, session: &str, n: usize) -> Value {
    let dir = home.join("projects/storm");
    let text = std::fs::read_to_string(fixture(&format!("agents/claude-code/2.1.328/{name}.json")))
        .unwrap()
        .replace("/home/dev/projects/demo", dir.to_str().unwrap());
    let mut v: Value = serde_json::from_str(&text).unwrap();
    std::fs::create_dir_all(v["cwd"].as_str().unwrap()).unwrap();
    v["session_id"] = session.into();
    if v.get("prompt").is_some() {
        v["prompt"] = format!("storm prompt {session} {n}").into();
    }
    if v.get("tool_use_id").is_some() {
        v["tool_use_id"] = format!("toolu_{session}_{n}").into();
    }
    v
}

/// One hook process for `p`, delivering to `url` (the hook starts its
/// machine's background drainer, as in real use).
fn hook(home: &Path, url: &str, p: &Value) {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(p.to_string().as_bytes()).unwrap();
    std::io::Seek::rewind(&mut f).unwrap();
    let out = memhook(home)
        .args(["hook", "--agent", "claude-code", "--server-url", url])
        .env("AI_MEMORY_AUTH_TOKEN", TOKEN)
        .current_dir(p["cwd"].as_str().unwrap())
        .stdin(f)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// `memhook drain` on `home` until its spool is empty (exit 0).
fn drain_until_empty(home: &Path, deadline: Instant) {
    loop {
        let out = memhook(home)
            .arg("drain")
            .env("AI_MEMORY_AUTH_TOKEN", TOKEN)
            .output()
            .unwrap();
        if out.status.success() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} still has records: {}",
            home.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// Wait (bounded) until `done` counts at least `n` hook runs.
fn until(done: &AtomicUsize, n: usize) {
    let start = Instant::now();
    while done.load(Ordering::SeqCst) < n {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "the hooks stalled"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn three_servers_one_database_a_kill_and_a_restart_lose_and_duplicate_nothing() {
    let Some(db) = Db::pg("three_servers_one_database_storm") else {
        return;
    };
    let Db::Pg(cluster, _) = &db else {
        unreachable!()
    };
    let env = db.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server_homes: Vec<_> = (0..SERVERS).map(|_| tempfile::tempdir().unwrap()).collect();
    // Servers are started (and restarted) from this thread: a test server
    // dies with the thread that spawned it.
    let mut servers: Vec<Serve> = server_homes
        .iter()
        .map(|h| Serve::start_env(h.path(), Some(TOKEN), "127.0.0.1:0", &[], &env))
        .collect();
    let urls: Vec<String> = servers.iter().map(Serve::url).collect();
    let machines: Vec<_> = (0..MACHINES)
        .map(|_| tempfile::tempdir().unwrap())
        .collect();
    let done = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for (m, home) in machines.iter().enumerate() {
            for a in 0..AGENTS_PER_MACHINE {
                let (home, url, done) = (home.path(), &urls[m % SERVERS], &done);
                scope.spawn(move || {
                    let session = format!("storm-m{m}-a{a}");
                    for n in 0..EVENTS_PER_AGENT {
                        let name = ["UserPromptSubmit", "PostToolUse-Bash"][n % 2];
                        hook(home, url, &payload(name, home, &session, n));
                        done.fetch_add(1, Ordering::SeqCst);
                    }
                });
            }
        }
        // Meanwhile: kill one server, start it again on its address; then
        // restart the database.
        until(&done, TOTAL / 5);
        let victim = 1;
        let addr = servers[victim].addr();
        servers[victim].stop_with(libc::SIGKILL);
        until(&done, TOTAL * 2 / 5);
        servers[victim] = Serve::start_env(
            server_homes[victim].path(),
            Some(TOKEN),
            &addr.to_string(),
            &[],
            &env,
        );
        until(&done, TOTAL * 3 / 5);
        cluster.stop();
        std::thread::sleep(Duration::from_secs(1));
        cluster.restart();
    });
    let deadline = Instant::now() + DRAIN_DEADLINE;
    for home in &machines {
        drain_until_empty(home.path(), deadline);
    }
    // Nothing dropped on any machine, and every sink balanced.
    for home in &machines {
        let out = memhook(home.path())
            .args(["status", "--json"])
            .output()
            .unwrap();
        let status: Value = serde_json::from_slice(&out.stdout).unwrap();
        for sink in status["sinks"].as_array().unwrap() {
            assert_eq!(sink["pending"], 0, "{sink}");
            assert_eq!(sink["dropped_total"], 0, "{sink}");
            assert_eq!(sink["balanced"], true, "{sink}");
        }
    }
    // Every event once: 64 sessions of 20 records, no key twice.
    let per_session = db.rows(
        &servers[0].data,
        "SELECT session_id || ' ' || count(*) || ' ' || count(DISTINCT key) FROM records
         GROUP BY session_id ORDER BY session_id",
    );
    assert_eq!(
        per_session.len(),
        MACHINES * AGENTS_PER_MACHINE,
        "{per_session:?}"
    );
    for line in &per_session {
        assert!(
            line.ends_with(&format!(" {EVENTS_PER_AGENT} {EVENTS_PER_AGENT}")),
            "{line}"
        );
    }
    // Each prompt text is there once (the keys are the hooks' own).
    let prompts = db.rows(
        &servers[0].data,
        "SELECT count(*) || ' ' || count(DISTINCT body) FROM records
         WHERE event = 'user-prompt'",
    );
    assert_eq!(prompts, [format!("{0} {0}", TOTAL / 2)]);
    let (rolled, recount) = db.rollups_and_recount(&servers[0].data);
    assert_eq!(rolled, recount);
}
