//! What every MCP tool call gets: its [`Context`], the [`BadCall`] error
//! and argument reading. The tool table (`tools.rs`) and the activity tools
//! (`activity.rs`) both build on it, so neither imports the other's
//! internals.

use serde_json::{Map, Value};

use super::records::Records;
use memhook_store::memory::MemoryStore;

/// What a tool call needs besides its arguments.
pub struct Context<'a> {
    pub store: &'a MemoryStore,
    pub records: &'a dyn Records,
    pub workspace: &'a str,
    pub project: &'a str,
    /// `[recall] default_global`: record search spans every project.
    pub default_global: bool,
}

/// A call the server cannot make sense of (answered with JSON-RPC -32602).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadCall(pub String);

/// The string argument `key` of a call, if it is one.
pub fn s<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}
