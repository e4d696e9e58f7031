//! The event names each agent uses in its hook configuration, for the
//! hook's typo hint (`--event SessionStrat` → "did you mean SessionStart?").
//! The installer's profiles (`installers/agents.toml`) write the same
//! names; a unit test in `install::profile` keeps the two equal.

/// `(agent id, native event names)`, in the order the installer writes them.
pub const NATIVE_EVENTS: &[(&str, &[&str])] = &[
    (
        "claude-code",
        &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PreCompact",
            "Stop",
            "SubagentStart",
            "SubagentStop",
            "SessionEnd",
        ],
    ),
    (
        "codex",
        &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PreCompact",
            "Stop",
            "SessionEnd",
        ],
    ),
    (
        "opencode",
        &[
            "session.created",
            "chat.message",
            "tool.execute.before",
            "tool.execute.after",
            "experimental.session.compacting",
            "session.compacted",
            "session.idle",
            "session.deleted",
        ],
    ),
    (
        "gemini-cli",
        &[
            "SessionStart",
            "BeforeAgent",
            "BeforeTool",
            "AfterTool",
            "PreCompress",
            "SessionEnd",
        ],
    ),
    (
        "cursor",
        &[
            "sessionStart",
            "beforeSubmitPrompt",
            "preToolUse",
            "postToolUse",
            "postToolUseFailure",
            "preCompact",
            "stop",
            "sessionEnd",
        ],
    ),
    (
        "qwen-code",
        &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PreCompact",
            "Stop",
            "SubagentStart",
            "SubagentStop",
            "SessionEnd",
        ],
    ),
    (
        "copilot",
        &[
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PostToolUse",
            "PostToolUseFailure",
            "PreCompact",
            "Stop",
            "SubagentStart",
            "SubagentStop",
            "SessionEnd",
        ],
    ),
    (
        "kilo",
        &[
            "session.created",
            "chat.message",
            "tool.execute.before",
            "tool.execute.after",
            "experimental.session.compacting",
            "session.compacted",
            "session.idle",
            "session.deleted",
        ],
    ),
];

/// The native event names of `agent`, or every agent's when it has no row.
pub fn native_events(agent: &str) -> Vec<&'static str> {
    match NATIVE_EVENTS.iter().find(|(id, _)| *id == agent) {
        Some((_, names)) => names.to_vec(),
        None => NATIVE_EVENTS
            .iter()
            .flat_map(|(_, names)| names.iter().copied())
            .collect(),
    }
}

/// The native event name of `agent` (every agent's, when it has no row)
/// nearest to `name` by edit distance on the folded spelling, if it is near
/// enough to be a typo: at most a third of the name's letters, and at least 2.
pub fn closest_event(agent: &str, name: &str) -> Option<&'static str> {
    let folded = super::fold_name(name);
    let (distance, best) = native_events(agent)
        .into_iter()
        .map(|e| (strsim::levenshtein(&super::fold_name(e), &folded), e))
        .min_by_key(|(d, _)| *d)?;
    (distance <= (folded.len() / 3).max(2)).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_misspelt_event_finds_the_agents_own_name() {
        assert_eq!(
            closest_event("claude-code", "UserPromtSubmit"),
            Some("UserPromptSubmit")
        );
        assert_eq!(
            closest_event("claude-code", "pre_tool_us"),
            Some("PreToolUse")
        );
        assert_eq!(
            closest_event("gemini-cli", "BeforeAgnet"),
            Some("BeforeAgent")
        );
        // No profile: every agent's names are candidates.
        assert_eq!(closest_event("my-agent", "SesionEnd"), Some("SessionEnd"));
        // Nothing near: no guess.
        assert_eq!(closest_event("claude-code", "Deploy"), None);
    }
}
