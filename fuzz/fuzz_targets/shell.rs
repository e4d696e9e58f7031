//! The shell splitter and path-token scan, through the capture decision for
//! a shell tool call under an active policy: any command text decides
//! without a panic, and a command that names the excluded file plainly is
//! never kept.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use memhook_core::capture::Disposition;
use memhook_core::scope::CaptureConfig;

fuzz_target!(|data: &[u8]| {
    let Ok(command) = std::str::from_utf8(data) else {
        return;
    };
    let policy = CaptureConfig::Active {
        marker: PathBuf::from("/w/p/.ai-memory.toml"),
        patterns: vec!["secret/**".into()],
        assistant_text: true,
    };
    let payload = serde_json::json!({
        "session_id": "s",
        "cwd": "/w/p",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_response": {"stdout": "out", "stderr": ""},
    });
    let event = memhook_core::event::normalize("claude-code", None, &payload);
    let d = memhook_core::capture::decide(&policy, Some(Path::new("/home/u")), &event);
    // Appending a plain read of the excluded file to any command must not
    // be kept (the fuzzer finds commands whose splitting loses it).
    let leaky = format!("{command}\ncat secret/key.txt");
    let payload2 = {
        let mut p = payload.clone();
        p["tool_input"]["command"] = leaky.into();
        p
    };
    let event2 = memhook_core::event::normalize("claude-code", None, &payload2);
    let d2 = memhook_core::capture::decide(&policy, Some(Path::new("/home/u")), &event2);
    let _ = d;
    assert_ne!(d2.disposition, Disposition::Keep, "kept: {command:?}");
});
