//! The PostgreSQL schema: versioned migrations, applied once under an
//! advisory lock.
//!
//! `memhook_migrations` holds one row per applied migration (version from
//! 1). A server takes `pg_advisory_lock(`[`MIGRATION_LOCK`]`)` before it
//! reads that table, so when several servers start at once exactly one
//! applies each missing migration and the others wait, then find nothing
//! left to do. A database migrated by a newer memhook (a version this build
//! does not know) is refused, never guessed at.

use postgres::Client;

/// The advisory lock key held while migrating (`"memhook"` in ASCII).
pub const MIGRATION_LOCK: i64 = 0x006d_656d_686f_6f6b;

/// Ordered migrations; entry `i` is version `i + 1`. Never edit a released
/// entry: append a new one.
///
/// Every text column is `COLLATE "C"`: comparisons and orderings are by
/// code point, as SQLite's BINARY collation, whatever the database's
/// locale, so both stores sort ties the same way.
pub const MIGRATIONS: &[&str] = &[
    // 1: projects, sessions, records with their full-text vector; the
    // forget log; named tokens (the team-server tokens) and the token name
    // a record was delivered with.
    r#"CREATE TABLE projects (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        workspace TEXT COLLATE "C" NOT NULL,
        project TEXT COLLATE "C" NOT NULL,
        first_ms BIGINT NOT NULL,
        last_ms BIGINT NOT NULL,
        UNIQUE (workspace, project)
     );
     CREATE TABLE sessions (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        project_id BIGINT NOT NULL REFERENCES projects(id),
        agent TEXT COLLATE "C" NOT NULL,
        session_id TEXT COLLATE "C" NOT NULL,
        first_ms BIGINT NOT NULL,
        last_ms BIGINT NOT NULL,
        events BIGINT NOT NULL DEFAULT 0,
        work BIGINT NOT NULL DEFAULT 0,
        UNIQUE (project_id, agent, session_id)
     );
     CREATE INDEX sessions_recent ON sessions (project_id, last_ms);
     CREATE TABLE records (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        key TEXT COLLATE "C" NOT NULL UNIQUE,
        occurred_ms BIGINT NOT NULL,
        project_id BIGINT NOT NULL REFERENCES projects(id),
        session_row BIGINT REFERENCES sessions(id),
        agent TEXT COLLATE "C" NOT NULL,
        event TEXT COLLATE "C" NOT NULL,
        native_event TEXT COLLATE "C" NOT NULL,
        session_id TEXT COLLATE "C",
        cwd TEXT COLLATE "C",
        subagent BOOLEAN NOT NULL DEFAULT false,
        tool_family TEXT COLLATE "C",
        tool_name TEXT COLLATE "C",
        tool_call_id TEXT COLLATE "C",
        outcome TEXT COLLATE "C",
        disposition TEXT COLLATE "C" NOT NULL,
        title TEXT COLLATE "C",
        body TEXT COLLATE "C",
        files JSONB,
        token_name TEXT COLLATE "C",
        search TSVECTOR NOT NULL
     );
     CREATE INDEX records_scope_time ON records (project_id, occurred_ms);
     CREATE INDEX records_time ON records (occurred_ms);
     CREATE INDEX records_session ON records (session_row, occurred_ms);
     CREATE INDEX records_search ON records USING GIN (search);
     CREATE TABLE forget_log (
        at_ms BIGINT NOT NULL,
        selector TEXT COLLATE "C" NOT NULL,
        records BIGINT NOT NULL,
        sessions BIGINT NOT NULL,
        projects BIGINT NOT NULL
     );
     CREATE TABLE tokens (
        name TEXT COLLATE "C" PRIMARY KEY,
        hash TEXT NOT NULL,
        created TEXT NOT NULL,
        revoked TEXT
     );"#,
    // 2: partial indexes for the briefing's per-session reads (found with
    // EXPLAIN ANALYZE on 100k records, docs/benchmarks.md): each holds only
    // the rows its query wants, so a session's failures, files and prompts
    // are read without visiting the session's other records. The failure
    // predicate is `read::FAILED`, word for word (a partial index is used
    // only when the query implies its predicate; a test checks they agree).
    r#"CREATE INDEX records_session_failures ON records (session_row, occurred_ms)
        WHERE (event = 'post-tool-use-failure' OR coalesce(outcome = 'error', false));
     CREATE INDEX records_session_files ON records (session_row) WHERE files IS NOT NULL;
     CREATE INDEX records_session_prompts ON records (session_row, occurred_ms)
        WHERE event = 'user-prompt';"#,
    // 3: what a tool result did and the plan the agent keeps (record fields
    // `tool.exit_code`, `command` and `plan`, DESIGN §4); the agent's final
    // message is a stop record's `body`. The SQLite store's migration 4.
    r#"ALTER TABLE records ADD COLUMN exit_code BIGINT;
     ALTER TABLE records ADD COLUMN command TEXT COLLATE "C";
     ALTER TABLE records ADD COLUMN plan JSONB;"#,
    // 4: search that understands code and words (the SQLite store's
    // migration 5): a stemming configuration without stop words (Snowball
    // English: `retries` finds `retry`, `the` is still a word), and each
    // record's vector made anew with its identifier words by
    // [`reindex`] (`parse date` finds `parseDate`).
    r#"CREATE TEXT SEARCH DICTIONARY memhook_english_stem (
        TEMPLATE = snowball, Language = english
     );
     CREATE TEXT SEARCH CONFIGURATION memhook_english (COPY = simple);
     ALTER TEXT SEARCH CONFIGURATION memhook_english
        ALTER MAPPING FOR asciiword, word WITH memhook_english_stem;"#,
    // 5: each project's record count kept on its row (the SQLite store's
    // migration 6), so listing projects reads one row per project instead
    // of counting every record (issue 29); filled in here once.
    r#"ALTER TABLE projects ADD COLUMN records BIGINT NOT NULL DEFAULT 0;
     UPDATE projects p SET records = (SELECT count(*) FROM records r WHERE r.project_id = p.id);"#,
    // 6: retention's books (the SQLite store's migration 8): per class of
    // record, where its slices stopped and how many records it removed.
    r#"CREATE TABLE retention (
        class TEXT COLLATE "C" PRIMARY KEY,
        cursor_ms BIGINT NOT NULL,
        cursor_id BIGINT NOT NULL,
        removed BIGINT NOT NULL,
        last_ms BIGINT
     );"#,
    // 7: search by meaning (the SQLite store's migration 9,
    // `memhook_store::meaning`): each record's meaning (100 bytes) with its
    // time and project, removed with its record; the records stored before
    // are filled in after each insert, newest first, from `below` down
    // (bounded work, never here).
    r#"CREATE TABLE record_meaning (
        id BIGINT PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
        project_id BIGINT NOT NULL,
        occurred_ms BIGINT NOT NULL,
        vector BYTEA NOT NULL
     );
     CREATE INDEX record_meaning_scope ON record_meaning (project_id, id);
     CREATE TABLE meaning_fill (below BIGINT NOT NULL);
     INSERT INTO meaning_fill (below) SELECT coalesce(max(id), 0) + 1 FROM records;"#,
    // 8: a record whose only text is memhook's own wording (no body, no
    // files, not a tool result: `memhook_store::meaning::record_texts`)
    // keeps no meaning (the SQLite store's migration 13).
    r#"DELETE FROM record_meaning m USING records r
       WHERE r.id = m.id
         AND (r.body IS NULL OR btrim(r.body, E' \t\n\r') = '')
         AND (r.files IS NULL OR r.files = '[]'::jsonb)
         AND r.event NOT IN ('post-tool-use', 'post-tool-use-failure');"#,
];

/// The migration (its version) after which `reindex` runs.
pub const WORDS_VERSION: i32 = 4;

/// Records re-indexed per statement by [`reindex`].
const REINDEX_BATCH: i64 = 1000;

/// Make every record's full-text vector anew from its title, body and files
/// ([`super::ingest::search_text`]), in batches, inside the migration's
/// transaction.
fn reindex(tx: &mut postgres::Transaction<'_>) -> Result<(), postgres::Error> {
    let mut after: i64 = 0;
    loop {
        let rows = tx.query(
            "SELECT id, title, body, files::text FROM records WHERE id > $1 ORDER BY id LIMIT $2",
            &[&after, &REINDEX_BATCH],
        )?;
        let Some(last) = rows.last() else {
            return Ok(());
        };
        after = last.get(0);
        let ids: Vec<i64> = rows.iter().map(|r| r.get(0)).collect();
        let docs: Vec<String> = rows
            .iter()
            .map(|r| {
                let files: Option<String> = r.get(3);
                let files: Vec<String> = files
                    .and_then(|f| serde_json::from_str(&f).ok())
                    .unwrap_or_default();
                super::ingest::search_text(r.get(1), r.get(2), &files)
            })
            .collect();
        tx.execute(
            "UPDATE records r SET search = to_tsvector('memhook_english', u.doc)
             FROM unnest($1::bigint[], $2::text[]) AS u(id, doc) WHERE r.id = u.id",
            &[&ids, &docs],
        )?;
    }
}

/// Test-only, honoured by debug builds alone (release builds never read
/// it): milliseconds to wait between reading the schema version and
/// applying the missing migrations, so a test can show that servers
/// starting at once would all migrate without the advisory lock.
pub const TEST_PAUSE_ENV: &str = "MEMHOOK_TEST_MIGRATE_PAUSE_MS";

fn test_pause() {
    if !cfg!(debug_assertions) {
        return;
    }
    if let Some(ms) = std::env::var(TEST_PAUSE_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// The schema version this build writes.
pub const SCHEMA_VERSION: i32 = MIGRATIONS.len() as i32;

/// What [`migrate`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Migrated {
    /// The schema is at [`SCHEMA_VERSION`]; `applied` migrations were run now.
    Current { applied: usize },
    /// The database holds a newer schema than this build knows.
    TooNew { version: i32 },
}

/// Bring the schema to [`SCHEMA_VERSION`] under the advisory lock. The lock
/// is a session lock: it is released here, and by the server if this
/// connection dies half-way.
pub fn migrate(client: &mut Client) -> Result<Migrated, postgres::Error> {
    client.execute("SELECT pg_advisory_lock($1)", &[&MIGRATION_LOCK])?;
    let result = migrate_locked(client);
    let unlocked = client.execute("SELECT pg_advisory_unlock($1)", &[&MIGRATION_LOCK]);
    let out = result?;
    unlocked?;
    Ok(out)
}

fn migrate_locked(client: &mut Client) -> Result<Migrated, postgres::Error> {
    client.batch_execute(
        "CREATE TABLE IF NOT EXISTS memhook_migrations (
            version INTEGER PRIMARY KEY,
            applied_at TIMESTAMPTZ NOT NULL DEFAULT now()
         )",
    )?;
    let have: i32 = client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM memhook_migrations",
            &[],
        )?
        .get(0);
    if have > SCHEMA_VERSION {
        return Ok(Migrated::TooNew { version: have });
    }
    if have < SCHEMA_VERSION {
        test_pause();
    }
    let mut applied = 0;
    for (i, step) in MIGRATIONS.iter().enumerate().skip(have as usize) {
        let mut tx = client.transaction()?;
        tx.batch_execute(step)?;
        if i as i32 + 1 == WORDS_VERSION {
            reindex(&mut tx)?;
        }
        tx.execute(
            "INSERT INTO memhook_migrations (version) VALUES ($1)",
            &[&(i as i32 + 1)],
        )?;
        tx.commit()?;
        applied += 1;
    }
    Ok(Migrated::Current { applied })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_failure_index_has_the_failure_queries_predicate() {
        let failures = MIGRATIONS[1];
        assert!(
            failures.contains(&format!("WHERE {}", super::super::read::FAILED)),
            "{failures}"
        );
        assert_eq!(SCHEMA_VERSION, 8);
    }
}
