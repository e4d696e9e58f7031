//! `memhook mcp`: the project-memory MCP server on stdio.

use crate::cli::{CmdResult, McpArgs};
use std::path::Path;

pub fn run(_args: &McpArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook mcp is not implemented yet".into())
}
