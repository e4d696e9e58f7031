//! `memhook drain`: the command's arguments; the drain itself is
//! `memhook_delivery::drain`.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use crate::cmd::CmdResult;
use memhook_core::data_dir;

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

/// The detached drainer the hook starts (`--data-dir DIR drain
/// --background`; `cli::main` calls it without clap).
pub fn run_background(data_dir: Option<&Path>) -> CmdResult {
    memhook_sinks::drainer::run_background(data_dir)?;
    Ok(ExitCode::SUCCESS)
}

/// `memhook drain`: deliver in the foreground (or, with `--background`, run
/// as the detached drainer). Exit 0 when the spool ends empty, 1 otherwise.
pub fn run(args: &DrainArgs, data_dir: Option<&Path>) -> CmdResult {
    if args.background {
        return run_background(data_dir);
    }
    let dir = data_dir::resolve(data_dir)?;
    let code = memhook_delivery::drain::foreground(
        &dir,
        args.budget_secs,
        args.detach,
        memhook_sinks::make_sink,
    )?;
    crate::forget::tell_cleanup(&dir, memhook_sinks::forget::finish_pending(&dir));
    Ok(code)
}
