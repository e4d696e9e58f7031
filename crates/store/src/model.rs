//! The reads `memhook serve` makes, as interfaces that both stores answer:
//! the embedded SQLite store ([`crate::sqlite::Store`]) and PostgreSQL
//! ([`memhook_store_pg`]).
//!
//! - [`Reads`]: the session-start briefing (`GET /handoff`).
//!   `briefing::compose` is written against this trait only, so the same
//!   input gives the same briefing text from either store.
//! - [`Browse`]: the web view's pages and JSON API (projects, sessions,
//!   records, search with highlights).

use std::path::Path;

use crate::sqlite::{
    Activity, ProjectRow, Prompt, RecordRow, SearchHit, SessionRow, SessionSummary, StoreError,
    TailEvent, TouchedFile,
};

/// One consistent view of a store for composing a briefing.
pub trait Reads {
    /// The data dir whose project memory (`MEMORY.md`) the briefing shows.
    fn data_dir(&self) -> &Path;
    /// Sessions of a scope that did work, newest activity first, leaving out
    /// `exclude_session`.
    fn sessions(
        &self,
        scope: (&str, &str),
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, StoreError>;
    /// Tool families and failures of the sessions `rows`.
    fn outcomes(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError>;
    /// Everything [`Activity`] holds for the sessions `rows`.
    fn activity(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError>;
    /// (prompts, tool results, first prompt) of one session.
    fn session_outline(&self, row: i64) -> Result<(u64, u64, Option<String>), StoreError>;
    /// First prompt, the last `last` prompts and the prompt count of a session.
    #[allow(clippy::type_complexity)]
    fn session_prompts(
        &self,
        row: i64,
        last: usize,
    ) -> Result<(Option<Prompt>, Vec<Prompt>, u64), StoreError>;
    /// The session's records from `from_ms` on, oldest first.
    fn session_tail(&self, row: i64, from_ms: u64) -> Result<Vec<TailEvent>, StoreError>;
    /// The first working directory the session reported.
    fn session_root(&self, row: i64) -> Result<Option<String>, StoreError>;
    /// The files the session touched, changed ones first.
    fn session_files(&self, row: i64) -> Result<Vec<TouchedFile>, StoreError>;
}

impl Reads for crate::sqlite::Store {
    fn data_dir(&self) -> &Path {
        crate::sqlite::Store::data_dir(self)
    }
    fn sessions(
        &self,
        scope: (&str, &str),
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        crate::sqlite::Store::sessions(self, scope, exclude_session, limit)
    }
    fn outcomes(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError> {
        crate::sqlite::Store::outcomes(self, rows, max_list)
    }
    fn activity(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError> {
        crate::sqlite::Store::activity(self, rows, max_list)
    }
    fn session_outline(&self, row: i64) -> Result<(u64, u64, Option<String>), StoreError> {
        crate::sqlite::Store::session_outline(self, row)
    }
    fn session_prompts(
        &self,
        row: i64,
        last: usize,
    ) -> Result<(Option<Prompt>, Vec<Prompt>, u64), StoreError> {
        crate::sqlite::Store::session_prompts(self, row, last)
    }
    fn session_tail(&self, row: i64, from_ms: u64) -> Result<Vec<TailEvent>, StoreError> {
        crate::sqlite::Store::session_tail(self, row, from_ms)
    }
    fn session_root(&self, row: i64) -> Result<Option<String>, StoreError> {
        crate::sqlite::Store::session_root(self, row)
    }
    fn session_files(&self, row: i64) -> Result<Vec<TouchedFile>, StoreError> {
        crate::sqlite::Store::session_files(self, row)
    }
}

/// One consistent view of a store for the web view (DESIGN §12). The SQLite
/// queries are in `sink/store/browse.rs`, their PostgreSQL mirror in
/// `sink/pg/browse.rs`.
pub trait Browse {
    /// Every project, most recently active first.
    fn browse_projects(&self) -> Result<Vec<ProjectRow>, StoreError>;
    /// The sessions of one project, newest activity first, at most `limit`.
    fn browse_sessions(
        &self,
        scope: (&str, &str),
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError>;
    /// One session by its row id.
    fn browse_session(&self, row: i64) -> Result<Option<SessionRow>, StoreError>;
    /// The records of one session, oldest first, at most `limit`.
    fn browse_records(&self, row: i64, limit: usize) -> Result<Vec<RecordRow>, StoreError>;
    /// Records matching every word of `query` (user text, never syntax) in
    /// `scope` (`None`: every project), best match first, each with a
    /// highlighted snippet.
    fn browse_search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError>;
}

impl Browse for crate::sqlite::Store {
    fn browse_projects(&self) -> Result<Vec<ProjectRow>, StoreError> {
        crate::sqlite::Store::browse_projects(self)
    }
    fn browse_sessions(
        &self,
        scope: (&str, &str),
        limit: usize,
    ) -> Result<Vec<SessionRow>, StoreError> {
        crate::sqlite::Store::browse_sessions(self, scope, limit)
    }
    fn browse_session(&self, row: i64) -> Result<Option<SessionRow>, StoreError> {
        crate::sqlite::Store::browse_session(self, row)
    }
    fn browse_records(&self, row: i64, limit: usize) -> Result<Vec<RecordRow>, StoreError> {
        crate::sqlite::Store::browse_records(self, row, limit)
    }
    fn browse_search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<SearchHit>, StoreError> {
        crate::sqlite::Store::browse_search(self, scope, query, limit)
    }
}
