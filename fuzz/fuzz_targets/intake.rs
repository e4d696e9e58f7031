//! Payload intake, for every agent: stdin bytes → JSON → the agent's schema
//! → capture decision under an active policy → the bounded record. Nothing
//! may panic, and the record must respect its caps.
#![no_main]

use std::path::{Path, PathBuf};

use libfuzzer_sys::fuzz_target;
use memhook_core::scope::CaptureConfig;

const AGENTS: &[&str] = &["claude-code", "codex", "gemini-cli", "opencode", "cursor", "other"];

fuzz_target!(|data: &[u8]| {
    let Ok(payload) = memhook_hook::parse_payload(data) else {
        return;
    };
    let policy = CaptureConfig::Active {
        marker: PathBuf::from("/w/p/.ai-memory.toml"),
        patterns: vec!["secret/**".into(), "**/*.pem".into(), "~/.ssh/**".into()],
        assistant_text: true,
    };
    for agent in AGENTS {
        let event = memhook_core::event::normalize(agent, None, &payload);
        let decision = memhook_core::capture::decide(&policy, Some(Path::new("/home/u")), &event);
        let _ = decision.to_json();
    }
});
