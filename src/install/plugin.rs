//! The generated OpenCode plugin: rendered from `hooks/opencode/memhook.js`
//! with the absolute binary and baked flags filled in, and recognised later by
//! its first line and its agent constant (so a user's own `memhook.js` is
//! never replaced or removed).
//!
//! The plugin is a file memhook owns outright, so an uninstall deletes it and
//! the directories the install created for it (recorded in the install
//! ledger as `dir:<path>` entries) once they are empty, and an update keeps
//! no backup of the previous generated file in the agent's plugin dir.

use super::command::{parse_hook_argv, Baked};
use std::path::{Path, PathBuf};

const TEMPLATE: &str = include_str!("../../hooks/opencode/memhook.js");
const ARGV_SLOT: &str = "__MEMHOOK_ARGV__";
const AGENT_LINE: &str = "const AGENT = \"opencode\";";
const ARGV_PREFIX: &str = "const MEMHOOK = ";

fn banner() -> &'static str {
    TEMPLATE.lines().next().unwrap_or_default()
}

/// The plugin source for these baked settings.
pub fn render(baked: &Baked) -> String {
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
    TEMPLATE.replacen(ARGV_SLOT, &json, 1)
}

/// Whether `text` is a plugin memhook generated (banner and agent constant).
pub fn is_ours(text: &str) -> bool {
    text.lines().next() == Some(banner()) && text.lines().any(|l| l.trim() == AGENT_LINE)
}

/// The settings baked into a generated plugin, when it is ours and intact.
pub fn baked_of(text: &str) -> Option<Baked> {
    if !is_ours(text) {
        return None;
    }
    let line = text.lines().find_map(|l| l.strip_prefix(ARGV_PREFIX))?;
    let mut argv: Vec<String> = serde_json::from_str(line.trim_end().strip_suffix(';')?).ok()?;
    argv.extend(["--agent", "opencode", "--event", "x"].map(String::from));
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
        let src = render(&b);
        assert!(is_ours(&src));
        assert_eq!(baked_of(&src), Some(b));
        assert!(!src.contains(ARGV_SLOT));
        // A user's own plugin with the same name is not ours.
        assert!(!is_ours("export const X = async () => ({});\n"));
        assert!(!is_ours(
            &src.replace(AGENT_LINE, "const AGENT = \"other\";")
        ));
    }

    #[test]
    fn plugin_handles_every_profile_event() {
        let p = crate::install::profile::get("opencode").unwrap();
        for e in p.native_events() {
            assert!(
                TEMPLATE.contains(&format!("\"{e}\"")),
                "{e} not handled by the plugin"
            );
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
