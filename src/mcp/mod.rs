//! `memhook mcp`: the project-memory MCP server on stdio.
//!
//! The scope comes from the cwd exactly as for every other client command;
//! the server then answers JSON-RPC lines on stdin until end of input
//! (`rpc.rs`) with the four memory tools (`tools.rs`) over the scope's
//! documents (`crate::memory`) and captured records (`records.rs`).
//! stdout carries protocol messages only; diagnostics go to stderr.

use std::io;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{CmdResult, McpArgs};
use crate::memory::MemoryStore;
use crate::scope::{self, Mode, ScopeInput};

pub mod records;
pub mod rpc;
pub mod tools;

/// Truthy spellings of boolean environment variables.
fn truthy(v: &str) -> bool {
    matches!(
        v.trim().to_ascii_lowercase().as_str(),
        "1" | "true" | "yes" | "on"
    )
}

fn env_name(var: &str) -> Option<String> {
    std::env::var(var).ok().filter(|v| !v.trim().is_empty())
}

/// The scope input of a client command run in `cwd`.
fn scope_input(cwd: Option<&Path>) -> io::Result<ScopeInput> {
    let here = std::env::current_dir()?;
    let cwd: PathBuf = match cwd {
        Some(c) if c.is_absolute() => c.to_path_buf(),
        Some(c) => here.join(c),
        None => here,
    };
    Ok(ScopeInput {
        cwd,
        home: std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from),
        workspace_flag: None,
        project_flag: None,
        env_workspace: env_name("AI_MEMORY_WORKSPACE"),
        env_project: env_name("AI_MEMORY_PROJECT"),
        ignore_marker: std::env::var("AI_MEMORY_IGNORE_MARKER").is_ok_and(|v| truthy(&v)),
        install_strategy: None,
        mode: Some(Mode::Client),
    })
}

pub fn run(args: &McpArgs, data_dir: Option<&Path>) -> CmdResult {
    let data_dir = crate::data_dir::resolve(data_dir)?;
    let input = scope_input(args.cwd.as_deref())
        .map_err(|e| format!("cannot read the current directory: {e} (pass --cwd DIR)"))?;
    let scope = scope::resolve(&input)?;
    for w in &scope.warnings {
        eprintln!("memhook: {w}");
    }
    let store = MemoryStore::new(&data_dir, &scope.workspace, &scope.project)?;
    let records = records::open(&data_dir);
    eprintln!(
        "memhook: mcp: serving the project memory of {}/{}",
        scope.workspace, scope.project
    );
    let ctx = tools::Context {
        store: &store,
        records: records.as_ref(),
        workspace: &scope.workspace,
        project: &scope.project,
        default_global: scope.settings.default_global,
    };
    let stdin = io::stdin();
    let stdout = io::stdout();
    rpc::Server::new(ctx).serve(&mut stdin.lock(), &mut stdout.lock())?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthy_spellings() {
        for t in ["1", "true", "YES", " on "] {
            assert!(truthy(t));
        }
        for f in ["", "0", "no", "off", "maybe"] {
            assert!(!truthy(f));
        }
    }
}
