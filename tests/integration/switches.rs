//! Opt-in and pause through the real binary: `memhook disable` / `enable`,
//! `pause [--for]` / `resume`, and allowlist mode
//! (`install-hooks --capture-mode allowlist`). None of them edits a file in
//! the project.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::binaries::{hook_with_stdin_file, memhook};

fn prompt(home: &Path, cwd: &Path, session: &str, text: &str) -> Value {
    let p = json!({"session_id": session, "cwd": cwd, "prompt": text});
    let mut c = hook_with_stdin_file(home, "claude-code", p.to_string().as_bytes());
    c.args(["--event", "UserPromptSubmit"])
        .current_dir(cwd)
        .env("MEMHOOK_NO_HOOK_DELIVERY", "1");
    let out = c.output().unwrap();
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

fn start(home: &Path, cwd: &Path, session: &str) -> String {
    let p = json!({"session_id": session, "cwd": cwd, "hook_event_name": "SessionStart", "source": "startup"});
    let mut c = hook_with_stdin_file(home, "claude-code", p.to_string().as_bytes());
    c.current_dir(cwd)
        .env("MEMHOOK_NO_HOOK_DELIVERY", "1")
        .env(memhook_hook::budget::BUDGET_ENV, "10000");
    let out = c.output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or("")
        .to_string()
}

fn run(home: &Path, cwd: &Path, args: &[&str]) -> String {
    let out = memhook(home).args(args).current_dir(cwd).output().unwrap();
    assert!(out.status.success(), "{args:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Prompts stored so far (after a drain), across every project.
fn stored(home: &Path, cwd: &Path) -> Vec<String> {
    run(home, cwd, &["drain"]);
    run(home, cwd, &["recent", "--all", "--json"])
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r["event"] == "user-prompt")
        .map(|r| r["title"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn disable_and_enable_a_project() {
    let home = tempfile::tempdir().unwrap();
    let api = home.path().join("api");
    std::fs::create_dir_all(&api).unwrap();
    prompt(home.path(), &api, "s1", "first words");
    assert_eq!(stored(home.path(), &api), ["first words"]);

    let out = run(home.path(), &api, &["disable"]);
    assert!(out.contains("default/api is disabled"), "{out}");
    let show = run(home.path(), &api, &["show"]);
    assert!(
        show.contains("switch     default/api is disabled"),
        "{show}"
    );
    let v: Value = serde_json::from_str(&run(home.path(), &api, &["show", "--json"])).unwrap();
    assert!(v["switch"].as_str().unwrap().contains("disabled"), "{v}");
    // Nothing captured, nothing briefed, although the previous session
    // holds a prompt.
    prompt(home.path(), &api, "s2", "while disabled");
    assert_eq!(start(home.path(), &api, "s3"), "");
    assert_eq!(stored(home.path(), &api), ["first words"]);
    // Other projects are untouched.
    let web = home.path().join("web");
    std::fs::create_dir_all(&web).unwrap();
    prompt(home.path(), &web, "w1", "web words");
    assert_eq!(stored(home.path(), &api).len(), 2);

    run(home.path(), &api, &["enable"]);
    prompt(home.path(), &api, "s4", "enabled again");
    assert!(stored(home.path(), &api).contains(&"enabled again".to_string()));
    assert!(start(home.path(), &api, "s5").contains("enabled again"));
    // No file in the project was written.
    assert_eq!(std::fs::read_dir(&api).unwrap().count(), 0);
}

#[test]
fn pause_for_a_while_then_resume() {
    let home = tempfile::tempdir().unwrap();
    let api = home.path().join("api");
    std::fs::create_dir_all(&api).unwrap();
    prompt(home.path(), &api, "s1", "before the pause");
    let out = run(home.path(), &api, &["pause", "--for", "2h"]);
    assert!(out.contains("paused for every project until 20"), "{out}");
    // For people: local time with its offset (`2026-12-04 16:05:03 +00:00`).
    let at = &out[out.find("until ").unwrap() + 6..];
    let b = at.as_bytes();
    assert!(
        b.len() >= 26
            && b[10] == b' '
            && b[19] == b' '
            && matches!(b[20], b'+' | b'-')
            && b[23] == b':',
        "{out}"
    );
    let status = run(home.path(), &api, &["status"]);
    assert!(
        status.contains("capture is paused for every project until"),
        "{status}"
    );
    let v: Value = serde_json::from_str(&run(home.path(), &api, &["status", "--json"])).unwrap();
    assert!(v["paused"].is_string(), "{v}");
    prompt(home.path(), &api, "s2", "during the pause");
    run(home.path(), &api, &["drain"]);
    // A pause stops capture, not the briefing.
    assert!(start(home.path(), &api, "s3").contains("before the pause"));
    assert_eq!(stored(home.path(), &api), ["before the pause"]);
    run(home.path(), &api, &["resume"]);
    prompt(home.path(), &api, "s4", "after the pause");
    assert_eq!(stored(home.path(), &api).len(), 2);
    let out = memhook(home.path())
        .args(["pause", "--for", "forever"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

/// `install-hooks --agent claude-code --apply --capture-mode MODE`.
fn set_mode(home: &Path, mode: &str) -> String {
    run(
        home,
        home,
        &[
            "install-hooks",
            "--agent",
            "claude-code",
            "--apply",
            "--capture-mode",
            mode,
        ],
    )
}

#[test]
fn allowlist_captures_only_marked_or_enabled_projects() {
    let home = tempfile::tempdir().unwrap();
    let plain = home.path().join("plain");
    let marked = home.path().join("marked");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::create_dir_all(&marked).unwrap();
    std::fs::write(marked.join(".ai-memory.toml"), "project = \"marked\"\n").unwrap();
    let out = set_mode(home.path(), "allowlist");
    assert!(out.contains("capture mode: allowlist"), "{out}");
    let mode = home.path().join(".memhook-data/capture-mode");
    assert_eq!(std::fs::read_to_string(&mode).unwrap().trim(), "allowlist");

    prompt(home.path(), &plain, "p1", "unmarked words");
    prompt(home.path(), &marked, "m1", "marked words");
    assert_eq!(stored(home.path(), &plain), ["marked words"]);
    let show = run(home.path(), &plain, &["show"]);
    assert!(
        show.contains("allowlist mode: default/plain has no marker"),
        "{show}"
    );

    run(home.path(), &plain, &["enable"]);
    prompt(home.path(), &plain, "p2", "opted in");
    assert_eq!(stored(home.path(), &plain).len(), 2);

    set_mode(home.path(), "denylist");
    let other = home.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    prompt(home.path(), &other, "o1", "denylist again");
    assert_eq!(stored(home.path(), &other).len(), 3);
}

/// `--marker` writes the switch into the repository's marker, keeping its
/// comments; without it the marker is untouched. The marker's
/// `enabled = false` holds in every clone, beats a local `enable`, and
/// `enable --marker` turns it back on.
#[test]
fn disable_and_enable_with_the_marker() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("shop");
    let sub = repo.join("src/cart");
    std::fs::create_dir_all(&sub).unwrap();
    let git = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(git.success());
    let marker = repo.join(".ai-memory.toml");
    let original = "# shared with the team\nproject = \"shop\"   # pinned\n\n[capture]\n# never the keys\nignore_paths = [\"secrets/**\"]\n";
    std::fs::write(&marker, original).unwrap();

    // Without --marker the tracked file is not touched.
    run(home.path(), &sub, &["disable"]);
    assert_eq!(std::fs::read_to_string(&marker).unwrap(), original);
    run(home.path(), &sub, &["enable"]);

    let out = run(home.path(), &sub, &["disable", "--marker"]);
    assert!(
        out.contains("updated") && out.contains(".ai-memory.toml"),
        "{out}"
    );
    let text = std::fs::read_to_string(&marker).unwrap();
    assert!(
        text.starts_with("# shared with the team\nproject = \"shop\"   # pinned\n"),
        "{text}"
    );
    assert!(
        text.contains("enabled = false") && text.contains("# never the keys\n"),
        "{text}"
    );

    // A fresh data dir (another machine, another clone) follows the marker:
    // nothing captured or briefed, and show says why.
    let other = tempfile::tempdir().unwrap();
    prompt(other.path(), &sub, "o1", "on another machine");
    assert!(stored(other.path(), &sub).is_empty());
    let show = run(other.path(), &sub, &["show"]);
    assert!(show.contains("disabled by its marker"), "{show}");
    // A plain `enable` cannot override the marker and says so.
    let out = memhook(other.path())
        .arg("enable")
        .current_dir(&sub)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("enable --marker"),
        "{out:?}"
    );

    let out = run(other.path(), &sub, &["enable", "--marker"]);
    assert!(out.contains("updated"), "{out}");
    let text = std::fs::read_to_string(&marker).unwrap();
    assert!(
        text.contains("enabled = true") && text.contains("# pinned"),
        "{text}"
    );
    prompt(other.path(), &sub, "o2", "back on");
    assert_eq!(stored(other.path(), &sub), ["back on"]);
}

/// Under allowlist, `enable --marker` in a repository without a marker
/// creates one at the checkout's top level, which opts the tree in for
/// every install.
#[test]
fn enable_with_the_marker_creates_one_at_the_top_level() {
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("notes");
    let sub = repo.join("docs");
    std::fs::create_dir_all(&sub).unwrap();
    assert!(std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(&repo)
        .status()
        .unwrap()
        .success());
    let out = run(home.path(), &sub, &["enable", "--marker"]);
    assert!(out.contains("created"), "{out}");
    let text = std::fs::read_to_string(repo.join(".ai-memory.toml")).unwrap();
    assert!(text.contains("enabled = true"), "{text}");
    assert!(!sub.join(".ai-memory.toml").exists());

    let other = tempfile::tempdir().unwrap();
    set_mode(other.path(), "allowlist");
    prompt(other.path(), &sub, "n1", "opted in by the marker");
    assert_eq!(stored(other.path(), &sub), ["opted in by the marker"]);
}
