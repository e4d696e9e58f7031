//! The generated OpenCode plugin: rendered from `hooks/opencode/memhook.js`
//! with the absolute binary and baked flags filled in, and recognised later by
//! its first line and its agent constant (so a user's own `memhook.js` is
//! never replaced or removed).

use super::command::{parse_hook_argv, Baked};

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

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
}
