//! `memhook trust [DIR]` and `memhook untrust [DIR]`: the user's word on
//! whether the checkout at DIR may use the scope its marker names, when
//! another checkout bound that scope first (DESIGN §11, `scope::binding`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

use crate::cmd::CmdResult;
use memhook_core::scope::binding::{self, Change, State};
use memhook_core::scope::{self, Mode, ScopeInput};

#[derive(Debug, Args)]
pub struct TrustArgs {
    /// The checkout (any directory under its marker) [default: the current directory].
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `memhook trust [DIR]`.
pub fn run_trust(args: &TrustArgs, data_dir: Option<&Path>) -> CmdResult {
    run(args, data_dir, true)
}

/// `memhook untrust [DIR]`.
pub fn run_untrust(args: &TrustArgs, data_dir: Option<&Path>) -> CmdResult {
    run(args, data_dir, false)
}

fn run(args: &TrustArgs, data_dir: Option<&Path>, trusted: bool) -> CmdResult {
    let data_dir = memhook_core::data_dir::resolve(data_dir)?;
    let input = ScopeInput::from_env(Mode::Client, args.dir.as_deref(), None, None, None)?;
    let scope = scope::resolve(&input)?;
    scope::report(&scope);
    let (change, b) = binding::set_trust(&data_dir, &scope, trusted)?;
    let (w, p) = &b.claimed;
    let here = b
        .marker_dir
        .as_deref()
        .map_or_else(|| "this checkout".to_string(), |d| d.display().to_string());
    let here: String = here.chars().filter(|c| !c.is_control()).collect();
    let line = match (change, b.state) {
        (Change::Bound, _) => format!("bound: {w}/{p} now belongs to {here}"),
        (Change::Unchanged, State::Untrusted) => {
            format!("already untrusted: {here} does not use {w}/{p}")
        }
        (Change::Unchanged, _) => format!("already trusted: {here} uses {w}/{p}"),
        (Change::Recorded, State::Untrusted) => format!(
            "untrusted: {here} no longer uses {w}/{p}; its events go to {}",
            b.quarantine
                .as_ref()
                .map_or(String::new(), |(qw, qp)| format!("{qw}/{qp}"))
        ),
        (Change::Recorded, _) => format!("trusted: {here} now uses {w}/{p}"),
    };
    println!("{line}");
    if let Some(cmd) = b.run() {
        println!("to undo: {cmd}");
    }
    Ok(ExitCode::SUCCESS)
}
