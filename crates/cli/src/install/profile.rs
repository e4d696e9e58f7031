//! Per-agent install profiles, read from `installers/agents.toml` (embedded).
//!
//! Everything that differs between agents — where the file lives, which
//! variable relocates it, its shape, the events to wire — is data here, so the
//! installer code has no per-agent branches.

use serde::Deserialize;
use std::ffi::OsString;
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

/// The home directory the agents themselves read: `HOME`; on Windows the
/// user profile, `USERPROFILE` (then `HOME`), which is what every agent in
/// the table reads there whatever `HOME` says (Node's `os.homedir()`,
/// Bun's, Python's `expanduser`; Codex asks Windows for the profile
/// folder, which `USERPROFILE` names). Git Bash sets `HOME`, usually to
/// the profile but not always, and the hook file must be where the agent
/// looks. Blank counts as unset.
fn agent_home(var: &dyn Fn(&str) -> Option<OsString>, windows: bool) -> Option<OsString> {
    let set = |name: &str| var(name).filter(|v| !v.to_string_lossy().trim().is_empty());
    if windows {
        set("USERPROFILE").or_else(|| set("HOME"))
    } else {
        set("HOME")
    }
}

impl Location {
    /// The directory this location names, or `None` without a usable home.
    pub fn dir(&self) -> Option<PathBuf> {
        self.dir_in(&|n| std::env::var_os(n), cfg!(windows))
    }

    /// [`Location::dir`] with the environment read through `var`, as on
    /// Windows when `windows` (tests run both on any host).
    fn dir_in(&self, var: &dyn Fn(&str) -> Option<OsString>, windows: bool) -> Option<PathBuf> {
        let non_blank = |name: &str| var(name).filter(|v| !v.to_string_lossy().trim().is_empty());
        if !self.dir_env.is_empty() {
            if let Some(v) = non_blank(&self.dir_env) {
                return Some(PathBuf::from(v));
            }
        }
        let home = agent_home(var, windows).map(PathBuf::from)?;
        // XDG rows (OpenCode, Kilo) on Windows too: `%XDG_CONFIG_HOME%`, else
        // `%USERPROFILE%\.config`, never `%APPDATA%` (they use the XDG
        // layout on every platform).
        let base = if self.xdg {
            non_blank("XDG_CONFIG_HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .unwrap_or_else(|| home.join(".config"))
        } else {
            home
        };
        Some(join_components(base, &self.dir_default))
    }

    /// The file this location names.
    pub fn path(&self) -> Option<PathBuf> {
        self.dir().map(|d| join_components(d, &self.file))
    }

    /// How to describe the location in messages (`$CODEX_HOME/hooks.json`, …;
    /// on Windows `%CODEX_HOME%/hooks.json`, `%USERPROFILE%/.claude/…`).
    pub fn describe(&self) -> String {
        self.describe_as(cfg!(windows))
    }

    fn describe_as(&self, windows: bool) -> String {
        let var = |name: &str| {
            if windows {
                format!("%{name}%")
            } else {
                format!("${name}")
            }
        };
        let base = if !self.dir_env.is_empty() {
            var(&self.dir_env)
        } else if self.xdg {
            format!("{}/{}", var("XDG_CONFIG_HOME"), self.dir_default)
        } else if windows {
            format!("{}/{}", var("USERPROFILE"), self.dir_default)
        } else {
            format!("~/{}", self.dir_default)
        };
        format!("{}/{}", base.trim_end_matches('/'), self.file)
    }
}

/// `base` joined with each `/`-separated part of `rel` (the table's
/// spelling), so a Windows path has `\` throughout; an empty `rel` is
/// `base` itself.
fn join_components(base: PathBuf, rel: &str) -> PathBuf {
    rel.split('/')
        .filter(|c| !c.is_empty())
        .fold(base, |b, c| b.join(c))
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
    let pathext = std::env::var_os("PATHEXT");
    find_in(name, &path, pathext.as_deref(), cfg!(windows))
}

/// `PATHEXT` when it is unset or blank.
const DEFAULT_PATHEXT: &str = ".COM;.EXE;.BAT;.CMD";

/// The first executable `name` in the directories of `path`. On Windows
/// (`windows`) what cmd would run: `name` plus each extension of
/// `pathext` in turn (`claude.exe` from the native installer, `claude.cmd`
/// from npm; npm's extensionless `claude` is a shell script Windows
/// cannot start, so it does not count).
fn find_in(
    name: &str,
    path: &std::ffi::OsStr,
    pathext: Option<&std::ffi::OsStr>,
    windows: bool,
) -> Option<PathBuf> {
    let exts: Vec<String> = if windows {
        let list = pathext
            .map(|v| v.to_string_lossy().into_owned())
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_PATHEXT.to_string());
        list.split(';')
            .map(str::trim)
            .filter(|e| e.starts_with('.') && e.len() > 1)
            .map(str::to_string)
            .collect()
    } else {
        vec![String::new()]
    };
    std::env::split_paths(path)
        .flat_map(|d| exts.iter().map(move |e| d.join(format!("{name}{e}"))))
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

    fn env(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |n: &str| {
            pairs
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| OsString::from(v))
        }
    }

    /// A location's file as on Windows (or not) under `var`, with `\`
    /// throughout whatever the host joins with.
    fn file_in(l: &Location, var: &dyn Fn(&str) -> Option<OsString>, windows: bool) -> String {
        let d = l.dir_in(var, windows).unwrap();
        let f = join_components(d, &l.file);
        f.to_string_lossy().replace('/', "\\")
    }

    /// Where each agent's hook file and MCP file are on Windows: under the
    /// user profile, which is where the agents read them there, whatever
    /// Git Bash's `HOME` says; an agent's relocating variable first, as
    /// everywhere. No agent of the table keeps these under `%APPDATA%`
    /// (docs/install.md, "Agents on Windows").
    #[test]
    fn windows_locations_are_where_each_agent_reads_them() {
        let me = env(&[
            ("USERPROFILE", r"C:\Users\me"),
            ("HOME", r"D:\msys\home\me"),
        ]);
        let want = [
            ("claude-code", r".claude\settings.json", r".claude.json"),
            ("codex", r".codex\hooks.json", r".codex\config.toml"),
            (
                "opencode",
                r".config\opencode\plugins\memhook.js",
                r".config\opencode\opencode.json",
            ),
            (
                "gemini-cli",
                r".gemini\settings.json",
                r".gemini\settings.json",
            ),
            ("cursor", r".cursor\hooks.json", r".cursor\mcp.json"),
            ("qwen-code", r".qwen\settings.json", r".qwen\settings.json"),
            (
                "copilot",
                r".copilot\hooks\memhook.json",
                r".copilot\mcp-config.json",
            ),
            (
                "kilo",
                r".config\kilo\plugins\memhook.js",
                r".config\kilo\kilo.json",
            ),
            ("droid", r".factory\hooks.json", r".factory\mcp.json"),
            (
                "openhands",
                r".openhands\hooks.json",
                r".openhands\mcp.json",
            ),
            (
                "pi",
                r".pi\agent\extensions\memhook.js",
                r".pi\agent\mcp.json",
            ),
            (
                "cline",
                r".cline\hooks",
                r".cline\data\settings\cline_mcp_settings.json",
            ),
        ];
        assert_eq!(want.len(), all().len(), "every agent has its row here");
        for (id, hooks, mcp) in want {
            let p = get(id).unwrap();
            let hooks_at = file_in(&p.location, &me, true);
            assert_eq!(hooks_at, format!(r"C:\Users\me\{hooks}"), "{id}");
            let mcp_at = file_in(&p.mcp.location, &me, true);
            assert_eq!(mcp_at, format!(r"C:\Users\me\{mcp}"), "{id}");
            let said = p.location.describe_as(true);
            assert!(
                said.starts_with('%') && !said.contains('$') && !said.contains('~'),
                "{id}: {said}"
            );
        }
        // The relocating variables win, on Windows too.
        let moved = env(&[("USERPROFILE", r"C:\Users\me"), ("CODEX_HOME", r"E:\codex")]);
        let codex = get("codex").unwrap();
        assert_eq!(
            file_in(&codex.location, &moved, true),
            r"E:\codex\hooks.json"
        );
        assert_eq!(codex.location.describe_as(true), "%CODEX_HOME%/hooks.json");
        assert_eq!(
            get("claude-code").unwrap().location.describe_as(true),
            "%CLAUDE_CONFIG_DIR%/settings.json"
        );
        assert_eq!(
            get("gemini-cli").unwrap().location.describe_as(true),
            "%USERPROFILE%/.gemini/settings.json"
        );
        // Without a profile (never on a real Windows): HOME.
        let home_only = env(&[("HOME", r"D:\home\me")]);
        let claude = get("claude-code").unwrap();
        assert_eq!(
            file_in(&claude.location, &home_only, true),
            r"D:\home\me\.claude\settings.json"
        );
        // Elsewhere HOME alone, USERPROFILE means nothing.
        assert_eq!(
            claude.location.dir_in(&me, false),
            Some(PathBuf::from(r"D:\msys\home\me").join(".claude"))
        );
        assert_eq!(
            claude
                .location
                .dir_in(&env(&[("USERPROFILE", "/u")]), false),
            None
        );
        assert_eq!(
            claude.location.describe_as(false),
            "$CLAUDE_CONFIG_DIR/settings.json"
        );
        assert_eq!(
            get("gemini-cli").unwrap().location.describe_as(false),
            "~/.gemini/settings.json"
        );
    }

    /// An agent's binary is found as the platform runs it: on Windows with
    /// an extension of `PATHEXT` (npm's `.cmd` shim, a native `.exe`), never
    /// npm's extensionless shell script; elsewhere by its name.
    #[test]
    fn binaries_are_found_as_the_platform_starts_them() {
        let t = tempfile::tempdir().unwrap();
        let (npm, native) = (t.path().join("npm"), t.path().join("native"));
        std::fs::create_dir_all(&npm).unwrap();
        std::fs::create_dir_all(&native).unwrap();
        for f in [
            npm.join("claude"),
            npm.join("claude.cmd"),
            native.join("codex.exe"),
            npm.join("gemini"),
        ] {
            std::fs::write(&f, "x").unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
            }
        }
        let path = std::env::join_paths([&npm, &native]).unwrap();
        let ext = |s: &'static str| Some(std::ffi::OsStr::new(s));
        // Lower case: the host here may compare names with case.
        let all = ext(".com;.exe;.bat;.cmd");
        assert_eq!(
            find_in("claude", &path, all, true),
            Some(npm.join("claude.cmd"))
        );
        assert_eq!(
            find_in("codex", &path, ext(".exe;.cmd"), true),
            Some(native.join("codex.exe"))
        );
        assert_eq!(find_in("codex", &path, ext(".cmd"), true), None);
        assert_eq!(find_in("gemini", &path, all, true), None);
        if cfg!(windows) {
            // PATHEXT unset or blank: its default, `.COM;.EXE;.BAT;.CMD`.
            for pathext in [None, ext(" ")] {
                let got = find_in("codex", &path, pathext, true).unwrap();
                let got = got.to_string_lossy().to_lowercase();
                assert_eq!(
                    got,
                    native.join("codex.exe").to_string_lossy().to_lowercase()
                );
            }
        }
        assert_eq!(
            find_in("claude", &path, None, false),
            Some(npm.join("claude"))
        );
        assert_eq!(find_in("codex", &path, None, false), None);
    }

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
