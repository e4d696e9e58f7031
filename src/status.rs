//! `memhook status`, `recent` and `search`: read-only views of the spool and the store.

use crate::cli::{CmdResult, RecentArgs, SearchArgs, StatusArgs};
use std::path::Path;

pub fn run_status(_args: &StatusArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook status is not implemented yet".into())
}

pub fn run_recent(_args: &RecentArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook recent is not implemented yet".into())
}

pub fn run_search(_args: &SearchArgs, _data_dir: Option<&Path>) -> CmdResult {
    Err("memhook search is not implemented yet".into())
}
