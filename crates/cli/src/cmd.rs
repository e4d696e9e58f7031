//! What the command runners share with `cli.rs`: the result type every
//! runner returns and the arguments more than one command takes. Each
//! command's own arguments live in its module, beside its `run`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, ValueEnum};

/// What a command runner returns: the exit code to use, or an error that
/// `main` prints as `memhook: <error>` and turns into exit code 2.
pub type CmdResult = Result<ExitCode, Box<dyn std::error::Error + Send + Sync>>;

/// Project naming strategy used when no marker decides the project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StrategyArg {
    /// The basename of the current directory.
    Basename,
    /// The name of the repository's main work tree.
    #[value(alias = "repo_root")]
    RepoRoot,
}

#[derive(Debug, Args)]
pub struct ScopeArgs {
    /// Resolve the scope of this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Use this workspace (overrides AI_MEMORY_WORKSPACE and the marker).
    #[arg(long, value_name = "NAME")]
    pub workspace: Option<String>,
    /// Use this project (overrides AI_MEMORY_PROJECT and the marker).
    #[arg(long, value_name = "NAME")]
    pub project: Option<String>,
}
