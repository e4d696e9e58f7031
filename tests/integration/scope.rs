//! Integration tests for scope: replay `fixtures/scope/cases.json` through the
//! real binary (`memhook show --json`, Mode::Client) and, where a case pins
//! it, through `memhook_core::scope::resolve` in Mode::Hook. The case format is
//! described in the fixture's `_about`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Map, Value};

use crate::support::binaries::memhook;
use crate::support::fixtures::fixture;

/// Keys `memhook show --json` prints, in order (DESIGN §2, then what the text
/// output shows too).
const JSON_KEYS: [&str; 9] = [
    "workspace",
    "project",
    "workspace_source",
    "project_source",
    "marker",
    "capture",
    "warnings",
    "strategy",
    "settings",
];

fn load_cases() -> Vec<Value> {
    let text = std::fs::read_to_string(fixture("scope/cases.json")).expect("read cases.json");
    let doc: Value = serde_json::from_str(&text).expect("cases.json is JSON");
    doc["cases"].as_array().expect("cases array").clone()
}

/// One case's temporary world.
struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
}

impl World {
    fn sub(&self, s: &str) -> String {
        s.replace("@root", &self.root.to_string_lossy())
    }
    fn path(&self, rel: &str) -> PathBuf {
        if rel.is_empty() {
            self.root.clone()
        } else {
            self.root.join(rel)
        }
    }
}

fn str_map(v: &Value) -> BTreeMap<String, Value> {
    v.as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default()
}

/// Build the case's tree. Returns `None` when the case must be skipped.
fn build(case: &Value) -> Option<World> {
    let name = case["name"].as_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let w = World { _tmp: tmp, root };
    if let Some(home) = case.get("home").map_or(Some("home"), Value::as_str) {
        std::fs::create_dir_all(w.path(home)).unwrap();
    }
    for step in case["git"].as_array().into_iter().flatten() {
        let args: Vec<String> = step
            .as_array()
            .unwrap()
            .iter()
            .map(|a| w.sub(a.as_str().unwrap()))
            .collect();
        let out = git(&w.root, &args);
        assert!(
            out.status.success(),
            "{name}: git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for d in case["dirs"].as_array().into_iter().flatten() {
        std::fs::create_dir_all(w.path(d.as_str().unwrap())).unwrap();
    }
    for (rel, content) in str_map(&case["files"]) {
        let p = w.path(&rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, file_bytes(&content)).unwrap();
    }
    for (link, target) in str_map(&case["symlinks"]) {
        let p = w.path(&link);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(w.path(target.as_str().unwrap()), &p).unwrap();
    }
    for (rel, mode) in str_map(&case["chmod"]) {
        use std::os::unix::fs::PermissionsExt;
        let mode = u32::from_str_radix(mode.as_str().unwrap(), 8).unwrap();
        std::fs::set_permissions(w.path(&rel), std::fs::Permissions::from_mode(mode)).unwrap();
        if case["needs_unreadable"].as_bool() == Some(true)
            && std::fs::File::open(w.path(&rel)).is_ok()
        {
            eprintln!("skipping scope case {name:?}: the file stays readable (running as root?)");
            return None;
        }
    }
    Some(w)
}

fn file_bytes(content: &Value) -> Vec<u8> {
    match content {
        Value::String(s) => s.as_bytes().to_vec(),
        Value::Object(o) if o.contains_key("hex") => {
            let hex = o["hex"].as_str().unwrap();
            (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect()
        }
        Value::Object(o) => {
            let mut text = o["text"].as_str().unwrap().as_bytes().to_vec();
            let total = o["pad_to"].as_u64().unwrap() as usize;
            // A TOML comment line of exactly the missing size.
            text.push(b'#');
            while text.len() < total - 1 {
                text.push(b'x');
            }
            text.push(b'\n');
            assert_eq!(text.len(), total);
            text
        }
        other => panic!("bad file content {other}"),
    }
}

fn git(root: &Path, args: &[String]) -> std::process::Output {
    let mut c = Command::new("git");
    c.current_dir(root).args(args);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("GIT_") {
            c.env_remove(k);
        }
    }
    c.env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("run git")
}

/// The HOME a case sets: `Some(value)` or `None` for unset.
fn case_home(case: &Value, w: &World) -> Option<String> {
    if let Some(raw) = case.get("home_raw") {
        return Some(w.sub(raw.as_str().unwrap()));
    }
    match case.get("home") {
        Some(Value::Null) => None,
        Some(v) => Some(w.path(v.as_str().unwrap()).to_string_lossy().into_owned()),
        None => Some(w.path("home").to_string_lossy().into_owned()),
    }
}

/// Compare a result object against an expectation (`expect` or `hook`).
fn check_result(
    name: &str,
    w: &World,
    got: &Map<String, Value>,
    want: &Value,
) -> Result<(), String> {
    let keys: Vec<&str> = got.keys().map(String::as_str).collect();
    if keys != JSON_KEYS {
        return Err(format!("{name}: keys {keys:?}, want {JSON_KEYS:?}"));
    }
    for k in [
        "workspace",
        "project",
        "workspace_source",
        "project_source",
        "capture",
    ] {
        if got[k] != want[k] {
            return Err(format!("{name}: {k} = {}, want {}", got[k], want[k]));
        }
    }
    let want_marker = match &want["marker"] {
        Value::Null => Value::Null,
        Value::String(rel) => Value::String(w.path(rel).to_string_lossy().into_owned()),
        other => panic!("{name}: bad marker expectation {other}"),
    };
    if got["marker"] != want_marker {
        return Err(format!(
            "{name}: marker = {}, want {want_marker}",
            got["marker"]
        ));
    }
    let got_w: Vec<&str> = got["warnings"]
        .as_array()
        .ok_or(format!("{name}: warnings is not an array"))?
        .iter()
        .map(|v| v.as_str().unwrap_or("<not a string>"))
        .collect();
    let want_w: Vec<String> = want["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| w.sub(v.as_str().unwrap()))
        .collect();
    if got_w.len() != want_w.len()
        || got_w
            .iter()
            .zip(&want_w)
            .any(|(g, s)| !g.contains(s.as_str()))
    {
        return Err(format!(
            "{name}: warnings {got_w:#?}, want (substrings) {want_w:#?}"
        ));
    }
    Ok(())
}

/// Run `memhook show` for the case; returns (exit code, stdout, stderr).
fn run_show(case: &Value, w: &World, json: bool) -> (i32, String, String) {
    let mut cmd = memhook(&w.root);
    match case_home(case, w) {
        Some(h) => cmd.env("HOME", h),
        None => cmd.env_remove("HOME"),
    };
    cmd.current_dir(w.path(case["run_in"].as_str().unwrap_or("")));
    cmd.env_remove("PWD");
    for (k, v) in str_map(&case["env"]) {
        cmd.env(k, w.sub(v.as_str().unwrap()));
    }
    cmd.arg("show");
    if json {
        cmd.arg("--json");
    }
    if let Some(c) = case["cwd"].as_str() {
        cmd.arg("--cwd").arg(w.path(c));
    } else if let Some(c) = case["cwd_arg"].as_str() {
        cmd.arg("--cwd").arg(c);
    } else {
        assert_eq!(
            case["no_cwd_flag"].as_bool(),
            Some(true),
            "case without a cwd"
        );
    }
    for a in case["args"].as_array().into_iter().flatten() {
        cmd.arg(a.as_str().unwrap());
    }
    let out = cmd.output().expect("run memhook show");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn replay_client(case: &Value, w: &World) -> Result<(), String> {
    let name = case["name"].as_str().unwrap();
    let (code, stdout, stderr) = run_show(case, w, true);
    if let Some(err) = case.get("error") {
        if code != 2 {
            return Err(format!(
                "{name}: exit {code}, want 2; stdout {stdout} stderr {stderr}"
            ));
        }
        if !stdout.is_empty() {
            return Err(format!("{name}: stdout not empty on error: {stdout}"));
        }
        if !stderr.starts_with("memhook: ") || stderr.trim_end().lines().count() != 1 {
            return Err(format!(
                "{name}: error must be one `memhook: ` line, got {stderr:?}"
            ));
        }
        for s in err["contains"].as_array().unwrap() {
            let s = w.sub(s.as_str().unwrap());
            if !stderr.contains(&s) {
                return Err(format!("{name}: stderr {stderr:?} lacks {s:?}"));
            }
        }
        return Ok(());
    }
    let want = &case["expect"];
    if code != 0 {
        return Err(format!("{name}: exit {code}; stderr {stderr}"));
    }
    if stdout.lines().count() != 1 {
        return Err(format!(
            "{name}: --json must print exactly one line: {stdout:?}"
        ));
    }
    let mut got: Value =
        serde_json::from_str(&stdout).map_err(|e| format!("{name}: {e}: {stdout}"))?;
    // `show --json` adds the binding (DESIGN §11, tests in binding.rs)
    // after the §2 keys.
    let got = got.as_object_mut().unwrap();
    if !got.get("binding").is_some_and(|b| b["state"].is_string()) {
        return Err(format!("{name}: no binding object in {stdout}"));
    }
    got.remove("binding");
    // ... and the opt-in/pause switch in force (null here; tests in
    // switches.rs and cli.rs).
    if got.remove("switch") != Some(Value::Null) {
        return Err(format!("{name}: switch is not null in {stdout}"));
    }
    check_result(name, w, got, want)?;
    for s in case["stderr"].as_array().into_iter().flatten() {
        let s = w.sub(s.as_str().unwrap());
        if !stderr.lines().any(|l| l == s) {
            return Err(format!("{name}: stderr {stderr:?} lacks the line {s:?}"));
        }
    }
    if case["stderr_empty"].as_bool() == Some(true) && !stderr.is_empty() {
        return Err(format!("{name}: stderr should be empty: {stderr:?}"));
    }
    if let Some(text) = case["text"].as_array() {
        let (code, stdout, _) = run_show(case, w, false);
        if code != 0 {
            return Err(format!("{name}: human output exit {code}"));
        }
        for s in text {
            if !stdout.contains(s.as_str().unwrap()) {
                return Err(format!("{name}: human output {stdout:?} lacks {s}"));
            }
        }
    }
    Ok(())
}

fn replay_hook(case: &Value, w: &World) -> Result<(), String> {
    use memhook_core::scope::{self, Mode, ScopeInput, Strategy};
    let name = case["name"].as_str().unwrap();
    let mut strategy = None;
    let args: Vec<&str> = case["args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a.as_str().unwrap())
        .collect();
    match args.as_slice() {
        [] => {}
        ["--project-strategy", "repo-root"] => strategy = Some(Strategy::RepoRoot),
        ["--project-strategy", "basename"] => strategy = Some(Strategy::Basename),
        other => panic!("{name}: hooks have no flags {other:?}"),
    }
    let cwd = match (case["cwd"].as_str(), case["cwd_arg"].as_str()) {
        (Some(c), _) => w.path(c),
        (None, Some(c)) => w.path(case["run_in"].as_str().unwrap_or("")).join(c),
        _ => panic!("{name}: hook replay needs cwd or cwd_arg"),
    };
    let mut vars: BTreeMap<String, OsString> = str_map(&case["env"])
        .into_iter()
        .map(|(k, v)| (k, OsString::from(w.sub(v.as_str().unwrap()))))
        .collect();
    if let Some(h) = case_home(case, w) {
        vars.insert("HOME".into(), h.into());
    }
    let input = ScopeInput::from_vars(Mode::Hook, Some(&cwd), None, None, strategy, |k| {
        vars.get(k).cloned()
    })
    .map_err(|e| format!("{name}: hook input: {e}"))?;
    let scope =
        scope::resolve(&input).map_err(|e| format!("{name}: hook mode must not fail: {e}"))?;
    let got = memhook::show::to_json(&scope);
    check_result(
        &format!("{name} [hook]"),
        w,
        got.as_object().unwrap(),
        &case["hook"],
    )
}

#[test]
fn cases_json_replays_through_memhook_show() {
    let cases = load_cases();
    assert!(cases.len() >= 60, "only {} cases", cases.len());
    let mut failures = Vec::new();
    let mut ran = 0;
    let mut hook_ran = 0;
    for case in &cases {
        let Some(w) = build(case) else { continue };
        assert!(
            case.get("expect").is_some() != case.get("error").is_some(),
            "{}: exactly one of expect/error",
            case["name"]
        );
        if let Err(e) = replay_client(case, &w) {
            failures.push(e);
        }
        ran += 1;
        if case.get("hook").is_some() {
            if let Err(e) = replay_hook(case, &w) {
                failures.push(e);
            }
            hook_ran += 1;
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {ran} cases failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(ran >= 60, "only {ran} cases ran");
    assert!(hook_ran >= 10, "only {hook_ran} hook replays ran");
}

/// `show --json` carries the strategy and settings the text output shows.
#[test]
fn show_json_and_text_agree_on_strategy_and_settings() {
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join("svc");
    std::fs::create_dir(&proj).unwrap();
    std::fs::write(
        proj.join(".ai-memory.toml"),
        "project = \"svc\"\nproject_strategy = \"repo-root\"\ndrop_subagent_captures = \"yes\"\n\
         [recall]\ndefault_global = true\n[briefing]\nmax_chars = 900\n",
    )
    .unwrap();
    let out = memhook(home.path())
        .args(["show", "--json"])
        .current_dir(&proj)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["strategy"], "repo-root");
    assert_eq!(
        v["settings"],
        serde_json::json!({
            "drop_subagent_captures": true,
            "default_global": true,
            "inject_on_session_start": false,
            "max_chars": 900,
            "file_history": true
        })
    );
    let out = memhook(home.path())
        .arg("show")
        .current_dir(&proj)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("strategy   repo-root"), "{text}");
    assert!(
        text.contains(
            "drop_subagent_captures=true default_global=true inject_on_session_start=false max_chars=900 file_history=true"
        ),
        "{text}"
    );
}

/// `show` says in words what is captured: with no marker, everything
/// (the default denylist mode) — "absent" read as "nothing". `--json`
/// keeps DESIGN §2's one word.
#[test]
fn show_says_what_is_captured_in_words() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let plain = home.path().join("plain");
    let marked = home.path().join("marked");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::create_dir_all(&marked).unwrap();
    std::fs::write(
        marked.join(".ai-memory.toml"),
        "[capture]\nignore_paths = [\"secret/**\"]\n",
    )
    .unwrap();
    let show = |dir: &std::path::Path, json: bool| {
        let mut cmd = memhook(home.path());
        cmd.arg("show").current_dir(dir);
        if json {
            cmd.arg("--json");
        }
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let text = show(&plain, false);
    assert!(
        text.contains("capture    everything (no marker, nothing excluded;"),
        "{text}"
    );
    assert!(!text.contains("absent"), "{text}");
    let v: Value = serde_json::from_str(&show(&plain, true)).unwrap();
    assert_eq!(v["capture"], "absent");
    let text = show(&marked, false);
    assert!(
        text.contains("capture    active: 1 pattern excludes paths, everything else is captured ("),
        "{text}"
    );
    let v: Value = serde_json::from_str(&show(&marked, true)).unwrap();
    assert_eq!(v["capture"], "active");
    // A marker that cannot be used: what is still captured.
    let broken = home.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(
        broken.join(".ai-memory.toml"),
        "[capture]\nignore_pathz = [\"secret/**\"]\n",
    )
    .unwrap();
    let text = show(&broken, false);
    assert!(
        text.contains(
            "capture    invalid, fail closed: file and shell tool events are kept without their content"
        ),
        "{text}"
    );
    let v: Value = serde_json::from_str(&show(&broken, true)).unwrap();
    assert_eq!(v["capture"], "invalid");
    // An allowlist install captures nothing without a marker, and says so.
    let data = home.path().join(".memhook-data");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o700)).unwrap();
    let mode = data.join("capture-mode");
    std::fs::write(&mode, "allowlist\n").unwrap();
    std::fs::set_permissions(&mode, std::fs::Permissions::from_mode(0o600)).unwrap();
    let text = show(&plain, false);
    assert!(text.contains("capture    nothing (no marker, "), "{text}");
}

/// A marker the hook cannot use is shown where the user looks: `memhook
/// status` names the file, the line and the scope the events went to, until
/// the file is fixed (the hook's own warning goes to the agent's stderr).
#[test]
fn status_shows_a_marker_the_hook_could_not_use_until_it_is_fixed() {
    use crate::support::binaries::{run_with_stdin, status};
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("api");
    std::fs::create_dir_all(&repo).unwrap();
    let marker = repo.join(".ai-memory.toml");
    std::fs::write(&marker, "workspace = \"acme\"\nproject = \"API Server\"\n").unwrap();
    let hook = |event: &str| {
        let mut cmd = memhook(home.path());
        cmd.args(["hook", "--agent", "claude-code", "--event", event]);
        cmd.env("MEMHOOK_NO_HOOK_DELIVERY", "1");
        let payload = serde_json::json!({
            "session_id": "s-1", "cwd": repo, "prompt": "hello",
        });
        let out = run_with_stdin(cmd, payload.to_string().as_bytes());
        assert!(out.status.success(), "{out:?}");
    };
    hook("UserPromptSubmit");
    hook("UserPromptSubmit");
    let v = status(home.path());
    let problems = v["marker_problems"].as_array().unwrap();
    assert_eq!(problems.len(), 1, "{v}");
    assert_eq!(problems[0]["marker"], marker.to_str().unwrap());
    assert_eq!(problems[0]["filed_under"], "default/api");
    let problem = problems[0]["problem"].as_str().unwrap();
    assert!(problem.starts_with("line 2: `project`"), "{problem}");
    let out = memhook(home.path()).arg("status").output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("marker problem (since ") && text.contains("line 2: `project`"),
        "{text}"
    );

    std::fs::write(&marker, "workspace = \"acme\"\nproject = \"api\"\n").unwrap();
    let v = status(home.path());
    assert_eq!(v["marker_problems"], serde_json::json!([]), "{v}");
}
