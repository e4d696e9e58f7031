//! `memhook serve`: the embedded store over the ai-memory hook protocol.

use crate::cli::{CmdResult, ServeArgs};
use std::path::Path;

pub fn run(_args: &ServeArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook serve is not implemented yet".into())
}
