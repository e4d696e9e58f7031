//! The one story every real agent plays, and the row of the table that says
//! how each plays it ([`Agent`]).
//!
//! 1. **Install**: the user's own files are in the agent's config dir;
//!    `install-hooks --apply` (from a path with a space and non-ASCII
//!    characters) writes the hook file there and nothing else.
//! 2. **Session 1**: a prompt that makes the agent use tools (write a file,
//!    read a file under the marker's `[capture] ignore_paths`, run a shell
//!    command); the agent runs memhook's hook for each event it fires.
//! 3. **Captured**: the records in the store are the agent's, in the
//!    marker's scope, and hold the prompt and what the tools did.
//! 4. **Excluded**: no byte of the excluded file, nor its path, is in the
//!    data dir.
//! 5. **Session 2**, whose first model request carries the **briefing**
//!    about session 1.
//! 6. **Uninstall**: `uninstall-hooks --apply` takes out what install made;
//!    the user's files, and what the agent wrote itself, stay byte for byte.
//!
//! An agent's own checks run at one [`Stage`] each.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

use crate::support::deps::agent_cli;
use crate::support::home::World;
use crate::support::model_server::{Api, Mock, Step};

/// One real agent CLI: a row of the table.
pub struct Agent {
    /// memhook's name for it (`install-hooks --agent`, a record's `agent`).
    pub id: &'static str,
    /// Its executable in the CLI prefix.
    pub cli: &'static str,
    /// Its name in messages.
    pub name: &'static str,

    // How to install.
    /// Its config dir, under HOME.
    pub config_dir: &'static str,
    /// The hook file install-hooks writes, under the config dir.
    pub hook_file: &'static str,
    /// How that file runs memhook.
    pub wiring: Wiring,
    /// The user's own files before memhook comes: (path under HOME, text).
    pub users_files: &'static [(&'static str, &'static str)],

    // How to run a session of it against the fake model server.
    /// The model API it talks.
    pub api: Api,
    /// One session: (world, executable, the fake server's port, prompt).
    pub session: fn(&World, &Path, u16, &str) -> Output,
    /// Session 1's prompt; its first word is what session 2's briefing
    /// recalls (unless [`Agent::no_prompt_recall`] says otherwise).
    pub prompt: &'static str,
    /// For an agent that fires no prompt event in the mode the test runs
    /// it (Factory Droid's `droid exec`): no prompt is recorded, and this,
    /// another text of session 1, is what session 2's briefing recalls.
    pub no_prompt_recall: Option<&'static str>,
    /// Session 1's model turns, for the project dir: tool calls, then text.
    pub script: fn(&Path) -> Vec<Step>,
    /// Session 2's model turns, when a text answer does not end it (Cline
    /// ends a run only at its `submit_and_exit` tool, and briefs only after
    /// a tool call); `None`: one text answer.
    pub script_2: Option<fn(&Path) -> Vec<Step>>,
    /// What the `notes.md` session 1 writes holds, when it writes one.
    pub notes: Option<&'static str>,
    /// Which of the requests the fake server received are model turns.
    pub is_turn: fn(&(String, Value)) -> bool,

    // Which events it fires.
    /// The events whose hook session 1 runs (as the hook file names them).
    pub fires: &'static [&'static str],
    /// The event it fires exactly once per tool call, when it is counted.
    pub per_tool_call: Option<&'static str>,

    // What is captured.
    /// Texts session 1's records hold besides the prompt, each as
    /// alternatives (any one will do).
    pub captured: &'static [&'static [&'static str]],

    // How its briefing reaches the model request.
    pub briefing: Briefing,

    /// The agent's own checks, each at one stage of the story.
    pub checks: &'static [Check],

    // Its row of docs/agents.md (agents/conformance.rs).
    /// The arguments that make the program print its version.
    pub version_args: &'static [&'static str],
    /// Where the briefing lands in the model request (what
    /// [`Agent::briefing`] checks), in words.
    pub lands: &'static str,
    /// What the agent does not give memhook, in words.
    pub not_given: &'static str,
}

/// How a hook file runs memhook.
#[derive(Clone, Copy)]
pub enum Wiring {
    /// Settings the agent reads, one `memhook hook --event E --agent A`
    /// command per event, merged into the user's file.
    Settings,
    /// A generated plugin that runs `memhook hook --agent A --event E`.
    Plugin,
    /// One script per event in a hooks directory, each running `memhook
    /// hook --event E --agent A` (the hook file is one of them; its
    /// siblings there are install's too).
    Scripts,
}

impl Wiring {
    /// The arguments a hook call of `event` ends with.
    pub fn call(self, agent: &str, event: &str) -> String {
        match self {
            Wiring::Settings | Wiring::Scripts => format!("hook --event {event} --agent {agent}"),
            Wiring::Plugin => format!("hook --agent {agent} --event {event}"),
        }
    }
    /// What in the hook file names the agent.
    fn names(self, agent: &str) -> String {
        match self {
            Wiring::Settings | Wiring::Scripts => format!("--agent {agent}"),
            Wiring::Plugin => format!("const AGENT = \"{agent}\";"),
        }
    }
}

/// Where the briefing is in the first model request of a session.
pub struct Briefing {
    /// The part of the request body it must be in, as text.
    pub part: fn(&Value) -> String,
    /// What the agent wraps hook context in there, when it says so.
    pub marker: Option<&'static str>,
    /// Which model request of session 2 carries it (0: the first; Cline
    /// sends hook context only after a tool's result).
    pub turn: usize,
}

/// One of an agent's own checks, and when in the story it runs.
pub type Check = (Stage, fn(&Story));

/// When in the story an agent's own check runs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Stage {
    /// install-hooks has written the hook file; [`Story::installed`] is
    /// what it printed.
    Installed,
    /// The fake server for session 1 is up ([`Story::port`]); the session
    /// has not started.
    Session1Ready,
    /// Session 1 ran; [`Story::requests`] are what the model received.
    Session1,
    /// [`Story::records`] are session 1's records.
    Captured,
    /// Session 2 ran and briefed the model; uninstall comes next.
    Uninstalling,
    /// uninstall-hooks has run.
    Uninstalled,
}

/// A story under way: what an agent's checks look at.
pub struct Story {
    pub agent: &'static Agent,
    pub world: World,
    /// The agent CLI.
    pub exe: PathBuf,
    /// What install-hooks printed.
    pub installed: String,
    /// The current fake server's port.
    pub port: u16,
    /// The requests the model received in the last session.
    pub requests: Vec<(String, Value)>,
    /// Session 1's records.
    pub records: Vec<Value>,
}

/// Every entry under a dir by relative path: a file's bytes (a symlink's
/// target), `None` for a directory.
type Tree = BTreeMap<PathBuf, Option<Vec<u8>>>;

fn tree(dir: &Path) -> Tree {
    fn walk(root: &Path, dir: &Path, out: &mut Tree) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_path_buf();
            let Ok(m) = fs::symlink_metadata(&p) else {
                continue;
            };
            if m.is_dir() {
                out.insert(rel, None);
                walk(root, &p, out);
            } else if m.file_type().is_symlink() {
                let to = fs::read_link(&p).unwrap();
                out.insert(rel, Some(to.into_os_string().into_encoded_bytes()));
            } else if let Ok(b) = fs::read(&p) {
                out.insert(rel, Some(b));
            }
        }
    }
    let mut out = Tree::new();
    walk(dir, dir, &mut out);
    out
}

/// The excluded file's text, and its path as tools name it.
const SECRET: [&str; 2] = ["TOPSECRET", "secret/key.txt"];

/// Tell the story of `agent` as test `test` (skipped when its CLI is not
/// installed and this is not CI).
pub fn tell(test: &str, agent: &'static Agent) {
    let Some(exe) = agent_cli(test, agent.cli) else {
        return;
    };
    let world = World::new();
    for (path, text) in agent.users_files {
        let p = world.home().join(path);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
    }
    let mut s = Story {
        agent,
        world,
        exe,
        installed: String::new(),
        port: 0,
        requests: Vec::new(),
        records: Vec::new(),
    };
    let users = tree(&s.config_dir());

    // 1. Install.
    s.installed = s.world.install_via_shim(agent.id);
    s.assert_installed(&users);
    s.checks(Stage::Installed);

    // 2. Session 1.
    let script = (agent.script)(&s.world.proj());
    let turns = script.len();
    let tool_calls = script
        .iter()
        .filter(|step| matches!(step, Step::Tool(..)))
        .count();
    let mock = Mock::start(agent.api, script);
    s.port = mock.port;
    s.checks(Stage::Session1Ready);
    let out = s.session(agent.prompt);
    s.requests = mock.requests();
    s.assert_session_1_ran(&out, turns, tool_calls);
    s.checks(Stage::Session1);

    // 3. Captured.
    s.records = s.world.records();
    s.assert_captured();
    s.checks(Stage::Captured);

    // 4. Excluded.
    s.assert_excluded();

    // 5. Session 2, briefed about session 1.
    let script_2 = agent
        .script_2
        .map_or_else(|| vec![Step::Text("Noted.")], |f| f(&s.world.proj()));
    let mock = Mock::start(agent.api, script_2);
    s.port = mock.port;
    s.session("second session");
    s.requests = mock.requests();
    s.assert_briefed();

    // 6. Uninstall.
    s.checks(Stage::Uninstalling);
    let before = tree(&s.config_dir());
    let out = s
        .world
        .memhook()
        .args(["uninstall-hooks", "--agent", agent.id, "--apply"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    s.assert_uninstalled(&users, &before);
    s.checks(Stage::Uninstalled);

    // 7. Its row of docs/agents.md says what this run saw.
    super::conformance::check_or_update(&s);
}

/// Assert that `agent` ran memhook's hook for each event it fires (the
/// calls log the shim writes), and return the log for further checks.
pub fn assert_hooks_fired(agent: &Agent, calls: &Path) -> String {
    let log = fs::read_to_string(calls)
        .unwrap_or_else(|e| panic!("{} never ran a memhook hook ({e})", agent.name));
    for event in agent.fires {
        let call = agent.wiring.call(agent.id, event);
        assert!(
            log.lines().any(|l| l.ends_with(&call)),
            "{} did not run the {event} hook: {log}",
            agent.name
        );
    }
    log
}

impl Story {
    fn config_dir(&self) -> PathBuf {
        self.world.home().join(self.agent.config_dir)
    }

    /// Whether install wrote `rel` (under the config dir): the hook file,
    /// and for [`Wiring::Scripts`] every file beside it named after one of
    /// the agent's events (the hook files install-hooks wrote).
    fn is_hook_file(&self, rel: &Path) -> bool {
        let hook = Path::new(self.agent.hook_file);
        rel == hook
            || matches!(self.agent.wiring, Wiring::Scripts)
                && rel.parent() == hook.parent()
                && memhook::install::profile::get(self.agent.id).is_some_and(|p| {
                    p.native_events()
                        .any(|e| rel.file_name().is_some_and(|n| n == e))
                })
    }

    fn checks(&self, stage: Stage) {
        for (at, check) in self.agent.checks {
            if *at == stage {
                check(self);
            }
        }
    }

    /// Run one session; it must succeed.
    fn session(&self, prompt: &str) -> Output {
        let out = (self.agent.session)(&self.world, &self.exe, self.port, prompt);
        assert!(
            out.status.success(),
            "{} failed on {prompt:?}: {}\n{}",
            self.agent.name,
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        out
    }

    /// Is `rel` (under the config dir) a backup install-hooks made of the
    /// hook file (`<file>.bak-<time>`)?
    fn is_backup(&self, rel: &Path) -> bool {
        let hook = Path::new(self.agent.hook_file);
        rel.parent() == hook.parent()
            && rel.file_name().is_some_and(|n| {
                n.to_string_lossy().starts_with(&format!(
                    "{}.bak-",
                    hook.file_name().unwrap().to_string_lossy()
                ))
            })
    }

    /// The hook file names the agent and the binary installed from, and
    /// install changed nothing else in the config dir: the user's files
    /// are as they were; new are the hook file, the dirs it needed and a
    /// backup of the user's version of it.
    fn assert_installed(&self, users: &Tree) {
        let a = self.agent;
        let hook = Path::new(a.hook_file);
        let text = fs::read_to_string(self.config_dir().join(hook))
            .unwrap_or_else(|e| panic!("install-hooks wrote no {}: {e}", a.hook_file));
        let installed_from = self.world.shim().to_string_lossy().into_owned();
        for name in [a.wiring.names(a.id), installed_from] {
            assert!(text.contains(&name), "{name:?} is not in {text}");
        }
        let now = tree(&self.config_dir());
        for (rel, was) in users {
            if !self.is_hook_file(rel) {
                assert_eq!(now.get(rel), Some(was), "install changed {rel:?}");
            }
        }
        for rel in now.keys() {
            assert!(
                users.contains_key(rel)
                    || self.is_hook_file(rel)
                    || hook.starts_with(rel)
                    || self.is_backup(rel),
                "install wrote more than the hook file: {rel:?} in {:?}",
                now.keys().collect::<Vec<_>>()
            );
        }
    }

    /// The tools really ran (the model saw the excluded file's text), the
    /// agent made every scripted model turn, and ran memhook's hooks.
    fn assert_session_1_ran(&self, out: &Output, turns: usize, tool_calls: usize) {
        let a = self.agent;
        if let Some(notes) = a.notes {
            assert_eq!(
                fs::read_to_string(self.world.proj().join("notes.md")).unwrap_or_default(),
                notes,
                "the scripted write did not run; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(
            self.requests
                .iter()
                .any(|(_, b)| b.to_string().contains("TOPSECRET-4711")),
            "the scripted read of the excluded file did not run"
        );
        let made = self.requests.iter().filter(|r| (a.is_turn)(r)).count();
        assert!(made >= turns, "expected {turns} scripted turns, got {made}");
        let log = assert_hooks_fired(a, &self.world.hook_calls());
        if let Some(event) = a.per_tool_call {
            let call = a.wiring.call(a.id, event);
            assert_eq!(
                log.lines().filter(|l| l.ends_with(&call)).count(),
                tool_calls,
                "{log}"
            );
        }
    }

    /// Session 1's records: the agent's, in the marker's scope, one prompt,
    /// and what the tools did.
    fn assert_captured(&self) {
        let a = self.agent;
        assert!(!self.records.is_empty(), "nothing was captured");
        for r in &self.records {
            assert_eq!(r["agent"], a.id, "{r}");
            assert_eq!(r["project"], "demo", "not in the project's scope: {r}");
        }
        let prompts: Vec<&Value> = self
            .records
            .iter()
            .filter(|r| r["event"] == "user-prompt")
            .collect();
        let all = self.records_text();
        let recalled = recalled(a);
        let expected = usize::from(a.no_prompt_recall.is_none());
        assert_eq!(
            prompts.len(),
            expected,
            "only the user's prompt is a prompt: {prompts:?}"
        );
        assert!(all.contains(recalled), "{recalled} was not captured: {all}");
        for any in a.captured {
            assert!(
                any.iter().any(|t| all.contains(t)),
                "{any:?} was not captured: {all}"
            );
        }
    }

    /// No record, and no byte of the data dir, holds the excluded file's
    /// text or path.
    fn assert_excluded(&self) {
        let all = self.records_text();
        for needle in SECRET {
            assert!(!all.contains(needle), "{needle} reached the store");
        }
        self.world.assert_no_trace_of_the_excluded_file();
    }

    /// The first model request of session 2 carries the briefing about
    /// session 1, and nothing of the excluded file.
    fn assert_briefed(&self) {
        let a = self.agent;
        let (_, first) = self
            .requests
            .iter()
            .filter(|r| (a.is_turn)(r))
            .nth(a.briefing.turn)
            .unwrap_or_else(|| {
                panic!(
                    "the second session made no model request number {}",
                    a.briefing.turn + 1
                )
            });
        let part = (a.briefing.part)(first);
        if let Some(marker) = a.briefing.marker {
            assert!(
                part.contains(marker),
                "no {marker:?} in the second session's first request: {first}"
            );
        }
        assert!(
            part.contains(recalled(a)),
            "no briefing about session 1 in the second session's first request: {first}"
        );
        assert!(!first.to_string().contains(SECRET[0]));
    }

    /// Uninstall gave the user's files back byte for byte, left what the
    /// agent wrote itself, and took out what install made: the hook file
    /// when there was none before, and the dirs made for it alone.
    fn assert_uninstalled(&self, users: &Tree, before: &Tree) {
        let hook = Path::new(self.agent.hook_file);
        let after = tree(&self.config_dir());
        for (rel, was) in users {
            assert_eq!(
                after.get(rel),
                Some(was),
                "uninstall did not give back {rel:?} as the user had it"
            );
        }
        let made_for_hook = |rel: &Path| self.is_hook_file(rel) || hook.starts_with(rel);
        for (rel, was) in before {
            if !users.contains_key(rel) && !made_for_hook(rel) {
                assert_eq!(after.get(rel), Some(was), "uninstall changed {rel:?}");
            }
        }
        for rel in after.keys() {
            assert!(
                before.contains_key(rel) || self.is_backup(rel),
                "uninstall wrote {rel:?}"
            );
        }
        for rel in before.keys().filter(|r| made_for_hook(r)) {
            if users.contains_key(rel) {
                continue;
            }
            let others = before
                .keys()
                .any(|o| o.starts_with(rel) && o != rel && !made_for_hook(o));
            assert_eq!(
                after.contains_key(rel),
                others,
                "{rel:?}: install made it; uninstall must take it out unless it holds more"
            );
        }
    }

    /// Every record of session 1 as one text, for `contains` checks.
    pub fn records_text(&self) -> String {
        self.records
            .iter()
            .map(Value::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// What session 2's briefing recalls of session 1: its prompt's first
/// word, or the agent's [`Agent::no_prompt_recall`].
fn recalled(a: &Agent) -> &'static str {
    a.no_prompt_recall.unwrap_or_else(|| {
        a.prompt
            .split([' ', ':'])
            .next()
            .expect("a prompt starts with a word")
    })
}
