//! The embedded store's answers to the store traits [`Reads`] and
//! [`Browse`] (their queries are in `handoff.rs`, `activity.rs` and
//! `browse.rs`).

use std::path::Path;

use crate::model::{
    Activity, Browse, Note, ProjectRow, Prompt, Reads, RecordRow, SearchHit, SessionRow,
    SessionSummary, StoreError, TailEvent, TouchedFile,
};

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
    fn session_notes(&self, row: i64) -> Result<Vec<Note>, StoreError> {
        crate::sqlite::Store::session_notes(self, row)
    }
    fn session_conclusion(&self, row: i64) -> Result<Option<(String, String)>, StoreError> {
        crate::sqlite::Store::session_conclusion(self, row)
    }
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
