//! `memhook-cli`: every `memhook` command but the per-event ones, assembled
//! with clap (`cli.rs`); each command owns its arguments and its `run`.

pub mod cli;
pub mod cmd;
pub mod drain;
pub mod forget;
pub mod hook;
pub mod install;
pub mod marker_edit;
pub mod mcp;
pub mod show;
pub mod status;
pub mod switches;
pub mod token;
pub mod transfer;
pub mod trust;
pub mod ui;
