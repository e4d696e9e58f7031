//! Search over captured records, as `memory_search` needs it.
//!
//! The server takes any [`RecordSearch`], so the tools do not depend on how
//! records are stored; [`StoreRecords`] searches the embedded SQLite store
//! (FTS5) when there is one.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use memhook_store::sqlite::{Store, StoredRecord, STORE_FILE};

/// Longest record snippet, in bytes (cut on a character boundary).
pub const RECORD_SNIPPET_BYTES: usize = 240;

/// One captured record that matched a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHit {
    pub workspace: String,
    pub project: String,
    pub session_id: Option<String>,
    /// The normalised event name (`user-prompt`, `post-tool-use`, …).
    pub event: String,
    /// When the record was captured (Unix ms).
    pub at_ms: Option<u64>,
    /// A short excerpt of the record (tool name, title or body).
    pub snippet: String,
}

/// Full-text search over captured records.
pub trait RecordSearch {
    /// Records matching the words of `query` (user text, not query syntax)
    /// in `scope` (`None`: every project), best first, at most `limit`.
    fn search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<RecordHit>, String>;
}

/// Captured records for the `activity_*` tools (progressive disclosure).
/// The default answers find nothing.
pub trait RecordFetch {
    /// Records matching every word of `query` in `scope` (`None`: every
    /// project) between `from_ms` (inclusive) and `to_ms` (exclusive).
    fn find(
        &self,
        _scope: Option<(&str, &str)>,
        _query: &str,
        _from_ms: Option<u64>,
        _to_ms: Option<u64>,
        _limit: usize,
    ) -> Result<Vec<StoredRecord>, String> {
        Ok(Vec::new())
    }
    /// The records named by `ids` (key prefixes).
    fn by_id(&self, _ids: &[String]) -> Result<Vec<StoredRecord>, String> {
        Ok(Vec::new())
    }
    /// The record `id` with its session's records around it, and its index.
    fn around(
        &self,
        _id: &str,
        _before: usize,
        _after: usize,
    ) -> Result<Option<(Vec<StoredRecord>, usize)>, String> {
        Ok(None)
    }
}

impl RecordFetch for NoRecords {}

impl StoreRecords {
    /// Run `f` on the store, opened on first use; `None` when nothing was
    /// ever stored.
    fn with<T>(&self, f: impl FnOnce(&Store) -> Result<T, String>) -> Result<Option<T>, String> {
        let mut slot = self.store.borrow_mut();
        if slot.is_none() {
            if std::fs::symlink_metadata(self.data_dir.join(STORE_FILE)).is_err() {
                return Ok(None);
            }
            *slot = Some(Store::open(&self.data_dir).map_err(|e| e.to_string())?);
        }
        f(slot.as_ref().expect("opened above")).map(Some)
    }
}

impl RecordFetch for StoreRecords {
    fn find(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        from_ms: Option<u64>,
        to_ms: Option<u64>,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, String> {
        self.with(|s| {
            s.search_between_fused(scope, query, from_ms, to_ms, limit)
                .map_err(|e| e.to_string())
        })
        .map(Option::unwrap_or_default)
    }
    fn by_id(&self, ids: &[String]) -> Result<Vec<StoredRecord>, String> {
        self.with(|s| s.records_by_id(ids).map_err(|e| e.to_string()))
            .map(Option::unwrap_or_default)
    }
    fn around(
        &self,
        id: &str,
        before: usize,
        after: usize,
    ) -> Result<Option<(Vec<StoredRecord>, usize)>, String> {
        self.with(|s| s.around(id, before, after).map_err(|e| e.to_string()))
            .map(Option::flatten)
    }
}

/// Everything the tools need of captured records.
pub trait Records: RecordSearch + RecordFetch {}
impl<T: RecordSearch + RecordFetch> Records for T {}

/// No record store: searches find no records.
#[derive(Debug, Default)]
pub struct NoRecords;

impl RecordSearch for NoRecords {
    fn search(&self, _: Option<(&str, &str)>, _: &str, _: usize) -> Result<Vec<RecordHit>, String> {
        Ok(Vec::new())
    }
}

/// The embedded store of a data dir, opened on the first search that finds
/// it on disk (a server started before anything was captured still finds
/// records captured later, and never creates an empty store itself).
pub struct StoreRecords {
    data_dir: PathBuf,
    store: RefCell<Option<Store>>,
}

impl StoreRecords {
    pub fn new(data_dir: &Path) -> StoreRecords {
        StoreRecords {
            data_dir: data_dir.to_path_buf(),
            store: RefCell::new(None),
        }
    }
}

impl RecordSearch for StoreRecords {
    fn search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<RecordHit>, String> {
        let words = memhook_store::memory::search::terms(query);
        self.with(|store| {
            let found = store
                .search_fused(scope, query, limit)
                .map_err(|e| e.to_string())?;
            Ok(found.iter().map(|r| hit(r, &words)).collect())
        })
        .map(Option::unwrap_or_default)
    }
}

/// A record as a search hit: the snippet shows the tool and the text around
/// the first query word.
fn hit(r: &StoredRecord, words: &[String]) -> RecordHit {
    let text = match (&r.title, &r.body) {
        (Some(t), Some(b)) if !b.starts_with(t.as_str()) => format!("{t}\n{b}"),
        (_, Some(b)) => b.clone(),
        (Some(t), None) => t.clone(),
        (None, None) => String::new(),
    };
    let mut snippet =
        memhook_store::memory::search::snippet_for(&text, words, RECORD_SNIPPET_BYTES / 2);
    if let Some(tool) = r.tool_name.as_ref().or(r.tool_family.as_ref()) {
        snippet = format!("[{tool}] {snippet}");
    }
    RecordHit {
        workspace: r.workspace.clone(),
        project: r.project.clone(),
        session_id: r.session_id.clone(),
        event: r.event.clone(),
        at_ms: Some(r.occurred_ms),
        snippet,
    }
}
