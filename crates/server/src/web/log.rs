//! The session page: a session read like a log. One line per step —
//! time, what happened (a prompt, a command, a file, the agent's final
//! message), its outcome — with the output folded under its call: a
//! pre-tool-use record is folded into its result
//! ([`memhook_store::fold::fold_calls`], the same folding as `memhook
//! recent`). Paths are shown relative to the session's working directory;
//! ids are short, the full id in the `title` (hover) and copied on click
//! (`app.js`). The page is found by the session's id (or a prefix of it)
//! under its project: `/p/W/P/s/ID`.

use super::html::{duration, escape, page, time, url};
use super::pages::{html, not_found, see_other, store_problem};
use crate::http::Response;
use memhook_core::term::count;
use memhook_store::fold::{fold_calls, is_result};
use memhook_store::model::{browse, read, Database, MAX_QUERY_LIMIT};
use memhook_store::sqlite::{RecordRow, SessionRow};

/// Characters of an id shown (the rest is in its `title`).
pub const SHORT_ID: usize = 8;

/// The first [`SHORT_ID`] characters of `id`.
pub fn short(id: &str) -> &str {
    id.char_indices()
        .nth(SHORT_ID)
        .map_or(id, |(i, _)| &id[..i])
}

/// A short id whose full text is in its title; `app.js` copies the full
/// id when it is clicked (without JavaScript it can be read on hover).
pub fn id_chip(id: &str) -> String {
    format!(
        "<code class=\"id\" title=\"{}\">{}</code>",
        escape(id),
        escape(short(id))
    )
}

/// The link to a session's page: `/p/W/P/s/ID` (the whole id, percent-encoded).
pub fn session_href(workspace: &str, project: &str, session_id: &str) -> String {
    format!(
        "/p/{}/{}/s/{}",
        escape(&url(workspace)),
        escape(&url(project)),
        escape(&url(session_id))
    )
}

/// `path` relative to `root` when it lies under it.
pub fn relative<'a>(path: &'a str, root: Option<&str>) -> &'a str {
    let Some(root) = root
        .map(|r| r.trim_end_matches('/'))
        .filter(|r| !r.is_empty())
    else {
        return path;
    };
    match path.strip_prefix(root) {
        Some("") => ".",
        Some(rest) if rest.starts_with('/') => &rest[1..],
        _ => path,
    }
}

/// A command line or output with `root/` taken out of its paths.
fn relative_text(command: &str, root: Option<&str>) -> String {
    match root
        .map(|r| r.trim_end_matches('/'))
        .filter(|r| !r.is_empty())
    {
        Some(r) => command.replace(&format!("{r}/"), ""),
        None => command.to_string(),
    }
}

/// `/sessions/ROW` (older links): to the session's page by its id.
pub fn by_row(db: &dyn Database, row: i64, logged: bool) -> Response {
    match browse(db, |s| s.browse_session(row)) {
        Ok(Some(s)) => see_other(&session_href(&s.workspace, &s.project, &s.session_id)),
        Ok(None) => not_found(logged),
        Err(e) => store_problem(&e),
    }
}

/// `/p/W/P/s/ID`: the session whose id is `id`, or starts with it.
pub fn session(db: &dyn Database, w: &str, p: &str, id: &str, logged: bool) -> Response {
    let listed = match browse(db, |s| s.browse_sessions((w, p), MAX_QUERY_LIMIT)) {
        Ok(l) => l,
        Err(e) => return store_problem(&e),
    };
    let exact: Vec<&SessionRow> = listed.iter().filter(|s| s.session_id == id).collect();
    let matched: Vec<&SessionRow> = if exact.is_empty() && !id.is_empty() {
        listed
            .iter()
            .filter(|s| s.session_id.starts_with(id))
            .collect()
    } else {
        exact
    };
    match matched.as_slice() {
        [] => not_found(logged),
        [one] => render(db, one, logged),
        many => ambiguous(w, p, id, many, logged),
    }
}

/// A prefix that names several sessions: which one?
fn ambiguous(w: &str, p: &str, id: &str, many: &[&SessionRow], logged: bool) -> Response {
    let mut out = format!(
        "<h1>Which session?</h1>\n<p>{} of {} / {} start with <code>{}</code>:</p>\n<ul>\n",
        count(many.len() as u64, "session"),
        escape(w),
        escape(p),
        escape(id)
    );
    for s in many {
        out.push_str(&format!(
            "<li><a href=\"{}\"><code>{}</code></a> · {} · {}</li>\n",
            session_href(w, p, &s.session_id),
            escape(&s.session_id),
            escape(&s.agent),
            time(s.first_ms)
        ));
    }
    out.push_str("</ul>\n");
    html(200, page("Which session?", logged, &out))
}

fn render(db: &dyn Database, s: &SessionRow, logged: bool) -> Response {
    let row = s.row;
    let records = match browse(db, |b| b.browse_records(row, super::MAX_SESSION_RECORDS)) {
        Ok(r) => r,
        Err(e) => return store_problem(&e),
    };
    // The working directory the session started in: paths are shown
    // relative to it (a record of a file tool already holds them so).
    let root = read(db, |r| r.session_root(row)).unwrap_or(None);
    let root = root.as_deref();
    let records = fold_calls(records);
    // How it ended, as the project page says it.
    let ended = read(db, |r| r.session_notes(row))
        .map(|notes| super::project::ending(&notes))
        .unwrap_or_default();
    let (we, pe) = (escape(&s.workspace), escape(&s.project));
    let mut out = format!(
        "<p class=\"crumbs\"><a href=\"/p/{we}/{pe}\">{we} / {pe}</a></p>\n\
         <h1>Session {}</h1>\n\
         <p class=\"meta\">{} · started {} · {} · {} · {} · {}{}</p>\n",
        id_chip(&s.session_id),
        escape(&s.agent),
        time(s.first_ms),
        duration(s.last_ms.saturating_sub(s.first_ms)),
        count(s.events, "record"),
        count(s.prompts, "prompt"),
        count(s.failures, "failure"),
        root.map(|r| format!(" · in <code>{}</code>", escape(r)))
            .unwrap_or_default(),
    );
    if !ended.is_empty() {
        out.push_str(&format!("<p class=\"ended\">How it ended: {ended}</p>\n"));
    }
    if records.is_empty() {
        out.push_str("<p>No records.</p>\n");
    }
    out.push_str("<ol class=\"log\">\n");
    for r in &records {
        out.push_str(&line(r, root));
    }
    out.push_str("</ol>\n");
    if records.len() >= super::MAX_SESSION_RECORDS {
        out.push_str(&format!(
            "<p class=\"meta\">The first {} records are shown.</p>\n",
            super::MAX_SESSION_RECORDS
        ));
    }
    out.push_str(&format!(
        "<p class=\"danger\"><a href=\"/forget?session={}&amp;project={we}/{pe}\">Forget this session…</a></p>\n",
        escape(&url(&s.session_id))
    ));
    html(
        200,
        page(&format!("Session {}", short(&s.session_id)), logged, &out),
    )
}

/// What kind of step a record is, as the log's second column says it.
fn kind(r: &RecordRow) -> (&'static str, String) {
    let tool = r
        .tool_name
        .as_deref()
        .or(r.tool_family.as_deref())
        .unwrap_or("tool");
    match r.event.as_str() {
        "user-prompt" => ("prompt", "prompt".into()),
        "stop" => ("stop", "agent".into()),
        "subagent-stop" => ("stop", "subagent".into()),
        "pre-tool-use" => ("call", escape(tool)),
        e if is_result(e) => ("call", escape(tool)),
        e => ("other", escape(e)),
    }
}

/// The outcome of a tool result: `exit 1`, `error`, `ok`.
fn outcome(r: &RecordRow) -> String {
    if r.event == "pre-tool-use" {
        return "<span class=\"pending\">no result</span>".into();
    }
    if !is_result(&r.event) {
        return String::new();
    }
    let word = match (r.exit_code, r.outcome.as_deref()) {
        (Some(c), _) => format!("exit {c}"),
        (None, Some("success")) => "ok".into(),
        (None, Some(o)) => o.to_string(),
        (None, None) if r.failed => "failed".into(),
        (None, None) => String::new(),
    };
    if word.is_empty() {
        return word;
    }
    let class = if r.failed { "failed" } else { "ok" };
    format!("<span class=\"{class}\">→ {}</span>", escape(&word))
}

/// One step of the log.
fn line(r: &RecordRow, root: Option<&str>) -> String {
    let (class, label) = kind(r);
    // What was done: the command, else the files, else the title.
    let what = if let Some(c) = &r.command {
        format!(
            "<code class=\"cmd\">$ {}</code>",
            escape(&relative_text(c, root))
        )
    } else if !r.files.is_empty() {
        r.files
            .iter()
            .map(|f| format!("<code class=\"file\">{}</code>", escape(relative(f, root))))
            .collect::<Vec<_>>()
            .join(" ")
    } else if class != "other" {
        // A call without command or files says its tool already; a prompt
        // or a final message has its text under it.
        String::new()
    } else {
        r.title
            .as_deref()
            .filter(|t| {
                !r.excerpt
                    .as_deref()
                    .is_some_and(|b| b.starts_with(t.trim_end_matches('…').trim()))
            })
            .map(|t| format!("<span class=\"title\">{}</span>", escape(t)))
            .unwrap_or_default()
    };
    let body = r
        .excerpt
        .as_deref()
        .filter(|b| !b.trim().is_empty())
        .map(|b| {
            format!(
                "<pre class=\"out\">{}{}</pre>",
                escape(&relative_text(b.trim_end(), root)),
                if r.cut { "…" } else { "" }
            )
        })
        .unwrap_or_default();
    format!(
        "<li id=\"r-{key}\" class=\"{class}{failed}\"><div class=\"step\">\
         <span class=\"when\">{}</span> <span class=\"kind\">{label}</span> \
         <span class=\"what\">{what}</span> {} \
         <span class=\"rid\">{} <a class=\"forget\" href=\"/forget?record={key}\">forget</a></span>\
         </div>{body}</li>\n",
        clock(r.occurred_ms),
        outcome(r),
        id_chip(&r.key),
        key = escape(&r.key),
        failed = if r.failed { " failed" } else { "" },
    )
}

/// The time of day of a step (UTC; the date is in the page's heading),
/// whole in its `datetime`.
fn clock(ms: u64) -> String {
    let t = memhook_core::timefmt::rfc3339_ms(ms);
    format!(
        "<time datetime=\"{t}\" class=\"clock\">{}</time>",
        &t[11..19]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(event: &str) -> RecordRow {
        RecordRow {
            key: "0123456789abcdef0123456789abcdef".into(),
            occurred_ms: 1_000,
            agent: "claude-code".into(),
            event: event.into(),
            tool_family: Some("shell".into()),
            tool_name: Some("Bash".into()),
            outcome: Some("error".into()),
            failed: true,
            files: Vec::new(),
            title: None,
            excerpt: Some("Traceback <b>\n  line 2".into()),
            cut: true,
            tool_call_id: Some("c1".into()),
            exit_code: Some(1),
            command: Some("pytest -q /home/u/proj/tests/test_x.py".into()),
        }
    }

    #[test]
    fn short_ids_keep_the_whole_id_in_the_title() {
        assert_eq!(short("371ef597-aaaa"), "371ef597");
        assert_eq!(short("abc"), "abc");
        assert_eq!(short("ééééééééé"), "éééééééé");
        assert_eq!(
            id_chip("371ef597-<x>"),
            "<code class=\"id\" title=\"371ef597-&lt;x&gt;\">371ef597</code>"
        );
    }

    #[test]
    fn paths_are_shown_relative_to_the_root() {
        let root = Some("/home/u/proj");
        assert_eq!(relative("/home/u/proj/src/a.rs", root), "src/a.rs");
        assert_eq!(relative("/home/u/proj", root), ".");
        assert_eq!(
            relative("/home/u/project2/a.rs", root),
            "/home/u/project2/a.rs"
        );
        assert_eq!(relative("src/a.rs", root), "src/a.rs");
        assert_eq!(relative("/x", None), "/x");
        assert_eq!(
            relative_text("cat /home/u/proj/a /etc/x", Some("/home/u/proj/")),
            "cat a /etc/x"
        );
    }

    #[test]
    fn a_result_line_has_its_command_outcome_and_output_under_it() {
        let l = line(&rec("post-tool-use-failure"), Some("/home/u/proj"));
        assert!(l.contains("<span class=\"kind\">Bash</span>"), "{l}");
        assert!(l.contains("$ pytest -q tests/test_x.py</code>"), "{l}");
        assert!(l.contains("<span class=\"failed\">→ exit 1</span>"), "{l}");
        assert!(
            l.contains("<pre class=\"out\">Traceback &lt;b&gt;\n  line 2…</pre>"),
            "{l}"
        );
        assert!(l.contains("title=\"0123456789abcdef0123456789abcdef\">01234567</code>"));
        let mut ok = rec("post-tool-use");
        ok.failed = false;
        ok.exit_code = None;
        ok.outcome = Some("success".into());
        ok.command = None;
        ok.files = vec!["/home/u/proj/src/a.rs".into()];
        let l = line(&ok, Some("/home/u/proj"));
        assert!(l.contains("<code class=\"file\">src/a.rs</code>"), "{l}");
        assert!(l.contains("<span class=\"ok\">→ ok</span>"), "{l}");
    }
}
