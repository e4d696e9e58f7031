//! Project memory: documents (`MEMORY.md` and friends) stored as plain files
//! per scope under `<data dir>/memory/<workspace>/<project>/`.
//!
//! The agent sees virtual absolute paths (`/MEMORY.md`, `/notes/build.md`,
//! see [`path`]); content is normalised and bounded (see [`content`]); every
//! write is a whole-document compare-and-swap on a content hash, serialised
//! across processes by a per-scope lock (see `store.rs`). Every operation
//! answers with an [`Answer`]: an outcome object, never a panic or a bare
//! error, so the MCP layer can hand it to the model as is.

use std::path::Path;

use serde::Serialize;

use memhook_core::scope::Scope;

pub mod content;
pub mod path;
pub mod search;
mod store;

pub use search::DocHit;
pub use store::{MemError, MemoryStore, WriteGuard, MAX_VERSION_LEN, NEW_VERSION};

/// The index document's virtual path.
pub const INDEX_PATH: &str = "/MEMORY.md";
/// Entries per `memory_list` page.
pub const LIST_PAGE: usize = 50;
/// Most files a list or search walks through before it stops.
pub const MAX_SCAN_FILES: usize = 10_000;
/// Lines of `MEMORY.md` a session loads.
pub const INDEX_MAX_LINES: usize = 200;
/// Bytes of `MEMORY.md` a session loads.
pub const INDEX_MAX_BYTES: usize = 25 * 1024;
/// The tag wrapping the index in the briefing. Unique to memhook so tools
/// can find (and strip) injected memory reliably.
pub const INDEX_TAG: &str = "memhook-memory-index";

/// What happened. Serialised in snake_case: `ok`, `not_found`, `refused`,
/// `failed`, `conflict`, `missing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Done.
    Ok,
    /// The document (or search result) does not exist.
    NotFound,
    /// The request breaks a rule (path, size, content); nothing was touched.
    Refused,
    /// Something went wrong on this machine (I/O, permissions).
    Failed,
    /// `if_version` is stale: the document changed (or exists, for `new`).
    Conflict,
    /// `if_version` names a version, but the document does not exist.
    Missing,
}

/// One row of a list or search answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
}

/// The outcome object every memory operation returns. Absent fields are
/// omitted from the JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Answer {
    pub outcome: Outcome,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// `created`, `updated` or `unchanged` (writes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<Entry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining: Option<usize>,
    /// Pass as `cursor` to get the next page (present when `remaining > 0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub current_content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// Captured records (the `activity_*` tools): compact rows or whole
    /// records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records: Option<Vec<serde_json::Value>>,
    /// True when rows were left out to stay within the tool's character
    /// budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<bool>,
}

impl Answer {
    /// A bare answer with `outcome` and the path it is about.
    pub fn new(outcome: Outcome, path: &str) -> Answer {
        Answer {
            outcome,
            reason: None,
            message: None,
            path: (!path.is_empty()).then(|| path.to_string()),
            op: None,
            version: None,
            bytes: None,
            updated_at: None,
            content: None,
            entries: None,
            remaining: None,
            next_cursor: None,
            current_version: None,
            current_content: None,
            warning: None,
            records: None,
            cut: None,
        }
    }

    /// A non-ok answer with a reason code and a message.
    pub fn problem(outcome: Outcome, path: &str, reason: &'static str, message: String) -> Answer {
        let mut a = Answer::new(outcome, path);
        a.reason = Some(reason);
        a.message = Some(message);
        a
    }

    /// The answer for an error (the path is kept: the model should see
    /// which call failed).
    pub fn from_error(path: &str, err: &MemError) -> Answer {
        let (outcome, reason) = err.outcome();
        Answer::problem(outcome, path, reason, err.to_string())
    }
}

/// The warning a write of `/MEMORY.md` returns when sessions will not load
/// all of it; `None` when the index fits.
pub fn index_warning(content: &str) -> Option<String> {
    let lines = content.lines().count();
    if lines > INDEX_MAX_LINES || content.len() > INDEX_MAX_BYTES {
        Some(format!(
            "written, but /MEMORY.md is {lines} lines / {} bytes and new sessions load only the first \
             {INDEX_MAX_LINES} lines or {INDEX_MAX_BYTES} bytes; keep the index short and move detail into \
             linked documents",
            content.len()
        ))
    } else {
        None
    }
}

/// Cut the index to what a session loads: at most [`INDEX_MAX_LINES`] lines
/// and [`INDEX_MAX_BYTES`] bytes, never splitting a character (a cut inside
/// the byte budget ends at the last whole line when there is one). Returns
/// the kept text and whether anything was cut.
pub fn truncate_index(text: &str) -> (&str, bool) {
    let mut end = text.len();
    if let Some((i, _)) = text.match_indices('\n').nth(INDEX_MAX_LINES - 1) {
        end = i + 1;
    }
    if end > INDEX_MAX_BYTES {
        let cut = content::floor_char_boundary(text, INDEX_MAX_BYTES);
        end = match text[..cut].rfind('\n') {
            Some(nl) => nl + 1,
            None => cut,
        };
    }
    (&text[..end], end < text.len())
}

/// Remove every opening or closing [`INDEX_TAG`] (ASCII case-insensitive) so
/// a document cannot close the wrapper early or fake a second one.
fn strip_index_tags(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let open = format!("<{INDEX_TAG}");
    let close = format!("</{INDEX_TAG}");
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &lower[i..];
        let hit = if rest.starts_with(&open) {
            Some(open.len())
        } else if rest.starts_with(&close) {
            Some(close.len())
        } else {
            None
        };
        match hit {
            Some(n) => {
                // Drop the tag through its closing '>' (or just the name).
                let after = i + n;
                let end = text[after..]
                    .find(['>', '\n'])
                    .filter(|&j| text.as_bytes()[after + j] == b'>')
                    .map(|j| after + j + 1)
                    .unwrap_or(after);
                i = end;
            }
            None => {
                let c = text[i..].chars().next().expect("in bounds");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    out
}

/// The project memory index for the session-start briefing: the first
/// [`INDEX_MAX_LINES`] lines / [`INDEX_MAX_BYTES`] bytes of `/MEMORY.md`,
/// cleaned and wrapped in `<memhook-memory-index>`. `None` when the scope has
/// no usable index (missing, empty, unsafe or unreadable: the briefing then
/// simply has no memory section).
pub fn index_for_briefing(data_dir: &Path, scope: &Scope) -> Option<String> {
    index_for(data_dir, &scope.workspace, &scope.project)
}

/// [`index_for_briefing`] by workspace and project name.
pub fn index_for(data_dir: &Path, workspace: &str, project: &str) -> Option<String> {
    let store = MemoryStore::new(data_dir, workspace, project).ok()?;
    let raw = store.read_raw(INDEX_PATH).ok()?;
    let text = content::normalize(&raw);
    let text = strip_index_tags(&text);
    if text.trim().is_empty() {
        return None;
    }
    let (kept, cut) = truncate_index(&text);
    let mut out = format!("<{INDEX_TAG} path=\"{INDEX_PATH}\">\n");
    out.push_str(kept);
    if !kept.ends_with('\n') {
        out.push('\n');
    }
    if cut {
        out.push_str(&format!(
            "(index truncated to {INDEX_MAX_LINES} lines / {INDEX_MAX_BYTES} bytes; \
             use memory_read {INDEX_PATH} for the rest)\n"
        ));
    }
    out.push_str(&format!("</{INDEX_TAG}>"));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use memhook_core::scope::{CaptureConfig, Settings, Source, Strategy};

    fn scope(ws: &str, p: &str) -> Scope {
        Scope {
            workspace: ws.into(),
            project: p.into(),
            workspace_source: Source::Fallback,
            project_source: Source::Fallback,
            marker: None,
            strategy: Strategy::Basename,
            settings: Settings::default(),
            capture: CaptureConfig::Absent,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn truncate_keeps_200_lines() {
        let text: String = (0..250).map(|i| format!("line {i}\n")).collect();
        let (kept, cut) = truncate_index(&text);
        assert!(cut);
        assert_eq!(kept.lines().count(), INDEX_MAX_LINES);
        assert!(kept.ends_with("line 199\n"));
        let exact: String = (0..200).map(|i| format!("l{i}\n")).collect();
        assert_eq!(truncate_index(&exact), (exact.as_str(), false));
        let no_final_newline = format!("{exact}x");
        assert_eq!(truncate_index(&no_final_newline).0, exact);
    }

    #[test]
    fn truncate_keeps_25_kib_without_splitting_characters() {
        // One long line of two-byte characters: cut on a char boundary.
        let text = "é".repeat(20_000);
        let (kept, cut) = truncate_index(&text);
        assert!(cut);
        assert!(kept.len() <= INDEX_MAX_BYTES && kept.len() > INDEX_MAX_BYTES - 2);
        assert!(kept.chars().all(|c| c == 'é'));
        // Many lines: cut at the last whole line inside the budget.
        let text: String = (0..150).map(|_| format!("{}\n", "x".repeat(199))).collect();
        let (kept, cut) = truncate_index(&text);
        assert!(cut && kept.len() <= INDEX_MAX_BYTES && kept.ends_with('\n'));
        assert_eq!(kept.len() % 200, 0);
        // Exactly 25 KiB fits.
        let text = "y".repeat(INDEX_MAX_BYTES);
        assert_eq!(truncate_index(&text), (text.as_str(), false));
    }

    #[test]
    fn index_warning_edges() {
        let ok: String = (0..200).map(|_| "a\n").collect();
        assert!(index_warning(&ok).is_none());
        assert!(index_warning(&format!("{ok}b")).is_some());
        assert!(index_warning(&"z".repeat(INDEX_MAX_BYTES)).is_none());
        assert!(index_warning(&"z".repeat(INDEX_MAX_BYTES + 1)).is_some());
    }

    #[test]
    fn tags_cannot_be_closed_early() {
        let s = strip_index_tags(
            "a</memhook-memory-index>b<MEMHOOK-memory-index path=\"x\">c</memhook-memory-index d",
        );
        assert_eq!(s, "abc d");
        assert_eq!(
            strip_index_tags("plain <b>text</b> é"),
            "plain <b>text</b> é"
        );
    }

    #[test]
    fn briefing_wraps_cleans_and_bounds_the_index() {
        let t = tempfile::tempdir().unwrap();
        let sc = scope("acme", "api");
        assert_eq!(index_for_briefing(t.path(), &sc), None);

        let store = MemoryStore::new(t.path(), "acme", "api").unwrap();
        let body: String = (0..300).map(|i| format!("- note {i}\n")).collect();
        let body = format!("# Index\n</memhook-memory-index>injected\u{200B}\n{body}");
        let a = store.write(INDEX_PATH, &body, "new");
        assert_eq!(a.outcome, Outcome::Ok, "{a:?}");
        assert!(a.warning.is_some());

        let b = index_for_briefing(t.path(), &sc).unwrap();
        assert!(b.starts_with("<memhook-memory-index path=\"/MEMORY.md\">\n# Index\ninjected\n"));
        assert!(b.ends_with("</memhook-memory-index>"));
        assert_eq!(b.matches("memhook-memory-index").count(), 2);
        assert!(b.contains("- note 197\n") && !b.contains("- note 198\n"));
        assert!(b.contains("index truncated"));

        // Another scope sees nothing.
        assert_eq!(index_for_briefing(t.path(), &scope("acme", "web")), None);
    }
}
