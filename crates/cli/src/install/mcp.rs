//! `memhook install-mcp`: register `memhook mcp` (absolute binary, data dir
//! baked when not the default) in each agent's own MCP configuration, with
//! the same dry-run / apply / ownership rules as the hooks.
//!
//! The entry is always named `memhook`. It is ours when its command is the
//! memhook binary running exactly `[--data-dir D] mcp`; an entry of that name
//! that is not ours is never replaced or removed.

use super::apply::{self, type_name, InstallError, Outcome};
use super::command::{parse_mcp_argv, Baked};
use super::profile::{McpFormat, McpStyle, Profile};
use super::{jsonc, ledger, print_dry_run, report, select, AgentArg};
use crate::cmd::CmdResult;
use clap::Args;
use jsonc_parser::cst::CstInputValue;
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

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

/// The server's name in every agent's config.
pub const SERVER_NAME: &str = "memhook";

pub fn run(args: &InstallMcpArgs, data_dir: Option<&Path>) -> CmdResult {
    let profiles = select(args.agent, args.config_file.is_some())?;
    let data = memhook_core::data_dir::resolve(data_dir)?;
    let several = profiles.len() > 1;
    for p in profiles {
        if let Some(why) = &p.mcp.unsupported {
            if several {
                say!("{}: skipped ({why})", p.name);
                continue;
            }
            return Err(InstallError::Refused(format!("{}: {why}", p.name)).into());
        }
        register(
            p,
            args.config_file.as_deref(),
            &data,
            args.remove,
            args.apply,
        )?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Register (or with `remove`, unregister) `memhook mcp` for one agent:
/// print the diff, or with `apply` write it and say what changed.
pub fn register(
    p: &Profile,
    config_file: Option<&Path>,
    data: &Path,
    remove: bool,
    apply: bool,
) -> Result<(), InstallError> {
    let baked = baked(data)?;
    let path = match config_file {
        Some(f) => super::config_path(p, Some(f))?,
        None => mcp_path(p)?,
    };
    let compute = |cur: Option<&str>| mcp_text(p, &path, &baked, remove, cur);
    let current = apply::read_text(&path)?;
    let (next, _) = compute(current.as_deref())?;
    if !apply {
        print_dry_run(p, &path, current.as_deref(), next.as_deref());
        return Ok(());
    }
    if current.is_none() && remove {
        say!("{}: nothing to remove for {}", path.display(), p.name);
        return Ok(());
    }
    let created = std::cell::RefCell::new(Vec::new());
    let outcome = apply::apply(&path, |cur| {
        let (next, c) = compute(cur)?;
        *created.borrow_mut() = c;
        Ok(next)
    })?;
    if let (
        false,
        Outcome::Updated {
            backup,
            before,
            after,
        },
    ) = (remove, &outcome)
    {
        // Fresh: `before` held no memhook server (removing finds nothing).
        let fresh = || {
            mcp_text(p, &path, &baked, true, Some(before))
                .is_ok_and(|(t, _)| t.as_deref() == Some(before.as_str()))
        };
        let dd = baked.data_dir.as_deref();
        let _ = ledger::after_apply(dd, &mcp_key(&path), before, after, backup, fresh);
    }
    if remove {
        if outcome == Outcome::UpToDate {
            say!("{}: nothing to remove for {}", path.display(), p.name);
        } else {
            ledger::forget(baked.data_dir.as_deref(), &mcp_key(&path));
            let _ = memhook_core::mcp_agents::set(data, &p.id, false);
            report(p, &path, &outcome, "MCP server removed");
        }
    } else {
        if !created.borrow().is_empty() && outcome != Outcome::UpToDate {
            let _ = ledger::record(
                baked.data_dir.as_deref(),
                &mcp_key(&path),
                &created.borrow(),
            );
        }
        // Session start reads this to invite the agent to use memory_write.
        let _ = memhook_core::mcp_agents::set(data, &p.id, true);
        report(p, &path, &outcome, "MCP server registered");
        if outcome != Outcome::UpToDate {
            say!("note: restart {} to load the memhook MCP server.", p.name);
        }
    }
    Ok(())
}

/// Whether `memhook mcp` is registered for `p`, as `install-mcp` would
/// register it from this binary with `data_dir`: `Ok(true)` when installing
/// would change nothing, `Ok(false)` when it would add or update the entry.
/// An agent without MCP configuration, or a config that cannot be read or
/// parsed, is an error naming the file.
pub fn registered(p: &Profile, data_dir: &Path) -> Result<bool, InstallError> {
    if let Some(why) = &p.mcp.unsupported {
        return Err(InstallError::Refused(format!("{}: {why}", p.name)));
    }
    let path = mcp_path(p)?;
    let baked = baked(data_dir)?;
    let Some(current) = apply::read_text(&path)? else {
        return Ok(false);
    };
    let (next, _) = mcp_text(p, &path, &baked, false, Some(&current))?;
    Ok(next.as_deref() == Some(current.as_str()))
}

/// What an MCP entry of this binary runs: `memhook [--data-dir D] mcp`.
fn baked(data_dir: &Path) -> Result<Baked, InstallError> {
    Ok(Baked {
        exe: super::current_exe()?,
        data_dir: (!memhook_core::data_dir::is_default(data_dir)).then(|| data_dir.to_path_buf()),
        server_url: None,
        strategy: None,
    })
}

/// The agent's own MCP configuration file.
fn mcp_path(p: &Profile) -> Result<PathBuf, InstallError> {
    p.mcp.location.path().ok_or_else(|| {
        InstallError::Refused(format!(
            "cannot locate {} for {}: HOME is not set; pass --config-file",
            p.mcp.location.describe(),
            p.name
        ))
    })
}

/// The ledger key for an MCP config (distinct from the same file's hooks).
fn mcp_key(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}#mcp", path.display()))
}

/// The new text and the containers created.
fn mcp_text(
    p: &Profile,
    path: &Path,
    baked: &Baked,
    remove: bool,
    current: Option<&str>,
) -> Result<(Option<String>, Vec<String>), InstallError> {
    if remove && current.is_none() {
        return Ok((None, Vec::new()));
    }
    if let Some(before) = current
        .filter(|_| remove)
        .and_then(|c| ledger::restorable(baked.data_dir.as_deref(), &mcp_key(path), c))
    {
        // Still exactly what memhook wrote: the bytes from before.
        return Ok((Some(before), Vec::new()));
    }
    match p.mcp.format {
        McpFormat::Json => json_text(p, path, baked, remove, current),
        McpFormat::Toml => toml_text(p, path, baked, remove, current),
    }
}

/// An MCP entry named like ours that memhook did not write (`exists &&
/// !ours`) is never touched: installing is refused with an error, removing
/// leaves the file as it is (`Ok(false)`) with a note. `Ok(true)`: go on.
fn foreign_entry_allows(
    path: &Path,
    label: &str,
    exists: bool,
    ours: bool,
    remove: bool,
) -> Result<bool, InstallError> {
    if !exists || ours {
        return Ok(true);
    }
    if remove {
        eprintln!(
            "memhook: {}: {label} was not written by memhook; leaving it alone",
            path.display()
        );
        return Ok(false);
    }
    Err(InstallError::Refused(format!(
        "{}: {label} exists and memhook did not write it; rename or remove it and re-run",
        path.display()
    )))
}

fn argv_of_json(entry: &Value, style: McpStyle) -> Option<Vec<String>> {
    let strs = |v: &Value| -> Option<Vec<String>> {
        v.as_array()?
            .iter()
            .map(|x| x.as_str().map(String::from))
            .collect()
    };
    match style {
        McpStyle::CommandArgs => {
            let mut argv = vec![entry.get("command")?.as_str()?.to_string()];
            argv.extend(strs(entry.get("args").unwrap_or(&json!([])))?);
            Some(argv)
        }
        McpStyle::CommandArray => strs(entry.get("command")?),
    }
}

fn json_text(
    p: &Profile,
    path: &Path,
    baked: &Baked,
    remove: bool,
    current: Option<&str>,
) -> Result<(Option<String>, Vec<String>), InstallError> {
    let doc = jsonc::Doc::parse(path, current, p.mcp.json, &p.name)?;
    let root = doc.root();
    let table_key = p.mcp.table.as_str();
    let mut created = Vec::new();
    let table_prop = root.get(table_key);
    let table = match table_prop.as_ref().and_then(|t| t.value()) {
        None => None,
        Some(node) => Some(node.as_object().ok_or_else(|| InstallError::WrongType {
            path: path.to_path_buf(),
            key: table_key.into(),
            expected: "an object",
            found: type_name(&jsonc::value_of(&node)),
        })?),
    };
    let entry = table.as_ref().and_then(|t| t.get(SERVER_NAME));
    let ours = entry
        .as_ref()
        .and_then(|e| e.value())
        .and_then(|e| argv_of_json(&jsonc::value_of(&e), p.mcp.style))
        .and_then(|argv| parse_mcp_argv(&argv))
        .is_some();
    if !foreign_entry_allows(
        path,
        &format!("`{table_key}.{SERVER_NAME}`"),
        entry.is_some(),
        ours,
        remove,
    )? {
        return Ok((current.map(String::from), created));
    }
    if remove {
        let (Some(entry), Some(table), Some(table_prop)) = (entry, table, table_prop) else {
            return Ok((current.map(String::from), created));
        };
        let prune = ledger::created(baked.data_dir.as_deref(), &mcp_key(path))
            .is_none_or(|c| c.iter().any(|k| k == table_key));
        entry.remove();
        if table.properties().is_empty() && prune {
            table_prop.remove();
        }
        return Ok((Some(doc.render()), created));
    }
    let mut argv = vec![baked.exe.to_string_lossy().into_owned()];
    argv.extend(baked.mcp_args());
    // The fields memhook owns, in the order a new entry lists them; fields
    // a user added to the entry (OpenCode's `enabled: false`) stay.
    let mut fields: Vec<(&str, Value, bool)> = Vec::new();
    match p.mcp.style {
        McpStyle::CommandArgs => {
            if p.mcp.stdio_type {
                fields.push(("type", json!("stdio"), true));
            }
            fields.push(("command", json!(argv[0]), true));
            fields.push(("args", json!(argv[1..]), true));
        }
        McpStyle::CommandArray => {
            fields.push(("type", json!("local"), true));
            fields.push(("command", json!(argv), true));
            fields.push(("enabled", json!(true), false));
        }
    }
    let table = table.unwrap_or_else(|| {
        created.push(table_key.to_string());
        root.append(table_key, CstInputValue::Object(Vec::new()))
            .object_value()
            .expect("just appended an object")
    });
    match entry.and_then(|e| e.object_value()) {
        None => {
            let fresh: Map<String, Value> = fields
                .into_iter()
                .map(|(k, v, _)| (k.to_string(), v))
                .collect();
            table.append(SERVER_NAME, jsonc::input(&Value::Object(fresh)));
        }
        Some(obj) => {
            for (key, want, overwrite) in fields {
                match obj.get(key) {
                    None => {
                        obj.append(key, jsonc::input(&want));
                    }
                    Some(prop) if overwrite => {
                        if prop.value().map(|v| jsonc::value_of(&v)) != Some(want.clone()) {
                            prop.set_value(jsonc::input(&want));
                        }
                    }
                    Some(_) => {}
                }
            }
        }
    }
    Ok((Some(doc.render()), created))
}

fn toml_text(
    p: &Profile,
    path: &Path,
    baked: &Baked,
    remove: bool,
    current: Option<&str>,
) -> Result<(Option<String>, Vec<String>), InstallError> {
    use toml_edit::{value, Array, Item, Table};
    let mut doc = apply::parse_toml(path, current)?;
    let table_key = p.mcp.table.as_str();
    let mut created = Vec::new();
    if let Some(item) = doc.get(table_key) {
        if !item.is_table_like() {
            return Err(InstallError::WrongType {
                path: path.to_path_buf(),
                key: table_key.into(),
                expected: "a table",
                found: "not a table",
            });
        }
    }
    let existing_argv = doc
        .get(table_key)
        .and_then(|t| t.get(SERVER_NAME))
        .map(|e| {
            let mut argv: Vec<String> = e
                .get("command")
                .and_then(|c| c.as_str())
                .map(|c| vec![c.to_string()])
                .unwrap_or_default();
            if let Some(a) = e.get("args").and_then(|a| a.as_array()) {
                argv.extend(a.iter().filter_map(|x| x.as_str().map(String::from)));
            }
            argv
        });
    let exists = existing_argv.is_some();
    let ours = existing_argv.as_deref().and_then(parse_mcp_argv).is_some();
    if !foreign_entry_allows(
        path,
        &format!("[{table_key}.{SERVER_NAME}]"),
        exists,
        ours,
        remove,
    )? {
        return Ok((current.map(String::from), created));
    }
    if remove {
        if !ours {
            return Ok((current.map(String::from), created));
        }
        let prune = ledger::created(baked.data_dir.as_deref(), &mcp_key(path))
            .is_none_or(|c| c.iter().any(|k| k == table_key));
        let t = doc[table_key].as_table_like_mut().expect("checked");
        t.remove(SERVER_NAME);
        if t.is_empty() && prune {
            doc.remove(table_key);
        }
    } else {
        if doc.get(table_key).is_none() {
            let mut t = Table::new();
            t.set_implicit(true);
            doc.insert(table_key, Item::Table(t));
            created.push(table_key.to_string());
        }
        let t = doc[table_key].as_table_like_mut().expect("checked");
        if t.get(SERVER_NAME).is_none() {
            t.insert(SERVER_NAME, Item::Table(Table::new()));
        }
        let entry = t.get_mut(SERVER_NAME).expect("inserted");
        let mut args = Array::new();
        for a in baked.mcp_args() {
            args.push(a);
        }
        let want_cmd = baked.exe.to_string_lossy().into_owned();
        if entry.get("command").and_then(|c| c.as_str()) != Some(want_cmd.as_str()) {
            entry["command"] = value(want_cmd);
        }
        let have: Option<Vec<String>> = entry.get("args").and_then(|a| a.as_array()).map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        });
        if have.as_deref() != Some(&baked.mcp_args()[..]) {
            entry["args"] = value(args);
        }
    }
    let text = doc.to_string();
    if Some(text.as_str()) == current {
        return Ok((current.map(String::from), created));
    }
    Ok((Some(text), created))
}
