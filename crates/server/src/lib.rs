//! `memhook serve`: the embedded store over the ai-memory hook protocol
//! (`POST /hook`, `POST /hook/batch`, `GET /handoff`, `GET /healthz`).
//!
//! - [`http`]: a small bounded HTTP/1.1 server (header size, deadlines,
//!   connection count), one thread per connection;
//! - `auth`: the bearer token (on by default: a 0600 token file is
//!   written on first start), `Host` and `Origin` checks;
//! - [`ingest`]: request bodies to records, through the hook's redaction;
//! - `writer`: the single store writer with group commit;
//! - `web`: the web view at `/` and its JSON API under `/api/`
//!   (`docs/ui.md`), behind the same checks plus a login;
//! - the store behind it all is a `dyn memhook_store::model::Database` —
//!   SQLite in the data dir, or PostgreSQL with `--database` /
//!   `MEMHOOK_DATABASE_URL` (`docs/postgres.md`): ingest, named-token
//!   checks, `/handoff`, the web view's reads and forget; nothing here names
//!   an engine but the line that picks one.
//!
//! Loopback only unless `--allow-remote`; `--no-auth` (loopback only) is the
//! logged opt-out. Bodies over [`MAX_BODY_BYTES`] get 413; names are
//! validated with a 400 that names the parameter; a store that cannot write
//! answers 503. SIGTERM/SIGINT stop it after the requests in hand are
//! answered, so a record is either committed or was never acknowledged.
//! Wire format: `docs/protocol.md`.
// The doc comments of `serve`'s arguments are its `--help` text, as users
// read it (`<data dir>`), not rustdoc markup.
#![allow(rustdoc::invalid_html_tags)]

mod auth;
pub mod http;
pub mod ingest;
pub mod log;
pub mod proof;
pub mod retention;
pub mod running;
mod web;
mod writer;

use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

/// What `run` returns: the exit code, or an error `main` prints and turns into 2.
pub type CmdResult = Result<std::process::ExitCode, Box<dyn std::error::Error + Send + Sync>>;
use memhook_delivery::wire::Query;
use memhook_store_pg::PgStore;

use self::auth::{Caller, Denied};
use self::http::{Head, Response};
use memhook_store::model::Database;
use memhook_store::sqlite::database::SqliteDatabase;

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on. Loopback unless you say otherwise.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:49374")]
    pub listen: String,
    /// Allow a non-loopback --listen address (clients there need the
    /// server's token).
    #[arg(long)]
    pub allow_remote: bool,
    /// Accept requests without a token (loopback only). Without it, the
    /// server requires AI_MEMORY_AUTH_TOKEN or the token in
    /// <data dir>/auth-token, written (mode 0600) on first start.
    #[arg(long)]
    pub no_auth: bool,
    /// Accept requests from web pages of this origin
    /// (e.g. http://localhost:3000; repeatable). Any other Origin gets 403.
    #[arg(long, value_name = "ORIGIN")]
    pub allow_origin: Vec<String>,
    /// The PostgreSQL store (default: the data dir's SQLite file).
    #[command(flatten)]
    pub db: memhook_store_pg::config::DatabaseArgs,
}
use self::ingest::Prepared;
use self::writer::{Unavailable, Writer};

pub use self::http::{
    BODY_DEADLINE, HEADER_DEADLINE, IDLE_DEADLINE, MAX_CONNECTIONS, MAX_HEADERS, MAX_HEADER_BYTES,
};
pub use self::ingest::{
    MAX_INGEST_KEY_LEN, MAX_PATH_BYTES, MAX_RECORD_BODY_BYTES, MAX_RECORD_FILES, MAX_SHORT_FIELD,
    MAX_TITLE_CHARS,
};
pub use self::web::{
    escape as html_escape, COOKIE_PREFIX, LOGIN_CODE_PATH, LOGIN_CODE_TTL, LOGIN_CODE_TTL_ENV,
    MAX_FORM_BYTES, MAX_LOGIN_CODES, MAX_SESSIONS, SECURITY_HEADERS, SESSION_TTL,
};

/// Largest request body accepted (413 beyond).
pub const MAX_BODY_BYTES: u64 = 10 * 1024 * 1024;

/// Set by SIGTERM/SIGINT.
static STOP: AtomicBool = AtomicBool::new(false);

#[cfg(unix)]
extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Windows: Ctrl-C, Ctrl-Break and closing the console stop the server
/// the way SIGINT/SIGTERM do.
#[cfg(windows)]
fn install_signal_handlers() {
    unsafe extern "system" fn on_ctrl(_: u32) -> windows_sys::core::BOOL {
        STOP.store(true, Ordering::SeqCst);
        1
    }
    // SAFETY: the handler only stores to an atomic.
    unsafe { windows_sys::Win32::System::Console::SetConsoleCtrlHandler(Some(on_ctrl), 1) };
}

#[cfg(unix)]
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
/// `allow_remote`; `--no-auth` only on loopback.
fn listen_addr(listen: &str, allow_remote: bool, no_auth: bool) -> Result<SocketAddr, String> {
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
                 local by default; pass --allow-remote to serve other machines (they need the \
                 token from <data dir>/auth-token in AI_MEMORY_AUTH_TOKEN)"
            ));
        }
        if no_auth {
            return Err(format!(
                "--no-auth is for loopback only: refusing to serve {addr} without a token \
                 (drop --no-auth; the token is in <data dir>/auth-token)"
            ));
        }
    }
    Ok(addr)
}

pub fn run(args: &ServeArgs, data_dir: Option<&Path>) -> CmdResult {
    let data_dir = memhook_core::data_dir::resolve(data_dir)?;
    memhook_core::data_dir::ensure_private_dir(&data_dir)?;
    // When `memhook ui` started this server, stderr is its serve log: keep
    // it within its cap while the server runs (`log.rs`).
    log::log_into(&data_dir);
    let addr = listen_addr(&args.listen, args.allow_remote, args.no_auth)?;
    let origins = args
        .allow_origin
        .iter()
        .map(|o| auth::check_origin_arg(o))
        .collect::<Result<Vec<_>, _>>()?;
    let token = if args.no_auth {
        None
    } else {
        Some(auth::server_token(&data_dir)?)
    };
    let database = args.db.target()?;
    let (db, retention_target): (Arc<dyn Database>, retention::Target) = match database {
        // Open (and migrate) once before serving: a store that cannot open
        // is a start-up error, not a stream of 503s.
        None => (
            Arc::new(SqliteDatabase::open(&data_dir)?),
            retention::Target::Sqlite,
        ),
        Some(target) => {
            let pg = Arc::new(PgStore::new(target, &data_dir));
            match pg.ensure_schema() {
                Ok(()) => {}
                // A database that is down (or still starting) is waited
                // for: every request tries again and answers 503 meanwhile.
                Err(e) if e.is_unavailable() => {
                    crate::log::say!(
                        "memhook serve: warning: {e}; answering 503 until it can be reached"
                    )
                }
                // Wrong password, no such database, a newer schema: the
                // operator must act.
                Err(e) => return Err(e.into()),
            }
            (pg.clone(), retention::Target::Pg(pg))
        }
    };
    let listener = TcpListener::bind(addr).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AddrInUse {
            // Say who holds it when it is memhook (issue 26).
            running::in_use_message(&data_dir, addr, token.as_ref().map(|(t, _)| t.as_str()))
        } else {
            format!("cannot listen on {addr}: {e}")
        }
    })?;
    let local = listener.local_addr().unwrap_or(addr);
    install_signal_handlers();
    let done = Arc::new(AtomicBool::new(false));
    let store_note = db.describe();
    let (writer, writer_thread) = Writer::start(Arc::clone(&db), Arc::clone(&done))?;
    let retention_thread = retention::start(retention_target, data_dir.clone(), Arc::clone(&done));
    let app = Arc::new(App {
        owner_token: token.as_ref().map(|(t, _)| t.clone()),
        local,
        guard: auth::Guard::new(token.as_ref().map(|(t, _)| t.as_str()), local, origins),
        writer,
        web: web::Web::new(&data_dir, local.port(), token.is_none()),
        db,
    });
    let auth_note = match &token {
        Some((_, source)) => source.describe(),
        None => "none".to_string(),
    };
    if token.is_none() {
        crate::log::say!(
            "memhook serve: WARNING: --no-auth: any local user or program (and a web page \
             that finds this port) can write into this store and into your agents' \
             session-start context. Drop --no-auth to require the token."
        );
    }
    crate::log::say!(
        "memhook serve: listening on http://{local} (data dir {}, store {store_note}, auth: \
         {auth_note})",
        data_dir.display()
    );
    if !local.ip().is_loopback() {
        crate::log::say!(
            "memhook serve: warning: plain HTTP on {local}; put a TLS proxy in front of it \
             for traffic that leaves this machine"
        );
    }
    let served = http::serve(listener, app, &STOP);
    // The requests in hand were answered (or the grace passed): let the
    // writer finish what it holds, then stop it.
    done.store(true, Ordering::SeqCst);
    let _ = writer_thread.join();
    let _ = retention_thread.join();
    match served {
        Ok(()) => {
            crate::log::say!("memhook serve: stopped");
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            crate::log::say!("memhook serve: listener failed: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

/// What every connection thread shares.
struct App {
    /// The server's own token (`None` under `--no-auth`): the key of the
    /// `/healthz` proof ([`proof`]).
    owner_token: Option<String>,
    /// The address it listens on (named in the proof).
    local: SocketAddr,
    guard: auth::Guard,
    writer: Writer,
    /// The web view and its API.
    web: web::Web,
    /// The store: every read and write goes through it.
    db: Arc<dyn Database>,
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
    /// 503: the store cannot take it now; clients retry without charge.
    fn unavailable(e: Unavailable) -> Answer {
        Answer::json(503, json!({"accepted": 0, "error": e.0}))
    }

    fn into_response(self) -> Response {
        let ctype = if self.json {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        };
        let code = self.code;
        let mut resp = Response::new(code, ctype, self.body);
        if code == 401 {
            resp = resp.with_header("WWW-Authenticate", "Bearer");
        }
        if code == 503 {
            resp = resp.with_header("Retry-After", "1");
        }
        resp
    }
}

/// The endpoints: path → method.
const ROUTES: &[(&str, &str)] = &[
    ("/healthz", "GET"),
    ("/hook", "POST"),
    ("/hook/batch", "POST"),
    ("/handoff", "GET"),
];

impl App {
    /// The name of the live named token `given` is (one store query, no cache).
    fn named_token(&self, given: &str) -> Result<Option<String>, String> {
        self.db.named_token(given).map_err(|e| e.to_string())
    }

    /// Everything decided from the head alone: `Err` answers now. `Ok`
    /// carries who sent it (for `/healthz`: nobody).
    fn check_head(&self, head: &Head) -> Result<Caller, Answer> {
        let origin = self
            .guard
            .check_site(head)
            .map_err(|r| Answer::error(r.code, r.message))?;
        let path = head.path();
        let Some((_, method)) = ROUTES.iter().find(|(p, _)| *p == path) else {
            return Err(Answer::error(404, format!("no such endpoint: {path}")));
        };
        if head.method == "OPTIONS" && origin.is_some() {
            // A CORS preflight from an allowed origin.
            return Err(Answer::text(204, String::new()));
        }
        if head.method != *method {
            return Err(Answer::error(405, format!("{path} accepts {method} only")));
        }
        let caller = if path == "/healthz" {
            Caller { token_name: None }
        } else {
            match self.guard.caller(head, |t| self.named_token(t)) {
                Ok(c) => c,
                Err(Denied::Unauthorized) => {
                    return Err(Answer::error(
                        401,
                        "missing, wrong or revoked bearer token: send `Authorization: Bearer \
                         <token>` with the server's token (AI_MEMORY_AUTH_TOKEN, or the file \
                         auth-token in its data dir) or a token from `memhook token add`",
                    ))
                }
                Err(Denied::Unavailable(why)) => {
                    crate::log::say!("memhook serve: {why}");
                    return Err(Answer::unavailable(Unavailable(why)));
                }
            }
        };
        if head.content_length > MAX_BODY_BYTES {
            return Err(too_large());
        }
        Ok(caller)
    }

    /// Add the CORS headers an allowed origin needs.
    fn finish(&self, head: &Head, answer: Answer) -> Response {
        let mut resp = answer.into_response();
        if let Ok(Some(origin)) = self.guard.check_site(head) {
            resp = resp
                .with_header("Access-Control-Allow-Origin", origin)
                .with_header("Vary", "Origin");
            if head.method == "OPTIONS" {
                resp = resp
                    .with_header("Access-Control-Allow-Methods", "GET, POST")
                    .with_header(
                        "Access-Control-Allow-Headers",
                        "Authorization, Content-Type",
                    )
                    .with_header("Access-Control-Max-Age", "600");
            }
        }
        resp
    }

    fn route(&self, head: &Head, caller: Caller, body: &[u8]) -> Answer {
        let path = head.path();
        let query = match Query::of_url(&head.target) {
            Ok(q) => q,
            Err(e) => return Answer::error(400, e),
        };
        if path == "/healthz" {
            return self.healthz(&query);
        }
        match path {
            "/handoff" => self.handoff(&query),
            "/hook" => self.hook_one(&query, body, caller.token_name),
            _ => self.hook_batch(body, caller.token_name),
        }
    }

    /// `GET /healthz[?challenge=…]`: alive; with a challenge, the proof
    /// that this server holds the owner's token ([`proof`]).
    fn healthz(&self, query: &Query) -> Answer {
        let mut v = json!({"status": "ok", "version": env!("CARGO_PKG_VERSION")});
        if let Some(c) = query.get(proof::CHALLENGE_PARAM) {
            if !proof::valid_challenge(c) {
                return Answer::error(
                    400,
                    format!(
                        "{}: expected {} lowercase hex digits",
                        proof::CHALLENGE_PARAM,
                        proof::CHALLENGE_HEX_LEN
                    ),
                );
            }
            v["proof"] = match &self.owner_token {
                Some(t) => proof::proof(t, self.local, c).into(),
                // Nothing to prove with: `ui` says so.
                None => Value::Null,
            };
            // Which process to stop (`memhook ui --stop`), told only on
            // loopback and only beside a proof (`running`).
            if self.owner_token.is_some() && self.local.ip().is_loopback() {
                v["pid"] = std::process::id().into();
            }
        }
        Answer::json(200, v)
    }

    fn hook_one(&self, query: &Query, body: &[u8], token_name: Option<String>) -> Answer {
        // Skipped members are not checked for UTF-8 by the typed reader: the
        // whole body must be text first (the tree reader names a bad byte).
        let prepared = match std::str::from_utf8(body) {
            Ok(text) => ingest::prepare_text(query, text),
            Err(_) => serde_json::from_slice::<Value>(body).map(|v| ingest::prepare(query, &v)),
        };
        let prepared = match prepared {
            Ok(p) => p,
            Err(e) => return Answer::error(400, format!("request body is not JSON: {e}")),
        };
        match prepared {
            Err(msg) => Answer::error(400, msg),
            Ok(Prepared::Skip(reason)) => Answer::json(
                200,
                json!({"accepted": 1, "stored": false, "reason": reason}),
            ),
            Ok(Prepared::Store(r)) => {
                let key = r.key.clone();
                match self.writer.insert(vec![*r], token_name) {
                    Ok(new) => Answer::json(
                        200,
                        json!({"accepted": 1, "stored": true, "new": new[0], "key": key}),
                    ),
                    Err(e) => Answer::unavailable(e),
                }
            }
        }
    }

    fn hook_batch(&self, body: &[u8], token_name: Option<String>) -> Answer {
        let prepared = match ingest::fast_batch(body) {
            Some(p) => p,
            None => match ingest::tree_batch(body) {
                Ok(p) => p,
                Err(answer) => return answer,
            },
        };
        let mut accepted = Vec::with_capacity(prepared.len());
        let mut records = Vec::new();
        let mut errors = Vec::new();
        for (i, p) in prepared.into_iter().enumerate() {
            match p {
                Ok(Prepared::Store(r)) => {
                    accepted.push(i);
                    records.push(*r);
                }
                Ok(Prepared::Skip(_)) => accepted.push(i),
                Err(msg) => errors.push(json!({"index": i, "error": msg})),
            }
        }
        if let Err(e) = self.writer.insert(records, token_name) {
            return Answer::unavailable(e);
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

    /// `GET /handoff`: the session-start briefing for a scope (never consumes it).
    fn handoff(&self, query: &Query) -> Answer {
        for p in ["workspace", "project"] {
            if let Some(v) = query.get(p) {
                if let Err(e) = ingest::check_name(p, v) {
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
                .and_then(ingest::derive_name)
        }) {
            Some(p) => p,
            None => {
                return Answer::error(
                    400,
                    "query parameter `project` is required when `cwd` gives no usable name",
                )
            }
        };
        let (scope, session) = (
            (workspace.as_str(), project.as_str()),
            query.get("session_id"),
        );
        let (max_chars, digest) = (ingest::briefing_budget(query), query.truthy("briefing"));
        let text = memhook_store::model::read(&*self.db, |r| {
            memhook_store::briefing::compose_from(r, scope, session, max_chars, digest)
        });
        match text {
            Ok(text) => Answer::text(200, text.unwrap_or_default()),
            Err(e) => {
                crate::log::say!("memhook serve: no briefing for {workspace}/{project}: {e}");
                Answer::error(
                    503,
                    "the store could not compose a briefing; see the server's log",
                )
            }
        }
    }
}

impl http::Handler for App {
    type Ticket = Option<Caller>;

    fn check(&self, head: &Head) -> Result<Option<Caller>, Response> {
        if web::is_web_path(head.path()) {
            return self
                .web
                .check(head, &self.guard)
                .map(|_| None)
                .map_err(web::secure);
        }
        self.check_head(head)
            .map(Some)
            .map_err(|a| web::secure(self.finish(head, a)))
    }

    fn answer(&self, head: &Head, caller: Option<Caller>, body: Vec<u8>) -> Response {
        let Some(caller) = caller.filter(|_| !web::is_web_path(head.path())) else {
            return web::secure(self.web.answer(head, &body, &self.guard, &*self.db));
        };
        let answer = self.route(head, caller, &body);
        web::secure(self.finish(head, answer))
    }
}

fn too_large() -> Answer {
    Answer::json(
        413,
        json!({"accepted": 0, "error": format!("request body over {MAX_BODY_BYTES} bytes")}),
    )
}

/// Fuzzing entry (`fuzz/`, target `serve`): read one request the way the
/// server does — its head, its target's query, and its body as a `/hook` and
/// as a `/hook/batch` body — without a socket or a store. Not an API.
#[doc(hidden)]
pub fn fuzz_request(data: &[u8]) {
    let (head, body) = match data.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(i) => (&data[..i], &data[i + 4..]),
        None => (data, &[][..]),
    };
    let query = http::parse_head(head)
        .ok()
        .and_then(|h| memhook_delivery::wire::Query::of_url(&h.target).ok());
    if let Ok(text) = std::str::from_utf8(body) {
        let fallback = memhook_delivery::wire::Query::of_url("/hook?agent=claude-code");
        if let Some(q) = query.or(fallback.ok()) {
            let _ = ingest::prepare_text(&q, text);
        }
    }
    let _ = ingest::fast_batch(body);
    let _ = ingest::tree_batch(body);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_rule() {
        assert!(listen_addr("127.0.0.1:0", false, false).is_ok());
        assert!(listen_addr("127.0.0.1:0", false, true).is_ok());
        assert!(listen_addr("[::1]:0", false, false).is_ok());
        let e = listen_addr("0.0.0.0:0", false, false).unwrap_err();
        assert!(e.contains("--allow-remote"), "{e}");
        let e = listen_addr("0.0.0.0:0", true, true).unwrap_err();
        assert!(e.contains("--no-auth") && e.contains("loopback"), "{e}");
        assert!(listen_addr("0.0.0.0:0", true, false).is_ok());
        assert!(listen_addr("nonsense", false, false).is_err());
    }
}
