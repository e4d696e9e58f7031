//! Briefings kept ready (docs/architecture.md, "Briefings kept ready"): a
//! session start that finds one that still holds is answered by `memhook`
//! alone, and anything that could make it wrong — a forget, records of
//! another session still in the spool, a new `MEMORY.md`, a resumed
//! session — makes `memhook` ask `memhook-brief` instead.
//!
//! Each test proves which path answered by taking `memhook-brief`,
//! `memhook-session` and `memhook-cli` away from the install: `memhook`
//! alone can only answer from a kept briefing, so without one the agent
//! gets `{}`.

use std::fs;
use std::path::PathBuf;
use std::process::Output;
use std::time::Duration;

use crate::support::binaries::{install_copy, installed, run_with_stdin};
use crate::support::{files, process};

/// An install of the four binaries in a temp HOME with a project whose
/// marker names it.
struct Install {
    home: tempfile::TempDir,
    exe: PathBuf,
}

const SENTINEL: &str = "zqxkeptparser";

impl Install {
    fn new() -> Install {
        let home = tempfile::tempdir().unwrap();
        let proj = home.path().join("proj");
        fs::create_dir_all(&proj).unwrap();
        fs::write(proj.join(".ai-memory.toml"), "project = \"demo\"\n").unwrap();
        let exe = install_copy(&home.path().join("bin"));
        Install { home, exe }
    }
    fn data(&self) -> PathBuf {
        self.home.path().join("data")
    }
    fn proj(&self) -> PathBuf {
        self.home.path().join("proj")
    }
    /// One hook call of Claude Code; extra environment as given.
    fn hook(&self, event: &str, payload: serde_json::Value, env: &[(&str, &str)]) -> Output {
        self.hook_by(&self.exe, event, payload, env)
    }
    /// [`Install::hook`] by the `memhook` at `exe`.
    fn hook_by(
        &self,
        exe: &std::path::Path,
        event: &str,
        mut payload: serde_json::Value,
        env: &[(&str, &str)],
    ) -> Output {
        payload["cwd"] = self.proj().to_string_lossy().into();
        let mut cmd = installed(exe, self.home.path());
        cmd.args(["hook", "--agent", "claude-code", "--event", event])
            .current_dir(self.proj());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = run_with_stdin(cmd, payload.to_string().as_bytes());
        assert!(out.status.success(), "{out:?}");
        out
    }
    /// A session that did some work, with `word` in its prompt and its
    /// conclusion.
    fn work(&self, session: &str, word: &str, env: &[(&str, &str)]) {
        self.hook(
            "SessionStart",
            serde_json::json!({"session_id": session, "source": "startup"}),
            env,
        );
        self.hook(
            "UserPromptSubmit",
            serde_json::json!({"session_id": session, "prompt": format!("fix the {word} bug")}),
            env,
        );
        self.hook(
            "PostToolUse",
            serde_json::json!({"session_id": session, "tool_name": "Bash", "tool_use_id": "toolu_1",
                "tool_input": {"command": "cargo test"},
                "tool_response": {"stdout": "test result: ok", "stderr": "", "interrupted": false}}),
            env,
        );
        self.hook(
            "Stop",
            serde_json::json!({"session_id": session, "last_assistant_message": format!("Fixed the {word} bug.")}),
            env,
        );
    }
    /// What a session start printed to the agent: the briefing, or `None`
    /// for `{}`.
    fn start(&self, session: &str, source: &str) -> Option<String> {
        let out = self.hook(
            "SessionStart",
            serde_json::json!({"session_id": session, "source": source}),
            &[],
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .map(str::to_string)
    }
    /// Wait until no drainer of this data dir runs: what they deliver is
    /// in the store, and the briefings they keep ready are written.
    fn settle(&self) {
        assert!(
            process::eventually(Duration::from_secs(30), || process::drainer_pids(
                &self.data()
            )
            .is_empty()),
            "a drainer still runs"
        );
    }
    /// What a session start prints with `memhook-brief`, `memhook-session`
    /// and `memhook-cli` taken away: only a kept briefing can brief.
    fn start_alone(&self, session: &str, source: &str) -> Option<String> {
        self.siblings(false);
        let printed = self.start(session, source);
        self.siblings(true);
        printed
    }
    /// Take `memhook-brief`, `memhook-session` and `memhook-cli` away
    /// (`true`) or put them back.
    fn siblings(&self, present: bool) {
        let dir = self.exe.parent().unwrap();
        for name in ["memhook-brief", "memhook-session", "memhook-cli"] {
            let (from, to) = (dir.join(name), dir.join(format!("{name}.away")));
            if present {
                fs::rename(to, from).unwrap();
            } else {
                fs::rename(from, to).unwrap();
            }
        }
    }
    /// A briefing kept ready after session `s1` worked on [`SENTINEL`] and
    /// `s2` started and ended without work, with every drainer done: `s2`'s
    /// start composed and kept it, its delivery made it stale, and the end
    /// of `s2` made the drainer compose it again.
    fn with_a_kept_briefing() -> (Install, String) {
        let i = Install::new();
        i.work("s1", SENTINEL, &[]);
        i.settle();
        let composed = i.start("s2", "startup").expect("a briefing about s1");
        assert!(composed.contains(SENTINEL), "{composed}");
        i.end("s2");
        i.settle();
        (i, composed)
    }
    fn end(&self, session: &str) {
        self.hook(
            "SessionEnd",
            serde_json::json!({"session_id": session, "reason": "exit"}),
            &[],
        );
    }
    fn kept_files(&self) -> Vec<PathBuf> {
        let dir = self.data().join("briefings");
        fs::read_dir(dir)
            .map(|d| d.flatten().map(|e| e.path()).collect())
            .unwrap_or_default()
    }
}

fn holding(files: &[PathBuf], needle: &str) -> Vec<PathBuf> {
    files
        .iter()
        .filter(|p| fs::read(p).is_ok_and(|b| files::contains(&b, needle)))
        .cloned()
        .collect()
}

#[test]
fn a_kept_briefing_answers_session_start_alone_and_is_the_one_composed() {
    let (i, composed) = Install::with_a_kept_briefing();
    let kept = i.start_alone("s3", "startup");
    assert_eq!(kept.as_deref(), Some(composed.as_str()));
}

/// A record a server that is down keeps in the spool (it is never
/// delivered) does not stop the drainer from keeping briefings ready.
#[test]
fn a_server_that_is_down_does_not_stop_briefings_being_kept_ready() {
    let i = Install::new();
    i.work("s1", SENTINEL, &[]);
    i.settle();
    let out = i.hook(
        "UserPromptSubmit",
        serde_json::json!({"session_id": "elsewhere", "prompt": "for a server"}),
        &[("AI_MEMORY_HOOK_URL", "http://127.0.0.1:9")],
    );
    assert!(out.status.success());
    // The composed briefing is kept, then made stale by the drainer's own
    // delivery of this start, then composed again when it goes off duty
    // after the session's end.
    let composed = i.start("s2", "startup").expect("a briefing about s1");
    i.end("s2");
    // The drainer stays (it retries the server), so wait for what it owes
    // the store: the end of `s2` delivered and the kept briefing composed
    // again after it. Asking before that would spool `s3`'s start, whose
    // delivery (no end of a turn) rightly leaves the briefing stale.
    let store = i.data().join("store.sqlite3");
    assert!(
        process::eventually(Duration::from_secs(30), || {
            let ended = rusqlite::Connection::open_with_flags(
                &store,
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
            )
            .and_then(|db| {
                // The view `records` calls memhook's functions.
                memhook_store::sqlite::register_functions(&db)?;
                db.query_row(
                    "SELECT count(*) FROM records WHERE session_id = 's2' AND event = 'session-end'",
                    [],
                    |r| r.get::<_, i64>(0),
                )
            })
            .is_ok_and(|n| n == 1);
            ended
                && !i.kept_files().is_empty()
                && memhook_core::briefing_cache::stale(&i.data(), &store).is_empty()
        }),
        "the drainer did not keep a briefing ready after the end of s2: kept {:?}, stale {:?}",
        i.kept_files(),
        memhook_core::briefing_cache::stale(&i.data(), &store)
    );
    // `memhook` alone (a copy without its siblings) can only print a kept
    // briefing.
    let alone = i.home.path().join("alone/memhook");
    fs::create_dir_all(alone.parent().unwrap()).unwrap();
    fs::copy(&i.exe, &alone).unwrap();
    let start = || {
        let out = i.hook_by(
            &alone,
            "SessionStart",
            serde_json::json!({"session_id": "s3", "source": "startup"}),
            &[],
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .map(str::to_string)
    };
    assert_eq!(start().as_deref(), Some(composed.as_str()));
    for pid in process::drainer_pids(&i.data()) {
        // SAFETY: a pid of this test's own drainer (its data dir).
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Only the end of a turn or a session makes the drainer compose a kept
/// briefing again: a tool call's delivery leaves it stale (a session start
/// then composes its own), so an isolated tool call's drainer does not pay
/// for a composition.
#[test]
fn only_the_end_of_a_turn_composes_a_kept_briefing_again() {
    let (i, _) = Install::with_a_kept_briefing();
    let kept = i.kept_files();
    assert_eq!(kept.len(), 1, "{kept:?}");
    let before = fs::read(&kept[0]).unwrap();
    i.hook(
        "PostToolUse",
        serde_json::json!({"session_id": "s3", "tool_name": "Bash", "tool_use_id": "toolu_2",
            "tool_input": {"command": "ls"},
            "tool_response": {"stdout": "src", "stderr": "", "interrupted": false}}),
        &[],
    );
    i.settle();
    assert_eq!(
        fs::read(&kept[0]).unwrap(),
        before,
        "composed again after a tool call"
    );
    i.end("s3");
    i.settle();
    assert_ne!(
        fs::read(&kept[0]).unwrap(),
        before,
        "not composed after the session's end"
    );
}

#[test]
fn forget_removes_the_kept_briefing_and_its_text() {
    let (i, _) = Install::with_a_kept_briefing();
    assert!(!holding(&i.kept_files(), SENTINEL).is_empty(), "seed");
    let out = installed(&i.exe, i.home.path())
        .args(["forget", "--session", "s1", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(holding(&i.kept_files(), SENTINEL), Vec::<PathBuf>::new());
    assert_eq!(
        files::files_holding(&i.data(), SENTINEL),
        Vec::<PathBuf>::new(),
        "no file of the data dir holds the forgotten text"
    );
    assert_eq!(i.start_alone("s3", "startup"), None);
    let composed = i.start("s4", "startup");
    assert!(!composed.unwrap_or_default().contains(SENTINEL));
}

#[test]
fn records_of_another_session_in_the_spool_are_delivered_first() {
    let (i, _) = Install::with_a_kept_briefing();
    // A session whose records stay in the spool (no drainer delivers them).
    i.work("s3", "zqxsecondtask", &[("MEMHOOK_NO_HOOK_DELIVERY", "1")]);
    // The kept briefing does not know s3: not used.
    assert_eq!(i.start_alone("s4", "startup"), None);
    let composed = i.start("s5", "startup").expect("a briefing");
    assert!(composed.contains("zqxsecondtask"), "{composed}");
}

#[test]
fn a_new_memory_index_is_not_in_a_kept_briefing() {
    let (i, _) = Install::with_a_kept_briefing();
    let index = i.data().join("memory/default/demo/MEMORY.md");
    fs::create_dir_all(index.parent().unwrap()).unwrap();
    fs::write(&index, "- zqxdecision: keep the parser strict\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for dir in ["memory", "memory/default", "memory/default/demo"] {
            fs::set_permissions(i.data().join(dir), fs::Permissions::from_mode(0o700)).unwrap();
        }
        fs::set_permissions(&index, fs::Permissions::from_mode(0o600)).unwrap();
    }
    assert_eq!(i.start_alone("s3", "startup"), None);
    let composed = i.start("s4", "startup").expect("a briefing");
    assert!(composed.contains("zqxdecision"), "{composed}");
}

#[test]
fn a_resumed_session_is_never_briefed_about_itself_from_a_kept_briefing() {
    let (i, _) = Install::with_a_kept_briefing();
    assert_eq!(i.start_alone("s1", "resume"), None);
    let composed = i.start("s1", "resume").unwrap_or_default();
    assert!(!composed.contains(SENTINEL), "{composed}");
}

/// A `memhook-brief` that does not answer within the session-start budget
/// is stopped by its pid, and the agent gets `{}` in time.
#[cfg(unix)]
#[test]
fn a_composer_that_does_not_answer_in_time_is_stopped() {
    use std::os::unix::fs::PermissionsExt;
    let i = Install::new();
    let bin = i.exe.parent().unwrap().to_path_buf();
    let pid_file = i.home.path().join("composer.pid");
    let script = bin.join("memhook-brief");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\necho $$ > '{}'\nexec sleep 30\n",
            pid_file.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    let started = std::time::Instant::now();
    let out = i.hook(
        "SessionStart",
        serde_json::json!({"session_id": "s1", "source": "startup"}),
        &[("MEMHOOK_START_BUDGET_MS", "400")],
    );
    let took = started.elapsed();
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");
    assert!(took < Duration::from_secs(3), "took {took:?}");
    let pid: i32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(!alive, "the composer {pid} still runs");
    i.settle();
}
