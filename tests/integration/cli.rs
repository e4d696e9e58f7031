//! The command line as a person meets it: typos get suggestions, read-only
//! commands leave no trace, and the README lists every command.

use crate::support::binaries::{memhook, run_with_stdin, stderr};
use crate::support::fixtures::fixture;

#[test]
fn typos_in_commands_and_flags_get_a_suggestion() {
    let t = tempfile::tempdir().unwrap();
    for (args, want) in [
        (&["recnt"][..], "'recent'"),
        (&["stauts"][..], "'status'"),
        (&["status", "--jsno"][..], "'--json'"),
        (&["install-hooks", "--agnet", "codex"][..], "'--agent'"),
    ] {
        let out = memhook(t.path()).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        assert!(stderr(&out).contains(want), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn read_only_commands_never_create_a_data_dir() {
    let t = tempfile::tempdir().unwrap();
    let typo = t.path().join("typo");
    for args in [
        &["status"][..],
        &["status", "--json"][..],
        &["recent", "--all"][..],
        &["search", "anything", "--all"][..],
    ] {
        let out = memhook(t.path())
            .arg("--data-dir")
            .arg(&typo)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        assert!(!typo.exists(), "{args:?} created {}", typo.display());
    }
    let out = memhook(t.path())
        .arg("--data-dir")
        .arg(&typo)
        .arg("status")
        .output()
        .unwrap();
    assert!(
        stderr(&out).contains("does not exist: nothing was captured there"),
        "{}",
        stderr(&out)
    );
}

/// A misspelt `--event` is still captured (as `other`), and said so with the
/// closest event the agent knows.
#[test]
fn a_misspelt_event_is_reported_with_the_closest_known_one() {
    let t = tempfile::tempdir().unwrap();
    let payload =
        std::fs::read(fixture("agents/claude-code/2.1.328/UserPromptSubmit.json")).unwrap();
    for (agent, typo, closest) in [
        ("claude-code", "UserPromtSubmit", "UserPromptSubmit"),
        ("gemini-cli", "BeforeAgnet", "BeforeAgent"),
        ("codex", "sesion-start", "SessionStart"),
    ] {
        let mut cmd = memhook(t.path());
        cmd.args(["hook", "--agent", agent, "--event", typo])
            .env(memhook_delivery::drain::NO_HOOK_DELIVERY_ENV, "1");
        let out = run_with_stdin(cmd, &payload);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "{}");
        let err = stderr(&out);
        assert!(
            err.starts_with("memhook: ")
                && err.contains(&format!("'{typo}'"))
                && err.contains(&format!("did you mean '{closest}'?")),
            "{agent} {typo}: {err}"
        );
    }
    // A known event in any spelling says nothing.
    let mut cmd = memhook(t.path());
    cmd.args([
        "hook",
        "--agent",
        "claude-code",
        "--event",
        "user_prompt_submit",
    ])
    .env(memhook_delivery::drain::NO_HOOK_DELIVERY_ENV, "1");
    let out = run_with_stdin(cmd, &payload);
    assert!(out.stderr.is_empty(), "{}", stderr(&out));
}
