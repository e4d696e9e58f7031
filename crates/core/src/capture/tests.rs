//! Replays `fixtures/capture/cases.json` and checks bounds at their edges.

use super::*;
use crate::event::normalize;
use serde_json::{json, Value};
use std::path::PathBuf;

/// The directory the fixture payloads were recorded in (the marker lives here).
pub const DEMO: &str = "/home/dev/projects/demo";
const HOME: &str = "/home/dev";

fn fixtures() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("fixtures")
}

/// Set `value` at JSON pointer `ptr`, creating the last key.
pub fn set_pointer(v: &mut Value, ptr: &str, value: Value) {
    let (parent, key) = ptr.rsplit_once('/').unwrap();
    let parent = if parent.is_empty() {
        v
    } else {
        v.pointer_mut(parent)
            .unwrap_or_else(|| panic!("no {parent}"))
    };
    parent
        .as_object_mut()
        .unwrap()
        .insert(key.to_string(), value);
}

/// A case's payload with its edits applied.
pub fn case_payload(case: &Value) -> Value {
    let mut payload = match &case["payload"] {
        Value::String(rel) => {
            let p = fixtures().join("agents").join(rel);
            serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()
        }
        v => v.clone(),
    };
    if let Some(rm) = case["remove"].as_array() {
        for ptr in rm {
            let (parent, key) = ptr.as_str().unwrap().rsplit_once('/').unwrap();
            payload
                .pointer_mut(parent)
                .and_then(Value::as_object_mut)
                .unwrap()
                .remove(key);
        }
    }
    if let Some(set) = case["set"].as_object() {
        for (ptr, v) in set {
            set_pointer(&mut payload, ptr, v.clone());
        }
    }
    payload
}

fn config(policy: &Value) -> CaptureConfig {
    let marker = PathBuf::from(DEMO).join(".ai-memory.toml");
    match policy {
        Value::String(s) if s == "absent" => CaptureConfig::Absent,
        Value::String(s) if s == "inactive" => CaptureConfig::Inactive {
            marker,
            assistant_text: true,
        },
        Value::String(s) if s == "invalid" => CaptureConfig::Invalid {
            marker,
            reason: "test".into(),
        },
        Value::Array(items) => CaptureConfig::Active {
            marker,
            patterns: items
                .iter()
                .map(|p| p.as_str().unwrap().to_string())
                .collect(),
            assistant_text: true,
        },
        other => panic!("bad policy {other}"),
    }
}

#[test]
fn replay_capture_cases() {
    let cases: Vec<Value> =
        serde_json::from_slice(&std::fs::read(fixtures().join("capture/cases.json")).unwrap())
            .unwrap();
    assert!(cases.len() >= 40);
    let mut failures = Vec::new();
    for case in &cases {
        let ev = normalize(
            case["agent"].as_str().unwrap(),
            case["event"].as_str(),
            &case_payload(case),
        );
        let d = decide(&config(&case["policy"]), Some(Path::new(HOME)), &ev);
        let got: Value = serde_json::from_str(&d.to_json()).unwrap();
        let mut want = case["expect"].clone();
        want.as_object_mut()
            .unwrap()
            .insert("version".into(), json!(1));
        let want_sorted: std::collections::BTreeMap<_, _> =
            want.as_object().unwrap().iter().collect();
        let got_sorted: std::collections::BTreeMap<_, _> =
            got.as_object().unwrap().iter().collect();
        if want_sorted != got_sorted {
            failures.push(format!("{}: want {want} got {got}", case["name"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

pub fn active(patterns: &[&str]) -> CaptureConfig {
    CaptureConfig::Active {
        marker: PathBuf::from(DEMO).join(".ai-memory.toml"),
        patterns: patterns.iter().map(|s| s.to_string()).collect(),
        assistant_text: true,
    }
}

pub fn bash(cmd: &str) -> Event {
    normalize(
        "claude-code",
        None,
        &json!({"hook_event_name": "PreToolUse", "cwd": DEMO, "tool_name": "Bash",
                "tool_input": {"command": cmd}}),
    )
}

#[test]
fn shell_word_count_bound_at_its_edge() {
    let cfg = active(&["secret/**"]);
    let words: Vec<String> = (0..MAX_CANDIDATES).map(|i| format!("w{i}")).collect();
    let d = decide(&cfg, None, &bash(&words.join(" ")));
    assert_eq!((d.disposition, d.path_count), (Disposition::Keep, 32));
    let words: Vec<String> = (0..=MAX_CANDIDATES).map(|i| format!("w{i}")).collect();
    let d = decide(&cfg, None, &bash(&words.join(" ")));
    assert_eq!(d.disposition, Disposition::MetadataOnly);
}

#[test]
fn candidate_length_bound_at_its_edge() {
    let cfg = active(&["secret/**"]);
    let read = |p: String| {
        normalize(
            "claude-code",
            None,
            &json!({"hook_event_name": "PreToolUse", "cwd": DEMO, "tool_name": "Read",
                    "tool_input": {"file_path": p}}),
        )
    };
    let at = format!("/{}", "a".repeat(MAX_CANDIDATE_CHARS - 1));
    assert_eq!(decide(&cfg, None, &read(at)).disposition, Disposition::Keep);
    let over = format!("/{}", "a".repeat(MAX_CANDIDATE_CHARS));
    assert_eq!(
        decide(&cfg, None, &read(over.clone())).disposition,
        Disposition::MetadataOnly
    );
    // A shell word too long to check is never kept.
    assert_eq!(
        decide(&cfg, None, &bash(&format!("cat {over}"))).disposition,
        Disposition::MetadataOnly
    );
}

#[test]
fn work_budget_degrades_to_metadata_only_never_keep() {
    // 128 patterns of 1024 chars sharing the candidates' prefix: far past
    // the budget after a few pairs.
    let pats: Vec<String> = (0..MAX_PATTERNS)
        .map(|i| format!("src/{}{i}*", "p".repeat(1000)))
        .collect();
    let refs: Vec<&str> = pats.iter().map(String::as_str).collect();
    let cfg = active(&refs);
    let paths: Vec<String> = (0..MAX_CANDIDATES)
        .map(|i| format!("src/{}{i}", "f".repeat(3000)))
        .collect();
    let ev = normalize(
        "gemini-cli",
        None,
        &json!({"hook_event_name": "BeforeTool", "cwd": DEMO, "tool_name": "read_many_files",
                "tool_input": {"paths": paths}}),
    );
    let d = decide(&cfg, None, &ev);
    assert_eq!(
        (d.disposition, d.extraction_state),
        (
            Disposition::MetadataOnly,
            ExtractionState::MissingOrMalformed
        )
    );
    let words = format!("cat {}", paths[..4].join(" "));
    assert_eq!(
        decide(&cfg, None, &bash(&words)).disposition,
        Disposition::MetadataOnly
    );
}

#[test]
fn missing_cwd_makes_relative_candidates_uncheckable() {
    let cfg = active(&["secret/**"]);
    let ev = normalize(
        "claude-code",
        None,
        &json!({"hook_event_name": "PreToolUse", "tool_name": "Bash",
                "tool_input": {"command": "cat secret/a"}}),
    );
    assert_eq!(
        decide(&cfg, None, &ev).disposition,
        Disposition::MetadataOnly
    );
}

#[test]
fn home_patterns_without_home_make_the_policy_invalid() {
    let cfg = active(&["~/x/**"]);
    let d = decide(&cfg, None, &bash("ls"));
    assert_eq!(
        (d.policy_state, d.disposition),
        (PolicyState::Invalid, Disposition::MetadataOnly)
    );
}

#[test]
fn classify_and_kept_paths() {
    assert_eq!(
        classify_tool(&Agent::ClaudeCode, "Read"),
        (ToolFamily::File, true)
    );
    assert_eq!(
        classify_tool(&Agent::ClaudeCode, "read_file"),
        (ToolFamily::File, false)
    );
    assert_eq!(
        classify_tool(&Agent::ClaudeCode, "mcp__x"),
        (ToolFamily::Unknown, false)
    );
    assert_eq!(
        classify_tool(&Agent::GeminiCli, "glob"),
        (ToolFamily::SearchList, true)
    );
    let ev = normalize(
        "codex",
        None,
        &json!({"hook_event_name": "PostToolUse", "cwd": DEMO, "tool_name": "apply_patch",
                "tool_input": {"command": "*** Add File: a.md\n*** Update File: ./src/../b.rs\n*** Update File: a.md\n"}}),
    );
    assert_eq!(
        kept_file_paths(&ev),
        [format!("{DEMO}/a.md"), format!("{DEMO}/b.rs")]
    );
    assert!(kept_file_paths(&bash("cat a")).is_empty());
}

#[test]
fn check_capture_json_has_exactly_six_keys_in_order() {
    let d = decide(&CaptureConfig::Absent, None, &bash("ls"));
    assert_eq!(
        d.to_json(),
        r#"{"version":1,"policy_state":"absent","tool_family":"shell","path_count":0,"disposition":"keep","extraction_state":"not-applicable"}"#
    );
}

#[cfg(unix)]
#[test]
fn a_symlink_to_an_excluded_path_is_resolved() {
    let t = tempfile::tempdir().unwrap();
    let proj = t.path().join("proj");
    std::fs::create_dir_all(proj.join("secret")).unwrap();
    std::fs::write(proj.join("secret/key.txt"), "k\n").unwrap();
    std::os::unix::fs::symlink(proj.join("secret"), proj.join("link")).unwrap();
    let outside = t.path().join("elsewhere.txt");
    std::os::unix::fs::symlink(proj.join("secret/key.txt"), &outside).unwrap();
    let cfg = CaptureConfig::Active {
        marker: proj.join(".ai-memory.toml"),
        patterns: vec!["secret/**".into()],
        assistant_text: true,
    };
    let cwd = proj.to_str().unwrap();
    let read = |p: &str| {
        let v = json!({"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": "Read", "tool_input": {"file_path": p}});
        normalize("claude-code", None, &v)
    };
    let shell = |c: &str| {
        let v = json!({"session_id": "s", "cwd": cwd, "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": c}});
        normalize("claude-code", None, &v)
    };
    for ev in [
        read("link/key.txt"),
        read(outside.to_str().unwrap()),
        shell("cat link/key.txt"),
        shell(&format!("cat {}", outside.display())),
    ] {
        assert_eq!(decide(&cfg, None, &ev).disposition, Disposition::Drop);
    }
    // A symlink to a kept file stays kept.
    std::fs::write(proj.join("notes.md"), "n\n").unwrap();
    std::os::unix::fs::symlink(proj.join("notes.md"), proj.join("n.md")).unwrap();
    assert_eq!(
        decide(&cfg, None, &read("./n.md")).disposition,
        Disposition::Keep
    );
}

#[test]
fn on_a_case_insensitive_posix_file_system_case_does_not_hide_a_path() {
    let cfg = active(&["secret/**"]);
    let read = |p: &str| {
        normalize(
            "claude-code",
            None,
            &json!({"hook_event_name": "PreToolUse", "cwd": DEMO, "tool_name": "Read",
                    "tool_input": {"file_path": p}}),
        )
    };
    for (fold, want) in [(true, Disposition::Drop), (false, Disposition::Keep)] {
        path::FOLD_POSIX.with(|f| f.set(fold));
        assert_eq!(
            decide(&cfg, None, &bash("cat SECRET/key.txt")).disposition,
            want
        );
        assert_eq!(
            decide(&cfg, None, &bash("cat Secret/*.txt")).disposition,
            want
        );
        assert_eq!(
            decide(&cfg, None, &read("/home/dev/projects/demo/SeCrEt/k")).disposition,
            want
        );
    }
    path::FOLD_POSIX.with(|f| f.set(cfg!(target_os = "macos")));
}

/// DESIGN §3: on Windows (and any case-insensitive volume) PowerShell and
/// cmd spellings of a read reach the same exclusion as `cat secret/key.txt`.
#[test]
fn powershell_and_cmd_spellings_of_a_read_are_excluded() {
    let cfg = active(&["secret/**"]);
    path::FOLD_POSIX.with(|f| f.set(true));
    for cmd in [
        r"type secret\key.txt",
        r"Get-Content .\SECRET\key.txt",
        r"gc -Path .\Secret\key.txt",
        r"Get-Content -Path:secret\key.txt -Raw",
        r"cmd /c type secret\key.txt",
        r#"cmd.exe /C "type secret\key.txt""#,
        r#"CMD /S /C "more < SECRET\key.txt""#,
        r#"powershell -NoProfile -Command "Get-Content secret\key.txt""#,
        r#"pwsh.exe -c 'cat .\secret\key.txt | Select-String x'"#,
        r"Select-String -Path secret\*.txt -Pattern token",
        r"sls token secret\key.txt",
    ] {
        assert_eq!(
            decide(&cfg, None, &bash(cmd)).disposition,
            Disposition::Drop,
            "{cmd}"
        );
    }
    path::FOLD_POSIX.with(|f| f.set(cfg!(target_os = "macos")));
}

/// A rooted path without a drive (`\Repo\secret\key.txt`, which cmd and
/// PowerShell open on the drive of their cwd) meets the exclusions of a
/// marker on that drive, in a command and in a pattern (privacy fails
/// closed; docs/install.md, Windows).
#[test]
fn a_rooted_path_without_a_drive_meets_the_exclusions_on_its_drive() {
    let on_c = |patterns: &[&str]| CaptureConfig::Active {
        marker: PathBuf::from("C:/Repo/.ai-memory.toml"),
        patterns: patterns.iter().map(|s| s.to_string()).collect(),
        assistant_text: true,
    };
    let run = |cfg: &CaptureConfig, cwd: &str, cmd: &str| {
        let ev = normalize(
            "claude-code",
            None,
            &json!({"hook_event_name": "PreToolUse", "cwd": cwd, "tool_name": "Bash",
                    "tool_input": {"command": cmd}}),
        );
        decide(cfg, None, &ev).disposition
    };
    for (patterns, cwd, cmd, want) in [
        (
            &["secret/**"][..],
            r"C:\Repo\src",
            r"type \repo\secret\key.txt",
            Disposition::Drop,
        ),
        (
            &["secret/**"],
            r"C:\Repo",
            "Get-Content /Repo/Secret/key.txt",
            Disposition::Drop,
        ),
        (
            &["secret/**"],
            r"C:\Repo",
            r"type \Repo\notes.md",
            Disposition::Keep,
        ),
        (
            &["/Repo/secret/**"],
            r"C:\Repo",
            r"type C:\Repo\secret\key.txt",
            Disposition::Drop,
        ),
        (
            &[r"\Repo\secret\**"],
            r"C:\Repo",
            r"type secret\key.txt",
            Disposition::Drop,
        ),
    ] {
        assert_eq!(run(&on_c(patterns), cwd, cmd), want, "{patterns:?} {cmd}");
    }
}

/// Git Bash's spelling of a drive, `/c/Repo/secret/key.txt` (Claude Code
/// runs its commands in Git Bash on Windows), meets the exclusions on
/// drive C: too, in a command and in its output (docs/install.md,
/// Windows).
#[test]
fn git_bash_drive_spellings_meet_the_exclusions_on_that_drive() {
    let cfg = CaptureConfig::Active {
        marker: PathBuf::from("C:/Repo/.ai-memory.toml"),
        patterns: vec!["secret/**".into()],
        assistant_text: true,
    };
    let ev = |cmd: &str| {
        normalize(
            "claude-code",
            None,
            &json!({"hook_event_name": "PreToolUse", "cwd": r"C:\Repo", "tool_name": "Bash",
                    "tool_input": {"command": cmd}}),
        )
    };
    for (cmd, want) in [
        ("cat /c/Repo/secret/key.txt", Disposition::Drop),
        ("head -n 3 /C/repo/Secret/key.txt", Disposition::Drop),
        ("bash -c 'cat /c/Repo/secret/key.txt'", Disposition::Drop),
        ("cat /c/Repo/notes.md", Disposition::Keep),
    ] {
        assert_eq!(decide(&cfg, None, &ev(cmd)).disposition, want, "{cmd}");
    }
    let out = "ok\n/c/Repo/secret/key.txt:1:hunter2\nfine\n";
    let kept = filter_output(&cfg, &ev("grep -n hunter *"), ToolFamily::Shell, out);
    assert_eq!(kept.as_deref(), Some("ok\nfine\n"));
}

/// `-EncodedCommand` carries the script as base64 of UTF-16LE: decoded and
/// split like `-Command`.
#[test]
fn an_encoded_powershell_command_is_decoded_and_split() {
    let cfg = active(&["secret/**"]);
    let script = r"Get-Content secret\key.txt";
    let utf16: Vec<u8> = script.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let b64 = super::shell::base64_for_tests(&utf16);
    for flag in ["-EncodedCommand", "-enc", "-e", "-ec"] {
        let cmd = format!("powershell.exe -NoProfile {flag} {b64}");
        assert_eq!(
            decide(&cfg, None, &bash(&cmd)).disposition,
            Disposition::Drop,
            "{cmd}"
        );
    }
    let kept = "Get-Content notes.md";
    let utf16: Vec<u8> = kept.encode_utf16().flat_map(u16::to_le_bytes).collect();
    let cmd = format!("pwsh -enc {}", super::shell::base64_for_tests(&utf16));
    assert_eq!(
        decide(&cfg, None, &bash(&cmd)).disposition,
        Disposition::Keep
    );
}

/// Recursive listings and searches in PowerShell and cmd are what
/// `grep -r`/`find`/`ls -R` are: metadata-only under an active policy;
/// the same commands without recursion stay kept.
#[test]
fn powershell_and_cmd_recursive_listings_are_recognised() {
    let cfg = active(&["secret/**"]);
    for cmd in [
        "Get-ChildItem -Recurse",
        "gci -r -Filter *.txt",
        "Get-ChildItem . -Recurse | Select-String token",
        "ls -Recurse",
        "dir /s /b",
        "DIR /S",
        "findstr /s /i token *.txt",
        "tree /f",
        "xcopy /s . ..\\backup",
        r#"powershell -Command "Get-ChildItem -Recurse -File""#,
        "cmd /c dir /s",
    ] {
        assert_eq!(
            decide(&cfg, None, &bash(cmd)).disposition,
            Disposition::MetadataOnly,
            "{cmd}"
        );
    }
    for cmd in [
        "Get-ChildItem",
        "dir /b",
        "findstr token notes.md",
        "gci docs",
    ] {
        assert_eq!(
            decide(&cfg, None, &bash(cmd)).disposition,
            Disposition::Keep,
            "{cmd}"
        );
    }
}
