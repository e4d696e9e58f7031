//! Integration tests for `memhook hook`: real agent payloads through the real
//! binary, bad input, concurrency, unusable data dirs, `--check-capture`
//! replaying `fixtures/capture/cases.json`, and the excluded-path half of
//! the sentinel privacy test.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::binaries::{memhook, run_with_stdin};
use crate::support::files::contains;
use crate::support::fixtures::fixture;
use crate::support::home::data_dir;
use crate::support::process::eventually;

/// Spool entries (parsed), oldest first.
fn spool(home: &Path) -> Vec<Value> {
    let dir = data_dir(home).join("spool");
    let mut names: Vec<PathBuf> = match fs::read_dir(&dir) {
        Ok(rd) => rd
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect(),
        Err(_) => return Vec::new(),
    };
    names.sort();
    names
        .iter()
        .map(|p| serde_json::from_slice(&fs::read(p).unwrap()).unwrap())
        .collect()
}

/// Hold the drain lock of `home`'s data dir: nothing is delivered while it
/// is held (the drainer a hook starts waits for it), so what hooks enqueue
/// stays in the spool to be counted. Session start waits its delivery share
/// for the lock, then goes on.
fn hold_drain(home: &Path) -> memhook_delivery::drain::DrainLock {
    let d = data_dir(home);
    memhook_core::data_dir::ensure_private_dir(&d).unwrap();
    memhook_delivery::drain::try_lock(&d)
        .unwrap()
        .expect("the drain lock is free")
}

/// Exit 0, and stdout is exactly one line holding one JSON object.
fn assert_envelope(out: &Output, what: &str) -> Value {
    assert_eq!(out.status.code(), Some(0), "{what}: {out:?}");
    let stdout = String::from_utf8(out.stdout.clone()).expect("utf-8 stdout");
    assert!(
        stdout.ends_with('\n') && stdout.lines().count() == 1,
        "{what}: {stdout:?}"
    );
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(v.is_object(), "{what}: {v}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("internal error") && !stderr.contains("panicked"),
        "{what}: {stderr}"
    );
    v
}

fn hook(home: &Path, agent: &str, event: Option<&str>) -> Command {
    let mut c = memhook(home);
    c.args(["hook", "--agent", agent]);
    if let Some(e) = event {
        c.args(["--event", e]);
    }
    c
}

/// Every fixture of an agent: (file name, payload, --event to pass).
fn agent_fixtures(dir: &str) -> Vec<(String, Value, Option<String>)> {
    let root = fixture(&format!("agents/{dir}"));
    let index: Vec<Value> =
        serde_json::from_slice(&fs::read(root.join("index.json")).unwrap()).unwrap();
    index
        .iter()
        .map(|ent| {
            let file = ent["file"].as_str().unwrap().to_string();
            let mut payload: Value =
                serde_json::from_slice(&fs::read(root.join(&file)).unwrap()).unwrap();
            // OpenCode: our plugin passes the hook name and adds the directory.
            let event = ent["hook"].as_str().map(str::to_string);
            if event.is_some() {
                payload["directory"] = Value::from("/home/dev/projects/demo");
            }
            (file, payload, event)
        })
        .collect()
}

#[test]
fn every_real_payload_of_every_agent_exits_0_with_one_record_each() {
    for (agent, dir) in [
        ("claude-code", "claude-code/2.1.328"),
        ("codex", "codex/0.171.0"),
        ("gemini-cli", "gemini-cli/0.61.0"),
        ("opencode", "opencode/1.18.33"),
    ] {
        let t = tempfile::tempdir().unwrap();
        let _drain = hold_drain(t.path());
        let fixtures = agent_fixtures(dir);
        assert!(fixtures.len() > 20, "{dir}");
        for (i, (file, payload, event)) in fixtures.iter().enumerate() {
            let out = run_with_stdin(
                hook(t.path(), agent, event.as_deref()),
                &serde_json::to_vec(payload).unwrap(),
            );
            let env = assert_envelope(&out, &format!("{agent} {file}"));
            if agent == "gemini-cli" {
                // Gemini CLI: stdout must be JSON only (checked above), nothing else.
                assert!(env.is_object());
            }
            // No marker: nothing is excluded, so every event is one record.
            assert_eq!(spool(t.path()).len(), i + 1, "{agent} {file}");
        }
        let recs = spool(t.path());
        let kinds: Vec<&str> = recs
            .iter()
            .map(|e| e["record"]["event"].as_str().unwrap())
            .collect();
        let mut wanted = vec![
            "session-start",
            "user-prompt",
            "pre-tool-use",
            "post-tool-use",
            "stop",
        ];
        if agent != "opencode" {
            // OpenCode's recorded run has no compaction and no session end.
            wanted.extend(["pre-compact", "session-end"]);
        }
        for want in wanted {
            assert!(kinds.contains(&want), "{agent}: no {want} in {kinds:?}");
        }
        // The agent's final message is kept only as a main session's stop
        // record's body (DESIGN §4), nowhere else.
        for r in &recs {
            let s = r.to_string();
            if s.contains("All done.") {
                let rec = &r["record"];
                assert_eq!(rec["event"], "stop", "{agent}: {s}");
                assert_eq!(rec["subagent"], false, "{agent}: {s}");
                assert!(rec["body"].as_str().unwrap().contains("All done."), "{s}");
            }
        }
    }
}

#[test]
fn every_spelling_of_a_tool_event_is_the_same_record_kind() {
    let t = tempfile::tempdir().unwrap();
    let _drain = hold_drain(t.path());
    let payload = fs::read(fixture("agents/claude-code/2.1.328/PreToolUse-Read.json")).unwrap();
    for spelling in [
        "PreToolUse",
        "pre-tool-use",
        "pre_tool_use",
        "preToolUse",
        "BeforeTool",
    ] {
        let out = run_with_stdin(hook(t.path(), "claude-code", Some(spelling)), &payload);
        assert_envelope(&out, spelling);
    }
    let recs = spool(t.path());
    assert_eq!(recs.len(), 5);
    for r in recs {
        assert_eq!(r["record"]["event"], "pre-tool-use");
        // Pre-tool records never hold the input.
        assert!(!r.to_string().contains("src/app.py"), "{r}");
    }
}

#[test]
fn bad_input_exits_0_quickly_with_an_envelope_and_no_record() {
    let t = tempfile::tempdir().unwrap();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let mut big = b"{\"tool_response\":\"".to_vec();
    big.resize(40 * 1024 * 1024, b'x');
    big.extend_from_slice(b"\"}");
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("invalid json", b"{\"hook_event_name\": nope".to_vec()),
        ("empty", Vec::new()),
        ("binary", (0..=255u8).cycle().take(10_000).collect()),
        ("deep nesting", deep.into_bytes()),
        ("json array", b"[1,2,3]".to_vec()),
        ("40 MB", big),
    ];
    for (what, input) in cases {
        for agent in ["claude-code", "gemini-cli"] {
            let start = Instant::now();
            let out = run_with_stdin(hook(t.path(), agent, Some("PostToolUse")), &input);
            assert_envelope(&out, what);
            assert!(start.elapsed() < Duration::from_secs(10), "{what} hung");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.starts_with("memhook: "), "{what}: {stderr}");
            assert!(stderr.contains("not captured"), "{what}: {stderr}");
        }
    }
    assert!(spool(t.path()).is_empty());
}

/// A bug in the hook still answers the agent: exit 0, a valid envelope, one
/// line on stderr and nothing in the spool. The panic unwinds through the
/// unwinder `build.rs` links into the binary, so this also proves that
/// unwinder works (fault injection through `MEMHOOK_TEST_PANIC`, debug
/// builds only).
#[test]
fn a_panic_in_the_hook_still_answers_the_agent() {
    if !cfg!(debug_assertions) {
        eprintln!("SKIPPED: the panic switch exists in debug builds only");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let payload =
        crate::support::fixtures::claude_payload("PostToolUse-Read", t.path(), "panic-session");
    let mut cmd = hook(t.path(), "claude-code", Some("PostToolUse"));
    cmd.env(memhook_hook::PANIC_ENV, "1");
    let out = run_with_stdin(cmd, payload.to_string().as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "{}\n", "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "memhook: internal error (MEMHOOK_TEST_PANIC is set); the event was not captured\n"
    );
    assert!(spool(t.path()).is_empty());
}

/// The dynamically linked Linux binary does not load `libgcc_s.so`: loading
/// it cost every hook call 0.1–0.2 ms (docs/benchmarks.md, "The
/// unwinder"); `build.rs` links GCC's static unwinder in instead.
#[test]
fn the_linux_binary_does_not_load_libgcc_s() {
    if !(cfg!(target_os = "linux") && cfg!(target_env = "gnu")) {
        return;
    }
    let out = Command::new("readelf")
        .args(["--dynamic", env!("CARGO_BIN_EXE_memhook")])
        .output()
        .expect("readelf (binutils) reads the binary's dynamic section");
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    let needed: Vec<&str> = text.lines().filter(|l| l.contains("(NEEDED)")).collect();
    if !cfg!(target_feature = "crt-static") {
        assert!(
            needed.iter().any(|l| l.contains("libc.so")),
            "a dynamic binary needs libc: {text}"
        );
    }
    assert!(
        !needed.iter().any(|l| l.contains("libgcc_s")),
        "the binary still loads libgcc_s: {needed:?}"
    );
}

#[test]
fn a_bom_is_stripped() {
    let t = tempfile::tempdir().unwrap();
    let _drain = hold_drain(t.path());
    let mut input = b"\xEF\xBB\xBF".to_vec();
    input.extend(fs::read(fixture("agents/codex/0.171.0/UserPromptSubmit.json")).unwrap());
    let out = run_with_stdin(hook(t.path(), "codex", None), &input);
    assert_envelope(&out, "bom");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = spool(t.path());
    assert_eq!(recs.len(), 1);
    assert_eq!(recs[0]["record"]["event"], "user-prompt");
}

/// Spawn the hook, write `input`, keep stdin open; return the output and how
/// long it took.
fn run_with_open_stdin(cmd: Command, input: &[u8]) -> (Output, Duration) {
    let mut cmd = cmd;
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let mut sin = child.stdin.take().unwrap();
    sin.write_all(input).unwrap();
    sin.flush().unwrap();
    let out = child.wait_with_output().unwrap();
    let took = start.elapsed();
    drop(sin);
    (out, took)
}

#[test]
fn stdin_left_open_never_hangs_the_agent() {
    let t = tempfile::tempdir().unwrap();
    let _drain = hold_drain(t.path());
    // Partial JSON and no EOF: gives up at the deadline, captures nothing.
    let (out, took) = run_with_open_stdin(
        hook(t.path(), "claude-code", Some("Stop")),
        b"{\"session_id\":",
    );
    assert_envelope(&out, "partial, open");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not closed"));
    assert!(spool(t.path()).is_empty());
    // A complete object and no EOF: captured.
    let payload = fs::read(fixture("agents/claude-code/2.1.328/Stop.json")).unwrap();
    let (out, took) = run_with_open_stdin(hook(t.path(), "claude-code", None), &payload);
    assert_envelope(&out, "complete, open");
    assert!(took < Duration::from_secs(10), "took {took:?}");
    assert_eq!(spool(t.path()).len(), 1);
}

#[test]
fn sixty_four_hooks_at_once_leave_sixty_four_intact_records() {
    let t = tempfile::tempdir().unwrap();
    let _drain = hold_drain(t.path());
    let payload = fs::read(fixture("agents/claude-code/2.1.328/PostToolUse-Bash.json")).unwrap();
    let mut children = Vec::new();
    for _ in 0..64 {
        let mut c = hook(t.path(), "claude-code", None);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        child.stdin.take().unwrap().write_all(&payload).unwrap();
        children.push(child);
    }
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert_envelope(&out, "concurrent");
    }
    let recs = spool(t.path());
    assert_eq!(recs.len(), 64);
    let mut keys: Vec<String> = recs
        .iter()
        .map(|r| r["record"]["key"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 64);
    let tmp: Vec<_> = fs::read_dir(data_dir(t.path()).join("spool/tmp"))
        .unwrap()
        .collect();
    assert!(tmp.is_empty(), "temp files left: {tmp:?}");
}

#[test]
fn unusable_data_dirs_warn_and_exit_0() {
    let t = tempfile::tempdir().unwrap();
    let payload = fs::read(fixture("agents/claude-code/2.1.328/UserPromptSubmit.json")).unwrap();
    // A symlinked data dir is refused, nothing is written through it.
    let real = t.path().join("real");
    fs::create_dir(&real).unwrap();
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let mut c = hook(t.path(), "claude-code", None);
    c.env("AI_MEMORY_DATA_DIR", &link);
    let out = run_with_stdin(c, &payload);
    assert_envelope(&out, "symlink");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("memhook: ") && stderr.contains("symlink"),
        "{stderr}"
    );
    assert_eq!(fs::read_dir(&real).unwrap().count(), 0);
    // A data dir that cannot be created (its parent is a file).
    let file = t.path().join("file");
    fs::write(&file, b"x").unwrap();
    let mut c = hook(t.path(), "claude-code", None);
    c.arg("--data-dir").arg(file.join("data"));
    let out = run_with_stdin(c, &payload);
    assert_envelope(&out, "unwritable");
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("memhook: "));
}

#[test]
fn the_server_url_comes_from_the_flag_or_env_never_the_payload() {
    let t = tempfile::tempdir().unwrap();
    let _drain = hold_drain(t.path());
    let payload = fs::read(fixture("agents/codex/0.171.0/Stop.json")).unwrap();
    let mut c = hook(t.path(), "codex", None);
    c.env("AI_MEMORY_HOOK_URL", "http://127.0.0.1:9/ ");
    assert_envelope(&run_with_stdin(c, &payload), "env url");
    let mut c = hook(t.path(), "codex", None);
    c.env("AI_MEMORY_HOOK_URL", "http://127.0.0.1:9/");
    c.args(["--server-url", "http://127.0.0.1:8///"]);
    assert_envelope(&run_with_stdin(c, &payload), "flag url");
    let recs = spool(t.path());
    assert_eq!(
        recs[0]["sink"],
        serde_json::json!({"kind": "http", "url": "http://127.0.0.1:9"})
    );
    assert_eq!(
        recs[1]["sink"],
        serde_json::json!({"kind": "http", "url": "http://127.0.0.1:8"})
    );
}

// ---- capture policy through the binary (needs the scope resolver) ----

const DEMO: &str = "/home/dev/projects/demo";

/// A home with `projects/demo` in it and, unless `marker` is None, a marker.
fn project(marker: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let demo = t.path().join("projects/demo");
    fs::create_dir_all(demo.join("src")).unwrap();
    if let Some(m) = marker {
        fs::write(demo.join(".ai-memory.toml"), m).unwrap();
    }
    (t, demo)
}

/// A payload with the recorded `/home/dev` rewritten to `home`.
fn rehome(payload: &Value, home: &Path) -> Vec<u8> {
    payload
        .to_string()
        .replace("/home/dev", home.to_str().unwrap())
        .into_bytes()
}

fn marker_for(policy: &Value) -> Option<String> {
    match policy {
        Value::String(s) if s == "absent" => None,
        Value::String(s) if s == "inactive" => Some("project = \"demo\"\n".into()),
        Value::String(s) if s == "invalid" => {
            Some("[capture]\nignore_paths = \"not a list\"\n".into())
        }
        Value::Array(pats) => {
            let list: Vec<String> = pats
                .iter()
                .map(|p| toml_string(p.as_str().unwrap()))
                .collect();
            Some(format!("[capture]\nignore_paths = [{}]\n", list.join(", ")))
        }
        other => panic!("bad policy {other}"),
    }
}

fn toml_string(s: &str) -> String {
    format!("'{s}'")
}

/// Apply a case's `remove`/`set` edits (JSON pointers) to its payload.
fn case_payload(case: &Value) -> Value {
    let mut payload = match &case["payload"] {
        Value::String(rel) => {
            serde_json::from_slice(&fs::read(fixture(&format!("agents/{rel}"))).unwrap()).unwrap()
        }
        v => v.clone(),
    };
    for ptr in case["remove"].as_array().into_iter().flatten() {
        let (parent, key) = ptr.as_str().unwrap().rsplit_once('/').unwrap();
        payload
            .pointer_mut(parent)
            .unwrap()
            .as_object_mut()
            .unwrap()
            .remove(key);
    }
    for (ptr, v) in case["set"].as_object().into_iter().flatten() {
        let (parent, key) = ptr.rsplit_once('/').unwrap();
        let parent = if parent.is_empty() {
            &mut payload
        } else {
            payload.pointer_mut(parent).unwrap()
        };
        parent
            .as_object_mut()
            .unwrap()
            .insert(key.to_string(), v.clone());
    }
    payload
}

#[test]
fn check_capture_replays_the_capture_cases_and_writes_nothing() {
    let cases: Vec<Value> =
        serde_json::from_slice(&fs::read(fixture("capture/cases.json")).unwrap()).unwrap();
    let mut failures = Vec::new();
    for case in &cases {
        let (t, _demo) = project(marker_for(&case["policy"]).as_deref());
        let mut c = hook(
            t.path(),
            case["agent"].as_str().unwrap(),
            case["event"].as_str(),
        );
        c.arg("--check-capture");
        let out = run_with_stdin(c, &rehome(&case_payload(case), t.path()));
        let got = assert_envelope(&out, case["name"].as_str().unwrap());
        let keys: Vec<&String> = got.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "version",
                "policy_state",
                "tool_family",
                "path_count",
                "disposition",
                "extraction_state"
            ]
        );
        let mut want = case["expect"].clone();
        want["version"] = Value::from(1);
        let sorted = |v: &Value| {
            v.as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<std::collections::BTreeMap<_, _>>()
        };
        if sorted(&got) != sorted(&want) {
            failures.push(format!("{}: want {want} got {got}", case["name"]));
        }
        // No spool, no state: the data dir was never created.
        assert!(
            !data_dir(t.path()).exists(),
            "{}: wrote state",
            case["name"]
        );
        // Never a path, pattern or payload byte on stdout.
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            !stdout.contains('/') && !stdout.contains("demo"),
            "{stdout}"
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

fn all_bytes_under(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd {
            let p = e.unwrap().path();
            out.extend_from_slice(p.to_string_lossy().as_bytes());
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = fs::read(&p) {
                out.extend(b);
            }
        }
    }
    out
}

/// The excluded-path half of the sentinel test: content under an excluded
/// path and pre-tool inputs never reach any byte under the data dir (nor
/// stderr), while kept content does.
#[test]
fn sentinel_excluded_paths_and_pre_tool_inputs_are_never_written() {
    let (t, demo) = project(Some("[capture]\nignore_paths = ['secret/**', '*.pem']\n"));
    let drain = hold_drain(t.path());
    let claude = |name: &str| -> Value {
        serde_json::from_slice(
            &fs::read(fixture(&format!("agents/claude-code/2.1.328/{name}"))).unwrap(),
        )
        .unwrap()
    };
    let mut runs: Vec<(Value, &str)> = Vec::new();
    // Excluded file read: its response holds the sentinel.
    let mut read = claude("PostToolUse-Read.json");
    read["tool_input"]["file_path"] = Value::from(format!("{DEMO}/secret/plan.txt"));
    read["tool_response"]["file"]["content"] = Value::from("SENTINEL-EXCLUDED-READ");
    read["tool_response"]["file"]["filePath"] = Value::from(format!("{DEMO}/secret/plan.txt"));
    runs.push((read, "claude-code"));
    // Excluded by a relative glob, through a shell command.
    let mut bash = claude("PostToolUse-Bash.json");
    bash["tool_input"]["command"] = Value::from("cat ./deploy.pem | head");
    bash["tool_response"] = serde_json::json!({"stdout": "SENTINEL-EXCLUDED-SHELL", "stderr": ""});
    runs.push((bash, "claude-code"));
    // A failure on an excluded path.
    let mut fail = claude("PostToolUseFailure-Read-missing-file.json");
    fail["tool_input"]["file_path"] = Value::from("secret/missing.txt");
    fail["error"] = Value::from("SENTINEL-EXCLUDED-ERROR secret/missing.txt");
    runs.push((fail, "claude-code"));
    // Gemini's AfterTool spelling on an excluded path.
    let mut gem: Value = serde_json::from_slice(
        &fs::read(fixture("agents/gemini-cli/0.61.0/AfterTool-read_file.json")).unwrap(),
    )
    .unwrap();
    gem["tool_input"]["file_path"] = Value::from("secret/notes.md");
    gem["tool_response"]["llmContent"] = Value::from("SENTINEL-EXCLUDED-GEMINI");
    runs.push((gem, "gemini-cli"));
    // A search tool under an active policy: dropped whole.
    let mut grep = claude("PostToolUse-Grep.json");
    grep["tool_input"]["pattern"] = Value::from("SENTINEL-SEARCH");
    runs.push((grep, "claude-code"));
    // A kept pre-tool event: its input is never stored.
    let mut pre = claude("PreToolUse-Write.json");
    pre["tool_input"]["content"] = Value::from("SENTINEL-PRE-TOOL-INPUT");
    runs.push((pre, "claude-code"));
    // A kept post-tool event: its output is.
    let mut kept = claude("PostToolUse-Bash.json");
    kept["tool_input"]["command"] = Value::from("echo hi");
    kept["tool_response"] = serde_json::json!({"stdout": "KEPT-CONTENT-1234", "stderr": ""});
    runs.push((kept, "claude-code"));

    let mut stderr_all = Vec::new();
    for (payload, agent) in &runs {
        let out = run_with_stdin(hook(t.path(), agent, None), &rehome(payload, t.path()));
        assert_envelope(&out, "sentinel");
        stderr_all.extend(out.stderr);
    }
    // Exactly the pre-tool and the kept post-tool events were spooled.
    assert_eq!(spool(t.path()).len(), 2);
    // Deliver them into the embedded store, then look at every byte.
    drop(drain);
    let out = memhook(t.path()).arg("drain").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    stderr_all.extend(out.stderr);
    assert!(spool(t.path()).is_empty(), "drain delivered everything");
    let bytes = all_bytes_under(&data_dir(t.path()));
    assert!(
        contains(&bytes, "KEPT-CONTENT-1234"),
        "kept content must be stored"
    );
    for s in [
        "SENTINEL-EXCLUDED-READ",
        "SENTINEL-EXCLUDED-SHELL",
        "SENTINEL-EXCLUDED-ERROR",
        "SENTINEL-EXCLUDED-GEMINI",
        "SENTINEL-SEARCH",
        "SENTINEL-PRE-TOOL-INPUT",
        "secret/plan.txt",
        "secret/missing.txt",
        "secret/notes.md",
        "deploy.pem",
    ] {
        assert!(!contains(&bytes, s), "{s} written under the data dir");
        assert!(!contains(&stderr_all, s), "{s} on stderr");
    }
    assert!(demo.exists());
}

#[test]
fn subagent_events_are_accepted_and_not_stored_when_the_marker_says_so() {
    let (t, _) = project(Some("project = \"demo\"\ndrop_subagent_captures = true\n"));
    let _drain = hold_drain(t.path());
    for name in [
        "PreToolUse-Read-subagent.json",
        "SubagentStart-subagent.json",
        "SubagentStop-subagent.json",
        "PreToolUse-Read.json",
    ] {
        let p: Value = serde_json::from_slice(
            &fs::read(fixture(&format!("agents/claude-code/2.1.328/{name}"))).unwrap(),
        )
        .unwrap();
        let out = run_with_stdin(hook(t.path(), "claude-code", None), &rehome(&p, t.path()));
        assert_envelope(&out, name);
    }
    let recs = spool(t.path());
    assert_eq!(recs.len(), 1, "only the main session's event");
    assert_eq!(recs[0]["record"]["subagent"], false);
}

/// `MAX_STDIN_BYTES` (8 MiB) at its edge: a payload of exactly 8 MiB is
/// recorded, one byte more is skipped whole.
#[test]
fn stdin_size_bound_at_its_edge() {
    const MAX: usize = 8 * 1024 * 1024;
    assert_eq!(memhook_hook::MAX_STDIN_BYTES, MAX);
    let t = tempfile::tempdir().unwrap();
    let _drain = hold_drain(t.path());
    let base = fs::read(fixture("agents/claude-code/2.1.328/PostToolUse-Bash.json")).unwrap();
    // The object itself is `n` bytes: a padding string inside it.
    let sized = |n: usize| {
        let head = String::from_utf8(base.clone()).unwrap();
        let head = head.trim_end().strip_suffix('}').unwrap().to_string() + ",\"pad\":\"";
        let mut b = head.into_bytes();
        b.resize(n - 2, b'x');
        b.extend_from_slice(b"\"}");
        assert_eq!(b.len(), n);
        b
    };
    let out = run_with_stdin(hook(t.path(), "claude-code", None), &sized(MAX));
    assert_envelope(&out, "at the bound");
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(spool(t.path()).len(), 1);
    let out = run_with_stdin(hook(t.path(), "claude-code", None), &sized(MAX + 1));
    assert_envelope(&out, "one over");
    assert!(String::from_utf8_lossy(&out.stderr).contains("larger than 8 MiB"));
    assert_eq!(spool(t.path()).len(), 1);
}

/// Bad arguments never block the agent: whatever clap refuses, `memhook
/// hook` prints one `memhook:` line, the empty envelope and exits 0, for
/// every agent, and stores nothing.
#[test]
fn bad_arguments_exit_0_with_the_empty_envelope_for_every_agent() {
    use std::os::unix::ffi::OsStrExt;
    let t = tempfile::tempdir().unwrap();
    let payload = fs::read(fixture("agents/claude-code/2.1.328/PreToolUse-Read.json")).unwrap();
    let bad: Vec<(&str, Vec<&std::ffi::OsStr>)> = vec![
        ("unknown flag", vec!["--bogus".as_ref()]),
        ("unknown flag with a value", vec!["--bogus=1".as_ref()]),
        ("stray positional", vec!["extra".as_ref()]),
        (
            "bad strategy",
            vec!["--project-strategy".as_ref(), "nope".as_ref()],
        ),
        (
            "event twice",
            vec!["--event".as_ref(), "PostToolUse".as_ref()],
        ),
        ("missing value", vec!["--server-url".as_ref()]),
        (
            "not UTF-8",
            vec![
                "--server-url".as_ref(),
                std::ffi::OsStr::from_bytes(b"\xff"),
            ],
        ),
    ];
    for agent in ["claude-code", "codex", "gemini-cli", "opencode", "cursor"] {
        for (what, extra) in &bad {
            let mut cmd = hook(t.path(), agent, Some("PreToolUse"));
            cmd.args(extra);
            let out = run_with_stdin(cmd, &payload);
            let what = format!("{agent}: {what}");
            let env = assert_envelope(&out, &what);
            assert_eq!(env, serde_json::json!({}), "{what}");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(stderr.lines().count(), 1, "{what}: {stderr}");
            assert!(
                stderr.starts_with("memhook: hook: bad arguments (")
                    && stderr.contains("not captured"),
                "{what}: {stderr}"
            );
        }
        // The agent's value itself missing: the envelope is still `{}`.
        let mut cmd = memhook(t.path());
        cmd.args(["hook", "--event", "SessionStart", "--agent"]);
        assert_eq!(
            assert_envelope(&run_with_stdin(cmd, &payload), "no agent"),
            serde_json::json!({})
        );
    }
    assert!(spool(t.path()).is_empty());
    // Help and version are not errors either.
    for flag in ["--help", "--version", "-h", "-V"] {
        let mut cmd = hook(t.path(), "claude-code", None);
        cmd.arg(flag);
        let out = run_with_stdin(cmd, b"");
        assert_eq!(out.status.code(), Some(0), "{flag}: {out:?}");
    }
}

/// Run a Claude Code hook on `payload` (a fixture re-homed under `home`).
fn claude_hook(home: &Path, name: &str, session: &str, env: &[(&str, &str)]) -> (Output, Duration) {
    let mut p: Value = serde_json::from_slice(
        &fs::read(fixture(&format!("agents/claude-code/2.1.328/{name}.json"))).unwrap(),
    )
    .unwrap();
    p["session_id"] = Value::from(session);
    let mut cmd = hook(home, "claude-code", None);
    cmd.envs(env.iter().copied());
    let start = Instant::now();
    let out = run_with_stdin(cmd, &rehome(&p, home));
    (out, start.elapsed())
}

/// A store with one finished session of real work, so session start has
/// something to say.
fn store_with_a_session(home: &Path) {
    let quiet = [(memhook_delivery::drain::NO_HOOK_DELIVERY_ENV, "1")];
    for name in ["SessionStart-startup", "UserPromptSubmit", "Stop"] {
        let (out, _) = claude_hook(home, name, "earlier", &quiet);
        assert_envelope(&out, name);
    }
    let out = memhook(home).arg("drain").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// Another process holds a write transaction on the store for 10 s: session
/// start answers within its budget (a briefing or `{}`), it does not wait
/// for SQLite's busy timeout — with and without records pending for the
/// store (delivery writes, composing reads).
#[test]
fn session_start_keeps_its_budget_while_another_process_holds_the_store() {
    for pending in [false, true] {
        for behaviour in ["IMMEDIATE", "EXCLUSIVE", "EXCLUSIVE MODE"] {
            let t = tempfile::tempdir().unwrap();
            store_with_a_session(t.path());
            if pending {
                let quiet = [(memhook_delivery::drain::NO_HOOK_DELIVERY_ENV, "1")];
                let (out, _) = claude_hook(t.path(), "UserPromptSubmit", "other", &quiet);
                assert_envelope(&out, "pending prompt");
            }
            let db = data_dir(t.path()).join("store.sqlite3");
            let (ready_tx, ready) = std::sync::mpsc::channel();
            let (done, done_rx) = std::sync::mpsc::channel::<()>();
            let holder = std::thread::spawn(move || {
                let conn = rusqlite::Connection::open(&db).unwrap();
                // `EXCLUSIVE MODE`: the connection keeps its locks (WAL
                // readers are shut out too), as `PRAGMA locking_mode` does.
                let (mode, begin) = match behaviour.split_once(' ') {
                    Some((b, _)) => ("EXCLUSIVE", b),
                    None => ("NORMAL", behaviour),
                };
                conn.execute_batch(&format!(
                    "PRAGMA locking_mode = {mode}; BEGIN {begin}; DELETE FROM record_rows WHERE 0;"
                ))
                .unwrap();
                ready_tx.send(()).unwrap();
                let _ = done_rx.recv_timeout(Duration::from_secs(10));
                conn.execute_batch("ROLLBACK").unwrap();
            });
            ready.recv().unwrap();
            let (out, took) = claude_hook(
                t.path(),
                "SessionStart-startup",
                "new",
                &[(memhook_hook::budget::BUDGET_ENV, "1500")],
            );
            done.send(()).unwrap();
            holder.join().unwrap();
            let env = assert_envelope(&out, behaviour);
            // A hang guard with slack for a loaded machine, well under the
            // 5 s SQLite busy timeout the budget used to wait for.
            assert!(
                took < Duration::from_secs(3),
                "{behaviour} pending={pending}: took {took:?}, envelope {env}"
            );
        }
    }
}

/// The smallest documented budget (100 ms) still briefs: the work takes a
/// few tens of milliseconds. A loaded machine may miss it once, so a few
/// tries are allowed; before, a fixed 100 ms reserve made it `{}` always.
#[test]
fn the_smallest_start_budget_can_still_brief() {
    let t = tempfile::tempdir().unwrap();
    store_with_a_session(t.path());
    let min = memhook_hook::budget::MIN_BUDGET_MS.to_string();
    let mut envelopes = Vec::new();
    let briefed = (0..8).any(|_| {
        let budget = [(memhook_hook::budget::BUDGET_ENV, min.as_str())];
        let (out, _) = claude_hook(t.path(), "SessionStart-startup", "new", &budget);
        let env = assert_envelope(&out, "100 ms");
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        envelopes.push(env.clone());
        env["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|c| c.contains("Previous session"))
    });
    assert!(
        briefed,
        "no briefing within 100 ms in 8 tries: {envelopes:?}"
    );
}

/// A budget that is not a number, or is out of range, is said on stderr;
/// session start still answers.
#[test]
fn a_bad_start_budget_is_reported() {
    let t = tempfile::tempdir().unwrap();
    store_with_a_session(t.path());
    for (value, says) in [
        ("abc", "not a whole number"),
        ("5", "outside 100..=10000"),
        ("99999", "outside 100..=10000"),
    ] {
        let budget = [(memhook_hook::budget::BUDGET_ENV, value)];
        let (out, _) = claude_hook(t.path(), "SessionStart-startup", "new", &budget);
        assert_envelope(&out, value);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.starts_with("memhook: MEMHOOK_START_BUDGET_MS") && stderr.contains(says),
            "{value}: {stderr}"
        );
    }
}

fn stored(home: &Path) -> u64 {
    memhook_store::sqlite::Store::open(&data_dir(home))
        .and_then(|s| s.count())
        .unwrap_or(0)
}

/// Someone who is not a drainer (`memhook status` looking, a session start
/// delivering, here the test) holds the drain lock while a hook enqueues:
/// the hook still starts a drainer, which delivers once the lock is free.
/// Before, the hook took the held lock for a running drainer and the record
/// waited for the next event.
#[test]
fn a_record_enqueued_while_another_process_holds_the_drain_lock_is_delivered() {
    let t = tempfile::tempdir().unwrap();
    let lock = hold_drain(t.path());
    let (out, _) = claude_hook(t.path(), "PostToolUse-Bash", "s", &[]);
    assert_envelope(&out, "post");
    assert_eq!(spool(t.path()).len(), 1);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(spool(t.path()).len(), 1, "nothing delivers under the lock");
    drop(lock);
    // Within 1 s of the release; 10 s of slack for a loaded machine.
    assert!(
        eventually(Duration::from_secs(10), || spool(t.path()).is_empty()),
        "the record was left in the spool"
    );
    assert_eq!(stored(t.path()), 1);
}

/// A drainer sleeping through a dead server's backoff does not hold back a
/// record for a healthy destination: the hook starts a drainer for it.
#[test]
fn a_drainer_backing_off_from_a_dead_server_does_not_delay_a_healthy_sink() {
    use memhook_delivery::drain;
    use memhook_delivery::spool::SinkTarget;
    let t = tempfile::tempdir().unwrap();
    let dir = data_dir(t.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}");
    let dead = SinkTarget::Http { url: url.clone() };
    // The server failed before: it backs off for 30 s more.
    let counters = drain::SinkCounters {
        sink: Some(dead.clone()),
        failed_passes: 3,
        retry_after_ms: memhook_core::timefmt::now_ms() + 30_000,
        ..Default::default()
    };
    memhook_core::data_dir::ensure_private_dir(&dir.join("counters")).unwrap();
    fs::write(
        drain::counters_path(&dir, &dead.id()),
        serde_json::to_vec(&counters).unwrap(),
    )
    .unwrap();
    // A record for it: the drainer the hook starts finds the server backing
    // off and sleeps until it may retry.
    let (out, _) = claude_hook(
        t.path(),
        "UserPromptSubmit",
        "s",
        &[("AI_MEMORY_HOOK_URL", &url)],
    );
    assert_envelope(&out, "prompt for the dead server");
    std::thread::sleep(Duration::from_millis(1500));
    // A record for the embedded store is delivered meanwhile.
    let (out, _) = claude_hook(t.path(), "PostToolUse-Bash", "s", &[]);
    assert_envelope(&out, "post for the store");
    assert!(
        eventually(Duration::from_secs(10), || stored(t.path()) == 1
            && spool(t.path()).len() == 1),
        "the store's record waited for the dead server's backoff"
    );
    let left = spool(t.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["sink"]["url"], Value::from(url));
    assert_eq!(left[0]["attempts"], 0);
}

/// Qwen Code's real session: every event exits 0 with an envelope and is
/// one record, except the UserPromptSubmit it repeats with `"prompt": ""`
/// after each tool batch, which leaves nothing; the one user prompt is
/// recorded once, with its text.
#[test]
fn qwen_code_real_payloads_record_each_event_once_and_no_blank_prompt() {
    let t = tempfile::tempdir().unwrap();
    let _drain = hold_drain(t.path());
    let fixtures = agent_fixtures("qwen-code/0.24.4");
    assert!(fixtures.len() > 20);
    let mut expected = 0;
    for (file, payload, event) in &fixtures {
        let out = run_with_stdin(
            hook(t.path(), "qwen-code", event.as_deref()),
            &serde_json::to_vec(payload).unwrap(),
        );
        assert_envelope(&out, &format!("qwen-code {file}"));
        if !file.starts_with("UserPromptSubmit-after-tool-batch") {
            expected += 1;
        }
        assert_eq!(spool(t.path()).len(), expected, "qwen-code {file}");
    }
    let recs = spool(t.path());
    let prompts: Vec<&Value> = recs
        .iter()
        .filter(|r| r["record"]["event"] == "user-prompt")
        .collect();
    assert_eq!(prompts.len(), 1, "{prompts:?}");
    assert!(prompts[0].to_string().contains("CAP-PROMPT exercise tools"));
    // The final message is the stop record's body, and only there.
    for r in &recs {
        if r.to_string().contains("All done.") {
            assert_eq!(r["record"]["event"], "stop", "{r}");
            assert_eq!(r["record"]["body"], "All done.", "{r}");
        }
    }
}

/// `memhook` starts from the C `main` (crates/cli/src/bin/memhook.rs) and does itself what
/// std's runtime did before `main`. Standard streams the agent left closed
/// are reopened on /dev/null: otherwise a file memhook opens later (the
/// store, a spool entry) takes fd 1 or 2, and a warning or the envelope
/// written meanwhile lands in it. Seen from outside while the hook waits
/// for stdin to close, then end to end: every command still exits 0 and
/// the data dir still holds only what memhook wrote.
#[test]
fn closed_standard_streams_are_reopened_on_dev_null() {
    use std::os::unix::process::CommandExt;
    let t = tempfile::tempdir().unwrap();
    store_with_a_session(t.path());
    let close_from = |c: &mut Command, first: i32| {
        // SAFETY: close(2) is async-signal-safe.
        unsafe {
            c.pre_exec(move || {
                for fd in first..=2 {
                    libc::close(fd);
                }
                Ok(())
            });
        }
    };
    // stdin stays open (and empty) so the hook waits: look at its fds then.
    let mut c = hook(t.path(), "claude-code", Some("Stop"));
    c.stdin(Stdio::piped());
    close_from(&mut c, 1);
    let mut child = c.spawn().unwrap();
    let fd_dir = PathBuf::from(format!("/proc/{}/fd", child.id()));
    let seen = |fd: &str| fs::read_link(fd_dir.join(fd)).ok();
    assert!(
        eventually(Duration::from_secs(5), || seen("1").is_some()
            && seen("2").is_some()),
        "fds 1 and 2 of the hook were never open"
    );
    for fd in ["1", "2"] {
        assert_eq!(seen(fd), Some(PathBuf::from("/dev/null")), "fd {fd}");
    }
    drop(child.stdin.take());
    assert_eq!(child.wait().unwrap().code(), Some(0));

    for (args, stdin) in [
        (
            &["hook", "--agent", "claude-code"][..],
            Some("SessionStart-startup"),
        ),
        (
            &["hook", "--agent", "claude-code"][..],
            Some("UserPromptSubmit"),
        ),
        (&["recent", "--all"][..], None),
        (&["status"][..], None),
    ] {
        let mut c = memhook(t.path());
        c.args(args)
            .env(memhook_delivery::drain::NO_HOOK_DELIVERY_ENV, "1");
        match stdin {
            Some(name) => {
                let path = fixture(&format!("agents/claude-code/2.1.328/{name}.json"));
                c.stdin(fs::File::open(path).unwrap());
                close_from(&mut c, 1);
            }
            None => close_from(&mut c, 0),
        }
        assert_eq!(c.status().unwrap().code(), Some(0), "{args:?}");
    }
    // `spool` parses every entry: one the envelope was written into fails.
    assert_eq!(spool(t.path()).len(), 2, "both hooks' records are pending");
    let out = memhook(t.path())
        .args(["recent", "--all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let listed = String::from_utf8_lossy(&out.stdout);
    assert!(listed.contains("user-prompt"), "{out:?}");
}

/// An agent that stops reading before the hook answers: the hook's write
/// fails with EPIPE, it is not killed by SIGPIPE, and the event is kept.
#[test]
fn an_agent_that_stopped_reading_does_not_kill_the_hook() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let t = tempfile::tempdir().unwrap();
    let _drain = hold_drain(t.path());
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors pipe(2) returns.
    assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
    // SAFETY: both were just opened and are owned here alone.
    let (read_end, write_end) =
        unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    drop(read_end);
    let mut c = hook(t.path(), "claude-code", None);
    c.stdin(fs::File::open(fixture("agents/claude-code/2.1.328/UserPromptSubmit.json")).unwrap())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::null());
    let status = c.status().unwrap();
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert_eq!(spool(t.path()).len(), 1);
}

/// Cline's captured payloads (cline_end_to_end): every event makes one
/// record, except UserPromptSubmit, which in one-shot mode carries Cline's
/// own "[SYSTEM] This run is not complete" nudge and makes none; the
/// session's first PreToolUse claims the briefing (an empty store has
/// nothing to say: `{}`), and every envelope is valid.
#[test]
fn captured_cline_payloads_make_records_but_its_nudges_none() {
    let t = tempfile::tempdir().unwrap();
    let _drain = hold_drain(t.path());
    let root = fixture("agents/cline/3.0.65");
    let index: Vec<Value> =
        serde_json::from_slice(&fs::read(root.join("index.json")).unwrap()).unwrap();
    let mut want = Vec::new();
    for ent in &index {
        let file = ent["file"].as_str().unwrap();
        let event = ent["event"].as_str().unwrap();
        let out = run_with_stdin(
            hook(t.path(), "cline", Some(event)),
            &fs::read(root.join(file)).unwrap(),
        );
        assert_envelope(&out, &format!("cline {file}"));
        if event != "user-prompt-submit" {
            want.push(memhook_core::event::EventKind::parse(event).as_str());
        }
    }
    let recs = spool(t.path());
    let mut got: Vec<&str> = recs
        .iter()
        .map(|e| e["record"]["event"].as_str().unwrap())
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert!(recs.iter().all(|e| e["record"]["agent"] == "cline"));
    let all = recs.iter().map(Value::to_string).collect::<String>();
    assert!(!all.contains("This run is not complete"), "{all}");
}

/// The payloads the end-to-end tests captured from the Claude Agent SDK,
/// Factory Droid and OpenHands (index `event` = the `--event` their hook
/// was called with): each exits 0 with a valid envelope and one record,
/// of the agent, of the event's kind; nothing is dropped as unreadable.
#[test]
fn captured_payloads_of_the_newer_agents_each_make_one_record() {
    for (agent, dir) in [
        ("claude-code", "claude-agent-sdk/0.2.184"),
        ("droid", "droid/0.225.2"),
        ("openhands", "openhands/1.16.0"),
        ("pi", "pi/0.73.1"),
    ] {
        let t = tempfile::tempdir().unwrap();
        let _drain = hold_drain(t.path());
        let root = fixture(&format!("agents/{dir}"));
        let index: Vec<Value> =
            serde_json::from_slice(&fs::read(root.join("index.json")).unwrap()).unwrap();
        assert!(index.len() >= 12, "{dir}");
        let mut want = Vec::new();
        for (i, ent) in index.iter().enumerate() {
            let file = ent["file"].as_str().unwrap();
            let event = ent["event"].as_str().unwrap();
            let out = run_with_stdin(
                hook(t.path(), agent, Some(event)),
                &fs::read(root.join(file)).unwrap(),
            );
            assert_envelope(&out, &format!("{agent} {file}"));
            assert_eq!(spool(t.path()).len(), i + 1, "{agent} {file}");
            want.push(memhook_core::event::EventKind::parse(event).as_str());
        }
        let recs = spool(t.path());
        let mut got: Vec<&str> = recs
            .iter()
            .map(|e| e["record"]["event"].as_str().unwrap())
            .collect();
        assert!(recs.iter().all(|e| e["record"]["agent"] == agent), "{dir}");
        got.sort();
        want.sort();
        assert_eq!(got, want, "{dir}");
    }
}
