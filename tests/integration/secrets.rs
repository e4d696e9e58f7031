//! Secrets: every fake secret of `fixtures/secrets/secrets.jsonl`, in every
//! agent's payload shape and every placement (prompt, tool input, stdout,
//! stderr, file content, error, `<private>` span, the agent's final
//! message where its payloads carry one), goes through the real
//! binary: `memhook hook`, then `memhook drain`, into the embedded store and,
//! through the HTTP sink, into a real `memhook serve` on 127.0.0.1; the same
//! payloads are also posted to that server as plain ai-memory payloads,
//! which it turns into records itself.
//! Afterwards the distinctive middle of each secret must be in no file under
//! any data dir (spool, SQLite database, WAL and shared memory, counters,
//! logs, tokens: raw bytes), nor on the hook's stdout or stderr; while the
//! near misses of `fixtures/secrets/near_misses.jsonl` and a marker closing
//! each batch must be there, so a record that was not stored, or a redactor
//! that deletes everything, cannot pass.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{json, Value};

use crate::support::binaries::{memhook, run_with_stdin};
use crate::support::files::{contains, walk};
use crate::support::fixtures::fixture;
use crate::support::http::request;
use crate::support::serve::Serve;

/// Where a secret sits in an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    Prompt,
    ToolInput,
    Stdout,
    Stderr,
    FileContent,
    Error,
    /// Inside `<private>…</private>` in a prompt.
    Private,
    /// The agent's final message of a turn (only the agents whose turn-end
    /// event carries it: docs/record.md).
    FinalMessage,
}

use Placement::*;

/// Raw text given to a tool placement at once: the tool body's cap is
/// 2,000 bytes for the whole rendered body (a fixture's own output shares
/// it), and each batch must be stored whole (its closing marker is
/// checked), so the corpus is cut into batches of at most this many bytes.
const TOOL_BATCH_BYTES: usize = 1_200;

/// How one agent carries one placement: a payload (a fixture under
/// `fixtures/agents/`, or a literal for Cursor, which has no captured
/// fixtures; its field names come from `crates/core/src/event/schema.rs`), the JSON
/// pointer the text goes to, and a template around the text (`{}`).
pub(crate) struct Shape {
    pub(crate) agent: &'static str,
    pub(crate) placement: Placement,
    base: Base,
    ptr: &'static str,
    template: &'static str,
}

enum Base {
    Fixture(&'static str),
    Cursor(&'static str),
}

const fn shape(
    agent: &'static str,
    placement: Placement,
    base: Base,
    ptr: &'static str,
    template: &'static str,
) -> Shape {
    Shape {
        agent,
        placement,
        base,
        ptr,
        template,
    }
}

use Base::{Cursor, Fixture};

const CC: &str = "claude-code";
#[rustfmt::skip]
pub(crate) const SHAPES: &[Shape] = &[
    shape(CC, Prompt, Fixture("claude-code/2.1.328/UserPromptSubmit.json"), "/prompt", "{}"),
    shape(CC, Private, Fixture("claude-code/2.1.328/UserPromptSubmit.json"), "/prompt", "{}"),
    shape(CC, ToolInput, Fixture("claude-code/2.1.328/PreToolUse-Bash.json"), "/tool_input/command", "echo {}"),
    shape(CC, Stdout, Fixture("claude-code/2.1.328/PostToolUse-Bash.json"), "/tool_response/stdout", "{}"),
    shape(CC, Stderr, Fixture("claude-code/2.1.328/PostToolUse-Bash.json"), "/tool_response/stderr", "{}"),
    shape(CC, FileContent, Fixture("claude-code/2.1.328/PostToolUse-Read.json"), "/tool_response/file/content", "{}"),
    shape(CC, Error, Fixture("claude-code/2.1.328/PostToolUseFailure-Bash-exit1.json"), "/error", "Exit code 1\n{}"),
    shape("codex", Prompt, Fixture("codex/0.171.0/UserPromptSubmit.json"), "/prompt", "{}"),
    shape("codex", Private, Fixture("codex/0.171.0/UserPromptSubmit.json"), "/prompt", "{}"),
    shape("codex", ToolInput, Fixture("codex/0.171.0/PreToolUse-Bash.json"), "/tool_input/command", "echo {}"),
    shape("codex", Stdout, Fixture("codex/0.171.0/PostToolUse-Bash.json"), "/tool_response", "{}"),
    // Codex gives one string for both streams; a failing command's stderr.
    shape("codex", Stderr, Fixture("codex/0.171.0/PostToolUse-Bash-exit1.json"), "/tool_response", "{}"),
    shape("codex", FileContent, Fixture("codex/0.171.0/PostToolUse-Bash-cat.json"), "/tool_response", "{}"),
    shape("codex", Error, Fixture("codex/0.171.0/PostToolUse-apply_patch.json"), "/tool_response", "Exit code: 1\nOutput:\n{}"),
    shape("gemini-cli", Prompt, Fixture("gemini-cli/0.61.0/BeforeAgent.json"), "/prompt", "{}"),
    shape("gemini-cli", Private, Fixture("gemini-cli/0.61.0/BeforeAgent.json"), "/prompt", "{}"),
    shape("gemini-cli", ToolInput, Fixture("gemini-cli/0.61.0/BeforeTool-run_shell_command.json"), "/tool_input/command", "echo {}"),
    shape("gemini-cli", Stdout, Fixture("gemini-cli/0.61.0/AfterTool-run_shell_command.json"), "/tool_response/llmContent", "Output: {}\nExit Code: 0"),
    shape("gemini-cli", Stderr, Fixture("gemini-cli/0.61.0/AfterTool-run_shell_command-exit1.json"), "/tool_response/llmContent", "Output: {}\nExit Code: 1"),
    shape("gemini-cli", FileContent, Fixture("gemini-cli/0.61.0/AfterTool-read_file.json"), "/tool_response/llmContent", "{}"),
    shape("gemini-cli", Error, Fixture("gemini-cli/0.61.0/AfterTool-read_file-missing-file.json"), "/tool_response/error/message", "{}"),
    shape("opencode", Prompt, Fixture("opencode/1.18.33/chat.message.json"), "/output/parts/0/text", "{}"),
    shape("opencode", Private, Fixture("opencode/1.18.33/chat.message.json"), "/output/parts/0/text", "{}"),
    shape("opencode", ToolInput, Fixture("opencode/1.18.33/tool.execute.before-bash.json"), "/output/args/command", "echo {}"),
    shape("opencode", Stdout, Fixture("opencode/1.18.33/tool.execute.after-bash.json"), "/output/output", "{}"),
    shape("opencode", Stderr, Fixture("opencode/1.18.33/tool.execute.after-bash-2.json"), "/output/output", "{}"),
    shape("opencode", FileContent, Fixture("opencode/1.18.33/tool.execute.after-read.json"), "/output/output", "<content>\n{}\n</content>"),
    shape("opencode", Error, Fixture("opencode/1.18.33/tool.execute.after-bash.json"), "/output/metadata/error", "{}"),
    shape("cursor", Prompt, Cursor(r#"{"hook_event_name":"beforeSubmitPrompt","prompt":""}"#), "/prompt", "{}"),
    shape("cursor", Private, Cursor(r#"{"hook_event_name":"beforeSubmitPrompt","prompt":""}"#), "/prompt", "{}"),
    shape("cursor", ToolInput, Cursor(r#"{"hook_event_name":"beforeShellExecution","command":""}"#), "/command", "echo {}"),
    shape("cursor", Stdout, Cursor(r#"{"hook_event_name":"afterShellExecution","command":"make test","output":""}"#), "/output", "{}"),
    shape("cursor", Stderr, Cursor( r#"{"hook_event_name":"postToolUse","tool_name":"Shell","tool_input":{"command":"make"},"tool_output":{"stdout":"","stderr":""}}"#, ), "/tool_output/stderr", "{}"),
    shape("cursor", FileContent, Cursor( r#"{"hook_event_name":"postToolUse","tool_name":"Read","tool_input":{"file_path":"src/app.py"},"tool_output":{"content":""}}"#, ), "/tool_output/content", "{}"),
    shape("cursor", Error, Cursor( r#"{"hook_event_name":"postToolUseFailure","tool_name":"Shell","tool_input":{"command":"make"},"error_message":""}"#, ), "/error_message", "{}"),
    shape("copilot", Prompt, Fixture("copilot/1.0.102/UserPromptSubmit.json"), "/prompt", "{}"),
    shape("copilot", Private, Fixture("copilot/1.0.102/UserPromptSubmit.json"), "/prompt", "{}"),
    shape("copilot", ToolInput, Fixture("copilot/1.0.102/PreToolUse-Bash.json"), "/tool_input/command", "echo {}"),
    shape("copilot", Stdout, Fixture("copilot/1.0.102/PostToolUse-Bash.json"), "/tool_result/text_result_for_llm", "{}\n<shellId: 0 completed with exit code 0>"),
    shape("copilot", Stderr, Fixture("copilot/1.0.102/PostToolUse-Bash-exit3.json"), "/tool_result/text_result_for_llm", "{}\n<shellId: 1 completed with exit code 3>"),
    shape("copilot", FileContent, Fixture("copilot/1.0.102/PostToolUse-Read-dir.json"), "/tool_result/text_result_for_llm", "{}"),
    shape("copilot", Error, Fixture("copilot/1.0.102/PostToolUseFailure-Read-missing-file.json"), "/error", "{}"),
    shape(CC, FinalMessage, Fixture("claude-code/2.1.328/Stop.json"), "/last_assistant_message", "Done.\n{}"),
    shape("codex", FinalMessage, Fixture("codex/0.171.0/Stop.json"), "/last_assistant_message", "Done.\n{}"),
    shape("gemini-cli", FinalMessage, Fixture("gemini-cli/0.61.0/AfterAgent.json"), "/prompt_response", "Done.\n{}"),
];

/// Placements only some agents' payloads have: run where a shape exists.
const OPTIONAL_PLACEMENTS: &[Placement] = &[FinalMessage];

/// The agents of the per-agent schema table; each must have every placement.
const AGENTS: &[&str] = &[CC, "codex", "gemini-cli", "opencode", "cursor", "copilot"];
const PLACEMENTS: &[Placement] = &[
    Prompt,
    ToolInput,
    Stdout,
    Stderr,
    FileContent,
    Error,
    Private,
];

/// One corpus secret: (kind, text as it appears, middle that must never be stored).
struct Secret {
    kind: String,
    text: String,
    middle: String,
}

fn jsonl(name: &str) -> Vec<Value> {
    fs::read_to_string(fixture(&format!("secrets/{name}")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn secrets() -> Vec<Secret> {
    jsonl("secrets.jsonl")
        .into_iter()
        .map(|e| Secret {
            kind: e["kind"].as_str().unwrap().into(),
            text: e["text"].as_str().unwrap().into(),
            middle: e["middle"].as_str().unwrap().into(),
        })
        .collect()
}

fn near_misses() -> Vec<String> {
    jsonl("near_misses.jsonl")
        .into_iter()
        .map(|e| e["text"].as_str().unwrap().to_string())
        .collect()
}

/// Set `ptr` in `v`, creating the objects on the way.
fn put(v: &mut Value, ptr: &str, val: Value) {
    let mut cur = v;
    for part in ptr.trim_start_matches('/').split('/') {
        cur = match cur {
            Value::Array(a) => &mut a[part.parse::<usize>().unwrap()],
            other => {
                if !other.is_object() {
                    *other = json!({});
                }
                other
                    .as_object_mut()
                    .unwrap()
                    .entry(part)
                    .or_insert(Value::Null)
            }
        };
    }
    *cur = val;
}

/// The payload of `shape` carrying `text`, for a project at `proj`.
pub(crate) fn payload(s: &Shape, proj: &Path, session: &str, text: &str) -> Value {
    let proj = proj.to_str().unwrap();
    let mut v = match s.base {
        Fixture(rel) => {
            let raw = fs::read_to_string(fixture(&format!("agents/{rel}"))).unwrap();
            let mut v: Value = serde_json::from_str(&raw).unwrap();
            for p in ["/cwd", "/directory"] {
                if v.pointer(p).is_some() {
                    put(&mut v, p, json!(proj));
                }
            }
            if s.agent == "opencode" {
                put(&mut v, "/directory", json!(proj));
            }
            v
        }
        Cursor(base) => {
            let mut v: Value = serde_json::from_str(base).unwrap();
            put(&mut v, "/conversation_id", json!(session));
            put(&mut v, "/generation_id", json!("gen-1"));
            put(&mut v, "/workspace_roots", json!([proj]));
            put(&mut v, "/cursor_version", json!("1.7.0"));
            v
        }
    };
    if v.pointer("/session_id").is_some() {
        put(&mut v, "/session_id", json!(session));
    }
    put(&mut v, s.ptr, json!(s.template.replace("{}", text)));
    v
}

/// One hook run: which shape, the text and what must be stored.
struct Run {
    agent: &'static str,
    payload: Value,
    /// Words that prove the record was stored whole.
    kept: Vec<String>,
}

/// Every (agent, placement) with the corpus: prompts take it whole (plus
/// the near misses), tool placements in batches that fit the body cap.
fn runs(proj: &Path, leg: &str) -> Vec<Run> {
    let secrets = secrets();
    let near = near_misses();
    let mut out = Vec::new();
    for agent in AGENTS {
        for placement in PLACEMENTS.iter().chain(OPTIONAL_PLACEMENTS) {
            let found = SHAPES
                .iter()
                .find(|s| s.agent == *agent && s.placement == *placement);
            if found.is_none() && OPTIONAL_PLACEMENTS.contains(placement) {
                continue;
            }
            let s = found.unwrap_or_else(|| panic!("no {placement:?} shape for {agent}"));
            let tag = format!("{leg}-{agent}-{placement:?}");
            let session = format!("sess-{tag}");
            let all: Vec<&str> = secrets.iter().map(|s| s.text.as_str()).collect();
            let all = all.join("\n");
            match placement {
                Prompt => {
                    let keep = format!("KEEPWORD-{tag}");
                    let text = format!("{keep} please look\n{all}\n{}", near.join("\n"));
                    let mut kept = vec![keep];
                    if *agent == CC {
                        kept.extend(near.iter().cloned());
                    }
                    out.push(Run {
                        agent,
                        payload: payload(s, proj, &session, &text),
                        kept,
                    });
                }
                Private => {
                    let keep = format!("KEEPWORD-{tag}");
                    let text = format!("{keep} <private>PRIVATE-SENTINEL\n{all}</private> done");
                    out.push(Run {
                        agent,
                        payload: payload(s, proj, &session, &text),
                        kept: vec![keep],
                    });
                }
                ToolInput => out.push(Run {
                    agent,
                    payload: payload(s, proj, &session, &all),
                    kept: vec![],
                }),
                _ => {
                    let mut batch = String::new();
                    let mut n = 0;
                    let mut flush = |batch: &mut String, n: &mut usize| {
                        let keep = format!("KEEPWORD-{tag}-{n}");
                        let text = format!("{batch}{keep}");
                        out.push(Run {
                            agent,
                            payload: payload(s, proj, &session, &text),
                            kept: vec![keep],
                        });
                        batch.clear();
                        *n += 1;
                    };
                    for sec in &secrets {
                        if !batch.is_empty() && batch.len() + sec.text.len() > TOOL_BATCH_BYTES {
                            flush(&mut batch, &mut n);
                        }
                        batch.push_str(&sec.text);
                        batch.push('\n');
                    }
                    flush(&mut batch, &mut n);
                }
            }
        }
    }
    out
}

/// Run every hook of `runs` (no delivery from the hook itself), drain, and
/// check the hooks' output. `env` is added to every command.
fn hook_and_drain(home: &Path, proj: &Path, runs: &[Run], env: &[(&str, &str)]) {
    let secrets = secrets();
    let check_output = |what: &str, out: &Output| {
        for s in &secrets {
            assert!(
                !contains(&out.stdout, &s.middle) && !contains(&out.stderr, &s.middle),
                "{what} printed a {} secret ({})",
                s.kind,
                s.middle
            );
        }
    };
    for r in runs {
        let mut cmd = memhook(home);
        cmd.current_dir(proj)
            .args(["hook", "--agent", r.agent])
            .env(memhook_delivery::drain::NO_HOOK_DELIVERY_ENV, "1")
            .envs(env.iter().copied());
        let out = run_with_stdin(cmd, r.payload.to_string().as_bytes());
        assert!(out.status.success(), "{}: {out:?}", r.agent);
        serde_json::from_slice::<Value>(&out.stdout)
            .unwrap_or_else(|e| panic!("{}: stdout is not an envelope ({e})", r.agent));
        check_output(&format!("hook {}", r.agent), &out);
    }
    let mut cmd = memhook(home);
    cmd.args(["drain", "--budget-secs", "60"])
        .envs(env.iter().copied());
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "drain: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_output("drain", &out);
}

/// Grep every file under `dirs`: no secret's middle, no private text; and
/// every kept word somewhere.
fn assert_clean(dirs: &[&Path], runs: &[Run]) {
    let mut files = Vec::new();
    for d in dirs {
        walk(d, &mut files);
    }
    assert!(!files.is_empty(), "nothing was written under {dirs:?}");
    let secrets = secrets();
    for (path, bytes) in &files {
        for s in &secrets {
            assert!(
                !contains(bytes, &s.middle),
                "{} secret {:?} (middle {}) found in {}",
                s.kind,
                s.text,
                s.middle,
                path.display()
            );
        }
        assert!(
            !contains(bytes, "PRIVATE-SENTINEL"),
            "private span in {}",
            path.display()
        );
    }
    // A kept text is in the files' raw bytes, or — when SQLite stored it
    // across two overflow pages, whose headers split it on disk — in what
    // the store gives back (`memhook export` of the same data dir).
    // The same split could hide a secret from the raw grep: what the store
    // gives back is searched for every secret too.
    let mut text = Vec::new();
    for d in dirs {
        let out = memhook(d.parent().unwrap())
            .arg("export")
            .arg("--data-dir")
            .arg(d)
            .output()
            .unwrap();
        assert!(out.status.success(), "export: {out:?}");
        text.extend(out.stdout);
    }
    for s in &secrets {
        assert!(
            !contains(&text, &s.middle),
            "{} secret {:?} (middle {}) comes back from the store",
            s.kind,
            s.text,
            s.middle
        );
    }
    let text = &text;
    for r in runs {
        for k in &r.kept {
            if files.iter().any(|(_, b)| contains(b, k)) {
                continue;
            }
            // Export writes JSON: the text as a JSON string's inside.
            let escaped = serde_json::to_string(k).unwrap();
            let inner = &escaped[1..escaped.len() - 1];
            assert!(
                contains(text, inner),
                "{k:?} ({}) is missing: the record was not stored whole",
                r.agent
            );
        }
    }
    // The store holds the records (not only the spool).
    assert!(
        files
            .iter()
            .any(|(p, _)| p.ends_with(memhook_store::sqlite::STORE_FILE)),
        "no database under {dirs:?}"
    );
}

fn project(home: &Path) -> PathBuf {
    let proj = home.join("work").join("demo");
    fs::create_dir_all(&proj).unwrap();
    fs::write(proj.join(".ai-memory.toml"), "project = \"demo\"\n").unwrap();
    proj
}

#[test]
fn corpus_covers_every_agent_and_placement() {
    for agent in AGENTS {
        for p in PLACEMENTS {
            let n = SHAPES
                .iter()
                .filter(|s| s.agent == *agent && s.placement == *p)
                .count();
            assert_eq!(n, 1, "{agent} {p:?}");
        }
    }
    assert!(secrets().len() >= 150);
    assert!(near_misses().len() >= 50);
}

#[test]
fn no_secret_reaches_the_embedded_store() {
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    let proj = project(home);
    let runs = runs(&proj, "store");
    hook_and_drain(home, &proj, &runs, &[]);
    assert_clean(&[&home.join(".memhook-data")], &runs);
}

#[test]
fn no_secret_reaches_memhook_serve() {
    const TOKEN: &str = "secrets-test-token-0123456789abcdef";
    let server = tempfile::tempdir().unwrap();
    let s = Serve::start(server.path(), Some(TOKEN));
    let t = tempfile::tempdir().unwrap();
    let home = t.path();
    let proj = project(home);
    let runs = runs(&proj, "serve");
    let url = s.url();
    hook_and_drain(
        home,
        &proj,
        &runs,
        &[
            ("AI_MEMORY_HOOK_URL", url.as_str()),
            ("AI_MEMORY_AUTH_TOKEN", TOKEN),
        ],
    );
    // Every record went to the server: the client's spool is empty, and the
    // server's data dir holds them all.
    let spool = home.join(".memhook-data").join("spool");
    let left = fs::read_dir(&spool)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(left, 0, "records left in the client spool");
    // The same payloads, posted as plain ai-memory payloads (no memhook
    // record) in batches of the most a request may carry: the server
    // builds and redacts the records.
    let items: Vec<Value> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let event = r.payload["hook_event_name"]
                .as_str()
                .or(r.payload["hook"].as_str())
                .unwrap();
            let agent = r.agent;
            let key = i + 1;
            json!({
                "url": format!("/hook?event={event}&agent={agent}&project=demo&ingest_key={key:032x}"),
                "body": r.payload,
            })
        })
        .collect();
    for batch in items.chunks(memhook_sinks::http::MAX_BATCH_ITEMS) {
        let body = serde_json::to_vec(batch).unwrap();
        let (code, text) = request(
            "POST",
            &format!("{url}/hook/batch"),
            Some(&body),
            Some(TOKEN),
        );
        assert_eq!(code, 200, "{text}");
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap()["accepted"],
            batch.len(),
            "{text}"
        );
        for sec in secrets() {
            assert!(
                !text.contains(&sec.middle),
                "the reply echoed a {}",
                sec.kind
            );
        }
    }
    assert_clean(&[&server.path().join(".memhook-data")], &runs);
    // And nothing leaked on the client side either.
    let mut files = Vec::new();
    walk(&home.join(".memhook-data"), &mut files);
    for (path, bytes) in &files {
        for sec in secrets() {
            assert!(
                !contains(bytes, &sec.middle),
                "{} in {}",
                sec.kind,
                path.display()
            );
        }
    }
}
