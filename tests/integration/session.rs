//! A session stays in its scope (docs/marker-file.md): the real Claude
//! Code session in fixtures/agents/claude-code/ runs `cd src` midway; with
//! a marker that holds only `[capture]`, every record must still land in
//! the project the session started in, and the next session's briefing
//! and `memhook recent` must agree on it.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::binaries::{drain, hook_with_stdin_file, memhook};
use crate::support::fixtures::fixture;

const FIXTURES: &str = "agents/claude-code/2.1.328";

/// Run the hook with `payload` (`/home/dev` already rewritten); returns
/// its stdout.
fn hook(home: &Path, payload: &Value, env: &[(&str, &str)]) -> Vec<u8> {
    let mut c = hook_with_stdin_file(home, "claude-code", payload.to_string().as_bytes());
    c.env("MEMHOOK_NO_HOOK_DELIVERY", "1")
        .env(memhook_hook::budget::BUDGET_ENV, "10000");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    out.stdout
}

/// Every stored record's `workspace/project`, counted.
fn projects(home: &Path) -> BTreeMap<String, usize> {
    let out = memhook(home)
        .args(["recent", "--all", "--json", "--limit", "1000"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut by = BTreeMap::new();
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let p = format!("{}/{}", v["workspace"], v["project"]).replace('"', "");
        *by.entry(p).or_default() += 1;
    }
    by
}

/// A home with `projects/demo/src`, the marker `marker` in `demo`.
fn demo(marker: &str) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let demo = home.path().join("projects/demo");
    fs::create_dir_all(demo.join("src")).unwrap();
    fs::write(demo.join(".ai-memory.toml"), marker).unwrap();
    (home, demo)
}

/// The fixture `name` with `/home/dev` moved into `home`.
fn payload(home: &Path, name: &str) -> Value {
    let text = fs::read_to_string(fixture(&format!("{FIXTURES}/{name}")))
        .unwrap()
        .replace("/home/dev", home.to_str().unwrap());
    serde_json::from_str(&text).unwrap()
}

/// Before: the basename rule filed every event after the agent's `cd src`
/// under a project `src`.
#[test]
fn a_real_session_that_runs_cd_src_stays_in_its_project() {
    let (home, demo) = demo("[capture]\nignore_paths = ['secret/**']\n");
    let index: Value =
        serde_json::from_slice(&fs::read(fixture(&format!("{FIXTURES}/index.json"))).unwrap())
            .unwrap();
    let mut moved = 0;
    for e in index.as_array().unwrap() {
        let p = payload(home.path(), e["file"].as_str().unwrap());
        moved += usize::from(p["cwd"].as_str().is_some_and(|c| c.ends_with("/src")));
        hook(home.path(), &p, &[]);
    }
    assert!(moved > 10, "the fixture session must run in src: {moved}");
    drain(home.path());
    let by = projects(home.path());
    assert_eq!(by.keys().collect::<Vec<_>>(), ["default/demo"], "{by:?}");

    // The next session's briefing and `recent` (in the project) agree.
    let start = json!({"session_id": "next", "cwd": demo, "hook_event_name": "SessionStart", "source": "startup"});
    let env: Value = serde_json::from_slice(&hook(home.path(), &start, &[])).unwrap();
    let briefing = env["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| panic!("no briefing: {env}"))
        .to_string();
    let out = memhook(home.path())
        .args(["recent", "--json", "--limit", "1000"])
        .current_dir(&demo)
        .output()
        .unwrap();
    let recent = String::from_utf8(out.stdout).unwrap();
    assert_eq!(recent.lines().count(), by["default/demo"], "{recent}");
    assert!(
        briefing.starts_with("memhook briefing for default/demo:"),
        "{briefing}"
    );
    // The session that ran `cd src`: the briefing counts every tool call
    // `recent` has for it, those made in src included.
    let calls: std::collections::BTreeSet<String> = recent
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| {
            v["session_id"] == "4c3ac1bf-95d6-487f-a6bc-140cd0de6f2b" && v["subagent"] == false
        })
        .filter_map(|v| v["tool_call_id"].as_str().map(str::to_string))
        .collect();
    assert!(
        briefing.contains(&format!("{} tool calls", calls.len())),
        "{} tool calls: {briefing}",
        calls.len()
    );
    // The last prompt the session made is in both.
    let last_prompt = payload(home.path(), "UserPromptSubmit.json")["prompt"]
        .as_str()
        .unwrap()
        .chars()
        .take(30)
        .collect::<String>();
    assert!(recent.contains(&last_prompt), "{recent}");
}

fn prompt(home: &Path, session: &str, cwd: &Path, text: &str, env: &[(&str, &str)]) {
    let p = json!({"session_id": session, "cwd": cwd, "hook_event_name": "UserPromptSubmit", "prompt": text});
    hook(home, &p, env);
}

#[test]
fn a_marker_or_env_naming_a_scope_switches_and_a_new_session_starts_fresh() {
    let (home, demo) = demo("[capture]\nignore_paths = []\n");
    let lib = demo.join("lib");
    fs::create_dir_all(&lib).unwrap();
    fs::write(lib.join(".ai-memory.toml"), "project = \"library\"\n").unwrap();
    let h = home.path();
    prompt(h, "s1", &demo, "one in demo", &[]);
    prompt(h, "s1", &demo.join("src"), "two in src", &[]);
    // A subdirectory whose marker names a scope: the session moves there,
    // and stays there when it goes on to a derived directory.
    prompt(h, "s1", &lib, "three in lib", &[]);
    prompt(h, "s1", &demo.join("src"), "four back in src", &[]);
    // The environment names a scope: it wins.
    prompt(
        h,
        "s1",
        &demo,
        "five by env",
        &[("AI_MEMORY_PROJECT", "envproj")],
    );
    // A new session in src starts where it is.
    prompt(h, "s2", &demo.join("src"), "six new session", &[]);
    drain(h);
    let by = projects(h);
    let want: BTreeMap<String, usize> = [
        ("default/demo", 2),
        ("default/library", 2),
        ("default/envproj", 1),
        ("default/src", 1),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(by, want);
}

/// A session quarantined for claiming a scope another root bound stays
/// quarantined when it moves on to a directory no marker names.
#[test]
fn a_quarantined_session_stays_quarantined() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let claim = "workspace = \"acme\"\nproject = \"api\"\n";
    let (owner, other, plain) = (h.join("owner"), h.join("other"), h.join("plain"));
    for d in [&owner, &other, &plain] {
        fs::create_dir_all(d).unwrap();
    }
    fs::write(owner.join(".ai-memory.toml"), claim).unwrap();
    fs::write(other.join(".ai-memory.toml"), claim).unwrap();
    prompt(h, "s0", &owner, "binds acme/api", &[]);
    prompt(h, "s1", &other, "claims acme/api", &[]);
    prompt(h, "s1", &plain, "moves on", &[]);
    drain(h);
    let by = projects(h);
    assert_eq!(by.get("acme/api"), Some(&1), "{by:?}");
    let quarantine: Vec<_> = by
        .iter()
        .filter(|(k, _)| k.starts_with("quarantine/api."))
        .collect();
    assert_eq!(quarantine.len(), 1, "{by:?}");
    assert_eq!(*quarantine[0].1, 2, "{by:?}");
    assert_eq!(by.len(), 2, "{by:?}");
    // `memhook trust` there counts at the session's next event that makes
    // the claim, and the session then follows it.
    let out = memhook(h).arg("trust").arg(&other).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    prompt(h, "s1", &other, "claims it trusted", &[]);
    prompt(h, "s1", &plain, "moves on trusted", &[]);
    drain(h);
    assert_eq!(projects(h).get("acme/api"), Some(&3), "{:?}", projects(h));
}

/// A marker that names only the workspace (the project from the basename,
/// as in docs/marker-file.md's example): `cd src` keeps the project.
#[test]
fn a_workspace_only_marker_keeps_the_sessions_project() {
    let (home, demo) = demo("workspace = \"acme\"\n");
    let h = home.path();
    prompt(h, "s1", &demo, "in demo", &[]);
    prompt(h, "s1", &demo.join("src"), "in src", &[]);
    prompt(h, "s2", &demo.join("src"), "a new session in src", &[]);
    drain(h);
    let by = projects(h);
    let want: BTreeMap<String, usize> = [("acme/demo", 2), ("acme/src", 1)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    assert_eq!(by, want);
}
