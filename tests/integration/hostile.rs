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

use crate::support::binaries::memhook;
use crate::support::files::contains;
use crate::support::home::data_dir;

/// What a bounded child run gave.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

/// Run `cmd` with `stdin`, killing it after `limit` (the test then fails).
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
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "memhook ran past {limit:?} and was killed; stderr: {}",
                fs::read_to_string(&e).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = started.elapsed();
    let _ = writer.join();
    Ran {
        code: status.code(),
        stdout: fs::read_to_string(&o).unwrap(),
        stderr: fs::read_to_string(&e).unwrap(),
        elapsed,
    }
}

fn hook_cmd(home: &Path) -> Command {
    let mut c = memhook(home);
    c.args(["hook", "--agent", "claude-code"]);
    // Records stay in the spool to be looked at.
    c.env(memhook_delivery::drain::NO_HOOK_DELIVERY_ENV, "1");
    c
}

/// Spool entries (parsed), oldest first.
fn spooled(home: &Path) -> Vec<Value> {
    let mut names: Vec<PathBuf> = fs::read_dir(data_dir(home).join("spool"))
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

/// Set (to a data dir) when the suite runs [`rss_probe`] as a helper.
const PROBE_ENV: &str = "MEMHOOK_TEST_RSS_PROBE";

/// Not a test on its own: when this suite runs itself with [`PROBE_ENV`]
/// set, it runs `memhook hook` on its own stdin and prints the hook's peak
/// RSS. The hook must be a child of a *small* process: a child's
/// `ru_maxrss` starts at the RSS of the process that forked it (the kernel
/// carries the old image's high-water mark across `exec`), and the test
/// process holds hundreds of MiB of other tests' data.
#[test]
// The child is reaped by `wait4` (which also reports its rusage).
#[allow(clippy::zombie_processes)]
fn rss_probe() {
    let Some(dir) = std::env::var_os(PROBE_ENV) else {
        return;
    };
    let home = PathBuf::from(dir);
    let mut c = hook_cmd(&home);
    c.stdin(Stdio::inherit())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let child = c.spawn().unwrap();
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid out-parameter; pid is our child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = child.id() as libc::pid_t;
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    println!("maxrss={}", usage.ru_maxrss as u64 * 1024);
}

/// Peak RSS of `memhook hook` reading `stdin` (see [`rss_probe`]).
fn hook_peak_rss(home: &Path, stdin: &[u8]) -> u64 {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "hostile::rss_probe",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(PROBE_ENV, home);
    let ran = run_bounded(c, stdin, Duration::from_secs(120));
    ran.stdout
        .lines()
        .find_map(|l| l.split_once("maxrss=").map(|(_, n)| n))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or_else(|| panic!("no maxrss from the probe: {}{}", ran.stdout, ran.stderr))
}

/// An 8 MiB stdin (just under the cap) shaped to build the biggest tree:
/// an array of zeros. Peak RSS of the hook stays at most 64 MiB, and the
/// event is still captured.
#[test]
fn a_huge_array_payload_stays_within_64_mib() {
    const LIMIT: u64 = 64 * 1024 * 1024;
    let home = tempfile::tempdir().unwrap();
    let head = br#"{"hook_event_name":"PostToolUse","session_id":"s","tool_name":"Bash","tool_use_id":"t1","tool_response":["#;
    let cap = memhook_hook::MAX_STDIN_BYTES;
    let mut payload = head.to_vec();
    while payload.len() + 4 < cap {
        payload.extend_from_slice(b"0,");
    }
    payload.extend_from_slice(b"0]}");
    assert!(payload.len() <= cap);
    let rss = hook_peak_rss(home.path(), &payload);
    assert!(rss <= LIMIT, "peak RSS {} MiB > 64 MiB", rss >> 20);
    assert_eq!(spooled(home.path()).len(), 1);
    // The same bytes without an object around them: not an event, cheaply.
    let bare = [b"[".as_slice(), &payload[head.len()..payload.len() - 1]].concat();
    let rss = hook_peak_rss(home.path(), &bare);
    assert!(rss <= LIMIT, "peak RSS {} MiB", rss >> 20);
    assert_eq!(spooled(home.path()).len(), 1);
}

/// Node cuts a string mid-emoji and leaves a lone surrogate escape: the
/// event is captured with U+FFFD in its place.
#[test]
fn a_lone_surrogate_is_captured_as_the_replacement_character() {
    let home = tempfile::tempdir().unwrap();
    let payload =
        br#"{"hook_event_name":"UserPromptSubmit","session_id":"s","prompt":"fix the \ud83d"}"#;
    let ran = hook_ok(home.path(), payload);
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
        let ran = hook_ok(home.path(), payload.to_string().as_bytes());
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
    assert!(!contains(&all_bytes(&data_dir(home.path())), "hunter2pw"));
}

fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

fn prompt(text: &str) -> Vec<u8> {
    json!({"hook_event_name": "UserPromptSubmit", "session_id": "s", "prompt": text})
        .to_string()
        .into_bytes()
}

/// Run the hook (no delivery) on `payload`; it must exit 0.
fn hook_ok(home: &Path, payload: &[u8]) -> Ran {
    let ran = run_bounded(hook_cmd(home), payload, Duration::from_secs(30));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    ran
}

fn status_json(home: &Path) -> Value {
    let mut c = memhook(home);
    c.args(["status", "--json"]);
    let ran = run_bounded(c, b"", Duration::from_secs(30));
    serde_json::from_str(&ran.stdout).unwrap_or_else(|e| panic!("{e}: {}", ran.stdout))
}

/// A FIFO named `spool/y.json` blocked the drainer in `open()` forever
/// (holding the lock); a directory named `spool/x.json` made it count the
/// same undeletable entry every pass until its budget ended. Now both are
/// skipped and reported, the drain ends at once, within its budget, and
/// the books balance.
#[test]
fn a_fifo_or_directory_in_the_spool_never_holds_up_the_drain() {
    let home = tempfile::tempdir().unwrap();
    hook_ok(home.path(), &prompt("one"));
    let spool = data_dir(home.path()).join("spool");
    mkfifo(&spool.join("y.json"));
    fs::create_dir(spool.join("x.json")).unwrap();
    let budget = 5;
    let mut c = memhook(home.path());
    c.args(["drain", "--budget-secs", &budget.to_string()]);
    let ran = run_bounded(c, b"", Duration::from_secs(budget + 3));
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.contains("delivered 1, dropped 0"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("2 skipped"), "{}", ran.stdout);
    let st = status_json(home.path());
    assert_eq!(st["not_regular"], 2, "{st}");
    let store = &st["sinks"][0];
    assert_eq!(store["balanced"], true, "{st}");
    assert_eq!(store["dropped_total"], 0, "{st}");
}

/// The background drainer's stderr is the drain log: it is rotated while
/// written once past its cap, not only when a hook opens it.
#[test]
fn the_drain_log_is_capped_while_written() {
    let home = tempfile::tempdir().unwrap();
    hook_ok(home.path(), &prompt("one"));
    let dir = data_dir(home.path());
    // Entries that each cost the drainer one log line.
    for i in 0..50 {
        fs::write(dir.join(format!("spool/0000000000001-{i:04}.json")), b"{").unwrap();
    }
    let log = dir.join(memhook_delivery::drain::LOG_FILE);
    fs::create_dir_all(log.parent().unwrap()).unwrap();
    let cap = memhook_delivery::drain::MAX_LOG_BYTES;
    fs::write(&log, vec![b'x'; cap as usize + 1]).unwrap();
    let mut c = memhook(home.path());
    c.args(["drain", "--background"]);
    let out = fs::OpenOptions::new().append(true).open(&log).unwrap();
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(out);
    let mut child = c.spawn().unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the background drainer did not finish");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let now = fs::metadata(&log).unwrap().len();
    assert!(now < cap, "drain.log is {now} bytes, cap {cap}");
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.contains("dropped as corrupt"), "{text}");
    let old = fs::metadata(log.with_file_name("drain.log.old"))
        .unwrap()
        .len();
    assert!(old > cap && old < cap + 1024, "{old}");
}

/// Entries the hook never wrote are not delivered: another user's file,
/// an unknown version, a key like `../../x`, a workspace `../../etc`. They
/// are dropped as `invalid` and counted.
#[test]
fn forged_spool_entries_are_dropped_as_invalid_and_never_delivered() {
    let home = tempfile::tempdir().unwrap();
    hook_ok(home.path(), &prompt("real"));
    let spool = data_dir(home.path()).join("spool");
    let real = spooled(home.path()).remove(0);
    let forge = |name: &str, change: &dyn Fn(&mut Value)| {
        let mut e = real.clone();
        change(&mut e);
        let p = spool.join(format!("0000000000001-{name}.json"));
        fs::write(&p, serde_json::to_vec(&e).unwrap()).unwrap();
        p
    };
    forge("version", &|e| e["v"] = json!(99));
    forge("key", &|e| e["record"]["key"] = json!("../../x"));
    forge("ws", &|e| {
        e["record"]["key"] = json!("f".repeat(32));
        e["record"]["scope"]["workspace"] = json!("../../etc");
    });
    let mut forged = 3;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        let p = forge("foreign", &|e| e["record"]["key"] = json!("e".repeat(32)));
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        forged += 1;
    } else {
        eprintln!("not root: the foreign-owner case runs as a unit test only");
    }
    let mut c = memhook(home.path());
    c.args(["drain"]);
    let ran = run_bounded(c, b"", Duration::from_secs(60));
    assert!(
        ran.stdout.contains(&format!(
            "delivered 1, dropped {forged} (invalid: {forged})"
        )),
        "{}{}",
        ran.stdout,
        ran.stderr
    );
    // Only the real record reached the store.
    let mut c = memhook(home.path());
    c.args(["recent", "--all", "--json", "--limit", "10"]);
    let out = run_bounded(c, b"", Duration::from_secs(30)).stdout;
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(!out.contains("../"), "{out}");
    let st = status_json(home.path());
    assert_eq!(st["sinks"][0]["balanced"], true, "{st}");
}

/// A symlink planted at a ledger is never written through (the hook keeps
/// no record it cannot count, and says which file is in the way).
#[test]
fn a_symlinked_counter_is_not_written_through() {
    let home = tempfile::tempdir().unwrap();
    let outside = home.path().join("outside");
    fs::write(&outside, b"precious").unwrap();
    let counters = data_dir(home.path()).join("counters");
    fs::create_dir_all(&counters).unwrap();
    std::os::unix::fs::symlink(&outside, counters.join("store.enqueued")).unwrap();
    let ran = hook_ok(home.path(), &prompt("x"));
    assert!(ran.stderr.contains("store.enqueued"), "{}", ran.stderr);
    assert_eq!(fs::read(&outside).unwrap(), b"precious");
}

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    /// `None` (with a message) when this process may not mount (not root).
    fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        fs::create_dir_all(at).unwrap();
        let target = CString::new(at.as_os_str().as_bytes()).unwrap();
        let opts = CString::new(format!("size={size},mode=0700")).unwrap();
        // SAFETY: valid NUL-terminated strings; mounting needs privileges
        // and fails cleanly without them.
        let r = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                target.as_ptr(),
                c"tmpfs".as_ptr(),
                0,
                opts.as_ptr().cast(),
            )
        };
        if r != 0 {
            eprintln!(
                "SKIPPED: cannot mount a tmpfs ({}); the full-disk test needs root (CI runs it)",
                std::io::Error::last_os_error()
            );
            return None;
        }
        Some(Tmpfs(at.to_path_buf()))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        use std::ffi::CString;
        use std::os::unix::ffi::OsStrExt;
        let target = CString::new(self.0.as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path we mounted.
        unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) };
    }
}

/// Fill the file system holding `dir` until a write fails.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler");
    let mut f = fs::File::create(&path).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).and_then(|_| f.sync_data()).is_ok() {}
    // The last partial block too.
    while f.write_all(&[0]).is_ok() {}
    path
}

/// ENOSPC: 127 of 200 hooks on a full disk lost their event with no trace.
/// Now each failed spool write is counted (the ledgers keep room ahead), the
/// hooks exit 0, `status` shows the failed writes, and the books balance
/// before and after the disk is freed and a drain runs.
#[test]
fn a_full_disk_loses_no_event_uncounted() {
    const HOOKS: u64 = 20;
    let home = tempfile::tempdir().unwrap();
    let Some(mnt) = Tmpfs::mount(&home.path().join("disk"), "1m") else {
        return;
    };
    let dir = mnt.0.join("data");
    let hook = || {
        let mut c = hook_cmd(home.path());
        c.env("AI_MEMORY_DATA_DIR", &dir);
        c
    };
    let status = || {
        let mut c = memhook(home.path());
        c.env("AI_MEMORY_DATA_DIR", &dir).args(["status", "--json"]);
        let ran = run_bounded(c, b"", Duration::from_secs(30));
        let v: Value = serde_json::from_str(&ran.stdout).unwrap();
        v["sinks"][0].clone()
    };
    let ran = run_bounded(hook(), &prompt("before"), Duration::from_secs(30));
    assert_eq!(ran.code, Some(0), "{}", ran.stderr);
    let filler = fill(&mnt.0);
    let text = "a prompt that needs a block of its own ".repeat(40);
    for i in 0..HOOKS {
        let ran = run_bounded(hook(), &prompt(&text), Duration::from_secs(30));
        assert_eq!(ran.code, Some(0), "{}", ran.stderr);
        assert!(
            ran.stderr.contains("spool_write_failed"),
            "hook {i}: {}",
            ran.stderr
        );
    }
    let s = status();
    assert_eq!(s["enqueued"], HOOKS + 1, "{s}");
    assert_eq!(s["pending"], 1, "{s}");
    assert_eq!(s["dropped"]["spool_write_failed"], HOOKS, "{s}");
    assert_eq!(s["balanced"], true, "{s}");
    let mut c = memhook(home.path());
    c.env("AI_MEMORY_DATA_DIR", &dir).args(["status"]);
    let text_status = run_bounded(c, b"", Duration::from_secs(30)).stdout;
    assert!(
        text_status.contains(&format!("spool_write_failed {HOOKS}")),
        "{text_status}"
    );
    // Free the disk, drain: still exact.
    fs::remove_file(filler).unwrap();
    let mut c = memhook(home.path());
    c.env("AI_MEMORY_DATA_DIR", &dir).args(["drain"]);
    let ran = run_bounded(c, b"", Duration::from_secs(60));
    assert_eq!(ran.code, Some(0), "{}{}", ran.stdout, ran.stderr);
    let s = status();
    assert_eq!(
        (&s["enqueued"], &s["delivered"], &s["pending"]),
        (&json!(HOOKS + 1), &json!(1), &json!(0)),
        "{s}"
    );
    assert_eq!(s["balanced"], true, "{s}");
    drop(mnt);
}

/// A marker from a cloned repository nested deeper than any stack (30,000
/// levels of arrays or inline tables, under the 64 KiB marker cap): the
/// TOML parser's recursion limit refuses it, so the hook does not need the
/// stack-overflow handler std's runtime would have installed (crates/cli/src/bin/memhook.rs
/// skips it). The hook exits 0, says why, and treats the marker as it
/// treats any unreadable one: its settings are ignored and the policy
/// counts as invalid.
#[test]
fn a_marker_nested_past_any_stack_is_refused_not_a_crash() {
    for (what, value) in [
        (
            "arrays",
            format!("{}{}", "[".repeat(30_000), "]".repeat(30_000)),
        ),
        (
            "inline tables",
            format!("{}1{}", "{a=".repeat(6_000), "}".repeat(6_000)),
        ),
    ] {
        let t = tempfile::tempdir().unwrap();
        let project = t.path().join("cloned");
        fs::create_dir_all(&project).unwrap();
        let marker = format!("project = 'chosen-by-marker'\nx = {value}\n");
        assert!(marker.len() < 64 * 1024, "{what}: under the marker cap");
        fs::write(project.join(".ai-memory.toml"), marker).unwrap();
        let payload = json!({"hook_event_name": "UserPromptSubmit", "session_id": "s",
                             "cwd": project, "prompt": "hello"});
        let ran = hook_ok(t.path(), payload.to_string().as_bytes());
        assert_eq!(ran.stdout.trim(), "{}", "{what}");
        assert!(
            ran.stderr.contains("is not valid TOML") && ran.stderr.contains("counts as invalid"),
            "{what}: {}",
            ran.stderr
        );
        let recs = spooled(t.path());
        assert_eq!(recs.len(), 1, "{what}");
        let scope = &recs[0]["record"]["scope"];
        assert_eq!(scope["project"], "cloned", "{what}: {scope}");
        assert_eq!(scope["project_source"], "fallback", "{what}: {scope}");
    }
}
