//! Integration tests for `memhook serve` and the HTTP sink: a real server on
//! 127.0.0.1 (port 0), real SQLite, and small scripted loopback servers for
//! the status codes a real server rarely gives.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memhook_core::record::Record;
use memhook_delivery::sink::{ItemOutcome, Sink};
use memhook_delivery::spool::{SinkTarget, Spool, SpoolEntry, ENTRY_VERSION};
use memhook_delivery::wire;
use memhook_sinks::http::HttpSink;
use memhook_store::sqlite::Store;

use crate::support::binaries::memhook;
use crate::support::fixtures::{claude_payload, key, record};
use crate::support::http::{client, json, request};
use crate::support::process::{die_with_parent, drainer_pids, kill, kill_drainers};
use crate::support::serve::{post_batch, post_record, Serve};

/// Held by the tests that load the machine (hundreds of processes or
/// connections) and by the ones that check the session-start budget, so
/// that a budget is never measured while another test saturates the CPU.
static HEAVY: Mutex<()> = Mutex::new(());

fn heavy() -> std::sync::MutexGuard<'static, ()> {
    HEAVY.lock().unwrap_or_else(|e| e.into_inner())
}

fn entry(r: Record, url: &str) -> SpoolEntry {
    SpoolEntry {
        v: ENTRY_VERSION,
        sink: SinkTarget::Http { url: url.into() },
        attempts: 0,
        // Fresh: the drainer drops entries past its age cap.
        enqueued_ms: memhook_core::timefmt::now_ms(),
        record: r,
        exclusions: None,
    }
}

fn stored_keys(data: &Path) -> Vec<String> {
    let store = Store::open(data).unwrap();
    let mut keys: Vec<String> = store
        .recent(None, 1000)
        .unwrap()
        .into_iter()
        .map(|r| r.key)
        .collect();
    keys.sort();
    keys
}

#[test]
fn hook_and_batch_store_each_key_exactly_once() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::no_auth(home.path());
    let a = record(&key(1), "s1", "user-prompt", None);
    for _ in 0..2 {
        let (code, text) = post_record(&s, &a, None);
        assert_eq!(code, 200, "{text}");
        assert_eq!(json(&text)["accepted"], 1);
    }
    let batch: Vec<Record> = (2..5)
        .map(|i| record(&key(i), "s1", "post-tool-use", Some(&format!("call-{i}"))))
        .collect();
    for _ in 0..2 {
        let (code, text) = post_batch(&s, &batch);
        assert_eq!(code, 200, "{text}");
        assert_eq!(json(&text), serde_json::json!({"accepted": 3}));
    }
    assert_eq!(stored_keys(&s.data), (1..5).map(key).collect::<Vec<_>>());
    // The exact record arrived: title and excerpt as the client spooled them.
    let store = Store::open(&s.data).unwrap();
    let got = store.recent(Some(("acme", "api")), 10).unwrap();
    let prompt = got.iter().find(|r| r.key == key(1)).unwrap();
    assert_eq!(
        prompt.body.as_deref(),
        Some("fix the login bug\nin auth.rs")
    );
    assert_eq!(prompt.cwd.as_deref(), Some("/work/my repo"));
}

#[test]
fn bad_names_get_a_400_naming_the_parameter() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::no_auth(home.path());
    let url = format!("{}/hook?event=stop&agent=codex&project=My%20App", s.url());
    let (code, text) = request("POST", &url, Some(b"{}"), None);
    assert_eq!(code, 400, "{text}");
    assert!(
        json(&text)["error"].as_str().unwrap().contains("`project`"),
        "{text}"
    );
    let url = format!("{}/hook?event=stop&workspace=-x&project=ok", s.url());
    let (code, text) = request("POST", &url, Some(b"{}"), None);
    assert_eq!(code, 400);
    assert!(text.contains("`workspace`"), "{text}");
    let (code, text) = request(
        "GET",
        &format!("{}/handoff?project=UPPER", s.url()),
        None,
        None,
    );
    assert_eq!(code, 400);
    assert!(text.contains("`project`"), "{text}");
    // In a batch, the bad item fails alone; the good ones are stored.
    let mut bad = record(&key(8), "s1", "stop", None);
    bad.scope.project = "Bad Name".into();
    let good = record(&key(9), "s1", "stop", None);
    let (code, text) = post_batch(&s, &[bad, good]);
    assert_eq!(code, 200, "{text}");
    let v = json(&text);
    assert_eq!(v["failed_index"], 0);
    assert_eq!(v["accepted_indices"], serde_json::json!([1]));
    assert!(v["errors"][0]["error"]
        .as_str()
        .unwrap()
        .contains("`project`"));
    assert_eq!(stored_keys(&s.data), vec![key(9)]);
}

#[test]
fn bearer_auth_when_a_token_is_configured() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), Some("s3cret-token"));
    let r = record(&key(1), "s1", "stop", None);
    assert_eq!(post_record(&s, &r, None).0, 401);
    assert_eq!(post_record(&s, &r, Some("wrong")).0, 401);
    let (code, _) = request(
        "GET",
        &format!("{}/handoff?project=api", s.url()),
        None,
        None,
    );
    assert_eq!(code, 401);
    assert!(stored_keys(&s.data).is_empty());
    assert_eq!(post_record(&s, &r, Some("s3cret-token")).0, 200);
    assert_eq!(stored_keys(&s.data), vec![key(1)]);
    // Health needs no token and tells nothing about the store.
    let (code, text) = request("GET", &format!("{}/healthz", s.url()), None, None);
    assert_eq!(code, 200);
    assert_eq!(json(&text)["status"], "ok");
    assert!(!s.stderr().contains("s3cret-token"));
}

#[test]
fn no_auth_serves_without_a_token_and_healthz_answers() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::no_auth(home.path());
    assert!(s.stderr().contains("auth: none"), "{}", s.stderr());
    let (code, text) = request("GET", &format!("{}/healthz", s.url()), None, None);
    assert_eq!((code, json(&text)["status"].as_str()), (200, Some("ok")));
    let (code, _) = request("GET", &format!("{}/nope", s.url()), None, None);
    assert_eq!(code, 404);
    let (code, _) = request("GET", &format!("{}/hook", s.url()), None, None);
    assert_eq!(code, 405);
}

#[test]
fn body_and_batch_limits_answer_413() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::no_auth(home.path());
    // One byte over 10 MiB.
    let big = vec![b' '; 10 * 1024 * 1024 + 1];
    let url = format!("{}/hook?event=stop&project=api", s.url());
    let (code, _) = request("POST", &url, Some(&big), None);
    assert_eq!(code, 413);
    let many: Vec<Record> = (0..257)
        .map(|i| record(&key(i), "s", "stop", None))
        .collect();
    let (code, text) = post_batch(&s, &many);
    assert_eq!(code, 413, "{text}");
    assert_eq!(json(&text)["accepted"], 0);
    // Exactly at the item cap is fine.
    let (code, text) = post_batch(&s, &many[..256]);
    assert_eq!(code, 200, "{text}");
    assert_eq!(stored_keys(&s.data).len(), 256);
}

#[test]
fn handoff_returns_the_previous_session_and_nothing_for_a_new_scope() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::no_auth(home.path());
    let prior = vec![
        record(&key(1), "old-session", "session-start", None),
        record(&key(2), "old-session", "user-prompt", None),
        record(&key(3), "old-session", "post-tool-use", Some("c1")),
    ];
    assert_eq!(post_batch(&s, &prior).0, 200);
    let url = format!(
        "{}/handoff?agent=claude-code&cwd=%2Fwork%2Fmy%20repo&workspace=acme&project=api&briefing_budget=4000&session_id=new-session",
        s.url()
    );
    let (code, text) = request("GET", &url, None, None);
    assert_eq!(code, 200);
    assert!(text.contains("fix the login bug"), "{text}");
    // Not destructive: the same briefing again.
    assert_eq!(request("GET", &url, None, None).1, text);
    let other = format!("{}/handoff?workspace=acme&project=empty", s.url());
    assert_eq!(request("GET", &other, None, None), (200, String::new()));
}

#[test]
fn sigterm_and_sigint_stop_cleanly() {
    for sig in [libc::SIGTERM, libc::SIGINT] {
        let home = tempfile::tempdir().unwrap();
        let mut s = Serve::no_auth(home.path());
        assert_eq!(
            post_record(&s, &record(&key(1), "s", "stop", None), None).0,
            200
        );
        let st = s.stop_with(sig);
        assert!(st.success(), "signal {sig}: {st:?} {}", s.stderr());
        assert!(s.stderr().contains("memhook serve: stopped"));
        // What was acknowledged is committed.
        assert_eq!(stored_keys(&s.data), vec![key(1)]);
    }
}

#[test]
fn refuses_non_loopback_without_allow_remote_and_with_no_auth() {
    let home = tempfile::tempdir().unwrap();
    let out = memhook(home.path())
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--allow-remote"), "{err}");
    let out = memhook(home.path())
        .args([
            "serve",
            "--listen",
            "0.0.0.0:0",
            "--allow-remote",
            "--no-auth",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("loopback"));
}

#[test]
fn plain_ai_memory_payloads_are_stored_and_subagents_dropped_on_request() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::no_auth(home.path());
    let fixture = |name: &str| {
        std::fs::read(crate::support::fixtures::fixture(&format!(
            "agents/claude-code/2.1.328/{name}"
        )))
        .expect("claude-code fixture")
    };
    let payload = fixture("PostToolUse-Bash.json");
    let url = format!(
        "{}/hook?event=PostToolUse&agent=claude-code&workspace=acme&project=api&ingest_key=0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f",
        s.url()
    );
    for _ in 0..2 {
        assert_eq!(request("POST", &url, Some(&payload), None).0, 200);
    }
    assert_eq!(stored_keys(&s.data), vec!["0f".repeat(16)]);
    let url = format!(
        "{}/hook?event=stop&agent=claude-code&project=api&drop_subagent=1&ingest_key=k2",
        s.url()
    );
    let (code, text) = request(
        "POST",
        &url,
        Some(&fixture("PostToolUse-Read-subagent.json")),
        None,
    );
    assert_eq!(code, 200);
    assert_eq!(json(&text)["stored"], false);
    assert_eq!(stored_keys(&s.data).len(), 1);
    // The plain payload went through the hook's record builder: the bounded
    // output excerpt is kept, the command (tool input) never is.
    let store = Store::open(&s.data).unwrap();
    let got = &store.recent(None, 10).unwrap()[0];
    assert_eq!(
        got.session_id.as_deref(),
        Some("4c3ac1bf-95d6-487f-a6bc-140cd0de6f2b")
    );
    assert_eq!(
        (got.event.as_str(), got.project.as_str()),
        ("post-tool-use", "api")
    );
    assert_eq!(got.tool_name.as_deref(), Some("Bash"));
    let body = got.body.as_deref().unwrap_or("");
    assert!(body.contains("total 36"), "{body}");
    assert!(
        !body.contains("ls -la") && !body.contains("list files"),
        "{body}"
    );
}

#[test]
fn http_sink_delivers_to_a_real_serve_and_drain_empties_the_spool() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), Some("tok-1"));
    // Direct: the sink with the right token.
    let entries: Vec<SpoolEntry> = (0..10)
        .map(|i| {
            entry(
                record(&key(i), "s1", "post-tool-use", Some(&format!("c{i}"))),
                &s.url(),
            )
        })
        .collect();
    let mut sink = HttpSink::new(&s.url(), Some("tok-1".into()), Duration::from_secs(5));
    assert!(sink
        .deliver(&entries)
        .iter()
        .all(|o| *o == ItemOutcome::Delivered));
    // Through the real drainer: spool entries, then `memhook drain`.
    let client_home = tempfile::tempdir().unwrap();
    let client_data = client_home.path().join(".memhook-data");
    let spool = Spool::open(&client_data).unwrap();
    for i in 10..50 {
        spool
            .enqueue(&entry(record(&key(i), "s2", "stop", None), &s.url()))
            .unwrap();
    }
    let out = memhook(client_home.path())
        .args(["drain", "--budget-secs", "30"])
        .env("AI_MEMORY_AUTH_TOKEN", "tok-1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(spool.pending().unwrap().is_empty());
    assert_eq!(stored_keys(&s.data), (0..50).map(key).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------
// Scripted servers: each accepted connection gets the next scripted answer.

#[derive(Clone)]
enum Answer {
    Reply(u16, &'static str),
    /// Read the request, never answer (until the test ends).
    Hang,
}

/// What a scripted server saw: request line, Authorization header.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

fn scripted(script: Vec<Answer>) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let seen2 = Arc::clone(&seen);
    std::thread::spawn(move || {
        let mut script = script.into_iter();
        let mut hung = Vec::new();
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let (line, auth) = read_request(&mut conn);
            seen2.lock().unwrap().push((line, auth));
            match script
                .next()
                .unwrap_or(Answer::Reply(500, "script exhausted"))
            {
                Answer::Reply(code, body) => {
                    let _ = write!(
                        conn,
                        "HTTP/1.1 {code} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                        body.len()
                    );
                }
                Answer::Hang => hung.push(conn),
            }
        }
    });
    (url, seen)
}

fn read_request(conn: &mut TcpStream) -> (String, Option<String>) {
    conn.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let mut r = BufReader::new(conn.try_clone().unwrap());
    let mut line = String::new();
    r.read_line(&mut line).ok();
    let (mut len, mut auth) = (0usize, None);
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
        let lower = h.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if lower.starts_with("authorization:") {
            auth = Some(h["authorization:".len()..].trim().to_string());
        }
    }
    let mut body = vec![0; len];
    r.read_exact(&mut body).ok();
    (line.trim().to_string(), auth)
}

fn entries(n: usize, url: &str) -> Vec<SpoolEntry> {
    (0..n)
        .map(|i| entry(record(&key(i), "s", "stop", None), url))
        .collect()
}

fn is_free(o: &ItemOutcome) -> bool {
    matches!(o, ItemOutcome::Retry { charge: false, .. })
}

fn is_charged(o: &ItemOutcome, needle: &str) -> bool {
    matches!(o, ItemOutcome::Retry { charge: true, reason } if reason.contains(needle))
}

#[test]
fn sink_429_is_a_free_retry() {
    let (url, seen) = scripted(vec![Answer::Reply(429, "busy")]);
    let out = HttpSink::new(&url, None, Duration::from_secs(5)).deliver(&entries(3, &url));
    assert!(out.iter().all(is_free), "{out:?}");
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn sink_401_retries_once_with_the_live_token_then_charges() {
    // The token was rotated on disk since the drainer started.
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("auth-token"), "new-token\n").unwrap();
    let (url, seen) = scripted(vec![
        Answer::Reply(401, "no"),
        Answer::Reply(200, r#"{"accepted":2}"#),
    ]);
    let mut sink = HttpSink::new(&url, Some("old-token".into()), Duration::from_secs(5))
        .with_data_dir(data.path());
    let out = sink.deliver(&entries(2, &url));
    assert_eq!(out, vec![ItemOutcome::Delivered, ItemOutcome::Delivered]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[0].1.as_deref(), Some("Bearer old-token"));
    assert_eq!(seen[1].1.as_deref(), Some("Bearer new-token"));

    // Same token everywhere: one request, first item charged, rest free.
    let (url, seen) = scripted(vec![Answer::Reply(401, "no"), Answer::Reply(401, "no")]);
    let out = HttpSink::new(&url, Some("new-token".into()), Duration::from_secs(5))
        .with_data_dir(data.path())
        .deliver(&entries(3, &url));
    assert!(is_charged(&out[0], "401"), "{out:?}");
    assert!(out[1..].iter().all(is_free));
    assert_eq!(seen.lock().unwrap().len(), 1);
}

#[test]
fn sink_403_drops_as_forbidden() {
    let (url, _) = scripted(vec![Answer::Reply(403, "not your project")]);
    let out = HttpSink::new(&url, None, Duration::from_secs(5)).deliver(&entries(2, &url));
    assert!(out.iter().all(|o| *o
        == ItemOutcome::Drop {
            reason: "forbidden".into()
        }));
}

#[test]
fn sink_500_and_malformed_replies_charge_the_first_only() {
    for answer in [
        Answer::Reply(500, "database on fire"),
        Answer::Reply(200, "this is not json"),
        Answer::Reply(200, r#"{"accepted": 99}"#),
    ] {
        let (url, _) = scripted(vec![answer]);
        let out = HttpSink::new(&url, None, Duration::from_secs(5)).deliver(&entries(3, &url));
        assert!(
            matches!(out[0], ItemOutcome::Retry { charge: true, .. }),
            "{out:?}"
        );
        assert!(out[1..].iter().all(is_free), "{out:?}");
    }
    let (url, _) = scripted(vec![Answer::Reply(500, "database on fire")]);
    let out = HttpSink::new(&url, None, Duration::from_secs(5)).deliver(&entries(1, &url));
    assert!(is_charged(&out[0], "database on fire"), "{out:?}");
}

#[test]
fn sink_partial_batch_reply_delivers_the_accepted_and_charges_the_failed() {
    let (url, _) = scripted(vec![Answer::Reply(
        200,
        r#"{"accepted":1,"accepted_indices":[0,2],"failed_index":1}"#,
    )]);
    let out = HttpSink::new(&url, None, Duration::from_secs(5)).deliver(&entries(4, &url));
    assert_eq!(out[0], ItemOutcome::Delivered);
    assert!(matches!(out[1], ItemOutcome::Retry { charge: true, .. }));
    assert_eq!(out[2], ItemOutcome::Delivered);
    assert!(is_free(&out[3]));
}

#[test]
fn sink_falls_back_to_single_requests_on_404() {
    let (url, seen) = scripted(vec![
        Answer::Reply(404, "no batch here"),
        Answer::Reply(202, "queued"),
        Answer::Reply(202, "queued"),
        Answer::Reply(202, "queued"),
    ]);
    let mut sink = HttpSink::new(&url, Some("t".into()), Duration::from_secs(5));
    let out = sink.deliver(&entries(3, &url));
    assert!(out.iter().all(|o| *o == ItemOutcome::Delivered), "{out:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4);
    assert!(seen[0].0.starts_with("POST /hook/batch "), "{:?}", seen[0]);
    for (i, (line, auth)) in seen[1..].iter().enumerate() {
        assert!(
            line.starts_with("POST /hook?event=stop&agent=claude-code&cwd=%2Fwork%2Fmy%20repo&"),
            "{line}"
        );
        assert!(line.contains(&format!("&ingest_key={} ", key(i))), "{line}");
        assert_eq!(auth.as_deref(), Some("Bearer t"));
    }
}

#[test]
fn sink_refused_port_charges_once_and_marks_the_endpoint_unreachable() {
    let url = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let timeout = Duration::from_secs(2);
    let mut sink = HttpSink::new(&url, None, timeout);
    let start = Instant::now();
    let out = sink.deliver(&entries(3, &url));
    assert!(start.elapsed() < timeout + Duration::from_secs(3));
    assert!(is_charged(&out[0], "unreachable"), "{out:?}");
    assert!(out[1..].iter().all(is_free));
    assert!(sink.unreachable());
    // Skipped for the rest of the pass: no charge, no network.
    assert!(sink.deliver(&entries(2, &url)).iter().all(is_free));
}

#[test]
fn sink_and_handoff_against_a_black_hole_stay_within_the_timeout() {
    let (url, _) = scripted(vec![Answer::Hang, Answer::Hang]);
    let timeout = Duration::from_millis(800);
    let mut sink = HttpSink::new(&url, None, timeout);
    let start = Instant::now();
    let out = sink.deliver(&entries(5, &url));
    // A hard budget, not a performance figure: generous slack for a busy VM.
    assert!(
        start.elapsed() < timeout + Duration::from_secs(3),
        "{:?}",
        start.elapsed()
    );
    assert!(is_charged(&out[0], "no answer within"), "{out:?}");
    assert!(out[1..].iter().all(is_free));
    assert!(sink.unreachable());

    let scope = memhook_core::scope::Scope {
        workspace: "acme".into(),
        project: "api".into(),
        workspace_source: memhook_core::scope::Source::Marker,
        project_source: memhook_core::scope::Source::Marker,
        marker: None,
        strategy: memhook_core::scope::Strategy::Basename,
        settings: memhook_core::scope::Settings::default(),
        capture: memhook_core::scope::CaptureConfig::Absent,
        warnings: vec![],
    };
    let event = memhook_core::event::Event {
        agent: memhook_core::event::Agent::ClaudeCode,
        kind: memhook_core::event::EventKind::SessionStart,
        native_name: "SessionStart".into(),
        session_id: Some("s".into()),
        cwd: Some("/w".into()),
        tool_name: None,
        tool_input: None,
        tool_call_id: None,
        tool_response: None,
        tool_error: None,
        exit_status: None,
        prompt: None,
        message: None,
        summary: None,
        final_message: None,
        detail: None,
        subagent: false,
    };
    let start = Instant::now();
    let err = memhook_sinks::http::handoff(&url, None, &scope, &event, timeout).unwrap_err();
    assert!(start.elapsed() < timeout + Duration::from_secs(3));
    assert!(err.to_string().contains("unreachable"), "{err}");
}

#[test]
fn handoff_through_the_sink_api_reads_a_real_serve() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), Some("tk"));
    let prior = [
        record(&key(1), "old", "session-start", None),
        record(&key(2), "old", "user-prompt", None),
    ];
    for r in &prior {
        assert_eq!(post_record(&s, r, Some("tk")).0, 200);
    }
    let scope = memhook_core::scope::Scope {
        workspace: "acme".into(),
        project: "api".into(),
        workspace_source: memhook_core::scope::Source::Marker,
        project_source: memhook_core::scope::Source::Marker,
        marker: None,
        strategy: memhook_core::scope::Strategy::Basename,
        settings: memhook_core::scope::Settings::default(),
        capture: memhook_core::scope::CaptureConfig::Absent,
        warnings: vec![],
    };
    let mut event = memhook_core::event::Event {
        agent: memhook_core::event::Agent::ClaudeCode,
        kind: memhook_core::event::EventKind::SessionStart,
        native_name: "SessionStart".into(),
        session_id: Some("new".into()),
        cwd: Some("/work/my repo".into()),
        tool_name: None,
        tool_input: None,
        tool_call_id: None,
        tool_response: None,
        tool_error: None,
        exit_status: None,
        prompt: None,
        message: None,
        summary: None,
        final_message: None,
        detail: None,
        subagent: false,
    };
    let t = Duration::from_secs(5);
    let text = memhook_sinks::http::handoff(&s.url(), Some("tk"), &scope, &event, t)
        .unwrap()
        .expect("a briefing");
    assert!(text.contains("fix the login bug"), "{text}");
    let err = memhook_sinks::http::handoff(&s.url(), Some("bad"), &scope, &event, t).unwrap_err();
    assert!(err.to_string().contains("401"), "{err}");
    // The same session asking: its own work is not a "previous" session.
    event.session_id = Some("old".into());
    assert_eq!(
        memhook_sinks::http::handoff(&s.url(), Some("tk"), &scope, &event, t).unwrap(),
        None
    );
}

/// 64 concurrent `memhook hook` processes × 20 events (real Claude Code
/// payloads), delivering to a real serve that is SIGKILLed and restarted
/// twice, with a drainer SIGKILLed once: after `memhook drain` every event is
/// stored exactly once (by call id).
#[test]
fn crash_restart_under_load_stores_every_event_exactly_once() {
    let _heavy = heavy();
    const WRITERS: usize = 64;
    const EVENTS: usize = 20;
    let server_home = tempfile::tempdir().unwrap();
    let mut server = Serve::no_auth(server_home.path());
    let listen = server.addr.to_string();
    let url = server.url();
    let client_home = tempfile::tempdir().unwrap();
    let client_data = client_home.path().join(".memhook-data");
    Spool::open(&client_data).unwrap();
    let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let template: serde_json::Value = serde_json::from_slice(
        &std::fs::read(crate::support::fixtures::fixture(
            "agents/claude-code/2.1.328/PostToolUse-Bash.json",
        ))
        .unwrap(),
    )
    .unwrap();
    let project_dir = client_home.path().join("projects").join("demo");
    std::fs::create_dir_all(&project_dir).unwrap();
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (url, home, dir) = (
                url.clone(),
                client_home.path().to_path_buf(),
                project_dir.clone(),
            );
            let (written, template) = (Arc::clone(&written), template.clone());
            std::thread::spawn(move || {
                for e in 0..EVENTS {
                    let mut payload = template.clone();
                    payload["session_id"] = format!("session-{w}").into();
                    payload["tool_use_id"] = format!("w{w}-e{e}").into();
                    payload["cwd"] = dir.to_string_lossy().to_string().into();
                    // A real hook process per event: enqueue, kick the drainer.
                    let mut f = tempfile::tempfile().unwrap();
                    f.write_all(payload.to_string().as_bytes()).unwrap();
                    std::io::Seek::rewind(&mut f).unwrap();
                    let out = memhook(&home)
                        .args(["hook", "--agent", "claude-code", "--event", "PostToolUse"])
                        .args(["--server-url", &url])
                        .current_dir(&dir)
                        .stdin(f)
                        .output()
                        .unwrap();
                    assert!(out.status.success());
                    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");
                    written.fetch_add(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let total = WRITERS * EVENTS;
    let wait_for = |n: usize| {
        let start = Instant::now();
        while written.load(Ordering::SeqCst) < n && start.elapsed() < Duration::from_secs(120) {
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    let mut drainer_killed = false;
    for round in 1..=2 {
        wait_for(total * round / 3);
        let look = Instant::now();
        while !drainer_killed && look.elapsed() < Duration::from_secs(3) {
            if let Some(&pid) = drainer_pids(&client_data).first() {
                kill(pid, libc::SIGKILL);
                drainer_killed = true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        server.stop_with(libc::SIGKILL);
        std::thread::sleep(Duration::from_millis(300));
        server = Serve::start_on(server_home.path(), None, &listen, &["--no-auth"]);
    }
    for w in writers {
        w.join().unwrap();
    }
    let out = memhook(client_home.path())
        .args(["drain", "--budget-secs", "120"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(Spool::open(&client_data)
        .unwrap()
        .pending()
        .unwrap()
        .is_empty());
    // Every stored row, read straight from the server's SQLite file.
    let db = rusqlite::Connection::open(server.data.join("store.sqlite3")).unwrap();
    memhook_store::sqlite::register_functions(&db).unwrap();
    let mut stmt = db
        .prepare("SELECT tool_call_id FROM records ORDER BY tool_call_id")
        .unwrap();
    let calls: Vec<String> = stmt
        .query_map([], |r| r.get::<_, Option<String>>(0))
        .unwrap()
        .map(|c| c.unwrap().unwrap_or_default())
        .collect();
    let mut want: Vec<String> = (0..WRITERS)
        .flat_map(|w| (0..EVENTS).map(move |e| format!("w{w}-e{e}")))
        .collect();
    want.sort();
    assert_eq!(calls.len(), total, "every event stored, none twice");
    assert_eq!(calls, want);
    assert!(drainer_killed, "no background drainer was seen to kill");
}

/// Run the real hook with `--server-url`; (output, wall time).
fn hook_to(
    home: &Path,
    url: &str,
    event: &str,
    payload: &serde_json::Value,
) -> (std::process::Output, Duration) {
    hook_to_env(home, url, event, payload, false)
}

/// [`hook_to`]; `no_delivery` sets `MEMHOOK_NO_HOOK_DELIVERY` (spool only).
fn hook_to_env(
    home: &Path,
    url: &str,
    event: &str,
    payload: &serde_json::Value,
    no_delivery: bool,
) -> (std::process::Output, Duration) {
    let mut f = tempfile::tempfile().unwrap();
    f.write_all(payload.to_string().as_bytes()).unwrap();
    std::io::Seek::rewind(&mut f).unwrap();
    let mut cmd = memhook(home);
    cmd.args(["hook", "--agent", "claude-code", "--event", event])
        .args(["--server-url", url])
        .current_dir(payload["cwd"].as_str().unwrap())
        .stdin(f);
    if no_delivery {
        cmd.env(memhook_delivery::drain::NO_HOOK_DELIVERY_ENV, "1");
    }
    let start = Instant::now();
    let out = cmd.output().unwrap();
    (out, start.elapsed())
}

#[test]
fn hook_session_start_gets_its_briefing_from_a_real_serve() {
    let _heavy = heavy();
    // Hooks and drainers with the server's data dir use its token file.
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), None);
    assert!(s.data.join("auth-token").exists());
    let prompt = claude_payload("UserPromptSubmit", home.path(), "old-session");
    let (out, _) = hook_to(home.path(), &s.url(), "UserPromptSubmit", &prompt);
    assert!(out.status.success());
    // Deliver it (the hook's detached drainer may be doing the same).
    let drained = memhook(home.path())
        .args(["drain", "--budget-secs", "30"])
        .output()
        .unwrap();
    assert!(
        drained.status.success(),
        "{}",
        String::from_utf8_lossy(&drained.stderr)
    );
    let start = claude_payload("SessionStart-startup", home.path(), "new-session");
    let (out, took) = hook_to(home.path(), &s.url(), "SessionStart", &start);
    assert!(out.status.success());
    let env: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let ctx = env["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap_or_else(|| {
            panic!(
                "no briefing after {took:?}: {env} {} / server: {}",
                String::from_utf8_lossy(&out.stderr),
                s.stderr()
            )
        });
    assert!(ctx.contains("exercise the tools"), "{ctx}");
    assert_eq!(env["hookSpecificOutput"]["hookEventName"], "SessionStart");
}

#[test]
fn hook_session_start_against_a_black_hole_prints_an_empty_envelope_within_budget() {
    let _heavy = heavy();
    let (url, _) = scripted(vec![Answer::Hang; 8]);
    let home = tempfile::tempdir().unwrap();
    // Something pending for that server, as after an earlier prompt (spooled
    // without kicking a drainer, so session start finds it pending).
    let prompt = claude_payload("UserPromptSubmit", home.path(), "old");
    let quiet = hook_to_env(home.path(), &url, "UserPromptSubmit", &prompt, true);
    assert!(quiet.0.status.success());
    let start = claude_payload("SessionStart-startup", home.path(), "new");
    let (out, took) = hook_to(home.path(), &url, "SessionStart", &start);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");
    // The 1.5 s budget, with slack for a loaded machine: a black hole must
    // not hold the agent for the HTTP default timeouts (seconds to minutes).
    assert!(
        took < Duration::from_millis(1500) + Duration::from_secs(3),
        "{took:?}"
    );
    // The hook left a background drainer retrying the black hole: end it.
    kill_drainers(&home.path().join(".memhook-data"));
}

#[test]
fn drain_counts_a_403_as_dropped_forbidden_and_a_429_as_still_pending() {
    let (forbid, _) = scripted(vec![Answer::Reply(403, "not your project")]);
    let (busy, _) = scripted(vec![Answer::Reply(429, "busy"); 4]);
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    let spool = Spool::open(&data).unwrap();
    for i in 0..3 {
        spool
            .enqueue(&entry(record(&key(i), "s", "stop", None), &forbid))
            .unwrap();
    }
    for i in 3..5 {
        spool
            .enqueue(&entry(record(&key(i), "s", "stop", None), &busy))
            .unwrap();
    }
    let out = memhook(home.path())
        .args(["drain", "--budget-secs", "20"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "records remain for the busy server"
    );
    let st = memhook(home.path())
        .args(["status", "--json"])
        .output()
        .unwrap();
    let v = json(&String::from_utf8_lossy(&st.stdout));
    let sinks = v["sinks"].as_array().unwrap();
    let find = |url: &str| {
        sinks
            .iter()
            .find(|s| s.to_string().contains(url))
            .unwrap_or_else(|| panic!("{url} in {v}"))
            .clone()
    };
    let f = find(&forbid);
    assert!(f.to_string().contains("\"forbidden\":3"), "{f}");
    let b = find(&busy);
    assert_eq!(b["pending"], 2, "{b}");
    // A 429 is free: nothing charged, nothing dropped.
    for p in spool.pending().unwrap() {
        assert_eq!(Spool::load(&p).unwrap().attempts, 0);
    }
}

// ---------------------------------------------------------------------------
// Trust: authentication by default, Host/Origin, hostile text, concurrency,
// slow clients.

/// The token `memhook serve` wrote to (or found in) its data dir.
fn token_file(s: &Serve) -> String {
    std::fs::read_to_string(s.data.join("auth-token"))
        .expect("serve wrote <data dir>/auth-token")
        .trim()
        .to_string()
}

/// Write `bytes` on a fresh connection and read the answer until the server
/// closes it or 10 s pass: the status code (0 when there was no answer).
fn raw(addr: SocketAddr, bytes: &[u8]) -> (u16, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    c.write_all(bytes).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    while let Ok(n) = c.read(&mut buf) {
        if n == 0 {
            break;
        }
        out.extend_from_slice(&buf[..n]);
        // One answer is enough (the server may keep the connection open).
        let text = String::from_utf8_lossy(&out);
        if let Some(end) = text.find("\r\n\r\n") {
            let len = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                .unwrap_or(0);
            if out.len() >= end + 4 + len {
                break;
            }
        }
    }
    let text = String::from_utf8_lossy(&out).to_string();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, text)
}

/// A memhook body for `r` as raw request bytes with the given extra headers.
fn raw_post(r: &Record, headers: &str) -> Vec<u8> {
    let body = serde_json::to_vec(&wire::hook_body(r)).unwrap();
    let mut req = format!(
        "POST {} HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{headers}\r\n",
        wire::hook_path(r),
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(&body);
    req
}

/// Run `cmd` (which should exit by itself) and return its output; a
/// command still running after `limit` is killed and the test fails.
fn exits_within(mut cmd: Command, limit: Duration) -> std::process::Output {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    die_with_parent(&mut cmd);
    let mut child = cmd.spawn().unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn first_start_writes_a_private_token_and_requires_it() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), None);
    let path = s.data.join("auth-token");
    let meta = std::fs::symlink_metadata(&path).expect("token file written on first start");
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    let token = token_file(&s);
    assert!(token.len() >= 32, "{token}");
    assert!(!s.stderr().contains(&token), "the token is never logged");
    let r = record(&key(1), "s1", "user-prompt", None);
    // The attack from the tracker: an unauthenticated local POST.
    assert_eq!(post_record(&s, &r, None).0, 401);
    assert!(stored_keys(&s.data).is_empty());
    assert_eq!(post_record(&s, &r, Some(&token)).0, 200);
    // RFC 7235: the scheme is case-insensitive.
    let lower = raw_post(
        &record(&key(2), "s1", "stop", None),
        &format!("Host: {}\r\nAuthorization: bearer {token}\r\n", s.addr),
    );
    assert_eq!(raw(s.addr, &lower).0, 200);
    let upper = raw_post(
        &record(&key(3), "s1", "stop", None),
        &format!("Host: {}\r\nAuthorization: BEARER {token}\r\n", s.addr),
    );
    assert_eq!(raw(s.addr, &upper).0, 200);
    assert_eq!(stored_keys(&s.data), (1..4).map(key).collect::<Vec<_>>());
    drop(s);
    // A restart keeps the same token.
    let s = Serve::start(home.path(), None);
    assert_eq!(token_file(&s), token);
    assert_eq!(
        post_record(&s, &record(&key(4), "s", "stop", None), Some(&token)).0,
        200
    );
}

#[test]
fn a_token_file_others_can_read_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let data = home.path().join(".memhook-data");
    std::fs::create_dir_all(&data).unwrap();
    let path = data.join("auth-token");
    std::fs::write(&path, "a-token-others-can-read\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let mut cmd = memhook(home.path());
    cmd.args(["serve", "--listen", "127.0.0.1:0"]);
    let out = exits_within(cmd, Duration::from_secs(20));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("auth-token") && err.contains("chmod 600"),
        "{err}"
    );
    assert!(!err.contains("a-token-others-can-read"), "{err}");
}

#[test]
fn no_auth_is_an_explicit_loud_loopback_only_opt_out() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::no_auth(home.path());
    assert!(s.stderr().contains("auth: none"), "{}", s.stderr());
    assert!(s.stderr().contains("--no-auth"), "{}", s.stderr());
    assert!(!s.data.join("auth-token").exists());
    let r = record(&key(1), "s1", "stop", None);
    assert_eq!(post_record(&s, &r, None).0, 200);
    // Off loopback it is refused: see
    // refuses_non_loopback_without_allow_remote_and_with_no_auth.
}

#[test]
fn foreign_host_and_origin_are_refused() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start_with(home.path(), None, &["--allow-origin", "http://ok.example"]);
    let token = token_file(&s);
    let auth = format!("Authorization: Bearer {token}\r\n");
    let post = |k: usize, headers: String| {
        raw(
            s.addr,
            &raw_post(&record(&key(k), "s", "stop", None), &headers),
        )
    };
    // DNS rebinding: a page on evil.example resolved to 127.0.0.1.
    let (code, text) = post(1, format!("Host: evil.example:{}\r\n{auth}", s.addr.port()));
    assert_eq!(code, 403, "{text}");
    assert!(text.contains("Host"), "{text}");
    let (code, text) = raw(
        s.addr,
        b"GET /healthz HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    );
    assert_eq!(code, 403, "{text}");
    // A browser's cross-origin request.
    let (code, text) = post(
        2,
        format!("Host: {}\r\nOrigin: http://evil.example\r\n{auth}", s.addr),
    );
    assert_eq!(code, 403, "{text}");
    assert!(text.contains("Origin"), "{text}");
    assert!(stored_keys(&s.data).is_empty());
    // The listen address, localhost and an allowed origin pass.
    assert_eq!(post(3, format!("Host: {}\r\n{auth}", s.addr)).0, 200);
    let localhost = format!("Host: localhost:{}\r\n{auth}", s.addr.port());
    assert_eq!(post(4, localhost).0, 200);
    let allowed = format!("Host: {}\r\nOrigin: http://ok.example\r\n{auth}", s.addr);
    let (code, text) = post(5, allowed);
    assert_eq!(code, 200, "{text}");
    assert!(
        text.contains("Access-Control-Allow-Origin: http://ok.example"),
        "{text}"
    );
    assert_eq!(stored_keys(&s.data), (3..6).map(key).collect::<Vec<_>>());
}

#[test]
fn a_body_that_is_not_a_json_object_is_a_400() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::no_auth(home.path());
    let url = format!("{}/hook?event=stop&agent=codex&project=api", s.url());
    for body in [&b"5"[..], b"[]", b"\"text\"", b"null"] {
        let (code, text) = request("POST", &url, Some(body), None);
        assert_eq!(code, 400, "{} -> {text}", String::from_utf8_lossy(body));
        assert!(text.contains("JSON object"), "{text}");
    }
    let batch = br#"[{"url": "/hook?event=stop&project=api", "body": 5},
                     {"url": "/hook?event=stop&project=api", "body": {}}]"#;
    let (code, text) = request(
        "POST",
        &format!("{}/hook/batch", s.url()),
        Some(batch),
        None,
    );
    assert_eq!(code, 200, "{text}");
    let v = json(&text);
    assert_eq!(v["failed_index"], 0, "{text}");
    assert_eq!(v["accepted_indices"], serde_json::json!([1]));
    assert_eq!(stored_keys(&s.data).len(), 1);
}

#[test]
fn client_text_is_redacted_and_cleaned_and_never_reaches_a_terminal_raw() {
    let home = tempfile::tempdir().unwrap();
    let s = Serve::no_auth(home.path());
    let secret = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    let mut r = record(&key(1), "s1", "user-prompt", None);
    r.title = Some("\x1b]0;pwned\x07 IMPORTANT".into());
    r.body = Some(format!(
        "use {secret} now <private>my diary</private> \x1b[2J\x1b]0;pwned\x07 done"
    ));
    r.cwd = Some("/work/\x1b[31mred".into());
    r.files = vec!["a\x1b]0;x\x07.rs".into()];
    r.session_id = Some("s1\x1b[2J".into());
    let (code, text) = post_record(&s, &r, None);
    assert_eq!(code, 200, "{text}");
    let store = Store::open(&s.data).unwrap();
    let got = &store.recent(None, 10).unwrap()[0];
    let all = format!(
        "{:?} {:?} {:?} {:?} {:?}",
        got.title, got.body, got.cwd, got.files, got.session_id
    );
    assert!(!all.contains('\x1b') && !all.contains('\x07'), "{all}");
    assert!(!all.contains(secret), "{all}");
    assert!(!all.contains("my diary"), "{all}");
    assert!(
        all.contains("REDACTED") && all.contains("IMPORTANT"),
        "{all}"
    );
    // Text stored before this fix (or by anything else) is still hostile:
    // the commands that print it strip control sequences.
    let mut old = record(&key(2), "s2", "user-prompt", None);
    old.title = Some("old \x1b]0;pwned\x07 title\rOVERWRITE".into());
    old.body = Some("old \x1b]0;pwned\x07 body".into());
    Store::open(&s.data).unwrap().insert(&old).unwrap();
    for args in [
        vec!["recent", "--all"],
        vec!["search", "pwned", "--all"],
        vec!["search", "old", "--all"],
    ] {
        let out = memhook(home.path()).args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("old"), "{args:?}: {stdout}");
        assert!(
            !stdout.contains('\x1b') && !stdout.contains('\x07') && !stdout.contains('\r'),
            "{args:?}: {stdout:?}"
        );
    }
}

/// 16 clients × 500 posts at once (half single, half batches of 10): every
/// request answered 200, every record stored once.
#[test]
fn sixteen_concurrent_clients_never_see_a_5xx() {
    let _heavy = heavy();
    const CLIENTS: usize = 16;
    const POSTS: usize = 500;
    let home = tempfile::tempdir().unwrap();
    let s = Arc::new(Serve::no_auth(home.path()));
    let failures = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (s, failures) = (Arc::clone(&s), Arc::clone(&failures));
            std::thread::spawn(move || {
                let agent = client(60);
                let mut i = 0;
                while i < POSTS {
                    let (url, body, n) = if c % 2 == 0 {
                        let r = record(&key(c * POSTS + i), "s", "stop", None);
                        let url = format!("{}{}", s.url(), wire::hook_path(&r));
                        (url, serde_json::to_vec(&wire::hook_body(&r)).unwrap(), 1)
                    } else {
                        let items: Vec<serde_json::Value> = (i..i + 10)
                            .map(|j| record(&key(c * POSTS + j), "s", "stop", None))
                            .map(|r| {
                                serde_json::json!({"url": wire::hook_path(&r),
                                    "body": wire::hook_body(&r)})
                            })
                            .collect();
                        let url = format!("{}/hook/batch", s.url());
                        (url, serde_json::to_vec(&items).unwrap(), 10)
                    };
                    match agent.post(&url).send(&body[..]) {
                        Ok(resp) if resp.status().as_u16() == 200 => {}
                        Ok(mut resp) => failures.lock().unwrap().push(format!(
                            "{} {}",
                            resp.status(),
                            resp.body_mut().read_to_string().unwrap_or_default()
                        )),
                        Err(e) => failures.lock().unwrap().push(e.to_string()),
                    }
                    i += n;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let failures = failures.lock().unwrap();
    assert!(
        failures.is_empty(),
        "{} of the requests failed, e.g. {:?}",
        failures.len(),
        &failures[..failures.len().min(3)]
    );
    let db = rusqlite::Connection::open(s.data.join("store.sqlite3")).unwrap();
    memhook_store::sqlite::register_functions(&db).unwrap();
    let n: i64 = db
        .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n as usize, CLIENTS * POSTS);
}

/// RSS of a process in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// 64 slow clients (half dribbling a header, half announcing a body and
/// dribbling it) do not keep `/healthz` from answering within 1 s, and 50
/// connections sending 8 MB of unterminated header are cut off at the
/// header bound instead of being buffered.
#[test]
fn slow_and_oversized_clients_cannot_starve_the_server() {
    let _heavy = heavy();
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), None);
    let token = token_file(&s);
    let stop = Arc::new(AtomicBool::new(false));
    let mut slow = Vec::new();
    for i in 0..64 {
        let mut c = TcpStream::connect(s.addr).unwrap();
        let head = if i % 2 == 0 {
            format!(
                "POST /hook?event=stop&project=api HTTP/1.1\r\nHost: {}\r\n",
                s.addr
            )
        } else {
            format!(
                "POST /hook?event=stop&project=api HTTP/1.1\r\nHost: {}\r\n\
                 Authorization: Bearer {token}\r\nContent-Length: 100000\r\n\r\n{{",
                s.addr
            )
        };
        c.write_all(head.as_bytes()).unwrap();
        slow.push(c);
    }
    let dribbler = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                for c in &mut slow {
                    let _ = c.write_all(b" ");
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..5 {
        let start = Instant::now();
        let (code, text) = request("GET", &format!("{}/healthz", s.url()), None, None);
        assert_eq!(code, 200, "{text}");
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
    }
    stop.store(true, Ordering::SeqCst);
    dribbler.join().unwrap();

    // 50 connections × 8 MB of header that never ends.
    let pid = s.pid();
    let before = rss_kib(pid);
    let chunk = vec![b'a'; 64 * 1024];
    let senders: Vec<_> = (0..50)
        .map(|_| {
            let (addr, chunk) = (s.addr, chunk.clone());
            std::thread::spawn(move || {
                let mut c = TcpStream::connect(addr).unwrap();
                c.set_write_timeout(Some(Duration::from_secs(20))).unwrap();
                let mut sent = 0usize;
                let _ = c.write_all(b"GET /healthz HTTP/1.1\r\nX-Big: ");
                while sent < 8 * 1024 * 1024 {
                    if c.write_all(&chunk).is_err() {
                        break; // cut off by the server
                    }
                    sent += chunk.len();
                }
                let mut answer = String::new();
                c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let _ = c.read_to_string(&mut answer);
                (sent, answer)
            })
        })
        .collect();
    let mut peak = 0;
    let mut results = Vec::new();
    for t in senders {
        peak = peak.max(rss_kib(pid));
        results.push(t.join().unwrap());
    }
    peak = peak.max(rss_kib(pid));
    eprintln!("serve RSS: {before} KiB before, {peak} KiB peak with 50 oversized headers");
    assert!(
        peak < before + 64 * 1024,
        "RSS grew from {before} KiB to {peak} KiB"
    );
    for (sent, answer) in &results {
        assert!(
            *sent < 8 * 1024 * 1024 || answer.contains(" 431 "),
            "an 8 MB header was read to its end: {answer}"
        );
    }
    // Still healthy.
    let (code, _) = request("GET", &format!("{}/healthz", s.url()), None, None);
    assert_eq!(code, 200);
}

/// At most 256 connections are held: the 257th gets 503 at once, a freed
/// slot is reused, and a client that never finishes its head gets 408 after
/// the 10 s head deadline.
#[test]
fn connections_are_bounded_and_heads_have_a_deadline() {
    let _heavy = heavy();
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), None);
    let mut held: Vec<TcpStream> = (0..memhook_server::MAX_CONNECTIONS)
        .map(|_| TcpStream::connect(s.addr).unwrap())
        .collect();
    let partial = held.last_mut().unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x")
        .unwrap();
    let opened = Instant::now();
    // Every held connection is being served; one more is refused.
    let refused = {
        let start = Instant::now();
        loop {
            let (code, text) = raw(
                s.addr,
                format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr).as_bytes(),
            );
            if code == 503 || start.elapsed() > Duration::from_secs(10) {
                break (code, text);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    assert_eq!(refused.0, 503, "{}", refused.1);
    assert!(refused.1.contains("Retry-After"), "{}", refused.1);
    // The unfinished head is answered 408 after the deadline, not before.
    let partial = held.pop().unwrap();
    partial
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut answer = String::new();
    let _ = (&partial).read_to_string(&mut answer);
    let waited = opened.elapsed();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        waited >= memhook_server::HEADER_DEADLINE - Duration::from_millis(500)
            && waited < memhook_server::HEADER_DEADLINE + Duration::from_secs(10),
        "{waited:?}"
    );
    // Its slot (and the ones closed by the deadline) are free again.
    drop(held);
    let start = Instant::now();
    loop {
        let (code, _) = raw(
            s.addr,
            format!("GET /healthz HTTP/1.1\r\nHost: {}\r\n\r\n", s.addr).as_bytes(),
        );
        if code == 200 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "slots not freed: {code}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Four drainers (four client data dirs, 250 records each) delivering to
/// one serve at once: every record stored, no attempt charged, nothing left.
#[test]
fn concurrent_drainers_are_never_charged_for_the_servers_lock() {
    let _heavy = heavy();
    let home = tempfile::tempdir().unwrap();
    let s = Serve::start(home.path(), None);
    let token = token_file(&s);
    let clients: Vec<tempfile::TempDir> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    for (c, client) in clients.iter().enumerate() {
        let spool = Spool::open(&client.path().join(".memhook-data")).unwrap();
        for i in 0..250 {
            let r = record(&key(c * 1000 + i), &format!("s{c}"), "stop", None);
            spool.enqueue(&entry(r, &s.url())).unwrap();
        }
    }
    let drains: Vec<_> = clients
        .iter()
        .map(|client| {
            memhook(client.path())
                .args(["drain", "--budget-secs", "60"])
                .env("AI_MEMORY_AUTH_TOKEN", &token)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for d in drains {
        let out = d.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for client in &clients {
        let st = memhook(client.path())
            .args(["status", "--json"])
            .output()
            .unwrap();
        let v = json(&String::from_utf8_lossy(&st.stdout));
        let sink = &v["sinks"][0];
        assert_eq!(sink["delivered"], 250, "{v}");
        assert_eq!(sink["pending"], 0, "{v}");
        assert_eq!(sink["dropped_total"], 0, "{v}");
        assert!(sink["last_error"].is_null(), "{v}");
    }
    assert_eq!(stored_keys(&s.data).len(), 1000);
}
