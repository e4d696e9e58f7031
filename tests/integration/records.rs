//! Records: the sentinel test. Real agent payloads from `fixtures/agents/`,
//! seeded with one fake secret of every kind, a subagent's final message,
//! pre-tool inputs, private spans and content under an excluded path, go
//! through the real binary. Afterwards no byte of any of them may be found
//! in any file under the data dir (spool, store, counters, whatever
//! exists), while the content memhook keeps (prompt words, tool output
//! words, a shell result's command line, the agents' final messages) must
//! be there — with the secrets, private spans and excluded-path lines
//! seeded into those removed.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::support::binaries::{memhook, run_with_stdin};
use crate::support::files::{contains, walk};
use crate::support::fixtures::fixture;

/// Fake secrets, one per redaction kind: (kind, text seeded, bytes that must
/// never be stored). Kept in the repo as pieces so scanners do not flag it.
fn secrets() -> Vec<(&'static str, String, String)> {
    let gh = format!("ghp_{}", "R7bE3kQ9xZ2mN4pL6vT8wY1cA5sD0fG3hJ2k");
    let jwt = format!(
        "eyJhbGciOiJIUzI1NiJ9.{}.{}",
        "eyJzdWIiOiJzZW50aW5lbCJ9", "Sntl9Qx3vB7nM2kL5pR8tW1yZ4cF6hJ0"
    );
    let v = |kind: &'static str, text: String, secret: &str| (kind, text, secret.to_string());
    vec![
        v(
            "private_key",
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEsentinelPRIVKEYbody0123\n-----END RSA PRIVATE KEY-----".into(),
            "MIIEsentinelPRIVKEYbody0123",
        ),
        v("aws_access_key", "key AKIAQYLPMN5SNTLZAM2X x".into(), "AKIAQYLPMN5SNTLZAM2X"),
        v(
            "aws_secret",
            "aws_secret_access_key = wJalrXUtnSENTINEL/K7MDENG/bPxRfiCYSNTLKEY".into(),
            "wJalrXUtnSENTINEL/K7MDENG/bPxRfiCYSNTLKEY",
        ),
        v("github_token", format!("token {gh} end"), &gh),
        v(
            "github_token",
            "github_pat_11SENTINEL0123456789abc_0123456789abcdefghijklmnopqrstuv".into(),
            "github_pat_11SENTINEL0123456789abc",
        ),
        v("gitlab_token", "glpat-SNTLxYz12_AbCdEfGhIjKl".into(), "glpat-SNTLxYz12_AbCdEfGhIjKl"),
        v(
            "slack_token",
            "xoxb-2637486131-SNTL486132-q7E2H8a0Xk1R4nT6".into(),
            "xoxb-2637486131-SNTL486132-q7E2H8a0Xk1R4nT6",
        ),
        v("stripe_key", "sk_live_51SNTLJqLk2Zq7mN9pR3sT5vW".into(), "sk_live_51SNTLJqLk2Zq7mN9pR3sT5vW"),
        v(
            "anthropic_key",
            "sk-ant-api03-SNTLRkP2mZ9vT4nL8bW3cY6dF1gH5jK0s".into(),
            "sk-ant-api03-SNTLRkP2mZ9vT4nL8bW3cY6dF1gH5jK0s",
        ),
        v(
            "openai_key",
            "OPENAI_KEY=sk-proj-SNTLEf6hIj9kLm2nOp5qRs8tUv1wXy4z".into(),
            "sk-proj-SNTLEf6hIj9kLm2nOp5qRs8tUv1wXy4z",
        ),
        v(
            "google_api_key",
            "AIzaSyD-9tSNTe72PouQMnMX-a7eZSW0jkFMBWY".into(),
            "AIzaSyD-9tSNTe72PouQMnMX-a7eZSW0jkFMBWY",
        ),
        v("jwt", format!("cookie {jwt}"), &jwt),
        v(
            "authorization",
            "Authorization: Basic SNTLbasicDEF123456ghiJKL".into(),
            "SNTLbasicDEF123456ghiJKL",
        ),
        v(
            "bearer",
            "curl -H 'x: bearer SNTLbearer0123456789abcdef'".into(),
            "SNTLbearer0123456789abcdef",
        ),
        v("token", "auth_token = SNTL-tok-val".into(), "SNTL-tok-val"),
        v("api_key", "export API_KEY=SNTL-api-val".into(), "SNTL-api-val"),
        v(
            "url_credentials",
            "postgres://app:SNTL-url-pass@db.internal:5432/app".into(),
            "SNTL-url-pass",
        ),
        v("password", "password=SNTL-hunter2-pw".into(), "SNTL-hunter2-pw"),
        v("secret", "CLIENT_SECRET='SNTL secret value'".into(), "SNTL secret value"),
    ]
}

/// Text no record may ever hold.
const FORBIDDEN: &[&str] = &[
    "ASSISTANT-SENTINEL",
    "PRETOOL-SENTINEL",
    "PRIVATE-SENTINEL",
    "EXCLUDED-SENTINEL",
    "DETAILS-SENTINEL",
    "CMDSECRET-SENTINEL",
];
/// Text the records must keep.
const KEPT: &[&str] = &[
    "KEEPWORD-PROMPT",
    "KEEPWORD-OUTPUT",
    "KEEPWORD-GEMINI",
    "KEEPWORD-CODEX",
    "KEEPWORD-OPENCODE",
    "KEEPWORD-COMMAND-1",
    "KEEPWORD-COMMAND-2",
    "KEEPWORD-COMMAND-3",
    "KEEPWORD-ASSISTANT-1",
    "KEEPWORD-ASSISTANT-3",
    "KEEPWORD-ASSISTANT-4",
];

/// A final message seeded with what must not be kept of it: a private
/// span, every secret, a line naming the excluded path.
fn final_message(word: &str, all_secrets: &str) -> Value {
    json!(format!(
        "{word} fixed it <private>PRIVATE-SENTINEL-{word}</private>\n{all_secrets}\n\
         the key is in secret/EXCLUDED-SENTINEL-{word}.txt"
    ))
}

fn load(rel: &str) -> Value {
    serde_json::from_slice(&fs::read(fixture(&format!("agents/{rel}"))).unwrap()).unwrap()
}

fn set(v: &mut Value, ptr: &str, val: Value) {
    *v.pointer_mut(ptr)
        .unwrap_or_else(|| panic!("fixture has no {ptr}")) = val;
}

/// (agent, payload) pairs: real fixtures with sentinels planted.
fn payloads(proj: &str, all_secrets: &str, excluded: bool) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let mut claude = |rel: &str, edits: &[(&str, Value)]| {
        let mut p = load(&format!("claude-code/2.1.328/{rel}"));
        set(&mut p, "/cwd", json!(proj));
        for (ptr, val) in edits {
            set(&mut p, ptr, val.clone());
        }
        out.push(("claude-code", p));
    };
    claude(
        "UserPromptSubmit.json",
        &[(
            "/prompt",
            json!(format!(
                "KEEPWORD-PROMPT please <private>PRIVATE-SENTINEL-1</private> check\n{all_secrets}"
            )),
        )],
    );
    claude(
        "PreToolUse-Bash.json",
        &[(
            "/tool_input",
            json!({"command": format!("echo PRETOOL-SENTINEL-1 {all_secrets}"),
                   "description": "PRETOOL-SENTINEL-2"}),
        )],
    );
    claude(
        "PostToolUse-Bash.json",
        &[
            (
                "/tool_input/command",
                json!("cat KEEPWORD-COMMAND-1.env password=CMDSECRET-SENTINEL"),
            ),
            (
                "/tool_response/stdout",
                json!(format!("KEEPWORD-OUTPUT\n{all_secrets}")),
            ),
            (
                "/tool_response/stderr",
                json!("\u{1b}]0;PRIVATE-SENTINEL-ansi\u{7}<private>PRIVATE-SENTINEL-2"),
            ),
        ],
    );
    claude(
        "PostToolUseFailure-Bash-exit1.json",
        &[
            ("/tool_input/command", json!("KEEPWORD-COMMAND-2")),
            ("/error", json!(format!("Exit code 1\n{all_secrets}"))),
        ],
    );
    claude(
        "Stop.json",
        &[(
            "/last_assistant_message",
            final_message("KEEPWORD-ASSISTANT-1", all_secrets),
        )],
    );
    claude(
        "SubagentStop-subagent.json",
        &[("/last_assistant_message", json!("ASSISTANT-SENTINEL-2"))],
    );

    let mut codex = load("codex/0.171.0/PostToolUse-Bash.json");
    set(&mut codex, "/cwd", json!(proj));
    set(
        &mut codex,
        "/tool_input/command",
        json!("KEEPWORD-COMMAND-3"),
    );
    set(
        &mut codex,
        "/tool_response",
        json!(format!("KEEPWORD-CODEX\n{all_secrets}")),
    );
    out.push(("codex", codex));
    let mut codex_stop = load("codex/0.171.0/Stop.json");
    set(&mut codex_stop, "/cwd", json!(proj));
    set(
        &mut codex_stop,
        "/last_assistant_message",
        final_message("KEEPWORD-ASSISTANT-3", all_secrets),
    );
    out.push(("codex", codex_stop));

    let mut g = load("gemini-cli/0.61.0/AfterTool-run_shell_command.json");
    set(&mut g, "/cwd", json!(proj));
    set(&mut g, "/tool_input/command", json!("KEEPWORD-COMMAND-4"));
    set(
        &mut g,
        "/tool_response/llmContent",
        json!(format!("KEEPWORD-GEMINI\n{all_secrets}")),
    );
    out.push(("gemini-cli", g));
    let mut g = load("gemini-cli/0.61.0/BeforeTool-run_shell_command.json");
    set(&mut g, "/cwd", json!(proj));
    set(
        &mut g,
        "/tool_input/command",
        json!(format!("PRETOOL-SENTINEL-7 {all_secrets}")),
    );
    out.push(("gemini-cli", g));
    let mut g = load("gemini-cli/0.61.0/AfterAgent.json");
    set(&mut g, "/cwd", json!(proj));
    set(
        &mut g,
        "/prompt_response",
        final_message("KEEPWORD-ASSISTANT-4", all_secrets),
    );
    out.push(("gemini-cli", g));
    let mut g = load("gemini-cli/0.61.0/Notification-ToolPermission-exec.json");
    set(&mut g, "/cwd", json!(proj));
    set(&mut g, "/details/command", json!("DETAILS-SENTINEL-1"));
    out.push(("gemini-cli", g));

    let mut o = load("opencode/1.18.33/tool.execute.after-bash.json");
    o["directory"] = json!(proj);
    set(&mut o, "/input/args/command", json!("KEEPWORD-COMMAND-5"));
    set(
        &mut o,
        "/output/output",
        json!(format!("KEEPWORD-OPENCODE\n{all_secrets}")),
    );
    if o.pointer("/output/metadata/output").is_some() {
        set(
            &mut o,
            "/output/metadata/output",
            json!("KEEPWORD-OPENCODE"),
        );
    }
    if o.pointer("/output/title").is_some() {
        set(&mut o, "/output/title", json!("PRETOOL-SENTINEL-9"));
    }
    out.push(("opencode", o));
    if excluded {
        let mut claude = |rel: &str, edits: &[(&str, Value)]| {
            let mut p = load(&format!("claude-code/2.1.328/{rel}"));
            set(&mut p, "/cwd", json!(proj));
            for (ptr, val) in edits {
                set(&mut p, ptr, val.clone());
            }
            out.push(("claude-code", p));
        };
        claude(
            "PostToolUse-Read.json",
            &[
                (
                    "/tool_input/file_path",
                    json!(format!("{proj}/secret/EXCLUDED-SENTINEL-name.txt")),
                ),
                (
                    "/tool_response/file/filePath",
                    json!(format!("{proj}/secret/EXCLUDED-SENTINEL-name.txt")),
                ),
                (
                    "/tool_response/file/content",
                    json!("EXCLUDED-SENTINEL-content KEEPWORD-never"),
                ),
            ],
        );
    }
    out
}

#[test]
fn sentinel_nothing_private_reaches_the_data_dir() {
    sentinel(false);
}

#[test]
fn sentinel_with_an_excluded_path() {
    sentinel(true);
}

fn sentinel(excluded: bool) {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    let proj = home.join("work").join("demo");
    fs::create_dir_all(proj.join("secret")).unwrap();
    fs::write(
        proj.join(".ai-memory.toml"),
        "project = \"demo\"\n[capture]\nignore_paths = [\"secret/**\"]\n",
    )
    .unwrap();
    let data = home.join(".memhook-data");

    let secrets = secrets();
    let all: String = secrets
        .iter()
        .map(|(_, text, _)| text.as_str())
        .collect::<Vec<_>>()
        .join("\n");

    for (agent, payload) in payloads(proj.to_str().unwrap(), &all, excluded) {
        let mut cmd = memhook(home);
        cmd.current_dir(&proj).args(["hook", "--agent", agent]);
        let out = run_with_stdin(cmd, payload.to_string().as_bytes());
        assert!(out.status.success(), "{agent}: {out:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        serde_json::from_str::<Value>(stdout.trim())
            .unwrap_or_else(|e| panic!("{agent}: stdout is not JSON ({e}): {stdout}"));
        for (kind, _, secret) in &secrets {
            assert!(
                !stdout.contains(secret.as_str()) && !stderr.contains(secret.as_str()),
                "{agent} printed a {kind} secret"
            );
        }
    }
    // Deliver what the hook spooled, when delivery exists in this build; the
    // store is walked like the spool either way.
    let _ = memhook(home).args(["drain"]).output();

    // Wait (bounded) until every kept word is somewhere under the data dir:
    // a detached drainer may be moving records from spool to store.
    let deadline = Instant::now() + Duration::from_secs(10);
    let files = loop {
        let mut files = Vec::new();
        walk(&data, &mut files);
        let all_kept = KEPT
            .iter()
            .all(|k| files.iter().any(|(_, b)| contains(b, k)));
        if all_kept || Instant::now() > deadline {
            break files;
        }
        std::thread::sleep(Duration::from_millis(200));
    };

    assert!(!files.is_empty(), "nothing was written under {data:?}");
    for k in KEPT {
        assert!(
            files.iter().any(|(_, b)| contains(b, k)),
            "kept content {k} is missing from the data dir"
        );
    }
    for (path, bytes) in &files {
        for (kind, _, secret) in &secrets {
            assert!(
                !contains(bytes, secret),
                "{kind} secret found in {}",
                path.display()
            );
        }
        for f in FORBIDDEN {
            assert!(!contains(bytes, f), "{f} found in {}", path.display());
        }
        assert!(
            !contains(bytes, "KEEPWORD-never"),
            "excluded content in {}",
            path.display()
        );
    }
    // Redaction left its markers (it redacted rather than dropping text).
    let all_bytes: Vec<u8> = files.iter().flat_map(|(_, b)| b.clone()).collect();
    for kind in secrets.iter().map(|(k, _, _)| *k) {
        assert!(
            contains(&all_bytes, &format!("[REDACTED:{kind}]")),
            "no [REDACTED:{kind}] marker stored"
        );
    }
}

/// Spooled records (an unreachable server keeps them in the spool).
fn spooled_records(data: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(data.join("spool")) else {
        return out;
    };
    for ent in rd.flatten() {
        let p = ent.path();
        if p.extension().is_some_and(|e| e == "json") {
            let v: Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
            out.push(v["record"].clone());
        }
    }
    out
}

#[test]
fn caps_and_redaction_hold_in_the_records_the_binary_writes() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    let proj = home.join("demo");
    fs::create_dir_all(&proj).unwrap();
    let gh = format!("ghp_{}", "R7bE3kQ9xZ2mN4pL6vT8wY1cA5sD0fG3hJ2k");
    // A secret placed so that a cut before redaction would split it.
    let prompt = format!("KEEP {} {gh} tail", "a".repeat(16 * 1024 - 20));
    let mut p = load("claude-code/2.1.328/UserPromptSubmit.json");
    set(&mut p, "/cwd", json!(proj));
    set(&mut p, "/prompt", json!(prompt));
    let mut post = load("claude-code/2.1.328/PostToolUse-Bash.json");
    set(&mut post, "/cwd", json!(proj));
    set(&mut post, "/tool_response/stdout", json!("o".repeat(3000)));
    for payload in [p, post] {
        let mut cmd = memhook(home);
        // Port 9 (discard) refuses: records stay in the spool to be read.
        cmd.current_dir(&proj).args([
            "hook",
            "--agent",
            "claude-code",
            "--server-url",
            "http://127.0.0.1:9",
        ]);
        let out = run_with_stdin(cmd, payload.to_string().as_bytes());
        assert!(out.status.success(), "{out:?}");
    }
    let records = spooled_records(&home.join(".memhook-data"));
    let find = |event: &str| {
        records
            .iter()
            .find(|r| r["event"] == event)
            .unwrap_or_else(|| panic!("no {event} record in {records:?}"))
    };

    let r = find("user-prompt");
    let body = r["body"].as_str().unwrap();
    assert_eq!(body.len(), 16 * 1024);
    assert!(body.starts_with("KEEP ") && body.ends_with('…'));
    assert!(!body.contains("ghp_"), "a secret prefix escaped the cap");
    assert_eq!(r["title"].as_str().unwrap().chars().count(), 80);
    assert_eq!(r["key"].as_str().unwrap().len(), 32);
    assert_eq!(r["v"], 1);

    let r = find("post-tool-use");
    let body = r["body"].as_str().unwrap();
    assert_eq!(body.len(), 2000);
    assert!(body.ends_with('…'));
    assert_eq!(r["tool"]["outcome"], "success");
    assert_eq!(r["tool"]["name"], "Bash");
    assert_eq!(r["title"], "Bash: ls -la");
    // The command line is kept apart from the body (DESIGN §4).
    assert_eq!(r["command"], "ls -la");
    assert!(!body.contains("ls -la"));
}

/// `memhook recent` for people: local time with its offset, the session's
/// short id, titles that say what happened, and a tool call folded into
/// its result (a call whose result has not arrived stays listed). `--json`
/// lists every record, with UTC times.
#[test]
fn recent_folds_calls_into_results_and_shows_sessions_and_local_time() {
    use crate::support::fixtures::claude_payload;
    let home = tempfile::tempdir().unwrap();
    let session = "371ef597-95d6-487f-a6bc-140cd0de6f2b";
    let mut prompt = claude_payload("UserPromptSubmit", home.path(), session);
    prompt["prompt"] = "list the files".into();
    let pre = claude_payload("PreToolUse-Bash", home.path(), session);
    let post = claude_payload("PostToolUse-Bash", home.path(), session);
    let mut running = claude_payload("PreToolUse-Bash", home.path(), session);
    running["tool_use_id"] = "toolu_still_running".into();
    let edit = claude_payload("PostToolUse-Edit", home.path(), session);
    let cwd = prompt["cwd"].as_str().unwrap().to_string();
    for (event, p) in [
        ("UserPromptSubmit", &prompt),
        ("PreToolUse", &pre),
        ("PostToolUse", &post),
        ("PreToolUse", &running),
        ("PostToolUse", &edit),
    ] {
        let mut cmd = memhook(home.path());
        cmd.args(["hook", "--agent", "claude-code", "--event", event])
            .current_dir(&cwd)
            .env("MEMHOOK_NO_HOOK_DELIVERY", "1");
        let out = run_with_stdin(cmd, p.to_string().as_bytes());
        assert!(out.status.success(), "{out:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(memhook(home.path())
        .arg("drain")
        .status()
        .unwrap()
        .success());
    let out = memhook(home.path())
        .args(["recent", "--all"])
        .env("TZ", "XYZ-5:30")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[0].ends_with("claude-code session 371ef597 post-tool-use — Edit src/app.py"),
        "{text}"
    );
    assert!(
        lines[1].ends_with("claude-code session 371ef597 pre-tool-use — Bash (shell)"),
        "{text}"
    );
    assert!(
        lines[2].ends_with("claude-code session 371ef597 post-tool-use — Bash: ls -la"),
        "{text}"
    );
    assert!(
        lines[3].ends_with("claude-code session 371ef597 user-prompt — list the files"),
        "{text}"
    );
    // --limit counts the lines printed, after folding.
    let out = memhook(home.path())
        .args(["recent", "--all", "--limit", "3"])
        .env("TZ", "XYZ-5:30")
        .output()
        .unwrap();
    let limited = String::from_utf8_lossy(&out.stdout);
    assert_eq!(limited.lines().collect::<Vec<_>>(), lines[..3], "{limited}");
    for l in &lines {
        // `YYYY-MM-DD HH:MM:SS +05:30 key…`
        assert_eq!(&l[19..26], " +05:30", "{l}");
    }
    let out = memhook(home.path())
        .arg("status")
        .env("TZ", "XYZ-5:30")
        .output()
        .unwrap();
    let status = String::from_utf8_lossy(&out.stdout);
    let delivery = status
        .lines()
        .find(|l| l.trim_start().starts_with("last delivery: "))
        .unwrap_or_else(|| panic!("{status}"));
    assert!(delivery.contains(" +05:30 ("), "{status}");
    // search speaks the same time as recent.
    let out = memhook(home.path())
        .args(["search", "files", "--all"])
        .env("TZ", "XYZ-5:30")
        .output()
        .unwrap();
    let found = String::from_utf8_lossy(&out.stdout);
    let first = found.lines().next().unwrap_or_else(|| panic!("{found}"));
    assert_eq!(&first[19..26], " +05:30", "{found}");
    assert_eq!(first[..19], lines[3][..19], "{found}");
    // --json: every record, UTC.
    let out = memhook(home.path())
        .args(["recent", "--all", "--json"])
        .output()
        .unwrap();
    let json = String::from_utf8_lossy(&out.stdout);
    assert_eq!(json.lines().count(), 5, "{json}");
    assert!(json.contains("Z\""), "{json}");
}
