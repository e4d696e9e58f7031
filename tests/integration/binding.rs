//! Integration tests for scope binding (DESIGN §11): real git repositories
//! made with `git` in a temp HOME; the real binary's hook, `show`, `trust`,
//! `untrust`, `recent`, `search` and `mcp`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Value};

use crate::support::binaries::{drain, memhook, run_with_stdin};
use crate::support::fixtures::fixture;

const MARKER: &str = "workspace = \"default\"\nproject = \"alpha\"\n";

/// Run git in `dir` with a clean, fixed configuration.
fn git(home: &Path, dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// A repository at `dir` whose first commit holds the marker and `file`.
fn repo(home: &Path, dir: &Path, file: &str) {
    std::fs::create_dir_all(dir).unwrap();
    git(home, dir, &["init", "-q"]);
    std::fs::write(dir.join(".ai-memory.toml"), MARKER).unwrap();
    std::fs::write(dir.join(file), file).unwrap();
    git(home, dir, &["add", "-A"]);
    git(home, dir, &["commit", "-q", "-m", file]);
}

fn payload(event: &str, cwd: &Path, session: &str) -> Value {
    let f = fixture(&format!("agents/claude-code/2.1.328/{event}.json"));
    let mut p: Value = serde_json::from_slice(&std::fs::read(f).unwrap()).unwrap();
    p["cwd"] = json!(cwd);
    p["session_id"] = json!(session);
    p
}

/// One hook event; hooks deliver nothing themselves (`memhook drain` does).
fn hook(home: &Path, event: &str, p: &Value) -> Output {
    let name = event.split('-').next().unwrap();
    let mut c = memhook(home);
    c.env("MEMHOOK_NO_HOOK_DELIVERY", "1").args([
        "hook",
        "--agent",
        "claude-code",
        "--event",
        name,
    ]);
    let out = run_with_stdin(c, p.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    out
}

fn prompt(home: &Path, cwd: &Path, session: &str, text: &str) {
    let mut p = payload("UserPromptSubmit", cwd, session);
    p["prompt"] = json!(text);
    hook(home, "UserPromptSubmit", &p);
    drain(home);
}

/// The session-start envelope's briefing (`None` for `{}`) and stderr.
fn session_start(home: &Path, cwd: &Path, session: &str) -> (Option<String>, String) {
    let out = hook(
        home,
        "SessionStart-startup",
        &payload("SessionStart-startup", cwd, session),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map(str::to_string);
    if ctx.is_none() {
        assert_eq!(v, json!({}), "nothing to say is {{}}");
    }
    (ctx, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn show(home: &Path, cwd: &Path) -> Value {
    let out = memhook(home)
        .args(["show", "--json", "--cwd"])
        .arg(cwd)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v["binding"].clone()
}

fn run(home: &Path, args: &[&str], cwd: &Path) -> Output {
    memhook(home).args(args).current_dir(cwd).output().unwrap()
}

/// `recent`/`search` rows (JSON lines) as `workspace/project` strings.
fn scopes_of(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            format!(
                "{}/{}",
                v["workspace"].as_str().unwrap(),
                v["project"].as_str().unwrap()
            )
        })
        .collect()
}

/// One `memhook mcp` conversation in `cwd`: initialize, then `calls`.
fn mcp(home: &Path, cwd: &Path, calls: &[(&str, Value)]) -> Vec<Value> {
    let mut lines = vec![json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
    .to_string()];
    for (i, (tool, args)) in calls.iter().enumerate() {
        lines.push(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}})
            .to_string(),
        );
    }
    let mut c = memhook(home);
    c.arg("mcp").arg("--cwd").arg(cwd);
    let out = run_with_stdin(c, (lines.join("\n") + "\n").as_bytes());
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["result"]["structuredContent"].clone())
        .collect()
}

struct World {
    _t: tempfile::TempDir,
    home: PathBuf,
    src: PathBuf,
    /// `src/alpha`: a repository whose marker names default/alpha.
    alpha: PathBuf,
}

/// A temp HOME with the alpha repository (not yet bound).
fn world() -> World {
    let t = tempfile::tempdir().unwrap();
    let home = t.path().join("home");
    let src = home.join("src");
    let alpha = src.join("alpha");
    repo(&home, &alpha, "README.md");
    World {
        _t: t,
        home,
        src,
        alpha,
    }
}

/// [`world`] with default/alpha bound to the alpha repository.
fn bound_world() -> World {
    let w = world();
    prompt(&w.home, &w.alpha, "s1", "bind it");
    assert_eq!(show(&w.home, &w.alpha)["state"], "bound-here");
    w
}

#[test]
fn a_hostile_clone_claiming_a_bound_scope_gets_nothing_until_trusted() {
    let w = world();
    let (home, alpha, hostile) = (&w.home, w.alpha.clone(), w.src.join("hostile"));
    repo(home, &hostile, "evil.txt");

    // The first root to write binds default/alpha and builds its memory.
    assert_eq!(show(home, &alpha)["state"], "unbound");
    prompt(
        home,
        &alpha,
        "s1",
        "alpha plan: rotate the quokka certificates",
    );
    let b = show(home, &alpha);
    assert_eq!(b["state"], "bound-here", "{b}");
    assert_eq!(b["root"], json!(alpha));
    let r = mcp(
        home,
        &alpha,
        &[(
            "memory_write",
            json!({"path": "/MEMORY.md", "content": "alpha index: quokka", "if_version": "new"}),
        )],
    );
    assert_eq!(r[0]["outcome"], "ok", "{r:?}");
    let (ctx, _) = session_start(home, &alpha, "s2");
    let ctx = ctx.expect("the bound root is briefed");
    assert!(ctx.contains("quokka"), "{ctx}");
    drain(home);

    // Another repository whose marker names the same scope.
    let b = show(home, &hostile);
    assert_eq!(b["state"], "untrusted", "{b}");
    assert_eq!(b["trusted"], false);
    assert_eq!(b["bound_root"], json!(alpha));
    assert_eq!(
        b["run"],
        json!(format!("memhook trust {}", hostile.display()))
    );
    let quarantine = b["quarantine"].as_str().unwrap().to_string();
    assert!(quarantine.starts_with("quarantine/alpha."), "{quarantine}");

    let (ctx, stderr) = session_start(home, &hostile, "h1");
    assert_eq!(ctx, None, "no briefing from the claimed scope");
    assert!(
        stderr.contains("not trusted") && stderr.contains("memhook trust"),
        "{stderr}"
    );
    prompt(home, &hostile, "h1", "hostile wombat prompt");
    drain(home);
    let all = scopes_of(&run(home, &["search", "wombat", "--all", "--json"], &alpha));
    assert_eq!(
        all,
        vec![quarantine.clone()],
        "its captures land in quarantine"
    );

    // No memory of the claimed scope: recent, search, MCP.
    let recent = scopes_of(&run(home, &["recent", "--json"], &hostile));
    assert!(
        !recent.is_empty() && recent.iter().all(|s| *s == quarantine),
        "{recent:?}"
    );
    assert!(scopes_of(&run(home, &["search", "quokka", "--json"], &hostile)).is_empty());
    let r = mcp(
        home,
        &hostile,
        &[
            ("memory_read", json!({"path": "/MEMORY.md"})),
            ("memory_list", json!({})),
            ("memory_search", json!({"query": "quokka"})),
        ],
    );
    assert_ne!(r[0]["outcome"], "ok", "{r:?}");
    assert!(!r[0].to_string().contains("quokka"), "{r:?}");
    assert_eq!(r[1]["entries"], json!([]), "{r:?}");
    assert_eq!(r[2]["entries"], json!([]), "{r:?}");
    // ... while the bound root still sees its own.
    assert_eq!(
        scopes_of(&run(home, &["search", "quokka", "--json"], &alpha)),
        ["default/alpha"]
    );

    // `memhook trust` there makes it trusted; `untrust` reverses it.
    let out = run(home, &["trust"], &hostile);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(show(home, &hostile)["state"], "trusted");
    let (ctx, _) = session_start(home, &hostile, "h2");
    assert!(ctx.expect("trusted now").contains("quokka"));
    let out = memhook(home).arg("untrust").arg(&hostile).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(show(home, &hostile)["state"], "untrusted");
    assert_eq!(session_start(home, &hostile, "h3").0, None);
    // The bound root keeps its scope and cannot untrust itself.
    let out = run(home, &["untrust"], &alpha);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("owns it"),
        "{out:?}"
    );
}

#[test]
fn clones_worktrees_and_moved_checkouts_are_the_same_root() {
    let w = bound_world();
    let (home, alpha) = (&w.home, w.alpha.clone());

    // `git clone`: same first commit.
    git(home, &w.src, &["clone", "-q", "alpha", "copy"]);
    let b = show(home, &w.src.join("copy"));
    assert_eq!(b["state"], "same-repository", "{b}");
    assert_eq!(
        b["run"],
        json!(format!("memhook untrust {}", w.src.join("copy").display()))
    );
    assert!(session_start(home, &w.src.join("copy"), "c1").0.is_some());

    // `git worktree add`: the main work tree is the root.
    git(home, &alpha, &["worktree", "add", "-q", "../alpha-wt"]);
    let b = show(home, &w.src.join("alpha-wt"));
    assert_eq!(b["state"], "bound-here", "{b}");
    assert_eq!(b["root"], json!(alpha));

    // A moved checkout keeps its identity.
    let moved = w.src.join("moved");
    std::fs::rename(&alpha, &moved).unwrap();
    assert_eq!(show(home, &moved)["state"], "same-repository");
    assert!(session_start(home, &moved, "m1").0.is_some());
}

#[test]
fn another_history_with_the_same_remote_url_is_the_same_root() {
    let w = world();
    let (home, alpha) = (&w.home, w.alpha.clone());
    git(
        home,
        &alpha,
        &[
            "remote",
            "add",
            "origin",
            "https://Example.com/acme/alpha.git",
        ],
    );
    prompt(home, &alpha, "s1", "bind it");
    // A shallow re-creation: other history, same remote (spelled otherwise).
    let mirror = w.src.join("mirror");
    repo(home, &mirror, "other.txt");
    assert_eq!(show(home, &mirror)["state"], "untrusted");
    let again = w.src.join("again");
    repo(home, &again, "other.txt");
    git(
        home,
        &again,
        &["remote", "add", "upstream", "git@example.com:acme/alpha"],
    );
    assert_eq!(show(home, &again)["state"], "same-repository");
}

#[test]
fn a_corrupt_ledger_fails_closed_and_the_hook_keeps_the_event() {
    let w = bound_world();
    let (home, alpha) = (&w.home, w.alpha.clone());
    let ledger = PathBuf::from(show(home, &alpha)["ledger"].as_str().unwrap());
    std::fs::write(ledger.join("owner"), "{ not json").unwrap();
    let b = show(home, &alpha);
    assert_eq!(b["state"], "untrusted", "{b}");
    assert!(b["reason"].as_str().unwrap().contains("delete"), "{b}");

    let mut p = payload("UserPromptSubmit", &alpha, "s2");
    p["prompt"] = json!("kept despite the ledger");
    let out = hook(home, "UserPromptSubmit", &p);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("memhook: scope default/alpha is not trusted"));
    drain(home);
    let got = scopes_of(&run(
        home,
        &["search", "despite", "--all", "--json"],
        &alpha,
    ));
    assert_eq!(got.len(), 1);
    assert!(got[0].starts_with("quarantine/alpha."), "{got:?}");

    // Deleting the ledger directory rebinds on the next event.
    std::fs::remove_dir_all(&ledger).unwrap();
    prompt(home, &alpha, "s3", "again");
    assert_eq!(show(home, &alpha)["state"], "bound-here");
}

#[test]
fn env_named_scopes_are_trusted_and_trust_usage_errors_exit_2() {
    let w = bound_world();
    let home = &w.home;
    let hostile = w.src.join("hostile");
    repo(home, &hostile, "evil.txt");
    // The user's own environment names the scope: trusted, no binding check.
    let out = memhook(home)
        .env("AI_MEMORY_PROJECT", "alpha")
        .env("AI_MEMORY_WORKSPACE", "default")
        .args(["show", "--json", "--cwd"])
        .arg(&hostile)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["binding"]["state"], "env-trusted", "{v}");

    // No marker: nothing to trust.
    let plain = w.src.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let out = run(home, &["trust"], &plain);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("nothing to trust"));
    let out = run(home, &["trust", "/nonexistent/dir"], &plain);
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    // `trust` on an unbound scope binds it to this checkout.
    std::fs::write(plain.join(".ai-memory.toml"), "project = \"beta\"\n").unwrap();
    let out = run(home, &["trust"], &plain);
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("bound: default/beta"));
    assert_eq!(show(home, &plain)["state"], "bound-here");
}
