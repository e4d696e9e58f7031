//! Golden briefings: each agent's real fixture session (fixtures/agents/,
//! replayed in its recorded order through the real binary) gives the
//! briefing kept in fixtures/briefing/<agent>.txt. Times are replaced by
//! placeholders; everything else must match to the character.
//!
//! After a deliberate change to the briefing, regenerate the files with
//! `MEMHOOK_UPDATE_GOLDEN=1 cargo test --test integration briefing::`,
//! read every diff, and commit them.

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::support::binaries::memhook;
use crate::support::fixtures::fixture;

/// (fixtures/agents/ folder and golden file name, agent, version).
const SESSIONS: &[(&str, &str, &str)] = &[
    ("claude-code", "claude-code", "2.1.328"),
    ("codex", "codex", "0.171.0"),
    ("gemini-cli", "gemini-cli", "0.61.0"),
    ("opencode", "opencode", "1.18.33"),
    ("copilot", "copilot", "1.0.102"),
    ("qwen-code", "qwen-code", "0.24.4"),
    // A Claude Agent SDK program runs Claude Code's hooks.
    ("claude-agent-sdk", "claude-code", "0.2.184"),
    ("droid", "droid", "0.225.2"),
    ("openhands", "openhands", "1.16.0"),
    ("pi", "pi", "0.73.1"),
    ("cline", "cline", "3.0.65"),
];

fn hook(home: &Path, agent: &str, event: Option<&str>, payload: &str, cwd: &Path) -> Vec<u8> {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(payload.as_bytes()).unwrap();
    std::io::Seek::rewind(&mut f).unwrap();
    let mut c = memhook(home);
    c.args(["hook", "--agent", agent])
        .stdin(f)
        .current_dir(cwd)
        .env("MEMHOOK_NO_HOOK_DELIVERY", "1")
        .env(memhook_hook::budget::BUDGET_ENV, "10000");
    if let Some(e) = event {
        c.args(["--event", e]);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    out.stdout
}

/// Replace what changes from run to run: times of day, record ids and the
/// temp home.
fn normalise(text: &str, home: &Path) -> String {
    let home = home.to_str().unwrap();
    let mut out = String::new();
    for line in text.replace(home, "~").lines() {
        let mut l = line.to_string();
        // `YYYY-MM-DD HH:MM UTC` and the bare `HH:MM UTC` of a time span.
        let b = l.as_bytes().to_vec();
        let mut i = 0;
        let mut fixed = String::new();
        while i < b.len() {
            let date = i + 16 <= b.len()
                && b[i..i + 4].iter().all(u8::is_ascii_digit)
                && b[i + 4] == b'-'
                && b[i + 10] == b' '
                && b[i + 13] == b':';
            let time = i + 9 <= b.len()
                && b[i..i + 2].iter().all(u8::is_ascii_digit)
                && b[i + 2] == b':'
                && b[i + 3..i + 5].iter().all(u8::is_ascii_digit)
                && &b[i + 5..i + 9] == b" UTC";
            if date {
                fixed.push_str("<date> <time>");
                i += 16;
            } else if time {
                fixed.push_str("<time> UTC");
                i += 9;
            } else {
                let ch = l[i..].chars().next().unwrap();
                fixed.push(ch);
                i += ch.len_utf8();
            }
        }
        l = fixed;
        // Record ids are minted at random when an event is spooled.
        while let Some(i) = l
            .find("[id ")
            .filter(|i| l[i + 4..].find(']').is_some_and(|j| j > 0))
        {
            let end = i + 4 + l[i + 4..].find(']').unwrap();
            l.replace_range(i..=end, "[ID]");
        }
        out.push_str(&l);
        out.push('\n');
    }
    out
}

fn briefing_after_replay(dir: &str, agent: &str, version: &str) -> String {
    briefing_after(dir, agent, version, |_| {})
}

/// Replay `agent`'s real session of fixtures/agents/<dir>/<version> into
/// the memhook of `home`, in project `projects/demo`, and deliver it.
fn replay(home: &Path, dir: &str, agent: &str, version: &str) {
    let dir = fixture(&format!("agents/{dir}/{version}"));
    let index: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("index.json")).unwrap()).unwrap();
    let project = home.join("projects/demo");
    std::fs::create_dir_all(&project).unwrap();
    let home_s = home.to_str().unwrap();
    for e in index.as_array().unwrap() {
        let file = e["file"].as_str().unwrap();
        // Copilot CLI's camelCase payloads repeat its PascalCase ones (the
        // capture wired both spellings); memhook wires only PascalCase.
        if file.starts_with("camelCase/") {
            continue;
        }
        // Sessions captured by the end-to-end tests ran in /home/dev/proj.
        let text = std::fs::read_to_string(dir.join(file))
            .unwrap()
            .replace("/home/dev/proj\"", "/home/dev/projects/demo\"")
            .replace("/home/dev/proj/", "/home/dev/projects/demo/")
            .replace("/home/dev", home_s);
        let v: Value = serde_json::from_str(&text).unwrap();
        let cwd = ["/cwd", "/directory", "/working_dir"]
            .iter()
            .find_map(|p| v.pointer(p).and_then(Value::as_str))
            .map(std::path::PathBuf::from)
            .filter(|p| p.starts_with(home))
            .unwrap_or_else(|| project.clone());
        std::fs::create_dir_all(&cwd).unwrap();
        let event = e["event"].as_str().or(e["hook"].as_str());
        hook(home, agent, event, &text, &cwd);
    }
    let out = memhook(home).arg("drain").output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

/// The briefing a Claude Code session starting after `agent`'s replayed
/// session gets; `before` runs first, with the temp home.
fn briefing_after(dir: &str, agent: &str, version: &str, before: impl Fn(&Path)) -> String {
    let home = tempfile::tempdir().unwrap();
    before(home.path());
    replay(home.path(), dir, agent, version);
    let project = home.path().join("projects/demo");
    let start = format!(
        r#"{{"session_id":"golden-next","cwd":"{}","hook_event_name":"SessionStart","source":"startup"}}"#,
        project.display()
    );
    let env: Value =
        serde_json::from_slice(&hook(home.path(), "claude-code", None, &start, &project)).unwrap();
    let text = env["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("{agent}: no briefing in {env}"));
    normalise(text, home.path())
}

#[test]
fn each_agents_real_session_gives_the_reviewed_briefing() {
    let update = std::env::var_os("MEMHOOK_UPDATE_GOLDEN").is_some();
    let mut diffs = Vec::new();
    for (dir, agent, version) in SESSIONS {
        let got = briefing_after_replay(dir, agent, version);
        let path = fixture(&format!("briefing/{dir}.txt"));
        if update {
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_default();
        if got != want {
            diffs.push(format!(
                "{dir}: briefing differs from {}\n--- want\n{want}--- got\n{got}",
                path.display()
            ));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
}

/// With `memhook mcp` registered for the starting agent (`install-mcp
/// --apply`), the briefing invites it to save lasting decisions with
/// `memory_write`; after `--remove` it no longer does.
#[test]
fn memory_write_is_invited_when_the_mcp_server_is_installed() {
    let install = |remove: bool| {
        move |home: &Path| {
            let cfg = home.join("claude.json");
            let mut c = memhook(home);
            c.args([
                "install-mcp",
                "--agent",
                "claude-code",
                "--apply",
                "--config-file",
            ])
            .arg(&cfg);
            let out = c.output().unwrap();
            assert!(out.status.success(), "{out:?}");
            if remove {
                let out = memhook(home)
                    .args([
                        "install-mcp",
                        "--agent",
                        "claude-code",
                        "--apply",
                        "--remove",
                    ])
                    .arg("--config-file")
                    .arg(&cfg)
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{out:?}");
            }
        }
    };
    // A Codex session, then Claude Code (the agent the server is registered for).
    let b = briefing_after("codex", "codex", "0.171.0", install(false));
    assert!(
        b.trim_end()
            .ends_with(memhook_store::briefing::SAVE_DECISIONS),
        "{b}"
    );
    let b = briefing_after("codex", "codex", "0.171.0", install(true));
    assert!(!b.contains("memory_write"), "{b}");
}

/// OpenHands takes no context at session start: its session start prints
/// `{}`, its first prompt of a session carries the briefing (top-level
/// `additionalContext`), and a later prompt of the same session does not;
/// a new session is briefed again.
#[test]
fn a_late_briefing_agent_is_briefed_once_per_session_at_its_event() {
    let home = tempfile::tempdir().unwrap();
    replay(home.path(), "droid", "droid", "0.225.2");
    let project = home.path().join("projects/demo");
    let payload = |event: &str, session: &str| {
        format!(
            r#"{{"event_type":"{event}","message":"go on","session_id":"{session}","working_dir":"{}","metadata":{{}}}}"#,
            project.display()
        )
    };
    let run = |event: &str, flag: &str, session: &str| -> Value {
        let out = hook(
            home.path(),
            "openhands",
            Some(flag),
            &payload(event, session),
            &project,
        );
        serde_json::from_slice(&out).unwrap()
    };
    assert_eq!(
        run("SessionStart", "session-start", "oh-1"),
        serde_json::json!({})
    );
    let first = run("UserPromptSubmit", "user-prompt-submit", "oh-1");
    let text = first["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no briefing at the first prompt: {first}"));
    assert!(text.starts_with("memhook briefing for "), "{text}");
    assert!(text.contains("notes.md"), "{text}");
    assert_eq!(
        run("UserPromptSubmit", "user-prompt-submit", "oh-1"),
        serde_json::json!({}),
        "briefed twice in one session"
    );
    let other = run("UserPromptSubmit", "user-prompt-submit", "oh-2");
    assert!(other["additionalContext"].is_string(), "{other}");
}

/// Cline takes context only from a tool event: its TaskStart and prompt
/// print `{}`, its first PreToolUse of a session carries the briefing as
/// `contextModification`, a later one of the same session (or its
/// PostToolUse) does not; a new session is briefed again.
#[test]
fn cline_is_briefed_once_per_session_at_its_first_tool_call() {
    let home = tempfile::tempdir().unwrap();
    replay(home.path(), "droid", "droid", "0.225.2");
    let project = home.path().join("projects/demo");
    let payload = |session: &str| {
        format!(
            r#"{{"taskId":"t-{session}","sessionContext":{{"rootSessionId":"{session}"}},"workspaceRoots":["{}"],"agent_id":"a","parent_agent_id":null,"tool_call":{{"id":"c1","name":"run_commands","input":{{"commands":["echo hi"]}}}},"userPromptSubmit":{{"prompt":"go on"}}}}"#,
            project.display()
        )
    };
    let run = |flag: &str, session: &str| -> Value {
        let out = hook(
            home.path(),
            "cline",
            Some(flag),
            &payload(session),
            &project,
        );
        serde_json::from_slice(&out).unwrap()
    };
    for flag in ["session-start", "user-prompt-submit"] {
        assert_eq!(run(flag, "cl-1"), serde_json::json!({}), "{flag}");
    }
    let first = run("pre-tool-use", "cl-1");
    let text = first["contextModification"]
        .as_str()
        .unwrap_or_else(|| panic!("no briefing at the first tool call: {first}"));
    assert!(text.starts_with("memhook briefing for "), "{text}");
    assert!(text.contains("notes.md"), "{text}");
    for flag in ["pre-tool-use", "post-tool-use"] {
        assert_eq!(
            run(flag, "cl-1"),
            serde_json::json!({}),
            "briefed twice in one session ({flag})"
        );
    }
    let other = run("pre-tool-use", "cl-2");
    assert!(other["contextModification"].is_string(), "{other}");
}
