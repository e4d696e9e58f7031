//! Test data: the repository's `fixtures/` (real agent payloads among them)
//! and records built in code.

use std::fs;
use std::path::{Path, PathBuf};

use memhook_core::record::{Record, RecordScope, RecordTool, RECORD_VERSION};

/// Path of a file under the repository's `fixtures/`.
pub fn fixture(rel: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("fixtures")
        .join(rel)
}

/// The real Claude Code fixture payload `name` for `session`, its paths
/// moved from `/home/dev` into `home` (its working directory created).
pub fn claude_payload(name: &str, home: &Path, session: &str) -> serde_json::Value {
    let text = fs::read_to_string(fixture(&format!("agents/claude-code/2.1.328/{name}.json")))
        .unwrap()
        .replace("/home/dev", home.to_str().unwrap());
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    fs::create_dir_all(v["cwd"].as_str().unwrap()).unwrap();
    v["session_id"] = session.into();
    v
}

/// A Claude Code record of `event` in scope `acme/api` (a prompt with a
/// title and body; a Bash call when `call_id` is given).
pub fn record(key: &str, session: &str, event: &str, call_id: Option<&str>) -> Record {
    Record {
        v: RECORD_VERSION,
        key: key.to_string(),
        occurred_ms: 1_700_000_000_000,
        agent: "claude-code".into(),
        event: event.into(),
        native_event: event.into(),
        session_id: Some(session.into()),
        cwd: Some("/work/my repo".into()),
        scope: RecordScope {
            workspace: "acme".into(),
            project: "api".into(),
            workspace_source: "marker".into(),
            project_source: "marker".into(),
            project_strategy: "basename".into(),
            drop_subagent: false,
            default_global: false,
            briefing: false,
            briefing_budget: 4000,
        },
        subagent: false,
        tool: call_id.map(|id| RecordTool {
            family: "shell".into(),
            name: Some("Bash".into()),
            call_id: Some(id.into()),
            outcome: Some("success".into()),
            exit_code: None,
        }),
        capture: None,
        disposition: "keep".into(),
        title: (event == "user-prompt").then(|| "fix the login bug".into()),
        body: (event == "user-prompt").then(|| "fix the login bug\nin auth.rs".into()),
        files: vec![],
        command: None,
        plan: None,
    }
}

/// The `i`th record key: 32 hex digits.
pub fn key(i: usize) -> String {
    format!("{i:032x}")
}
