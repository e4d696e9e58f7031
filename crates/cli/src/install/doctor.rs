//! `memhook doctor`: per agent, is memhook installed, does the installed
//! command point to this binary, (Codex) do its hooks still await trust, and
//! (OpenCode) is the agent's own startup install still pending.
//!
//! Codex trust: with the `codex` binary on PATH, doctor asks Codex itself
//! (`codex app-server`, JSON-RPC `hooks/list`, bounded) for each hook's
//! `trustStatus`. Without it, it reads `[hooks.state."<file>:<event>:<i>:<j>"]
//! trusted_hash` in `$CODEX_HOME/config.toml`; the hash covers the handler
//! definition in a way memhook does not reproduce, so a recorded hash is
//! reported as "recorded, not verified".

use super::command::OwnedHook;
use super::profile::{self, Profile, Shape};
use super::{apply, config_path, hooks_json, jsonc, plugin};
use crate::cmd::CmdResult;
use clap::Args;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug, Args)]
pub struct DoctorArgs {
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// How long doctor waits for `codex app-server` to list hooks.
const CODEX_PROBE_TIMEOUT: Duration = Duration::from_secs(15);

pub fn run(args: &DoctorArgs, data_dir: Option<&Path>) -> CmdResult {
    // The binary hook commands run: `memhook` (this is `memhook-cli`).
    let me = super::current_exe().ok();
    let data = memhook_core::data_dir::resolve(data_dir).ok();
    let seen = data.as_deref().map(last_seen).unwrap_or_default();
    let mut reports = Vec::new();
    let mut problems = 0;
    for p in profile::all() {
        let mut r = check(p, me.as_deref());
        usage(p, &mut r, data.as_deref(), &seen);
        problems += r["problems"].as_array().map_or(0, Vec::len);
        reports.push(r);
    }
    if args.json {
        say!("{}", json!({"version": 1, "agents": reports}));
    } else {
        for r in &reports {
            print_text(r);
        }
    }
    Ok(if problems == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn check(p: &Profile, me: Option<&Path>) -> Value {
    let mut problems: Vec<String> = Vec::new();
    let path = match config_path(p, None) {
        Ok(path) => path,
        Err(e) => {
            return json!({"agent": p.id, "name": p.name, "file": null, "installed": false,
                          "problems": [e.to_string()]})
        }
    };
    let text = match p.shape {
        // A hooks directory: its scripts are read below.
        Shape::Scripts => Ok(None),
        _ => apply::read_text(&path),
    };
    let text = match text {
        Ok(t) => t,
        Err(e) => {
            return json!({"agent": p.id, "name": p.name, "file": path, "installed": false,
                          "problems": [e.to_string()]})
        }
    };
    let owned: Vec<OwnedHook> = match (p.shape, text.as_deref()) {
        (Shape::Scripts, _) => super::scripts::owned_hooks(p, &path),
        (_, None) => Vec::new(),
        (Shape::Plugin, Some(t)) => plugin::baked_of(t, &p.id)
            .map(|baked| {
                vec![OwnedHook {
                    baked,
                    event: "*".into(),
                    agent: p.id.clone(),
                }]
            })
            .unwrap_or_default(),
        (_, Some(t)) => match jsonc::Doc::parse(&path, Some(t), p.json, &p.name) {
            Ok(doc) => hooks_json::owned_hooks(&doc.value(), p.shape),
            Err(e) => {
                problems.push(e.to_string());
                Vec::new()
            }
        },
    };
    let installed = !owned.is_empty();
    let expected = p.events.len();
    let wired = if p.shape == Shape::Plugin {
        if installed {
            expected
        } else {
            0
        }
    } else {
        owned.len()
    };
    let binaries: Vec<PathBuf> = dedup(owned.iter().map(|o| o.baked.exe.clone()).collect());
    let points_here = installed && me.is_some_and(|me| binaries.iter().all(|b| same_file(b, me)));
    if installed {
        if !points_here {
            let here = me.map_or_else(
                || "this binary".to_string(),
                |m| format!("this binary ({})", m.display()),
            );
            problems.push(format!(
                "hooks run {}, not {here}; re-run `memhook install-hooks --agent {} --apply` from the binary you want",
                binaries.iter().map(|b| b.display().to_string()).collect::<Vec<_>>().join(", "),
                p.id
            ));
        }
        for b in &binaries {
            if !b.is_file() {
                problems.push(format!(
                    "{} does not exist: the hooks cannot run",
                    b.display()
                ));
            }
        }
        if p.shape != Shape::Plugin && wired < expected {
            problems.push(format!(
                "{wired} of {expected} events wired; re-run `memhook install-hooks --agent {} --apply`",
                p.id
            ));
        }
    }
    let first = owned.first().map(|o| &o.baked);
    let trust = if p.id == "codex" && installed {
        let t = codex_trust(&path, &owned);
        if t["status"] != "trusted" {
            problems.push(format!(
                "Codex hooks await trust ({}): open `codex`, type /hooks and trust memhook's hooks",
                t["status"].as_str().unwrap_or("unknown")
            ));
        }
        t
    } else {
        Value::Null
    };
    // What the agent installs by itself before it runs memhook's hook (OpenCode:
    // @opencode-ai/plugin); pending is not a memhook problem, but it costs time.
    let startup_install = match &p.startup_install {
        Some(s) if installed => match p.pending_startup_install(&path) {
            Some((dir, note)) => {
                json!({"status": "pending", "dir": dir, "done": s.done, "note": note})
            }
            None => json!({"status": "done", "dir": p.config_dir_of(&path), "done": s.done}),
        },
        _ => Value::Null,
    };
    json!({
        "agent": p.id,
        "name": p.name,
        "file": path,
        "detected": p.detected(),
        "installed": installed,
        "events_wired": wired,
        "events_expected": expected,
        "binaries": binaries,
        "points_to_this_binary": points_here,
        "data_dir": first.and_then(|b| b.data_dir.clone()),
        "server_url": first.and_then(|b| b.server_url.clone()),
        "project_strategy": first.and_then(|b| b.strategy.clone()),
        "context": p.context,
        "note": p.note.as_deref().map(str::trim),
        "codex_trust": trust,
        "startup_install": startup_install,
        "problems": problems,
    })
}

/// When each agent's newest session last saw an event, from the embedded
/// store of `data_dir` (empty when nothing was stored there; never creates
/// a store).
fn last_seen(data_dir: &Path) -> Vec<(String, u64)> {
    crate::status::open_store(data_dir)
        .ok()
        .flatten()
        .and_then(|s| s.last_seen_by_agent().ok())
        .unwrap_or_default()
}

/// What a person checks after installing: is the agent's program on PATH,
/// is `memhook mcp` registered with it, and has memhook seen an event from
/// it. None of these is a problem (exit code): they say what to do next.
fn usage(p: &Profile, r: &mut Value, data_dir: Option<&Path>, seen: &[(String, u64)]) {
    let program = p.binaries.iter().find_map(|b| profile::find_on_path(b));
    r["program"] = json!(program);
    r["mcp"] = match data_dir.map(|d| super::mcp::registered(p, d)) {
        Some(Ok(true)) => json!("registered"),
        Some(Ok(false)) => json!("not registered"),
        Some(Err(e)) => json!(format!("unknown: {e}")),
        None => json!("unknown: no data dir"),
    };
    let to_server = r["server_url"].is_string();
    r["last_event"] = match seen.iter().find(|(a, _)| *a == p.id) {
        Some((_, ms)) => json!(memhook_core::timefmt::rfc3339_ms(*ms)),
        None => Value::Null,
    };
    r["last_event_local"] = match seen.iter().find(|(a, _)| *a == p.id) {
        Some((_, ms)) => json!(memhook_core::timefmt::local_text(*ms)),
        None => Value::Null,
    };
    r["delivers_to_server"] = json!(to_server);
}

fn dedup(mut v: Vec<PathBuf>) -> Vec<PathBuf> {
    v.sort();
    v.dedup();
    v
}

fn same_file(a: &Path, b: &Path) -> bool {
    a == b
        || match (a.canonicalize(), b.canonicalize()) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
}

fn print_text(r: &Value) {
    let name = r["name"].as_str().unwrap_or("");
    let file = r["file"].as_str().unwrap_or("?");
    let installed = r["installed"] == true;
    say!("{name} ({})", r["agent"].as_str().unwrap_or(""));
    say!("  file:      {file}");
    if installed {
        say!(
            "  installed: yes ({} of {} events)",
            r["events_wired"],
            r["events_expected"]
        );
        let bins: Vec<&str> = r["binaries"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        say!(
            "  binary:    {}{}",
            bins.join(", "),
            if r["points_to_this_binary"] == true {
                " (this binary)"
            } else {
                " (NOT this binary)"
            }
        );
        say!(
            "  data dir:  {}",
            r["data_dir"].as_str().unwrap_or("default")
        );
        say!(
            "  delivery:  {}",
            r["server_url"].as_str().unwrap_or("embedded store")
        );
    } else {
        say!(
            "  installed: no{}",
            if r["detected"] == true {
                " (agent found on this machine)"
            } else {
                ""
            }
        );
    }
    let id = r["agent"].as_str().unwrap_or("");
    match r["program"].as_str() {
        Some(program) => say!("  program:   {program}"),
        None => say!(
            "  program:   not on PATH{}",
            if installed {
                " (the hooks run when the agent runs; check PATH if you expected it here)"
            } else {
                ""
            }
        ),
    }
    match r["mcp"].as_str() {
        Some("registered") => say!("  mcp:       registered (memory_search, memory_read, memory_write)"),
        Some("not registered") => say!(
            "  mcp:       not registered; `memhook install-mcp --agent {id} --apply` gives it its project memory as tools"
        ),
        Some(other) => say!("  mcp:       {other}"),
        None => {}
    }
    if installed {
        match (
            r["last_event_local"].as_str(),
            r["delivers_to_server"] == true,
        ) {
            (Some(at), _) => say!("  last seen: {at} (the newest session's last event)"),
            (None, true) => say!("  last seen: not known here (the hooks deliver to a server)"),
            (None, false) => say!(
                "  last seen: no event yet; start a session of {} to see memhook record it",
                r["name"].as_str().unwrap_or(id)
            ),
        }
    }
    if let Some(note) = r["note"].as_str() {
        let indent = "\n             ";
        say!("  note:      {}", note.replace('\n', indent));
    }
    if let Some(t) = r["codex_trust"].as_object() {
        say!(
            "  trust:     {} ({})",
            t["status"].as_str().unwrap_or("unknown"),
            t["how"].as_str().unwrap_or("")
        );
    }
    if let Some(s) = r["startup_install"].as_object() {
        let dir = s["dir"].as_str().unwrap_or("?");
        match s["note"].as_str() {
            Some(note) => say!(
                "  startup:   pending: {}/{} is missing\n{}",
                dir,
                s["done"].as_str().unwrap_or(""),
                note.lines()
                    .map(|l| format!("             {l}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
            None => say!("  startup:   done ({dir})"),
        }
    }
    for p in r["problems"].as_array().into_iter().flatten() {
        say!("  problem:   {}", p.as_str().unwrap_or(""));
    }
}

/// Codex's trust state for memhook's hooks in `hooks_file`.
fn codex_trust(hooks_file: &Path, owned: &[OwnedHook]) -> Value {
    if let Some(codex) = profile::find_on_path("codex") {
        if let Some(list) = codex_hooks_list(&codex, hooks_file) {
            let mine: Vec<&Value> = list
                .iter()
                .filter(|h| {
                    h["sourcePath"].as_str() == Some(&hooks_file.to_string_lossy())
                        && h["command"]
                            .as_str()
                            .and_then(super::command::parse_hook_command)
                            .is_some()
                })
                .collect();
            let pending: Vec<String> = mine
                .iter()
                .filter(|h| !matches!(h["trustStatus"].as_str(), Some("trusted" | "managed")))
                .map(|h| {
                    format!(
                        "{} {}",
                        h["eventName"].as_str().unwrap_or("?"),
                        h["trustStatus"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            let status = if mine.is_empty() {
                "not loaded"
            } else if pending.is_empty() {
                "trusted"
            } else if pending.iter().any(|p| p.ends_with("modified")) {
                "modified"
            } else {
                "untrusted"
            };
            return json!({"status": status, "how": "asked codex app-server", "pending": pending});
        }
    }
    // Fall back to the recorded state in config.toml.
    let config = hooks_file.with_file_name("config.toml");
    let recorded = apply::read_text(&config)
        .ok()
        .flatten()
        .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
        .map(|doc| {
            let prefix = format!("{}:", hooks_file.display());
            doc.get("hooks")
                .and_then(|h| h.get("state"))
                .and_then(|s| s.as_table_like())
                .map(|t| {
                    t.iter()
                        .filter(|(k, v)| k.starts_with(&prefix) && v.get("trusted_hash").is_some())
                        .count()
                })
                .unwrap_or(0)
        })
        .unwrap_or(0);
    let status = if recorded >= owned.len() {
        "recorded, not verified"
    } else {
        "untrusted"
    };
    json!({"status": status, "how": format!("read {} (codex not on PATH)", config.display()),
           "pending": []})
}

/// `hooks/list` from `codex app-server`, or `None` when Codex does not
/// answer within the probe timeout.
pub fn codex_hooks_list(codex: &Path, hooks_file: &Path) -> Option<Vec<Value>> {
    let cwd = std::env::current_dir().ok()?;
    let mut child = Command::new(codex)
        .arg("app-server")
        .env("CODEX_HOME", hooks_file.parent()?)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdin = child.stdin.take()?;
    let stdout = child.stdout.take()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let msgs = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"clientInfo": {"name": "memhook-doctor", "version": env!("CARGO_PKG_VERSION")}}}),
        json!({"jsonrpc": "2.0", "method": "initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "hooks/list", "params": {"cwds": [cwd]}}),
    ];
    for m in msgs {
        if writeln!(stdin, "{m}").is_err() {
            break;
        }
    }
    let deadline = Instant::now() + CODEX_PROBE_TIMEOUT;
    let mut result = None;
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        let Ok(line) = rx.recv_timeout(left) else {
            break;
        };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if v["id"] == 2 {
            result = v["result"]["data"].as_array().map(|cwds| {
                cwds.iter()
                    .flat_map(|c| c["hooks"].as_array().cloned().unwrap_or_default())
                    .collect()
            });
            break;
        }
    }
    drop(stdin);
    let _ = child.kill();
    let _ = child.wait();
    result
}

/// `<bin> --version`'s first line, waiting at most 3 s.
pub fn probe_version(bin: &Path) -> Option<String> {
    let mut child = Command::new(bin)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let out = child.wait_with_output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .map(|l| l.trim().to_string())
}
