//! Command-line assembly (clap) and dispatch.
//!
//! Each command owns its arguments and its `run` (in the module named after
//! the command); this module only assembles them into [`Command`] and
//! dispatches. Command runners return [`CmdResult`](crate::cmd::CmdResult);
//! this module alone turns the outcome into an exit code. `memhook hook` is
//! special: it always exits 0 (an agent treats exit 2 as "block"), so its
//! runner never fails.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

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
    Hook(crate::hook::HookCliArgs),
    /// Print the workspace and project a directory belongs to, and what is
    /// captured there.
    Show(crate::show::ShowArgs),
    /// Deliver every pending record now, in the foreground.
    Drain(crate::drain::DrainArgs),
    /// Show pending records, deliveries, drops and the drainer's state.
    Status(crate::status::StatusArgs),
    /// List the newest captured records: local time, key, scope, agent,
    /// session and title; a tool call is shown by its result (--json lists
    /// every record, in UTC).
    Recent(crate::status::RecentArgs),
    /// Full-text search over captured records.
    Search(crate::status::SearchArgs),
    /// Serve the store (SQLite, or PostgreSQL with --database) over the
    /// ai-memory hook protocol, with a web view of it.
    Serve(memhook_server::ServeArgs),
    /// Named tokens for a team server (SQLite, or PostgreSQL with
    /// --database): add, list, revoke.
    Token(crate::token::TokenArgs),
    /// Write stored records as JSON lines (to move them to another machine).
    Export(crate::transfer::export::ExportArgs),
    /// Read records written by `memhook export` into this store or a server.
    Import(crate::transfer::import::ImportArgs),
    /// Open the web view: start `memhook serve` if none is running, check
    /// that the server proves it holds your token, print a one-time login
    /// link and open it in a browser.
    Ui(crate::ui::UiArgs),
    /// Wire memhook into an agent's hook configuration (dry run by default).
    InstallHooks(crate::install::InstallArgs),
    /// Remove memhook's entries from an agent's configuration (dry run by default).
    UninstallHooks(crate::install::UninstallArgs),
    /// Register `memhook mcp` with an agent's MCP configuration (dry run by default).
    InstallMcp(crate::install::mcp::InstallMcpArgs),
    /// Check each agent's installation of memhook.
    Doctor(crate::install::doctor::DoctorArgs),
    /// Run the project-memory MCP server on stdio.
    Mcp(crate::mcp::McpArgs),
    /// Remove records for good: a record, a session, a project, or all before
    /// a date (a dry run without --yes).
    Forget(crate::forget::ForgetArgs),
    /// Let this checkout use the scope its marker names, bound by another checkout.
    Trust(crate::trust::TrustArgs),
    /// Take back `memhook trust`: this checkout's events go to its quarantine.
    Untrust(crate::trust::TrustArgs),
    /// Turn capture and briefing on for the project of a directory (opts it
    /// in under allowlist mode).
    Enable(crate::switches::SwitchArgs),
    /// Turn capture and briefing off for the project of a directory.
    Disable(crate::switches::SwitchArgs),
    /// Pause capture for every project (until `memhook resume`, or --for).
    Pause(crate::switches::PauseArgs),
    /// End a pause.
    Resume,
}

/// Parse the command line, run the command, and map the outcome to an exit
/// code. Errors print as `memhook: <message>` and exit 2 — except on the
/// hook path (`memhook [--data-dir DIR] hook …`), where a bad argument is
/// reported on one stderr line and the hook still exits 0 with an empty
/// envelope: an agent treats exit 2 as "block the tool call".
pub fn main() -> ExitCode {
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    // The command lines memhook itself runs here, many times a session,
    // skip clap, whose command tree for every subcommand was a
    // fifth of a session start's instructions (docs/benchmarks.md, "One
    // policy, an arena, no libm, no clap for session start"): the hook, as
    // the per-event binary hands it over (session start), and the detached
    // drainer the hook starts (both read as clap reads them: tests here and
    // in hook.rs), and the per-event binary's request for a briefing.
    if let Some(code) = memhook_hook::handover::run_own_line(
        &argv,
        memhook_sinks::session_start::session_start,
        memhook_sinks::session_start::compose_for,
        |dir| memhook_sinks::drainer::run_background(Some(dir)),
    ) {
        return code;
    }
    let cli = match Cli::try_parse_from(&argv) {
        Ok(cli) => cli,
        Err(err) => {
            let bad_hook_args = memhook_hook::is_hook_invocation(&argv)
                && !matches!(
                    err.kind(),
                    clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
                );
            if bad_hook_args {
                return memhook_hook::run_bad_arguments(&argv, &clap_problem(&err));
            }
            err.exit()
        }
    };
    let data_dir = cli.data_dir;
    let result = match cli.command {
        // The hook never fails: it prints an envelope and exits 0 on every path.
        Command::Hook(args) => {
            return memhook_hook::run(
                &args.into(),
                data_dir.as_deref(),
                memhook_sinks::session_start::session_start,
            )
        }
        Command::Show(args) => crate::show::run(&args, data_dir.as_deref()),
        Command::Drain(args) => crate::drain::run(&args, data_dir.as_deref()),
        Command::Status(args) => crate::status::run_status(&args, data_dir.as_deref()),
        Command::Recent(args) => crate::status::run_recent(&args, data_dir.as_deref()),
        Command::Search(args) => crate::status::run_search(&args, data_dir.as_deref()),
        Command::Serve(args) => memhook_server::run(&args, data_dir.as_deref()),
        Command::Token(args) => crate::token::run(&args, data_dir.as_deref()),
        Command::Export(args) => crate::transfer::export::run(&args, data_dir.as_deref()),
        Command::Import(args) => crate::transfer::import::run(&args, data_dir.as_deref()),
        Command::Ui(args) => crate::ui::run(&args, data_dir.as_deref()),
        Command::InstallHooks(args) => crate::install::run_install(&args, data_dir.as_deref()),
        Command::UninstallHooks(args) => crate::install::run_uninstall(&args),
        Command::InstallMcp(args) => crate::install::run_install_mcp(&args, data_dir.as_deref()),
        Command::Doctor(args) => crate::install::run_doctor(&args, data_dir.as_deref()),
        Command::Mcp(args) => crate::mcp::run(&args, data_dir.as_deref()),
        Command::Forget(args) => crate::forget::run(&args, data_dir.as_deref()),
        Command::Trust(args) => crate::trust::run_trust(&args, data_dir.as_deref()),
        Command::Untrust(args) => crate::trust::run_untrust(&args, data_dir.as_deref()),
        Command::Enable(args) => crate::switches::run_switch(&args, data_dir.as_deref(), true),
        Command::Disable(args) => crate::switches::run_switch(&args, data_dir.as_deref(), false),
        Command::Pause(args) => crate::switches::run_pause(&args, data_dir.as_deref()),
        Command::Resume => crate::switches::run_resume(data_dir.as_deref()),
    };
    match result {
        Ok(code) => code,
        Err(err) => report(err),
    }
}

fn report(err: Box<dyn std::error::Error + Send + Sync>) -> ExitCode {
    eprintln!("memhook: {err}");
    ExitCode::from(2)
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
    use memhook_hook::handover::background_drainer;

    #[test]
    fn the_drainer_command_line_is_read_as_clap_reads_it() {
        let line = |l: &str| -> Vec<std::ffi::OsString> { l.split(' ').map(Into::into).collect() };
        let spawned = line("memhook-cli --data-dir /d/x drain --background");
        assert_eq!(background_drainer(&spawned), Some("/d/x".into()));
        let cli = Cli::try_parse_from(&spawned).unwrap();
        assert_eq!(cli.data_dir.as_deref(), Some(std::path::Path::new("/d/x")));
        assert!(matches!(
            cli.command,
            Command::Drain(crate::drain::DrainArgs {
                background: true,
                ..
            })
        ));
        for other in [
            "memhook-cli drain --background",
            "memhook-cli --data-dir /d/x drain",
            "memhook-cli --data-dir /d/x drain --background --budget-secs 1",
            "memhook-cli --data-dir=/d/x drain --background",
            "memhook-cli drain --background --data-dir /d/x",
        ] {
            assert_eq!(background_drainer(&line(other)), None, "{other}");
        }
    }

    #[test]
    fn the_readme_lists_every_command() {
        use clap::CommandFactory;
        let readme = include_str!("../../../README.md");
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
