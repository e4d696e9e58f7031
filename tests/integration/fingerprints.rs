//! The second line of exclusion end to end (DESIGN §3, docs/capture.md):
//! the content of an excluded file reaches `memhook hook` by roads no path
//! rule can see — a background command's output (`BashOutput`), an MCP file
//! tool, a copy read through a variable, `cd`, an archive, Gemini's
//! `read_many_files`, a prompt, a compaction summary — in the payload
//! shapes of Claude Code, Codex and Gemini CLI. After `memhook drain` no
//! file under the data dir (spool, database, WAL, logs, fingerprint sets)
//! holds a line of it, and the ordinary lines around it are kept.

use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use crate::support::binaries::{drain, hook_with_stdin_file, memhook};
use crate::support::files::{contains, walk};
use crate::support::fixtures::fixture;
use crate::support::home::data_dir;

/// The excluded file's lines, built from pieces so that this source file
/// is no hit when the repository is grepped.
fn secret_lines() -> Vec<String> {
    vec![
        format!("DB_PASSWORD={}-{}", "correct-horse", "battery-staple-91"),
        format!(
            "customer: {} {}, 42 Elm Street, Springfield",
            "Alice", "Liddell-Quartz"
        ),
        format!(
            "SIGNING_KEY=\"{}{}\"",
            "c2VjcmV0LXNpZ25pbmcta2V5LWZvci1wcm9k", "dWN0aW9uLXVzZS1vbmx5LWRvLW5vdC1zaGFyZQ=="
        ),
    ]
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let proj = home.path().join("proj");
    fs::create_dir_all(proj.join("secret")).unwrap();
    fs::create_dir_all(proj.join("src")).unwrap();
    fs::write(
        proj.join(".ai-memory.toml"),
        "project = \"fp\"\n\n[capture]\nignore_paths = [\"secret/**\"]\n",
    )
    .unwrap();
    let mut text = String::from("# production settings\n");
    for l in secret_lines() {
        text.push_str(&l);
        text.push('\n');
    }
    fs::write(proj.join("secret/prod.env"), text).unwrap();
    fs::write(proj.join("src/app.py"), "def main():\n    print('hello')\n").unwrap();
    (home, proj)
}

/// The text an agent's tool would show: a kept line, the secret lines
/// (each behind `prefix`), another kept line.
fn shown(prefix: &str, n: usize) -> String {
    let mut s = format!("KEEP-BEFORE-{n} build started\n");
    for (i, l) in secret_lines().iter().enumerate() {
        // `{}` in the prefix is the line's number, as a tool shows it.
        let p = prefix.replace("{}", &(i + 2).to_string());
        s.push_str(&format!("{p}{l}\n"));
    }
    s.push_str(&format!("KEEP-AFTER-{n} all done\n"));
    s
}

fn payload(agent: &str, file: &str, proj: &Path, edit: impl FnOnce(&mut Value)) -> Value {
    let dir = match agent {
        "claude-code" => "claude-code/2.1.328",
        "codex" => "codex/0.171.0",
        _ => "gemini-cli/0.61.0",
    };
    let raw = fs::read(fixture(&format!("agents/{dir}/{file}"))).unwrap();
    let mut v: Value = serde_json::from_slice(&raw).unwrap();
    v["cwd"] = json!(proj.to_str().unwrap());
    v["session_id"] = json!(format!("fp-{agent}"));
    edit(&mut v);
    v
}

/// `memhook hook --agent AGENT` with `p` on stdin, in the project (exit 0).
fn hook(home: &Path, proj: &Path, agent: &str, p: &Value) {
    let out = hook_with_stdin_file(home, agent, p.to_string().as_bytes())
        .current_dir(proj)
        .output()
        .unwrap();
    assert!(out.status.success(), "{agent}: {out:?}");
}

/// `memhook drain`, then every file under the data dir with its bytes.
fn drain_and_read(home: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    drain(home);
    let mut files = Vec::new();
    walk(&data_dir(home), &mut files);
    files
}

/// No file holds the most telling part of any line of the excluded file.
fn assert_no_secret_line(files: &[(std::path::PathBuf, Vec<u8>)]) {
    for (path, bytes) in files {
        for line in secret_lines() {
            let needle = &line[line.len() - 16..];
            assert!(
                !contains(bytes, needle),
                "{needle:?} reached {}",
                path.display()
            );
        }
    }
}

#[test]
fn no_line_of_an_excluded_file_reaches_the_data_dir_by_any_road() {
    let (home, proj) = setup();
    let home = home.path();
    let cases: Vec<(&str, Value)> = vec![
        // A background `cat`, read back through BashOutput.
        (
            "claude-code",
            payload("claude-code", "PostToolUse-Bash.json", &proj, |v| {
                v["tool_name"] = json!("BashOutput");
                v["tool_input"] = json!({"bash_id": "bash_1"});
                v["tool_response"] = json!({"stdout": shown("", 1), "status": "completed"});
            }),
        ),
        // An MCP file tool through a symlink outside the project.
        (
            "claude-code",
            payload("claude-code", "PostToolUse-Bash.json", &proj, |v| {
                v["tool_name"] = json!("mcp__filesystem__read_file");
                v["tool_input"] = json!({"path": "/tmp/elsewhere/config.env"});
                v["tool_response"] = json!([{"type": "text", "text": shown("", 2)}]);
            }),
        ),
        // Claude's Read view of a copy (line numbers and arrows).
        (
            "claude-code",
            payload("claude-code", "PostToolUse-Bash.json", &proj, |v| {
                v["tool_name"] = json!("Read");
                v["tool_input"] = json!({"file_path": proj.join("src/copy.env").to_str().unwrap()});
                v["tool_response"] = json!({"type": "text", "file": {"filePath": proj.join("src/copy.env").to_str().unwrap(), "content": shown("     {}\u{2192}", 3)}});
            }),
        ),
        // A variable and `cd`: the command names no excluded path.
        (
            "codex",
            payload("codex", "PostToolUse-Bash-cat.json", &proj, |v| {
                v["tool_input"] = json!({"command": "d=sec; cd \"${d}ret\" && cat prod.env"});
                v["tool_response"] = json!(shown("", 4));
            }),
        ),
        // A script that reads the file itself.
        (
            "claude-code",
            payload("claude-code", "PostToolUse-Bash.json", &proj, |v| {
                v["tool_input"] = json!({"command": "sh scripts/dump-config.sh"});
                v["tool_response"] = json!({"stdout": shown("", 12), "stderr": ""});
            }),
        ),
        // An archive of the whole project, unpacked to stdout.
        (
            "codex",
            payload("codex", "PostToolUse-Bash-cat.json", &proj, |v| {
                v["tool_input"] = json!({"command": "tar cf - . | tar xOf -"});
                v["tool_response"] = json!(shown("", 5));
            }),
        ),
        // A diff in another format (mnemonic prefixes, graph).
        (
            "codex",
            payload("codex", "PostToolUse-Bash-cat.json", &proj, |v| {
                v["tool_input"] = json!({"command": "git log --graph -p"});
                v["tool_response"] = json!(shown("| + ", 6));
            }),
        ),
        // Gemini's read_many_files over the project.
        (
            "gemini-cli",
            payload("gemini-cli", "AfterTool-read_file.json", &proj, |v| {
                v["tool_name"] = json!("read_many_files");
                v["tool_input"] = json!({"paths": ["."]});
                v["tool_response"] =
                    json!({"llmContent": shown("", 7), "returnDisplay": "read 3 files"});
            }),
        ),
        // The user pastes the file into a prompt.
        (
            "claude-code",
            payload("claude-code", "UserPromptSubmit.json", &proj, |v| {
                v["prompt"] = json!(format!("why does this fail?\n{}", shown("", 8)));
            }),
        ),
        // The agent's final message quotes it (Claude Code and Codex).
        (
            "claude-code",
            payload("claude-code", "Stop.json", &proj, |v| {
                v["last_assistant_message"] =
                    json!(format!("Fixed it. The file said:\n{}", shown("> ", 10)));
            }),
        ),
        (
            "codex",
            payload("codex", "Stop.json", &proj, |v| {
                v["last_assistant_message"] = json!(shown("    ", 11));
            }),
        ),
        // The agent's compaction summary quotes it.
        (
            "claude-code",
            payload("claude-code", "PostCompact-manual.json", &proj, |v| {
                v["compact_summary"] = json!(shown("  ", 9));
            }),
        ),
    ];
    for (agent, p) in &cases {
        hook(home, &proj, agent, p);
    }
    let files = drain_and_read(home);
    assert!(
        files.iter().any(|(p, _)| p.ends_with("store.sqlite3")),
        "nothing stored"
    );
    assert_no_secret_line(&files);
    // Ordinary lines around them are kept, for every road but the ones the
    // path rules drop whole.
    let out = memhook(home)
        .args(["recent", "--json", "--all", "--limit", "100"])
        .current_dir(&proj)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    for n in [1, 2, 3, 4, 8, 9, 10, 11, 12] {
        assert!(
            text.contains(&format!("KEEP-AFTER-{n}")),
            "case {n} lost its kept lines:\n{text}"
        );
    }
    assert!(
        text.contains("matches a file this project excludes"),
        "{text}"
    );
}

#[test]
fn a_new_secret_file_is_covered_at_the_next_drain() {
    let (home, proj) = setup();
    let home = home.path();
    // A first event builds the set.
    let p = payload("claude-code", "UserPromptSubmit.json", &proj, |v| {
        v["prompt"] = json!("hello")
    });
    hook(home, &proj, "claude-code", &p);
    drain(home);
    // Then a new excluded file appears, and is quoted.
    let fresh = format!("patient: {} Nguyen-Okafor, ward 7, rhinitis", "Bob");
    fs::write(proj.join("secret/rotated.env"), format!("{fresh}\n")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let p = payload("claude-code", "UserPromptSubmit.json", &proj, |v| {
        v["prompt"] = json!(format!("is this right? {fresh}"))
    });
    hook(home, &proj, "claude-code", &p);
    let files = drain_and_read(home);
    for (path, bytes) in &files {
        assert!(
            !contains(bytes, "Nguyen-Okafor"),
            "reached {}",
            path.display()
        );
    }
}

/// Every agent's payload shape and every placement that keeps text (prompt,
/// stdout, stderr, file content, error): the lines of an excluded file,
/// pasted there, reach no file of the data dir, and the marker line beside
/// them is stored (so a record that was not stored cannot pass).
#[test]
fn every_agent_shape_and_placement_is_screened() {
    use crate::secrets::{payload as shaped, Placement, SHAPES};
    let (home, proj) = setup();
    let home = home.path();
    let mut kept = Vec::new();
    for (i, s) in SHAPES.iter().enumerate() {
        if matches!(s.placement, Placement::ToolInput | Placement::Private) {
            continue;
        }
        let mark = format!("KEEPMARK{i:03}");
        let mut text = format!("{mark} first\n");
        for l in secret_lines() {
            text.push_str(&l);
            text.push('\n');
        }
        let p = shaped(s, &proj, &format!("fp-shape-{i}"), &text);
        hook(home, &proj, s.agent, &p);
        kept.push((s.agent, mark));
    }
    let files = drain_and_read(home);
    assert_no_secret_line(&files);
    let all: Vec<u8> = files.iter().flat_map(|(_, b)| b.clone()).collect();
    for (agent, mark) in kept {
        assert!(contains(&all, &mark), "{agent}: {mark} was not stored");
    }
}
