//! The HTTP sink: delivers records to an ai-memory compatible server
//! (`memhook serve` or ai-memory itself) over the hook protocol, and fetches
//! the session-start handoff. Wire format: `wire.rs` and `docs/protocol.md`.
//!
//! One blocking ureq agent, no proxy, no redirects, explicit connect and
//! global timeouts: every call to [`HttpSink::deliver`] and [`handoff`]
//! returns within its time budget, even against a server that accepts a
//! connection and never answers.

use memhook_delivery::wire;

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use memhook_core::event::Event;
use memhook_core::scope::Scope;
use memhook_delivery::spool::SpoolEntry;

use memhook_delivery::sink::{ItemOutcome, Sink};
use memhook_delivery::spool::{check_base_url, UrlError};

/// Most items in one `POST /hook/batch` (the server refuses more with 413).
pub const MAX_BATCH_ITEMS: usize = 256;
/// Soft size cap of one batch body (the first item always goes).
pub const MAX_BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Largest reply body read from `/hook` or `/hook/batch`.
pub const MAX_REPLY_BYTES: u64 = 1024 * 1024;
/// Largest handoff text read from `/handoff`.
pub const MAX_HANDOFF_BYTES: u64 = 256 * 1024;
/// Longest a TCP/TLS connect may take (never more than the call's budget).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// Taken off the time left for each request (at most a quarter of it): a
/// timed-out read wakes up late on a loaded machine (measured: 4–28 ms), and
/// the budget is a hard promise to the agent.
pub const DEADLINE_SLACK: Duration = Duration::from_millis(25);
/// Longest piece of a server's error text kept in a reason.
const MAX_SERVER_TEXT: usize = 160;

/// Why a request did not get a usable answer. Never holds the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// The server URL cannot be used as configured.
    InvalidUrl(UrlError),
    /// Refused, unresolvable, reset or timed out.
    Unreachable { url: String, detail: String },
    /// 401: the server wants a (different) bearer token.
    Unauthorized,
    /// 403: the server refuses this request for good.
    Forbidden { detail: String },
    /// Any other non-2xx status.
    Status { code: u16, detail: String },
    /// A 2xx whose body is not what the protocol promises.
    Malformed { detail: String },
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::InvalidUrl(e) => e.fmt(f),
            HttpError::Unreachable { url, detail } => write!(
                f,
                "server {url} is unreachable: {detail} (is it running? records stay in the spool)"
            ),
            HttpError::Unauthorized => write!(
                f,
                "server refused the bearer token (401): set AI_MEMORY_AUTH_TOKEN or write the token \
                 to <data dir>/auth-token (mode 0600)"
            ),
            HttpError::Forbidden { detail } => {
                write!(f, "server forbids this request (403): {detail}")
            }
            HttpError::Status { code, detail } => write!(f, "server answered {code}: {detail}"),
            HttpError::Malformed { detail } => {
                write!(f, "server reply does not follow the hook protocol: {detail}")
            }
        }
    }
}

impl std::error::Error for HttpError {}

impl From<UrlError> for HttpError {
    fn from(e: UrlError) -> HttpError {
        HttpError::InvalidUrl(e)
    }
}

/// The answer to one request.
enum Reply {
    Status {
        code: u16,
        text: String,
    },
    Failed(HttpError),
    /// The call's time budget was used up before this request could start:
    /// nothing was tried, nothing is the server's fault.
    NoTime,
}

/// Reason for items left untried because the time budget ran out.
const NO_TIME: &str = "not attempted: the delivery time budget was used up; retrying later";

fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .user_agent(concat!("memhook/", env!("CARGO_PKG_VERSION")))
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .build()
        .new_agent()
}

/// One line of server text, printable ASCII only, bounded.
fn server_text(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut out: String = line
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { ' ' })
        .take(MAX_SERVER_TEXT)
        .collect();
    out = out.trim().to_string();
    if out.is_empty() {
        out.push_str("(no message)");
    }
    out
}

fn transport_detail(e: &ureq::Error, budget: Duration) -> String {
    match e {
        ureq::Error::Timeout(_) => format!("no answer within {} ms", budget.as_millis()),
        ureq::Error::HostNotFound => "host not found".to_string(),
        ureq::Error::ConnectionFailed => "connection failed".to_string(),
        ureq::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => "connection refused".to_string(),
            std::io::ErrorKind::ConnectionReset => "connection reset".to_string(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                format!("no answer within {} ms", budget.as_millis())
            }
            _ => io.to_string(),
        },
        other => other.to_string(),
    }
}

/// Send one request with whatever time is left before `deadline`.
fn exchange(
    agent: &ureq::Agent,
    base: &str,
    method_post: Option<&[u8]>,
    url: &str,
    token: Option<&str>,
    deadline: Instant,
    limit: u64,
) -> Reply {
    let left = deadline.saturating_duration_since(Instant::now());
    // Keep some slack so that timer and scheduling latency still land the
    // call inside the caller's budget.
    let budget = left.saturating_sub(DEADLINE_SLACK.min(left / 4));
    if budget < Duration::from_millis(1) {
        return Reply::NoTime;
    }
    let connect = budget.min(CONNECT_TIMEOUT);
    let bearer = token.map(|t| format!("Bearer {t}"));
    let result = match method_post {
        Some(body) => {
            let mut req = agent
                .post(url)
                .config()
                .timeout_global(Some(budget))
                .timeout_connect(Some(connect))
                .build()
                .header("Content-Type", "application/json");
            if let Some(b) = &bearer {
                req = req.header("Authorization", b);
            }
            req.send(body)
        }
        None => {
            let mut req = agent
                .get(url)
                .config()
                .timeout_global(Some(budget))
                .timeout_connect(Some(connect))
                .build();
            if let Some(b) = &bearer {
                req = req.header("Authorization", b);
            }
            req.call()
        }
    };
    match result {
        Ok(mut resp) => {
            let code = resp.status().as_u16();
            match resp.body_mut().with_config().limit(limit).read_to_string() {
                Ok(text) => Reply::Status { code, text },
                // A 2xx we cannot read is malformed; other statuses keep their meaning.
                Err(e) if (200..300).contains(&code) => Reply::Failed(HttpError::Malformed {
                    detail: format!("reply body unreadable: {}", transport_detail(&e, budget)),
                }),
                Err(_) => Reply::Status {
                    code,
                    text: String::new(),
                },
            }
        }
        Err(e) => Reply::Failed(HttpError::Unreachable {
            url: base.to_string(),
            detail: transport_detail(&e, budget),
        }),
    }
}

/// Whether `/hook/batch` works on this server, as learnt during this pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchSupport {
    Unknown,
    Yes,
    No,
}

/// Delivers spool entries to one ai-memory compatible server.
pub struct HttpSink {
    agent: ureq::Agent,
    base: Result<String, HttpError>,
    token: Option<String>,
    data_dir: Option<PathBuf>,
    timeout: Duration,
    /// The caller's deadline: no request outlives it (see [`HttpSink::until`]).
    until: Option<Instant>,
    batch: BatchSupport,
    unreachable: bool,
    /// The last batch body's buffer, reused for the next one.
    buf: Vec<u8>,
}

impl HttpSink {
    /// A sink for the server at `base_url` (`http[s]://host[:port][/base]`).
    /// `timeout` bounds each [`Sink::deliver`] call as a whole.
    pub fn new(base_url: &str, token: Option<String>, timeout: Duration) -> HttpSink {
        HttpSink {
            agent: agent(),
            base: check_base_url(base_url).map_err(HttpError::from),
            token,
            data_dir: None,
            timeout,
            until: None,
            batch: BatchSupport::Unknown,
            unreachable: false,
            buf: Vec::new(),
        }
    }

    /// Bound every delivery by `deadline` as well as by the per-call
    /// timeout: a drain's budget is a deadline, and a request in flight must
    /// not carry it past its end. Past the deadline nothing is sent and the
    /// items are free retries.
    pub fn until(mut self, deadline: Option<Instant>) -> HttpSink {
        self.until = deadline;
        self
    }

    /// Re-read the live token from this data dir (`sink::auth_token`) when the
    /// server answers 401; without it only `AI_MEMORY_AUTH_TOKEN` is re-read.
    pub fn with_data_dir(mut self, data_dir: &Path) -> HttpSink {
        self.data_dir = Some(data_dir.to_path_buf());
        self
    }

    fn live_token(&self) -> Option<String> {
        match &self.data_dir {
            Some(d) => memhook_delivery::sink::auth_token(d),
            None => std::env::var(memhook_delivery::sink::AUTH_TOKEN_ENV)
                .ok()
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty() && t.bytes().all(|b| b.is_ascii_graphic())),
        }
    }

    /// Send with the current token; on 401 retry once with the live token
    /// when it differs (it was rotated since the drainer started).
    fn send(&mut self, base: &str, url: &str, body: Option<&[u8]>, deadline: Instant) -> Reply {
        let first = exchange(
            &self.agent,
            base,
            body,
            url,
            self.token.as_deref(),
            deadline,
            MAX_REPLY_BYTES,
        );
        if let Reply::Status { code: 401, .. } = first {
            let live = self.live_token();
            if live.is_some() && live != self.token {
                self.token = live;
                return exchange(
                    &self.agent,
                    base,
                    body,
                    url,
                    self.token.as_deref(),
                    deadline,
                    MAX_REPLY_BYTES,
                );
            }
        }
        first
    }

    /// Deliver `chunk` with one `POST /hook/batch`. `None` = the server has
    /// no batch endpoint (404/405/413): use single requests.
    fn deliver_batch(
        &mut self,
        base: &str,
        chunk: &[SpoolEntry],
        deadline: Instant,
    ) -> Option<Vec<ItemOutcome>> {
        // Serialised straight from the records into one buffer, kept
        // between batches (no per-item JSON tree).
        let mut body = std::mem::take(&mut self.buf);
        body.clear();
        wire::write_batch(chunk.iter().map(|e| &e.record), &mut body);
        let url = format!("{base}/hook/batch");
        let n = chunk.len();
        let reply = self.send(base, &url, Some(&body), deadline);
        self.buf = body;
        match reply {
            Reply::Status {
                code: 404 | 405 | 413,
                ..
            } => None,
            Reply::Status { code, text } if (200..300).contains(&code) => {
                self.batch = BatchSupport::Yes;
                Some(match wire::BatchReply::parse(&text, n) {
                    Ok(reply) => batch_outcomes(&reply, n),
                    Err(problem) => {
                        failed_first(n, &HttpError::Malformed { detail: problem }.to_string())
                    }
                })
            }
            Reply::Status { code: 429, text } => {
                // The server may say which items it took before saturating.
                let mut out = all_free(n, "server is busy (429); retrying later");
                if let Ok(reply) = wire::BatchReply::parse(&text, n) {
                    for i in reply.accepted {
                        out[i] = ItemOutcome::Delivered;
                    }
                }
                Some(out)
            }
            Reply::Status { code, text } => Some(status_outcomes(code, &text, n)),
            Reply::Failed(e) => Some(self.failure_outcomes(&e, n)),
            Reply::NoTime => Some(all_free(n, NO_TIME)),
        }
    }

    /// Deliver each entry with its own `POST /hook?…`.
    fn deliver_single(
        &mut self,
        base: &str,
        chunk: &[SpoolEntry],
        deadline: Instant,
    ) -> Vec<ItemOutcome> {
        let mut out = Vec::with_capacity(chunk.len());
        for (i, e) in chunk.iter().enumerate() {
            let rest = chunk.len() - i;
            let url = format!("{base}{}", wire::hook_path(&e.record));
            let body = serde_json::to_vec(&wire::HookBody::new(&e.record)).unwrap_or_default();
            match self.send(base, &url, Some(&body), deadline) {
                Reply::Status { code, .. } if (200..300).contains(&code) => {
                    out.push(ItemOutcome::Delivered)
                }
                // A 403 is about this record (its project): keep going.
                Reply::Status { code: 403, text } => out.extend(status_outcomes(403, &text, 1)),
                Reply::Status { code, text } => {
                    out.extend(status_outcomes(code, &text, rest));
                    break;
                }
                Reply::Failed(err) => {
                    out.extend(self.failure_outcomes(&err, rest));
                    break;
                }
                Reply::NoTime => {
                    out.extend(all_free(rest, NO_TIME));
                    break;
                }
            }
        }
        out
    }

    /// Transport failure: charge the first item once, skip the endpoint.
    fn failure_outcomes(&mut self, err: &HttpError, n: usize) -> Vec<ItemOutcome> {
        if matches!(err, HttpError::Unreachable { .. }) {
            self.unreachable = true;
        }
        failed_first(n, &err.to_string())
    }
}

/// Outcomes for a 2xx batch reply.
fn batch_outcomes(reply: &wire::BatchReply, n: usize) -> Vec<ItemOutcome> {
    let mut out = all_free(
        n,
        "not processed by the server in this batch; retrying later",
    );
    for &i in &reply.accepted {
        out[i] = ItemOutcome::Delivered;
    }
    if let Some(i) = reply.failed_index {
        if out[i] != ItemOutcome::Delivered {
            out[i] = ItemOutcome::Retry {
                charge: true,
                reason: "server failed to store this record".into(),
            };
        }
    }
    out
}

/// Outcomes for a non-2xx status answered to a request carrying `n` items.
fn status_outcomes(code: u16, text: &str, n: usize) -> Vec<ItemOutcome> {
    match code {
        429 => all_free(n, "server is busy (429); retrying later"),
        503 => all_free(n, "server unavailable (503); retrying later"),
        401 => failed_first(n, &HttpError::Unauthorized.to_string()),
        403 => vec![
            ItemOutcome::Drop {
                reason: "forbidden".into()
            };
            n
        ],
        _ => failed_first(
            n,
            &HttpError::Status {
                code,
                detail: server_text(text),
            }
            .to_string(),
        ),
    }
}

fn all_free(n: usize, reason: &str) -> Vec<ItemOutcome> {
    vec![
        ItemOutcome::Retry {
            charge: false,
            reason: reason.to_string()
        };
        n
    ]
}

/// The first item is charged with `reason`, the rest retry for free.
fn failed_first(n: usize, reason: &str) -> Vec<ItemOutcome> {
    let mut out = all_free(
        n,
        &format!("not attempted after an earlier failure: {reason}"),
    );
    if let Some(first) = out.first_mut() {
        *first = ItemOutcome::Retry {
            charge: true,
            reason: reason.to_string(),
        };
    }
    out
}

/// Split `entries` into batches of at most [`MAX_BATCH_ITEMS`] items and
/// about [`MAX_BATCH_BYTES`] (the first item of a batch always goes).
fn chunk_len(entries: &[SpoolEntry]) -> usize {
    let mut bytes = 0;
    for (i, e) in entries.iter().take(MAX_BATCH_ITEMS).enumerate() {
        // Estimate the wire size without serialising: the excerpt and title
        // travel twice (payload field and record), plus paths and overhead.
        let r = &e.record;
        let text = r.body.as_ref().map_or(0, String::len) + r.title.as_ref().map_or(0, String::len);
        let paths = r.cwd.as_ref().map_or(0, String::len) * 3
            + r.files.iter().map(String::len).sum::<usize>();
        let size = 2 * text + paths + 2048;
        if i > 0 && bytes + size > MAX_BATCH_BYTES {
            return i;
        }
        bytes += size;
    }
    entries.len().min(MAX_BATCH_ITEMS)
}

impl Sink for HttpSink {
    fn deliver(&mut self, entries: &[SpoolEntry]) -> Vec<ItemOutcome> {
        let base = match &self.base {
            Ok(b) => b.clone(),
            Err(e) => return failed_first(entries.len(), &e.to_string()),
        };
        if self.unreachable {
            return all_free(
                entries.len(),
                "server unreachable earlier in this pass; retrying later",
            );
        }
        let now = Instant::now();
        let deadline = self
            .until
            .map_or(now + self.timeout, |u| u.min(now + self.timeout));
        if deadline <= now {
            return all_free(entries.len(), NO_TIME);
        }
        let mut out = Vec::with_capacity(entries.len());
        while out.len() < entries.len() {
            let rest = &entries[out.len()..];
            let chunk = &rest[..chunk_len(rest)];
            let got = if self.batch == BatchSupport::No {
                self.deliver_single(&base, chunk, deadline)
            } else {
                match self.deliver_batch(&base, chunk, deadline) {
                    Some(v) => v,
                    None => {
                        self.batch = BatchSupport::No;
                        self.deliver_single(&base, chunk, deadline)
                    }
                }
            };
            let stop = got.iter().any(|o| o != &ItemOutcome::Delivered);
            out.extend(got);
            if stop && out.len() < entries.len() {
                let left = entries.len() - out.len();
                out.extend(all_free(
                    left,
                    "not attempted after an earlier failure in this pass",
                ));
            }
        }
        out
    }

    fn unreachable(&self) -> bool {
        self.unreachable
    }
}

/// `GET <base>/handoff?agent=…&cwd=…&workspace=…&project=…&project_src=…&
/// project_strategy=…[&briefing=1]&briefing_budget=…[&session_id=…]`:
/// the server's session-start briefing for this scope. `Ok(None)` when the
/// server has nothing to say (an empty 200). Returns within `timeout`.
pub fn handoff(
    base_url: &str,
    token: Option<&str>,
    scope: &Scope,
    event: &Event,
    timeout: Duration,
) -> Result<Option<String>, HttpError> {
    let base = check_base_url(base_url)?;
    let mut q = wire::QueryBuilder::default();
    q.push("agent", event.agent.as_str())
        .push_opt("cwd", event.cwd.as_deref())
        .push("workspace", &scope.workspace)
        .push("project", &scope.project)
        .push("project_src", scope.project_source.as_str())
        .push("project_strategy", scope.strategy.as_str())
        .flag("briefing", scope.settings.inject_on_session_start)
        .push("briefing_budget", &scope.settings.max_chars.to_string())
        .push_opt("session_id", event.session_id.as_deref());
    let url = format!("{base}/handoff{}", q.finish());
    let deadline = Instant::now() + timeout;
    match exchange(
        &agent(),
        &base,
        None,
        &url,
        token,
        deadline,
        MAX_HANDOFF_BYTES,
    ) {
        Reply::Status { code, text } if (200..300).contains(&code) => {
            Ok((!text.trim().is_empty()).then_some(text))
        }
        Reply::Status { code: 401, .. } => Err(HttpError::Unauthorized),
        Reply::Status { code: 403, text } => Err(HttpError::Forbidden {
            detail: server_text(&text),
        }),
        Reply::Status { code, text } => Err(HttpError::Status {
            code,
            detail: server_text(&text),
        }),
        Reply::Failed(e) => Err(e),
        Reply::NoTime => Err(HttpError::Unreachable {
            url: base,
            detail: "no time left in the session-start budget".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_outcomes_follow_the_reply() {
        let reply = wire::BatchReply {
            accepted: vec![0, 2],
            failed_index: Some(1),
        };
        let out = batch_outcomes(&reply, 4);
        assert_eq!(out[0], ItemOutcome::Delivered);
        assert!(matches!(out[1], ItemOutcome::Retry { charge: true, .. }));
        assert_eq!(out[2], ItemOutcome::Delivered);
        assert!(matches!(out[3], ItemOutcome::Retry { charge: false, .. }));
    }

    #[test]
    fn status_rules() {
        let free = |o: &ItemOutcome| matches!(o, ItemOutcome::Retry { charge: false, .. });
        let charged = |o: &ItemOutcome| matches!(o, ItemOutcome::Retry { charge: true, .. });
        assert!(status_outcomes(429, "", 3).iter().all(free));
        assert!(status_outcomes(503, "", 3).iter().all(free));
        let o = status_outcomes(500, "boom\nstack", 3);
        assert!(charged(&o[0]) && free(&o[1]) && free(&o[2]));
        assert!(matches!(&o[0], ItemOutcome::Retry { reason, .. } if reason.contains("500: boom")));
        let o = status_outcomes(401, "", 2);
        assert!(charged(&o[0]) && free(&o[1]));
        assert!(status_outcomes(403, "", 2).iter().all(|o| *o
            == ItemOutcome::Drop {
                reason: "forbidden".into()
            }));
    }

    #[test]
    fn no_time_left_tries_nothing_and_charges_nothing() {
        let mut sink = HttpSink::new("http://127.0.0.1:9", None, Duration::ZERO);
        let e = memhook_delivery::spool::SpoolEntry {
            v: memhook_delivery::spool::ENTRY_VERSION,
            sink: memhook_delivery::spool::SinkTarget::Http {
                url: "http://127.0.0.1:9".into(),
            },
            attempts: 0,
            enqueued_ms: 0,
            record: wire::samples::record("k"),
            exclusions: None,
        };
        let out = sink.deliver(&[e.clone(), e]);
        assert!(out.iter().all(
            |o| matches!(o, ItemOutcome::Retry { charge: false, reason } if reason == NO_TIME)
        ));
        assert!(!sink.unreachable());
    }

    #[test]
    fn server_text_is_one_bounded_printable_line() {
        assert_eq!(server_text("\n  bad\x1b[31m thing\nmore"), "bad [31m thing");
        assert_eq!(server_text(""), "(no message)");
        assert_eq!(server_text(&"x".repeat(1000)).len(), MAX_SERVER_TEXT);
    }
}
