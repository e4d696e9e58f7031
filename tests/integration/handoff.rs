//! The handoff between real sessions (issue 24): a real Claude Code or
//! Codex session, offline and installed by `install-hooks --apply`, runs a
//! failing test, fixes the bug it shows, runs the test again (it passes),
//! keeps a plan with one item left open, reads the project's excluded file
//! and ends with a conclusion naming the cause. The next session — of the
//! same agent, and of the other agent, each the next one after session 1
//! in a HOME of its own — gets a briefing, read here from the model request
//! it sends, that carries the goal, the cause in the agent's words, the
//! changed file, that the test failed and then passed, and the open item,
//! in at most 2,000 characters, and nothing of the excluded file.
//!
//! The model's side is scripted (support/model_server.rs); the CLIs, their
//! hooks and memhook are real. Codex declares `update_plan` in `exec` mode
//! only with `tools.update_plan.enabled=true`, which its sessions here set.

use std::fs;
use std::path::Path;
use std::process::Output;

use serde_json::{json, Value};

use crate::agents::{claude_with, codex_config, codex_trust, codex_with, has_tools};
use crate::support::deps::agent_cli;
use crate::support::home::World;
use crate::support::model_server::{Api, Mock, Step};

/// The bug: every year divisible by 4 is taken for a leap year.
const LEAP_BUGGY: &str = "def is_leap(year):\n    return year % 4 == 0\n";
const BUGGY_LINE: &str = "    return year % 4 == 0";
const FIXED_LINE: &str = "    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)";
/// The test: fails (exit 1) on the bug, passes once fixed.
const TEST_LEAP: &str = "from leap import is_leap\n\
    assert is_leap(2024)\n\
    assert not is_leap(1900), \"1900 is not a leap year\"\n\
    print(\"leap tests passed\")\n";
const TEST_CMD: &str = "python3 test_leap.py";

/// Session 1's prompt: the goal the next session must be told.
const GOAL: &str = "Fix the leap-year bug that makes test_leap.py fail; after that we will add a \
                    command-line entry point";
/// The agent's final message; its first sentence is the cause.
const CONCLUSION: &str = "The cause was that is_leap treated every year divisible by 4 as a leap \
                          year and ignored the century rule, so 1900 counted as one. I fixed \
                          is_leap in leap.py and test_leap.py passes now.";
const CAUSE: &str = "The cause was that is_leap treated every year divisible by 4 as a leap year \
                     and ignored the century rule";
/// The plan: the first item done, the second left open.
const DONE_ITEM: &str = "Fix is_leap for century years";
const OPEN_ITEM: &str = "Add a command-line entry point for leap.py";

/// The most characters the briefing may take.
const MAX_BRIEFING: usize = 2_000;

/// One of the two agents: how a session of it runs, what session 1's
/// model does in it.
struct Side {
    id: &'static str,
    cli: &'static str,
    api: Api,
    /// Install memhook's hooks into the world (and whatever the agent needs
    /// to run them).
    install: fn(&World, &Path),
    session: fn(&World, &Path, u16, &str) -> Output,
    script: fn(&Path) -> Vec<Step>,
    /// Whether memhook learns how a shell command exited. Codex 0.171.0's
    /// PostToolUse for `exec_command` carries the output only, but its
    /// rollout transcript already ends with the call's `item_completed`
    /// event and its `exit_code` when the hook runs; memhook reads it
    /// there (crates/core/src/event/transcript.rs).
    exit_status: bool,
    /// The texts of a model request where the agent puts SessionStart's
    /// `additionalContext`.
    context: fn(&Value) -> Vec<String>,
}

const CLAUDE: Side = Side {
    id: "claude-code",
    cli: "claude",
    api: Api::AnthropicMessages,
    install: |w, _| {
        w.install_via_shim("claude-code");
    },
    session: claude_session,
    script: claude_script,
    exit_status: true,
    context: |body| {
        // A role "system" message inside `messages`, after this prefix.
        texts_of(body["messages"].as_array(), "system")
            .into_iter()
            .filter_map(|t| {
                t.find("SessionStart hook additional context: ")
                    .map(|at| t[at..].to_string())
            })
            .collect()
    },
};

const CODEX: Side = Side {
    id: "codex",
    cli: "codex",
    api: Api::OpenAiResponses,
    install: |w, exe| {
        w.install("codex");
        // Codex runs user hooks in `exec` only once trusted (its /hooks
        // review); the provider must be configured for app-server to start.
        codex_config(w, 9);
        assert_eq!(codex_trust(w, exe), 7, "Codex did not list memhook's hooks");
    },
    session: codex_session,
    script: codex_script,
    exit_status: true,
    // A role "developer" input message, the bare text.
    context: |body| texts_of(body["input"].as_array(), "developer"),
};

/// Claude Code offers TaskCreate/TaskUpdate (after ToolSearch) only with
/// CLAUDE_CODE_ENABLE_TODO_TOOLS=1.
fn claude_session(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    claude_with(
        world,
        exe,
        port,
        prompt,
        "Read,Edit,Bash,ToolSearch,TaskCreate,TaskUpdate,TodoWrite",
        &[("CLAUDE_CODE_ENABLE_TODO_TOOLS", "1")],
    )
}

/// Codex `exec` declares no plan tool unless `tools.update_plan.enabled`.
fn codex_session(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    codex_with(
        world,
        exe,
        port,
        prompt,
        &["tools.update_plan.enabled=true"],
    )
}

fn claude_script(proj: &Path) -> Vec<Step> {
    let p = |rel: &str| proj.join(rel).to_string_lossy().into_owned();
    let bash = || {
        Step::Tool(
            "Bash",
            json!({"command": TEST_CMD, "description": "run the tests"}),
        )
    };
    vec![
        bash(),
        Step::Tool("Read", json!({"file_path": p("leap.py")})),
        Step::Tool(
            "Edit",
            json!({"file_path": p("leap.py"), "old_string": BUGGY_LINE, "new_string": FIXED_LINE}),
        ),
        bash(),
        Step::Tool("Read", json!({"file_path": p("secret/key.txt")})),
        Step::Tool(
            "ToolSearch",
            json!({"query": "select:TaskCreate,TaskUpdate", "max_results": 5}),
        ),
        Step::Tool(
            "TaskCreate",
            json!({"subject": DONE_ITEM, "description": "Apply the century rule", "activeForm": "Fixing is_leap"}),
        ),
        Step::Tool(
            "TaskCreate",
            json!({"subject": OPEN_ITEM, "description": "A small CLI around is_leap", "activeForm": "Adding a CLI"}),
        ),
        Step::Tool("TaskUpdate", json!({"taskId": "1", "status": "completed"})),
        Step::Text(CONCLUSION),
    ]
}

fn codex_script(_proj: &Path) -> Vec<Step> {
    let test = || Step::Tool("exec_command", json!({"cmd": TEST_CMD}));
    vec![
        test(),
        Step::Tool("exec_command", json!({"cmd": "cat secret/key.txt"})),
        Step::Tool(
            "apply_patch",
            Value::String(format!(
                "*** Begin Patch\n*** Update File: leap.py\n@@\n-{BUGGY_LINE}\n+{FIXED_LINE}\n*** End Patch\n"
            )),
        ),
        test(),
        Step::Tool(
            "update_plan",
            json!({"plan": [
                {"step": DONE_ITEM, "status": "completed"},
                {"step": OPEN_ITEM, "status": "pending"},
            ]}),
        ),
        Step::Text(CONCLUSION),
    ]
}

/// A world with both agents installed and the buggy project; session 1 run
/// by `first`. Returns the world.
fn after_session_1(test: &str, first: &Side, next: &Side) -> Option<World> {
    let first_exe = agent_cli(test, first.cli)?;
    let next_exe = agent_cli(test, next.cli)?;
    let world = World::new();
    fs::write(world.proj().join("leap.py"), LEAP_BUGGY).unwrap();
    fs::write(world.proj().join("test_leap.py"), TEST_LEAP).unwrap();
    (first.install)(&world, &first_exe);
    if next.id != first.id {
        (next.install)(&world, &next_exe);
    }
    let script = (first.script)(&world.proj());
    let turns = script.len();
    let mock = Mock::start(first.api, script);
    let out = (first.session)(&world, &first_exe, mock.port, GOAL);
    let requests = mock.requests();
    assert!(
        out.status.success(),
        "{} session 1 failed: {}\n{}",
        first.id,
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    let all = requests
        .iter()
        .map(|(_, b)| b.to_string())
        .collect::<String>();
    let made = requests.iter().filter(|r| has_tools(r)).count();
    assert!(
        made >= turns,
        "{}: expected {turns} scripted turns, got {made}; tools offered: {:?}",
        first.id,
        requests.last().map(|(_, b)| tool_names(b))
    );
    // The tools really ran: the model saw the failure, the excluded key
    // and the pass; the file is fixed.
    for seen in [
        "1900 is not a leap year",
        "TOPSECRET-4711",
        "leap tests passed",
    ] {
        assert!(
            all.contains(seen),
            "{}: the model never saw {seen:?}",
            first.id
        );
    }
    assert!(
        fs::read_to_string(world.proj().join("leap.py"))
            .unwrap()
            .contains(FIXED_LINE),
        "{}: the scripted fix did not land",
        first.id
    );
    Some(world)
}

/// The names of the tools a model request offers.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            t["name"]
                .as_str()
                .or(t["function"]["name"].as_str())
                .unwrap_or("?")
                .to_string()
        })
        .collect()
}

/// Every string in a JSON value.
fn strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::String(s) => out.push(s),
        Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// Every string in the messages of `role` among `messages`.
fn texts_of(messages: Option<&Vec<Value>>, role: &str) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages.into_iter().flatten().filter(|m| m["role"] == role) {
        strings(m, &mut out);
    }
    out.into_iter().map(str::to_string).collect()
}

/// The briefing in the first model turn of a session, where `next` puts
/// SessionStart context: from its size line (`memhook briefing for …: N
/// items, C characters, …`) on, C characters.
fn briefing_in(next: &Side, requests: &[(String, Value)]) -> String {
    let (_, first) = requests
        .iter()
        .find(|r| has_tools(r))
        .expect("the next session made a model request");
    let texts = (next.context)(first);
    let text = texts
        .iter()
        .find_map(|t| t.find("memhook briefing for ").map(|at| &t[at..]))
        .unwrap_or_else(|| panic!("no briefing in the next session's first request: {first}"));
    let stated: usize = text
        .split(" characters")
        .next()
        .and_then(|head| head.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no size on the briefing's first line: {text}"));
    let briefing: String = text.chars().take(stated).collect();
    assert_eq!(
        briefing.chars().count(),
        stated,
        "the briefing is shorter than it says: {text}"
    );
    // It states its own size exactly: its last line ends there.
    let after = &text[briefing.len()..];
    assert!(
        after.is_empty() || after.starts_with('\n'),
        "the briefing is longer than it says ({stated}): {text:?}"
    );
    briefing
}

/// Session 1 by `first`, then the next session by `next`: its briefing
/// carries what session 1 learned and left open.
fn hand_over(test: &str, first: &Side, next: &Side) {
    let Some(world) = after_session_1(test, first, next) else {
        return;
    };
    let Some(next_exe) = agent_cli(test, next.cli) else {
        return;
    };
    let mock = Mock::start(next.api, vec![Step::Text("Noted.")]);
    let out = (next.session)(&world, &next_exe, mock.port, "What is left to do?");
    assert!(
        out.status.success(),
        "{} session 2 failed: {}",
        next.id,
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = mock.requests();
    let b = briefing_in(next, &requests);
    crate::support::deps::say(&format!("{test} briefing:\n{b}\n"));
    // scripts/bench-handoff.py scores what the briefing carries.
    if let Some(dir) = std::env::var_os("MEMHOOK_HANDOFF_OUT") {
        let dir = std::path::PathBuf::from(dir);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join(format!("{test}.txt")), &b).unwrap();
    }
    let why = |what: &str| {
        format!(
            "{first} → {next}: {what} is not in the briefing:\n{b}",
            first = first.id,
            next = next.id
        )
    };
    assert!(
        b.chars().count() <= MAX_BRIEFING,
        "{}",
        why("a size within 2,000")
    );
    // The goal, whole.
    assert!(
        b.contains(&format!("Goal (the last prompt): \"{GOAL}\"")),
        "{}",
        why("the goal")
    );
    // The cause, in the agent's words.
    let concluded = b
        .lines()
        .find(|l| l.contains("The agent concluded:"))
        .unwrap_or_else(|| panic!("{}", why("the conclusion")));
    assert!(concluded.contains(CAUSE), "{}", why("the cause"));
    // The changed file.
    let changed = b
        .lines()
        .find(|l| l.starts_with("- Changed:"))
        .unwrap_or_else(|| panic!("{}", why("a Changed line")));
    assert!(
        changed.contains("\"leap.py\""),
        "{}",
        why("leap.py as changed")
    );
    // The test failed, then passed: not a standing failure, and shown as
    // failed then passed — where the agent says how a command exited.
    let about_the_test = |l: &&str| l.contains(TEST_CMD);
    assert!(
        !b.lines()
            .filter(about_the_test)
            .any(|l| l.contains("Failed, not fixed since")),
        "{}",
        why("the test as fixed (it is listed as still failing)")
    );
    let failed_then_passed = b.lines().filter(about_the_test).any(|l| {
        let l = l.to_lowercase();
        l.contains("failed") && l.contains("passed")
    });
    if first.exit_status {
        assert!(
            failed_then_passed,
            "{}",
            why("that the test failed and then passed")
        );
    } else {
        // The known gap (see `Side::exit_status`): said here, so that the
        // day the agent gives an exit status this fails and is turned on.
        assert!(
            !failed_then_passed,
            "{} now says how the test exited: set its exit_status\n{b}",
            first.id
        );
        crate::support::deps::say(&format!(
            "{test}: {} gives no exit status, so the briefing cannot say the test failed, then passed",
            first.id
        ));
    }
    // The open item, and not the done one.
    let open = b
        .lines()
        .find(|l| l.contains("Still open in its plan:"))
        .unwrap_or_else(|| panic!("{}", why("the open plan item")));
    assert!(open.contains(OPEN_ITEM), "{}", why("the open item"));
    assert!(!open.contains(DONE_ITEM), "{}", why("only the open item"));
    // Nothing of the excluded file, anywhere in what the model was sent.
    for (_, body) in &requests {
        let text = body.to_string();
        assert!(
            !text.contains("TOPSECRET"),
            "the excluded file's text reached {}",
            next.id
        );
    }
    assert!(!b.contains("secret/key.txt"), "{}", why("no excluded path"));
    world.assert_no_trace_of_the_excluded_file();
}

#[test]
fn claude_code_hands_over_to_claude_code() {
    hand_over("claude_code_hands_over_to_claude_code", &CLAUDE, &CLAUDE);
}

#[test]
fn claude_code_hands_over_to_codex() {
    hand_over("claude_code_hands_over_to_codex", &CLAUDE, &CODEX);
}

#[test]
fn codex_hands_over_to_codex() {
    hand_over("codex_hands_over_to_codex", &CODEX, &CODEX);
}

#[test]
fn codex_hands_over_to_claude_code() {
    hand_over("codex_hands_over_to_claude_code", &CODEX, &CLAUDE);
}
