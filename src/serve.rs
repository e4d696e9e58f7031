//! `memhook serve`: the embedded store over the ai-memory hook protocol
//! (`POST /hook`, `POST /hook/batch`, `GET /handoff`, `GET /healthz`).
//!
//! Blocking and small: tiny_http accepts connections, a few worker threads
//! (each with its own SQLite connection) answer requests one at a time.
//! Loopback only unless `--allow-remote` is given and a token is configured;
//! bearer auth whenever a token is configured; bodies over
//! [`MAX_BODY_BYTES`] get 413; names are validated with a 400 that names the
//! parameter. SIGTERM/SIGINT stop it after the requests in hand are answered,
//! so a record is either committed or was never acknowledged.
//! Wire format: `docs/protocol.md`.

use std::io::Read;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tiny_http::{Header, Method, Request, Response, Server};

use crate::cli::{CmdResult, ServeArgs};
use crate::names;
use crate::record::{Record, RecordScope, RecordTool, RECORD_VERSION};
use crate::scope;
use crate::sink::http::wire::{self, Query};
use crate::sink::http::MAX_BATCH_ITEMS;
use crate::sink::store::Store;

/// Largest request body accepted (413 beyond).
pub const MAX_BODY_BYTES: u64 = 10 * 1024 * 1024;
/// Largest serialised record accepted in a `memhook_record` body member.
pub const MAX_RECORD_BYTES: usize = 64 * 1024;
/// Largest record excerpt (the record format's biggest cap, prompts: 16 KiB).
pub const MAX_RECORD_BODY_BYTES: usize = 16 * 1024;
/// Longest record title, in characters.
pub const MAX_TITLE_CHARS: usize = 80;
/// Longest `ingest_key` (ai-memory's rule: 1–64 of `[A-Za-z0-9_-]`).
pub const MAX_INGEST_KEY_LEN: usize = 64;
/// Worker threads answering requests (each holds one store connection).
pub const WORKERS: usize = 4;
/// How often idle workers look at the stop flag.
const POLL: Duration = Duration::from_millis(100);

/// Set by SIGTERM/SIGINT.
static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

fn install_signal_handlers() {
    let handler: extern "C" fn(libc::c_int) = on_signal;
    for sig in [libc::SIGTERM, libc::SIGINT] {
        // SAFETY: the handler only stores to an atomic, which is
        // async-signal-safe; sigaction is given a zeroed, valid struct.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = handler as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
        }
    }
}

/// Resolve `--listen` and apply the exposure rule: loopback only, unless
/// `allow_remote` and a token is configured.
fn listen_addr(listen: &str, allow_remote: bool, has_token: bool) -> Result<SocketAddr, String> {
    let addr = listen
        .to_socket_addrs()
        .map_err(|e| {
            format!("--listen {listen:?}: {e} (expected HOST:PORT, e.g. 127.0.0.1:49374)")
        })?
        .next()
        .ok_or_else(|| format!("--listen {listen:?} resolves to no address"))?;
    if !addr.ip().is_loopback() {
        if !allow_remote {
            return Err(format!(
                "refusing to listen on {addr}: it is not a loopback address. memhook serve is \
                 local by default; pass --allow-remote (with a token in AI_MEMORY_AUTH_TOKEN or \
                 <data dir>/auth-token) to serve other machines"
            ));
        }
        if !has_token {
            return Err(format!(
                "--allow-remote on {addr} needs a bearer token: set AI_MEMORY_AUTH_TOKEN or write \
                 one to <data dir>/auth-token (mode 0600)"
            ));
        }
    }
    Ok(addr)
}

pub fn run(args: &ServeArgs, data_dir: Option<&Path>) -> CmdResult {
    let data_dir = crate::data_dir::resolve(data_dir)?;
    crate::data_dir::ensure_private_dir(&data_dir)?;
    let token = crate::sink::auth_token(&data_dir);
    let addr = listen_addr(&args.listen, args.allow_remote, token.is_some())?;
    // Open (and migrate) once before any worker runs.
    let first = Store::open(&data_dir)?;
    let server = Server::http(addr).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = server.server_addr().to_ip().unwrap_or(addr);
    let server = Arc::new(server);
    install_signal_handlers();
    let auth = Arc::new(token.map(|t| Sha256::digest(format!("Bearer {t}").as_bytes()).to_vec()));
    eprintln!(
        "memhook serve: listening on http://{local} (data dir {}, auth: {})",
        data_dir.display(),
        if auth.is_some() {
            "bearer token"
        } else {
            "none"
        }
    );
    if !local.ip().is_loopback() {
        eprintln!(
            "memhook serve: warning: plain HTTP on {local}; put a TLS proxy in front of it \
             for traffic that leaves this machine"
        );
    }
    let mut workers = Vec::new();
    let mut first = Some(first);
    for i in 0..WORKERS {
        let store = match first.take() {
            Some(s) => s,
            None => Store::open(&data_dir)?,
        };
        let ctx = Ctx {
            store,
            auth: Arc::clone(&auth),
        };
        let server = Arc::clone(&server);
        let w = std::thread::Builder::new()
            .name(format!("serve-{i}"))
            .spawn(move || worker(&server, ctx))?;
        workers.push(w);
    }
    let mut failed = false;
    for w in workers {
        failed |= w.join().map(|ok| !ok).unwrap_or(true);
    }
    eprintln!("memhook serve: stopped");
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One worker's state.
struct Ctx {
    store: Store,
    /// SHA-256 of the expected `Authorization` value, when auth is on.
    auth: Arc<Option<Vec<u8>>>,
}

/// Answer requests until asked to stop. `false` when the listener failed.
fn worker(server: &Server, mut ctx: Ctx) -> bool {
    while !STOP.load(Ordering::SeqCst) {
        match server.recv_timeout(POLL) {
            Ok(Some(req)) => handle(req, &mut ctx),
            Ok(None) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                eprintln!("memhook serve: listener failed: {e}");
                STOP.store(true, Ordering::SeqCst);
                return false;
            }
        }
    }
    true
}

/// An answer: status, content type, body.
struct Answer {
    code: u16,
    json: bool,
    body: Vec<u8>,
}

impl Answer {
    fn json(code: u16, v: Value) -> Answer {
        Answer {
            code,
            json: true,
            body: serde_json::to_vec(&v).unwrap_or_default(),
        }
    }
    fn error(code: u16, msg: impl Into<String>) -> Answer {
        Answer::json(code, json!({ "error": msg.into() }))
    }
    fn text(code: u16, text: String) -> Answer {
        Answer {
            code,
            json: false,
            body: text.into_bytes(),
        }
    }
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("static header")
}

fn handle(mut req: Request, ctx: &mut Ctx) {
    let answer = route(&mut req, ctx);
    let ctype = if answer.json {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    };
    let mut resp = Response::from_data(answer.body)
        .with_status_code(answer.code)
        .with_header(header("Content-Type", ctype));
    if answer.code == 401 {
        resp = resp.with_header(header("WWW-Authenticate", "Bearer"));
    }
    // The client may have gone away; nothing to do about it.
    let _ = req.respond(resp);
}

fn route(req: &mut Request, ctx: &mut Ctx) -> Answer {
    let url = req.url().to_string();
    let path = url.split(['?', '#']).next().unwrap_or("");
    let method = req.method().clone();
    let allowed = match path {
        "/healthz" => Method::Get,
        "/hook" | "/hook/batch" => Method::Post,
        "/handoff" => Method::Get,
        _ => return Answer::error(404, format!("no such endpoint: {path}")),
    };
    if method != allowed {
        return Answer::error(405, format!("{path} accepts {allowed} only"));
    }
    if path == "/healthz" {
        return Answer::json(
            200,
            json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")}),
        );
    }
    if let Some(expected) = ctx.auth.as_ref() {
        let given = req
            .headers()
            .iter()
            .find(|h| h.field.equiv("Authorization"))
            .map(|h| h.value.as_str().trim().to_string())
            .unwrap_or_default();
        if !digest_eq(&Sha256::digest(given.as_bytes()), expected) {
            return Answer::error(
                401,
                "missing or wrong bearer token: send `Authorization: Bearer <token>` with the \
                 token configured on the server (AI_MEMORY_AUTH_TOKEN or <data dir>/auth-token)",
            );
        }
    }
    let query = match Query::of_url(&url) {
        Ok(q) => q,
        Err(e) => return Answer::error(400, e),
    };
    match path {
        "/handoff" => handoff(&query, ctx),
        _ => {
            let body = match read_body(req) {
                Ok(b) => b,
                Err(a) => return a,
            };
            if path == "/hook" {
                hook_one(&query, &body, ctx)
            } else {
                hook_batch(&body, ctx)
            }
        }
    }
}

/// Constant-time comparison of two digests.
fn digest_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn too_large() -> Answer {
    Answer::json(
        413,
        json!({"accepted": 0, "error": format!("request body over {MAX_BODY_BYTES} bytes")}),
    )
}

fn read_body(req: &mut Request) -> Result<Vec<u8>, Answer> {
    if req.body_length().is_some_and(|n| n as u64 > MAX_BODY_BYTES) {
        return Err(too_large());
    }
    let mut body = Vec::new();
    req.as_reader()
        .take(MAX_BODY_BYTES + 1)
        .read_to_end(&mut body)
        .map_err(|e| Answer::error(400, format!("cannot read the request body: {e}")))?;
    if body.len() as u64 > MAX_BODY_BYTES {
        return Err(too_large());
    }
    Ok(body)
}

/// What to do with one hook item.
#[derive(Debug)]
enum Prepared {
    Store(Box<Record>),
    /// Accepted and deliberately not stored.
    Skip(&'static str),
}

fn hook_one(query: &Query, body: &[u8], ctx: &mut Ctx) -> Answer {
    let payload: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Answer::error(400, format!("request body is not JSON: {e}")),
    };
    match prepare(query, &payload) {
        Err(msg) => Answer::error(400, msg),
        Ok(Prepared::Skip(reason)) => Answer::json(
            200,
            json!({"accepted": 1, "stored": false, "reason": reason}),
        ),
        Ok(Prepared::Store(r)) => match ctx.store.insert(&r) {
            Ok(new) => Answer::json(
                200,
                json!({"accepted": 1, "stored": true, "new": new, "key": r.key}),
            ),
            Err(e) => {
                eprintln!("memhook serve: store error: {e}");
                Answer::error(500, format!("the store could not save the record: {e}"))
            }
        },
    }
}

fn hook_batch(body: &[u8], ctx: &mut Ctx) -> Answer {
    let items: Vec<Value> = match serde_json::from_slice(body) {
        Ok(Value::Array(a)) => a,
        Ok(_) => return Answer::error(400, "batch body must be a JSON array of {url, body}"),
        Err(e) => return Answer::error(400, format!("batch body is not JSON: {e}")),
    };
    if items.len() > MAX_BATCH_ITEMS {
        return Answer::json(
            413,
            json!({"accepted": 0, "error": format!(
                "batch of {} items; at most {MAX_BATCH_ITEMS} per request", items.len())}),
        );
    }
    let mut accepted = Vec::with_capacity(items.len());
    let mut records = Vec::new();
    let mut errors = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let prepared = match item.get("url").and_then(Value::as_str) {
            None => Err("item has no string `url`".to_string()),
            Some(url) => Query::of_url(url)
                .and_then(|q| prepare(&q, item.get("body").unwrap_or(&Value::Null))),
        };
        match prepared {
            Ok(Prepared::Store(r)) => {
                accepted.push(i);
                records.push(r);
            }
            Ok(Prepared::Skip(_)) => accepted.push(i),
            Err(msg) => errors.push(json!({"index": i, "error": msg})),
        }
    }
    if let Err(e) = ctx.store.insert_all(records.iter().map(|r| r.as_ref())) {
        eprintln!("memhook serve: store error: {e}");
        return Answer::json(
            500,
            json!({"accepted": 0, "error": format!("the store could not save the batch: {e}")}),
        );
    }
    let prefix = accepted
        .iter()
        .enumerate()
        .take_while(|(n, i)| n == *i)
        .count();
    let mut reply = json!({ "accepted": prefix });
    if prefix != accepted.len() {
        reply["accepted_indices"] = json!(accepted);
    }
    if let Some(first) = errors.first() {
        reply["failed_index"] = first["index"].clone();
        reply["errors"] = Value::Array(errors);
    }
    Answer::json(200, reply)
}

/// Validate a scope name given as query parameter `param`.
fn check_name(param: &str, value: &str) -> Result<(), String> {
    if names::is_valid_name(value) {
        Ok(())
    } else {
        Err(format!(
            "query parameter `{param}`: {}",
            names::name_problem(value)
        ))
    }
}

fn valid_key(k: &str) -> bool {
    (1..=MAX_INGEST_KEY_LEN).contains(&k.len())
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Turn one hook request (query + body) into a record to store, or a
/// deliberate skip, or a 400 message naming what is wrong.
fn prepare(query: &Query, body: &Value) -> Result<Prepared, String> {
    for p in ["workspace", "project"] {
        if let Some(v) = query.get(p) {
            check_name(p, v)?;
        }
    }
    let event = query
        .get("event")
        .ok_or("query parameter `event` is required (e.g. event=post-tool-use)")?;
    if let Some(k) = query.get("ingest_key") {
        if !valid_key(k) {
            return Err(format!(
                "query parameter `ingest_key`: must be 1-{MAX_INGEST_KEY_LEN} of A-Z a-z 0-9 '-' '_'"
            ));
        }
    }
    if capture_dropped(body) {
        return Ok(Prepared::Skip("capture policy dropped"));
    }
    let mut record = match body.get(wire::RECORD_MEMBER) {
        Some(r) => exact_record(query, r)?,
        None => plain_record(query, event, body)?,
    };
    let drop_subagent = query.truthy("drop_subagent") || record.scope.drop_subagent;
    if drop_subagent && (record.subagent || payload_is_subagent(body)) {
        return Ok(Prepared::Skip("subagent capture dropped"));
    }
    if record.disposition == "metadata-only" {
        // Whatever a client sent, a metadata-only record carries no text.
        record.title = None;
        record.body = None;
        record.files.clear();
        if let Some(t) = record.tool.as_mut() {
            t.name = None;
        }
    }
    Ok(Prepared::Store(Box::new(record)))
}

/// `_ai_memory_capture.disposition == "drop"`: the client's policy excluded it.
fn capture_dropped(body: &Value) -> bool {
    body.get(wire::CAPTURE_MEMBER)
        .and_then(|c| c.get("disposition"))
        .and_then(Value::as_str)
        == Some("drop")
}

/// The payload carries a subagent marker (`agent_id`, `agent_type`, `subagentType`).
fn payload_is_subagent(body: &Value) -> bool {
    ["agent_id", "agent_type", "subagentType", "subagent_type"]
        .iter()
        .any(|k| {
            body.get(*k)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.trim().is_empty())
        })
}

/// A memhook client's exact record, checked: version, key, names, bounds,
/// and agreement with the query.
fn exact_record(query: &Query, raw: &Value) -> Result<Record, String> {
    let size = serde_json::to_vec(raw)
        .map(|v| v.len())
        .unwrap_or(usize::MAX);
    if size > MAX_RECORD_BYTES {
        return Err(format!(
            "body member `{}` is {size} bytes; a record is at most {MAX_RECORD_BYTES}",
            wire::RECORD_MEMBER
        ));
    }
    let r: Record = serde_json::from_value(raw.clone()).map_err(|e| {
        format!(
            "body member `{}` is not a memhook record: {e}",
            wire::RECORD_MEMBER
        )
    })?;
    if r.v > RECORD_VERSION {
        return Err(format!(
            "record format v{} is newer than this server understands (v{RECORD_VERSION}); \
             upgrade memhook serve",
            r.v
        ));
    }
    if !valid_key(&r.key) {
        return Err(format!(
            "record `key` must be 1-{MAX_INGEST_KEY_LEN} of A-Z a-z 0-9 '-' '_'"
        ));
    }
    for (field, value, given) in [
        ("workspace", &r.scope.workspace, query.get("workspace")),
        ("project", &r.scope.project, query.get("project")),
        ("ingest_key", &r.key, query.get("ingest_key")),
    ] {
        if field != "ingest_key" && !names::is_valid_name(value) {
            return Err(format!(
                "record scope `{field}`: {}",
                names::name_problem(value)
            ));
        }
        if let Some(g) = given {
            if g != value {
                return Err(format!(
                    "query parameter `{field}` ({g:?}) disagrees with the record ({value:?})"
                ));
            }
        }
    }
    if r.body
        .as_ref()
        .is_some_and(|b| b.len() > MAX_RECORD_BODY_BYTES)
    {
        return Err(format!(
            "record `body` is over {MAX_RECORD_BODY_BYTES} bytes"
        ));
    }
    if r.title
        .as_ref()
        .is_some_and(|t| t.chars().count() > MAX_TITLE_CHARS)
    {
        return Err(format!(
            "record `title` is over {MAX_TITLE_CHARS} characters"
        ));
    }
    Ok(r)
}

/// First non-blank string among `keys` in `body`, bounded and printable.
fn body_str(body: &Value, keys: &[&str], max: usize) -> Option<String> {
    keys.iter().find_map(|k| {
        let s = body.get(*k)?.as_str()?.trim();
        (!s.is_empty() && s.len() <= max && !s.chars().any(char::is_control)).then(|| s.to_string())
    })
}

/// A name made from free text: lowercase, invalid bytes → `-`.
fn derive_name(text: &str) -> Option<String> {
    let s: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let s = s.trim_start_matches(['.', '_', '-']);
    let s: String = s.chars().take(names::MAX_NAME_LEN).collect();
    names::is_valid_name(&s).then_some(s)
}

/// Derive a 32-hex store key from a client's ingest key (a 32-hex key is
/// kept as is), so the same ingest key always lands on the same record.
fn store_key(ingest: &str) -> String {
    if ingest.len() == 32
        && ingest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return ingest.to_string();
    }
    let d = Sha256::digest(ingest.as_bytes());
    d[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// A fresh random 32-hex key for a payload that came without `ingest_key`
/// (such a request cannot be deduplicated).
fn mint_key() -> String {
    let mut b = [0u8; 16];
    if getrandom::fill(&mut b).is_err() {
        // No entropy: fall back to time and pid (unique enough for one server).
        let seed = format!("{}-{}", crate::timefmt::now_ms(), std::process::id());
        b.copy_from_slice(&Sha256::digest(seed.as_bytes())[..16]);
    }
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A record from a plain ai-memory agent payload (no `memhook_record`).
///
/// MINIMAL until `crate::event::normalize`, `crate::record::build` and
/// `crate::redact::clean` are on main: it keeps metadata only — event,
/// agent, session, cwd, scope, subagent flag, a validated call id — and no
/// text at all (no prompt, output, title or paths), so nothing unredacted is
/// ever stored. Switch to the shared pipeline once it lands.
fn plain_record(query: &Query, event: &str, body: &Value) -> Result<Record, String> {
    let agent = if body.get("cursor_version").is_some() {
        "cursor".to_string()
    } else {
        query
            .get("agent")
            .and_then(derive_name)
            .unwrap_or_else(|| "generic".to_string())
    };
    let cwd = body_str(
        body,
        &["cwd", "current_dir", "working_dir", "directory"],
        4096,
    )
    .or_else(|| query.get("cwd").map(str::to_string));
    let session_id = body_str(
        body,
        &["session_id", "sessionId", "sessionID", "conversationId"],
        256,
    )
    .or_else(|| query.get("session_id").map(str::to_string));
    let workspace = query.get("workspace").unwrap_or("default").to_string();
    let project = match query.get("project") {
        Some(p) => p.to_string(),
        None => cwd
            .as_deref()
            .and_then(|c| Path::new(c).file_name())
            .and_then(|n| n.to_str())
            .and_then(derive_name)
            .ok_or("query parameter `project` is required when the cwd gives no usable name")?,
    };
    let kind = wire::canonical_event(event);
    let is_tool = matches!(
        kind,
        "pre-tool-use" | "post-tool-use" | "post-tool-use-failure"
    );
    let call_id = body_str(
        body,
        &[
            "tool_use_id",
            "toolUseId",
            "tool_call_id",
            "toolCallId",
            "call_id",
            "callId",
            "callID",
        ],
        128,
    )
    .filter(|id| {
        id.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    });
    let key = match query.get("ingest_key") {
        Some(k) => store_key(k),
        None => mint_key(),
    };
    let native: String = event
        .chars()
        .filter(|c| c.is_ascii_graphic())
        .take(64)
        .collect();
    let briefing_budget = query
        .get("briefing_budget")
        .and_then(|b| b.trim().parse::<usize>().ok())
        .map(|b| b.clamp(scope::MAX_CHARS_MIN, scope::MAX_CHARS_MAX))
        .unwrap_or(scope::MAX_CHARS_DEFAULT);
    Ok(Record {
        v: RECORD_VERSION,
        key,
        occurred_ms: crate::timefmt::now_ms(),
        agent,
        event: kind.to_string(),
        native_event: native,
        session_id,
        cwd,
        scope: RecordScope {
            workspace,
            project,
            workspace_source: "query".into(),
            project_source: query
                .get("project_src")
                .unwrap_or("query")
                .chars()
                .take(16)
                .collect(),
            project_strategy: query
                .get("project_strategy")
                .filter(|s| matches!(*s, "repo-root" | "repo_root"))
                .map(|_| "repo-root")
                .unwrap_or("basename")
                .into(),
            drop_subagent: query.truthy("drop_subagent"),
            default_global: query.truthy("default_global"),
            briefing: query.truthy("briefing"),
            briefing_budget,
        },
        subagent: payload_is_subagent(body),
        tool: is_tool.then(|| RecordTool {
            family: "unknown".into(),
            name: None,
            call_id,
            outcome: None,
        }),
        capture: None,
        disposition: "metadata-only".into(),
        title: None,
        body: None,
        files: vec![],
    })
}

/// `GET /handoff`: the session-start briefing for a scope (never consumes it).
fn handoff(query: &Query, ctx: &mut Ctx) -> Answer {
    for p in ["workspace", "project"] {
        if let Some(v) = query.get(p) {
            if let Err(e) = check_name(p, v) {
                return Answer::error(400, e);
            }
        }
    }
    let workspace = query.get("workspace").unwrap_or("default").to_string();
    let project = match query.get("project").map(str::to_string).or_else(|| {
        query
            .get("cwd")
            .and_then(|c| Path::new(c).file_name())
            .and_then(|n| n.to_str())
            .and_then(derive_name)
    }) {
        Some(p) => p,
        None => {
            return Answer::error(
                400,
                "query parameter `project` is required when `cwd` gives no usable name",
            )
        }
    };
    let max_chars = query
        .get("briefing_budget")
        .and_then(|b| b.trim().parse::<usize>().ok())
        .map(|b| b.clamp(scope::MAX_CHARS_MIN, scope::MAX_CHARS_MAX))
        .unwrap_or(scope::MAX_CHARS_DEFAULT);
    let text = crate::briefing::compose(
        &ctx.store,
        (&workspace, &project),
        query.get("session_id"),
        max_chars,
        query.truthy("briefing"),
    );
    Answer::text(200, text.unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_rule() {
        assert!(listen_addr("127.0.0.1:0", false, false).is_ok());
        assert!(listen_addr("[::1]:0", false, false).is_ok());
        let e = listen_addr("0.0.0.0:0", false, true).unwrap_err();
        assert!(e.contains("--allow-remote"), "{e}");
        let e = listen_addr("0.0.0.0:0", true, false).unwrap_err();
        assert!(e.contains("AI_MEMORY_AUTH_TOKEN"), "{e}");
        assert!(listen_addr("0.0.0.0:0", true, true).is_ok());
        assert!(listen_addr("nonsense", false, false).is_err());
    }

    #[test]
    fn digests_compare_whole() {
        let a = Sha256::digest(b"Bearer x");
        assert!(digest_eq(&a, &Sha256::digest(b"Bearer x")));
        assert!(!digest_eq(&a, &Sha256::digest(b"Bearer y")));
        assert!(!digest_eq(&a, &a[..31]));
    }

    #[test]
    fn store_keys_are_stable() {
        let hex = "0123456789abcdef0123456789abcdef";
        assert_eq!(store_key(hex), hex);
        let k = store_key("some-uuid-with-dashes");
        assert_eq!(k.len(), 32);
        assert_eq!(k, store_key("some-uuid-with-dashes"));
        assert_ne!(k, store_key("other"));
    }

    #[test]
    fn prepare_rejects_bad_names_naming_the_parameter() {
        let q = Query::parse("event=stop&project=Bad%20Name").unwrap();
        let e = prepare(&q, &json!({})).unwrap_err();
        assert!(e.contains("`project`"), "{e}");
        let q = Query::parse("project=p").unwrap();
        assert!(prepare(&q, &json!({})).unwrap_err().contains("`event`"));
        let q = Query::parse("event=stop&project=p&ingest_key=a%20b").unwrap();
        assert!(prepare(&q, &json!({}))
            .unwrap_err()
            .contains("`ingest_key`"));
    }

    #[test]
    fn plain_payloads_keep_metadata_only() {
        let q =
            Query::parse("event=PostToolUse&agent=claude-code&workspace=w&ingest_key=abc").unwrap();
        let body = json!({"session_id": "s", "cwd": "/x/My Repo", "tool_use_id": "t1",
                          "tool_response": "secret output", "prompt": "p"});
        let Prepared::Store(r) = prepare(&q, &body).unwrap() else {
            panic!("stored")
        };
        assert_eq!(r.event, "post-tool-use");
        assert_eq!(r.scope.project, "my-repo");
        assert_eq!(r.tool.as_ref().unwrap().call_id.as_deref(), Some("t1"));
        assert_eq!(r.key, store_key("abc"));
        assert!(r.body.is_none() && r.title.is_none());
    }

    #[test]
    fn subagent_and_capture_drops_are_skips() {
        let q = Query::parse("event=stop&project=p&drop_subagent=true").unwrap();
        assert!(matches!(
            prepare(&q, &json!({"agent_id": "a1"})).unwrap(),
            Prepared::Skip("subagent capture dropped")
        ));
        let q = Query::parse("event=stop&project=p").unwrap();
        assert!(matches!(
            prepare(&q, &json!({"agent_id": "a1"})).unwrap(),
            Prepared::Store(_)
        ));
        assert!(matches!(
            prepare(&q, &json!({"_ai_memory_capture": {"disposition": "drop"}})).unwrap(),
            Prepared::Skip("capture policy dropped")
        ));
    }
}
