//! `memhook enable` / `disable` / `pause` / `resume`: the commands; the
//! switches themselves (what is on, off or paused) are
//! `memhook_core::switches`.

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use crate::cmd::{CmdResult, ScopeArgs};
use memhook_core::scope::{self, Mode, Scope, ScopeInput};
use memhook_core::switches::*;
use memhook_core::timefmt::now_ms;

#[derive(Debug, Args)]
pub struct SwitchArgs {
    #[command(flatten)]
    pub scope: ScopeArgs,
    /// Also write `enabled = true|false` into the project's marker
    /// (.ai-memory.toml; created at the checkout's top level when there is
    /// none), keeping its comments and formatting, so that every clone and
    /// machine follows. Without it no file in the repository is touched.
    #[arg(long)]
    pub marker: bool,
}

#[derive(Debug, Args)]
pub struct PauseArgs {
    /// How long: 90s, 30m, 2h, 1d (at most 366d). Without it: until
    /// `memhook resume`.
    #[arg(long = "for", value_name = "DURATION")]
    pub for_: Option<String>,
}

fn client_scope(args: &ScopeArgs) -> Result<Scope, Box<dyn std::error::Error + Send + Sync>> {
    let input = ScopeInput::from_env(
        Mode::Client,
        args.cwd.as_deref(),
        args.workspace.clone(),
        args.project.clone(),
        None,
    )?;
    Ok(scope::resolve(&input)?)
}

/// `memhook enable` / `memhook disable` for the project of a directory.
pub fn run_switch(args: &SwitchArgs, data_dir: Option<&Path>, on: bool) -> CmdResult {
    let dir = memhook_core::data_dir::resolve(data_dir)?;
    let scope = client_scope(&args.scope)?;
    let k = key(&scope);
    let mut s = load(&dir);
    if on {
        s.disabled.remove(&k);
        s.enabled.insert(k.clone());
    } else {
        s.enabled.remove(&k);
        s.disabled.insert(k.clone());
    }
    save(&dir, &s).map_err(|e| format!("{}: {e}", dir.join(SWITCHES_FILE).display()))?;
    if args.marker {
        use crate::marker_edit::{self, Edited};
        let cwd = match &args.scope.cwd {
            Some(c) => memhook_core::scope::paths::absolute(c, None),
            None => memhook_core::scope::paths::logical_current_dir(),
        }
        .map_err(|e| format!("the current directory: {e}"))?;
        let path = marker_edit::target(scope.marker.as_deref(), &cwd);
        let what = match marker_edit::set_enabled(&path, on)? {
            Edited::Created => "created",
            Edited::Changed => "updated",
            Edited::Unchanged => "already says so:",
        };
        println!("memhook: {what} {} (enabled = {on})", path.display());
    }
    if on && !args.marker && !scope.settings.enabled {
        let m = scope
            .marker
            .as_deref()
            .map_or("?".into(), |m| m.display().to_string());
        return Err(format!(
            "{k} stays disabled: its marker {m} says `enabled = false`, which wins over \
             `memhook enable`; run `memhook enable --marker` to change the marker"
        )
        .into());
    }
    if on {
        println!("memhook: {k} is enabled: its events are captured and briefed");
    } else {
        println!(
            "memhook: {k} is disabled: nothing of it is captured or briefed \
             (`memhook enable` turns it back on; what was captured before stays \
             until `memhook forget --project {k}`)"
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `memhook pause [--for D]`.
pub fn run_pause(args: &PauseArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = memhook_core::data_dir::resolve(data_dir)?;
    let until = match &args.for_ {
        None => u64::MAX,
        Some(d) => {
            now_ms()
                + parse_duration_ms(d).ok_or_else(|| {
                    format!(
                        "--for {d:?}: write a number and a unit: 90s, 30m, 2h or 1d (at most 366d)"
                    )
                })?
        }
    };
    let mut s = load(&dir);
    s.paused_until_ms = Some(until);
    save(&dir, &s).map_err(|e| format!("{}: {e}", dir.join(SWITCHES_FILE).display()))?;
    println!(
        "memhook: capture is paused for every project {}",
        until_words(until)
    );
    Ok(ExitCode::SUCCESS)
}

/// `memhook resume`.
pub fn run_resume(data_dir: Option<&Path>) -> CmdResult {
    let dir = memhook_core::data_dir::resolve(data_dir)?;
    let mut s = load(&dir);
    if s.paused_until_ms.take().is_some() {
        save(&dir, &s).map_err(|e| format!("{}: {e}", dir.join(SWITCHES_FILE).display()))?;
    }
    println!("memhook: capture is on");
    Ok(ExitCode::SUCCESS)
}
