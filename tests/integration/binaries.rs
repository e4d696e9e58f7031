//! The two installed binaries (docs/architecture.md, "Two binaries"):
//! `memhook` runs the per-event path itself and hands every other command
//! line to `memhook-cli` beside it.

use std::fs;
use std::process::Command;

use crate::support::binaries::{bin, full_bin, install_copy, installed as cmd, run_with_stdin};

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
