//! Which agents have `memhook mcp` registered (`memhook install-mcp --apply`
//! writes it, `--remove` takes the agent out): one small 0600 file in the
//! data dir, `mcp-agents.json` (`{"agents": ["claude-code", …]}`). Session
//! start reads it to decide whether the briefing may invite the agent to
//! save lasting decisions with `memory_write` — reading an agent's own
//! configuration there would cost a parse on the hook's path. A
//! registration made by hand (`claude mcp add …`) is not known: the
//! briefing then has no such line (docs/memory.md).

use std::io;
use std::path::Path;

/// The file's name in the data dir.
pub const MCP_AGENTS_FILE: &str = "mcp-agents.json";
/// Largest file read (a few agent names).
pub const MAX_MCP_AGENTS_BYTES: u64 = 4096;

#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct Agents {
    agents: Vec<String>,
}

fn load(data_dir: &Path) -> Agents {
    crate::data_dir::read_private_file(&data_dir.join(MCP_AGENTS_FILE), MAX_MCP_AGENTS_BYTES)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// Whether `memhook mcp` was registered for `agent` (its canonical name)
/// with this data dir. Any problem reading the file counts as no.
pub fn installed(data_dir: &Path, agent: &str) -> bool {
    load(data_dir).agents.iter().any(|a| a == agent)
}

/// Record that `memhook mcp` is (`on`) or is no longer registered for `agent`.
pub fn set(data_dir: &Path, agent: &str, on: bool) -> io::Result<()> {
    let mut a = load(data_dir);
    a.agents.retain(|x| x != agent);
    if on {
        a.agents.push(agent.to_string());
        a.agents.sort();
    }
    crate::data_dir::ensure_private_dir(data_dir).map_err(io::Error::other)?;
    let text = serde_json::to_string(&a).map_err(io::Error::other)?;
    crate::data_dir::write_private_file(&data_dir.join(MCP_AGENTS_FILE), text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_and_read_back() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("data");
        assert!(!installed(&d, "codex"));
        set(&d, "codex", true).unwrap();
        set(&d, "claude-code", true).unwrap();
        set(&d, "codex", true).unwrap();
        assert!(installed(&d, "codex") && installed(&d, "claude-code"));
        set(&d, "codex", false).unwrap();
        assert!(!installed(&d, "codex") && installed(&d, "claude-code"));
        std::fs::write(d.join(MCP_AGENTS_FILE), "not json").unwrap();
        assert!(!installed(&d, "claude-code"));
    }
}
