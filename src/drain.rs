//! Single-flight delivery of the spool to its sinks.

use crate::cli::{CmdResult, DrainArgs};
use std::path::Path;

pub fn run(_args: &DrainArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook drain is not implemented yet".into())
}

/// Start a detached drainer for `data_dir` unless one holds the drain lock.
/// (Stub added by the hook work; the delivery side replaces it.)
pub fn spawn_detached(_data_dir: &Path) {}
