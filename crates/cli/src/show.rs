//! `memhook show`: print the resolved scope of a directory.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use clap::Args;

use crate::cmd::{CmdResult, ScopeArgs, StrategyArg};
use memhook_core::scope::{self, binding, CaptureConfig, Mode, Scope, ScopeInput, Strategy};
use memhook_core::switches::Gate;

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

pub fn run(args: &ShowArgs, data_dir: Option<&Path>) -> CmdResult {
    let strategy = args.project_strategy.map(|s| match s {
        StrategyArg::Basename => Strategy::Basename,
        StrategyArg::RepoRoot => Strategy::RepoRoot,
    });
    let input = ScopeInput::from_env(
        Mode::Client,
        args.scope.cwd.as_deref(),
        args.scope.workspace.clone(),
        args.scope.project.clone(),
        strategy,
    )?;
    let scope = scope::resolve(&input)?;
    if let Some(line) = scope::scope_note(&scope) {
        eprintln!("{line}");
    }
    // DESIGN §11: who may use the scope (read only: show binds nothing).
    let binding = memhook_core::data_dir::resolve(data_dir)
        .map(|d| binding::check(&d, &scope, binding::Access::ReadOnly));
    // Opt-in and pause: a project turned off, not opted in, or a pause.
    let switch = memhook_core::data_dir::resolve(data_dir)
        .ok()
        .and_then(|d| memhook_core::switches::describe(&d, Some(&scope)));
    if args.json {
        let mut v = to_json(&scope);
        v["binding"] = match &binding {
            Ok(b) => b.to_json(),
            Err(e) => json!({ "state": "unknown", "reason": e.to_string() }),
        };
        v["switch"] = json!(switch);
        println!("{v}");
    } else {
        let gate = memhook_core::data_dir::resolve(data_dir)
            .ok()
            .map(|d| memhook_core::switches::gate(&d, &scope, memhook_core::timefmt::now_ms()));
        print!("{}", to_text(&scope, gate));
        match &binding {
            Ok(b) => println!("{:<10} {}", "binding", b.describe()),
            Err(e) => println!("{:<10} unknown ({e})", "binding"),
        }
        if let Some(sw) = &switch {
            println!("{:<10} {sw}", "switch");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--json` object: the keys of DESIGN §2 in that order, then what the
/// text output also shows (`strategy`, `settings`).
pub fn to_json(scope: &Scope) -> serde_json::Value {
    let s = &scope.settings;
    json!({
        "workspace": scope.workspace,
        "project": scope.project,
        "workspace_source": scope.workspace_source.as_str(),
        "project_source": scope.project_source.as_str(),
        "marker": scope.marker.as_ref().map(|p| p.display().to_string()),
        "capture": scope.capture.state_str(),
        "warnings": scope.warnings,
        "strategy": scope.strategy.as_str(),
        "settings": {
            "drop_subagent_captures": s.drop_subagent_captures,
            "default_global": s.default_global,
            "inject_on_session_start": s.inject_on_session_start,
            "file_history": s.file_history,
            "max_chars": s.max_chars,
        },
    })
}

/// Human output: one `key  value` line per fact, then the warnings. The
/// `capture` line says in words what is captured (`--json` keeps DESIGN
/// §2's one word); `gate` (the switches, when the data dir is known) tells
/// an allowlist install's "nothing" from the default "everything".
pub fn to_text(scope: &Scope, gate: Option<Gate>) -> String {
    let mut out = String::new();
    let mut line = |k: &str, v: String| out.push_str(&format!("{k:<10} {v}\n"));
    line(
        "workspace",
        format!("{} ({})", scope.workspace, scope.workspace_source.as_str()),
    );
    line(
        "project",
        format!("{} ({})", scope.project, scope.project_source.as_str()),
    );
    line(
        "marker",
        scope
            .marker
            .as_ref()
            .map_or("none".to_string(), |p| p.display().to_string()),
    );
    line("strategy", scope.strategy.as_str().to_string());
    let capture = match &scope.capture {
        CaptureConfig::Absent if gate == Some(Gate::NotOptedIn) => {
            "nothing (no marker, and this install captures only projects with a marker or \
             `memhook enable`: allowlist mode)"
                .to_string()
        }
        CaptureConfig::Absent => "everything (no marker, nothing excluded; a .ai-memory.toml \
             with [capture] ignore_paths excludes paths: docs/capture.md)"
            .to_string(),
        CaptureConfig::Inactive { marker, .. } => format!(
            "everything (the marker {} excludes nothing: no [capture] ignore_paths)",
            marker.display()
        ),
        CaptureConfig::Active {
            marker, patterns, ..
        } => format!(
            "active: {} pattern{} exclude{} paths, everything else is captured ({})",
            patterns.len(),
            if patterns.len() == 1 { "" } else { "s" },
            if patterns.len() == 1 { "s" } else { "" },
            marker.display()
        ),
        CaptureConfig::Invalid { marker, .. } => {
            format!(
                "invalid, fail closed: file and shell tool events are kept without their \
                 content and the agent's own words not at all; prompts are still captured \
                 ({}; docs/capture.md)",
                marker.display()
            )
        }
    };
    line("capture", capture);
    let s = &scope.settings;
    line(
        "settings",
        format!(
            "drop_subagent_captures={} default_global={} inject_on_session_start={} max_chars={} file_history={}",
            s.drop_subagent_captures, s.default_global, s.inject_on_session_start, s.max_chars, s.file_history
        ),
    );
    for w in &scope.warnings {
        line("warning", w.clone());
    }
    out
}
