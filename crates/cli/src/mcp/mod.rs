//! `memhook mcp`: the project-memory MCP server on stdio.
//!
//! The scope comes from the cwd exactly as for every other client command;
//! the server then answers JSON-RPC lines on stdin until end of input
//! (`rpc.rs`) with the four memory tools (`tools.rs`) over the scope's
//! documents (`memhook_store::memory`) and captured records (`records.rs`).
//! stdout carries protocol messages only; diagnostics go to stderr.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::cmd::CmdResult;
use memhook_core::scope::{self, Mode, ScopeInput};
use memhook_store::memory::MemoryStore;

mod activity;
mod call;
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Serve the project memory of this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

pub mod records;

/// Characters of a record id as the briefing and the activity tools show it.
pub mod rpc;
pub mod tools;

pub fn run(args: &McpArgs, data_dir: Option<&Path>) -> CmdResult {
    let data_dir = memhook_core::data_dir::resolve(data_dir)?;
    let input = ScopeInput::from_env(Mode::Client, args.cwd.as_deref(), None, None, None)?;
    let mut scope = scope::resolve(&input)?;
    for w in &scope.warnings {
        eprintln!("memhook: {w}");
    }
    // DESIGN §11: an untrusted checkout gets its own quarantine's memory.
    scope::binding::enforce_client(&data_dir, &mut scope, scope::binding::Access::Bind);
    // A marker is a repository's file: its `[recall] default_global` opens
    // other projects' records to the model only when the user allowed it
    // for this scope (`memhook trust --recall-all`, docs/marker-file.md).
    if scope.settings.default_global && !memhook_core::switches::recall_all(&data_dir, &scope) {
        eprintln!(
            "memhook: mcp: [recall] default_global of {}/{} is not in force: run `memhook \
             trust --recall-all` in this project to let the model search every project",
            scope.workspace, scope.project
        );
        scope.settings.default_global = false;
    }
    let store = MemoryStore::new(&data_dir, &scope.workspace, &scope.project)?;
    let records = records::StoreRecords::new(&data_dir);
    eprintln!(
        "memhook: mcp: serving the project memory of {}/{}",
        scope.workspace, scope.project
    );
    let ctx = tools::Context {
        store: &store,
        records: &records,
        workspace: &scope.workspace,
        project: &scope.project,
        default_global: scope.settings.default_global,
    };
    let stdin = io::stdin();
    let stdout = io::stdout();
    rpc::Server::new(ctx).serve(&mut stdin.lock(), &mut stdout.lock())?;
    Ok(ExitCode::SUCCESS)
}
