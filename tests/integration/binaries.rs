//! The four installed binaries (docs/architecture.md, "Four binaries"):
//! `memhook` runs the per-event path itself, asks `memhook-brief` to
//! compose a briefing none kept ready answers, hands a server's session
//! start to `memhook-session` (which also drains) and every other command
//! line to `memhook-cli` beside it.

use std::fs;
use std::process::Command;

use crate::support::binaries::{
    bin, brief_bin, full_bin, install_copy, installed as cmd, run_with_stdin, session_bin,
};
use crate::support::process::eventually;

#[test]
fn other_commands_run_in_memhook_cli_with_their_output_and_exit_code() {
    let t = tempfile::tempdir().unwrap();
    let exe = install_copy(&t.path().join("bin dir"));
    // Help and version are clap's, from memhook-cli, under the name users type.
    let help = cmd(&exe, t.path()).arg("--help").output().unwrap();
    assert!(help.status.success());
    let help = String::from_utf8_lossy(&help.stdout);
    assert!(help.contains("Usage: memhook "), "{help}");
    assert!(help.contains("install-hooks"), "{help}");
    // A usage error keeps clap's exit code 2.
    let bad = cmd(&exe, t.path()).arg("no-such-command").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    // A command that works: exit 0 and its own output.
    let status = cmd(&exe, t.path())
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert!(status.status.success(), "{status:?}");
    let v: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(v.is_object(), "{v}");
}

#[test]
fn without_memhook_cli_commands_say_how_to_fix_it_and_hooks_still_answer() {
    let t = tempfile::tempdir().unwrap();
    let exe = install_copy(&t.path().join("bin"));
    fs::remove_file(t.path().join("bin/memhook-cli")).unwrap();
    let out = cmd(&exe, t.path()).arg("status").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bin/memhook-cli") && err.contains("cargo install --locked --path crates/cli"),
        "{err}"
    );
    // The hook itself needs only `memhook`.
    let payload = br#"{"session_id":"s","cwd":"/tmp","hook_event_name":"Stop"}"#;
    let mut hook = cmd(&exe, t.path());
    hook.args(["hook", "--agent", "claude-code", "--event", "Stop"]);
    let out = run_with_stdin(hook, payload);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");
    // Arguments only memhook-cli reads: still exit 0 and an envelope, and
    // stderr says what is missing.
    let mut bad = cmd(&exe, t.path());
    bad.args(["hook", "--agent", "claude-code", "--bogus"]);
    let out = run_with_stdin(bad, payload);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("memhook-cli"),
        "{out:?}"
    );
}

/// The per-event binary is built from the per-event crates only: none of
/// the store (SQLite), TLS, server, PostgreSQL, async runtime, argument
/// parser, installer or MCP code is in it (the debug build keeps every
/// function's name), while `memhook-cli` holds all of them.
#[test]
fn the_per_event_binary_carries_no_sqlite_tls_server_postgres_clap_or_installer_code() {
    let lean = fs::read(bin()).unwrap();
    let full = fs::read(full_bin()).unwrap();
    let has = |hay: &[u8], needle: &str| hay.windows(needle.len()).any(|w| w == needle.as_bytes());
    for marker in [
        "tokio_postgres",
        "clap_builder",
        "memhook_server",
        "jsonc_parser",
        "toml_edit",
        "memhook_store_pg",
        "rusqlite",
        "sqlite3_prepare_v2",
        "rustls",
        "memhook_sinks",
    ] {
        assert!(has(&full, marker), "memhook-cli should hold {marker}");
        assert!(!has(&lean, marker), "memhook holds {marker}");
    }
    assert!(has(&lean, "memhook_hook"), "the hook is in memhook");
}

/// `memhook-session` holds the store and the sinks that session start and
/// the drainer need, and none of the server, PostgreSQL, async runtime,
/// argument parser, installer or MCP code that `memhook-cli` carries.
#[test]
fn the_session_binary_carries_the_store_and_sinks_but_no_server_postgres_clap_or_installer_code() {
    let session = fs::read(session_bin()).unwrap();
    let has = |needle: &str| {
        session
            .windows(needle.len())
            .any(|w| w == needle.as_bytes())
    };
    for marker in [
        "rusqlite",
        "sqlite3_prepare_v2",
        "memhook_sinks",
        "memhook_hook",
    ] {
        assert!(has(marker), "memhook-session should hold {marker}");
    }
    for marker in [
        "tokio_postgres",
        "clap_builder",
        "memhook_server",
        "jsonc_parser",
        "toml_edit",
        "memhook_store_pg",
    ] {
        assert!(!has(marker), "memhook-session holds {marker}");
    }
}

/// `memhook-brief` holds the store and the briefing, and none of the HTTP
/// sink or TLS that `memhook-session` carries for the drainer and a
/// server's session start: it never talks to a server, and what it leaves
/// out is what a session start that composes does not have to map. (The
/// functions the linker kept: a debug build's debug info names every type
/// of every crate a binary depends on.)
#[cfg(target_os = "linux")]
#[test]
fn the_brief_binary_carries_the_store_but_no_http_or_tls() {
    let brief = functions(&brief_bin());
    let session = functions(&session_bin());
    let has = |fns: &[String], needle: &str| fns.iter().any(|f| f.contains(needle));
    for marker in ["rusqlite", "sqlite3_prepare_v2", "compose_kept"] {
        assert!(has(&brief, marker), "memhook-brief should hold {marker}");
    }
    for marker in [
        "rustls",
        "4ureq",
        "8HttpSink",
        "tokio",
        "clap_builder",
        "memhook_server",
    ] {
        assert!(!has(&brief, marker), "memhook-brief holds {marker}");
    }
    for marker in ["rustls", "4ureq", "8HttpSink"] {
        assert!(
            has(&session, marker),
            "memhook-session should hold {marker}"
        );
    }
}

/// The (mangled) names of the functions with code in `binary`'s symbol
/// table, as readelf (binutils) lists them.
#[cfg(target_os = "linux")]
fn functions(binary: &std::path::Path) -> Vec<String> {
    let out = Command::new("readelf")
        .args(["-W", "--syms", "--demangle=none"])
        .arg(binary)
        .output()
        .expect("readelf (binutils) lists the binary's symbols");
    assert!(out.status.success(), "{out:?}");
    // `Num: Value Size Type Bind Vis Ndx Name`
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 8 && f[3] == "FUNC" && f[2] != "0").then(|| f[7].to_string())
        })
        .collect()
}

/// No binary loads `libm.so.6` (Linux, glibc): its only callers were
/// logarithms, now computed without it (`memhook_core::mathlog`, and C's
/// `log` for SQLite's `bm25` in the store), and a second library costs
/// every start its loading and its pages.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn no_binary_loads_libm() {
    for b in [bin(), session_bin(), full_bin()] {
        let bytes = fs::read(&b).unwrap();
        assert!(
            !bytes.windows(9).any(|w| w == b"libm.so.6"),
            "{} needs libm.so.6",
            b.display()
        );
    }
}

/// A user's session in `home/proj`: one prompt recorded by the hook.
fn record_prompt(exe: &std::path::Path, home: &std::path::Path) {
    let project = home.join("proj");
    fs::create_dir_all(&project).unwrap();
    let cwd = serde_json::to_string(&project).unwrap();
    let prompt = format!(
        r#"{{"session_id":"s-one","cwd":{cwd},"hook_event_name":"UserPromptSubmit","prompt":"rename the flux capacitor module"}}"#
    );
    let mut hook = cmd(exe, home);
    hook.args([
        "hook",
        "--agent",
        "claude-code",
        "--event",
        "UserPromptSubmit",
    ])
    .current_dir(&project);
    let out = run_with_stdin(hook, prompt.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// The next session in `home/proj` starts: its envelope.
fn next_session_start(exe: &std::path::Path, home: &std::path::Path) -> String {
    let project = home.join("proj");
    let cwd = serde_json::to_string(&project).unwrap();
    let start = format!(
        r#"{{"session_id":"s-two","cwd":{cwd},"hook_event_name":"SessionStart","source":"startup"}}"#
    );
    let mut hook = cmd(exe, home);
    hook.args(["hook", "--agent", "claude-code", "--event", "SessionStart"])
        .current_dir(&project);
    let out = run_with_stdin(hook, start.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// [`record_prompt`], then wait until the drainer the hook started has
/// delivered it (at most 20 s).
fn record_delivered_prompt(exe: &std::path::Path, home: &std::path::Path) {
    record_prompt(exe, home);
    assert!(
        eventually(std::time::Duration::from_secs(20), || stored_prompts(home)
            > 0),
        "the drainer delivered nothing in 20 s"
    );
}

/// How many stored records of `home`'s data dir mention the prompt.
fn stored_prompts(home: &std::path::Path) -> i64 {
    let Ok(db) = rusqlite::Connection::open(home.join("data/store.sqlite3")) else {
        return 0;
    };
    // The view `records` calls memhook's functions.
    memhook_store::sqlite::register_functions(&db).unwrap();
    db.query_row(
        "SELECT count(*) FROM records WHERE body LIKE '%flux capacitor%'",
        [],
        |r| r.get(0),
    )
    .unwrap_or(0)
}

/// Session start and the drainer run in `memhook-session`: with
/// `memhook-cli` gone, the drainer the hook starts delivers the prompt, and
/// the next session starts with a briefing of it.
#[test]
fn session_start_and_the_drainer_run_in_memhook_session() {
    let t = tempfile::tempdir().unwrap();
    let exe = install_copy(&t.path().join("bin"));
    fs::remove_file(t.path().join("bin/memhook-cli")).unwrap();
    record_delivered_prompt(&exe, t.path());
    assert_eq!(stored_prompts(t.path()), 1);
    let envelope = next_session_start(&exe, t.path());
    assert!(
        envelope.contains("flux capacitor"),
        "no briefing from memhook-session: {envelope}"
    );
}

/// An install made before `memhook-brief` existed (`memhook`,
/// `memhook-session`, `memhook-cli`) keeps working: `memhook-session`
/// composes the briefing, and with `memhook-cli` gone as well nothing else
/// could have.
#[test]
fn without_memhook_brief_memhook_session_composes_the_briefing() {
    let envelope = next_session_start_without(&["memhook-brief", "memhook-cli"]);
    assert!(
        envelope.contains("flux capacitor"),
        "no briefing from memhook-session: {envelope}"
    );
}

/// The envelope of a session start after a recorded prompt, in an install
/// without the binaries `removed`.
fn next_session_start_without(removed: &[&str]) -> String {
    let t = tempfile::tempdir().unwrap();
    let exe = install_copy(&t.path().join("bin"));
    for name in removed {
        fs::remove_file(t.path().join("bin").join(name)).unwrap();
    }
    record_prompt(&exe, t.path());
    next_session_start(&exe, t.path())
}

/// `memhook status` names a binary missing from the install and says how to
/// install again; a whole install has no such line.
#[test]
fn status_names_a_missing_binary_of_the_install() {
    let t = tempfile::tempdir().unwrap();
    let exe = install_copy(&t.path().join("bin"));
    let status = |json: bool| {
        let mut c = cmd(&exe, t.path());
        c.arg("status");
        if json {
            c.arg("--json");
        }
        let out = c.output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let whole = status(false);
    assert!(!whole.contains("incomplete install"), "{whole}");
    fs::remove_file(t.path().join("bin/memhook-brief")).unwrap();
    let text = status(false);
    assert!(
        text.contains("incomplete install")
            && text.contains("bin/memhook-brief missing")
            && text.contains("cargo install --locked --path crates/cli"),
        "{text}"
    );
    let v: serde_json::Value = serde_json::from_str(&status(true)).unwrap();
    let missing = v["missing_binaries"].as_array().unwrap();
    assert_eq!(missing.len(), 1, "{v}");
    assert!(
        missing[0].as_str().unwrap().ends_with("memhook-brief"),
        "{v}"
    );
}

/// An install made before `memhook-session` and `memhook-brief` existed
/// (only `memhook` and `memhook-cli`) keeps working: session start and the
/// drainer fall back to `memhook-cli`.
#[test]
fn without_memhook_session_session_start_falls_back_to_memhook_cli() {
    let envelope = next_session_start_without(&["memhook-session", "memhook-brief"]);
    assert!(
        envelope.contains("flux capacitor"),
        "no briefing from memhook-cli: {envelope}"
    );
}

/// `memhook-session` run by hand with a command it does not run hands it to
/// `memhook-cli`, output and exit code unchanged.
#[test]
fn memhook_session_hands_other_commands_to_memhook_cli() {
    let t = tempfile::tempdir().unwrap();
    install_copy(&t.path().join("bin"));
    let session = t.path().join("bin/memhook-session");
    let out = cmd(&session, t.path())
        .args(["status", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.is_object(), "{v}");
    let bad = cmd(&session, t.path())
        .arg("no-such-command")
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

/// `memhook-cli` (and so `memhook serve`) has Rust's own `main` again: a
/// stack overflow ends with std's message naming it, not a bare SIGSEGV as
/// under the C `main` every command used to share (issue 25).
#[test]
fn memhook_cli_reports_a_stack_overflow() {
    let out = Command::new(full_bin())
        .env("MEMHOOK_TEST_STACK_OVERFLOW", "1")
        .arg("--version")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("has overflowed its stack"), "{out:?}");
}

/// `memhook status --json`'s `enqueued` count of the embedded store.
fn enqueued(exe: &std::path::Path, home: &std::path::Path) -> u64 {
    let out = cmd(exe, home).args(["status", "--json"]).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["sinks"][0]["enqueued"].as_u64().unwrap()
}

/// An agent briefed at its tool calls (Cline: envelope::briefing_event) is
/// briefed by the first one only, so only the first needs the store: the
/// per-event binary runs every one of them itself, and asks
/// `memhook-brief` to compose the first one's briefing (no briefing is
/// kept ready here); it hands none of them over whole to `memhook-session`
/// (before, each of a Cline session's tool calls ran there, then only the
/// first). Every event is captured.
#[test]
fn only_the_first_late_briefing_event_of_a_session_asks_for_a_briefing() {
    let t = tempfile::tempdir().unwrap();
    let bin_dir = t.path().join("bin");
    let exe = install_copy(&bin_dir);
    // memhook-session and memhook-brief behind wrappers that note each
    // hook call they run and each briefing they compose (the drainer's own
    // spawn line is neither).
    let log = t.path().join("session-calls.log");
    for name in ["memhook-session", "memhook-brief"] {
        let real = bin_dir.join(format!("{name}.real"));
        fs::rename(bin_dir.join(name), &real).unwrap();
        let wrapper = bin_dir.join(name);
        fs::write(
            &wrapper,
            format!(
                "#!/bin/sh\nif [ \"$1\" = hook ] || [ \"$3\" = brief ]; then echo \"{name} $*\" >> '{}'; fi\n\
                 exec '{}' \"$@\"\n",
                log.display(),
                real.display()
            ),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    }
    record_delivered_prompt(&exe, t.path());
    // Hook calls memhook-session ran, briefings memhook-brief composed.
    let session_calls = || {
        let log = fs::read_to_string(&log).unwrap_or_default();
        let briefs = log
            .lines()
            .filter(|l| l.starts_with("memhook-brief ") && l.ends_with(" brief"))
            .count();
        (log.lines().count() - briefs, briefs)
    };
    let before_calls = session_calls();
    let before = enqueued(&exe, t.path());
    let project = t.path().join("proj");
    let fixture = fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/agents/cline/3.0.65/pre-tool-use-read_files.json"),
    )
    .unwrap();
    let payload = fixture.replace("/home/dev/proj", project.to_str().unwrap());
    let mut envelopes = Vec::new();
    for _ in 0..3 {
        let mut hook = cmd(&exe, t.path());
        hook.args(["hook", "--agent", "cline", "--event", "PreToolUse"])
            .current_dir(&project);
        let out = run_with_stdin(hook, payload.as_bytes());
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        envelopes.push(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    assert!(
        envelopes[0].contains("contextModification") && envelopes[0].contains("flux capacitor"),
        "the first tool call is briefed: {}",
        envelopes[0]
    );
    for later in &envelopes[1..] {
        assert!(!later.contains("flux capacitor"), "briefed again: {later}");
        let v: serde_json::Value = serde_json::from_str(later.trim()).unwrap();
        assert!(v.is_object(), "{later}");
    }
    let (hooks, briefs) = session_calls();
    assert_eq!(
        (hooks - before_calls.0, briefs - before_calls.1),
        (0, 1),
        "hook calls memhook-session ran, briefings memhook-brief composed: {}",
        fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(
        enqueued(&exe, t.path()) - before,
        3,
        "every tool call is captured"
    );
}
