//! The HTML pages: projects, a project (its sessions and memory
//! documents), a session (its records), search, a memory document (view,
//! edit, conflict), forget (confirm, done). Readable without JavaScript;
//! every stored string goes through [`escape`].

use super::html::{csrf_field, escape, highlight, page, time, url};
use super::{
    memory_docs, memory_projects, project_arg, secure, segments, Req, Viewer, Web, HTML,
    SEARCH_RESULTS,
};
use crate::http::Response;
use memhook_core::term::count;
use memhook_delivery::wire::Query;
use memhook_sinks::forget::Report;
use memhook_store::memory::{MemoryStore, Outcome, INDEX_PATH, NEW_VERSION};
use memhook_store::model::{browse, Database};
use memhook_store::sqlite::Selector;
use memhook_store::sqlite::{ProjectRow, StoreError};

/// An HTML answer.
pub(super) fn html(code: u16, text: String) -> Response {
    secure(Response::new(code, HTML, text.into_bytes()))
}

pub(super) fn see_other(location: &str) -> Response {
    secure(Response::new(303, HTML, Vec::new()).with_header("Location", location.to_string()))
}

/// A page that says what went wrong (or what happened) in one paragraph.
pub fn problem(code: u16, title: &str, message: &str, logged_in: bool) -> Response {
    html(
        code,
        page(
            title,
            logged_in,
            &format!(
                "<h1>{}</h1>\n<p>{}</p>\n<p><a href=\"/\">All projects</a></p>",
                escape(title),
                escape(message)
            ),
        ),
    )
}

/// 401 for a page asked for without a login: what to do instead.
pub fn login_needed() -> Response {
    let body = "<h1>Log in with <code>memhook ui</code></h1>\n\
        <p>This is memhook's view of your captured memory. It opens only in a browser \
        that logged in with a one-time code.</p>\n\
        <p>Run <code>memhook ui</code> in a terminal on this machine: it starts the \
        server if needed, prints a link with a fresh code, and opens it. The code works \
        once, for two minutes, and turns into a cookie that keeps this browser logged in \
        for twelve hours (or until the server restarts).</p>";
    html(401, page("Log in", false, body)).with_header("WWW-Authenticate", "Bearer")
}

pub(super) fn store_problem(e: &StoreError) -> Response {
    crate::log::say!("memhook serve: web view: {e}");
    problem(
        503,
        "The store is unavailable",
        "The store could not be read; see the server's log.",
        true,
    )
}

pub(super) fn not_found(logged_in: bool) -> Response {
    problem(
        404,
        "Not found",
        "There is nothing here (any more).",
        logged_in,
    )
}

pub(super) fn route(web: &Web, req: &Req<'_>, path: &str, db: &dyn Database) -> Response {
    let logged = matches!(req.viewer, Viewer::Browser { .. });
    let get = req.head.method == "GET";
    if path == "/" && get {
        return projects(web, db, logged);
    }
    if path == "/search" && get {
        return search(req, db, logged);
    }
    if path == "/forget" {
        return forget(web, req, db, logged);
    }
    if let Some(rest) = path.strip_prefix("/sessions/") {
        return match rest.parse::<i64>() {
            Ok(row) if get => super::log::by_row(db, row, logged),
            _ => not_found(logged),
        };
    }
    if let Some(rest) = path.strip_prefix("/p/") {
        let segs = segments(rest).unwrap_or_default();
        let names = |w: &str, p: &str| {
            memhook_core::names::is_valid_name(w) && memhook_core::names::is_valid_name(p)
        };
        match segs.as_slice() {
            [w, p] if get && names(w, p) => return super::project::project(web, db, w, p, logged),
            [w, p, b] if get && b == "briefing" && names(w, p) => {
                return super::project::briefing(web, db, w, p, logged);
            }
            [w, p, s, id] if get && s == "s" && names(w, p) => {
                return super::log::session(db, w, p, id, logged);
            }
            [w, p, m] if m == "memory" && names(w, p) => {
                return memory(web, req, w, p, logged);
            }
            _ => {}
        }
    }
    not_found(logged)
}

fn projects(web: &Web, db: &dyn Database, logged: bool) -> Response {
    let mut rows = match browse(db, |s| s.browse_projects()) {
        Ok(r) => r,
        Err(e) => return store_problem(&e),
    };
    for (w, p) in memory_projects(web.data_dir()) {
        if !rows.iter().any(|r| r.workspace == w && r.project == p) {
            rows.push(ProjectRow {
                workspace: w,
                project: p,
                first_ms: 0,
                last_ms: 0,
                sessions: 0,
                records: 0,
            });
        }
    }
    let mut out = String::from("<h1>Projects</h1>\n");
    if rows.is_empty() {
        out.push_str(
            "<p>Nothing captured yet. Once an agent with memhook's hooks works in a \
             project, it shows up here.</p>",
        );
    } else {
        out.push_str(
            "<table class=\"projects\"><thead><tr><th>Workspace / project</th><th>Sessions</th>\
             <th>Records</th><th>Last activity</th></tr></thead><tbody>\n",
        );
        for r in &rows {
            out.push_str(&format!(
                "<tr><td><a href=\"/p/{w}/{p}\">{w} / {p}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                r.sessions,
                r.records,
                if r.last_ms > 0 { time(r.last_ms) } else { "—".into() },
                w = escape(&r.workspace),
                p = escape(&r.project),
            ));
        }
        out.push_str("</tbody></table>\n");
    }
    html(200, page("Projects", logged, &out))
}

fn search(req: &Req<'_>, db: &dyn Database, logged: bool) -> Response {
    let q = req.query.get("q").unwrap_or("").trim().to_string();
    let scope = req.query.get("project").and_then(project_arg);
    let hits = if q.is_empty() {
        Vec::new()
    } else {
        match browse(db, |s| {
            s.browse_search(
                scope.as_ref().map(|(w, p)| (w.as_str(), p.as_str())),
                &q,
                SEARCH_RESULTS,
            )
        }) {
            Ok(h) => h,
            Err(e) => return store_problem(&e),
        }
    };
    let within = scope
        .as_ref()
        .map(|(w, p)| format!(" in {} / {}", escape(w), escape(p)))
        .unwrap_or_default();
    let mut out = format!(
        "<h1>Search{within}</h1>\n\
         <form method=\"get\" action=\"/search\" class=\"search-page\">{}\
         <input type=\"search\" name=\"q\" value=\"{}\" aria-label=\"Search\">\
         <button type=\"submit\">Search</button></form>\n",
        scope
            .as_ref()
            .map(|(w, p)| format!(
                "<input type=\"hidden\" name=\"project\" value=\"{}/{}\">",
                escape(w),
                escape(p)
            ))
            .unwrap_or_default(),
        escape(&q)
    );
    if !q.is_empty() {
        out.push_str(&format!(
            "<p class=\"meta\">{} results for “{}”{}.</p>\n<ol class=\"hits\">\n",
            hits.len(),
            escape(&q),
            if hits.len() >= SEARCH_RESULTS {
                " (the best ones; refine the words for others)"
            } else {
                ""
            }
        ));
        for h in &hits {
            let target = match &h.session_id {
                Some(id) => format!(
                    "{}#r-{}",
                    super::log::session_href(&h.workspace, &h.project, id),
                    escape(&h.key)
                ),
                None => format!("/p/{}/{}", escape(&h.workspace), escape(&h.project)),
            };
            out.push_str(&format!(
                "<li><a href=\"{target}\">{} · {} / {} · {}{}</a>\
                 <div class=\"snippet\">{}</div></li>\n",
                time(h.occurred_ms),
                escape(&h.workspace),
                escape(&h.project),
                escape(&h.event),
                h.tool_family
                    .as_deref()
                    .map(|f| format!(" ({})", escape(f)))
                    .unwrap_or_default(),
                highlight(&h.snippet),
            ));
        }
        out.push_str("</ol>\n");
    }
    html(200, page("Search", logged, &out))
}

/// The edit form of a document: `text` in the textarea, saved over `version`.
fn edit_form(w: &str, p: &str, path: &str, version: &str, text: &str, csrf: &str) -> String {
    format!(
        "<form method=\"post\" action=\"/p/{w}/{p}/memory\" class=\"edit\">{}\
         <input type=\"hidden\" name=\"path\" value=\"{}\">\
         <input type=\"hidden\" name=\"version\" value=\"{}\">\
         <textarea name=\"content\" rows=\"24\" aria-label=\"Document text\">{}</textarea>\
         <button type=\"submit\">Save</button></form>\n",
        csrf_field(csrf),
        escape(path),
        escape(version),
        escape(text),
        w = escape(w),
        p = escape(p),
    )
}

fn memory(web: &Web, req: &Req<'_>, w: &str, p: &str, logged: bool) -> Response {
    let store = match MemoryStore::new(web.data_dir(), w, p) {
        Ok(s) => s,
        Err(e) => return problem(400, "Refused", &e.to_string(), logged),
    };
    let (we, pe) = (escape(w), escape(p));
    let crumbs = format!("<p class=\"crumbs\"><a href=\"/p/{we}/{pe}\">{we} / {pe}</a></p>\n");
    let csrf = req.viewer.form_token();
    if req.head.method == "POST" {
        let form = match std::str::from_utf8(req.body).ok().map(Query::parse) {
            Some(Ok(q)) => q,
            _ => return problem(400, "Refused", "the form is not URL-encoded UTF-8", logged),
        };
        let path = form.get("path").unwrap_or(INDEX_PATH).to_string();
        let version = form.get("version").unwrap_or("").to_string();
        // Browsers send a textarea's lines with CRLF; show them back as saved.
        let text = memhook_store::memory::content::normalize(
            form.0
                .iter()
                .find(|(k, _)| k == "content")
                .map(|(_, v)| v.as_str())
                .unwrap_or(""),
        );
        let text = text.as_str();
        let a = store.write(&path, text, &version);
        let shown = escape(a.path.as_deref().unwrap_or(&path));
        return match a.outcome {
            Outcome::Ok => see_other(&format!(
                "/p/{w}/{p}/memory?path={}&saved={}",
                url(a.path.as_deref().unwrap_or(&path)),
                a.op.unwrap_or("updated")
            )),
            Outcome::Conflict => {
                let theirs = a.current_content.unwrap_or_default();
                let body = format!(
                    "{crumbs}<h1>{shown}: changed meanwhile</h1>\n\
                     <p class=\"conflict\">This document was changed by someone else (an agent \
                     through <code>memory_write</code>, or another tab) after you opened it. \
                     Nothing was saved. Compare both versions: saving the form below replaces \
                     theirs with your text.</p>\n\
                     <div class=\"versions\"><section><h2>Their version (saved now)</h2>\
                     <pre class=\"doc theirs\">{}</pre></section>\n\
                     <section><h2>Your version (not saved)</h2>{}</section></div>\n",
                    escape(&theirs),
                    edit_form(
                        w,
                        p,
                        &path,
                        a.current_version.as_deref().unwrap_or(""),
                        text,
                        csrf
                    ),
                );
                html(409, page(&format!("Conflict: {path}"), logged, &body))
            }
            Outcome::Missing => {
                let body = format!(
                    "{crumbs}<h1>{shown}: deleted meanwhile</h1>\n\
                     <p class=\"conflict\">This document no longer exists. Nothing was saved. \
                     Saving the form below creates it again with your text.</p>\n{}",
                    edit_form(w, p, &path, NEW_VERSION, text, csrf)
                );
                html(409, page(&format!("Conflict: {path}"), logged, &body))
            }
            _ => {
                let body = format!(
                    "{crumbs}<h1>{shown}: not saved</h1>\n<p class=\"conflict\">{}</p>\n{}",
                    escape(a.message.as_deref().unwrap_or("the document was refused")),
                    edit_form(w, p, &path, &version, text, csrf)
                );
                html(400, page(&format!("Not saved: {path}"), logged, &body))
            }
        };
    }
    let path = req.query.get("path").unwrap_or(INDEX_PATH).to_string();
    let a = store.read(&path);
    let shown = escape(a.path.as_deref().unwrap_or(&path));
    // What the index is for, where it is read and edited.
    let explain = if a.path.as_deref().unwrap_or(&path) == INDEX_PATH {
        super::project::memory_explained()
    } else {
        String::new()
    };
    match a.outcome {
        Outcome::Ok => {
            let text = a.content.unwrap_or_default();
            let saved = match req.query.get("saved") {
                Some("created") => "<p class=\"saved\">Created.</p>\n",
                Some("updated") => "<p class=\"saved\">Saved.</p>\n",
                Some("unchanged") => "<p class=\"saved\">Saved (no change).</p>\n",
                _ => "",
            };
            let body = format!(
                "{crumbs}<h1>{shown}</h1>\n{saved}{explain}\
                 <p class=\"meta\">{} bytes · version <code>{}</code>{}</p>\n\
                 <pre class=\"doc\">{}</pre>\n<h2>Edit</h2>\n{}",
                a.bytes.unwrap_or(0),
                escape(a.version.as_deref().unwrap_or("")),
                a.updated_at
                    .as_deref()
                    .map(|t| format!(" · updated {}", escape(t)))
                    .unwrap_or_default(),
                escape(&text),
                edit_form(w, p, &path, a.version.as_deref().unwrap_or(""), &text, csrf),
            );
            html(200, page(&path, logged, &body))
        }
        Outcome::NotFound if req.query.truthy("new") || path == INDEX_PATH => {
            let body = format!(
                "{crumbs}<h1>{shown}</h1>\n{explain}<p>This document does not exist yet. Write it \
                 below.</p>\n{}",
                edit_form(w, p, &path, NEW_VERSION, "", csrf)
            );
            html(200, page(&path, logged, &body))
        }
        Outcome::NotFound => not_found(logged),
        _ => problem(
            400,
            "Refused",
            a.message
                .as_deref()
                .unwrap_or("the document cannot be read"),
            logged,
        ),
    }
}

/// The selector fields a forget form or link carries.
const FORGET_FIELDS: [&str; 4] = ["record", "session", "project", "before"];

/// The selector of the forget form's fields.
fn forget_selector(q: &Query) -> Result<Selector, String> {
    let get = |k: &str| q.get(k).map(|v| v.trim());
    Selector::parse(get("record"), get("session"), get("project"), get("before"))
}

/// What a report says, in words.
/// What forgetting a whole project does to its memory documents: they are
/// kept (only `memhook forget --project W/P --memory` deletes them).
fn memory_note(web: &Web, sel: &Selector) -> String {
    let Some((w, p)) = sel.project.as_ref().filter(|_| sel.before_ms.is_none()) else {
        return String::new();
    };
    let n = memory_docs(web.data_dir(), w, p).0.len();
    if n == 0 {
        return String::new();
    }
    format!(
        "<p>Its {n} memory documents are kept: this page forgets captured records only. \
         <code>memhook forget --project {}/{} --memory --yes</code> deletes them too.</p>\n",
        escape(w),
        escape(p)
    )
}

pub(super) fn report_line(r: &Report, what: &str) -> String {
    let (records, sessions, projects) = r
        .stored
        .as_ref()
        .map_or((0, 0, 0), |f| (f.records, f.sessions, f.projects));
    let verb = if r.applied { "Forgot" } else { "This forgets" };
    format!(
        "{verb} {} (emptying {} and {}) and {}: {what}.",
        count(records, "stored record"),
        count(sessions, "session"),
        count(projects, "project"),
        count(r.pending, "pending record")
    )
}

fn forget(web: &Web, req: &Req<'_>, db: &dyn Database, logged: bool) -> Response {
    let post = req.head.method == "POST";
    let q = if post {
        match std::str::from_utf8(req.body).ok().map(Query::parse) {
            Some(Ok(q)) => q,
            _ => return problem(400, "Refused", "the form is not URL-encoded UTF-8", logged),
        }
    } else {
        req.query.clone()
    };
    // An empty date field must not widen "before a date" to "everything".
    if q.0
        .iter()
        .any(|(k, v)| k == "before" && v.trim().is_empty())
    {
        return problem(
            400,
            "Nothing to forget",
            "choose a date: records from before it are forgotten",
            logged,
        );
    }
    let sel = match forget_selector(&q) {
        Ok(s) => s,
        Err(e) => {
            let msg = e.to_string().replace("--", "");
            return problem(400, "Nothing to forget", &msg, logged);
        }
    };
    let what = sel.describe();
    let report = match memhook_sinks::forget::forget_in_database(db, &sel, post) {
        Ok(r) => r,
        Err(e) => return problem(409, "Not forgotten", &e.to_string(), logged),
    };
    let back = sel
        .project
        .as_ref()
        .filter(|_| sel.session.is_some() || sel.record.is_some() || sel.before_ms.is_some())
        .map(|(w, p)| format!("/p/{}/{}", escape(w), escape(p)))
        .unwrap_or_else(|| "/".into());
    if post {
        let mut body = format!(
            "<h1>Forgotten</h1>\n<p class=\"saved\">{}</p>\n",
            escape(&report_line(&report, &what))
        );
        if report.wal_pending() {
            body.push_str(
                "<p class=\"conflict\">Another process is reading the store, so the \
                 forgotten text is still in the database file and its write-ahead log. The \
                 cleanup is recorded in the data dir (forget-pending): the next forget or \
                 <code>memhook drain</code> finishes it once that reader is gone.</p>\n",
            );
        }
        body.push_str(&format!("<p><a href=\"{back}\">Back</a></p>\n"));
        return html(200, page("Forgotten", logged, &body));
    }
    let mut hidden = csrf_field(req.viewer.form_token());
    for k in FORGET_FIELDS {
        if let Some(v) = q.get(k) {
            hidden.push_str(&format!(
                "<input type=\"hidden\" name=\"{k}\" value=\"{}\">",
                escape(v.trim())
            ));
        }
    }
    let body = format!(
        "<h1>Forget for good?</h1>\n<p>{}</p>\n\
         <p>{}, and records of this scope still waiting in the spool are dropped. This \
         cannot be undone. The forget log keeps when, what scope and how many, never the \
         text.</p>\n{}\
         <form method=\"post\" action=\"/forget\" class=\"confirm\">{hidden}\
         <button type=\"submit\" class=\"danger\">Forget for good</button> \
         <a href=\"{back}\">Cancel</a></form>\n",
        escape(&report_line(&report, &what)),
        escape(db.forget_promise()),
        memory_note(web, &sel),
    );
    html(200, page("Forget", logged, &body))
}
