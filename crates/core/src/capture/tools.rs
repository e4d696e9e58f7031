//! Each agent's documented tools: family, and the only fields its paths or
//! command are read from. A table per agent; unknown agents get the union.

use serde_json::Value;

use super::ToolFamily;
use crate::event::Agent;

/// Where a tool keeps what it touches.
#[derive(Debug, Clone, Copy)]
pub enum Extract {
    /// File paths: string fields and arrays of strings.
    Paths {
        strings: &'static [&'static str],
        arrays: &'static [&'static str],
    },
    /// A shell command (string, or argv array) and the fields naming the
    /// directory it runs in.
    Shell {
        command: &'static [&'static str],
        base: &'static [&'static str],
    },
    /// A patch whose `*** Add File:`-style headers name the paths (Codex
    /// `apply_patch`); the text is in one of these fields, or is the input.
    Patch { fields: &'static [&'static str] },
    /// File paths in one field of each object of an array (Cline's
    /// `read_files`: `{"files": [{"path": …, "start_line": …}, …]}`).
    ObjectPaths {
        array: &'static str,
        field: &'static str,
    },
    /// Shell commands, each a whole command line, in an array (Cline's
    /// `run_commands`: `{"commands": ["npm test", "git status"]}`).
    ShellLines { commands: &'static [&'static str] },
    /// Nothing to extract (search/list tools are dropped unread; other
    /// tools are not path-attributable).
    Nothing,
}

#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    /// The spelling the agent documents (compared ASCII case-insensitively).
    pub name: &'static str,
    pub family: ToolFamily,
    pub extract: Extract,
}

use ToolFamily::{File, SearchList, Shell, Unknown};

const fn paths(strings: &'static [&'static str]) -> Extract {
    Extract::Paths {
        strings,
        arrays: &[],
    }
}
const fn t(name: &'static str, family: ToolFamily, extract: Extract) -> ToolSpec {
    ToolSpec {
        name,
        family,
        extract,
    }
}
const N: Extract = Extract::Nothing;

const CLAUDE_TOOLS: &[ToolSpec] = &[
    t("Read", File, paths(&["file_path"])),
    t("Write", File, paths(&["file_path"])),
    t("Edit", File, paths(&["file_path"])),
    t("MultiEdit", File, paths(&["file_path"])),
    t("NotebookEdit", File, paths(&["notebook_path"])),
    t("Glob", SearchList, N),
    t("Grep", SearchList, N),
    t("LS", SearchList, N),
    t(
        "Bash",
        Shell,
        Extract::Shell {
            command: &["command"],
            base: &[],
        },
    ),
    t("BashOutput", Unknown, N),
    t("KillShell", Unknown, N),
    t("Agent", Unknown, N),
    t("Task", Unknown, N),
    t("TaskCreate", Unknown, N),
    t("TaskUpdate", Unknown, N),
    t("TaskOutput", Unknown, N),
    t("TodoWrite", Unknown, N),
    t("ToolSearch", Unknown, N),
    t("WebFetch", Unknown, N),
    t("WebSearch", Unknown, N),
    t("ExitPlanMode", Unknown, N),
    t("Skill", Unknown, N),
    t("SlashCommand", Unknown, N),
];

const CODEX_SHELL: Extract = Extract::Shell {
    command: &["command", "cmd"],
    base: &["workdir", "cwd"],
};
const CODEX_TOOLS: &[ToolSpec] = &[
    t(
        "apply_patch",
        File,
        Extract::Patch {
            fields: &["command", "input", "patch"],
        },
    ),
    t("Bash", Shell, CODEX_SHELL),
    t("shell", Shell, CODEX_SHELL),
    t("exec_command", Shell, CODEX_SHELL),
    t("local_shell", Shell, CODEX_SHELL),
    t("update_plan", Unknown, N),
    t("view_image", Unknown, N),
    t("web_search", Unknown, N),
];

const GEMINI_SHELL: Extract = Extract::Shell {
    command: &["command"],
    base: &["dir_path", "directory"],
};
const GEMINI_TOOLS: &[ToolSpec] = &[
    t("read_file", File, paths(&["file_path", "absolute_path"])),
    t("write_file", File, paths(&["file_path"])),
    t("replace", File, paths(&["file_path"])),
    t(
        "read_many_files",
        File,
        Extract::Paths {
            strings: &[],
            arrays: &["paths", "include"],
        },
    ),
    t("glob", SearchList, N),
    t("grep_search", SearchList, N),
    t("search_file_content", SearchList, N),
    t("list_directory", SearchList, N),
    t("run_shell_command", Shell, GEMINI_SHELL),
    t("web_fetch", Unknown, N),
    t("google_web_search", Unknown, N),
    t("save_memory", Unknown, N),
    t("write_todos", Unknown, N),
    t("activate_skill", Unknown, N),
    t("complete_task", Unknown, N),
    t("invoke_agent", Unknown, N),
    t("update_topic", Unknown, N),
];

const OPENCODE_TOOLS: &[ToolSpec] = &[
    t("read", File, paths(&["filePath"])),
    t("write", File, paths(&["filePath"])),
    t("edit", File, paths(&["filePath"])),
    t("multiedit", File, paths(&["filePath"])),
    t(
        "patch",
        File,
        Extract::Patch {
            fields: &["patchText"],
        },
    ),
    t(
        "apply_patch",
        File,
        Extract::Patch {
            fields: &["patchText"],
        },
    ),
    t("glob", SearchList, N),
    t("grep", SearchList, N),
    t("list", SearchList, N),
    t(
        "bash",
        Shell,
        Extract::Shell {
            command: &["command"],
            base: &["workdir"],
        },
    ),
    t("task", Unknown, N),
    t("todowrite", Unknown, N),
    t("todoread", Unknown, N),
    t("webfetch", Unknown, N),
    t("websearch", Unknown, N),
    t("skill", Unknown, N),
    t("question", Unknown, N),
];

/// Cursor's own events carry `file_path` / `command` (+ `cwd`); its
/// `preToolUse` names tools in the same words.
const CURSOR_TOOLS: &[ToolSpec] = &[
    t("Read", File, paths(&["file_path"])),
    t("Write", File, paths(&["file_path"])),
    t("Edit", File, paths(&["file_path"])),
    t("Delete", File, paths(&["file_path"])),
    t("Grep", SearchList, N),
    t("Glob", SearchList, N),
    t("LS", SearchList, N),
    t(
        "Shell",
        Shell,
        Extract::Shell {
            command: &["command"],
            base: &["cwd"],
        },
    ),
];

/// Qwen Code 0.24: the tool schemas its model requests carry, and the
/// real payloads in fixtures/agents/qwen-code/0.24.4/.
const QWEN_TOOLS: &[ToolSpec] = &[
    t("read_file", File, paths(&["file_path"])),
    t("write_file", File, paths(&["file_path"])),
    t("edit", File, paths(&["file_path"])),
    t("notebook_edit", File, paths(&["notebook_path"])),
    t("glob", SearchList, N),
    t("grep_search", SearchList, N),
    t("list_directory", SearchList, N),
    t(
        "run_shell_command",
        Shell,
        Extract::Shell {
            command: &["command"],
            base: &["directory"],
        },
    ),
    t("agent", Unknown, N),
    t("skill", Unknown, N),
    t("todo_write", Unknown, N),
    t("save_memory", Unknown, N),
    t("web_fetch", Unknown, N),
    t("web_search", Unknown, N),
    t("tool_search", Unknown, N),
    t("get_goal", Unknown, N),
    t("update_goal", Unknown, N),
    t("list_agents", Unknown, N),
];

/// Copilot CLI: its PascalCase events name tools as Claude Code does
/// (`Read`, `Write`, `Edit`, `Bash`, `Glob`, `Grep`, `Agent`), its
/// camelCase events by their own names (`view`, `create`, `edit`, `bash`,
/// …); both carry Copilot's arguments, whose file path is `path`.
const COPILOT_SHELL: Extract = Extract::Shell {
    command: &["command"],
    base: &[],
};
const COPILOT_TOOLS: &[ToolSpec] = &[
    t("Read", File, paths(&["path"])),
    t("view", File, paths(&["path"])),
    t("Write", File, paths(&["path"])),
    t("create", File, paths(&["path"])),
    t("Edit", File, paths(&["path"])),
    t("Glob", SearchList, N),
    t("Grep", SearchList, N),
    t("Bash", Shell, COPILOT_SHELL),
    t("powershell", Shell, COPILOT_SHELL),
    t("read_bash", Unknown, N),
    t("write_bash", Unknown, N),
    t("stop_bash", Unknown, N),
    t("list_bash", Unknown, N),
    t("Agent", Unknown, N),
    t("task", Unknown, N),
    t("read_agent", Unknown, N),
    t("write_agent", Unknown, N),
    t("list_agents", Unknown, N),
    t("sql", Unknown, N),
    t("session_store_sql", Unknown, N),
    t("skill", Unknown, N),
    t("fetch_copilot_cli_documentation", Unknown, N),
];

/// Factory Droid 0.225: the tool schemas its model requests carry and the
/// real payloads in fixtures/agents/droid/.
const DROID_TOOLS: &[ToolSpec] = &[
    t("Read", File, paths(&["file_path"])),
    t("Create", File, paths(&["file_path"])),
    t("Edit", File, paths(&["file_path"])),
    t("MultiEdit", File, paths(&["file_path"])),
    t(
        "ApplyPatch",
        File,
        Extract::Patch {
            fields: &["input", "patch"],
        },
    ),
    t("LS", SearchList, N),
    t("Grep", SearchList, N),
    t("Glob", SearchList, N),
    t(
        "Execute",
        Shell,
        Extract::Shell {
            command: &["command"],
            base: &[],
        },
    ),
    t("TodoWrite", Unknown, N),
    t("Task", Unknown, N),
    t("WebSearch", Unknown, N),
    t("FetchUrl", Unknown, N),
    t("Skill", Unknown, N),
    t("ExitSpecMode", Unknown, N),
];

/// OpenHands 1.16: the tools its model requests offer; `file_editor`
/// views, creates and edits the file at `path`.
const OPENHANDS_TOOLS: &[ToolSpec] = &[
    t("file_editor", File, paths(&["path"])),
    t("str_replace_editor", File, paths(&["path"])),
    t(
        "terminal",
        Shell,
        Extract::Shell {
            command: &["command"],
            base: &[],
        },
    ),
    t("task_tracker", Unknown, N),
    t("task", Unknown, N),
    t("finish", Unknown, N),
    t("think", Unknown, N),
];

/// pi 0.73: the tools it offers (`read`, `write`, `edit` with `path`;
/// `bash`; `grep`, `find`, `ls` when enabled).
const PI_TOOLS: &[ToolSpec] = &[
    t("read", File, paths(&["path"])),
    t("write", File, paths(&["path"])),
    t("edit", File, paths(&["path"])),
    t(
        "bash",
        Shell,
        Extract::Shell {
            command: &["command"],
            base: &[],
        },
    ),
    t("grep", SearchList, N),
    t("find", SearchList, N),
    t("ls", SearchList, N),
];

/// Cline CLI 3.0: the tools its model requests offer (read_files,
/// run_commands, editor, submit_and_exit) and the other tools of its
/// default set, which its one-shot runs did not offer.
const CLINE_TOOLS: &[ToolSpec] = &[
    t(
        "read_files",
        File,
        Extract::ObjectPaths {
            array: "files",
            field: "path",
        },
    ),
    t("editor", File, paths(&["path"])),
    t(
        "run_commands",
        Shell,
        Extract::ShellLines {
            commands: &["commands"],
        },
    ),
    t("search_codebase", SearchList, N),
    t("fetch_web_content", Unknown, N),
    t("submit_and_exit", Unknown, N),
    t("ask_question", Unknown, N),
    t("skills", Unknown, N),
];

const AGENT_TABLES: &[&[ToolSpec]] = &[
    CLAUDE_TOOLS,
    CODEX_TOOLS,
    GEMINI_TOOLS,
    OPENCODE_TOOLS,
    CURSOR_TOOLS,
    QWEN_TOOLS,
    COPILOT_TOOLS,
    DROID_TOOLS,
    OPENHANDS_TOOLS,
    PI_TOOLS,
    CLINE_TOOLS,
];

fn table(agent: &Agent) -> &'static [&'static [ToolSpec]] {
    match agent {
        Agent::ClaudeCode => &AGENT_TABLES[0..1],
        Agent::Codex => &AGENT_TABLES[1..2],
        Agent::GeminiCli => &AGENT_TABLES[2..3],
        Agent::OpenCode | Agent::Kilo => &AGENT_TABLES[3..4],
        Agent::Cursor => &AGENT_TABLES[4..5],
        Agent::QwenCode => &AGENT_TABLES[5..6],
        Agent::Copilot => &AGENT_TABLES[6..7],
        Agent::Droid => &AGENT_TABLES[7..8],
        Agent::OpenHands => &AGENT_TABLES[8..9],
        Agent::Pi => &AGENT_TABLES[9..10],
        Agent::Cline => &AGENT_TABLES[10..11],
        Agent::Other(_) => AGENT_TABLES,
    }
}

/// The agent's documented tool of this name (ASCII case-insensitive), if any.
pub fn lookup(agent: &Agent, name: &str) -> Option<&'static ToolSpec> {
    table(agent)
        .iter()
        .flat_map(|t| t.iter())
        .find(|s| s.name.eq_ignore_ascii_case(name))
}

/// Why extraction produced nothing usable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExtractError {
    /// A documented field is missing, has the wrong type, or no path at all.
    Malformed,
}

/// File paths named by `input` per `extract` (raw, not normalised).
pub fn file_paths(extract: &Extract, input: Option<&Value>) -> Result<Vec<String>, ExtractError> {
    let input = input.ok_or(ExtractError::Malformed)?;
    let mut out = Vec::new();
    match extract {
        Extract::Paths { strings, arrays } => {
            let obj = input.as_object().ok_or(ExtractError::Malformed)?;
            for k in *strings {
                match obj.get(*k) {
                    None | Some(Value::Null) => {}
                    Some(Value::String(s)) => out.push(s.clone()),
                    Some(_) => return Err(ExtractError::Malformed),
                }
            }
            for k in *arrays {
                match obj.get(*k) {
                    None | Some(Value::Null) => {}
                    Some(Value::Array(items)) => {
                        for it in items {
                            out.push(it.as_str().ok_or(ExtractError::Malformed)?.to_string());
                        }
                    }
                    Some(_) => return Err(ExtractError::Malformed),
                }
            }
        }
        Extract::Patch { fields } => {
            let text = match input {
                Value::String(s) => Some(s.as_str()),
                Value::Object(o) => fields
                    .iter()
                    .find_map(|f| o.get(*f).and_then(Value::as_str)),
                _ => None,
            }
            .ok_or(ExtractError::Malformed)?;
            out = patch_paths(text);
        }
        Extract::ObjectPaths { array, field } => {
            let items = input
                .get(*array)
                .and_then(Value::as_array)
                .ok_or(ExtractError::Malformed)?;
            for it in items {
                let p = it.get(*field).and_then(Value::as_str);
                out.push(p.ok_or(ExtractError::Malformed)?.to_string());
            }
        }
        Extract::Shell { .. } | Extract::ShellLines { .. } | Extract::Nothing => {
            return Err(ExtractError::Malformed)
        }
    }
    if out.is_empty() {
        return Err(ExtractError::Malformed);
    }
    Ok(out)
}

/// Headers that name a path in an `apply_patch` patch.
const PATCH_HEADERS: &[&str] = &[
    "*** Add File:",
    "*** Update File:",
    "*** Delete File:",
    "*** Move to:",
];

/// Every path named in a patch's headers.
pub fn patch_paths(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            PATCH_HEADERS
                .iter()
                .find_map(|h| l.strip_prefix(h))
                .map(|p| p.trim().to_string())
        })
        .collect()
}

/// A shell tool's command and the directory it runs in.
pub struct ShellCall<'a> {
    pub command: super::shell::Command<'a>,
    pub base: Option<String>,
}

/// The command of a shell tool: a string, or an argv array of strings.
/// `None` when there is no readable command.
pub fn shell_call<'a>(extract: &Extract, input: Option<&'a Value>) -> Option<ShellCall<'a>> {
    use super::shell::Command;
    if let Extract::ShellLines { commands } = extract {
        let obj = input?.as_object()?;
        let lines = commands
            .iter()
            .find_map(|k| obj.get(*k))?
            .as_array()?
            .iter()
            .map(Value::as_str)
            .collect::<Option<Vec<&str>>>()?;
        return Some(ShellCall {
            command: Command::Lines(lines),
            base: None,
        });
    }
    let Extract::Shell { command, base } = extract else {
        return None;
    };
    let obj = input?.as_object()?;
    let cmd = command.iter().find_map(|k| obj.get(*k))?;
    let command = match cmd {
        Value::String(s) => Command::Line(s),
        Value::Array(items) => Command::Argv(
            items
                .iter()
                .map(Value::as_str)
                .collect::<Option<Vec<&str>>>()?,
        ),
        _ => return None,
    };
    let base = base
        .iter()
        .filter_map(|k| obj.get(*k).and_then(Value::as_str))
        .find(|s| !s.trim().is_empty())
        .map(str::to_string);
    Some(ShellCall { command, base })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lookups_are_per_agent_and_case_insensitive() {
        assert_eq!(lookup(&Agent::ClaudeCode, "Read").unwrap().family, File);
        assert_eq!(lookup(&Agent::ClaudeCode, "bash").unwrap().family, Shell);
        assert!(lookup(&Agent::ClaudeCode, "read_file").is_none());
        assert_eq!(lookup(&Agent::GeminiCli, "read_file").unwrap().family, File);
        assert_eq!(lookup(&Agent::Codex, "apply_patch").unwrap().family, File);
        assert_eq!(lookup(&Agent::OpenCode, "list").unwrap().family, SearchList);
        let other = Agent::Other("x".into());
        assert_eq!(lookup(&other, "run_shell_command").unwrap().family, Shell);
        assert!(lookup(&other, "mcp__github__get_file").is_none());
    }

    /// Cline's tools: `read_files` names its paths in an array of objects,
    /// `run_commands` holds whole command lines (each scanned as one).
    #[test]
    fn cline_tools_read_their_array_fields() {
        let c = Agent::Cline;
        let read = lookup(&c, "read_files").unwrap();
        assert_eq!(read.family, File);
        let input = json!({"files": [{"path": "/p/a", "start_line": 2}, {"path": "/p/b"}]});
        assert_eq!(
            file_paths(&read.extract, Some(&input)).unwrap(),
            ["/p/a", "/p/b"]
        );
        for bad in [
            json!({"files": [{"path": 3}]}),
            json!({"files": "/p/a"}),
            json!({"files": []}),
            json!({}),
        ] {
            assert_eq!(
                file_paths(&read.extract, Some(&bad)),
                Err(ExtractError::Malformed),
                "{bad}"
            );
        }
        assert_eq!(lookup(&c, "editor").unwrap().family, File);
        let run = lookup(&c, "run_commands").unwrap();
        assert_eq!(run.family, Shell);
        let input = json!({"commands": ["echo a b", "cat 'x y'"]});
        let call = shell_call(&run.extract, Some(&input)).unwrap();
        let super::super::shell::Command::Lines(lines) = call.command else {
            panic!("not lines");
        };
        assert_eq!(lines, ["echo a b", "cat 'x y'"]);
        assert!(shell_call(&run.extract, Some(&json!({"commands": [1]}))).is_none());
        assert!(shell_call(&run.extract, Some(&json!({"commands": "ls"}))).is_none());
        assert!(lookup(&c, "Read").is_none());
    }

    /// Qwen Code's own names (its real payloads), paths from their
    /// documented fields; the shell runs in `directory`.
    #[test]
    fn qwen_code_tools_are_its_own_table() {
        let q = Agent::QwenCode;
        for (name, family) in [
            ("read_file", File),
            ("write_file", File),
            ("edit", File),
            ("glob", SearchList),
            ("grep_search", SearchList),
            ("run_shell_command", Shell),
            ("agent", Unknown),
        ] {
            assert_eq!(lookup(&q, name).unwrap().family, family, "{name}");
        }
        assert!(lookup(&q, "Read").is_none());
        assert!(lookup(&q, "replace").is_none());
        let e = lookup(&q, "edit").unwrap().extract;
        assert_eq!(
            file_paths(&e, Some(&json!({"file_path": "/p/a", "old_string": "x"}))).unwrap(),
            ["/p/a"]
        );
        assert!(matches!(
            lookup(&q, "run_shell_command").unwrap().extract,
            Extract::Shell {
                base: ["directory"],
                ..
            }
        ));
    }

    #[test]
    fn file_paths_only_from_documented_fields() {
        let e = lookup(&Agent::ClaudeCode, "Read").unwrap().extract;
        assert_eq!(
            file_paths(&e, Some(&json!({"file_path": "a", "path": "b"}))).unwrap(),
            ["a"]
        );
        assert!(file_paths(&e, Some(&json!({"path": "b"}))).is_err());
        assert!(file_paths(&e, Some(&json!({"file_path": 7}))).is_err());
        assert!(file_paths(&e, Some(&json!("a"))).is_err());
        assert!(file_paths(&e, None).is_err());
        let e = lookup(&Agent::GeminiCli, "read_many_files")
            .unwrap()
            .extract;
        assert_eq!(
            file_paths(&e, Some(&json!({"paths": ["a", "b/*.md"]}))).unwrap(),
            ["a", "b/*.md"]
        );
        assert!(file_paths(&e, Some(&json!({"paths": ["a", 1]}))).is_err());
    }

    /// Copilot's file tools keep their path in `path` under both event
    /// spellings (fixtures/agents/copilot/): a Claude-shaped reading
    /// (`file_path`) would find none.
    #[test]
    fn copilot_file_tools_read_path() {
        for name in ["Read", "view", "Write", "create", "Edit", "edit"] {
            let e = lookup(&Agent::Copilot, name).unwrap().extract;
            assert_eq!(
                file_paths(&e, Some(&json!({"path": "/p/a", "file_path": "/p/b"}))).unwrap(),
                ["/p/a"],
                "{name}"
            );
        }
        assert_eq!(lookup(&Agent::Copilot, "bash").unwrap().family, Shell);
        assert_eq!(lookup(&Agent::Copilot, "Grep").unwrap().family, SearchList);
        assert!(lookup(&Agent::Copilot, "read_file").is_none());
    }

    #[test]
    fn apply_patch_headers() {
        let p = "*** Begin Patch\n*** Add File: notes.md\n+x\n*** Update File: src/app.py\n\
                 *** Move to: src/new.py\n@@\n*** Delete File: old.txt\n*** End Patch\n";
        assert_eq!(
            patch_paths(p),
            ["notes.md", "src/app.py", "src/new.py", "old.txt"]
        );
        let e = lookup(&Agent::Codex, "apply_patch").unwrap().extract;
        assert_eq!(
            file_paths(&e, Some(&json!({"command": p}))).unwrap().len(),
            4
        );
        assert_eq!(file_paths(&e, Some(&json!(p))).unwrap().len(), 4);
        assert!(file_paths(&e, Some(&json!({"command": "no headers"}))).is_err());
    }

    #[test]
    fn shell_argv_and_workdir() {
        use crate::capture::shell::Command;
        let e = lookup(&Agent::Codex, "shell").unwrap().extract;
        let input = json!({"command": ["bash", "-lc", "cat a | wc"], "workdir": "/w"});
        let c = shell_call(&e, Some(&input)).unwrap();
        assert_eq!(c.base.as_deref(), Some("/w"));
        assert!(matches!(c.command, Command::Argv(ref a) if a == &["bash", "-lc", "cat a | wc"]));
        assert!(shell_call(&e, Some(&json!({"command": 5}))).is_none());
        assert!(shell_call(&e, Some(&json!({"command": ["a", 5]}))).is_none());
    }
}
