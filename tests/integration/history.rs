//! File history at the moment it matters (issue 24): when a later session's
//! agent is about to read or edit a file an earlier session changed, its
//! pre-tool-use context says when, in which session, with that session's
//! goal and the failure it left. Driven with real Claude Code payloads
//! through the real binary; `real_claude_code_reads_the_history_line`
//! checks that the real CLI hands the line to the model.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::support::binaries::{memhook, run_with_stdin};
use crate::support::fixtures::claude_payload;

fn hook(home: &Path, event: &str, payload: &Value) -> String {
    let mut cmd = memhook(home);
    cmd.args(["hook", "--agent", "claude-code", "--event", event])
        .env("MEMHOOK_NO_HOOK_DELIVERY", "1");
    let out = run_with_stdin(cmd, payload.to_string().as_bytes());
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .trim_end()
        .to_string()
}

/// Session 1: a prompt, an edit of src/app.py, a failing test, a stop.
fn session_1(home: &Path) {
    let s1 = "11111111-aaaa-4bbb-8ccc-000000000001";
    let mut prompt = claude_payload("UserPromptSubmit", home, s1);
    prompt["prompt"] = "make the parser accept ISO dates".into();
    hook(home, "UserPromptSubmit", &prompt);
    hook(
        home,
        "PostToolUse",
        &claude_payload("PostToolUse-Edit", home, s1),
    );
    let mut test = claude_payload("PostToolUseFailure-Bash-exit1", home, s1);
    test["tool_input"]["command"] = "pytest -q tests/test_app.py".into();
    hook(home, "PostToolUseFailure", &test);
    hook(home, "Stop", &claude_payload("Stop", home, s1));
    let out = memhook(home).arg("drain").output().unwrap();
    assert!(out.status.success(), "{out:?}");
}

fn context(stdout: &str) -> Option<String> {
    let v: Value = serde_json::from_str(stdout).unwrap();
    assert!(v
        .get("hookSpecificOutput")
        .is_none_or(|h| h.get("permissionDecision").is_none()));
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map(str::to_string)
}

#[test]
fn a_file_an_earlier_session_changed_gets_one_history_line_before_it_is_read() {
    let home = tempfile::tempdir().unwrap();
    let s2 = "22222222-aaaa-4bbb-8ccc-000000000002";
    // Before any history: nothing to say.
    let read = claude_payload("PreToolUse-Read", home.path(), s2);
    assert_eq!(hook(home.path(), "PreToolUse", &read), "{}");
    session_1(home.path());

    let out = hook(home.path(), "PreToolUse", &read);
    let line = context(&out).unwrap_or_else(|| panic!("no history line: {out}"));
    assert!(
        line.starts_with("memhook file history: src/app.py: changed "),
        "{line}"
    );
    assert!(
        line.contains(" UTC by claude-code in session 11111111"),
        "{line}"
    );
    assert!(
        line.contains("(goal: \"make the parser accept ISO dates\")"),
        "{line}"
    );
    // Its status and what it printed (Claude Code's `error` is `Exit code
    // 1` then the output: the fixture's `failing`).
    assert!(
        line.ends_with(
            "it ended with Bash \"pytest -q tests/test_app.py\" failing, exit 1: \"failing\""
        ),
        "{line}"
    );
    // An edit of it too; another file, a shell call, another agent: nothing.
    let edit = claude_payload("PreToolUse-Edit", home.path(), s2);
    assert!(context(&hook(home.path(), "PreToolUse", &edit)).is_some());
    let mut other = read.clone();
    other["tool_input"]["file_path"] =
        format!("{}/projects/demo/README.md", home.path().display()).into();
    assert_eq!(hook(home.path(), "PreToolUse", &other), "{}");
    let bash = claude_payload("PreToolUse-Bash", home.path(), s2);
    assert_eq!(hook(home.path(), "PreToolUse", &bash), "{}");
    let mut cmd = memhook(home.path());
    cmd.args(["hook", "--agent", "codex", "--event", "PreToolUse"])
        .env("MEMHOOK_NO_HOOK_DELIVERY", "1");
    let out = run_with_stdin(cmd, read.to_string().as_bytes());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), "{}");

    // `[briefing] file_history = false` turns it off for the project (for a
    // session that starts after it: a session keeps its settings).
    let proj = home.path().join("projects/demo");
    fs::write(
        proj.join(".ai-memory.toml"),
        "[briefing]\nfile_history = false\n",
    )
    .unwrap();
    let mut read3 = read.clone();
    read3["session_id"] = "33333333-aaaa-4bbb-8ccc-000000000003".into();
    assert_eq!(hook(home.path(), "PreToolUse", &read3), "{}");
    fs::remove_file(proj.join(".ai-memory.toml")).unwrap();
    assert!(context(&hook(home.path(), "PreToolUse", &read)).is_some());

    // Forgetting the session takes its history with it.
    let out = memhook(home.path())
        .args(["forget", "--session", "11111111", "--yes"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(hook(home.path(), "PreToolUse", &read), "{}");
}

/// The real Claude Code passes the history line to the model: session 1
/// (installed by `install-hooks --apply`) edits `notes.py`; in session 2
/// the model reads it, and the request that follows the read carries the
/// line.
#[test]
fn real_claude_code_hands_the_history_line_to_the_model() {
    use crate::agents::claude_with;
    use crate::support::deps::agent_cli;
    use crate::support::home::World;
    use crate::support::model_server::{Api, Mock, Step};
    use serde_json::json;
    let test = "real_claude_code_hands_the_history_line_to_the_model";
    let Some(exe) = agent_cli(test, "claude") else {
        return;
    };
    let world = World::new();
    let file = world.proj().join("notes.py");
    fs::write(&file, "TODO = 1\n").unwrap();
    world.install("claude-code");
    let path = file.to_string_lossy().into_owned();
    let mock = Mock::start(
        Api::AnthropicMessages,
        vec![
            Step::Tool(
                "Edit",
                json!({"file_path": path, "old_string": "TODO = 1", "new_string": "TODO = 2"}),
            ),
            Step::Text("Bumped TODO."),
        ],
    );
    let out = claude_with(
        &world,
        &exe,
        mock.port,
        "bump TODO in notes.py",
        "Read,Edit",
        &[],
    );
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "TODO = 2\n");
    let drained = world.memhook().arg("drain").output().unwrap();
    assert!(drained.status.success(), "{drained:?}");

    let mock = Mock::start(
        Api::AnthropicMessages,
        vec![
            Step::Tool("Read", json!({"file_path": path})),
            Step::Text("It is 2."),
        ],
    );
    let out = claude_with(&world, &exe, mock.port, "what is TODO?", "Read,Edit", &[]);
    assert!(out.status.success(), "{out:?}");
    let requests = mock.requests();
    let after_read = requests
        .iter()
        .map(|(_, b)| b.to_string())
        .find(|b| b.contains("tool_result"))
        .expect("a request after the Read");
    assert!(
        after_read.contains("memhook file history: notes.py: changed ")
            && after_read.contains("(goal: \\\"bump TODO in notes.py\\\")"),
        "the history line did not reach the model: {after_read}"
    );
}
