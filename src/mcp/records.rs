//! Search over captured records, as `memory_search` needs it.
//!
//! The server takes any [`RecordSearch`], so the tools do not depend on how
//! records are stored; [`open`] picks the embedded store when one exists.

use std::path::Path;

/// One captured record that matched a search.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHit {
    pub workspace: String,
    pub project: String,
    pub session_id: Option<String>,
    /// The normalised event name (`UserPromptSubmit`, `PostToolUse`, …).
    pub event: String,
    /// When the record was captured (Unix ms).
    pub at_ms: Option<u64>,
    /// A short excerpt of the record's body.
    pub snippet: String,
}

/// Full-text search over captured records.
pub trait RecordSearch {
    /// Records matching `query` (an FTS5 query) in `scope` (`None`: every
    /// project), best first, at most `limit`.
    fn search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<RecordHit>, String>;
}

/// No record store on this machine (yet): searches find no records.
#[derive(Debug, Default)]
pub struct NoRecords;

impl RecordSearch for NoRecords {
    fn search(&self, _: Option<(&str, &str)>, _: &str, _: usize) -> Result<Vec<RecordHit>, String> {
        Ok(Vec::new())
    }
}

/// Turn free text into a safe FTS5 query: each word quoted, any word may
/// match (`"cargo" OR "test"`). Quotes inside words are doubled; words are
/// what [`crate::memory`]'s search uses, so both halves agree on a query.
pub fn fts_query(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("\"{}\"", w.replace('"', "\"\"")))
        .collect::<Vec<_>>()
        .join(" OR ")
}

/// The record search for `data_dir`.
pub fn open(_data_dir: &Path) -> Box<dyn RecordSearch> {
    Box::new(NoRecords)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts_query_quotes_every_word() {
        let w = vec!["cargo".to_string(), "te\"st".to_string()];
        assert_eq!(fts_query(&w), "\"cargo\" OR \"te\"\"st\"");
        assert_eq!(fts_query(&[]), "");
    }
}
