//! Hostile input and disk faults: payloads shaped to exhaust memory or time,
//! strings Node cut mid-emoji, spool entries that are not what the hook
//! wrote (FIFOs, directories, foreign or forged entries, symlinked
//! counters), a full disk, and server URLs that carry credentials. Every
//! child runs under a kill timeout, so a regression fails instead of
//! hanging the suite.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::memhook;

fn data(home: &Path) -> PathBuf {
    home.join(".memhook-data")
}

/// What a bounded child run gave.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
    /// Peak resident set of the child, in bytes (`wait4`'s rusage).
    max_rss: u64,
}

/// Run `cmd` with `stdin`, killing it after `limit` (the test then fails).
/// The child's own peak RSS comes from `wait4` on its pid (not
/// `RUSAGE_CHILDREN`, which other tests' children share).
fn run_bounded(mut cmd: Command, stdin: &[u8], limit: Duration) -> Ran {
    let out = tempfile::tempdir().unwrap();
    let (o, e) = (out.path().join("o"), out.path().join("e"));
    cmd.stdin(Stdio::piped())
        .stdout(fs::File::create(&o).unwrap())
        .stderr(fs::File::create(&e).unwrap());
    let started = Instant::now();
    let mut child = cmd.spawn().expect("spawn memhook");
    let mut sin = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = sin.write_all(&input);
    });
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: pid is our child; status and usage are valid out-pointers.
        let r = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if r == pid {
            break;
        }
        assert!(r == 0, "wait4: {}", std::io::Error::last_os_error());
        if started.elapsed() > limit {
            let _ = child.kill();
            // SAFETY: as above.
            unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
            panic!(
                "memhook ran past {limit:?} and was killed; stderr: {}",
                fs::read_to_string(&e).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let elapsed = started.elapsed();
    let _ = writer.join();
    Ran {
        code: libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status)),
        stdout: fs::read_to_string(&o).unwrap(),
        stderr: fs::read_to_string(&e).unwrap(),
        elapsed,
        max_rss: usage.ru_maxrss as u64 * 1024,
    }
}

fn hook_cmd(home: &Path) -> Command {
    let mut c = memhook(home);
    c.args(["hook", "--agent", "claude-code"]);
    // Records stay in the spool to be looked at.
    c.env(memhook::drain::NO_HOOK_DELIVERY_ENV, "1");
    c
}

/// Spool entries (parsed), oldest first.
fn spooled(home: &Path) -> Vec<Value> {
    let mut names: Vec<PathBuf> = fs::read_dir(data(home).join("spool"))
        .map(|rd| {
            rd.map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|e| e == "json") && p.is_file())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
        .iter()
        .map(|p| serde_json::from_slice(&fs::read(p).unwrap()).unwrap())
        .collect()
}

/// An 8 MiB stdin (just under the cap) shaped to build the biggest tree:
/// an array of zeros. Peak RSS of the hook stays at most 64 MiB, and the
/// event is still captured.
#[test]
fn a_huge_array_payload_stays_within_64_mib() {
    const LIMIT: u64 = 64 * 1024 * 1024;
    let home = tempfile::tempdir().unwrap();
    let head = br#"{"hook_event_name":"PostToolUse","session_id":"s","tool_name":"Bash","tool_use_id":"t1","tool_response":["#;
    let cap = memhook::hook::MAX_STDIN_BYTES;
    let mut payload = head.to_vec();
    while payload.len() + 4 < cap {
        payload.extend_from_slice(b"0,");
    }
    payload.extend_from_slice(b"0]}");
    assert!(payload.len() <= cap);
    let ran = run_bounded(hook_cmd(home.path()), &payload, Duration::from_secs(60));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    assert!(
        ran.max_rss <= LIMIT,
        "peak RSS {} MiB > 64 MiB",
        ran.max_rss >> 20
    );
    assert_eq!(spooled(home.path()).len(), 1, "{}", ran.stderr);
    // The same bytes without an object around them: not an event, cheaply.
    let bare = [b"[".as_slice(), &payload[head.len()..payload.len() - 1]].concat();
    let ran = run_bounded(hook_cmd(home.path()), &bare, Duration::from_secs(60));
    assert_eq!(ran.code, Some(0));
    assert!(ran.stderr.contains("not a JSON object"), "{}", ran.stderr);
    assert!(ran.max_rss <= LIMIT, "peak RSS {} MiB", ran.max_rss >> 20);
}

/// Node cuts a string mid-emoji and leaves a lone surrogate escape: the
/// event is captured with U+FFFD in its place.
#[test]
fn a_lone_surrogate_is_captured_as_the_replacement_character() {
    let home = tempfile::tempdir().unwrap();
    let payload =
        br#"{"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"fix the \ud83d"}"#;
    let ran = run_bounded(hook_cmd(home.path()), payload, Duration::from_secs(30));
    assert_eq!(ran.code, Some(0));
    assert_eq!(ran.stdout.trim(), "{}");
    let entries = spooled(home.path());
    assert_eq!(entries.len(), 1, "{}", ran.stderr);
    assert_eq!(entries[0]["record"]["body"], "fix the \u{fffd}");
}

/// A payload `cwd` of 460 KB (and 1.8 MB) is no directory: session start
/// stays within its budget and the hook uses its own directory.
#[test]
fn a_huge_cwd_costs_nothing() {
    let home = tempfile::tempdir().unwrap();
    for parts in [230_000, 900_000] {
        let cwd = format!("/{}", "a/".repeat(parts));
        let payload = json!({"hook_event_name": "SessionStart", "session_id": "s", "cwd": cwd});
        let ran = run_bounded(
            hook_cmd(home.path()),
            payload.to_string().as_bytes(),
            Duration::from_secs(30),
        );
        assert_eq!(ran.code, Some(0), "{}", ran.stderr);
        assert!(
            ran.elapsed < Duration::from_millis(1500) + Duration::from_secs(3),
            "a {} KB cwd took {:?}",
            cwd.len() / 1000,
            ran.elapsed
        );
    }
    let entries = spooled(home.path());
    assert_eq!(entries.len(), 2);
    for e in entries {
        let cwd = e["record"]["cwd"].as_str().unwrap_or("");
        assert!(cwd.len() < 4096, "{}", cwd.len());
    }
}

/// Every file under `dir`, concatenated (symlinks not followed).
fn all_bytes(dir: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    let Ok(rd) = fs::read_dir(dir) else {
        return out;
    };
    for e in rd.flatten() {
        let t = e.file_type().unwrap();
        if t.is_dir() {
            out.extend(all_bytes(&e.path()));
        } else if t.is_file() {
            out.extend(fs::read(e.path()).unwrap_or_default());
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// A server URL with credentials, or not http(s), is refused by the hook
/// (a warning that does not repeat it); the record goes to the embedded
/// store and the credentials are written nowhere: not the spool, counters,
/// store, `status` or `drain` output.
#[test]
fn a_server_url_with_credentials_or_another_scheme_is_refused() {
    let home = tempfile::tempdir().unwrap();
    let payload = br#"{"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"hello"}"#;
    for url in [
        "http://user:hunter2pw@127.0.0.1:9",
        "ftp://u:hunter2pw@x.example/x",
    ] {
        let mut c = hook_cmd(home.path());
        c.env("AI_MEMORY_HOOK_URL", url);
        let ran = run_bounded(c, payload, Duration::from_secs(30));
        assert_eq!(ran.code, Some(0));
        assert!(ran.stderr.contains("embedded store"), "{}", ran.stderr);
        assert!(!ran.stderr.contains("hunter2pw"), "{}", ran.stderr);
        let mut c = hook_cmd(home.path());
        c.args(["--server-url", url]);
        let ran = run_bounded(c, payload, Duration::from_secs(30));
        assert!(!ran.stderr.contains("hunter2pw"), "{}", ran.stderr);
    }
    let entries = spooled(home.path());
    assert_eq!(entries.len(), 4);
    assert!(entries.iter().all(|e| e["sink"]["kind"] == "store"));
    let mut outputs = Vec::new();
    for args in [&["drain"][..], &["status"], &["status", "--json"]] {
        let mut c = memhook(home.path());
        c.args(args);
        let ran = run_bounded(c, b"", Duration::from_secs(60));
        outputs.push(ran.stdout + &ran.stderr);
    }
    assert!(outputs[0].contains("delivered 4"), "{}", outputs[0]);
    for o in &outputs {
        assert!(!o.contains("hunter2pw"), "{o}");
    }
    assert!(!contains(&all_bytes(&data(home.path())), "hunter2pw"));
}
