//! `memhook-cli`: every `memhook` command but the per-event ones, assembled
//! with clap (`cli.rs`); each command owns its arguments and its `run`.
// The doc comments of the commands' arguments are their `--help` text, as
// users read it (`<data dir>`, `[:SS]`), not rustdoc markup.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]

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
