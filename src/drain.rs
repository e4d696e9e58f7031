//! Single-flight delivery of the spool to its sinks.

use crate::cli::{CmdResult, DrainArgs};
use std::path::Path;

pub fn run(_args: &DrainArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook drain is not implemented yet".into())
}
