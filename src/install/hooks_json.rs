//! Merging memhook's hook entries into a JSON hook config (nested and flat
//! shapes), and taking them out again. Entries memhook does not own keep
//! their place and content; memhook's own are recognised by exact command
//! shape only.

use super::apply::{type_name, InstallError};
use super::command::{parse_hook_command, OwnedHook};
use super::profile::Shape;
use serde_json::{json, Map, Value};
use std::path::Path;

/// Top-level key holding the event map.
const HOOKS: &str = "hooks";

/// Every owned hook command found anywhere under `hooks`.
pub fn owned_hooks(root: &Map<String, Value>, shape: Shape) -> Vec<OwnedHook> {
    let mut found = Vec::new();
    let Some(Value::Object(hooks)) = root.get(HOOKS) else {
        return found;
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

/// Wire `commands` (`[native event, command]`) into `root`. Returns the
/// containers this call created (`hooks`, `hooks.<Event>`, `version`) so an
/// uninstall can prune exactly those.
pub fn install(
    root: &mut Map<String, Value>,
    path: &Path,
    shape: Shape,
    commands: &[(String, String)],
) -> Result<Vec<String>, InstallError> {
    let mut created = Vec::new();
    if shape == Shape::Flat {
        match root.get("version") {
            None => {
                root.insert("version".into(), json!(1));
                created.push("version".into());
            }
            Some(v) if v == &json!(1) => {}
            Some(v) => {
                return Err(InstallError::Refused(format!(
                    "{}: `version` is {v}, memhook only knows version 1 of this format; nothing was written",
                    path.display()
                )))
            }
        }
    }
    if !root.contains_key(HOOKS) {
        root.insert(HOOKS.into(), Value::Object(Map::new()));
        created.push(HOOKS.into());
    }
    let hooks = object_at(root, HOOKS, path)?;
    // Validate every event key we touch before changing anything.
    for (event, _) in commands {
        if let Some(v) = hooks.get(event) {
            if !v.is_array() {
                return Err(wrong(path, &format!("hooks.{event}"), "an array", v));
            }
        }
    }
    let wired: Vec<&str> = commands.iter().map(|(e, _)| e.as_str()).collect();
    // Owned entries under events memhook no longer wires (older versions)
    // are removed; third-party entries there stay.
    let stale: Vec<String> = hooks
        .keys()
        .filter(|k| !wired.contains(&k.as_str()))
        .cloned()
        .collect();
    for key in stale {
        if let Some(Value::Array(entries)) = hooks.get_mut(&key) {
            let had = entries.len();
            remove_owned(entries, shape);
            if entries.is_empty() && had > 0 {
                hooks.remove(&key);
            }
        }
    }
    for (event, command) in commands {
        if !hooks.contains_key(event) {
            hooks.insert(event.clone(), Value::Array(Vec::new()));
            created.push(format!("hooks.{event}"));
        }
        let Some(Value::Array(entries)) = hooks.get_mut(event) else {
            unreachable!("checked above")
        };
        upsert(entries, shape, command);
    }
    Ok(created)
}

/// Take every owned entry out of `root`. A container emptied by the removal
/// is pruned when `prune(key)` says memhook created it. Returns how many
/// handlers were removed.
pub fn uninstall(
    root: &mut Map<String, Value>,
    path: &Path,
    shape: Shape,
    prune: &dyn Fn(&str) -> bool,
) -> Result<usize, InstallError> {
    let Some(v) = root.get(HOOKS) else {
        return Ok(0);
    };
    if !v.is_object() {
        return Err(wrong(path, HOOKS, "an object", v));
    }
    let hooks = object_at(root, HOOKS, path)?;
    let mut removed = 0;
    let keys: Vec<String> = hooks.keys().cloned().collect();
    for key in keys {
        if let Some(Value::Array(entries)) = hooks.get_mut(&key) {
            let n = remove_owned(entries, shape);
            removed += n;
            if n > 0 && entries.is_empty() && prune(&format!("hooks.{key}")) {
                hooks.remove(&key);
            }
        }
    }
    if removed > 0 && hooks.is_empty() && prune(HOOKS) {
        root.remove(HOOKS);
        if shape == Shape::Flat && prune("version") {
            root.remove("version");
        }
    }
    Ok(removed)
}

/// Keep the first owned handler in place with the new command (other fields
/// a user added, such as a timeout, survive), remove every other owned one;
/// append a fresh entry when there was none.
fn upsert(entries: &mut Vec<Value>, shape: Shape, command: &str) {
    let mut kept = false;
    let mut i = 0;
    while i < entries.len() {
        match shape {
            Shape::Flat => {
                if owned(&entries[i]).is_some() {
                    if !kept {
                        entries[i]["command"] = json!(command);
                        kept = true;
                        i += 1;
                    } else {
                        entries.remove(i);
                    }
                    continue;
                }
            }
            _ => {
                if let Some(Value::Array(hs)) = entries[i].get_mut("hooks") {
                    let had = hs.len();
                    let mut j = 0;
                    while j < hs.len() {
                        if owned(&hs[j]).is_some() {
                            if !kept {
                                hs[j]["command"] = json!(command);
                                kept = true;
                                j += 1;
                            } else {
                                hs.remove(j);
                            }
                        } else {
                            j += 1;
                        }
                    }
                    if hs.is_empty() && had > 0 {
                        entries.remove(i);
                        continue;
                    }
                }
            }
        }
        i += 1;
    }
    if !kept {
        entries.push(match shape {
            Shape::Flat => json!({"type": "command", "command": command}),
            _ => json!({"matcher": "", "hooks": [{"type": "command", "command": command}]}),
        });
    }
}

/// Remove owned handlers (and groups they leave empty). Returns how many.
fn remove_owned(entries: &mut Vec<Value>, shape: Shape) -> usize {
    let mut removed = 0;
    entries.retain_mut(|entry| match shape {
        Shape::Flat => {
            let ours = owned(entry).is_some();
            removed += usize::from(ours);
            !ours
        }
        _ => match entry.get_mut("hooks") {
            Some(Value::Array(hs)) => {
                let had = hs.len();
                hs.retain(|h| owned(h).is_none());
                removed += had - hs.len();
                !(hs.is_empty() && had > 0)
            }
            _ => true,
        },
    });
    removed
}

fn object_at<'a>(
    root: &'a mut Map<String, Value>,
    key: &str,
    path: &Path,
) -> Result<&'a mut Map<String, Value>, InstallError> {
    let v = root.get_mut(key).expect("caller checked the key");
    if !v.is_object() {
        return Err(wrong(path, key, "an object", v));
    }
    Ok(v.as_object_mut().expect("checked"))
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
    use super::*;

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

    #[test]
    fn install_keeps_third_party_first_and_is_idempotent() {
        let mut root: Map<String, Value> = serde_json::from_str(
            r#"{"theme":"dark","hooks":{"Stop":[{"matcher":"","hooks":[{"type":"command","command":"notify-send done"}]}]}}"#,
        )
        .unwrap();
        let p = Path::new("/s.json");
        let created = install(&mut root, p, Shape::Nested, &cmds("/b/memhook")).unwrap();
        assert_eq!(created, ["hooks.SessionStart"]);
        let once = root.clone();
        install(&mut root, p, Shape::Nested, &cmds("/b/memhook")).unwrap();
        assert_eq!(root, once);
        let stop = root["hooks"]["Stop"].as_array().unwrap();
        assert_eq!(stop.len(), 2);
        assert_eq!(stop[0]["hooks"][0]["command"], "notify-send done");
        // A moved binary updates in place, no duplicate.
        install(&mut root, p, Shape::Nested, &cmds("/new/memhook")).unwrap();
        assert_eq!(owned_hooks(&root, Shape::Nested).len(), 2);
        assert!(owned_hooks(&root, Shape::Nested)
            .iter()
            .all(|o| o.baked.exe == Path::new("/new/memhook")));
    }

    #[test]
    fn third_party_handler_sharing_our_group_survives() {
        let mut root: Map<String, Value> = serde_json::from_str(
            r#"{"hooks":{"Stop":[{"matcher":"","hooks":[{"type":"command","command":"/b/memhook hook --event Stop --agent claude-code"},{"type":"command","command":"other"}]}]}}"#,
        )
        .unwrap();
        let n = uninstall(&mut root, Path::new("/s"), Shape::Nested, &|_| true).unwrap();
        assert_eq!(n, 1);
        assert_eq!(root["hooks"]["Stop"][0]["hooks"][0]["command"], "other");
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
            let mut root: Map<String, Value> = serde_json::from_str(bad).unwrap();
            let before = root.clone();
            assert!(
                install(&mut root, p, Shape::Nested, &cmds("/b/memhook")).is_err(),
                "{bad}"
            );
            assert_eq!(root, before);
        }
    }
}
