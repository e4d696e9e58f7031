//! Capture policy end to end: real Claude Code PostToolUse Bash payloads
//! under `ignore_paths = ["secret/**"]` go through `memhook hook` and
//! `memhook drain`; afterwards no file under the data dir (spool, SQLite
//! database and WAL, logs, counters) holds a byte of the excluded file.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::binaries::{memhook, run_with_stdin};
use crate::support::files::{contains, walk};
use crate::support::fixtures::fixture;

/// The excluded file's content. Built from pieces so the test source itself
/// is not a hit when the repository is grepped.
fn secret() -> String {
    format!("{}-{}", "hunter2", "SECRET-CONTENT-7f3a")
}

/// One Bash call: call id, command, what the command printed.
struct Call {
    id: &'static str,
    command: &'static str,
    stdout: String,
}

fn calls(s: &str) -> Vec<Call> {
    vec![
        // Nested shell: dropped (the inner command names the file).
        Call {
            id: "toolu_nested_shell",
            command: "bash -c \"cat secret/key.txt\"",
            stdout: s.to_string(),
        },
        // Interpreter code: dropped.
        Call {
            id: "toolu_interpreter",
            command: "python3 -c \"print(open('secret/key.txt').read())\"",
            stdout: format!("{s}\n"),
        },
        // Recursive grep from the root: its output names the file and
        // carries its content. Metadata-only.
        Call {
            id: "toolu_recursive_grep",
            command: "grep -r hunter2 .",
            stdout: format!("./secret/key.txt:{s}\n./notes.md:hunter2 is not a password\n"),
        },
        // A kept, non-recursive command whose output mentions the excluded
        // path: those lines go, the rest is kept.
        Call {
            id: "toolu_kept_script",
            command: "sh scripts/check.sh",
            stdout: format!(
                "checking notes.md KEEPWORD-CHECK\n./secret/key.txt:1:{s}\ndone KEEPWORD-DONE\n"
            ),
        },
        // A kept diff: the excluded file's whole section goes.
        Call {
            id: "toolu_kept_diff",
            command: "git diff",
            stdout: format!(
                "diff --git a/notes.md b/notes.md\n--- a/notes.md\n+++ b/notes.md\n@@ -1 +1 @@\n+KEEPWORD-DIFF\n\
                 diff --git a/secret/key.txt b/secret/key.txt\n--- a/secret/key.txt\n+++ b/secret/key.txt\n@@ -1 +1 @@\n+{s}\n"
            ),
        },
    ]
}

fn payload(proj: &Path, call: &Call) -> Value {
    let mut p: Value = serde_json::from_slice(
        &fs::read(fixture("agents/claude-code/2.1.328/PostToolUse-Bash.json")).unwrap(),
    )
    .unwrap();
    p["cwd"] = json!(proj);
    p["tool_use_id"] = json!(call.id);
    p["tool_input"]["command"] = json!(call.command);
    p["tool_response"]["stdout"] = json!(call.stdout);
    p
}

#[test]
fn excluded_content_never_reaches_the_data_dir_through_nested_shells_interpreters_or_output() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    let proj = home.join("projects").join("demo");
    fs::create_dir_all(proj.join("secret")).unwrap();
    let s = secret();
    fs::write(proj.join("secret/key.txt"), &s).unwrap();
    fs::write(
        proj.join(".ai-memory.toml"),
        "project = \"demo\"\n[capture]\nignore_paths = [\"secret/**\"]\n",
    )
    .unwrap();
    let data = home.join(".memhook-data");

    for call in calls(&s) {
        let mut cmd = memhook(home);
        cmd.current_dir(&proj)
            .args(["hook", "--agent", "claude-code"]);
        let out = run_with_stdin(cmd, payload(&proj, &call).to_string().as_bytes());
        assert!(out.status.success(), "{}: {out:?}", call.id);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stdout.contains(&s) && !stderr.contains(&s), "{}", call.id);
    }
    let out = memhook(home).arg("drain").output().unwrap();
    assert!(out.status.success(), "{out:?}");

    // The three kept records (metadata-only grep, the script, the diff)
    // reach the store; a detached drainer may still be moving them.
    let deadline = Instant::now() + Duration::from_secs(10);
    let rows = loop {
        let out = memhook(home)
            .args(["recent", "--all", "--json"])
            .output()
            .unwrap();
        let rows: Vec<Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        if rows.len() >= 3 || Instant::now() > deadline {
            break rows;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let by_id = |id: &str| rows.iter().find(|r| r["tool_call_id"] == id).cloned();
    assert!(
        by_id("toolu_nested_shell").is_none(),
        "nested shell was stored"
    );
    assert!(
        by_id("toolu_interpreter").is_none(),
        "interpreter call was stored"
    );
    let grep = by_id("toolu_recursive_grep").expect("the recursive grep has a record");
    assert_eq!(grep["disposition"], "metadata-only", "{grep}");
    for id in ["toolu_kept_script", "toolu_kept_diff"] {
        let r = by_id(id).unwrap_or_else(|| panic!("{id} has no record: {rows:?}"));
        assert_eq!(r["disposition"], "keep", "{r}");
    }

    let mut files = Vec::new();
    walk(&data, &mut files);
    assert!(
        files
            .iter()
            .any(|(p, _)| p.extension().is_some_and(|e| e == "sqlite3")),
        "no database under {data:?}"
    );
    // The kept lines are stored: the filter removed lines, not bodies.
    for kept in ["KEEPWORD-CHECK", "KEEPWORD-DONE", "KEEPWORD-DIFF"] {
        assert!(
            files.iter().any(|(_, b)| contains(b, kept)),
            "kept output {kept} is missing from the data dir"
        );
    }
    for (path, bytes) in &files {
        assert!(
            !contains(bytes, &s),
            "the excluded file's content is in {}",
            path.display()
        );
    }
}
