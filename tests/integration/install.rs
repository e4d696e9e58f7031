//! Integration tests for `install-hooks`, `uninstall-hooks`, `doctor` and
//! `install-mcp`, driving the real binary against temporary HOMEs.
//!
//! Each test names the acceptance check of integrations.md §5 it proves
//! ("check N"). Checks that do not apply are listed in docs/install.md.

use crate::support::binaries::{bin, memhook, run_with_stdin};
use crate::support::fixtures::fixture;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The agents with a hook config file, and where it lands under HOME.
const AGENTS: &[(&str, &str)] = &[
    ("claude-code", ".claude/settings.json"),
    ("codex", ".codex/hooks.json"),
    ("opencode", ".config/opencode/plugins/memhook.js"),
    ("gemini-cli", ".gemini/settings.json"),
    ("cursor", ".cursor/hooks.json"),
    ("kilo", ".config/kilo/plugins/memhook.js"),
    ("droid", ".factory/hooks.json"),
    ("openhands", ".openhands/hooks.json"),
    ("pi", ".pi/agent/extensions/memhook.js"),
];

fn home() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// `memhook` with no XDG/relocation variables leaking in.
fn mh(home: &Path) -> Command {
    let mut c = memhook(home);
    for v in ["CLAUDE_CONFIG_DIR", "CODEX_HOME", "XDG_CONFIG_HOME"] {
        c.env_remove(v);
    }
    c
}

fn run(mut c: Command, args: &[&str]) -> Output {
    c.args(args).output().expect("run memhook")
}

fn ok(home: &Path, args: &[&str]) -> String {
    let out = run(mh(home), args);
    assert!(
        out.status.success(),
        "memhook {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap()
}

/// Run a freshly copied binary: another test thread forking while the copy
/// was open can make exec fail with ETXTBSY for a moment; retry then.
fn output_retry(c: &mut Command) -> Output {
    for _ in 0..100 {
        match c.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(std::time::Duration::from_millis(20))
            }
            r => return r.expect("run copied memhook"),
        }
    }
    panic!("copied binary stayed busy")
}

/// Every file under `dir` with its bytes and mtime (check 1's snapshot).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, (Vec<u8>, std::time::SystemTime)> {
    let mut m = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let meta = fs::symlink_metadata(e.path()).unwrap();
            if meta.is_dir() {
                stack.push(e.path());
            }
            let bytes = if meta.is_file() {
                fs::read(e.path()).unwrap()
            } else {
                Vec::new()
            };
            m.insert(e.path(), (bytes, meta.modified().unwrap()));
        }
    }
    m
}

fn backups(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map(|r| r.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    v.retain(|p| p.to_string_lossy().contains(".bak-"));
    v.sort();
    v
}

/// Every owned hook command in a JSON hook config (under `hooks`, or at the
/// top level where the file is the event map: Factory Droid's).
fn owned_commands(v: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(hooks) = v
        .get("hooks")
        .and_then(Value::as_object)
        .or_else(|| v.as_object())
    else {
        return out;
    };
    for (event, entries) in hooks {
        let Some(entries) = entries.as_array() else {
            continue;
        };
        for e in entries {
            let handlers: Vec<&Value> = match e.get("hooks") {
                Some(Value::Array(h)) => h.iter().collect(),
                _ => vec![e],
            };
            for h in handlers {
                let c = h["command"].as_str().unwrap_or("");
                let exe_ok = c.contains("/memhook ") || c.contains("/memhook' ");
                if c.contains(" hook --event ") && exe_ok && !c.contains("memhook-helper") {
                    out.push((event.clone(), c.to_string()));
                }
            }
        }
    }
    out
}

/// Apply a unified diff printed by a dry run to `old` (check 2).
fn patch(old: &str, diff: &str) -> String {
    let old: Vec<&str> = old.lines().collect();
    let mut out: Vec<String> = Vec::new();
    let mut at = 0usize;
    let mut lines = diff.lines().peekable();
    while let Some(l) = lines.next() {
        if let Some(h) = l.strip_prefix("@@ -") {
            let start: usize = h.split([',', ' ']).next().unwrap().parse().unwrap();
            let start = start.saturating_sub(1);
            let count: usize = h.split([',', ' ']).nth(1).unwrap().parse().unwrap();
            let start = if count == 0 {
                start + usize::from(start > 0)
            } else {
                start
            };
            out.extend(old[at..start.max(at)].iter().map(|s| s.to_string()));
            at = start.max(at);
            while let Some(b) = lines.peek() {
                if b.starts_with("@@") || b.starts_with("# ") {
                    break;
                }
                let b = lines.next().unwrap();
                match b.split_at(1) {
                    (" ", t) => {
                        assert_eq!(old[at], t);
                        out.push(t.into());
                        at += 1;
                    }
                    ("-", t) => {
                        assert_eq!(old[at], t);
                        at += 1;
                    }
                    ("+", t) => out.push(t.into()),
                    _ => panic!("bad diff line {b:?}"),
                }
            }
        }
    }
    out.extend(old[at..].iter().map(|s| s.to_string()));
    let mut s = out.join("\n");
    s.push('\n');
    s
}

// check 1: a dry run writes nothing — no file, dir, backup or data dir.
// check 2: the dry run's diff is exactly what --apply writes (every agent).
// check 3: a fresh --apply creates parent dirs, reports created, writes no backup.
#[test]
fn check_1_2_3_dry_run_is_exact_and_writes_nothing() {
    for (agent, rel) in AGENTS {
        let h = home();
        fs::write(h.path().join(".keep"), b"x").unwrap();
        let before = snapshot(h.path());
        let dry = ok(h.path(), &["install-hooks", "--agent", agent]);
        assert_eq!(
            snapshot(h.path()),
            before,
            "{agent}: dry run wrote something"
        );
        assert!(dry.contains("# dry run: nothing was written"), "{dry}");
        let out = ok(h.path(), &["install-hooks", "--agent", agent, "--apply"]);
        assert!(out.starts_with("created "), "{agent}: {out}");
        let file = h.path().join(rel);
        let written = fs::read_to_string(&file).unwrap();
        assert_eq!(
            patch("", &dry),
            written,
            "{agent}: dry run differs from apply"
        );
        assert!(backups(file.parent().unwrap()).is_empty());
        if rel.ends_with(".json") {
            let v = read_json(&file);
            assert!(!owned_commands(&v).is_empty());
        }
    }
}

// check 2 on an existing file: the diff of an update patches the old text
// into exactly the new one.
#[test]
fn check_2_update_diff_matches_apply() {
    let h = home();
    let f = h.path().join(".claude/settings.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    let old = "{\n  \"model\": \"opus\",\n  \"hooks\": {\n    \"Stop\": [\n      {\"matcher\": \"\", \"hooks\": [{\"type\": \"command\", \"command\": \"say done\"}]}\n    ]\n  },\n  \"theme\": \"dark\"\n}\n";
    fs::write(&f, old).unwrap();
    let dry = ok(h.path(), &["install-hooks", "--agent", "claude-code"]);
    assert_eq!(fs::read_to_string(&f).unwrap(), old);
    ok(
        h.path(),
        &["install-hooks", "--agent", "claude-code", "--apply"],
    );
    assert_eq!(patch(old, &dry), fs::read_to_string(&f).unwrap());
}

// check 4: re-apply is byte-identical, says "already up to date", no backup.
// check 5: after N applies every event holds exactly one owned entry.
#[test]
fn check_4_5_idempotent_and_no_duplicates() {
    for (agent, rel) in AGENTS {
        let h = home();
        ok(h.path(), &["install-hooks", "--agent", agent, "--apply"]);
        let file = h.path().join(rel);
        let first = fs::read(&file).unwrap();
        for _ in 0..3 {
            let out = ok(h.path(), &["install-hooks", "--agent", agent, "--apply"]);
            assert!(out.contains("already up to date"), "{agent}: {out}");
        }
        assert_eq!(fs::read(&file).unwrap(), first, "{agent}");
        assert!(backups(file.parent().unwrap()).is_empty(), "{agent}");
        if rel.ends_with(".json") {
            let owned = owned_commands(&read_json(&file));
            let mut events: Vec<&String> = owned.iter().map(|(e, _)| e).collect();
            let n = events.len();
            events.dedup();
            assert_eq!(events.len(), n, "{agent}: duplicate owned entries");
        }
    }
}

// check 5 (moved binary): installing from another memhook binary replaces
// the old entries instead of adding a second set.
#[test]
fn check_5_moved_binary_replaces_not_duplicates() {
    let h = home();
    ok(
        h.path(),
        &["install-hooks", "--agent", "claude-code", "--apply"],
    );
    let other = h.path().join("other bin");
    fs::create_dir_all(&other).unwrap();
    crate::support::binaries::install_copy(&other);
    let mut c = mh(h.path());
    c.current_dir(h.path());
    let mut c2 = Command::new(other.join("memhook"));
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => c2.env(k, v),
            None => c2.env_remove(k),
        };
    }
    let out = output_retry(c2.args(["install-hooks", "--agent", "claude-code", "--apply"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&h.path().join(".claude/settings.json"));
    let owned = owned_commands(&v);
    assert_eq!(owned.len(), 10, "{owned:?}");
    assert!(
        owned
            .iter()
            .all(|(_, c)| c.starts_with(&format!("'{}", other.display()))),
        "{owned:?}"
    );
}

const THIRD_PARTY: &str = r#"{
  "permissions": {"allow": ["Bash(ls:*)"]},
  "env": {"FOO": "1"},
  "mcpServers": {"x": {"command": "x"}},
  "hooks": {
    "Stop": [
      {"matcher": "", "hooks": [{"type": "command", "command": "notify-send done"}]}
    ],
    "Notification": [
      {"matcher": "", "hooks": [{"type": "command", "command": "/usr/bin/memhook-helper hook --event stop --agent claude-code"}]}
    ],
    "SessionStart": [
      {"matcher": "", "hooks": [{"type": "command", "command": "/opt/memhook/bin/memhook boot --quiet"}]},
      {"matcher": "", "hooks": [{"type": "command", "command": "~/.hooks/session-start.sh memhook hook --event x --agent y"}]}
    ]
  },
  "theme": "dark",
  "model": "opus",
  "futureKey": {"nested": [1, 2.5, null, true]}
}
"#;

// check 6: an unrelated hook under the same event keeps its position and
// content, ours comes after it.
// check 8: unrelated top-level keys round-trip unchanged, in order.
// check 14: commands that merely contain "memhook" are not ours.
// check 7: install → uninstall gives back a semantically equal file.
#[test]
fn check_6_7_8_14_third_party_entries_survive() {
    let h = home();
    let f = h.path().join(".claude/settings.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    fs::write(&f, THIRD_PARTY).unwrap();
    let original: Value = serde_json::from_str(THIRD_PARTY).unwrap();
    ok(
        h.path(),
        &["install-hooks", "--agent", "claude-code", "--apply"],
    );
    let v = read_json(&f);
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "permissions",
            "env",
            "mcpServers",
            "hooks",
            "theme",
            "model",
            "futureKey"
        ]
    );
    for k in [
        "permissions",
        "env",
        "mcpServers",
        "theme",
        "model",
        "futureKey",
    ] {
        assert_eq!(v[k], original[k], "{k}");
    }
    let stop = v["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop[0], original["hooks"]["Stop"][0]);
    assert!(stop[1]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .contains("--event stop"));
    assert_eq!(
        v["hooks"]["Notification"],
        original["hooks"]["Notification"]
    );
    let ss = v["hooks"]["SessionStart"].as_array().unwrap();
    assert_eq!(ss.len(), 3);
    assert_eq!(
        ss[..2],
        original["hooks"]["SessionStart"].as_array().unwrap()[..]
    );
    // Re-apply does not touch them either.
    ok(
        h.path(),
        &["install-hooks", "--agent", "claude-code", "--apply"],
    );
    assert_eq!(read_json(&f), v);
    // Uninstall: back to the original, semantically.
    let out = ok(
        h.path(),
        &["uninstall-hooks", "--agent", "claude-code", "--apply"],
    );
    assert!(out.starts_with("updated "), "{out}");
    assert_eq!(read_json(&f), original);
}

// check 7: containers memhook created are pruned on uninstall; ones the user
// had (even empty) stay.
#[test]
fn check_7_prunes_only_what_it_created() {
    let h = home();
    let f = h.path().join(".codex/hooks.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    let orig = json!({"theme": "x"});
    fs::write(&f, orig.to_string()).unwrap();
    ok(h.path(), &["install-hooks", "--agent", "codex", "--apply"]);
    ok(
        h.path(),
        &["uninstall-hooks", "--agent", "codex", "--apply"],
    );
    assert_eq!(read_json(&f), orig);

    let orig = json!({"hooks": {"Stop": [], "SessionStart": []}});
    fs::write(&f, orig.to_string()).unwrap();
    ok(h.path(), &["install-hooks", "--agent", "codex", "--apply"]);
    ok(
        h.path(),
        &["uninstall-hooks", "--agent", "codex", "--apply"],
    );
    assert_eq!(read_json(&f), orig);

    let orig = json!({"hooks": {}});
    fs::write(&f, orig.to_string()).unwrap();
    ok(h.path(), &["install-hooks", "--agent", "codex", "--apply"]);
    ok(
        h.path(),
        &["uninstall-hooks", "--agent", "codex", "--apply"],
    );
    assert_eq!(read_json(&f), orig);
}

// check 9: malformed JSON is refused: exit 2, file:line:col named, file
// byte-identical, no backup, never replaced by {}.
#[test]
fn check_9_malformed_is_refused() {
    let cases = [
        ("{\"a\": 1,\n}\n", "1:8"),
        ("{\n  // comment\n  \"a\": 1\n}\n", "2:3"),
        ("[1, 2]\n", "1:1"),
        ("\"text\"\n", "1:1"),
        ("{\"a\": \n", "2:1"),
    ];
    for (text, at) in cases {
        for cmd in ["install-hooks", "uninstall-hooks"] {
            let h = home();
            let f = h.path().join(".claude/settings.json");
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(&f, text).unwrap();
            let out = run(mh(h.path()), &[cmd, "--agent", "claude-code", "--apply"]);
            assert_eq!(out.status.code(), Some(2), "{text:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&format!("{}:{at}", f.display())),
                "{text:?}: {err}"
            );
            assert_eq!(fs::read_to_string(&f).unwrap(), text);
            assert_eq!(fs::read_dir(f.parent().unwrap()).unwrap().count(), 1);
        }
    }
}

// check 10: a wrong-typed container is refused and the file is untouched.
#[test]
fn check_10_wrong_type_is_refused() {
    for (agent, rel, text) in [
        ("claude-code", ".claude/settings.json", r#"{"hooks": []}"#),
        (
            "codex",
            ".codex/hooks.json",
            r#"{"hooks": {"Stop": {"x": 1}}}"#,
        ),
        (
            "cursor",
            ".cursor/hooks.json",
            r#"{"version": 2, "hooks": {}}"#,
        ),
        ("gemini-cli", ".gemini/settings.json", r#"{"hooks": "x"}"#),
    ] {
        let h = home();
        let f = h.path().join(rel);
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(&f, text).unwrap();
        let out = run(
            mh(h.path()),
            &["install-hooks", "--agent", agent, "--apply"],
        );
        assert_eq!(out.status.code(), Some(2), "{agent}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&f.display().to_string()), "{err}");
        assert_eq!(fs::read_to_string(&f).unwrap(), text);
        assert!(backups(f.parent().unwrap()).is_empty());
    }
}

// check 11: every update leaves a backup equal to the previous bytes; two
// updates within one second do not overwrite each other's backup.
// check 12: the file mode is preserved.
#[test]
fn check_11_12_backups_and_mode() {
    use std::os::unix::fs::PermissionsExt;
    let h = home();
    let f = h.path().join(".gemini/settings.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    fs::write(&f, "{\"theme\": \"a\"}\n").unwrap();
    fs::set_permissions(&f, fs::Permissions::from_mode(0o640)).unwrap();
    let mut versions = vec![fs::read(&f).unwrap()];
    for url in [
        "http://127.0.0.1:1",
        "http://127.0.0.1:2",
        "http://127.0.0.1:3",
    ] {
        ok(
            h.path(),
            &[
                "install-hooks",
                "--agent",
                "gemini-cli",
                "--apply",
                "--server-url",
                url,
            ],
        );
        versions.push(fs::read(&f).unwrap());
    }
    let baks = backups(f.parent().unwrap());
    assert_eq!(baks.len(), 3, "{baks:?}");
    let mut bak_bytes: Vec<Vec<u8>> = baks.iter().map(|b| fs::read(b).unwrap()).collect();
    bak_bytes.sort();
    let mut expected = versions[..3].to_vec();
    expected.sort();
    assert_eq!(bak_bytes, expected);
    assert_eq!(
        fs::metadata(&f).unwrap().permissions().mode() & 0o777,
        0o640
    );
}

// check 13: a symlinked config stays a symlink, its target is updated and
// the backup sits beside the link.
#[test]
fn check_13_symlink_kept() {
    let h = home();
    let dots = h.path().join("dotfiles/claude");
    fs::create_dir_all(&dots).unwrap();
    fs::write(dots.join("settings.json"), "{\"theme\": \"x\"}\n").unwrap();
    fs::create_dir_all(h.path().join(".claude")).unwrap();
    let link = h.path().join(".claude/settings.json");
    std::os::unix::fs::symlink("../dotfiles/claude/settings.json", &link).unwrap();
    ok(
        h.path(),
        &["install-hooks", "--agent", "claude-code", "--apply"],
    );
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let v = read_json(&dots.join("settings.json"));
    assert_eq!(owned_commands(&v).len(), 10);
    assert_eq!(backups(&h.path().join(".claude")).len(), 1);
    assert!(backups(&dots).is_empty());
    ok(
        h.path(),
        &["uninstall-hooks", "--agent", "claude-code", "--apply"],
    );
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        read_json(&dots.join("settings.json")),
        json!({"theme": "x"})
    );
}

// check 15: entries an older memhook wrote (other quoting, an event no
// longer wired) are recognised and replaced; third-party entries there stay.
#[test]
fn check_15_legacy_entries_migrate() {
    let h = home();
    let f = h.path().join(".claude/settings.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    let old = json!({"hooks": {
        "Stop": [{"matcher": "", "hooks": [{"type": "command", "command": "\"/old/place/memhook\" hook --event stop --agent claude-code"}]}],
        "PostToolBatch": [
            {"matcher": "", "hooks": [{"type": "command", "command": "/old/place/memhook hook --event post-tool-batch --agent claude-code"}]},
            {"matcher": "", "hooks": [{"type": "command", "command": "keep-me"}]}
        ]
    }});
    fs::write(&f, old.to_string()).unwrap();
    ok(
        h.path(),
        &["install-hooks", "--agent", "claude-code", "--apply"],
    );
    let v = read_json(&f);
    let owned = owned_commands(&v);
    assert_eq!(owned.len(), 10);
    assert!(owned.iter().all(|(_, c)| !c.contains("/old/place")));
    assert_eq!(
        v["hooks"]["PostToolBatch"],
        json!([{"matcher": "", "hooks": [{"type": "command", "command": "keep-me"}]}])
    );
}

// check 16: a bare re-apply keeps the strategy and server URL; an explicit
// --project-strategy basename downgrades.
// check 17: the URL is baked without its trailing slash; the token goes to
// the 0600 token file and never into the agent config.
#[test]
fn check_16_17_choices_survive_and_token_stays_out() {
    use std::os::unix::fs::PermissionsExt;
    let h = home();
    let token = "s3cr'et \"$tok\"";
    let out = run(
        {
            let mut c = mh(h.path());
            c.env("AI_MEMORY_AUTH_TOKEN", token);
            c
        },
        &[
            "install-hooks",
            "--agent",
            "codex",
            "--apply",
            "--project-strategy",
            "repo-root",
            "--server-url",
            "http://127.0.0.1:49374/",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = h.path().join(".codex/hooks.json");
    let text = fs::read_to_string(&f).unwrap();
    assert!(!text.contains("s3cr"), "token leaked into the config");
    let tok = h.path().join(".memhook-data/auth-token");
    assert_eq!(fs::read_to_string(&tok).unwrap(), token);
    assert_eq!(
        fs::metadata(&tok).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let cmds = owned_commands(&read_json(&f));
    assert!(
        cmds.iter().all(|(_, c)| c
            .ends_with("--server-url http://127.0.0.1:49374 --project-strategy repo-root")),
        "{cmds:?}"
    );
    let out = ok(h.path(), &["install-hooks", "--agent", "codex", "--apply"]);
    assert!(out.contains("already up to date"), "{out}");
    ok(
        h.path(),
        &[
            "install-hooks",
            "--agent",
            "codex",
            "--apply",
            "--project-strategy",
            "basename",
        ],
    );
    let cmds = owned_commands(&read_json(&f));
    assert!(
        cmds.iter()
            .all(|(_, c)| !c.contains("--project-strategy") && c.contains("--server-url")),
        "{cmds:?}"
    );
    let out = run(
        mh(h.path()),
        &[
            "install-hooks",
            "--agent",
            "codex",
            "--server-url",
            "ftp://x",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
}

// check 18: the generated commands run: each one, through `sh -c`, from a
// binary whose path has spaces and non-ASCII characters, exits 0 with JSON.
#[test]
fn check_18_generated_commands_run() {
    let h = home();
    let dir = h.path().join("My Tools/bïn ü");
    fs::create_dir_all(&dir).unwrap();
    let exe = crate::support::binaries::install_copy(&dir);
    let mut c = Command::new(&exe);
    c.env_clear()
        .env("HOME", h.path())
        .env("PATH", "/usr/bin:/bin")
        .env("AI_MEMORY_DATA_DIR", h.path().join("data dir"));
    let out = output_retry(c.args(["install-hooks", "--agent", "claude-code", "--apply"]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = read_json(&h.path().join(".claude/settings.json"));
    let payload = fs::read(fixture(
        "agents/claude-code/2.1.328/SessionStart-startup.json",
    ))
    .unwrap();
    let cmds = owned_commands(&v);
    assert_eq!(cmds.len(), 10);
    for (event, cmd) in cmds {
        assert!(cmd.starts_with('\''), "{cmd}");
        let mut sh = Command::new("sh");
        sh.arg("-c")
            .arg(&cmd)
            .env("HOME", h.path())
            .current_dir(h.path());
        let out = run_with_stdin(sh, &payload);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{event}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "{event}: stdout is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
    }
}

// check 23: CLAUDE_CONFIG_DIR and CODEX_HOME relocate the file (blank means
// unset), and the dry run names the same path --apply writes.
#[test]
fn check_23_relocation_variables() {
    let h = home();
    let reloc = h.path().join("elsewhere");
    for (agent, var, file) in [
        ("claude-code", "CLAUDE_CONFIG_DIR", "settings.json"),
        ("codex", "CODEX_HOME", "hooks.json"),
    ] {
        let mut c = mh(h.path());
        c.env(var, &reloc);
        let dry = String::from_utf8(run(c, &["install-hooks", "--agent", agent]).stdout).unwrap();
        assert!(
            dry.contains(&format!("+++ b{}", reloc.join(file).display())),
            "{dry}"
        );
        let mut c = mh(h.path());
        c.env(var, &reloc);
        let out = String::from_utf8(run(c, &["install-hooks", "--agent", agent, "--apply"]).stdout)
            .unwrap();
        assert!(
            out.starts_with(&format!("created {}", reloc.join(file).display())),
            "{out}"
        );
        let mut c = mh(h.path());
        c.env(var, "  ");
        let dry = String::from_utf8(run(c, &["install-hooks", "--agent", agent]).stdout).unwrap();
        assert!(
            dry.contains(&format!("+++ b{}", h.path().display())),
            "blank {var}: {dry}"
        );
    }
    // XDG_CONFIG_HOME moves the OpenCode plugin.
    let mut c = mh(h.path());
    c.env("XDG_CONFIG_HOME", h.path().join("xdg"));
    let out =
        String::from_utf8(run(c, &["install-hooks", "--agent", "opencode", "--apply"]).stdout)
            .unwrap();
    assert!(
        h.path().join("xdg/opencode/plugins/memhook.js").is_file(),
        "{out}"
    );
}

// check 25: a user's own plugin file with our name is neither replaced nor
// removed; ours is removed only with its banner and agent constant.
#[test]
fn check_25_generated_file_ownership() {
    let h = home();
    let f = h.path().join(".config/opencode/plugins/memhook.js");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    let mine = "export const Mine = async () => ({});\n";
    fs::write(&f, mine).unwrap();
    let out = run(
        mh(h.path()),
        &["install-hooks", "--agent", "opencode", "--apply"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not written by memhook"));
    let out = run(
        mh(h.path()),
        &["uninstall-hooks", "--agent", "opencode", "--apply"],
    );
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("leaving it alone"));
    assert_eq!(fs::read_to_string(&f).unwrap(), mine);
    fs::remove_file(&f).unwrap();
    ok(
        h.path(),
        &["install-hooks", "--agent", "opencode", "--apply"],
    );
    let out = ok(
        h.path(),
        &["uninstall-hooks", "--agent", "opencode", "--apply"],
    );
    assert!(out.starts_with("deleted "), "{out}");
    assert!(!f.exists());
    assert_eq!(fs::read_dir(f.parent().unwrap()).unwrap().count(), 0);
}

// check 26: flags that cannot take effect are refused.
#[test]
fn check_26_pointless_flags_refused() {
    let h = home();
    let out = run(
        mh(h.path()),
        &[
            "install-hooks",
            "--agent",
            "all",
            "--config-file",
            "/tmp/x.json",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--config-file"));
    // `all` with nothing installed says what it looked for.
    let mut c = mh(h.path());
    c.env("PATH", "/nonexistent");
    let out = run(c, &["install-hooks", "--agent", "all"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no supported agent found"));
}

// `all` wires exactly the agents whose config dir exists.
#[test]
fn all_means_agents_found_here() {
    let h = home();
    fs::create_dir_all(h.path().join(".codex")).unwrap();
    fs::create_dir_all(h.path().join(".gemini")).unwrap();
    let mut c = mh(h.path());
    c.env("PATH", "/nonexistent");
    let out = run(c, &["install-hooks", "--agent", "all", "--apply"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(h.path().join(".codex/hooks.json").is_file());
    assert!(h.path().join(".gemini/settings.json").is_file());
    assert!(!h.path().join(".claude").exists());
    assert!(!h.path().join(".cursor").exists());
    assert!(!h.path().join(".factory").exists());
}

/// `all` finds the newer agents by their config dirs too (Factory Droid,
/// OpenHands, pi, Cline) and wires each; uninstall `all` gives the dirs
/// back as they were.
#[test]
fn all_finds_droid_openhands_pi_and_cline() {
    let h = home();
    for d in [".factory", ".openhands", ".pi/agent", ".cline"] {
        fs::create_dir_all(h.path().join(d)).unwrap();
    }
    let before = snapshot(h.path());
    let mut c = mh(h.path());
    c.env("PATH", "/nonexistent");
    let out = run(c, &["install-hooks", "--agent", "all", "--apply"]);
    assert!(out.status.success(), "{out:?}");
    for f in [
        ".factory/hooks.json",
        ".openhands/hooks.json",
        ".pi/agent/extensions/memhook.js",
        ".cline/hooks/TaskStart",
        ".cline/hooks/PreToolUse",
    ] {
        assert!(h.path().join(f).is_file(), "{f}");
    }
    let mut c = mh(h.path());
    c.env("PATH", "/nonexistent");
    let out = run(c, &["uninstall-hooks", "--agent", "all", "--apply"]);
    assert!(out.status.success(), "{out:?}");
    let data = h.path().join(".memhook-data");
    let after: Vec<PathBuf> = snapshot(h.path())
        .into_keys()
        .filter(|p| !p.starts_with(&data))
        .collect();
    let was: Vec<PathBuf> = before
        .into_keys()
        .filter(|p| !p.starts_with(&data))
        .collect();
    assert_eq!(after, was, "uninstall left something behind");
}

// check 27: uninstall is a dry run by default; a second uninstall says there
// is nothing to remove.
#[test]
fn check_27_uninstall_dry_run_then_nothing_to_remove() {
    let h = home();
    ok(h.path(), &["install-hooks", "--agent", "cursor", "--apply"]);
    let f = h.path().join(".cursor/hooks.json");
    let before = fs::read(&f).unwrap();
    let dry = ok(h.path(), &["uninstall-hooks", "--agent", "cursor"]);
    assert!(dry.contains("-        \"command\""), "{dry}");
    assert_eq!(fs::read(&f).unwrap(), before);
    ok(
        h.path(),
        &["uninstall-hooks", "--agent", "cursor", "--apply"],
    );
    let again = ok(
        h.path(),
        &["uninstall-hooks", "--agent", "cursor", "--apply"],
    );
    assert!(again.contains("nothing to remove"), "{again}");
    // The file memhook created is gone again.
    assert!(!f.exists());
}

// check 28: Codex trust is surfaced after a change.
// check 29: an agent older than the profile's minimum version is flagged.
#[test]
fn check_28_29_codex_trust_notice_and_version_gate() {
    let h = home();
    let bindir = h.path().join("fakebin");
    fs::create_dir_all(&bindir).unwrap();
    let codex = bindir.join("codex");
    fs::write(&codex, "#!/bin/sh\necho 'codex-cli 0.100.0'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&codex, fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = mh(h.path());
    c.env("PATH", &bindir);
    let out = String::from_utf8(run(c, &["install-hooks", "--agent", "codex", "--apply"]).stdout)
        .unwrap();
    assert!(out.contains("/hooks"), "{out}");
    assert!(out.contains("trust"), "{out}");
    assert!(out.contains("0.100.0") && out.contains("0.145.0"), "{out}");
    let out = ok(h.path(), &["install-hooks", "--agent", "codex", "--apply"]);
    assert!(!out.contains("trust"), "no change, no notice: {out}");
}

// check 30: simultaneous --apply runs end with one valid file holding exactly
// one owned set.
#[test]
fn check_30_concurrent_applies() {
    let h = home();
    let f = h.path().join(".claude/settings.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    fs::write(&f, THIRD_PARTY).unwrap();
    let children: Vec<_> = (0..6)
        .map(|i| {
            let mut c = mh(h.path());
            c.args([
                "install-hooks",
                "--agent",
                "claude-code",
                "--apply",
                "--server-url",
            ])
            .arg(format!("http://127.0.0.1:{}", 1000 + i % 2))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for ch in children {
        let out = ch.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v = read_json(&f);
    let owned = owned_commands(&v);
    assert_eq!(owned.len(), 10, "{owned:?}");
    assert_eq!(v["theme"], "dark");
    assert_eq!(
        v["hooks"]["Stop"][0]["hooks"][0]["command"],
        "notify-send done"
    );
}

// install-mcp, every agent: dry run writes nothing and shows what --apply
// writes (checks 1, 2), fresh create (3), idempotent (4), remove gives back
// the original (7), unrelated keys kept (8).
#[test]
fn mcp_register_every_agent() {
    for (agent, rel, table) in [
        ("claude-code", ".claude.json", "mcpServers"),
        ("opencode", ".config/opencode/opencode.json", "mcp"),
        ("gemini-cli", ".gemini/settings.json", "mcpServers"),
        ("cursor", ".cursor/mcp.json", "mcpServers"),
        ("kilo", ".config/kilo/kilo.json", "mcp"),
        ("droid", ".factory/mcp.json", "mcpServers"),
        ("openhands", ".openhands/mcp.json", "mcpServers"),
    ] {
        let h = home();
        let f = h.path().join(rel);
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        let orig = json!({"theme": "x", table: {"other": {"command": "other-server"}}, "projects": {"/p": {"a": 1}}});
        fs::write(&f, serde_json::to_string_pretty(&orig).unwrap() + "\n").unwrap();
        let old = fs::read_to_string(&f).unwrap();
        let before = snapshot(h.path());
        let dry = ok(h.path(), &["install-mcp", "--agent", agent]);
        assert_eq!(snapshot(h.path()), before, "{agent}");
        let out = ok(h.path(), &["install-mcp", "--agent", agent, "--apply"]);
        assert!(out.starts_with("updated "), "{agent}: {out}");
        assert_eq!(
            patch(&old, &dry),
            fs::read_to_string(&f).unwrap(),
            "{agent}"
        );
        let v = read_json(&f);
        let entry = &v[table]["memhook"];
        let argv: Vec<String> = match &entry["command"] {
            Value::Array(a) => a.iter().map(|x| x.as_str().unwrap().to_string()).collect(),
            Value::String(c) => std::iter::once(c.clone())
                .chain(
                    entry["args"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_str().unwrap().to_string()),
                )
                .collect(),
            other => panic!("{agent}: {other}"),
        };
        assert_eq!(
            Path::new(&argv[0]),
            bin().canonicalize().unwrap().as_path(),
            "{agent}"
        );
        assert_eq!(
            argv[1..],
            [
                "--data-dir".to_string(),
                h.path().join(".memhook-data").display().to_string(),
                "mcp".into()
            ]
        );
        assert_eq!(v["theme"], "x");
        assert_eq!(v[table]["other"], orig[table]["other"]);
        let again = ok(h.path(), &["install-mcp", "--agent", agent, "--apply"]);
        assert!(again.contains("already up to date"), "{agent}: {again}");
        ok(
            h.path(),
            &["install-mcp", "--agent", agent, "--apply", "--remove"],
        );
        assert_eq!(read_json(&f), orig, "{agent}");
        let again = ok(
            h.path(),
            &["install-mcp", "--agent", agent, "--apply", "--remove"],
        );
        assert!(again.contains("nothing to remove"), "{agent}: {again}");
    }
}

// install-mcp for Codex edits config.toml with toml_edit: comments, order and
// other servers survive (check 8), remove restores the bytes (check 7).
#[test]
fn mcp_codex_toml_keeps_comments() {
    let h = home();
    let f = h.path().join(".codex/config.toml");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    let orig = "# my settings\nmodel = \"o3\" # pinned\n\n[mcp_servers.other]\ncommand = \"x\"\nargs = [\"--y\"]\n\n[profiles.fast]\nmodel = \"mini\"\n";
    fs::write(&f, orig).unwrap();
    ok(h.path(), &["install-mcp", "--agent", "codex", "--apply"]);
    let text = fs::read_to_string(&f).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel = \"o3\" # pinned\n"),
        "{text}"
    );
    assert!(
        text.contains("[mcp_servers.other]\ncommand = \"x\"\nargs = [\"--y\"]\n"),
        "{text}"
    );
    assert!(
        text.contains("[profiles.fast]\nmodel = \"mini\"\n"),
        "{text}"
    );
    assert!(text.contains("[mcp_servers.memhook]"), "{text}");
    let again = ok(h.path(), &["install-mcp", "--agent", "codex", "--apply"]);
    assert!(again.contains("already up to date"));
    ok(
        h.path(),
        &["install-mcp", "--agent", "codex", "--apply", "--remove"],
    );
    assert_eq!(fs::read_to_string(&f).unwrap(), orig);
    // A malformed config.toml is refused with line and column (check 9).
    fs::write(&f, "model = \n").unwrap();
    let out = run(
        mh(h.path()),
        &["install-mcp", "--agent", "codex", "--apply"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("{}:1:", f.display())));
}

// An MCP server named memhook that memhook did not write is neither replaced
// nor removed (check 14 / 25 for MCP entries).
#[test]
fn mcp_foreign_entry_is_left_alone() {
    let h = home();
    let f = h.path().join(".cursor/mcp.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    let orig = r#"{"mcpServers": {"memhook": {"command": "npx", "args": ["memhook-mcp"]}}}"#;
    fs::write(&f, orig).unwrap();
    let out = run(
        mh(h.path()),
        &["install-mcp", "--agent", "cursor", "--apply"],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did not write"));
    let out = run(
        mh(h.path()),
        &["install-mcp", "--agent", "cursor", "--apply", "--remove"],
    );
    assert!(out.status.success());
    assert_eq!(fs::read_to_string(&f).unwrap(), orig);
}

// doctor: not installed → no problem; installed from this binary → reported
// as such; a hook pointing at another (missing) binary is a problem (exit 1).
#[test]
fn doctor_reports_installation_and_binary() {
    let h = home();
    let doc = |h: &Path| -> (Option<i32>, Value) {
        let mut c = mh(h);
        c.env("PATH", "/nonexistent");
        let out = run(c, &["doctor", "--json"]);
        (
            out.status.code(),
            serde_json::from_slice(&out.stdout).unwrap(),
        )
    };
    let (code, v) = doc(h.path());
    assert_eq!(code, Some(0), "{v}");
    assert!(v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .all(|a| a["installed"] == false));
    ok(
        h.path(),
        &["install-hooks", "--agent", "gemini-cli", "--apply"],
    );
    ok(
        h.path(),
        &["install-hooks", "--agent", "opencode", "--apply"],
    );
    let (code, v) = doc(h.path());
    assert_eq!(code, Some(0), "{v}");
    for id in ["gemini-cli", "opencode"] {
        let a = v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == id)
            .unwrap();
        assert_eq!(a["installed"], true, "{a}");
        assert_eq!(a["points_to_this_binary"], true, "{a}");
        assert_eq!(a["events_wired"], a["events_expected"]);
        assert_eq!(
            a["data_dir"],
            h.path().join(".memhook-data").display().to_string()
        );
    }
    let f = h.path().join(".gemini/settings.json");
    let moved = fs::read_to_string(&f)
        .unwrap()
        .replace(&bin().display().to_string(), "/gone/memhook");
    fs::write(&f, moved).unwrap();
    let (code, v) = doc(h.path());
    assert_eq!(code, Some(1));
    let a = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "gemini-cli")
        .unwrap();
    assert_eq!(a["points_to_this_binary"], false);
    assert!(a["problems"].to_string().contains("/gone/memhook"));
    assert!(
        a["problems"]
            .to_string()
            .contains("hooks run /gone/memhook, not this binary ("),
        "{a}"
    );
}

// The data dir is baked only when it is not the default; `--data-dir` wins
// over AI_MEMORY_DATA_DIR.
#[test]
fn data_dir_baked_only_when_not_default() {
    let h = home();
    let mut c = mh(h.path());
    c.env_remove("AI_MEMORY_DATA_DIR");
    let out = run(c, &["install-hooks", "--agent", "cursor", "--apply"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let f = h.path().join(".cursor/hooks.json");
    let cmds = owned_commands(&read_json(&f));
    assert_eq!(cmds.len(), 8);
    assert!(
        cmds.iter().all(|(_, c)| !c.contains("--data-dir")),
        "{cmds:?}"
    );
    let flag = h.path().join("explicit data");
    let mut c = mh(h.path());
    c.arg("--data-dir").arg(&flag);
    let out = run(c, &["install-hooks", "--agent", "cursor", "--apply"]);
    assert!(out.status.success());
    let cmds = owned_commands(&read_json(&f));
    let want = format!("--data-dir '{}' hook", flag.display());
    assert!(cmds.iter().all(|(_, c)| c.contains(&want)), "{cmds:?}");
}

/// Every file and directory under `dir` (but `skip`) with its bytes.
fn tree(dir: &Path, skip: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    snapshot(dir)
        .into_iter()
        .filter(|(p, _)| !p.starts_with(skip))
        .map(|(p, (bytes, _))| {
            let is_dir = fs::symlink_metadata(&p).unwrap().is_dir();
            (p, (!is_dir).then_some(bytes))
        })
        .collect()
}

/// OpenCode: install → update (another server URL) → uninstall leaves the
/// HOME exactly as it was, file for file and byte for byte, whether the
/// user already had an OpenCode config dir with their own config and plugin
/// or nothing at all: no backup of the generated plugin, no directory made
/// for it, and nothing of OpenCode's own (package.json, node_modules) is
/// ever created by memhook.
#[test]
fn opencode_uninstall_restores_the_tree_byte_for_byte() {
    for users_own in [true, false] {
        let h = home();
        let cfg = h.path().join(".config/opencode");
        if users_own {
            fs::create_dir_all(cfg.join("plugins")).unwrap();
            fs::write(
                cfg.join("opencode.json"),
                "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  \"theme\": \"dark\"\n}\n",
            )
            .unwrap();
            fs::write(
                cfg.join("plugins/mine.js"),
                "export const Mine = async () => ({});\n",
            )
            .unwrap();
        }
        let data = h.path().join(".memhook-data");
        let before = tree(h.path(), &data);
        ok(
            h.path(),
            &["install-hooks", "--agent", "opencode", "--apply"],
        );
        for own in [
            "package.json",
            "package-lock.json",
            "node_modules",
            ".npmrc",
        ] {
            assert!(!cfg.join(own).exists(), "install created {own}");
        }
        let out = ok(
            h.path(),
            &[
                "install-hooks",
                "--agent",
                "opencode",
                "--apply",
                "--server-url",
                "http://127.0.0.1:5",
            ],
        );
        assert!(out.starts_with("updated "), "{out}");
        assert!(backups(&cfg.join("plugins")).is_empty());
        // The dry run names the directories --apply will remove with it.
        let dry = ok(h.path(), &["uninstall-hooks", "--agent", "opencode"]);
        assert_eq!(
            dry.contains(&format!("# and remove {} ", cfg.join("plugins").display())),
            !users_own,
            "{dry}"
        );
        assert_eq!(dry.contains("# and remove"), !users_own, "{dry}");
        let out = ok(
            h.path(),
            &["uninstall-hooks", "--agent", "opencode", "--apply"],
        );
        assert!(out.starts_with("deleted "), "{out}");
        assert_eq!(
            tree(h.path(), &data),
            before,
            "users_own={users_own}: uninstall did not restore the tree ({out})"
        );
    }
}

/// OpenCode npm-installs @opencode-ai/plugin into its config dir before it
/// loads any plugin: install-hooks says what that costs and how to avoid it
/// while OpenCode has not done it yet, and doctor shows the state.
#[test]
fn opencode_startup_install_cost_is_named_while_pending() {
    let h = home();
    let cfg = h.path().join(".config/opencode");
    let doctor_state = || -> Value {
        let mut c = mh(h.path());
        c.env("PATH", "/nonexistent");
        let out = run(c, &["doctor", "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "opencode")
            .unwrap()["startup_install"]
            .clone()
    };
    assert_eq!(doctor_state(), Value::Null, "not installed: nothing to say");
    for args in [
        &["install-hooks", "--agent", "opencode"][..],
        &["install-hooks", "--agent", "opencode", "--apply"][..],
    ] {
        let out = ok(h.path(), args);
        assert!(out.contains("@opencode-ai/plugin"), "{out}");
        assert!(out.contains("about 70 s"), "{out}");
        assert!(
            out.contains(&format!(
                "printf 'fetch-retries=0\\n' >> '{}/.npmrc'",
                cfg.display()
            )),
            "{out}"
        );
    }
    let s = doctor_state();
    assert_eq!(s["status"], "pending", "{s}");
    assert_eq!(s["dir"], cfg.display().to_string());
    // Once OpenCode's own install has succeeded there is nothing to say.
    let done = cfg.join("node_modules/@opencode-ai/plugin/package.json");
    fs::create_dir_all(done.parent().unwrap()).unwrap();
    fs::write(&done, "{}").unwrap();
    let out = ok(
        h.path(),
        &["install-hooks", "--agent", "opencode", "--apply"],
    );
    assert!(!out.contains("@opencode-ai/plugin"), "{out}");
    assert_eq!(doctor_state()["status"], "done");
}

/// Settings files in the dialect each agent reads (fixtures/install/): the
/// agent, where its file lives, and the fixture.
const DIALECT_FIXTURES: &[(&str, &str, &str)] = &[
    (
        "gemini-cli",
        ".gemini/settings.json",
        "gemini-comments-crlf.json",
    ),
    (
        "gemini-cli",
        ".gemini/settings.json",
        "gemini-tabs-hooks-comment-only.json",
    ),
    (
        "gemini-cli",
        ".gemini/settings.json",
        "gemini-no-hooks.json",
    ),
    (
        "gemini-cli",
        ".gemini/settings.json",
        "gemini-one-line.json",
    ),
    (
        "claude-code",
        ".claude/settings.json",
        "claude-bom-crlf.json",
    ),
];

/// Comments, BOM and line endings survive install; the dry run's diff is
/// what --apply writes and shows the real lines (comments included); a
/// second install is byte-identical; uninstall gives back the original
/// bytes; install-mcp and its removal do the same on a settings file that
/// also holds the hooks.
#[test]
fn commented_settings_round_trip_byte_for_byte() {
    for (agent, rel, name) in DIALECT_FIXTURES {
        let orig = fs::read(fixture(&format!("install/{name}"))).unwrap();
        let text = String::from_utf8(orig.clone()).unwrap();
        if name.contains("crlf") {
            assert!(
                text.contains("\r\n") && !text.replace("\r\n", "").contains('\n'),
                "{name}: the fixture lost its CRLF line endings (check .gitattributes)"
            );
        }
        if name.contains("bom") {
            assert!(orig.starts_with(b"\xef\xbb\xbf"), "{name}: BOM lost");
        }
        let h = home();
        let f = h.path().join(rel);
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        fs::write(&f, &orig).unwrap();
        let dry = ok(h.path(), &["install-hooks", "--agent", agent]);
        assert_eq!(fs::read(&f).unwrap(), orig, "{name}: the dry run wrote");
        let out = ok(h.path(), &["install-hooks", "--agent", agent, "--apply"]);
        assert!(out.starts_with("updated "), "{name}: {out}");
        let installed = fs::read_to_string(&f).unwrap();
        // The diff's lines are the file's lines (line endings and a missing
        // final newline aside: the diff shows lines).
        assert_eq!(
            patch(&text, &dry).trim_end_matches('\n'),
            installed.replace("\r\n", "\n").trim_end_matches('\n'),
            "{name}: dry run differs from apply"
        );
        // Every comment of the original is still there, in order.
        let comments = |t: &str| -> Vec<String> {
            let mut out = Vec::new();
            let mut rest = t;
            while let Some(i) = rest.find('/') {
                let tail = &rest[i..];
                let end = if tail.starts_with("//") {
                    tail.find(['\r', '\n']).unwrap_or(tail.len())
                } else if tail.starts_with("/*") {
                    tail.find("*/").unwrap() + 2
                } else {
                    rest = &tail[1..];
                    continue;
                };
                out.push(tail[..end].to_string());
                rest = &tail[end..];
            }
            out
        };
        assert!(!comments(&text).is_empty() || name.starts_with("claude"));
        assert_eq!(comments(&installed), comments(&text), "{name}");
        if text.contains("\r\n") {
            assert!(
                !installed.replace("\r\n", "").contains('\n'),
                "{name}: a bare LF crept in"
            );
        }
        assert_eq!(
            installed.as_bytes().starts_with(b"\xef\xbb\xbf"),
            orig.starts_with(b"\xef\xbb\xbf"),
            "{name}: BOM"
        );
        let again = ok(h.path(), &["install-hooks", "--agent", agent, "--apply"]);
        assert!(again.contains("already up to date"), "{name}: {again}");
        assert_eq!(fs::read_to_string(&f).unwrap(), installed, "{name}");
        if *agent == "gemini-cli" {
            ok(h.path(), &["install-mcp", "--agent", agent, "--apply"]);
            let both = fs::read_to_string(&f).unwrap();
            assert!(both.contains("\"mcpServers\""), "{name}");
            ok(
                h.path(),
                &["install-mcp", "--agent", agent, "--apply", "--remove"],
            );
            assert_eq!(fs::read_to_string(&f).unwrap(), installed, "{name}: mcp");
        }
        let out = ok(h.path(), &["uninstall-hooks", "--agent", agent, "--apply"]);
        assert!(out.starts_with("updated "), "{name}: {out}");
        assert_eq!(
            fs::read(&f).unwrap(),
            orig,
            "{name}: uninstall did not give back the original bytes"
        );
    }
}

/// The dry run of an install into a commented file shows the real changed
/// lines: the neighbour that gains a comma keeps its comment, and the
/// comments around the insertion are the diff's context.
#[test]
fn commented_dry_run_shows_real_lines() {
    let h = home();
    let f = h.path().join(".gemini/settings.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    fs::copy(fixture("install/gemini-comments-crlf.json"), &f).unwrap();
    let dry = ok(h.path(), &["install-hooks", "--agent", "gemini-cli"]);
    let neighbour =
        r#"{ "matcher": "write_file", "hooks": [{ "type": "command", "command": "true" }] }"#;
    assert!(
        dry.contains(&format!("\n-      {neighbour}\n+      {neighbour},\n")),
        "{dry}"
    );
    assert!(
        dry.contains("\n       // a comment inside an event array\n"),
        "{dry}"
    );
    assert!(dry.contains("\n     // end of hooks\n"), "{dry}");
    assert!(!dry.contains('\r'), "diff lines carry no CR: {dry:?}");
}

/// A file the agent itself cannot read is refused with the file, line,
/// column and fix, and left byte-identical with no backup; a commented file
/// is refused for an agent that reads strict JSON.
#[test]
fn files_the_agent_cannot_read_are_refused() {
    for (agent, rel, name, at, says) in [
        (
            "gemini-cli",
            ".gemini/settings.json",
            "gemini-trailing-comma.json",
            "3:43",
            "trailing comma, which Gemini CLI cannot read either",
        ),
        (
            "gemini-cli",
            ".gemini/settings.json",
            "gemini-bom.json",
            "1:1",
            "byte-order mark, which Gemini CLI cannot read either",
        ),
        (
            "claude-code",
            ".claude/settings.json",
            "claude-comment.json",
            "2:19",
            "Claude Code reads this file as strict JSON",
        ),
        (
            "claude-code",
            ".claude/settings.json",
            "gemini-comments-crlf.json",
            "1:1",
            "remove the comment",
        ),
        (
            "codex",
            ".codex/hooks.json",
            "claude-bom-crlf.json",
            "1:1",
            "byte-order mark, which Codex CLI cannot read either",
        ),
    ] {
        let orig = fs::read(fixture(&format!("install/{name}"))).unwrap();
        for cmd in ["install-hooks", "uninstall-hooks"] {
            let h = home();
            let f = h.path().join(rel);
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(&f, &orig).unwrap();
            let out = run(mh(h.path()), &[cmd, "--agent", agent, "--apply"]);
            assert_eq!(out.status.code(), Some(2), "{name} {cmd}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&format!("{}:{at}:", f.display())) && err.contains(says),
                "{name} {cmd}: {err}"
            );
            assert_eq!(fs::read(&f).unwrap(), orig, "{name}");
            assert_eq!(fs::read_dir(f.parent().unwrap()).unwrap().count(), 1);
        }
    }
}

/// When the file changed after the install (or the backup is gone), the
/// uninstall takes memhook's entries out of the tree: the user's later edit
/// and every comment stay, and nothing of memhook's is left.
#[test]
fn uninstall_after_a_later_edit_keeps_the_edit() {
    for lose_backup in [false, true] {
        let h = home();
        let f = h.path().join(".gemini/settings.json");
        fs::create_dir_all(f.parent().unwrap()).unwrap();
        let orig = fs::read_to_string(fixture("install/gemini-comments-crlf.json")).unwrap();
        fs::write(&f, &orig).unwrap();
        ok(
            h.path(),
            &["install-hooks", "--agent", "gemini-cli", "--apply"],
        );
        let edited = if lose_backup {
            for b in backups(f.parent().unwrap()) {
                fs::remove_file(b).unwrap();
            }
            fs::read_to_string(&f).unwrap()
        } else {
            let t = fs::read_to_string(&f)
                .unwrap()
                .replace("\"enableAutoUpdate\": false", "\"enableAutoUpdate\": true");
            fs::write(&f, &t).unwrap();
            t
        };
        ok(
            h.path(),
            &["uninstall-hooks", "--agent", "gemini-cli", "--apply"],
        );
        let after = fs::read_to_string(&f).unwrap();
        assert!(!after.contains("memhook"), "{after}");
        let want = if lose_backup {
            orig.clone()
        } else {
            orig.replace("\"enableAutoUpdate\": false", "\"enableAutoUpdate\": true")
        };
        assert_eq!(after, want, "lose_backup={lose_backup}: {edited}");
    }
}

/// Qwen Code reads settings.json with comments and a BOM but not a trailing
/// comma (checked with the real CLI, installers/agents.toml): a commented
/// CRLF file with a BOM is edited in place and given back byte for byte, a
/// dry run writes nothing, and a trailing comma is refused untouched.
#[test]
fn qwen_code_settings_dialect() {
    let h = home();
    let f = h.path().join(".qwen/settings.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    let mut orig = b"\xef\xbb\xbf".to_vec();
    orig.extend(fs::read(fixture("install/gemini-comments-crlf.json")).unwrap());
    fs::write(&f, &orig).unwrap();
    let dry = ok(h.path(), &["install-hooks", "--agent", "qwen-code"]);
    assert!(
        dry.contains("+") && dry.contains("--agent qwen-code"),
        "{dry}"
    );
    assert_eq!(fs::read(&f).unwrap(), orig, "the dry run wrote");
    let out = ok(h.path(), &["install-hooks", "--agent", "qwen", "--apply"]);
    assert!(out.starts_with("updated "), "{out}");
    let installed = fs::read(&f).unwrap();
    assert!(installed.starts_with(b"\xef\xbb\xbf"), "BOM lost");
    let text = String::from_utf8_lossy(&installed);
    assert!(text.contains("// someone else's hook\r\n"), "{text}");
    assert_eq!(
        text.matches("hook --event").count(),
        10,
        "one handler per wired event: {text}"
    );
    ok(
        h.path(),
        &["uninstall-hooks", "--agent", "qwen-code", "--apply"],
    );
    assert_eq!(fs::read(&f).unwrap(), orig, "uninstall left something");

    let bad = fs::read(fixture("install/gemini-trailing-comma.json")).unwrap();
    fs::write(&f, &bad).unwrap();
    let out = run(
        mh(h.path()),
        &["install-hooks", "--agent", "qwen-code", "--apply"],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("trailing comma, which Qwen Code cannot read either"),
        "{err}"
    );
    assert_eq!(fs::read(&f).unwrap(), bad);
}

/// `memhook` for Copilot CLI: HOME only, unless `copilot_home` relocates it.
fn copilot_mh(home: &Path, copilot_home: Option<&Path>) -> Command {
    let mut c = mh(home);
    c.env_remove("COPILOT_HOME");
    if let Some(d) = copilot_home {
        c.env("COPILOT_HOME", d);
    }
    c
}

fn copilot_ok(home: &Path, copilot_home: Option<&Path>, args: &[&str]) -> String {
    let out = run(copilot_mh(home, copilot_home), args);
    assert!(
        out.status.success(),
        "memhook {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// Copilot CLI: memhook's hooks are a file of their own,
/// ~/.copilot/hooks/memhook.json (strict JSON, flat `version: 1` shape, the
/// PascalCase events). The dry run writes nothing; uninstall deletes the
/// file and the directories install created, so a HOME without Copilot
/// config is left exactly as it was.
#[test]
fn copilot_own_file_dry_run_install_uninstall_leaves_nothing() {
    let h = home();
    let data = h.path().join(".memhook-data");
    let before = tree(h.path(), &data);
    let dry = copilot_ok(h.path(), None, &["install-hooks", "--agent", "copilot"]);
    assert!(
        dry.contains("+++ ") && dry.contains("\"PostToolUseFailure\""),
        "{dry}"
    );
    assert_eq!(tree(h.path(), &data), before, "the dry run wrote something");
    let out = copilot_ok(
        h.path(),
        None,
        &["install-hooks", "--agent", "copilot", "--apply"],
    );
    let f = h.path().join(".copilot/hooks/memhook.json");
    assert!(
        out.starts_with(&format!("created {}", f.display())),
        "{out}"
    );
    let v = read_json(&f);
    assert_eq!(v["version"], 1);
    let events: Vec<&String> = v["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(
        events,
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PreCompact",
            "Stop",
            "SubagentStart",
            "SubagentStop",
            "SessionEnd"
        ]
    );
    let cmd = v["hooks"]["PreToolUse"][0]["command"].as_str().unwrap();
    assert!(
        cmd.ends_with("hook --event pre-tool-use --agent copilot"),
        "{cmd}"
    );
    assert_eq!(v["hooks"]["PreToolUse"][0]["type"], "command");
    let again = copilot_ok(
        h.path(),
        None,
        &["install-hooks", "--agent", "copilot", "--apply"],
    );
    assert!(again.contains("already up to date"), "{again}");
    let dry = copilot_ok(h.path(), None, &["uninstall-hooks", "--agent", "copilot"]);
    assert!(dry.contains("# and remove"), "{dry}");
    assert!(f.is_file());
    let out = copilot_ok(
        h.path(),
        None,
        &["uninstall-hooks", "--agent", "copilot", "--apply"],
    );
    assert!(out.contains("deleted "), "{out}");
    assert_eq!(
        tree(h.path(), &data),
        before,
        "uninstall left something behind"
    );
}

/// The user's own hook files and settings in ~/.copilot stay byte for byte;
/// a hook the user added to memhook.json keeps the file alive after
/// uninstall; COPILOT_HOME relocates everything.
#[test]
fn copilot_keeps_the_users_files_and_follows_copilot_home() {
    for relocated in [false, true] {
        let h = home();
        let dir = if relocated {
            h.path().join("cfg/copilot")
        } else {
            h.path().join(".copilot")
        };
        let ch = relocated.then_some(dir.as_path());
        fs::create_dir_all(dir.join("hooks")).unwrap();
        let user_hook = "{\"version\":1,\"hooks\":{\"sessionStart\":[{\"bash\":\"echo hi\"}]}}";
        fs::write(dir.join("hooks/user.json"), user_hook).unwrap();
        fs::write(dir.join("settings.json"), "{\"autoUpdate\": false}\n").unwrap();
        copilot_ok(
            h.path(),
            ch,
            &["install-hooks", "--agent", "copilot", "--apply"],
        );
        let f = dir.join("hooks/memhook.json");
        assert!(f.is_file(), "relocated={relocated}");
        assert!(!h.path().join(".copilot").exists() || !relocated);
        copilot_ok(
            h.path(),
            ch,
            &["uninstall-hooks", "--agent", "copilot", "--apply"],
        );
        assert!(!f.exists());
        let names: Vec<PathBuf> = tree(&dir, &f).into_keys().collect();
        assert_eq!(
            names,
            ["hooks", "hooks/user.json", "settings.json"].map(|n| dir.join(n))
        );
        assert_eq!(
            fs::read_to_string(dir.join("hooks/user.json")).unwrap(),
            user_hook
        );

        // A hook of the user's own inside memhook.json: the file stays with it.
        copilot_ok(
            h.path(),
            ch,
            &["install-hooks", "--agent", "copilot", "--apply"],
        );
        let mut v = read_json(&f);
        v["hooks"]["Stop"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "command", "command": "notify-send done"}));
        fs::write(&f, serde_json::to_string_pretty(&v).unwrap()).unwrap();
        copilot_ok(
            h.path(),
            ch,
            &["uninstall-hooks", "--agent", "copilot", "--apply"],
        );
        assert_eq!(
            read_json(&f),
            json!({"version": 1, "hooks": {"Stop": [{"type": "command", "command": "notify-send done"}]}})
        );
    }
}

/// doctor says, for Copilot CLI, that repository hooks only load in
/// trusted folders, installed or not.
#[test]
fn doctor_says_copilot_repo_hooks_need_a_trusted_folder() {
    let h = home();
    let mut c = copilot_mh(h.path(), None);
    c.env("PATH", "/nonexistent");
    let out = run(c, &["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let section = text
        .split("\n\n")
        .chain(text.split("GitHub Copilot CLI (copilot)").skip(1))
        .last()
        .unwrap();
    assert!(
        section.contains(".github/hooks/") && section.contains("trusted"),
        "{text}"
    );
    let mut c = copilot_mh(h.path(), None);
    c.env("PATH", "/nonexistent");
    let v: Value = serde_json::from_slice(&run(c, &["doctor", "--json"]).stdout).unwrap();
    let a = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "copilot")
        .unwrap();
    assert!(a["note"].as_str().unwrap().contains("trusted"), "{a}");
    assert!(a["file"]
        .as_str()
        .unwrap()
        .ends_with(".copilot/hooks/memhook.json"));
    assert_eq!(
        v["agents"]
            .as_array()
            .unwrap()
            .iter()
            // OpenHands' note: a project's own hooks.json replaces the
            // user's; pi's: a project's own extensions load unasked;
            // Cline's: the briefing comes with the first tool call.
            .filter(|a| {
                !["copilot", "openhands", "pi", "cline"].contains(&a["agent"].as_str().unwrap())
            })
            .filter(|a| !a["note"].is_null())
            .count(),
        0
    );
}

/// A settings file that install created (it did not exist) is deleted again
/// by uninstall when nothing else was ever put in it: no `{}` and no backup
/// left behind (it used to leave Cursor a `hooks.json` of `{}` and a backup
/// where the user had none). A file the user had stays, with its content.
#[test]
fn uninstall_deletes_a_settings_file_install_created() {
    for (agent, rel) in [
        ("cursor", ".cursor/hooks.json"),
        ("claude-code", ".claude/settings.json"),
        ("gemini-cli", ".gemini/settings.json"),
    ] {
        let h = home();
        let file = h.path().join(rel);
        let dir = file.parent().unwrap().to_path_buf();
        fs::create_dir_all(&dir).unwrap();
        ok(h.path(), &["install-hooks", "--agent", agent, "--apply"]);
        assert!(file.exists(), "{agent}");
        let out = ok(h.path(), &["uninstall-hooks", "--agent", agent, "--apply"]);
        assert!(out.starts_with("deleted "), "{agent}: {out}");
        assert!(!file.exists(), "{agent}: {rel} left behind");
        assert!(backups(&dir).is_empty(), "{agent}: backups left behind");
        // The agent's own directory is the agent's: it stays.
        assert!(dir.is_dir(), "{agent}");

        // A file the user already had keeps its content.
        fs::write(&file, "{\"theme\": \"dark\"}\n").unwrap();
        ok(h.path(), &["install-hooks", "--agent", agent, "--apply"]);
        ok(h.path(), &["uninstall-hooks", "--agent", agent, "--apply"]);
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "{\"theme\": \"dark\"}\n",
            "{agent}"
        );
    }
}

/// The short agent names docs/install.md promises are accepted.
#[test]
fn agent_aliases_are_accepted() {
    let h = home();
    for alias in ["claude", "open-code", "gemini", "qwen", "copilot-cli"] {
        let out = run(mh(h.path()), &["install-hooks", "--agent", alias]);
        assert!(
            out.status.success(),
            "{alias}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let out = run(mh(h.path()), &["install-hooks", "--agent", "claud"]);
    assert_eq!(out.status.code(), Some(2));
}

/// Configurations written by the last single-binary memhook (11d17a9,
/// fixtures/install/upgrade-11d17a9) keep working after the upgrade to two
/// binaries: every agent's file is already up to date for today's
/// installer (nothing to migrate: the command is still `memhook hook …`),
/// and the hook command it holds runs, exits 0 and captures the event.
#[test]
fn configurations_written_by_the_single_binary_release_still_run_and_need_no_migration() {
    let h = home();
    let src = fixture("install/upgrade-11d17a9");
    let exe = crate::support::binaries::install_copy(&h.path().join("bin"));
    let data = h.path().join("data");
    fs::create_dir_all(&data).unwrap();
    fs::set_permissions(&data, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let home_str = h.path().to_str().unwrap();
    let mut files = Vec::new();
    let mut stack = vec![src.clone()];
    while let Some(dir) = stack.pop() {
        for e in fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().unwrap() != "README.md" {
                files.push(p);
            }
        }
    }
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap();
        let to = h.path().join(rel);
        fs::create_dir_all(to.parent().unwrap()).unwrap();
        let text = fs::read_to_string(f).unwrap().replace("@HOME@", home_str);
        fs::write(&to, text).unwrap();
        fs::set_permissions(&to, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }
    let agents = [
        ("claude-code", ".claude/settings.json"),
        ("codex", ".codex/hooks.json"),
        ("opencode", ".config/opencode/plugins/memhook.js"),
        ("gemini-cli", ".gemini/settings.json"),
        ("cursor", ".cursor/hooks.json"),
        ("qwen-code", ".qwen/settings.json"),
        ("copilot", ".copilot/hooks/memhook.json"),
        ("kilo", ".config/kilo/plugins/memhook.js"),
    ];
    for (agent, file) in agents {
        let path = h.path().join(file);
        let before = fs::read(&path).unwrap();
        let mut c = crate::support::binaries::installed(&exe, h.path());
        c.args(["install-hooks", "--agent", agent, "--apply"]);
        let out = c.output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{agent}: {out:?}");
        assert!(said.contains("already up to date"), "{agent}: {said}");
        assert_eq!(fs::read(&path).unwrap(), before, "{agent}: {file} changed");
    }
    // The command Claude Code runs, as written then, through a shell.
    let settings = read_json(&h.path().join(".claude/settings.json"));
    let command = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(command.contains(" hook "), "{command}");
    let payload = format!(
        r#"{{"session_id":"up-1","cwd":"{home_str}","hook_event_name":"UserPromptSubmit","prompt":"after the upgrade"}}"#
    );
    let mut sh = crate::support::binaries::installed(Path::new("sh"), h.path());
    sh.env("MEMHOOK_NO_HOOK_DELIVERY", "1")
        .args(["-c", &command]);
    let out = crate::support::binaries::run_with_stdin(sh, payload.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");
    let mut drain = crate::support::binaries::installed(&exe, h.path());
    drain.args(["--data-dir", data.to_str().unwrap(), "drain"]);
    assert!(drain.output().unwrap().status.success());
    let mut search = crate::support::binaries::installed(&exe, h.path());
    search.args([
        "--data-dir",
        data.to_str().unwrap(),
        "search",
        "--all",
        "upgrade",
    ]);
    let found = String::from_utf8_lossy(&search.output().unwrap().stdout).to_string();
    assert!(found.contains("after the upgrade"), "{found}");
}

/// After installing, doctor says what a person checks next: is the agent's
/// program on PATH, is `memhook mcp` registered with it, and when memhook
/// last saw an event from it.
#[test]
fn doctor_shows_program_mcp_and_the_last_event_seen() {
    use std::os::unix::fs::PermissionsExt;
    let h = home();
    let bin = h.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let claude = bin.join("claude");
    fs::write(&claude, "#!/bin/sh\nexit 0\n").unwrap();
    fs::set_permissions(&claude, fs::Permissions::from_mode(0o755)).unwrap();
    let doctor = || -> Value {
        let mut c = mh(h.path());
        c.env("PATH", &bin);
        let out = run(c, &["doctor", "--json"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "claude-code")
            .unwrap()
            .clone()
    };
    let out = ok(
        h.path(),
        &["install-hooks", "--agent", "claude-code", "--apply"],
    );
    assert!(
        out.contains("next: `memhook install-mcp --agent claude-code --apply`"),
        "{out}"
    );
    let a = doctor();
    assert_eq!(a["program"], claude.to_str().unwrap(), "{a}");
    assert_eq!(a["mcp"], "not registered", "{a}");
    assert_eq!(a["last_event"], Value::Null, "{a}");

    // One event through the installed command, delivered.
    let settings = read_json(&h.path().join(".claude/settings.json"));
    let cmd = settings["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let payload = serde_json::json!({"session_id": "s-doc", "cwd": h.path(), "prompt": "hi"});
    let c = mh(h.path());
    let mut sh = Command::new("sh");
    sh.args(["-c", &cmd]);
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    let out = crate::support::binaries::run_with_stdin(sh, payload.to_string().as_bytes());
    assert!(out.status.success(), "{out:?}");
    ok(h.path(), &["drain"]);
    let a = doctor();
    let seen = a["last_event"].as_str().expect("an event was seen");
    assert!(seen.starts_with("20"), "{a}");

    ok(
        h.path(),
        &["install-mcp", "--agent", "claude-code", "--apply"],
    );
    let a = doctor();
    assert_eq!(a["mcp"], "registered", "{a}");
    let mut c = mh(h.path());
    c.env("PATH", &bin);
    let text = String::from_utf8(run(c, &["doctor"]).stdout).unwrap();
    assert!(
        text.contains(&format!("  program:   {}", claude.display())),
        "{text}"
    );
    assert!(text.contains("  mcp:       registered"), "{text}");
    assert!(text.contains("  last seen: 20"), "{text}");
}

/// On a terminal, `install-hooks --apply` asks what to capture (once) and
/// offers `install-mcp`; the answers take effect. Driven through a real
/// pseudo-terminal (`script`).
#[test]
fn install_hooks_on_a_terminal_asks_the_capture_mode_and_offers_mcp() {
    let h = home();
    let c = mh(h.path());
    let mut sh = Command::new("script");
    let line = format!(
        "{} install-hooks --agent claude-code --apply",
        crate::support::binaries::bin().display()
    );
    sh.args(["-qec", &line, "/dev/null"]);
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => sh.env(k, v),
            None => sh.env_remove(k),
        };
    }
    let out = crate::support::binaries::run_with_stdin(sh, b"2\ny\n");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{out:?}");
    assert!(text.contains("What should memhook record?"), "{text}");
    assert!(text.contains("capture mode: allowlist"), "{text}");
    assert!(
        text.contains("Also register memhook's MCP server with Claude Code"),
        "{text}"
    );
    assert!(text.contains("MCP server registered"), "{text}");
    let data = crate::support::home::data_dir(h.path());
    assert_eq!(
        fs::read_to_string(data.join("capture-mode"))
            .unwrap()
            .trim(),
        "allowlist"
    );
    let claude = read_json(&h.path().join(".claude.json"));
    assert!(claude["mcpServers"]["memhook"].is_object(), "{claude}");

    // Off a terminal nothing is asked: the flags decide.
    let out = ok(h.path(), &["install-hooks", "--agent", "codex", "--apply"]);
    assert!(!out.contains("What should memhook record?"), "{out}");
    assert!(
        out.contains("next: `memhook install-mcp --agent codex --apply`"),
        "{out}"
    );
}

/// Factory Droid: memhook's hooks are events at the top level of
/// ~/.factory/hooks.json, beside the user's own (a commented file, which
/// Droid reads); the dry run is exact; uninstall gives the bytes back;
/// doctor counts every wired event.
#[test]
fn droid_hooks_file_is_the_event_map() {
    let h = home();
    let f = h.path().join(".factory/hooks.json");
    fs::create_dir_all(f.parent().unwrap()).unwrap();
    let old = "{\n  // mine\n  \"Stop\": [\n    { \"hooks\": [{ \"type\": \"command\", \"command\": \"say done\" }] }\n  ]\n}\n";
    fs::write(&f, old).unwrap();
    let dry = ok(h.path(), &["install-hooks", "--agent", "droid"]);
    assert_eq!(fs::read_to_string(&f).unwrap(), old);
    ok(h.path(), &["install-hooks", "--agent", "droid", "--apply"]);
    let new = fs::read_to_string(&f).unwrap();
    assert_eq!(patch(old, &dry), new);
    assert!(new.contains("// mine"), "{new}");
    let v: Value = serde_json::from_str(&new.replace("  // mine\n", "")).unwrap();
    assert!(v.get("hooks").is_none(), "{v}");
    let events: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        events,
        [
            "Stop",
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PreCompact",
            "SubagentStop",
            "SessionEnd"
        ]
    );
    assert_eq!(v["Stop"][0]["hooks"][0]["command"], "say done");
    let cmd = v["PreToolUse"][0]["hooks"][0]["command"].as_str().unwrap();
    assert!(
        cmd.ends_with("hook --event pre-tool-use --agent droid"),
        "{cmd}"
    );
    let mut c = mh(h.path());
    c.env("PATH", "/nonexistent");
    let out = run(c, &["doctor", "--json"]);
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = doc["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "droid")
        .unwrap()
        .clone();
    assert_eq!(a["installed"], true, "{a}");
    assert_eq!(a["events_wired"], 8, "{a}");
    assert_eq!(a["events_wired"], a["events_expected"], "{a}");
    ok(
        h.path(),
        &["uninstall-hooks", "--agent", "droid", "--apply"],
    );
    assert_eq!(fs::read_to_string(&f).unwrap(), old);
}

/// pi has no MCP client: `install-mcp --agent pi` refuses and writes
/// nothing; `--agent all` skips it and says so.
#[test]
fn install_mcp_refuses_an_agent_without_mcp() {
    let h = home();
    let before = snapshot(h.path());
    let out = run(mh(h.path()), &["install-mcp", "--agent", "pi", "--apply"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pi has no MCP client"),
        "{out:?}"
    );
    assert_eq!(snapshot(h.path()), before);
    fs::create_dir_all(h.path().join(".pi/agent")).unwrap();
    fs::create_dir_all(h.path().join(".codex")).unwrap();
    let mut c = mh(h.path());
    c.env("PATH", "/nonexistent");
    let out = run(c, &["install-mcp", "--agent", "all", "--apply"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("pi: skipped"),
        "{out:?}"
    );
    assert!(!h.path().join(".pi/agent/mcp.json").exists());
    assert!(h.path().join(".codex/config.toml").exists());
}

/// Cline's native events, in the order install-hooks writes their scripts.
const CLINE_EVENTS: [&str; 10] = [
    "TaskStart",
    "TaskResume",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "TaskComplete",
    "TaskCancel",
    "TaskError",
    "SessionShutdown",
];

/// Cline runs one executable per event from ~/.cline/hooks: the dry run
/// prints the scripts and writes nothing; --apply creates one owner-only
/// script per event that execs `memhook hook --event E --agent cline`;
/// applying again is byte-identical and says so; doctor sees all ten;
/// uninstall's dry run writes nothing, and --apply gives the directory
/// back as it was (the hooks dir install made is gone).
#[test]
fn cline_gets_one_owner_only_script_per_event_and_uninstall_restores_the_dir() {
    use std::os::unix::fs::PermissionsExt;
    let h = home();
    fs::create_dir_all(h.path().join(".cline/data")).unwrap();
    fs::write(h.path().join(".cline/data/mine.json"), "{}\n").unwrap();
    let hooks = h.path().join(".cline/hooks");
    let cline_dir = |h: &Path| -> BTreeMap<PathBuf, Vec<u8>> {
        snapshot(&h.join(".cline"))
            .into_iter()
            .map(|(p, (b, _))| (p, b))
            .collect()
    };
    let before = cline_dir(h.path());
    let dry = ok(h.path(), &["install-hooks", "--agent", "cline"]);
    assert!(dry.contains("+++ ") && dry.contains("# dry run"), "{dry}");
    assert_eq!(dry.matches("+exec ").count(), 10, "{dry}");
    assert_eq!(cline_dir(h.path()), before, "the dry run wrote something");
    let out = ok(h.path(), &["install-hooks", "--agent", "cline", "--apply"]);
    assert_eq!(out.matches("created ").count(), 10, "{out}");
    let exe = bin().canonicalize().unwrap();
    for (e, ours) in CLINE_EVENTS.iter().zip([
        "session-start",
        "session-start",
        "user-prompt-submit",
        "pre-tool-use",
        "post-tool-use",
        "pre-compact",
        "stop",
        "stop",
        "stop",
        "session-end",
    ]) {
        let f = hooks.join(e);
        let text = fs::read_to_string(&f).unwrap();
        assert!(text.starts_with("#!/bin/sh\n"), "{text}");
        assert!(
            text.ends_with(&format!(" hook --event {ours} --agent cline\n")),
            "{text}"
        );
        assert!(text.contains(&format!("exec {}", exe.display())), "{text}");
        let mode = fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{e}");
    }
    let installed = cline_dir(h.path());
    let again = ok(h.path(), &["install-hooks", "--agent", "cline", "--apply"]);
    assert_eq!(again.matches("already up to date").count(), 10, "{again}");
    assert!(!again.contains("created") && !again.contains("updated"));
    assert_eq!(cline_dir(h.path()), installed, "re-apply changed a byte");
    let dry = ok(h.path(), &["install-hooks", "--agent", "cline"]);
    assert!(dry.contains("already up to date"), "{dry}");
    // A changed setting updates every script; it is kept on the next run.
    let args = ["install-hooks", "--agent", "cline", "--apply"];
    let url = ["--server-url", "http://127.0.0.1:9"];
    let out = ok(h.path(), &[&args[..], &url[..]].concat());
    assert_eq!(out.matches("updated ").count(), 10, "{out}");
    let text = fs::read_to_string(hooks.join("TaskComplete")).unwrap();
    assert!(
        text.ends_with(" --server-url http://127.0.0.1:9\n"),
        "{text}"
    );
    let out = ok(h.path(), &args);
    assert_eq!(out.matches("already up to date").count(), 10, "{out}");
    let v: Value =
        serde_json::from_str(&ok(h.path(), &["doctor", "--json"])).expect("doctor --json");
    let a = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "cline")
        .unwrap();
    assert_eq!(a["installed"], true, "{a}");
    assert_eq!(a["events_wired"], 10, "{a}");
    assert!(a["note"].as_str().unwrap().contains("first tool"), "{a}");
    let installed = cline_dir(h.path());
    let dry = ok(h.path(), &["uninstall-hooks", "--agent", "cline"]);
    assert!(dry.contains("# dry run"), "{dry}");
    assert_eq!(
        cline_dir(h.path()),
        installed,
        "the dry run removed something"
    );
    let out = ok(
        h.path(),
        &["uninstall-hooks", "--agent", "cline", "--apply"],
    );
    assert_eq!(out.matches("deleted ").count(), 10, "{out}");
    assert_eq!(
        cline_dir(h.path()),
        before,
        "uninstall left something behind"
    );
    let again = ok(
        h.path(),
        &["uninstall-hooks", "--agent", "cline", "--apply"],
    );
    assert!(again.contains("nothing to remove"), "{again}");
}

/// A hook of the user's for an event memhook wires — the same name, or
/// one Cline would take for it (another case, an extension) — is never
/// replaced: install refuses, names the file and writes nothing; with the
/// user's file moved aside, uninstall later leaves a user's file of
/// another event alone.
#[test]
fn cline_never_replaces_the_users_own_hook() {
    let h = home();
    let hooks = h.path().join(".cline/hooks");
    fs::create_dir_all(&hooks).unwrap();
    for users in ["PreToolUse", "posttooluse.sh"] {
        let f = hooks.join(users);
        fs::write(&f, "#!/bin/sh\necho mine\n").unwrap();
        let out = run(
            mh(h.path()),
            &["install-hooks", "--agent", "cline", "--apply"],
        );
        assert!(!out.status.success(), "{out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&f.display().to_string()), "{err}");
        assert_eq!(
            fs::read_dir(&hooks).unwrap().count(),
            1,
            "install wrote beside the user's {users}"
        );
        assert_eq!(fs::read_to_string(&f).unwrap(), "#!/bin/sh\necho mine\n");
        fs::remove_file(&f).unwrap();
    }
    ok(h.path(), &["install-hooks", "--agent", "cline", "--apply"]);
    // A script changed by hand is the user's now.
    let mine = hooks.join("TaskError");
    let text = fs::read_to_string(&mine).unwrap();
    fs::write(&mine, format!("{text}echo mine\n")).unwrap();
    let out = run(
        mh(h.path()),
        &["install-hooks", "--agent", "cline", "--apply"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("TaskError"));
    ok(
        h.path(),
        &["uninstall-hooks", "--agent", "cline", "--apply"],
    );
    let left: Vec<String> = fs::read_dir(&hooks)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["TaskError"]);
    // A symlink (to the user's own script) is the user's too: install
    // refuses it by name, uninstall of every agent goes on and leaves it.
    fs::remove_file(&mine).unwrap();
    let link = hooks.join("TaskStart");
    std::os::unix::fs::symlink("/bin/true", &link).unwrap();
    let out = run(
        mh(h.path()),
        &["install-hooks", "--agent", "cline", "--apply"],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&link.display().to_string()));
    let mut c = mh(h.path());
    c.env("PATH", "/nonexistent");
    let out = run(c, &["uninstall-hooks", "--agent", "all", "--apply"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(fs::read_link(&link).unwrap(), Path::new("/bin/true"));
}
