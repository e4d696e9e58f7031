//! `memhook install-mcp`: register `memhook mcp` in each agent's MCP config.

use crate::cli::{CmdResult, InstallMcpArgs};
use std::path::Path;

pub fn run(_args: &InstallMcpArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook install-mcp is not implemented yet".into())
}
