//! Command-line definitions (clap) and dispatch.
//!
//! Every subcommand's arguments live here; the work lives in the module named
//! after the command. Command runners return [`CmdResult`]; this module alone
//! turns the outcome into an exit code. `memhook hook` is special: it always
//! exits 0 (an agent treats exit 2 as "block"), so its runner never fails.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// What a command runner returns: the exit code to use, or an error that
/// `main` prints as `memhook: <error>` and turns into exit code 2.
pub type CmdResult = Result<ExitCode, Box<dyn std::error::Error + Send + Sync>>;

/// memhook — durable, private project memory for coding agents.
///
/// Agents run `memhook hook` on every lifecycle event; memhook decides which
/// project memory the event belongs to (the nearest `.ai-memory.toml`), keeps
/// out what the project excluded, and delivers a bounded, redacted record to
/// its embedded store or to an ai-memory compatible server. At session start it
/// prints a briefing the agent shows the model.
#[derive(Debug, Parser)]
#[command(
    name = "memhook",
    version,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Where memhook keeps its spool, store and logs
    /// [default: $AI_MEMORY_DATA_DIR, else the platform data dir]
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Handle one agent lifecycle event read from stdin (run by agents).
    Hook(HookArgs),
    /// Print the workspace and project a directory belongs to.
    Show(ShowArgs),
    /// Deliver every pending record now, in the foreground.
    Drain(DrainArgs),
    /// Show pending records, deliveries, drops and the drainer's state.
    Status(StatusArgs),
    /// List the newest captured records.
    Recent(RecentArgs),
    /// Full-text search over captured records.
    Search(SearchArgs),
    /// Serve the embedded store over the ai-memory hook protocol.
    Serve(ServeArgs),
    /// Wire memhook into an agent's hook configuration (dry run by default).
    InstallHooks(InstallArgs),
    /// Remove memhook's entries from an agent's configuration (dry run by default).
    UninstallHooks(UninstallArgs),
    /// Register `memhook mcp` with an agent's MCP configuration (dry run by default).
    InstallMcp(InstallMcpArgs),
    /// Check each agent's installation of memhook.
    Doctor(DoctorArgs),
    /// Run the project-memory MCP server on stdio.
    Mcp(McpArgs),
    /// Remove records for good: a record, a session, a project, or all before
    /// a date (a dry run without --yes).
    Forget(crate::forget::ForgetArgs),
    /// Let this checkout use the scope its marker names, bound by another checkout.
    Trust(crate::trust::TrustArgs),
    /// Take back `memhook trust`: this checkout's events go to its quarantine.
    Untrust(crate::trust::TrustArgs),
}

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
pub struct HookArgs {
    /// The lifecycle event, in any spelling the agent uses
    /// (SessionStart, session-start, BeforeTool, postToolUse, …).
    /// Without it the payload's `hook_event_name` is used.
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,
    /// The agent running the hook (claude-code, codex, opencode, gemini-cli,
    /// cursor; other names use a generic schema).
    #[arg(long, value_name = "AGENT", default_value = "generic")]
    pub agent: String,
    /// Deliver to this ai-memory compatible server instead of the embedded
    /// store [env: AI_MEMORY_HOOK_URL].
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,
    /// Project strategy when the marker does not choose one.
    #[arg(long, value_enum, value_name = "STRATEGY")]
    pub project_strategy: Option<StrategyArg>,
    /// Print the capture decision for the payload as one JSON object and
    /// write nothing (no spool, no network, no state).
    #[arg(long)]
    pub check_capture: bool,
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

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Project strategy when the marker does not choose one.
    #[arg(long, value_enum, value_name = "STRATEGY")]
    pub project_strategy: Option<StrategyArg>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct DrainArgs {
    /// Stop after this many seconds even if records remain.
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    pub budget_secs: u64,
    /// Internal: run as the detached background drainer.
    #[arg(long, hide = true)]
    pub background: bool,
    /// Start a detached background drainer (unless one is running) and
    /// return at once, as the hook does after each event.
    #[arg(long, conflicts_with = "background")]
    pub detach: bool,
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `--limit` of `recent` and `search`: 1 to the store's most rows per query,
/// refused above it rather than silently cut.
fn parse_limit(v: &str) -> Result<usize, String> {
    let max = crate::sink::store::MAX_QUERY_LIMIT;
    match v.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(format!(
            "{v:?} is not a number from 1 to {max} (one call lists at most {max} records; \
             narrow it with --workspace/--project or `memhook search`)"
        )),
    }
}

#[derive(Debug, Args)]
pub struct RecentArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// How many records to list (1 to 1,000).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = parse_limit)]
    pub limit: usize,
    /// List records of every project, not only the current scope.
    #[arg(long)]
    pub all: bool,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// Plain words to look for: a record matches when it holds every word;
    /// punctuation only separates words (no query syntax).
    pub query: String,
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// How many records to list (1 to 1,000).
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = parse_limit)]
    pub limit: usize,
    /// Search every project, not only the current scope.
    #[arg(long)]
    pub all: bool,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on. Loopback unless you say otherwise.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:49374")]
    pub listen: String,
    /// Allow a non-loopback --listen address (requires a token in
    /// AI_MEMORY_AUTH_TOKEN or <data dir>/auth-token).
    #[arg(long)]
    pub allow_remote: bool,
}

/// The agents memhook can be installed into.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AgentArg {
    #[value(name = "claude-code", alias = "claude")]
    ClaudeCode,
    Codex,
    #[value(alias = "open-code")]
    Opencode,
    #[value(name = "gemini-cli", alias = "gemini")]
    GeminiCli,
    Cursor,
    #[value(alias = "copilot-cli")]
    Copilot,
    /// Every supported agent found on this machine.
    All,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    /// The agent to wire.
    #[arg(long, value_enum)]
    pub agent: AgentArg,
    /// Write the change (without it: print the diff and touch nothing).
    #[arg(long)]
    pub apply: bool,
    /// Deliver to this ai-memory compatible server instead of the embedded store.
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,
    /// Project strategy baked into the hook command.
    #[arg(long, value_enum, value_name = "STRATEGY")]
    pub project_strategy: Option<StrategyArg>,
    /// Edit this file instead of the agent's default configuration file.
    #[arg(long, value_name = "FILE")]
    pub config_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// The agent to unwire.
    #[arg(long, value_enum)]
    pub agent: AgentArg,
    /// Write the change (without it: print the diff and touch nothing).
    #[arg(long)]
    pub apply: bool,
    /// Edit this file instead of the agent's default configuration file.
    #[arg(long, value_name = "FILE")]
    pub config_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct InstallMcpArgs {
    /// The agent to register the MCP server with.
    #[arg(long, value_enum)]
    pub agent: AgentArg,
    /// Write the change (without it: print the diff and touch nothing).
    #[arg(long)]
    pub apply: bool,
    /// Remove the registration instead of adding it.
    #[arg(long)]
    pub remove: bool,
    /// Edit this file instead of the agent's default configuration file.
    #[arg(long, value_name = "FILE")]
    pub config_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct McpArgs {
    /// Serve the project memory of this directory instead of the current one.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
}

/// Parse the command line, run the command, and map the outcome to an exit
/// code. Errors print as `memhook: <message>` and exit 2 — except on the
/// hook path (`memhook [--data-dir DIR] hook …`), where a bad argument is
/// reported on one stderr line and the hook still exits 0 with an empty
/// envelope: an agent treats exit 2 as "block the tool call".
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
            let bad_hook_args = is_hook_invocation(&argv)
                && !matches!(
                    err.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                );
            if bad_hook_args {
                return crate::hook::run_bad_arguments(&argv, &clap_problem(&err));
            }
            err.exit()
        }
    };
    let data_dir = cli.data_dir;
    let result = match cli.command {
        // The hook never fails: it prints an envelope and exits 0 on every path.
        Command::Hook(args) => return crate::hook::run(&args, data_dir.as_deref()),
        Command::Show(args) => crate::show::run(&args, data_dir.as_deref()),
        Command::Drain(args) => crate::drain::run(&args, data_dir.as_deref()),
        Command::Status(args) => crate::status::run_status(&args, data_dir.as_deref()),
        Command::Recent(args) => crate::status::run_recent(&args, data_dir.as_deref()),
        Command::Search(args) => crate::status::run_search(&args, data_dir.as_deref()),
        Command::Serve(args) => crate::serve::run(&args, data_dir.as_deref()),
        Command::InstallHooks(args) => crate::install::run_install(&args, data_dir.as_deref()),
        Command::UninstallHooks(args) => crate::install::run_uninstall(&args),
        Command::InstallMcp(args) => crate::install::run_install_mcp(&args, data_dir.as_deref()),
        Command::Doctor(args) => crate::install::run_doctor(&args),
        Command::Mcp(args) => crate::mcp::run(&args, data_dir.as_deref()),
        Command::Forget(args) => crate::forget::run(&args, data_dir.as_deref()),
        Command::Trust(args) => crate::trust::run_trust(&args, data_dir.as_deref()),
        Command::Untrust(args) => crate::trust::run_untrust(&args, data_dir.as_deref()),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("memhook: {err}");
            ExitCode::from(2)
        }
    }
}

/// Whether `argv` runs `memhook hook`: the first argument that is neither an
/// option nor the value of the global `--data-dir` is `hook`.
pub fn is_hook_invocation(argv: &[std::ffi::OsString]) -> bool {
    let mut args = argv.iter().skip(1);
    while let Some(a) = args.next() {
        let a = a.as_encoded_bytes();
        if a == b"--data-dir" {
            args.next();
        } else if !a.starts_with(b"-") {
            return a == b"hook";
        }
    }
    false
}

/// The first line of clap's error, without its `error: ` prefix (the rest is
/// usage and tips, meant for a person at a terminal).
fn clap_problem(err: &clap::Error) -> String {
    let text = err.to_string();
    let line = text.lines().next().unwrap_or_default().trim();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<std::ffi::OsString> {
        s.split_whitespace().map(Into::into).collect()
    }

    #[test]
    fn the_hook_path_is_recognised_after_global_options() {
        assert!(is_hook_invocation(&argv("memhook hook --bogus")));
        assert!(is_hook_invocation(&argv("memhook --data-dir /d hook")));
        assert!(is_hook_invocation(&argv("memhook --data-dir=/d --x hook")));
        assert!(!is_hook_invocation(&argv("memhook --data-dir hook")));
        assert!(!is_hook_invocation(&argv("memhook status hook")));
        assert!(!is_hook_invocation(&argv("memhook hoo")));
        assert!(!is_hook_invocation(&argv("memhook")));
    }

    #[test]
    fn the_readme_lists_every_command() {
        use clap::CommandFactory;
        let readme = include_str!("../README.md");
        let table = readme
            .split("## Commands")
            .nth(1)
            .expect("a Commands section");
        let table = table.split("\n## ").next().unwrap_or_default();
        for sub in Cli::command().get_subcommands() {
            let name = sub.get_name();
            assert!(
                table.contains(&format!("`memhook {name}")),
                "README.md's command table has no `memhook {name}`"
            );
        }
    }

    #[test]
    fn clap_problems_are_one_line() {
        let err =
            Cli::try_parse_from(["memhook", "hook", "--event", "A", "--event", "B"]).unwrap_err();
        let p = clap_problem(&err);
        assert!(
            p.contains("--event") && !p.contains('\n') && !p.starts_with("error"),
            "{p}"
        );
    }
}
