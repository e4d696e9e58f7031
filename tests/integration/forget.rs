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
        out.contains("would forget 2 stored records (emptying 1 sessions and 0 projects) and 1 pending records: session doomed"),
        "{out}"
    );
    assert!(out.contains("--yes"), "{out}");
    let (_, out, _) = run(home.path(), &["search", SENTINEL, "--all"]);
    assert!(out.contains("user-prompt"), "{out}");

    let (code, out, err) = run(home.path(), &["forget", "--session", "doomed", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("forgot 2 stored records (emptying 1 sessions and 0 projects) and 1 pending records: session doomed"),
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
        out.contains("forgot 2 records, 1 sessions, 0 projects: session doomed"),
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
