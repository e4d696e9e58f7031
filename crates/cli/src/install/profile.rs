//! Per-agent install profiles, read from `installers/agents.toml` (embedded).
//!
//! Everything that differs between agents — where the file lives, which
//! variable relocates it, its shape, the events to wire — is data here, so the
//! installer code has no per-agent branches.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const PROFILES_TOML: &str = include_str!("../../../../installers/agents.toml");

/// How an agent's hook configuration is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// `hooks.<Event> = [{matcher, hooks: [{type, command}]}]` (Claude Code, Codex, Gemini CLI).
    Nested,
    /// `hooks.<Event> = [{type, command, matcher}]` plus `version = 1` (Cursor).
    Flat,
    /// `<Event> = [{matcher, hooks: [{type, command}]}]` at the top level:
    /// the file is the event map itself (Factory Droid's `hooks.json`).
    NestedRoot,
    /// A whole generated file (the OpenCode plugin).
    Plugin,
    /// One executable per event, named after it, in a hooks directory
    /// (`file` names the directory): Cline CLI. memhook writes a small
    /// shell script per event (install/scripts.rs).
    Scripts,
}

/// File format of an MCP configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum McpFormat {
    Json,
    Toml,
}

/// How an MCP server entry is spelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum McpStyle {
    /// `{"command": exe, "args": [...]}`.
    CommandArgs,
    /// `{"type": "local", "command": [exe, ...], "enabled": true}` (OpenCode).
    CommandArray,
}

/// Where a file lives: `$dir_env` (when set and not blank), else
/// `$HOME/<dir_default>` (or `$XDG_CONFIG_HOME/<dir_default>` when `xdg`).
#[derive(Debug, Clone, Deserialize)]
pub struct Location {
    #[serde(default)]
    pub dir_env: String,
    pub dir_default: String,
    #[serde(default)]
    pub xdg: bool,
    pub file: String,
}

/// What the agent's own reader accepts in a JSON file beyond strict JSON
/// (checked against each real CLI; see docs/install.md). memhook reads and
/// edits exactly this dialect and refuses anything the agent would refuse.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JsonSyntax {
    /// `//` and `/* */` comments.
    #[serde(default)]
    pub comments: bool,
    /// A comma after the last member of an object or array.
    #[serde(default)]
    pub trailing_commas: bool,
    /// A UTF-8 byte-order mark before the text.
    #[serde(default)]
    pub bom: bool,
}

#[derive(Debug, Clone, Deserialize)]
pub struct McpProfile {
    #[serde(flatten)]
    pub location: Location,
    pub format: McpFormat,
    /// The JSON dialect of the file (ignored for TOML).
    #[serde(default)]
    pub json: JsonSyntax,
    pub table: String,
    pub style: McpStyle,
    #[serde(default)]
    pub stdio_type: bool,
    /// The agent has no MCP client: why, and `install-mcp` refuses it.
    #[serde(default)]
    pub unsupported: Option<String>,
}

/// Something the agent installs by itself, at its start, once memhook's hook
/// is in place (OpenCode npm-installs `@opencode-ai/plugin` into its config
/// dir before it loads any plugin). memhook does not do it for the agent; it
/// says what it costs while it is pending.
#[derive(Debug, Clone, Deserialize)]
pub struct StartupInstall {
    /// A path under the agent's config dir that exists once the agent's own
    /// install has succeeded.
    pub done: String,
    /// What a pending install costs and how to avoid it; `{dir}` is the
    /// config dir.
    pub note: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Profile {
    pub id: String,
    pub name: String,
    pub shape: Shape,
    #[serde(flatten)]
    pub location: Location,
    /// The JSON dialect of the hook file (strict JSON when absent).
    #[serde(default)]
    pub json: JsonSyntax,
    pub binaries: Vec<String>,
    #[serde(default)]
    pub min_version: Option<String>,
    /// `[native event, memhook event]`, in the order they are written.
    pub events: Vec<[String; 2]>,
    pub context: String,
    pub notice: String,
    /// What `doctor` always says about how this agent loads hooks (Copilot
    /// CLI: repository hooks only in trusted folders).
    #[serde(default)]
    pub note: Option<String>,
    /// The hook file is memhook's own among the user's hook files in one
    /// directory: uninstall deletes it, and the directories install made
    /// for it, once nothing but memhook's entries was in it.
    #[serde(default)]
    pub own_file: bool,
    #[serde(default)]
    pub startup_install: Option<StartupInstall>,
    /// For a `plugin` shape: which generated file (`hooks/<template>/`):
    /// the OpenCode plugin when absent, `pi` for the pi extension.
    #[serde(default)]
    pub template: Option<String>,
    pub mcp: McpProfile,
}

#[derive(Deserialize)]
struct ProfileFile {
    agent: Vec<Profile>,
}

/// Every profile, in the order of `installers/agents.toml`.
pub fn all() -> &'static [Profile] {
    static PROFILES: OnceLock<Vec<Profile>> = OnceLock::new();
    PROFILES.get_or_init(|| {
        toml::from_str::<ProfileFile>(PROFILES_TOML)
            .expect("installers/agents.toml is embedded and checked by a unit test")
            .agent
    })
}

/// The profile with this `--agent` id.
pub fn get(id: &str) -> Option<&'static Profile> {
    all().iter().find(|p| p.id == id)
}

impl Location {
    /// The directory this location names, or `None` without a usable HOME.
    pub fn dir(&self) -> Option<PathBuf> {
        if !self.dir_env.is_empty() {
            if let Some(v) = non_blank_env(&self.dir_env) {
                return Some(PathBuf::from(v));
            }
        }
        // HOME, or on Windows USERPROFILE (memhook_core::scope::env::home_var).
        let home = memhook_core::scope::env::home_env().map(PathBuf::from)?;
        let base = if self.xdg {
            non_blank_env("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .unwrap_or_else(|| home.join(".config"))
        } else {
            home
        };
        Some(if self.dir_default.is_empty() {
            base
        } else {
            base.join(&self.dir_default)
        })
    }

    /// The file this location names.
    pub fn path(&self) -> Option<PathBuf> {
        self.dir().map(|d| d.join(&self.file))
    }

    /// How to describe the location in messages (`$CODEX_HOME/hooks.json`, …).
    pub fn describe(&self) -> String {
        let base = if !self.dir_env.is_empty() {
            format!("${}", self.dir_env)
        } else if self.xdg {
            format!("$XDG_CONFIG_HOME/{}", self.dir_default)
        } else {
            format!("~/{}", self.dir_default)
        };
        format!("{}/{}", base.trim_end_matches('/'), self.file)
    }
}

fn non_blank_env(name: &str) -> Option<std::ffi::OsString> {
    std::env::var_os(name).filter(|v| !v.to_string_lossy().trim().is_empty())
}

impl Profile {
    /// Whether this agent looks installed: its config dir exists or one of its
    /// binaries is on PATH.
    pub fn detected(&self) -> bool {
        let dir_exists = self
            .location
            .dir()
            .map(|d| {
                // For plugin agents the config dir is the parent of `plugins/`.
                d.is_dir()
            })
            .unwrap_or(false);
        dir_exists || self.binaries.iter().any(|b| find_on_path(b).is_some())
    }

    /// The agent's config dir for the hook file at `path`: `path` without the
    /// components of the profile's `file` (`…/opencode/plugins/memhook.js`
    /// → `…/opencode`).
    pub fn config_dir_of<'a>(&self, path: &'a Path) -> Option<&'a Path> {
        path.ancestors()
            .nth(Path::new(&self.location.file).components().count())
    }

    /// The agent's own startup install, when it has not succeeded yet for the
    /// hook file at `path`: the config dir and the note, `{dir}` filled in.
    pub fn pending_startup_install(&self, path: &Path) -> Option<(PathBuf, String)> {
        let s = self.startup_install.as_ref()?;
        let dir = self.config_dir_of(path)?;
        if dir.join(&s.done).exists() {
            return None;
        }
        Some((
            dir.to_path_buf(),
            s.note.trim().replace("{dir}", &dir.display().to_string()),
        ))
    }

    /// The native event names, in order.
    pub fn native_events(&self) -> impl Iterator<Item = &str> {
        self.events.iter().map(|e| e[0].as_str())
    }
}

/// The first executable called `name` on PATH.
pub fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_profiles_parse_and_cover_every_agent() {
        let ids: Vec<&str> = all().iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "claude-code",
                "codex",
                "opencode",
                "gemini-cli",
                "cursor",
                "qwen-code",
                "copilot",
                "kilo",
                "droid",
                "openhands",
                "pi",
                "cline"
            ]
        );
    }

    /// Every event wired is one the hook understands, and the native name
    /// and the `--event` name mean the same thing to it.
    #[test]
    fn every_wired_event_parses_in_the_hook() {
        use memhook_core::event::EventKind;
        for p in all() {
            for [native, ours] in &p.events {
                let kind = EventKind::parse(ours);
                assert_ne!(kind, EventKind::Other, "{}: {ours}", p.id);
                assert_eq!(
                    EventKind::parse(native),
                    kind,
                    "{}: {native} vs {ours}",
                    p.id
                );
            }
        }
    }

    /// OpenCode's startup install is checked in the config dir that holds
    /// `plugins/`, wherever the plugin file is (`--config-file` too); only
    /// the agents that load OpenCode plugins (OpenCode, Kilo CLI) have one.
    #[test]
    fn startup_install_is_checked_in_the_plugins_config_dir() {
        let oc = get("opencode").unwrap();
        let t = tempfile::tempdir().unwrap();
        let cfg = t.path().join(".opencode");
        let file = cfg.join("plugins/memhook.js");
        assert_eq!(oc.config_dir_of(&file), Some(cfg.as_path()));
        let (dir, note) = oc.pending_startup_install(&file).unwrap();
        assert_eq!(dir, cfg);
        assert!(
            note.contains(&format!("'{}/.npmrc'", cfg.display())),
            "{note}"
        );
        assert!(!note.contains("{dir}"));
        let done = cfg.join(&oc.startup_install.as_ref().unwrap().done);
        std::fs::create_dir_all(done.parent().unwrap()).unwrap();
        std::fs::write(&done, "{}").unwrap();
        assert_eq!(oc.pending_startup_install(&file), None);
        for p in all() {
            assert_eq!(
                p.startup_install.is_some(),
                p.shape == Shape::Plugin && p.template.is_none(),
                "{}",
                p.id
            );
        }
        let kilo = get("kilo").unwrap().startup_install.as_ref().unwrap();
        assert!(kilo.done.contains("@kilocode/plugin"), "{}", kilo.done);
        assert!(kilo.note.contains("`kilo`"), "{}", kilo.note);
    }

    #[test]
    fn event_lists_match_the_contract() {
        let claude: Vec<&str> = get("claude-code").unwrap().native_events().collect();
        assert_eq!(
            claude,
            [
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "PostToolUseFailure",
                "PreCompact",
                "Stop",
                "SubagentStart",
                "SubagentStop",
                "SessionEnd"
            ]
        );
        assert!(!claude.contains(&"PostToolBatch"));
        // Qwen Code's hooks are Claude Code's; its names are the same.
        let qwen: Vec<&str> = get("qwen-code").unwrap().native_events().collect();
        assert_eq!(qwen, claude);
        let codex: Vec<&str> = get("codex").unwrap().native_events().collect();
        assert_eq!(
            codex,
            [
                "SessionStart",
                "UserPromptSubmit",
                "PreToolUse",
                "PostToolUse",
                "PreCompact",
                "Stop",
                "SessionEnd"
            ]
        );
        let gemini: Vec<&str> = get("gemini-cli").unwrap().native_events().collect();
        assert_eq!(
            gemini,
            [
                "SessionStart",
                "BeforeAgent",
                "BeforeTool",
                "AfterTool",
                "PreCompress",
                "SessionEnd"
            ]
        );
    }

    /// The dialects observed in the real CLIs (docs/install.md, "Comments");
    /// the Gemini CLI one is also exercised by the real-CLI test.
    #[test]
    fn json_dialects_are_what_the_real_clis_read() {
        let d = |id: &str| {
            let j = get(id).unwrap().json;
            (j.comments, j.trailing_commas, j.bom)
        };
        assert_eq!(d("gemini-cli"), (true, false, false));
        assert_eq!(d("claude-code"), (false, false, true));
        assert_eq!(d("codex"), (false, false, false));
        assert_eq!(d("cursor"), (false, false, false));
        assert_eq!(d("qwen-code"), (true, false, true));
        assert_eq!(d("copilot"), (false, false, false));
        let mcp = get("copilot").unwrap().mcp.json;
        assert!(mcp.comments && mcp.trailing_commas && mcp.bom);
        let mcp = get("opencode").unwrap().mcp.json;
        assert!(mcp.comments && mcp.trailing_commas);
        assert_eq!(
            get("gemini-cli").unwrap().mcp.json,
            get("gemini-cli").unwrap().json
        );
    }
}
