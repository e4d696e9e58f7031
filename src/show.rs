//! `memhook show`: print the resolved scope.

use crate::cli::{CmdResult, ShowArgs};

pub fn run(_args: &ShowArgs) -> CmdResult {
    Err("memhook show is not implemented yet".into())
}
