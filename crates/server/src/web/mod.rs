//! The web view of `memhook serve` (DESIGN §12): server-rendered pages at
//! `/` and their JSON API under `/api/`, behind the server's
//! authentication.
//!
//! - [`session`]: one-time login codes, session cookies, CSRF tokens;
//! - [`html`]: the escape function and the page frame;
//! - [`pages`]: the HTML pages and their forms, with [`project`] (the
//!   project page, the next briefing's preview), [`chart`] (its activity
//!   chart, inline SVG) and [`log`] (a session read like a log);
//! - [`api`]: the JSON API.
//!
//! Who may ask: a request carries the server's bearer token, or the session
//! cookie a login code became; with `--no-auth` anyone on loopback may.
//! Requests that change something (POST) also need, when they come with a
//! cookie (or with no credentials under `--no-auth`), the session's CSRF
//! token (a form field `csrf`, or the `X-CSRF-Token` header); and, like
//! every request here, an `Origin` that is absent or this server's own. The
//! cookie is `SameSite=Strict`, so another site's page cannot even send it,
//! and it is only half of a login: a browser's pages live under
//! `/s/<path key>/`, the other half, and the cookie counts only there
//! (see [`session`]), so a cookie replayed by another port's server is
//! nobody.
//! Every answer carries the security headers of [`SECURITY_HEADERS`]; the
//! assets are compiled into the binary.

mod api;
mod chart;
mod html;
mod log;
mod pages;
mod project;
mod session;

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;

use super::auth::Guard;
use super::http::{Head, Response};
use memhook_delivery::wire::Query;
use memhook_store::model::Database;

pub use html::escape;
pub(crate) use session::{same, secret};
pub use session::{
    COOKIE_PREFIX, LOGIN_CODE_TTL, LOGIN_CODE_TTL_ENV, MAX_LOGIN_CODES, MAX_SESSIONS, SESSION_TTL,
};

/// Largest request body a page form or an API call may send (a memory
/// document is at most 100 KiB; a form encodes it in up to three times that).
pub const MAX_FORM_BYTES: u64 = 512 * 1024;
/// Sessions a project page lists.
pub const MAX_TIMELINE_SESSIONS: usize = 200;
/// Records a session page lists.
pub const MAX_SESSION_RECORDS: usize = 1000;
/// Default and largest number of search results.
pub const SEARCH_RESULTS: usize = 50;
/// The path `memhook ui` asks for a login code at.
pub const LOGIN_CODE_PATH: &str = "/api/login-code";

/// Headers on every answer of the web view and its API.
pub const SECURITY_HEADERS: &[(&str, &str)] = &[
    (
        "Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
         form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
    ("Cache-Control", "no-store"),
];

/// The embedded assets: path, content type, bytes.
const ASSETS: &[(&str, &str, &str)] = &[
    (
        "/assets/style.css",
        "text/css; charset=utf-8",
        include_str!("assets/style.css"),
    ),
    (
        "/assets/app.js",
        "text/javascript; charset=utf-8",
        include_str!("assets/app.js"),
    ),
];

const HTML: &str = "text/html; charset=utf-8";
const JSON: &str = "application/json";

/// Whether `path` belongs to the web view (everything but the hook protocol).
pub fn is_web_path(path: &str) -> bool {
    !matches!(path, "/healthz" | "/hook" | "/hook/batch" | "/handoff")
}

/// Who is asking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Viewer {
    /// The bearer token (scripts, `memhook ui`): no CSRF token needed.
    Token,
    /// A browser logged in with a code, on its session's pages
    /// (`/s/<key>/…`).
    Browser {
        session: String,
        key: String,
        csrf: String,
    },
    /// Anyone, under `--no-auth`; forms still carry the server's CSRF token.
    Open { csrf: String },
}

impl Viewer {
    /// The CSRF token a POST must carry (`None`: none needed).
    fn csrf(&self) -> Option<&str> {
        match self {
            Viewer::Token => None,
            Viewer::Browser { csrf, .. } | Viewer::Open { csrf } => Some(csrf),
        }
    }

    /// The token to put into forms (a token holder's forms need none).
    fn form_token(&self) -> &str {
        self.csrf().unwrap_or("")
    }
}

/// The web view's state.
pub struct Web {
    sessions: session::Sessions,
    cookie: String,
    /// The CSRF token of every form under `--no-auth`.
    open_csrf: Option<String>,
    data_dir: PathBuf,
}

/// A request the web view answers: its head, decoded query and body.
pub struct Req<'a> {
    pub head: &'a Head,
    pub query: Query,
    pub body: &'a [u8],
    pub viewer: Viewer,
}

impl Web {
    pub fn new(data_dir: &Path, port: u16, open: bool) -> Web {
        Web {
            sessions: session::Sessions::new(session::Sessions::code_ttl_from_env()),
            cookie: session::cookie_name(port),
            open_csrf: open.then(session::secret),
            data_dir: data_dir.to_path_buf(),
        }
    }

    fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// Who sent `head` (for a page under the path key `key`): `None` when
    /// nobody we know.
    fn viewer(
        &self,
        head: &Head,
        key: Option<&str>,
        guard: &Guard,
        now: Instant,
    ) -> Option<Viewer> {
        if let Some(csrf) = &self.open_csrf {
            return Some(Viewer::Open { csrf: csrf.clone() });
        }
        if head.header("Authorization").is_some() && guard.authorized(head) {
            return Some(Viewer::Token);
        }
        // The cookie counts only together with its session's path key.
        let key = key?;
        let id = head
            .header("Cookie")
            .and_then(|c| session::cookie(c, &self.cookie))?;
        let csrf = self.sessions.csrf(id, key, now)?;
        Some(Viewer::Browser {
            session: id.to_string(),
            key: key.to_string(),
            csrf,
        })
    }

    /// Everything decided from the head: `Err` answers now.
    pub fn check(&self, head: &Head, guard: &Guard) -> Result<(), Response> {
        let (key, path) = session::split_base(head.path());
        let api = path.starts_with("/api/");
        guard.check_same_site(head).map_err(|r| {
            if api {
                json_error(r.code, &r.message)
            } else {
                pages::problem(r.code, "Refused", &r.message, false)
            }
        })?;
        if !matches!(head.method.as_str(), "GET" | "POST") {
            return Err(secure(Response::new(
                405,
                JSON,
                json!({"error": "the web view accepts GET and POST only"})
                    .to_string()
                    .into_bytes(),
            )));
        }
        if head.content_length > MAX_FORM_BYTES {
            return Err(json_error(
                413,
                &format!("request body over {MAX_FORM_BYTES} bytes"),
            ));
        }
        if public(path) {
            return Ok(());
        }
        if path == LOGIN_CODE_PATH {
            // Only the token may mint a login: a cookie cannot beget cookies.
            return if guard.authorized(head) {
                Ok(())
            } else {
                Err(json_error(401, "send the server's bearer token"))
            };
        }
        match self.viewer(head, key, guard, Instant::now()) {
            Some(_) => Ok(()),
            None if api => Err(json_error(
                401,
                "not logged in: send the bearer token, or log in with `memhook ui`",
            )
            .with_header("WWW-Authenticate", "Bearer")),
            None => Err(pages::login_needed()),
        }
    }

    /// Answer a request whose head passed [`Web::check`].
    pub fn answer(&self, head: &Head, body: &[u8], guard: &Guard, db: &dyn Database) -> Response {
        let now = Instant::now();
        let (key, path) = session::split_base(head.path());
        let path = path.to_string();
        if let Some((_, ctype, text)) = ASSETS.iter().find(|(p, _, _)| *p == path) {
            return secure(Response::new(200, ctype, text.as_bytes().to_vec()));
        }
        let query = match Query::of_url(&head.target) {
            Ok(q) => q,
            Err(e) => return json_error(400, &e),
        };
        if path == "/login" {
            return self.login(&query, now);
        }
        if path == LOGIN_CODE_PATH {
            if head.method != "POST" {
                return json_error(405, "POST a request for a login code");
            }
            let code = self.sessions.issue_code(now);
            return json_response(
                200,
                json!({
                    "code": code,
                    "expires_in_ms": self.sessions.code_ttl().as_millis() as u64,
                    "login_path": format!("/login?code={code}"),
                }),
            );
        }
        let Some(viewer) = self.viewer(head, key, guard, now) else {
            return pages::login_needed();
        };
        let req = Req {
            head,
            query,
            body,
            viewer,
        };
        if head.method == "POST" && !self.csrf_ok(&req) {
            let msg = "missing or wrong CSRF token: reload the page and try again";
            return if path.starts_with("/api/") {
                json_error(403, msg)
            } else {
                pages::problem(403, "Refused", msg, true)
            };
        }
        if path == "/logout" && head.method == "POST" {
            return self.logout(&req);
        }
        let resp = if let Some(rest) = path.strip_prefix("/api/") {
            api::route(self, &req, rest, db)
        } else {
            pages::route(self, &req, &path, db)
        };
        secure(for_viewer(resp, &req.viewer))
    }

    /// Whether a POST carries its viewer's CSRF token (form field `csrf`
    /// or header `X-CSRF-Token`).
    fn csrf_ok(&self, req: &Req<'_>) -> bool {
        let Some(want) = req.viewer.csrf() else {
            return true;
        };
        let given = req
            .head
            .header("X-CSRF-Token")
            .map(str::to_string)
            .or_else(|| {
                let ctype = req.head.header("Content-Type").unwrap_or("");
                if !ctype.starts_with("application/x-www-form-urlencoded") {
                    return None;
                }
                let body = std::str::from_utf8(req.body).ok()?;
                Query::parse(body).ok()?.get("csrf").map(str::to_string)
            })
            .unwrap_or_default();
        session::same(given.as_bytes(), want.as_bytes())
    }

    /// `GET /login?code=…`: spend the code, set the cookie, go to `/`.
    fn login(&self, query: &Query, now: Instant) -> Response {
        let Some((id, key)) = query.get("code").and_then(|c| self.sessions.redeem(c, now)) else {
            return pages::problem(
                401,
                "This login link does not work",
                "A login link works once, for a short time. Run `memhook ui` in a terminal \
                 for a new one.",
                false,
            );
        };
        secure(
            Response::new(303, HTML, Vec::new())
                .with_header("Location", format!("{}/", session::base(&key)))
                .with_header("Set-Cookie", session::set_cookie(&self.cookie, &id, &key)),
        )
    }

    /// `POST /logout`: end the session, clear the cookie.
    fn logout(&self, req: &Req<'_>) -> Response {
        let page = pages::problem(
            200,
            "Logged out",
            "Run `memhook ui` to log in again.",
            false,
        );
        match &req.viewer {
            Viewer::Browser { session, key, .. } => {
                self.sessions.end(session);
                secure(page.with_header("Set-Cookie", session::clear_cookie(&self.cookie, key)))
            }
            _ => secure(page),
        }
    }
}

/// The logout form of every page's header, as [`html::page`] writes it.
const LOGOUT_FORM: &str = "<form method=\"post\" action=\"/logout\" class=\"logout\">";

/// A page as its viewer gets it: the logout form carries the viewer's CSRF
/// token, and for a logged-in browser every link, form, asset and redirect
/// of the page points under its session's prefix (`/s/<key>/…`), the half
/// of its login that no cookie carries. Stored text cannot take part: it is
/// escaped, so it never holds `href="/` and the like.
fn for_viewer(mut resp: Response, viewer: &Viewer) -> Response {
    let prefix = match viewer {
        Viewer::Browser { key, .. } => Some(session::base(key)),
        _ => None,
    };
    if let Some(prefix) = &prefix {
        for (name, value) in resp.headers.iter_mut() {
            if *name == "Location" && value.starts_with('/') {
                *value = format!("{prefix}{value}");
            }
        }
    }
    let is_html = resp.content_type.starts_with("text/html");
    if !is_html {
        return resp;
    }
    let Ok(mut text) = String::from_utf8(std::mem::take(&mut resp.body)) else {
        return resp;
    };
    if let Some(csrf) = viewer.csrf() {
        text = text.replace(
            LOGOUT_FORM,
            &format!("{LOGOUT_FORM}{}", html::csrf_field(csrf)),
        );
    }
    if let Some(prefix) = &prefix {
        for attr in ["href=\"/", "action=\"/", "src=\"/"] {
            text = text.replace(attr, &format!("{}{prefix}/", &attr[..attr.len() - 1]));
        }
    }
    resp.body = text.into_bytes();
    resp
}

/// Paths anyone may fetch: the assets and the login link.
fn public(path: &str) -> bool {
    path == "/login" || ASSETS.iter().any(|(p, _, _)| *p == path)
}

/// Add [`SECURITY_HEADERS`] (once).
pub fn secure(mut resp: Response) -> Response {
    if resp
        .headers
        .iter()
        .any(|(n, _)| *n == "Content-Security-Policy")
    {
        return resp;
    }
    for (name, value) in SECURITY_HEADERS {
        resp = resp.with_header(name, *value);
    }
    resp
}

fn json_response(code: u16, v: serde_json::Value) -> Response {
    secure(Response::new(code, JSON, v.to_string().into_bytes()))
}

fn json_error(code: u16, msg: &str) -> Response {
    json_response(code, json!({ "error": msg }))
}

/// `w/p` (a project named in a query) as names, when both are valid.
fn project_arg(v: &str) -> Option<(String, String)> {
    let (w, p) = v.split_once('/')?;
    (memhook_core::names::is_valid_name(w) && memhook_core::names::is_valid_name(p))
        .then(|| (w.to_string(), p.to_string()))
}

/// The decoded segments of a path after a prefix (`/p/acme/api` → `acme`, `api`).
fn segments(rest: &str) -> Option<Vec<String>> {
    rest.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| memhook_delivery::wire::decode(s).ok())
        .collect()
}

/// The memory documents of a project, `/MEMORY.md` first; and whether
/// more were left out.
fn memory_docs(data_dir: &Path, w: &str, p: &str) -> (Vec<memhook_store::memory::Entry>, bool) {
    let Ok(store) = memhook_store::memory::MemoryStore::new(data_dir, w, p) else {
        return (Vec::new(), false);
    };
    let a = store.list(None, None);
    let mut entries = a.entries.unwrap_or_default();
    entries.sort_by_key(|e| e.path.as_deref() != Some(memhook_store::memory::INDEX_PATH));
    (entries, a.remaining.unwrap_or(0) > 0)
}

/// Projects that have memory documents (their directories under
/// `<data>/memory/`), whether or not records were captured for them.
fn memory_projects(data_dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Ok(ws) = std::fs::read_dir(data_dir.join("memory")) else {
        return out;
    };
    for w in ws.flatten() {
        let wname = w.file_name().to_string_lossy().into_owned();
        if !memhook_core::names::is_valid_name(&wname) || !w.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(ps) = std::fs::read_dir(w.path()) else {
            continue;
        };
        for p in ps.flatten() {
            let pname = p.file_name().to_string_lossy().into_owned();
            if memhook_core::names::is_valid_name(&pname)
                && p.file_type().is_ok_and(|t| t.is_dir())
                && !memory_docs(data_dir, &wname, &pname).0.is_empty()
            {
                out.push((wname.clone(), pname));
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn web_paths_are_everything_but_the_hook_protocol() {
        for p in ["/", "/api/projects", "/login", "/assets/app.js", "/nope"] {
            assert!(is_web_path(p), "{p}");
        }
        for p in ["/healthz", "/hook", "/hook/batch", "/handoff"] {
            assert!(!is_web_path(p), "{p}");
        }
    }

    #[test]
    fn security_headers_are_added_once() {
        let r = secure(secure(Response::new(200, HTML, Vec::new())));
        assert_eq!(r.headers.len(), SECURITY_HEADERS.len());
        let csp = &r.headers[0].1;
        assert!(!csp.contains("unsafe-inline") && csp.contains("script-src 'self'"));
    }

    #[test]
    fn project_arguments_are_two_valid_names() {
        assert_eq!(project_arg("acme/api"), Some(("acme".into(), "api".into())));
        for bad in ["acme", "acme/Api", "/api", "a/b/c", "../x"] {
            assert_eq!(project_arg(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_browser_page_points_under_its_prefix_and_logs_out_with_its_token() {
        let key = "ab".repeat(32);
        let viewer = Viewer::Browser {
            session: "s".into(),
            key: key.clone(),
            csrf: "tok".into(),
        };
        let body = html::page("t", true, "<a href=\"/p/a/b\">x</a> &quot;href=\"/x");
        assert!(
            body.contains(LOGOUT_FORM),
            "the frame writes the form we look for"
        );
        let r = for_viewer(
            Response::new(200, HTML, body.into_bytes()).with_header("Location", "/p/a/b"),
            &viewer,
        );
        let text = String::from_utf8(r.body).unwrap();
        let prefix = format!("/s/{key}");
        assert!(text.contains(&format!("href=\"{prefix}/p/a/b\"")), "{text}");
        assert!(
            text.contains(&format!("action=\"{prefix}/logout\"")),
            "{text}"
        );
        assert!(
            text.contains(&format!("src=\"{prefix}/assets/app.js\"")),
            "{text}"
        );
        assert!(text.contains("<input type=\"hidden\" name=\"csrf\" value=\"tok\">"));
        assert!(
            !text.contains("=\"/p/") && !text.contains("=\"/\""),
            "{text}"
        );
        assert_eq!(r.headers[0].1, format!("{prefix}/p/a/b"));
        // The token holder's pages are left as they are.
        let plain = html::page("t", false, "<a href=\"/p\">x</a>");
        let r = for_viewer(
            Response::new(200, HTML, plain.clone().into_bytes()),
            &Viewer::Token,
        );
        assert_eq!(String::from_utf8(r.body).unwrap(), plain);
    }

    #[test]
    fn assets_are_small_and_never_inline() {
        for (path, _, text) in ASSETS {
            assert!(text.len() < 8 * 1024, "{path} is {} bytes", text.len());
            assert!(
                !text.contains("innerHTML") && !text.contains("eval("),
                "{path}"
            );
        }
    }
}
