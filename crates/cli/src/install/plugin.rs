//! The generated OpenCode plugin: rendered from `hooks/opencode/memhook.js`
//! with the agent's id (OpenCode, or a fork that loads OpenCode plugins such
//! as Kilo CLI), the absolute binary and baked flags filled in, and
//! recognised later by its first line and its agent constant (so a user's own
//! `memhook.js`, or another agent's generated one, is never replaced or
//! removed).
//!
//! The plugin is a file memhook owns outright, so an uninstall deletes it and
//! the directories the install created for it (recorded in the install
//! ledger as `dir:<path>` entries) once they are empty, and an update keeps
//! no backup of the previous generated file in the agent's plugin dir.

use super::command::{parse_hook_argv, Baked};
use std::path::{Path, PathBuf};

const TEMPLATE: &str = include_str!("../../../../hooks/opencode/memhook.js");
/// The pi extension (`template = "pi"` in the profile).
const PI_TEMPLATE: &str = include_str!("../../../../hooks/pi/memhook.js");

/// The template of `agent`'s generated file: its profile's `template`
/// (the OpenCode plugin unless it names another).
fn template(agent: &str) -> &'static str {
    match super::profile::get(agent).and_then(|p| p.template.as_deref()) {
        Some("pi") => PI_TEMPLATE,
        _ => TEMPLATE,
    }
}
const ARGV_SLOT: &str = "__MEMHOOK_ARGV__";
const AGENT_SLOT: &str = "__MEMHOOK_AGENT__";
const ARGV_PREFIX: &str = "const MEMHOOK = ";

/// `text` (of the template) with `agent` (a profile id) filled in.
fn for_agent(text: &str, agent: &str) -> String {
    text.replace(AGENT_SLOT, agent)
}

/// The first line of the plugin generated for `agent`.
fn banner(agent: &str) -> String {
    for_agent(template(agent).lines().next().unwrap_or_default(), agent)
}

/// The line that names the agent the plugin reports as.
fn agent_line(agent: &str) -> String {
    format!("const AGENT = \"{agent}\";")
}

/// The plugin source for `agent` (a profile id) and these baked settings.
pub fn render(agent: &str, baked: &Baked) -> String {
    // Everything but `--agent`/`--event`, which the plugin appends per call.
    let mut argv = vec![baked.exe.to_string_lossy().into_owned()];
    let mut args = baked.hook_args("E", "A");
    // hook_args = [globals.., hook, --event, E, --agent, A, extras..]
    let hook_at = args
        .iter()
        .position(|a| a == "hook")
        .expect("hook subcommand");
    args.drain(hook_at + 1..hook_at + 5);
    argv.extend(args);
    let json = serde_json::to_string(&argv).expect("strings serialise");
    for_agent(template(agent), agent).replacen(ARGV_SLOT, &json, 1)
}

/// Whether `text` is a plugin memhook generated for `agent` (banner and
/// agent constant).
pub fn is_ours(text: &str, agent: &str) -> bool {
    let line = agent_line(agent);
    text.lines().next() == Some(banner(agent).as_str()) && text.lines().any(|l| l.trim() == line)
}

/// The settings baked into a plugin generated for `agent`, when it is ours
/// and intact.
pub fn baked_of(text: &str, agent: &str) -> Option<Baked> {
    if !is_ours(text, agent) {
        return None;
    }
    let line = text.lines().find_map(|l| l.strip_prefix(ARGV_PREFIX))?;
    let mut argv: Vec<String> = serde_json::from_str(line.trim_end().strip_suffix(';')?).ok()?;
    argv.extend(["--agent", agent, "--event", "x"].map(String::from));
    parse_hook_argv(&argv).map(|o| o.baked)
}

/// Prefix of a ledger entry naming a directory an install created.
const DIR_ENTRY: &str = "dir:";

/// Ledger entries for the directories that do not exist yet above `file`
/// (which an apply will create), deepest first.
pub fn dirs_to_create(file: &Path) -> Vec<String> {
    file.ancestors()
        .skip(1)
        .take_while(|d| !d.as_os_str().is_empty() && std::fs::symlink_metadata(d).is_err())
        .map(|d| format!("{DIR_ENTRY}{}", d.display()))
        .collect()
}

/// The directories named by `entries` (from [`dirs_to_create`]) that hold
/// nothing once `file` is gone (and the deeper ones with it), deepest first:
/// what an uninstall removes after deleting `file`.
pub fn dirs_emptied_without(file: &Path, entries: &[String]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = entries
        .iter()
        .filter_map(|e| e.strip_prefix(DIR_ENTRY).map(PathBuf::from))
        .collect();
    dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
    let mut gone = vec![file.to_path_buf()];
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        if rd.flatten().all(|e| gone.contains(&e.path())) {
            gone.push(d);
        }
    }
    gone.split_off(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_round_trips_and_is_recognised() {
        let b = Baked {
            exe: PathBuf::from("/opt/my tools/memhook"),
            data_dir: Some(PathBuf::from("/d")),
            server_url: Some("http://127.0.0.1:1".into()),
            strategy: Some("repo-root".into()),
        };
        let src = render("opencode", &b);
        assert!(is_ours(&src, "opencode"));
        assert_eq!(baked_of(&src, "opencode"), Some(b));
        assert!(!src.contains(ARGV_SLOT));
        assert!(!src.contains(AGENT_SLOT));
        // A user's own plugin with the same name is not ours.
        assert!(!is_ours("export const X = async () => ({});\n", "opencode"));
        assert!(!is_ours(
            &src.replace(&agent_line("opencode"), "const AGENT = \"other\";"),
            "opencode"
        ));
    }

    /// One template serves every agent that loads OpenCode plugins: Kilo's
    /// plugin reports as `kilo` (the agent constant and the help lines name
    /// it), and neither agent takes the other's file for its own.
    #[test]
    fn render_fills_in_the_agent() {
        let b = Baked {
            exe: PathBuf::from("/usr/bin/memhook"),
            data_dir: None,
            server_url: None,
            strategy: None,
        };
        let kilo = render("kilo", &b);
        assert!(kilo.contains("const AGENT = \"kilo\";"));
        assert!(kilo
            .lines()
            .next()
            .unwrap()
            .contains("--agent kilo --apply"));
        assert!(!kilo.contains("opencode --apply"));
        assert!(is_ours(&kilo, "kilo"));
        assert_eq!(baked_of(&kilo, "kilo"), Some(b.clone()));
        assert!(!is_ours(&kilo, "opencode"));
        assert!(!is_ours(&render("opencode", &b), "kilo"));
        // pi gets its own extension, recognised as pi's only.
        let pi = render("pi", &b);
        assert!(pi.starts_with("// memhook pi extension."), "{pi}");
        assert!(pi.contains("pi.on(\"tool_call\""));
        assert!(is_ours(&pi, "pi"));
        assert_eq!(baked_of(&pi, "pi"), Some(b.clone()));
        assert!(!is_ours(&pi, "opencode") && !is_ours(&kilo, "pi"));
    }

    #[test]
    fn plugin_handles_every_profile_event() {
        for p in crate::install::profile::all()
            .iter()
            .filter(|p| p.shape == crate::install::profile::Shape::Plugin)
        {
            for e in p.native_events() {
                assert!(
                    template(&p.id).contains(&format!("\"{e}\"")),
                    "{e} ({}) not handled by the plugin",
                    p.id
                );
            }
        }
    }

    #[test]
    fn created_dirs_are_recorded_and_go_only_when_emptied() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("a/b/c/memhook.js");
        let entries = dirs_to_create(&file);
        let dir = |rel: &str| format!("dir:{}", t.path().join(rel).display());
        assert_eq!(entries, [dir("a/b/c"), dir("a/b"), dir("a")]);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        assert!(dirs_to_create(&file).is_empty());
        std::fs::write(&file, "x").unwrap();
        let all = [
            t.path().join("a/b/c"),
            t.path().join("a/b"),
            t.path().join("a"),
        ];
        assert_eq!(dirs_emptied_without(&file, &entries), all);
        // Something of the user's in `a` keeps `a`; `c` and `b` go.
        std::fs::write(t.path().join("a/user.txt"), "x").unwrap();
        assert_eq!(dirs_emptied_without(&file, &entries), all[..2]);
        // Entries that are not directories are ignored.
        assert!(dirs_emptied_without(&file, &["hooks".into()]).is_empty());
    }
}
