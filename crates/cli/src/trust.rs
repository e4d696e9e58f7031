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
    /// Also let this project's `[recall] default_global` take effect: search
    /// (and the model's MCP tools) without a scope then look across every
    /// project. A marker alone never does (it is a repository's file).
    /// `untrust --recall-all` takes back only that.
    #[arg(long)]
    pub recall_all: bool,
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
    if args.recall_all {
        return recall_all(&data_dir, &scope, trusted);
    }
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

/// `memhook trust --recall-all` / `untrust --recall-all`: allow (or take
/// back) recall across every project for this scope, recorded in the data
/// dir's switches. Only a checkout that uses its scope (bound here or
/// trusted) can be allowed.
fn recall_all(data_dir: &Path, scope: &memhook_core::scope::Scope, on: bool) -> CmdResult {
    use memhook_core::switches;
    let mut scope = scope.clone();
    let b = binding::enforce_client(data_dir, &mut scope, binding::Access::ReadOnly);
    if on && b.state == State::Untrusted {
        return Err(format!(
            "this checkout does not use {}/{} (another checkout bound it): run `memhook trust` \
             here first",
            b.claimed.0, b.claimed.1
        )
        .into());
    }
    let k = switches::key(&scope);
    let mut s = switches::load(data_dir);
    let changed = if on {
        s.recall_all.insert(k.clone())
    } else {
        s.recall_all.remove(&k)
    };
    if changed {
        switches::save(data_dir, &s)
            .map_err(|e| format!("{}: {e}", data_dir.join(switches::SWITCHES_FILE).display()))?;
    }
    let note = if scope.settings.default_global {
        ""
    } else {
        " (its marker does not set [recall] default_global, so nothing changes until it does)"
    };
    println!(
        "{}: {k} {} across every project{note}",
        if on { "allowed" } else { "taken back" },
        if on {
            "may recall"
        } else {
            "recalls its own project only, not"
        },
    );
    Ok(ExitCode::SUCCESS)
}
