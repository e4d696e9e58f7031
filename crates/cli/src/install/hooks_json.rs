//! Merging memhook's hook entries into a JSON hook config (nested and flat
//! shapes), and taking them out again, as edits of the file's syntax tree
//! (`jsonc::Doc`). Entries memhook does not own keep their place, content
//! and comments; memhook's own are recognised by exact command shape only.

use super::apply::{type_name, InstallError};
use super::command::{parse_hook_command, OwnedHook};
use super::jsonc::{input, value_of};
use super::profile::Shape;
use jsonc_parser::cst::{CstArray, CstInputValue, CstNode, CstObject};
use serde_json::{json, Map, Value};
use std::path::Path;

/// Top-level key holding the event map.
const HOOKS: &str = "hooks";

/// Every owned hook command found anywhere under `hooks` (the whole
/// document for [`Shape::NestedRoot`]).
pub fn owned_hooks(root: &Map<String, Value>, shape: Shape) -> Vec<OwnedHook> {
    let mut found = Vec::new();
    let hooks = match (shape, root.get(HOOKS)) {
        (Shape::NestedRoot, _) => root,
        (_, Some(Value::Object(hooks))) => hooks,
        _ => return found,
    };
    for entries in hooks.values().filter_map(Value::as_array) {
        for entry in entries {
            for handler in handlers(entry, shape) {
                if let Some(o) = owned(handler) {
                    found.push(o);
                }
            }
        }
    }
    found
}

fn handlers(entry: &Value, shape: Shape) -> Vec<&Value> {
    match shape {
        Shape::Flat => vec![entry],
        _ => entry
            .get("hooks")
            .and_then(Value::as_array)
            .map(|v| v.iter().collect())
            .unwrap_or_default(),
    }
}

fn owned(handler: &Value) -> Option<OwnedHook> {
    let h = handler.as_object()?;
    if h.get("type").is_some_and(|t| t != "command") {
        return None;
    }
    parse_hook_command(h.get("command")?.as_str()?)
}

/// Wire `commands` (`[native event, command]`) into the document's root.
/// Returns the containers this call created (`hooks`, `hooks.<Event>`,
/// `version`) so an uninstall can prune exactly those. New members are
/// appended; memhook's existing handler keeps its place and only its
/// `command` string changes. Nothing is changed when a key has the wrong type.
pub fn install(
    root: &CstObject,
    path: &Path,
    shape: Shape,
    commands: &[(String, String)],
) -> Result<Vec<String>, InstallError> {
    // Validate every key we touch before changing anything.
    let version = root.get("version").and_then(|p| p.value());
    if shape == Shape::Flat {
        if let Some(v) = version.as_ref().map(value_of) {
            if v != json!(1) {
                return Err(InstallError::Refused(format!(
                    "{}: `version` is {v}, memhook only knows version 1 of this format; nothing was written",
                    path.display()
                )));
            }
        }
    }
    let hooks = match root.get(HOOKS).and_then(|p| p.value()) {
        _ if shape == Shape::NestedRoot => Some(root.clone()),
        None => None,
        Some(node) => Some(
            node.as_object()
                .ok_or_else(|| wrong(path, HOOKS, "an object", &value_of(&node)))?,
        ),
    };
    if let Some(hooks) = &hooks {
        for (event, _) in commands {
            if let Some(v) = hooks.get(event).and_then(|p| p.value()) {
                if v.as_array().is_none() {
                    return Err(wrong(
                        path,
                        &event_key(shape, event),
                        "an array",
                        &value_of(&v),
                    ));
                }
            }
        }
    }
    let mut created = Vec::new();
    if shape == Shape::Flat && version.is_none() {
        root.append("version", CstInputValue::Number("1".into()));
        created.push("version".into());
    }
    let hooks = hooks.unwrap_or_else(|| {
        created.push(HOOKS.into());
        root.append(HOOKS, CstInputValue::Object(Vec::new()))
            .object_value()
            .expect("just appended an object")
    });
    let wired: Vec<&str> = commands.iter().map(|(e, _)| e.as_str()).collect();
    // Owned entries under events memhook no longer wires (older versions)
    // are removed; third-party entries there stay.
    for prop in hooks.properties() {
        let stale = prop.name().and_then(|n| n.decoded_value().ok());
        if stale.as_deref().is_some_and(|k| wired.contains(&k)) {
            continue;
        }
        if let Some(entries) = prop.array_value() {
            let had = entries.elements().len();
            remove_owned(&entries, shape);
            if had > 0 && entries.elements().is_empty() {
                prop.remove();
            }
        }
    }
    for (event, command) in commands {
        let entries = match hooks.array_value(event) {
            Some(a) => a,
            None => {
                created.push(event_key(shape, event));
                hooks
                    .append(event, CstInputValue::Array(Vec::new()))
                    .array_value()
                    .expect("just appended an array")
            }
        };
        upsert(&entries, shape, command);
    }
    Ok(created)
}

/// Take every owned entry out of the document's root. A container emptied
/// by the removal is pruned when `prune(key)` says memhook created it.
/// Returns how many handlers were removed.
pub fn uninstall(
    root: &CstObject,
    path: &Path,
    shape: Shape,
    prune: &dyn Fn(&str) -> bool,
) -> Result<usize, InstallError> {
    if shape == Shape::NestedRoot {
        return Ok(uninstall_events(root, shape, prune));
    }
    let Some(hooks_prop) = root.get(HOOKS) else {
        return Ok(0);
    };
    let Some(node) = hooks_prop.value() else {
        return Ok(0);
    };
    let hooks = node
        .as_object()
        .ok_or_else(|| wrong(path, HOOKS, "an object", &value_of(&node)))?;
    let removed = uninstall_events(&hooks, shape, prune);
    if removed > 0 && hooks.properties().is_empty() && prune(HOOKS) {
        hooks_prop.remove();
        if shape == Shape::Flat && prune("version") {
            if let Some(v) = root.get("version") {
                v.remove();
            }
        }
    }
    Ok(removed)
}

/// Take memhook's handlers out of every event of the event map `hooks`,
/// pruning an event's list it emptied when `prune` says memhook created it.
fn uninstall_events(hooks: &CstObject, shape: Shape, prune: &dyn Fn(&str) -> bool) -> usize {
    let mut removed = 0;
    for prop in hooks.properties() {
        let Some(entries) = prop.array_value() else {
            continue;
        };
        let n = remove_owned(&entries, shape);
        removed += n;
        let key = prop
            .name()
            .and_then(|n| n.decoded_value().ok())
            .unwrap_or_default();
        if n > 0 && entries.elements().is_empty() && prune(&event_key(shape, &key)) {
            prop.remove();
        }
    }
    removed
}

/// How the ledger and messages name an event's list: `hooks.<Event>`, or
/// `<Event>` where the file is the event map.
fn event_key(shape: Shape, event: &str) -> String {
    match shape {
        Shape::NestedRoot => event.to_string(),
        _ => format!("{HOOKS}.{event}"),
    }
}

/// Call `f` on every handler of every entry (flat: the entry itself;
/// nested: the members of its `hooks` array), then drop a nested group that
/// `f` emptied.
fn for_each_handler(entries: &CstArray, shape: Shape, mut f: impl FnMut(CstNode)) {
    for entry in entries.elements() {
        if shape == Shape::Flat {
            f(entry);
            continue;
        }
        let Some(group) = entry.as_object().and_then(|o| o.array_value("hooks")) else {
            continue;
        };
        let handlers = group.elements();
        let had = handlers.len();
        handlers.into_iter().for_each(&mut f);
        if had > 0 && group.elements().is_empty() {
            entry.remove();
        }
    }
}

/// Keep the first owned handler in place with the new command (other fields
/// a user added, such as a timeout, survive), remove every other owned one;
/// append a fresh entry when there was none.
fn upsert(entries: &CstArray, shape: Shape, command: &str) {
    let mut kept = false;
    for_each_handler(entries, shape, |h| {
        if owned(&value_of(&h)).is_none() {
            return;
        }
        if kept {
            h.remove();
            return;
        }
        kept = true;
        let cmd = h.as_object().and_then(|o| o.get("command"));
        if let Some(cmd) = cmd.filter(|c| c.value().map(|v| value_of(&v)) != Some(json!(command))) {
            cmd.set_value(CstInputValue::String(command.into()));
        }
    });
    if !kept {
        // Appending a multi-line entry to a one-line list would leave the
        // list's `]` on the last entry's line: lay the list out first.
        if !entries.elements().is_empty() && !entries.to_string().contains('\n') {
            entries.ensure_multiline();
        }
        entries.append(input(&match shape {
            Shape::Flat => json!({"type": "command", "command": command}),
            _ => json!({"matcher": "", "hooks": [{"type": "command", "command": command}]}),
        }));
    }
}

/// Remove owned handlers (and groups they leave empty). Returns how many.
fn remove_owned(entries: &CstArray, shape: Shape) -> usize {
    let mut removed = 0;
    for_each_handler(entries, shape, |h| {
        if owned(&value_of(&h)).is_some() {
            h.remove();
            removed += 1;
        }
    });
    removed
}

fn wrong(path: &Path, key: &str, expected: &'static str, v: &Value) -> InstallError {
    InstallError::WrongType {
        path: path.to_path_buf(),
        key: key.into(),
        expected,
        found: type_name(v),
    }
}

#[cfg(test)]
mod tests {
    use super::super::jsonc::Doc;
    use super::super::profile::JsonSyntax;
    use super::*;

    const JSONC: JsonSyntax = JsonSyntax {
        comments: true,
        trailing_commas: false,
        bom: false,
    };

    fn cmds(exe: &str) -> Vec<(String, String)> {
        ["SessionStart", "Stop"]
            .iter()
            .map(|e| {
                (
                    e.to_string(),
                    format!("{exe} hook --event {e} --agent claude-code"),
                )
            })
            .collect()
    }

    fn doc(text: &str) -> Doc {
        Doc::parse(Path::new("/s.json"), Some(text), JSONC, "A").unwrap()
    }

    /// Factory Droid: the file is the event map. The user's events and
    /// handlers stay; uninstall takes out only what install made.
    #[test]
    fn nested_root_wires_events_at_the_top_level() {
        let orig = r#"{"Stop":[{"matcher":"","hooks":[{"type":"command","command":"notify-send done"}]}]}"#;
        let d = doc(orig);
        let created = install(
            &d.root(),
            Path::new("/h.json"),
            Shape::NestedRoot,
            &cmds("/b/memhook"),
        )
        .unwrap();
        assert_eq!(created, ["SessionStart"]);
        let root = d.value();
        assert!(root.get("hooks").is_none());
        assert_eq!(root["Stop"].as_array().unwrap().len(), 2);
        assert_eq!(root["Stop"][0]["hooks"][0]["command"], "notify-send done");
        assert_eq!(owned_hooks(&root, Shape::NestedRoot).len(), 2);
        // Not under `hooks`: the nested reading of the same file finds none.
        assert!(owned_hooks(&root, Shape::Nested).is_empty());
        let n = uninstall(&d.root(), Path::new("/h.json"), Shape::NestedRoot, &|k| {
            created.iter().any(|c| c == k)
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(
            Value::Object(d.value()),
            serde_json::from_str::<Value>(orig).unwrap()
        );
    }

    fn installed(text: &str, exe: &str) -> (String, Vec<String>) {
        let d = doc(text);
        let created = install(&d.root(), Path::new("/s.json"), Shape::Nested, &cmds(exe)).unwrap();
        (d.render(), created)
    }

    #[test]
    fn install_keeps_third_party_first_and_is_idempotent() {
        let orig = r#"{"theme":"dark","hooks":{"Stop":[{"matcher":"","hooks":[{"type":"command","command":"notify-send done"}]}]}}"#;
        let (once, created) = installed(orig, "/b/memhook");
        assert_eq!(created, ["hooks.SessionStart"]);
        let (twice, created) = installed(&once, "/b/memhook");
        assert_eq!(twice, once);
        assert!(created.is_empty());
        let root = doc(&once).value();
        let stop = root["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[0]["hooks"][0]["command"], "notify-send done");
        // A moved binary updates in place, no duplicate, nothing else moves.
        let (moved, _) = installed(&once, "/new/memhook");
        assert_eq!(moved, once.replace("/b/memhook", "/new/memhook"));
        let root = doc(&moved).value();
        assert_eq!(owned_hooks(&root, Shape::Nested).len(), 2);
    }

    #[test]
    fn uninstall_gives_back_the_commented_original() {
        let orig = "{\r\n  // top\r\n  \"hooks\": { // ours go here\r\n    \"Stop\": [\r\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"notify\"}]} // theirs\r\n    ]\r\n    /* end */\r\n  }\r\n}\r\n";
        let (after, created) = installed(orig, "/b/memhook");
        assert!(after.contains("// ours go here") && after.contains("// theirs"));
        assert!(
            !after.replace("\r\n", "").contains('\n'),
            "LF crept in: {after:?}"
        );
        let d = doc(&after);
        let n = uninstall(&d.root(), Path::new("/s.json"), Shape::Nested, &|k| {
            created.iter().any(|c| c == k)
        })
        .unwrap();
        assert_eq!(n, 2);
        assert_eq!(d.render(), orig);
    }

    #[test]
    fn third_party_handler_sharing_our_group_survives() {
        let d = doc(
            r#"{"hooks":{"Stop":[{"matcher":"","hooks":[{"type":"command","command":"/b/memhook hook --event Stop --agent claude-code"},{"type":"command","command":"other"}]}]}}"#,
        );
        let n = uninstall(&d.root(), Path::new("/s"), Shape::Nested, &|_| true).unwrap();
        assert_eq!(n, 1);
        assert_eq!(
            d.value()["hooks"]["Stop"][0]["hooks"][0]["command"],
            "other"
        );
    }

    #[test]
    fn flat_shape_adds_version_and_takes_it_back() {
        let orig = "{\n  \"other\": true\n}\n";
        let d = doc(orig);
        let created =
            install(&d.root(), Path::new("/h"), Shape::Flat, &cmds("/b/memhook")).unwrap();
        assert_eq!(
            created,
            ["version", "hooks", "hooks.SessionStart", "hooks.Stop"]
        );
        assert_eq!(d.value()["version"], 1);
        assert_eq!(d.value()["hooks"]["Stop"][0]["type"], "command");
        let d = doc(&d.render());
        uninstall(&d.root(), Path::new("/h"), Shape::Flat, &|_| true).unwrap();
        assert_eq!(d.render(), orig);
        let bad = doc(r#"{"version": 2}"#);
        assert!(install(
            &bad.root(),
            Path::new("/h"),
            Shape::Flat,
            &cmds("/b/memhook")
        )
        .is_err());
    }

    // Acceptance check 10: a wrong-typed container is refused.
    #[test]
    fn wrong_types_are_refused() {
        let p = Path::new("/s.json");
        for bad in [
            r#"{"hooks":[]}"#,
            r#"{"hooks":{"Stop":{}}}"#,
            r#"{"hooks":"x"}"#,
        ] {
            let d = doc(bad);
            assert!(
                install(&d.root(), p, Shape::Nested, &cmds("/b/memhook")).is_err(),
                "{bad}"
            );
            assert_eq!(d.render(), bad);
        }
    }
}
