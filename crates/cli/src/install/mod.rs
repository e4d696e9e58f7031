//! Installers: wire memhook into each agent's configuration, driven by the
//! profiles in `installers/agents.toml`.
//!
//! Flow for every command: resolve the agent's file → read it → compute the
//! new text from the old (the same function for the dry run and `--apply`)
//! → dry run: print a unified diff; `--apply`: lock, re-read, recompute,
//! back up, replace atomically.

/// `println!` that ignores a closed stdout (`memhook install-hooks | head`)
/// instead of panicking.
macro_rules! say {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($t)*);
    }};
}

/// `print!` that ignores a closed stdout.
macro_rules! say_raw {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout().lock(), $($t)*);
    }};
}

pub mod apply;
mod ask;
pub mod command;
pub mod diff;
pub mod doctor;
pub mod hooks_json;
pub mod jsonc;
pub mod ledger;
pub mod mcp;
pub mod plugin;
pub mod profile;
pub mod scripts;

use crate::cmd::{CmdResult, StrategyArg};
use apply::{InstallError, Outcome};
use clap::{Args, ValueEnum};
use command::Baked;
use doctor::DoctorArgs;
use mcp::InstallMcpArgs;
use memhook_delivery::sink::{AUTH_TOKEN_ENV, AUTH_TOKEN_FILE};
use profile::{Profile, Shape};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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
    #[value(name = "qwen-code", alias = "qwen")]
    QwenCode,
    #[value(alias = "copilot-cli")]
    Copilot,
    /// Kilo CLI (`kilo`), an OpenCode fork: the same generated plugin.
    #[value(alias = "kilo-cli", alias = "kilocode")]
    Kilo,
    /// Factory Droid (`droid`).
    #[value(alias = "factory-droid", alias = "factory")]
    Droid,
    /// OpenHands CLI (`openhands`).
    #[value(name = "openhands", alias = "openhands-cli")]
    OpenHands,
    /// pi coding agent (`pi`): a generated extension.
    #[value(alias = "pi-coding-agent")]
    Pi,
    /// Cline CLI (`cline`): one small script per event in ~/.cline/hooks.
    #[value(alias = "cline-cli")]
    Cline,
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
    /// Capture everywhere but what markers exclude (denylist, the default),
    /// or only where a marker exists or `memhook enable` opted in
    /// (allowlist). Stored once in <data dir>/capture-mode.
    #[arg(long, value_enum, value_name = "MODE")]
    pub capture_mode: Option<CaptureModeArg>,
}

/// `--capture-mode` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CaptureModeArg {
    Denylist,
    Allowlist,
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

pub fn run_install(args: &InstallArgs, data_dir: Option<&Path>) -> CmdResult {
    let profiles = select(args.agent, args.config_file.is_some())?;
    let data = memhook_core::data_dir::resolve(data_dir)?;
    let flags = Flags {
        exe: current_exe()?,
        data_dir: (!memhook_core::data_dir::is_default(&data)).then(|| data.clone()),
        server_url: args
            .server_url
            .as_deref()
            .map(command::normalise_server_url)
            .transpose()?,
        strategy: args.project_strategy,
    };
    let person = args.apply && args.config_file.is_none() && ask::on_terminal();
    for p in &profiles {
        let path = config_path(p, args.config_file.as_deref())?;
        install_one(p, &path, &flags, args.apply)?;
    }
    // The capture mode is asked once, the first time, of a person at a
    // terminal; scripts pass --capture-mode (or get the default, said below).
    let mode_file = data.join(memhook_core::switches::CAPTURE_MODE_FILE);
    let capture_mode = match args.capture_mode {
        None if person && !mode_file.exists() => ask::capture_mode(),
        given => given,
    };
    if let Some(mode) = capture_mode {
        let word = match mode {
            CaptureModeArg::Denylist => "denylist",
            CaptureModeArg::Allowlist => "allowlist",
        };
        let file = data.join(memhook_core::switches::CAPTURE_MODE_FILE);
        if args.apply {
            memhook_core::data_dir::ensure_private_dir(&data)?;
            memhook_core::data_dir::write_private_file(&file, format!("{word}\n").as_bytes())
                .map_err(apply::io_err(&file))?;
        } else {
            say!(
                "# dry run: --apply would write {word} to {}",
                file.display()
            );
        }
    }
    if args.apply {
        let mode = match memhook_core::switches::capture_mode(&data) {
            memhook_core::switches::CaptureMode::Allowlist => {
                "allowlist (only projects with a marker or `memhook enable`)"
            }
            memhook_core::switches::CaptureMode::Denylist => {
                "denylist (every project, minus what markers exclude)"
            }
        };
        say!("capture mode: {mode}");
        // The agent can search its memory only through `memhook mcp`.
        for p in profiles.iter().filter(|p| {
            args.config_file.is_none()
                && p.mcp.unsupported.is_none()
                && !mcp::registered(p, &data).unwrap_or(false)
        }) {
            if person && ask::yes(&format!(
                "Also register memhook's MCP server with {}, so it can search and keep its project memory?",
                p.name
            )) {
                mcp::register(p, None, &data, false, true)?;
            } else {
                say!(
                    "next: `memhook install-mcp --agent {} --apply` gives {} its project memory as tools (memory_search, memory_write)",
                    p.id, p.name
                );
            }
        }
    }
    if let Some(token) = std::env::var(AUTH_TOKEN_ENV)
        .ok()
        .filter(|t| !t.trim().is_empty())
    {
        let file = data.join(AUTH_TOKEN_FILE);
        if args.apply {
            memhook_core::data_dir::ensure_private_dir(&data)?;
            memhook_core::data_dir::write_private_file(&file, token.trim().as_bytes())
                .map_err(apply::io_err(&file))?;
            say!(
                "token from {AUTH_TOKEN_ENV} written to {} (mode 0600)",
                file.display()
            );
        } else {
            say!(
                "would write the token from {AUTH_TOKEN_ENV} to {} (mode 0600)",
                file.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_uninstall(args: &UninstallArgs) -> CmdResult {
    let profiles = select(args.agent, args.config_file.is_some())?;
    for p in profiles {
        let path = config_path(p, args.config_file.as_deref())?;
        uninstall_one(p, &path, args.apply)?;
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run_install_mcp(args: &InstallMcpArgs, data_dir: Option<&Path>) -> CmdResult {
    mcp::run(args, data_dir)
}

pub fn run_doctor(args: &DoctorArgs, data_dir: Option<&Path>) -> CmdResult {
    doctor::run(args, data_dir)
}

/// What the command line asks to bake; values not given are read back from
/// memhook's existing entries.
struct Flags {
    exe: PathBuf,
    data_dir: Option<PathBuf>,
    server_url: Option<String>,
    strategy: Option<StrategyArg>,
}

impl Flags {
    /// The settings to bake, given what the file already holds.
    fn baked(&self, existing: Option<&Baked>) -> Baked {
        Baked {
            exe: self.exe.clone(),
            data_dir: self.data_dir.clone(),
            server_url: self
                .server_url
                .clone()
                .or_else(|| existing.and_then(|b| b.server_url.clone())),
            strategy: match self.strategy {
                Some(StrategyArg::RepoRoot) => Some("repo-root".into()),
                Some(StrategyArg::Basename) => None,
                None => existing
                    .and_then(|b| b.strategy.clone())
                    .filter(|s| s == "repo-root" || s == "repo_root")
                    .map(|_| "repo-root".into()),
            },
        }
    }
}

/// The profiles an `--agent` value names (`all`: those found on this machine).
pub fn select(
    agent: AgentArg,
    has_config_file: bool,
) -> Result<Vec<&'static Profile>, InstallError> {
    let id = match agent {
        AgentArg::ClaudeCode => "claude-code",
        AgentArg::Codex => "codex",
        AgentArg::Opencode => "opencode",
        AgentArg::GeminiCli => "gemini-cli",
        AgentArg::Cursor => "cursor",
        AgentArg::QwenCode => "qwen-code",
        AgentArg::Copilot => "copilot",
        AgentArg::Kilo => "kilo",
        AgentArg::Droid => "droid",
        AgentArg::OpenHands => "openhands",
        AgentArg::Pi => "pi",
        AgentArg::Cline => "cline",
        AgentArg::All => {
            if has_config_file {
                return Err(InstallError::Refused(
                    "--config-file names one file; use it with one --agent, not all".into(),
                ));
            }
            let found: Vec<_> = profile::all().iter().filter(|p| p.detected()).collect();
            if found.is_empty() {
                return Err(InstallError::Refused(format!(
                    "no supported agent found on this machine (looked for {}); name one with --agent",
                    profile::all()
                        .iter()
                        .map(|p| p.location.describe())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            return Ok(found);
        }
    };
    Ok(vec![profile::get(id).expect("every AgentArg has a profile")])
}

pub fn config_path(p: &Profile, flag: Option<&Path>) -> Result<PathBuf, InstallError> {
    if let Some(f) = flag {
        return Ok(if f.is_absolute() {
            f.to_path_buf()
        } else {
            std::env::current_dir()
                .map(|c| c.join(f))
                .unwrap_or_else(|_| f.to_path_buf())
        });
    }
    p.location.path().ok_or_else(|| {
        InstallError::Refused(format!(
            "cannot locate {} for {}: HOME is not set{}; pass --config-file",
            p.location.describe(),
            p.name,
            if p.location.dir_env.is_empty() {
                String::new()
            } else {
                format!(" and neither is {}", p.location.dir_env)
            }
        ))
    })
}

/// The `memhook` binary the agents' hook commands run: the per-event
/// binary beside this one (`memhook-cli` runs the installer; users type
/// `memhook install-hooks`, which hands it here).
pub fn current_exe() -> Result<PathBuf, InstallError> {
    let exe = std::env::current_exe().map_err(|e| {
        InstallError::Refused(format!(
            "cannot find the path of the running memhook binary: {e}"
        ))
    })?;
    let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let lean = match name {
        "memhook" | "memhook.exe" => exe.clone(),
        "memhook-cli" => exe.with_file_name("memhook"),
        "memhook-cli.exe" => exe.with_file_name("memhook.exe"),
        _ => {
            return Err(InstallError::Refused(format!(
                "the running binary is {} but hook commands must run a file named `memhook`; install or link it under that name and run install-hooks from there",
                exe.display()
            )))
        }
    };
    if !lean.is_file() {
        return Err(InstallError::Refused(format!(
            "{} is missing: hook commands run the `memhook` binary installed beside {}; install memhook again (`cargo install --locked --path crates/cli` installs both)",
            lean.display(),
            exe.display()
        )));
    }
    Ok(lean)
}

/// The new text for an install, from the current one. Also returns the
/// containers created (for the ledger).
fn install_text(
    p: &Profile,
    path: &Path,
    flags: &Flags,
    current: Option<&str>,
) -> Result<(Option<String>, Vec<String>), InstallError> {
    match p.shape {
        Shape::Scripts => Err(InstallError::Refused(format!(
            "{}: {} takes one script per event (install/scripts.rs), not one file",
            path.display(),
            p.name
        ))),
        Shape::Plugin => {
            let existing = match current {
                Some(text) if !plugin::is_ours(text, &p.id) => {
                    return Err(InstallError::Refused(format!(
                        "{} exists and was not written by memhook; move it away (or pass --config-file) and re-run",
                        path.display()
                    )))
                }
                Some(text) => plugin::baked_of(text, &p.id),
                None => None,
            };
            Ok((
                Some(plugin::render(&p.id, &flags.baked(existing.as_ref()))),
                Vec::new(),
            ))
        }
        Shape::Nested | Shape::NestedRoot | Shape::Flat => {
            let doc = jsonc::Doc::parse(path, current, p.json, &p.name)?;
            let existing = hooks_json::owned_hooks(&doc.value(), p.shape)
                .into_iter()
                .next()
                .map(|o| o.baked);
            let baked = flags.baked(existing.as_ref());
            let commands: Vec<(String, String)> = p
                .events
                .iter()
                .map(|[native, ours]| (native.clone(), baked.hook_command(ours, &p.id)))
                .collect();
            let created = hooks_json::install(&doc.root(), path, p.shape, &commands)?;
            // Nothing to change renders the current bytes unchanged.
            Ok((Some(doc.render()), created))
        }
    }
}

fn install_one(p: &Profile, path: &Path, flags: &Flags, write: bool) -> Result<(), InstallError> {
    if p.shape == Shape::Scripts {
        return scripts::install(p, path, flags, write);
    }
    let current = apply::read_text(path)?;
    let (next, _) = install_text(p, path, flags, current.as_deref())?;
    if !write {
        print_dry_run(p, path, current.as_deref(), next.as_deref());
        startup_install_note(p, path);
        return Ok(());
    }
    // A generated file, or one of memhook's own, is deleted by uninstall:
    // so are the dirs made for it.
    let new_dirs = if p.shape == Shape::Plugin || p.own_file {
        plugin::dirs_to_create(&apply::resolve_target(path)?)
    } else {
        Vec::new()
    };
    let created = std::cell::RefCell::new(Vec::new());
    let outcome = apply::apply(path, |cur| {
        let (next, c) = install_text(p, path, flags, cur)?;
        *created.borrow_mut() = c;
        Ok(next)
    })?;
    let baked = flags.baked(None);
    let mut created = created.into_inner();
    created.extend(new_dirs);
    // The file itself did not exist: uninstall may delete it again once
    // nothing but memhook's entries was ever in it.
    if current.is_none() && outcome == Outcome::Created && p.shape != Shape::Plugin {
        created.push(ledger::CREATED_FILE.to_string());
    }
    if !created.is_empty() && outcome != Outcome::UpToDate {
        if let Err(e) = ledger::record(baked.data_dir.as_deref(), path, &created) {
            eprintln!("memhook: warning: could not record which containers were created: {e}");
        }
    }
    if let Outcome::Updated {
        backup,
        before,
        after,
    } = &outcome
    {
        if p.shape != Shape::Plugin {
            let fresh = || {
                jsonc::Doc::parse(path, Some(before), p.json, &p.name)
                    .is_ok_and(|d| hooks_json::owned_hooks(&d.value(), p.shape).is_empty())
            };
            let dd = baked.data_dir.as_deref();
            if let Err(e) = ledger::after_apply(dd, path, before, after, backup, fresh) {
                eprintln!("memhook: warning: could not record the pre-install snapshot: {e}");
            }
        }
    }
    match (&outcome, p.shape) {
        // The previous file was memhook's own generated plugin (install_text
        // refuses any other): no copy of it stays in the agent's plugin dir.
        (Outcome::Updated { backup, .. }, Shape::Plugin)
            if std::fs::remove_file(backup).is_ok() =>
        {
            say!(
                "updated {} ({}: memhook installed; the previous generated file is not kept)",
                path.display(),
                p.name
            );
        }
        _ => report(p, path, &outcome, "installed"),
    }
    if outcome != Outcome::UpToDate && !p.notice.is_empty() {
        say!("note: {}", p.notice.replace('\n', "\n      "));
    }
    if let Some(w) = version_warning(p) {
        say!("note: {w}");
    }
    startup_install_note(p, path);
    Ok(())
}

/// Say what the agent's own startup install costs while it is pending.
fn startup_install_note(p: &Profile, path: &Path) {
    if let Some((_, note)) = p.pending_startup_install(path) {
        say!("note: {}", note.replace('\n', "\n      "));
    }
}

fn uninstall_text(
    p: &Profile,
    path: &Path,
    current: Option<&str>,
) -> Result<(Option<String>, Option<PathBuf>), InstallError> {
    let Some(text) = current else {
        return Ok((None, None));
    };
    match p.shape {
        Shape::Scripts => Ok((Some(text.to_string()), None)),
        Shape::Plugin => {
            if plugin::is_ours(text, &p.id) {
                let dd = plugin::baked_of(text, &p.id).and_then(|b| b.data_dir);
                Ok((None, dd))
            } else {
                eprintln!(
                    "memhook: {} was not written by memhook (its first line differs); leaving it alone",
                    path.display()
                );
                Ok((Some(text.to_string()), None))
            }
        }
        Shape::Nested | Shape::NestedRoot | Shape::Flat => {
            let doc = jsonc::Doc::parse(path, Some(text), p.json, &p.name)?;
            let owned = hooks_json::owned_hooks(&doc.value(), p.shape);
            let data_dir = owned.first().and_then(|o| o.baked.data_dir.clone());
            if let Some(before) = ledger::restorable(data_dir.as_deref(), path, text) {
                // Still exactly what memhook wrote: the pre-install bytes.
                return Ok((Some(before), data_dir));
            }
            let created = ledger::created(data_dir.as_deref(), path);
            let prune = |key: &str| created.as_ref().is_none_or(|c| c.iter().any(|k| k == key));
            let n = hooks_json::uninstall(&doc.root(), path, p.shape, &prune)?;
            if n == 0 {
                return Ok((Some(text.to_string()), data_dir));
            }
            // memhook's own file with nothing of anyone else's left (not even
            // a comment): gone.
            // So is a file install created, in the same state.
            let rest = doc.render();
            let created_file = created
                .as_ref()
                .is_some_and(|c| c.iter().any(|k| k == ledger::CREATED_FILE));
            if (p.own_file || created_file) && rest.split_whitespace().collect::<String>() == "{}" {
                return Ok((None, data_dir));
            }
            Ok((Some(doc.render()), data_dir))
        }
    }
}

fn uninstall_one(p: &Profile, path: &Path, write: bool) -> Result<(), InstallError> {
    if p.shape == Shape::Scripts {
        return scripts::uninstall(p, path, write);
    }
    let current = apply::read_text(path)?;
    let (next, dd) = uninstall_text(p, path, current.as_deref())?;
    if !write {
        if next.as_deref() == current.as_deref() {
            say!("{}: nothing to remove for {}", path.display(), p.name);
        } else {
            say_raw!(
                "{}",
                diff::unified(
                    &path.display().to_string(),
                    current.as_deref(),
                    next.as_deref()
                )
            );
            if next.is_none() {
                for d in emptied_dirs(path, dd.as_deref()) {
                    say!(
                        "# and remove {} (created by install-hooks, empty then)",
                        d.display()
                    );
                }
            }
            say!(
                "# dry run: nothing was written; re-run with --apply to remove memhook from {}",
                path.display()
            );
        }
        return Ok(());
    }
    if current.is_none() {
        say!("{}: nothing to remove for {}", path.display(), p.name);
        return Ok(());
    }
    let data_dir = std::cell::RefCell::new(None);
    let outcome = apply::apply(path, |cur| {
        let (next, dd) = uninstall_text(p, path, cur)?;
        *data_dir.borrow_mut() = dd;
        Ok(next)
    })?;
    if outcome == Outcome::UpToDate {
        say!("{}: nothing to remove for {}", path.display(), p.name);
        return Ok(());
    }
    let data_dir = data_dir.into_inner();
    let emptied = emptied_dirs(path, data_dir.as_deref());
    report(p, path, &outcome, "removed");
    if matches!(outcome, Outcome::Deleted { .. }) {
        for d in emptied {
            if std::fs::remove_dir(&d).is_ok() {
                say!(
                    "removed {} (created by install-hooks, now empty)",
                    d.display()
                );
            }
        }
    }
    ledger::forget(data_dir.as_deref(), path);
    Ok(())
}

/// The directories install-hooks created for `path` that are empty once it
/// is deleted (a generated plugin), deepest first.
fn emptied_dirs(path: &Path, data_dir: Option<&Path>) -> Vec<PathBuf> {
    let created = ledger::created(data_dir, path).unwrap_or_default();
    plugin::dirs_emptied_without(path, &created)
}

pub fn print_dry_run(p: &Profile, path: &Path, current: Option<&str>, next: Option<&str>) {
    if current == next {
        say!("{}: already up to date ({})", path.display(), p.name);
        return;
    }
    say_raw!(
        "{}",
        diff::unified(&path.display().to_string(), current, next)
    );
    say!(
        "# dry run: nothing was written; re-run with --apply to write {} ({})",
        path.display(),
        p.name
    );
}

pub fn report(p: &Profile, path: &Path, outcome: &Outcome, verb: &str) {
    match outcome {
        Outcome::Created => say!("created {} ({}: memhook {verb})", path.display(), p.name),
        Outcome::Updated { backup, .. } => say!(
            "updated {} ({}: memhook {verb}; previous version saved as {})",
            path.display(),
            p.name,
            backup.display()
        ),
        Outcome::Deleted { .. } => {
            say!("deleted {} ({}: memhook {verb})", path.display(), p.name)
        }
        Outcome::UpToDate => say!("{}: already up to date ({})", path.display(), p.name),
    }
}

/// A warning when the agent's installed version is older than the profile
/// needs (probed with `<binary> --version`, bounded).
fn version_warning(p: &Profile) -> Option<String> {
    let min = p.min_version.as_deref()?;
    let bin = p.binaries.iter().find_map(|b| profile::find_on_path(b))?;
    let found = doctor::probe_version(&bin)?;
    (parse_semver(&found)? < parse_semver(min)?).then(|| {
        format!(
            "{} {found} found at {}; memhook's hooks need {min} or newer — upgrade it",
            p.name,
            bin.display()
        )
    })
}

/// The first `X.Y.Z` in `s`.
pub fn parse_semver(s: &str) -> Option<(u64, u64, u64)> {
    s.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find_map(|w| {
            let mut it = w.split('.').map(|n| n.parse::<u64>().ok());
            Some((it.next()??, it.next()??, it.next()??))
        })
}

#[cfg(test)]
mod tests {
    #[test]
    fn semver() {
        assert_eq!(super::parse_semver("codex-cli 0.171.0"), Some((0, 171, 0)));
        assert_eq!(
            super::parse_semver("2.1.328 (Claude Code)"),
            Some((2, 1, 328))
        );
        assert_eq!(super::parse_semver("none"), None);
    }
}
