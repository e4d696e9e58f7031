//! The project page — the briefing the next session will get (its size,
//! a link to the whole text), an activity chart, each session's goal and
//! how it ended, the memory documents with what `MEMORY.md` is for — and
//! the preview of that briefing (`/p/W/P/briefing`), composed by the
//! session-start code itself ([`memhook_store::briefing`]).

use std::path::{Path, PathBuf};

use super::html::{duration, escape, page, time, url};
use super::log::{session_href, short};
use super::pages::{html, not_found, store_problem};
use super::{chart, memory_docs, Web, MAX_TIMELINE_SESSIONS};
use crate::http::Response;
use memhook_core::scope::{marker, Settings, MARKER_FILE};
use memhook_core::term::count;
use memhook_store::briefing::{compose_reads_with, standing};
use memhook_store::memory::{INDEX_MAX_BYTES, INDEX_MAX_LINES, INDEX_PATH};
use memhook_store::model::{browse, read, Database, Note};
use memhook_store::sqlite::{SessionRow, StoreError};

/// Sessions of a project page whose ending ("how it ended") is looked up;
/// older ones show only their goal.
pub const MAX_ENDINGS: usize = 50;
/// Characters of a goal or a final message in the sessions table.
pub const LINE_CHARS: usize = 200;
/// Directories above a session's working directory searched for its marker.
const MARKER_DEPTH: usize = 32;

/// What `MEMORY.md` is, said where it is listed and edited.
pub fn memory_explained() -> String {
    format!(
        "<p class=\"explain\"><code>{INDEX_PATH}</code> is this project's memory index: \
         memhook puts its first {INDEX_MAX_LINES} lines (at most {} KiB) into the briefing at \
         the start of every session of this project, whichever agent runs it. Keep it short: \
         lasting facts, conventions, decisions, where things are, and links to other \
         documents for the details. Agents with <code>memhook mcp</code> read and update it \
         with <code>memory_read</code> and <code>memory_write</code>; other documents are \
         read only when asked for.</p>\n",
        INDEX_MAX_BYTES / 1024
    )
}

/// `text` on one line (whitespace collapsed), at most `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &flat[..i]),
        None => flat,
    }
}

/// How a session ended, from its notes: the agent's last final message,
/// else its last tool result; and how many failures still stand at its
/// end (the briefing's own [`standing`]).
pub(super) fn ending(notes: &[Note]) -> String {
    let st = standing(notes);
    let mut out = match &st.conclusion {
        Some((text, _)) => format!(
            "<span class=\"said\">“{}”</span>",
            escape(&one_line(text, LINE_CHARS))
        ),
        None => match notes.iter().rev().find(|n| n.event != "stop") {
            Some(n) => {
                let what = n
                    .command
                    .as_deref()
                    .map(|c| format!(" <code>{}</code>", escape(&one_line(c, 80))))
                    .unwrap_or_default();
                let end = match (n.exit_code, n.failed, n.succeeded) {
                    (Some(c), _, _) => format!("exit {c}"),
                    (None, true, _) => "failed".into(),
                    (None, _, true) => "ok".into(),
                    _ => "unknown".into(),
                };
                format!(
                    "last: {}{what} → <span class=\"{}\">{}</span>",
                    escape(n.tool.as_deref().unwrap_or("tool")),
                    if n.failed { "failed" } else { "ok" },
                    escape(&end)
                )
            }
            None => "—".into(),
        },
    };
    if !st.failures.is_empty() {
        out.push_str(&format!(
            " <span class=\"failed\">({} not fixed)</span>",
            count(st.failures.len() as u64, "failure")
        ));
    }
    out
}

/// The marker settings the next session of the project will most likely
/// run under: those of the marker above the latest session's working
/// directory, when this machine has it; else the defaults.
fn settings_near(root: Option<&str>) -> (Settings, Option<PathBuf>) {
    let mut dir = root.map(Path::new).filter(|p| p.is_absolute());
    for _ in 0..MARKER_DEPTH {
        let Some(d) = dir else { break };
        let path = d.join(MARKER_FILE);
        if path.is_file() {
            return match marker::read(&path, true).declared {
                Ok(decl) => (decl.settings, Some(path)),
                Err(_) => (Settings::default(), Some(path)),
            };
        }
        dir = d.parent();
    }
    (Settings::default(), None)
}

/// The briefing the next session of `w/p` will get, and what it was composed for.
pub struct Preview {
    /// `None`: no briefing (nothing to say, or memhook disabled there).
    pub text: Option<String>,
    /// The agent of the latest session (the briefing names MCP tools only
    /// when it has `memhook mcp` registered).
    pub agent: Option<String>,
    pub mcp: Option<bool>,
    pub settings: Settings,
    pub marker: Option<PathBuf>,
}

/// Compose the next briefing of `w/p` as session start does
/// ([`compose_reads_with`], the code behind `compose_with`), from one
/// snapshot of the store; nothing is consumed.
pub fn preview(
    data_dir: &Path,
    db: &dyn Database,
    w: &str,
    p: &str,
    latest: Option<&SessionRow>,
) -> Result<Preview, StoreError> {
    let root = match latest {
        Some(s) => read(db, |r| r.session_root(s.row))?,
        None => None,
    };
    let (settings, marker) = settings_near(root.as_deref());
    let agent = latest.map(|s| s.agent.clone());
    let mcp = agent
        .as_deref()
        .map(|a| memhook_core::mcp_agents::installed(data_dir, a));
    let text = if settings.enabled {
        read(db, |r| {
            compose_reads_with(
                r,
                (w, p),
                None,
                settings.max_chars,
                settings.inject_on_session_start,
                mcp,
            )
        })?
    } else {
        None
    };
    Ok(Preview {
        text,
        agent,
        mcp,
        settings,
        marker,
    })
}

/// The size line of a briefing (its first line states it).
fn size_line(text: &str) -> &str {
    text.lines().next().unwrap_or("")
}

pub fn project(web: &Web, db: &dyn Database, w: &str, p: &str, logged: bool) -> Response {
    let sessions = match browse(db, |s| s.browse_sessions((w, p), MAX_TIMELINE_SESSIONS)) {
        Ok(r) => r,
        Err(e) => return store_problem(&e),
    };
    let (docs, more_docs) = memory_docs(web.data_dir(), w, p);
    if sessions.is_empty() && docs.is_empty() {
        return not_found(logged);
    }
    let endings = read(db, |r| {
        sessions
            .iter()
            .take(MAX_ENDINGS)
            .map(|s| Ok(ending(&r.session_notes(s.row)?)))
            .collect::<Result<Vec<String>, StoreError>>()
    });
    let endings = match endings {
        Ok(e) => e,
        Err(e) => return store_problem(&e),
    };
    let next = match preview(web.data_dir(), db, w, p, sessions.first()) {
        Ok(n) => n,
        Err(e) => return store_problem(&e),
    };
    let (we, pe) = (escape(w), escape(p));
    let (wu, pu) = (escape(&url(w)), escape(&url(p)));
    let mut out = format!(
        "<h1>{we} / {pe}</h1>\n\
         <form method=\"get\" action=\"/search\" class=\"search-project\">\
         <input type=\"hidden\" name=\"project\" value=\"{we}/{pe}\">\
         <input type=\"search\" name=\"q\" aria-label=\"Search this project\" placeholder=\"Search this project\">\
         <button type=\"submit\">Search this project</button></form>\n"
    );
    out.push_str("<section class=\"next\"><h2>What the next session will be told</h2>\n");
    match &next.text {
        Some(t) => out.push_str(&format!(
            "<p><code class=\"size\">{}</code></p>\n\
             <p><a class=\"preview\" href=\"/p/{wu}/{pu}/briefing\">Preview the whole briefing</a></p>\n",
            escape(size_line(t))
        )),
        None => out.push_str(&format!(
            "<p>No briefing: {}. <a class=\"preview\" href=\"/p/{wu}/{pu}/briefing\">Why</a></p>\n",
            if next.settings.enabled {
                "no earlier session did any work and there is no MEMORY.md"
            } else {
                "the project's marker disables memhook"
            }
        )),
    }
    out.push_str("</section>\n");
    if !sessions.is_empty() {
        out.push_str("<h2>Activity</h2>\n");
        out.push_str(&chart::svg(&sessions));
        out.push_str(
            "<p class=\"legend meta\"><span class=\"key s\"></span> sessions started \
             <span class=\"key f\"></span> failures, per day (UTC)</p>\n",
        );
    }
    out.push_str(&format!(
        "<h2>Sessions</h2>\n<p class=\"meta\">{}, newest first.</p>\n",
        count(sessions.len() as u64, "session")
    ));
    out.push_str(
        "<table class=\"timeline\"><thead><tr><th>Started</th><th>Session</th><th>Agent</th>\
         <th>Length</th><th>Goal (first prompt)</th><th>How it ended</th><th>Failures</th>\
         </tr></thead><tbody>\n",
    );
    for (i, s) in sessions.iter().enumerate() {
        out.push_str(&format!(
            "<tr><td><a href=\"{href}\">{}</a></td><td><a href=\"{href}\" title=\"{full}\"><code>{}</code></a></td><td>{}</td>\
             <td>{}</td><td class=\"goal\">{}</td><td class=\"ended\">{}</td><td>{}</td></tr>\n",
            time(s.first_ms),
            escape(short(&s.session_id)),
            escape(&s.agent),
            duration(s.last_ms.saturating_sub(s.first_ms)),
            escape(&one_line(s.first_prompt.as_deref().unwrap_or(""), LINE_CHARS)),
            endings.get(i).map(String::as_str).unwrap_or(""),
            if s.failures > 0 {
                format!("<span class=\"failed\">{}</span>", s.failures)
            } else {
                "0".into()
            },
            href = session_href(w, p, &s.session_id),
            full = escape(&s.session_id),
        ));
    }
    out.push_str("</tbody></table>\n");
    out.push_str("<h2>Memory documents</h2>\n");
    out.push_str(&memory_explained());
    if docs.is_empty() {
        out.push_str("<p>No memory documents yet.</p>\n");
    } else {
        out.push_str("<ul class=\"docs\">\n");
        for d in &docs {
            let path = d.path.as_deref().unwrap_or("");
            out.push_str(&format!(
                "<li><a href=\"/p/{wu}/{pu}/memory?path={}\">{}</a> <span class=\"meta\">{} bytes</span></li>\n",
                escape(&url(path)),
                escape(path),
                d.bytes.unwrap_or(0)
            ));
        }
        out.push_str("</ul>\n");
        if more_docs {
            out.push_str("<p class=\"meta\">More documents exist than are listed here.</p>\n");
        }
    }
    out.push_str(&format!(
        "<form method=\"get\" action=\"/p/{wu}/{pu}/memory\" class=\"new-doc\">\
         <label>New document <input type=\"text\" name=\"path\" value=\"/notes.md\"></label>\
         <input type=\"hidden\" name=\"new\" value=\"1\">\
         <button type=\"submit\">Create</button></form>\n"
    ));
    out.push_str(&format!(
        "<h2>Forget</h2>\n\
         <p class=\"danger\"><a href=\"/forget?project={we}/{pe}\">Forget this project…</a></p>\n\
         <form method=\"get\" action=\"/forget\" class=\"forget-before\">\
         <input type=\"hidden\" name=\"project\" value=\"{we}/{pe}\">\
         <label>Forget its records from before <input type=\"date\" name=\"before\"></label> \
         <button type=\"submit\">Forget…</button></form>\n"
    ));
    html(200, page(&format!("{w} / {p}"), logged, &out))
}

/// `/p/W/P/briefing`: the whole briefing the next session will get.
pub fn briefing(web: &Web, db: &dyn Database, w: &str, p: &str, logged: bool) -> Response {
    let sessions = match browse(db, |s| s.browse_sessions((w, p), 1)) {
        Ok(r) => r,
        Err(e) => return store_problem(&e),
    };
    let (docs, _) = memory_docs(web.data_dir(), w, p);
    if sessions.is_empty() && docs.is_empty() {
        return not_found(logged);
    }
    let next = match preview(web.data_dir(), db, w, p, sessions.first()) {
        Ok(n) => n,
        Err(e) => return store_problem(&e),
    };
    let (we, pe) = (escape(w), escape(p));
    let (wu, pu) = (escape(&url(w)), escape(&url(p)));
    let mut out = format!(
        "<p class=\"crumbs\"><a href=\"/p/{wu}/{pu}\">{we} / {pe}</a></p>\n\
         <h1>The next session's briefing</h1>\n\
         <p>At the start of the next session of {we} / {pe}, memhook prints this into the \
         agent's context, composed by the same code as session start, from what is stored \
         now. Looking at it consumes nothing.</p>\n"
    );
    let mut basis = vec![format!(
        "budget {} characters{}",
        next.settings.max_chars,
        if next.settings.inject_on_session_start {
            ", with the digest of recent sessions"
        } else {
            ""
        }
    )];
    basis.push(match &next.marker {
        Some(m) => format!("from the marker {}", escape(&m.display().to_string())),
        None => "default settings (no marker found on this machine)".into(),
    });
    if let (Some(a), Some(mcp)) = (&next.agent, next.mcp) {
        basis.push(format!(
            "for {} (the latest session's agent), which {} memhook mcp registered",
            escape(a),
            if mcp { "has" } else { "does not have" }
        ));
    }
    out.push_str(&format!(
        "<p class=\"meta\">Composed with {}.</p>\n",
        basis.join("; ")
    ));
    match &next.text {
        Some(t) => {
            out.push_str(&format!(
                "<p class=\"size\"><code>{}</code></p>\n<pre class=\"briefing\">{}</pre>\n",
                escape(size_line(t)),
                escape(t)
            ));
        }
        None if !next.settings.enabled => out.push_str(
            "<p class=\"conflict\">No briefing: the project's marker says <code>enabled = \
             false</code>, so memhook captures and briefs nothing there.</p>\n",
        ),
        None => out.push_str(
            "<p class=\"conflict\">No briefing: no earlier session of this project did any \
             work, and it has no MEMORY.md. The agent gets nothing extra.</p>\n",
        ),
    }
    out.push_str(&memory_explained());
    out.push_str(&format!(
        "<p><a href=\"/p/{wu}/{pu}/memory\">Open MEMORY.md</a></p>\n"
    ));
    html(200, page("Next briefing", logged, &out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(event: &str) -> Note {
        Note {
            event: event.into(),
            ..Note::default()
        }
    }

    #[test]
    fn a_session_ends_with_its_final_message_else_its_last_result() {
        let mut stop = note("stop");
        stop.text = Some("Fixed the <parser>;\n tests pass.".into());
        let mut fail = note("post-tool-use-failure");
        fail.tool = Some("Bash".into());
        fail.failed = true;
        fail.exit_code = Some(2);
        fail.command = Some("cargo test".into());
        let e = ending(&[fail.clone(), stop]);
        assert!(
            e.starts_with("<span class=\"said\">“Fixed the &lt;parser&gt;; tests pass.”</span>"),
            "{e}"
        );
        assert!(e.contains("(1 failure not fixed)"), "{e}");
        let e = ending(&[fail]);
        assert!(
            e.starts_with(
                "last: Bash <code>cargo test</code> → <span class=\"failed\">exit 2</span>"
            ),
            "{e}"
        );
        assert_eq!(ending(&[]), "—");
    }

    #[test]
    fn one_line_collapses_and_cuts() {
        assert_eq!(one_line("a\n\n  b\tc", 10), "a b c");
        assert_eq!(one_line("abcdef", 3), "abc…");
    }

    #[test]
    fn settings_come_from_the_marker_above_the_root() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(
            t.path().join(MARKER_FILE),
            "[briefing]\nmax_chars = 6000\ninject_on_session_start = true\n",
        )
        .unwrap();
        let sub = t.path().join("src/deep");
        std::fs::create_dir_all(&sub).unwrap();
        let (s, m) = settings_near(sub.to_str());
        assert_eq!((s.max_chars, s.inject_on_session_start), (6000, true));
        assert_eq!(m.unwrap(), t.path().join(MARKER_FILE));
        assert_eq!(settings_near(Some("relative/x")).0, Settings::default());
        assert_eq!(settings_near(None).1, None);
    }

    #[test]
    fn memory_md_is_explained_with_its_limits() {
        let e = memory_explained();
        assert!(e.contains("first 200 lines (at most 25 KiB)"), "{e}");
        assert!(e.contains("start of every session"), "{e}");
    }
}
