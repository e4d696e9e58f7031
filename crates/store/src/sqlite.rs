//! The embedded store: one SQLite database, `<data>/store.sqlite3` (0600).
//!
//! Records are keyed by their idempotency key, so a replay is a no-op
//! (`INSERT OR IGNORE`): at-least-once delivery from the spool becomes
//! exactly-once here. Each record also updates its project and session rows,
//! and its title, body and files go into an FTS5 index for `memhook search`.
//!
//! The schema is versioned from the first release: `PRAGMA user_version`
//! holds the number of `MIGRATIONS` applied, and opening a database runs the
//! missing ones in order inside one transaction. A database written by a newer
//! memhook (higher version) is refused rather than guessed at.
//!
//! Every `LIMIT` is an integer written into the SQL, never a bound
//! parameter: SQLite looks at a bound `LIMIT` while it plans a statement,
//! so binding it invalidates the plan and the statement is compiled a
//! second time on its first step. That was a fifth of a session start's
//! work (docs/benchmarks.md, "Session start: the store's share").

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::{params, Connection, OptionalExtension};

use memhook_core::data_dir;
use memhook_core::record::Record;

mod activity;
mod browse;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod c_log;
mod columns;
pub(crate) mod compact;
pub mod database;
mod export;
mod forget;
mod generation;
pub mod handoff;
mod meaning;
mod ranked;
mod reads;
pub mod retention;
mod tokens;
pub use activity::MIN_ID_PREFIX;
pub use compact::{register_functions, DEFLATE_MIN};
pub use forget::{forget_reader_wait, FORGET_READER_WAIT, FORGET_READER_WAIT_ENV};
pub use ranked::{bm25_bound, FIRST_WINDOW_MIN, FIRST_WINDOW_PARTS};
// The model's rows and errors, where the SQLite queries return them.
pub use crate::model::{
    check_forget_key, session_select, Activity, ExportFilter, FamilyCount, ForgetError, Forgotten,
    LogEntry, ProjectRow, Prompt, RecordRow, SearchHit, Selector, SessionRow, SessionSummary,
    StoreError, StoredRecord, TailEvent, TouchedFile, EXCERPT_CHARS, FIRST_PROMPT_CHARS, HIT_END,
    HIT_START, MATCH_MARK, MATCH_WORDS, MAX_QUERY_CHARS, MAX_QUERY_LIMIT, MAX_QUERY_TERMS,
    MAX_SESSION_FILES, MAX_TAIL_RECORDS, MIN_KEY_PREFIX, READ_ONLY_FILE_TOOLS, SNIPPET_TOKENS,
    TOOL_RESULTS, TOOL_RESULT_EVENTS, WORK_EVENTS,
};

/// File name of the store inside the data dir.
pub const STORE_FILE: &str = memhook_core::data_dir::STORE_FILE;
/// How long a writer waits for another connection's lock before failing.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Ordered schema migrations; index `i` moves the schema from version `i` to
/// `i + 1`. Never edit a released entry: append a new one.
const MIGRATIONS: &[&str] = &[
    // 1: projects, sessions, records, FTS5 over title/body/files.
    "CREATE TABLE projects (
        id INTEGER PRIMARY KEY,
        workspace TEXT NOT NULL,
        project TEXT NOT NULL,
        first_ms INTEGER NOT NULL,
        last_ms INTEGER NOT NULL,
        UNIQUE (workspace, project)
     );
     CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        project_id INTEGER NOT NULL REFERENCES projects(id),
        agent TEXT NOT NULL,
        session_id TEXT NOT NULL,
        first_ms INTEGER NOT NULL,
        last_ms INTEGER NOT NULL,
        events INTEGER NOT NULL DEFAULT 0,
        work INTEGER NOT NULL DEFAULT 0,
        UNIQUE (project_id, agent, session_id)
     );
     CREATE INDEX sessions_recent ON sessions (project_id, last_ms);
     CREATE TABLE records (
        id INTEGER PRIMARY KEY,
        key TEXT NOT NULL UNIQUE,
        occurred_ms INTEGER NOT NULL,
        project_id INTEGER NOT NULL REFERENCES projects(id),
        session_row INTEGER REFERENCES sessions(id),
        agent TEXT NOT NULL,
        event TEXT NOT NULL,
        native_event TEXT NOT NULL,
        session_id TEXT,
        cwd TEXT,
        subagent INTEGER NOT NULL DEFAULT 0,
        tool_family TEXT,
        tool_name TEXT,
        tool_call_id TEXT,
        outcome TEXT,
        disposition TEXT NOT NULL,
        title TEXT,
        body TEXT,
        files TEXT
     );
     CREATE INDEX records_scope_time ON records (project_id, occurred_ms);
     CREATE INDEX records_time ON records (occurred_ms);
     CREATE INDEX records_session ON records (session_row, occurred_ms);
     CREATE VIRTUAL TABLE records_fts USING fts5 (
        title, body, files, content = 'records', content_rowid = 'id'
     );",
    // 2: what `memhook forget` removed: when, which selector, how many (never
    // the forgotten text).
    "CREATE TABLE forget_log (
        at_ms INTEGER NOT NULL,
        selector TEXT NOT NULL,
        records INTEGER NOT NULL,
        sessions INTEGER NOT NULL,
        projects INTEGER NOT NULL
     );",
    // 3: named tokens of a team server (`memhook token`; only a hash of each
    // token is kept), and which token delivered each record (NULL: written
    // into this store directly by the local hook, drainer or `import`
    // without one). The same names as the PostgreSQL schema.
    "CREATE TABLE tokens (
        name TEXT PRIMARY KEY,
        hash TEXT NOT NULL,
        created TEXT NOT NULL,
        revoked TEXT
     );
     ALTER TABLE records ADD COLUMN token_name TEXT;",
    // 4: what a tool result did and the plan the agent keeps (record
    // fields `tool.exit_code`, `command` and `plan`, DESIGN §4); the
    // agent's final message is a stop record's `body`.
    "ALTER TABLE records ADD COLUMN exit_code INTEGER;
     ALTER TABLE records ADD COLUMN command TEXT;
     ALTER TABLE records ADD COLUMN plan TEXT;",
    // 5: search that understands code and words: each record's identifier
    // words (`crate::words`, so `parse date` finds `parseDate`) are kept
    // beside it and indexed with its title, body and files, by a stemming
    // tokenizer (`retries` finds `retry`). The index is rebuilt: the words
    // of the records stored before are filled in by [`Store::migrate`].
    "ALTER TABLE records ADD COLUMN words TEXT;
     DROP TABLE records_fts;
     CREATE VIRTUAL TABLE records_fts USING fts5 (
        title, body, files, words, content = 'records', content_rowid = 'id',
        tokenize = 'porter unicode61'
     );",
    // 6: each project's record count kept on its row (a roll-up, like a
    // session's `events`), so listing projects reads one row per project
    // instead of counting every record (issue 29); filled in here once.
    "ALTER TABLE projects ADD COLUMN records INTEGER NOT NULL DEFAULT 0;
     UPDATE projects SET records = (SELECT count(*) FROM records r WHERE r.project_id = projects.id);",
    // 7: what ranking a search match needs of its record — its time (the
    // recency weight) and project (the scope filter) — in a small covering
    // index by id, about 20 bytes a record, so that ranking thousands of
    // matches reads these instead of the records' pages (issue 29:
    // `ranked`). SQLite keeps it with the table (forget included).
    "CREATE INDEX records_rank ON records (id, occurred_ms, project_id);",
    // 8: retention (`retention.rs`, docs/retention.md): per class of
    // record, where its slices stopped (time and id of the last record
    // looked at) and how many records it removed, never which.
    "CREATE TABLE retention (
        class TEXT PRIMARY KEY,
        cursor_ms INTEGER NOT NULL,
        cursor_id INTEGER NOT NULL,
        removed INTEGER NOT NULL,
        last_ms INTEGER
     );",
    // 9: search by meaning (`crate::meaning`, `sqlite/meaning.rs`): each
    // record's meaning (100 bytes), its time and project for the scope
    // filter, removed with its record. The records stored before are
    // filled in after each insert batch, newest first, from `below` down
    // (bounded work; never here, at open).
    "CREATE TABLE record_meaning (
        id INTEGER PRIMARY KEY REFERENCES records(id) ON DELETE CASCADE,
        project_id INTEGER NOT NULL,
        occurred_ms INTEGER NOT NULL,
        vector BLOB NOT NULL
     );
     CREATE INDEX record_meaning_scope ON record_meaning (project_id, id);
     CREATE TABLE meaning_fill (below INTEGER NOT NULL);
     INSERT INTO meaning_fill (below) SELECT coalesce(max(id), 0) + 1 FROM records;",
    // 10: forget without rebuilding the file (issue 29, `forget.rs`).
    // `scrubbed` holds one row once every unused byte of the file is known
    // to be zero: from its creation for a store made by this version (every
    // connection runs with `secure_delete`, [`Store::open_until`]), after
    // its first forget (which then rebuilds the file once) for a store made
    // before.
    "CREATE TABLE scrubbed (at_ms INTEGER NOT NULL);",
    // 11: what retention's deletes left in the full-text index
    // (`sqlite/retention.rs`, `settle_fts_debt`): records removed since the
    // index was last merged.
    "CREATE TABLE fts_debt (removed INTEGER NOT NULL);
     INSERT INTO fts_debt (removed) VALUES (0);",
    // 12: a smaller record (issue 29, `sqlite/compact.rs`): the records
    // move to `record_rows` (names as ids in `names`, the session id and
    // cwd kept once on the session row, the key as 16 bytes, long bodies
    // deflated, the identifier words not stored) and `records` becomes a
    // view that gives back what they were. [`Store::migrate`] copies the
    // records in batches (`compact::compact_records`), moves their
    // meanings to a table that references `record_rows`, drops the old
    // tables and makes the view.
    "CREATE TABLE names (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
     ALTER TABLE sessions ADD COLUMN cwd TEXT;
     UPDATE sessions SET cwd = (SELECT r.cwd FROM records r WHERE r.session_row = sessions.id
                                ORDER BY r.occurred_ms, r.id LIMIT 1);
     CREATE TABLE record_rows (
        id INTEGER PRIMARY KEY,
        key BLOB NOT NULL UNIQUE,
        occurred_ms INTEGER NOT NULL,
        project_id INTEGER NOT NULL REFERENCES projects(id),
        session_row INTEGER REFERENCES sessions(id),
        agent INTEGER NOT NULL,
        event INTEGER NOT NULL,
        native_event INTEGER NOT NULL,
        session_id TEXT,
        cwd,
        subagent INTEGER NOT NULL DEFAULT 0,
        tool_family INTEGER,
        tool_name INTEGER,
        tool_call_id TEXT,
        outcome INTEGER,
        disposition INTEGER NOT NULL,
        title TEXT,
        body,
        files TEXT,
        token_name TEXT,
        exit_code INTEGER,
        command TEXT,
        plan TEXT
     );
     CREATE TABLE record_meaning_rows (
        id INTEGER PRIMARY KEY REFERENCES record_rows(id) ON DELETE CASCADE,
        project_id INTEGER NOT NULL,
        occurred_ms INTEGER NOT NULL,
        vector BLOB NOT NULL
     );",
    // 13: the view reads each name with `memhook_name(id)` instead of a
    // subquery into `names` (`columns::records_view`): every statement that
    // reads `records` copies the view into itself when it is prepared, and
    // seven subqueries made that half the CPU of a session start's
    // briefing (docs/benchmarks.md, sixth pass). [`Store::migrate`] makes
    // the new view after this SQL. And a record whose only text is
    // memhook's own wording (no body, no files, not a tool result:
    // `meaning::record_texts`) keeps no meaning any more.
    "DROP VIEW records;
     DELETE FROM record_meaning WHERE id IN (
        SELECT r.id FROM record_rows r
        WHERE (r.body IS NULL OR (typeof(r.body) = 'text' AND trim(r.body, char(32, 9, 10, 13)) = ''))
          AND r.files IS NULL
          AND r.event NOT IN (SELECT id FROM names
                              WHERE name IN ('post-tool-use', 'post-tool-use-failure')));",
];

/// The migration (its version) that makes the view with `memhook_name`.
const NAMED_VIEW_VERSION: u32 = 13;

/// The migration (its version) that made `record_rows` and the view
/// `records`: [`Store::migrate`] copies the records after its SQL.
const COMPACT_VERSION: u32 = 12;

/// Bytes of the database file a connection maps into memory
/// (`PRAGMA mmap_size`).
pub const STORE_MMAP_SIZE: u64 = 256 << 20;

/// SQLite's page cache of a store connection, in KiB (`PRAGMA
/// cache_size`: SQLite's default).
pub const STORE_CACHE_KIB: u32 = 2000;

/// The migration (its version) that added `scrubbed`: a store created
/// with it (from version 0) is scrubbed from the start.
const SCRUBBED_VERSION: u32 = 10;

/// Best match first, recent matches lifted: the `bm25` relevance (negative,
/// lower is better) weighed by up to 1.5 for a record of today, 1.25 for
/// one of 30 days ago, barely for one of a year ago. A clearly better match
/// still beats a newer one; between near equals the newer one comes first.
pub(crate) const SEARCH_RANK: &str = "bm25(records_fts) * (1.0 + 0.5 / (1.0 + \
     max(0, unixepoch() * 1000 - r.occurred_ms) / 2592000000.0))";

/// The column that says why a search found a record
/// ([`StoredRecord::matched`]), after [`RECORD_COLUMNS`].
pub(crate) fn matched_column() -> String {
    format!("snippet(records_fts, -1, '{MATCH_MARK}', '{MATCH_MARK}', '…', {MATCH_WORDS})")
}

/// The migration (its version) whose index [`Store::migrate`] fills in.
const WORDS_VERSION: u32 = 5;

/// The identifier words of a record's title, body and files (`None`: none).
fn record_words(title: Option<&str>, body: Option<&str>, files: &[String]) -> Option<String> {
    let texts = [title, body]
        .into_iter()
        .flatten()
        .chain(files.iter().map(String::as_str));
    let words = crate::words::identifier_words(texts);
    (!words.is_empty()).then_some(words)
}

/// Fill in the words of every stored record and index it anew, with the
/// values `BatchWriter::insert` gives the index (files joined by spaces, as
/// `forget` gives them back), in the migration [`WORDS_VERSION`].
fn fill_words(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    // In batches read before they are written: no update under a live scan.
    let mut rows = tx.prepare(
        "SELECT id, title, body, files FROM records WHERE id > ?1 ORDER BY id LIMIT 1000",
    )?;
    let mut set = tx.prepare("UPDATE records SET words = ?2 WHERE id = ?1")?;
    let mut index = tx.prepare(
        "INSERT INTO records_fts (rowid, title, body, files, words) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?;
    type Row = (i64, Option<String>, Option<String>, Option<String>);
    let mut after = 0i64;
    loop {
        let batch: Vec<Row> = rows
            .query_map([after], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let Some(last) = batch.last() else {
            return Ok(());
        };
        after = last.0;
        for (id, title, body, files) in batch {
            let files: Vec<String> = files
                .and_then(|f| serde_json::from_str(&f).ok())
                .unwrap_or_default();
            let words = record_words(title.as_deref(), body.as_deref(), &files);
            if words.is_some() {
                set.execute(params![id, words])?;
            }
            index.execute(params![id, title, body, files.join(" "), words])?;
        }
    }
}

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Page size of a new store, in bytes. Records are appended in id order,
/// and a page is closed when the next record does not fit: with records
/// of about 600 bytes (up to a few KiB) a 4 KiB page (SQLite's default)
/// left 15 % of the records table empty, a 16 KiB page leaves 4 % (issue
/// 29: 1,054 → 975 bytes per record at 100,000; docs/benchmarks.md). A
/// store created before keeps its page size (WAL mode cannot change it).
pub const STORE_PAGE_SIZE: u32 = 16 * 1024;

impl StoreError {
    /// A SQLite error of the database at `path`.
    pub fn sqlite(path: &Path, source: rusqlite::Error) -> StoreError {
        StoreError::Engine {
            db: path.display().to_string(),
            source: Box::new(source),
        }
    }
}

/// `session_row IN (…)` for `rows` (integers from our own queries: safe to
/// inline); `None` for no rows.
fn within(rows: &[i64]) -> Option<String> {
    let ids: Vec<String> = rows.iter().map(i64::to_string).collect();
    (!ids.is_empty()).then(|| format!("session_row IN ({})", ids.join(",")))
}

/// A tool result that failed, as an SQL condition. It is never NULL: a result
/// without an outcome (`outcome IS NULL`) counts as not failed (`IS`, not `=`,
/// so that `NULL OR false` cannot leak into an aggregate).
pub(super) const FAILED: &str = "(event = 'post-tool-use-failure' OR outcome IS 'error')";

/// The embedded store.
pub struct Store {
    conn: Connection,
    path: PathBuf,
    data_dir: PathBuf,
    /// Waits for other connections' locks end here (`None`: [`BUSY_TIMEOUT`]).
    deadline: Option<Instant>,
    /// The names this connection has read (`compact::Names`).
    names: compact::Names,
    /// The data dir of the WAL hook that writes a new generation after each
    /// commit (`generation.rs`); declared after `conn`, so dropped after it.
    _generation: generation::Generation,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

const RECORD_COLUMNS: &str = "r.key, r.occurred_ms, r.agent, r.event, r.native_event, \
     p.workspace, p.project, r.session_id, r.cwd, r.subagent, r.tool_family, r.tool_name, \
     r.tool_call_id, r.outcome, r.disposition, r.title, r.body, r.files, r.token_name";

thread_local! {
    /// The deadline [`busy_until_deadline`] waits for, per thread (a
    /// connection opened with [`Store::open_until`] is used on its thread).
    static BUSY_DEADLINE: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// How long [`busy_until_deadline`] sleeps between two tries of a lock.
const BUSY_POLL: Duration = Duration::from_millis(5);

/// SQLite busy handler of a connection with a deadline: try again until the
/// thread's [`BUSY_DEADLINE`], never past it (SQLite then reports busy).
fn busy_until_deadline(_tries: i32) -> bool {
    let Some(deadline) = BUSY_DEADLINE.get() else {
        return false;
    };
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return false;
    }
    std::thread::sleep(left.min(BUSY_POLL));
    true
}

/// How `conn` waits for another connection's lock: [`BUSY_TIMEOUT`] per
/// statement, or until `deadline`.
fn set_wait(conn: &Connection, deadline: Option<Instant>) -> rusqlite::Result<()> {
    match deadline {
        None => conn.busy_timeout(BUSY_TIMEOUT),
        Some(d) => {
            BUSY_DEADLINE.set(Some(d));
            conn.busy_handler(Some(busy_until_deadline))
        }
    }
}

impl Store {
    /// Open (creating and migrating as needed) `<data_dir>/store.sqlite3`.
    /// A lock held by another connection is waited for up to [`BUSY_TIMEOUT`]
    /// per statement.
    pub fn open(data_dir: &Path) -> Result<Store, StoreError> {
        Store::open_until(data_dir, None)
    }

    /// [`Store::open`], but with `Some(deadline)` every wait for another
    /// connection's lock — while opening and in every later statement on
    /// this thread — ends at `deadline` (the statement then fails as busy).
    /// For work under a budget (session start).
    pub fn open_until(data_dir: &Path, deadline: Option<Instant>) -> Result<Store, StoreError> {
        data_dir::ensure_private_dir(data_dir)?;
        let path = data_dir.join(STORE_FILE);
        check_store_file(&path)?;
        let sql = |source| StoreError::sqlite(&path, source);
        // Create the file 0600 ourselves so SQLite never creates it with the umask.
        if !path.exists() {
            create_private(&path).map_err(|e| StoreError::Unsafe {
                path: path.clone(),
                problem: format!("cannot create: {e}"),
            })?;
        }
        let conn = Connection::open(&path).map_err(sql)?;
        set_wait(&conn, deadline).map_err(sql)?;
        // The view `records` calls them (`compact.rs`).
        let names = register_functions(&conn).map_err(sql)?;
        // After every commit: a new generation, so no briefing kept from an
        // older snapshot is used (memhook_core::briefing_cache).
        let generation = generation::Generation::register(&conn, data_dir.to_path_buf());
        // Short-lived readers (session start, status) must not pay for a
        // checkpoint and WAL unlink on close; the drainer's sink empties the
        // WAL when it is done (`checkpoint`); a long-lived writer (serve)
        // relies on SQLite's automatic checkpoints.
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
            true,
        )
        .map_err(sql)?;
        // WAL: readers (status, search, serve) never block the drainer.
        // synchronous=FULL: a committed batch survives power loss, because the
        // drainer deletes the spool files right after the commit.
        // mmap: page reads are memory reads, not one pread(2) each (a fresh
        // connection per hook process starts with an empty page cache).
        // secure_delete: every freed cell and page is zeroed by every writer
        // (FTS merges, retention, forget), and a page taken from the free
        // list is zeroed before use, so that forget can remove text without
        // rebuilding the file (`forget.rs`).
        // page_size: only a new (empty) database takes it, and only before
        // WAL mode is set; an existing one keeps its own.
        conn.execute_batch(&format!(
            "PRAGMA page_size = {STORE_PAGE_SIZE}; PRAGMA journal_mode = WAL; \
             PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON; \
             PRAGMA mmap_size = {STORE_MMAP_SIZE}; PRAGMA secure_delete = ON;"
        ))
        .map_err(sql)?;
        let mut store = Store {
            conn,
            path: path.clone(),
            data_dir: data_dir.to_path_buf(),
            deadline,
            names,
            _generation: generation,
        };
        store.migrate()?;
        Ok(store)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The data dir the store lives in.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::sqlite(&self.path, source)
    }

    /// Whether the name column `col` of `record_rows r` is one of `names`,
    /// as SQL (`columns::name_in`), with the names' ids read now.
    pub(crate) fn name_in(&self, col: &str, names: &[&str]) -> Result<String, StoreError> {
        let ids = self.names.ids(&self.conn, names).map_err(|e| self.err(e))?;
        Ok(columns::name_in(col, &ids))
    }

    /// The name of the id `id` of a name column read from `record_rows`.
    pub(crate) fn name_of(&self, id: Option<i64>) -> Result<Option<String>, StoreError> {
        self.names.name(&self.conn, id).map_err(|e| self.err(e))
    }

    /// A failed tool result over `record_rows r` (what [`FAILED`] says
    /// over the view).
    pub(crate) fn failed_row(&self) -> Result<String, StoreError> {
        Ok(format!(
            "({} OR {})",
            self.name_in("event", &["post-tool-use-failure"])?,
            self.name_in("outcome", &["error"])?
        ))
    }

    /// The schema version of the open database.
    pub fn schema_version(&self) -> Result<u32, StoreError> {
        self.conn
            .query_row("PRAGMA user_version", [], |r| r.get::<_, u32>(0))
            .map_err(|e| self.err(e))
    }

    fn migrate(&mut self) -> Result<(), StoreError> {
        let have = self.schema_version()?;
        if have > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                path: self.path.clone(),
                version: have,
                supported: SCHEMA_VERSION,
            });
        }
        if have == SCHEMA_VERSION {
            return Ok(());
        }
        let path = self.path.clone();
        let sql = |source| StoreError::sqlite(&path, source);
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        // Another process may have migrated while we waited for the lock.
        let have: u32 = tx
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(sql)?;
        for (i, step) in MIGRATIONS.iter().enumerate().skip(have as usize) {
            tx.execute_batch(step).map_err(sql)?;
            if i + 1 == SCRUBBED_VERSION as usize && have == 0 {
                // A new store: written with `secure_delete` from its first page.
                tx.execute("INSERT INTO scrubbed (at_ms) VALUES (0)", [])
                    .map_err(sql)?;
            }
            if i + 1 == WORDS_VERSION as usize {
                fill_words(&tx).map_err(sql)?;
            }
            if i + 1 == COMPACT_VERSION as usize {
                compact::compact_records(&tx).map_err(sql)?;
            }
            if i + 1 == NAMED_VIEW_VERSION as usize {
                tx.execute_batch(&columns::records_view()).map_err(sql)?;
            }
            tx.pragma_update(None, "user_version", (i + 1) as u32)
                .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        if have > 0 && have < COMPACT_VERSION {
            // The copy wrote the whole records table into the WAL (about
            // the size of the table): leave it to no later process to read
            // again.
            self.checkpoint();
        }
        Ok(())
    }

    /// Store one record. Returns `true` when it was new, `false` for a replay.
    pub fn insert(&mut self, record: &Record) -> Result<bool, StoreError> {
        Ok(self.insert_all(std::iter::once(record))? == 1)
    }

    /// Store many records in one transaction; returns how many were new.
    pub fn insert_all<'a>(
        &mut self,
        records: impl IntoIterator<Item = &'a Record>,
    ) -> Result<usize, StoreError> {
        Ok(self
            .insert_each(records)?
            .into_iter()
            .filter(|n| *n)
            .count())
    }

    /// Store many records in one transaction; for each, whether it was new.
    /// The transaction takes the write lock when it begins (waiting up to
    /// [`BUSY_TIMEOUT`] for another writer), so it never fails halfway
    /// because another connection wrote after it started reading.
    pub fn insert_each<'a>(
        &mut self,
        records: impl IntoIterator<Item = &'a Record>,
    ) -> Result<Vec<bool>, StoreError> {
        self.insert_each_from(records.into_iter().map(|r| (r, None)))
    }

    /// [`Store::insert_each`] for records that each name the token that
    /// delivered them (`records.token_name`; `None` for none). A replay
    /// keeps the first delivery's token name, like everything else.
    pub fn insert_each_from<'a>(
        &mut self,
        records: impl IntoIterator<Item = (&'a Record, Option<&'a str>)>,
    ) -> Result<Vec<bool>, StoreError> {
        let path = self.path.clone();
        let sql = |source| StoreError::sqlite(&path, source);
        // IMMEDIATE: take the write lock first, under the busy timeout. A
        // deferred transaction reads first and then fails at once with
        // "database is locked" when another writer got in between (SQLite
        // cannot wait there without risking a deadlock).
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(sql)?;
        let mut fates = Vec::new();
        let mut w = BatchWriter::new(&tx);
        for (r, token_name) in records {
            fates.push(w.insert(r, token_name).map_err(sql)?);
        }
        w.finish().map_err(sql)?;
        meaning::fill(&tx, crate::meaning::FILL_BATCH).map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(fates)
    }

    /// Copy what the WAL holds into the database file and empty the WAL,
    /// without waiting: when a reader is in the way the copy is partial and
    /// the WAL stays (the next writer tries again). Connections close without
    /// checkpointing, so writers that come and go (the drainer's store sink,
    /// when it is done) call this. It matters: the first process that opens
    /// the store re-reads the whole WAL to rebuild its index, so a WAL left
    /// long makes every hook slow.
    pub fn checkpoint(&self) {
        let _ = self.conn.busy_timeout(Duration::ZERO);
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        let _ = set_wait(&self.conn, self.deadline);
    }

    /// Run `f` inside one read transaction: one consistent snapshot and one
    /// set of WAL read locks for all of its queries (instead of one per query).
    pub fn read<T>(&self, f: impl FnOnce(&Store) -> T) -> T {
        let began = self.conn.execute_batch("BEGIN").is_ok();
        let out = f(self);
        if began {
            let _ = self.conn.execute_batch("COMMIT");
        }
        out
    }

    /// Number of stored records.
    pub fn count(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT count(*) FROM records", [], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// For each agent with a stored session: when its newest session last
    /// saw an event (ms since the epoch). `memhook doctor` shows it.
    pub fn last_seen_by_agent(&self) -> Result<Vec<(String, u64)>, StoreError> {
        let mut st = self
            .conn
            .prepare("SELECT agent, max(last_ms) FROM sessions GROUP BY agent ORDER BY agent")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Newest records first, of one `(workspace, project)` or of every scope.
    pub fn recent(
        &self,
        scope: Option<(&str, &str)>,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let limit = limit.min(MAX_QUERY_LIMIT) as i64;
        let base = format!(
            "SELECT {RECORD_COLUMNS} FROM records r JOIN projects p ON p.id = r.project_id"
        );
        let res = match scope {
            Some((w, p)) => {
                let mut st = self
                    .conn
                    .prepare_cached(&format!(
                        "{base} WHERE p.workspace = ?1 AND p.project = ?2 \
                         ORDER BY r.occurred_ms DESC, r.id DESC LIMIT {limit}"
                    ))
                    .map_err(|e| self.err(e))?;
                let rows = st.query_map(params![w, p], row_to_record);
                collect(rows)
            }
            None => {
                let mut st = self
                    .conn
                    .prepare_cached(&format!(
                        "{base} ORDER BY r.occurred_ms DESC, r.id DESC LIMIT {limit}"
                    ))
                    .map_err(|e| self.err(e))?;
                let rows = st.query_map([], row_to_record);
                collect(rows)
            }
        };
        res.map_err(|e| self.err(e))
    }

    /// Full-text search (best match first, then newest; identical texts
    /// are one row, `crate::collapse`). `query` is user text, never FTS
    /// syntax: it is turned into a safe query by [`fts_query`]. Text with
    /// no searchable word returns nothing. [`Store::search_fused`] adds
    /// the records closest in meaning.
    pub fn search(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let Some(q) = fts_query(query) else {
            return Ok(Vec::new());
        };
        let n = crate::collapse::candidates(limit);
        let limit = limit.min(MAX_QUERY_LIMIT);
        match scope {
            Some((w, p)) => self.ranked_collapsed(
                &q,
                "p.workspace = ?2 AND p.project = ?3",
                &[&w, &p],
                n,
                Some((w, p)),
                limit,
            ),
            None => self.ranked_collapsed(&q, "1", &[], n, None, limit),
        }
    }

    /// [`Store::search`], then, when the words found fewer than `limit`
    /// rows, the records closest in meaning that they did not find
    /// (`crate::meaning::fuse`: marked `(by meaning)`). What `memhook
    /// search` and `memory_search` ask.
    pub fn search_fused(
        &self,
        scope: Option<(&str, &str)>,
        query: &str,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let limit = limit.min(MAX_QUERY_LIMIT);
        let found = self.search(scope, query, limit)?;
        if found.len() == limit {
            return Ok(found);
        }
        let n = crate::collapse::candidates(limit);
        let near = match scope {
            Some((w, p)) => {
                self.closest(query, "p.workspace = ?1 AND p.project = ?2", &[&w, &p], n)
            }
            None => self.closest(query, "1", &[], n),
        }?;
        Ok(crate::meaning::fuse(found, near, limit))
    }

    /// The distinct stored session ids that start with `prefix` (of any
    /// project), at most `max`, sorted: how `memhook forget --session`
    /// turns the short id `memhook recent` prints into the full one.
    pub fn session_ids_with_prefix(
        &self,
        prefix: &str,
        max: usize,
    ) -> Result<Vec<String>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT DISTINCT session_id FROM sessions \
                 WHERE substr(session_id, 1, length(?1)) = ?1 ORDER BY session_id LIMIT {}",
                max.min(MAX_QUERY_LIMIT)
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map(params![prefix], |r| r.get::<_, String>(0));
        collect(rows).map_err(|e| self.err(e))
    }

    /// Sessions of a scope that did work, newest activity first, leaving out
    /// `exclude_session` (the session that is starting).
    pub fn sessions(
        &self,
        scope: (&str, &str),
        exclude_session: Option<&str>,
        limit: usize,
    ) -> Result<Vec<SessionSummary>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT s.id, s.agent, s.session_id, s.first_ms, s.last_ms, s.events, s.work
                 FROM sessions s JOIN projects p ON p.id = s.project_id
                 WHERE p.workspace = ?1 AND p.project = ?2 AND s.work > 0
                   AND s.session_id != ?3
                 ORDER BY s.last_ms DESC, s.id DESC LIMIT {}",
                limit.min(MAX_QUERY_LIMIT)
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map(
            params![scope.0, scope.1, exclude_session.unwrap_or("")],
            |r| {
                Ok(SessionSummary {
                    row: r.get(0)?,
                    agent: r.get(1)?,
                    session_id: r.get(2)?,
                    first_ms: r.get::<_, i64>(3)? as u64,
                    last_ms: r.get::<_, i64>(4)? as u64,
                    events: r.get::<_, i64>(5)? as u64,
                    work: r.get::<_, i64>(6)? as u64,
                })
            },
        );
        collect(rows).map_err(|e| self.err(e))
    }

    /// What the sessions `rows` (from [`Store::sessions`]) did; each list is
    /// cut at `max_list` entries.
    pub fn activity(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError> {
        let mut a = self.outcomes(rows, max_list)?;
        let Some(within) = within(rows) else {
            return Ok(a);
        };
        let lim = max_list.min(MAX_QUERY_LIMIT) as i64;
        let e = |e| self.err(e);
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT coalesce({}, {}, 'unknown'), count(*) FROM record_rows r
                 WHERE r.{within} AND {}
                 GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT {lim}",
                columns::name("tool_name"),
                columns::name("tool_family"),
                self.name_in("event", &TOOL_RESULTS)?,
            ))
            .map_err(e)?;
        a.tools = collect(st.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))))
            .map_err(e)?;
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT j.value, count(*) FROM record_rows r, json_each(r.files) j
                 WHERE r.{within} AND r.files IS NOT NULL
                 GROUP BY 1 ORDER BY 2 DESC, 1"
            ))
            .map_err(e)?;
        let files: Vec<(String, u64)> =
            collect(st.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64))))
                .map_err(e)?;
        a.file_count = files.len() as u64;
        a.files = files.into_iter().take(max_list).collect();
        Ok(a)
    }

    /// Only the tool outcomes of [`Store::activity`] (`families` and
    /// `failures`; the other fields stay empty): what the handoff needs,
    /// without the tool and file aggregates it does not show.
    pub fn outcomes(&self, rows: &[i64], max_list: usize) -> Result<Activity, StoreError> {
        let Some(within) = within(rows) else {
            return Ok(Activity::default());
        };
        let lim = max_list.min(MAX_QUERY_LIMIT) as i64;
        let e = |e| self.err(e);
        let mut a = Activity::default();
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT coalesce({}, 'unknown'), count(*), count(*) FILTER (WHERE {}) FROM record_rows r
                 WHERE r.{within} AND {}
                 GROUP BY 1 ORDER BY 2 DESC, 1",
                columns::name("tool_family"),
                self.failed_row()?,
                self.name_in("event", &TOOL_RESULTS)?,
            ))
            .map_err(e)?;
        a.families = collect(st.query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, i64>(1)? as u64,
                r.get::<_, i64>(2)? as u64,
            ))
        }))
        .map_err(e)?;
        let b = format!("ltrim({}, char(10, 13, 32, 9))", columns::BODY);
        let mut st = self
            .conn
            .prepare(&format!(
                "SELECT coalesce({}, {}, 'tool'),
                        nullif(trim(substr({b}, 1, instr({b} || char(10), char(10)) - 1)), ''),
                        count(*)
                 FROM record_rows r WHERE r.{within} AND {}
                 GROUP BY 1, 2 ORDER BY 3 DESC, max(r.occurred_ms) DESC LIMIT {lim}",
                columns::name("tool_name"),
                columns::name("tool_family"),
                self.failed_row()?,
            ))
            .map_err(e)?;
        a.failures = collect(st.query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64))
        }))
        .map_err(e)?;
        Ok(a)
    }

    /// One line's worth about a session: (prompts, tool results, first
    /// prompt), in one query.
    pub fn session_outline(&self, row: i64) -> Result<(u64, u64, Option<String>), StoreError> {
        self.conn
            .prepare_cached(&format!(
                "SELECT count(*) FILTER (WHERE {prompt}),
                        count(*) FILTER (WHERE {}),
                        (SELECT coalesce(r.title, substr({BODY}, 1, 400)) FROM record_rows r
                          WHERE r.session_row = ?1 AND {prompt}
                          ORDER BY r.occurred_ms, r.id LIMIT 1)
                 FROM record_rows r WHERE r.session_row = ?1",
                self.name_in("event", &TOOL_RESULTS)?,
                prompt = self.name_in("event", &["user-prompt"])?,
                BODY = columns::BODY,
            ))
            .and_then(|mut st| {
                st.query_row([row], |r| {
                    Ok((
                        r.get::<_, i64>(0)? as u64,
                        r.get::<_, i64>(1)? as u64,
                        r.get(2)?,
                    ))
                })
            })
            .map_err(|e| self.err(e))
    }

    /// Records of one session (by its row id), oldest first, at most `limit`.
    pub fn session_records(
        &self,
        session_row: i64,
        limit: usize,
    ) -> Result<Vec<StoredRecord>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached(&format!(
                "SELECT {RECORD_COLUMNS} FROM records r JOIN projects p ON p.id = r.project_id
                 WHERE r.session_row = ?1 ORDER BY r.occurred_ms, r.id LIMIT {}",
                limit.min(10 * MAX_QUERY_LIMIT)
            ))
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([session_row], row_to_record);
        collect(rows).map_err(|e| self.err(e))
    }
}

/// Reject a store path that is a symlink, not a regular file, or not ours.
fn check_store_file(path: &Path) -> Result<(), StoreError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(_) => return Ok(()),
    };
    let unsafe_ = |problem: &str| StoreError::Unsafe {
        path: path.to_path_buf(),
        problem: problem.to_string(),
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_("is a symlink"));
    }
    if !meta.is_file() {
        return Err(unsafe_("is not a regular file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != data_dir::current_uid() {
            return Err(unsafe_("is owned by another user"));
        }
    }
    Ok(())
}

fn create_private(path: &Path) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    opts.open(path).map(drop)
}

fn collect<T>(
    rows: rusqlite::Result<
        rusqlite::MappedRows<'_, impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>>,
    >,
) -> rusqlite::Result<Vec<T>> {
    rows?.collect()
}

fn row_to_record(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRecord> {
    let files: Option<String> = r.get(17)?;
    Ok(StoredRecord {
        key: r.get(0)?,
        occurred_ms: r.get::<_, i64>(1)? as u64,
        agent: r.get(2)?,
        event: r.get(3)?,
        native_event: r.get(4)?,
        workspace: r.get(5)?,
        project: r.get(6)?,
        session_id: r.get(7)?,
        cwd: r.get(8)?,
        subagent: r.get::<_, i64>(9)? != 0,
        tool_family: r.get(10)?,
        tool_name: r.get(11)?,
        tool_call_id: r.get(12)?,
        outcome: r.get(13)?,
        disposition: r.get(14)?,
        title: r.get(15)?,
        body: r.get(16)?,
        files: files
            .and_then(|f| serde_json::from_str(&f).ok())
            .unwrap_or_default(),
        token_name: r.get(18)?,
        // Only searches select it (`MATCHED`).
        matched: r.get::<_, Option<String>>(19).unwrap_or(None),
        identical: 0,
    })
}

/// Writes records inside one transaction. Project and session rows are
/// looked up (or created) once per transaction and cached; their time span
/// and counters are folded in memory and written by [`BatchWriter::finish`],
/// one `UPDATE` per project and session touched. Per new record that leaves
/// two statements: the row (a replay conflicts on `key` and changes nothing)
/// and its full-text entry.
struct BatchWriter<'t> {
    tx: &'t rusqlite::Transaction<'t>,
    /// `(workspace, project)` and its fold. A batch touches a handful, so a
    /// list searched in place beats hashing owned keys.
    projects: Vec<((String, String), Fold)>,
    /// `(project row, agent, session id)`, its fold and its `cwd`.
    sessions: Vec<(SessionKey, Fold, Option<String>)>,
    /// The ids of the names written (`compact::name_id`).
    names: Vec<(String, i64)>,
}

/// A session row's `(project row, agent, session id)`.
type SessionKey = (i64, String, String);

/// The id of the row `select` finds by `key`, or else of the row `insert`
/// creates from `key` followed by `ms` (its first and last time).
fn find_or_insert(
    tx: &rusqlite::Transaction<'_>,
    select: &str,
    insert: &str,
    key: &[&dyn rusqlite::ToSql],
    ms: i64,
) -> rusqlite::Result<i64> {
    if let Some(id) = tx
        .prepare_cached(select)?
        .query_row(key, |r| r.get(0))
        .optional()?
    {
        return Ok(id);
    }
    let mut args = key.to_vec();
    args.push(&ms);
    tx.prepare_cached(insert)?.execute(&*args)?;
    Ok(tx.last_insert_rowid())
}

/// What new records add to a project or session row.
struct Fold {
    id: i64,
    first_ms: i64,
    last_ms: i64,
    events: i64,
    work: i64,
}

impl Fold {
    fn new(id: i64) -> Fold {
        Fold {
            id,
            first_ms: i64::MAX,
            last_ms: i64::MIN,
            events: 0,
            work: 0,
        }
    }

    fn add(&mut self, ms: i64, work: i64) {
        self.first_ms = self.first_ms.min(ms);
        self.last_ms = self.last_ms.max(ms);
        self.events += 1;
        self.work += work;
    }
}

impl<'t> BatchWriter<'t> {
    fn new(tx: &'t rusqlite::Transaction<'t>) -> Self {
        BatchWriter {
            tx,
            projects: Vec::new(),
            sessions: Vec::new(),
            names: Vec::new(),
        }
    }

    /// Index in `projects` of the scope's row, looked up or created.
    fn project(&mut self, workspace: &str, project: &str, ms: i64) -> rusqlite::Result<usize> {
        if let Some(i) = self
            .projects
            .iter()
            .position(|((w, p), _)| w == workspace && p == project)
        {
            return Ok(i);
        }
        let id = find_or_insert(
            self.tx,
            "SELECT id FROM projects WHERE workspace = ?1 AND project = ?2",
            "INSERT INTO projects (workspace, project, first_ms, last_ms) VALUES (?1, ?2, ?3, ?3)",
            params![workspace, project],
            ms,
        )?;
        self.projects
            .push(((workspace.to_string(), project.to_string()), Fold::new(id)));
        Ok(self.projects.len() - 1)
    }

    /// Index in `sessions` of the session's row, looked up or created (a
    /// new one keeps `cwd` as its own, never changed after).
    fn session(
        &mut self,
        project_id: i64,
        agent: &str,
        session_id: &str,
        cwd: Option<&str>,
        ms: i64,
    ) -> rusqlite::Result<usize> {
        if let Some(i) = self
            .sessions
            .iter()
            .position(|((p, a, s), _, _)| *p == project_id && a == agent && s == session_id)
        {
            return Ok(i);
        }
        let found: Option<(i64, Option<String>)> = self
            .tx
            .prepare_cached(
                "SELECT id, cwd FROM sessions
                 WHERE project_id = ?1 AND agent = ?2 AND session_id = ?3",
            )?
            .query_row(params![project_id, agent, session_id], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?;
        let (id, cwd) = match found {
            Some(row) => row,
            None => {
                self.tx
                    .prepare_cached(
                        "INSERT INTO sessions (project_id, agent, session_id, first_ms, last_ms, cwd)
                         VALUES (?1, ?2, ?3, ?4, ?4, ?5)",
                    )?
                    .execute(params![project_id, agent, session_id, ms, cwd])?;
                (self.tx.last_insert_rowid(), cwd.map(str::to_string))
            }
        };
        self.sessions.push((
            (project_id, agent.to_string(), session_id.to_string()),
            Fold::new(id),
            cwd,
        ));
        Ok(self.sessions.len() - 1)
    }

    /// The id of `name` in `names` (`compact::name_id`).
    fn name(&mut self, name: &str) -> rusqlite::Result<i64> {
        compact::name_id(self.tx, &mut self.names, name)
    }

    /// Insert one record. `Ok(false)` for a replay (its key is stored already).
    fn insert(&mut self, record: &Record, token_name: Option<&str>) -> rusqlite::Result<bool> {
        let ms = record.occurred_ms as i64;
        let project = self.project(&record.scope.workspace, &record.scope.project, ms)?;
        let project_id = self.projects[project].1.id;
        let session = match record.session_id.as_deref() {
            Some(sid) if !sid.is_empty() => {
                Some(self.session(project_id, &record.agent, sid, record.cwd.as_deref(), ms)?)
            }
            _ => None,
        };
        let tool = record.tool.as_ref();
        let files = if record.files.is_empty() {
            None
        } else {
            serde_json::to_string(&record.files).ok()
        };
        let words = record_words(
            record.title.as_deref(),
            record.body.as_deref(),
            &record.files,
        );
        // What `record_rows` keeps of them (`compact.rs`).
        let agent = self.name(&record.agent)?;
        let event = self.name(&record.event)?;
        let native_event = self.name(&record.native_event)?;
        let tool_family = tool.map(|t| self.name(t.family.as_str())).transpose()?;
        let tool_name = tool
            .and_then(|t| t.name.as_deref())
            .map(|n| self.name(n))
            .transpose()?;
        let outcome = tool
            .and_then(|t| t.outcome.as_deref())
            .map(|n| self.name(n))
            .transpose()?;
        let disposition = self.name(&record.disposition)?;
        use rusqlite::types::Value;
        let (session_id, cwd) = match session {
            None => (
                record.session_id.clone().map(Value::Text),
                record.cwd.clone().map(Value::Text),
            ),
            Some(i) => (
                None,
                match (&record.cwd, &self.sessions[i].2) {
                    (a, b) if a == b => None,
                    (Some(c), _) => Some(Value::Text(c.clone())),
                    (None, _) => Some(Value::Blob(Vec::new())),
                },
            ),
        };
        let inserted = self
            .tx
            .prepare_cached(
                "INSERT INTO record_rows (key, occurred_ms, project_id, session_row, agent, event,
                    native_event, session_id, cwd, subagent, tool_family, tool_name, tool_call_id,
                    outcome, disposition, title, body, files, token_name, exit_code, command,
                    plan)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                    ?17, ?18, ?19, ?20, ?21, ?22)
                 ON CONFLICT (key) DO NOTHING",
            )?
            .execute(params![
                compact::key_value(&record.key),
                ms,
                project_id,
                session.map(|i| self.sessions[i].1.id),
                agent,
                event,
                native_event,
                session_id,
                cwd,
                record.subagent,
                tool_family,
                tool_name,
                tool.and_then(|t| t.call_id.as_deref()),
                outcome,
                disposition,
                record.title,
                record.body.as_deref().map(compact::pack_body),
                files,
                token_name,
                tool.and_then(|t| t.exit_code),
                record.command,
                record
                    .plan
                    .as_ref()
                    .and_then(|p| serde_json::to_string(p).ok()),
            ])?;
        if inserted == 0 {
            return Ok(false);
        }
        let id = self.tx.last_insert_rowid();
        self.tx
            .prepare_cached(
                "INSERT INTO records_fts (rowid, title, body, files, words)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?
            .execute(params![
                id,
                record.title,
                record.body,
                record.files.join(" "),
                words
            ])?;
        let texts = crate::meaning::record_texts(
            &record.event,
            record.title.as_deref(),
            record.body.as_deref(),
            &record.files,
        );
        meaning::keep(self.tx, id, project_id, ms, &texts)?;
        let work = i64::from(WORK_EVENTS.contains(&record.event.as_str()));
        self.projects[project].1.add(ms, work);
        if let Some(i) = session {
            self.sessions[i].1.add(ms, work);
        }
        Ok(true)
    }

    /// Write the folded spans and counters of every project and session touched.
    fn finish(self) -> rusqlite::Result<()> {
        for (_, f) in self.projects.iter().filter(|(_, f)| f.events > 0) {
            self.tx
                .prepare_cached(
                    "UPDATE projects SET first_ms = min(first_ms, ?2), last_ms = max(last_ms, ?3),
                        records = records + ?4
                     WHERE id = ?1",
                )?
                .execute(params![f.id, f.first_ms, f.last_ms, f.events])?;
        }
        for (_, f, _) in self.sessions.iter().filter(|(_, f, _)| f.events > 0) {
            self.tx
                .prepare_cached(
                    "UPDATE sessions SET first_ms = min(first_ms, ?2), last_ms = max(last_ms, ?3),
                        events = events + ?4, work = work + ?5
                     WHERE id = ?1",
                )?
                .execute(params![f.id, f.first_ms, f.last_ms, f.events, f.work])?;
        }
        Ok(())
    }
}

/// Turn user text into a safe FTS5 query: every run of letters, digits, `_`
/// and inner `-` becomes one quoted term, terms are ANDed. A term is a
/// phrase of its words: `parse-date` and `parse_date` search for `parse`
/// followed by `date` (and find `parseDate`, whose words the index also
/// holds, `crate::words`). Quotes, operators and column filters in the
/// input are plain text, never syntax. `None` when nothing is searchable.
pub fn fts_query(text: &str) -> Option<String> {
    let terms: Vec<String> = query_terms(text)
        .into_iter()
        .map(|w| format!("\"{w}\""))
        .collect();
    if terms.is_empty() {
        None
    } else {
        Some(terms.join(" "))
    }
}

/// The terms of user text, as [`fts_query`] reads them: runs of letters,
/// digits, `_` and `-`, without `-` or `_` at their ends, at most
/// [`MAX_QUERY_TERMS`] of the first [`MAX_QUERY_CHARS`] characters. A term
/// holds no `"`.
pub fn query_terms(text: &str) -> Vec<String> {
    let text: String = text.chars().take(MAX_QUERY_CHARS).collect();
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
        .map(|w| w.trim_matches(['_', '-']))
        .filter(|w| w.chars().any(char::is_alphanumeric))
        .take(MAX_QUERY_TERMS)
        .map(str::to_string)
        .collect()
}

/// A sample stored record for the store's tests and those of the crates
/// above it (`test-support`).
#[cfg(any(test, feature = "test-support"))]
pub mod samples {
    use memhook_core::record::{Record, RecordTool};

    pub fn rec(key: &str, ms: u64, project: &str, session: &str, event: &str) -> Record {
        Record {
            occurred_ms: ms,
            event: event.into(),
            native_event: event.into(),
            session_id: Some(session.into()),
            cwd: Some("/w".into()),
            scope: memhook_core::record::sample::scope("default", project, "fallback"),
            tool: Some(RecordTool {
                family: "file".into(),
                name: Some("Edit".into()),
                call_id: Some(format!("call-{key}")),
                outcome: Some("success".into()),
                exit_code: None,
            }),
            title: Some(format!("title {key}")),
            body: Some("the quick brown fox-jumps \"over\"".into()),
            files: vec!["src/main.rs".into()],
            ..memhook_core::record::sample::record(key)
        }
    }
}

#[cfg(test)]
pub mod tests {
    pub use super::samples::rec;
    use super::*;
    use std::collections::BTreeMap;

    /// Keep `text` as the briefing of `default/p` (the scope of [`rec`]'s
    /// records) beside the store `s`, stamped as it is now; its key.
    pub fn keep_briefing(s: &Store, text: &str) -> memhook_core::briefing_cache::Key {
        use memhook_core::briefing_cache::{self, Key};
        let key = Key {
            workspace: "default".into(),
            project: "p".into(),
            max_chars: 4000,
            digest: false,
            mcp: false,
        };
        let stamp = briefing_cache::stamp(s.data_dir(), s.path(), &key).unwrap();
        briefing_cache::keep(s.data_dir(), &key, stamp, vec![], Some(text.into())).unwrap();
        key
    }

    /// How many times `sql` was compiled again after its first step.
    fn recompiles(s: &Store, sql: &str, bound: &[i64]) -> i32 {
        let mut st = s.conn.prepare(sql).unwrap();
        let mut rows = st.query(rusqlite::params_from_iter(bound.iter())).unwrap();
        while rows.next().unwrap().is_some() {}
        drop(rows);
        st.get_status(rusqlite::StatementStatus::RePrepare)
    }

    /// The premise of the module's rule: a bound `LIMIT` makes SQLite
    /// compile the statement twice, a written one once.
    #[test]
    fn a_bound_limit_is_compiled_twice_and_a_written_one_once() {
        let t = tempfile::tempdir().unwrap();
        let s = Store::open(t.path()).unwrap();
        let bound = "SELECT id FROM records ORDER BY occurred_ms LIMIT ?1";
        assert_eq!(recompiles(&s, bound, &[5]), 1);
        assert_eq!(recompiles(&s, &bound.replace("?1", "5"), &[]), 0);
    }

    /// The rule itself, over the store's code (tests excluded): no query
    /// binds its `LIMIT` or `OFFSET`. Before, every briefing query did.
    #[test]
    fn no_store_query_binds_its_limit() {
        let code = |text: &'static str| text.split("#[cfg(test)]").next().unwrap();
        for (file, text) in [
            ("sqlite.rs", code(include_str!("sqlite.rs"))),
            (
                "sqlite/activity.rs",
                code(include_str!("sqlite/activity.rs")),
            ),
            ("sqlite/browse.rs", code(include_str!("sqlite/browse.rs"))),
            ("sqlite/export.rs", code(include_str!("sqlite/export.rs"))),
            ("sqlite/forget.rs", code(include_str!("sqlite/forget.rs"))),
            ("sqlite/handoff.rs", code(include_str!("sqlite/handoff.rs"))),
            ("sqlite/tokens.rs", code(include_str!("sqlite/tokens.rs"))),
        ] {
            let squeezed: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
            for word in ["LIMIT ?", "OFFSET ?"] {
                assert!(!squeezed.contains(word), "{file} binds a {word}");
            }
        }
    }

    /// A new store takes [`STORE_PAGE_SIZE`]; one created before with
    /// SQLite's 4 KiB pages keeps them, and works.
    #[test]
    fn a_new_store_has_large_pages_and_an_old_one_keeps_its_own() {
        let page = |s: &Store| -> u32 {
            s.conn
                .query_row("PRAGMA page_size", [], |r| r.get(0))
                .unwrap()
        };
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        assert_eq!(page(&s), STORE_PAGE_SIZE);
        s.insert(&rec(&"a".repeat(32), 5, "p", "s", "stop"))
            .unwrap();
        drop(s);
        assert_eq!(page(&Store::open(t.path()).unwrap()), STORE_PAGE_SIZE);
        let old = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(old.path().join(STORE_FILE)).unwrap();
            conn.execute_batch(
                "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE x (y);",
            )
            .unwrap();
        }
        let mut s = Store::open(old.path()).unwrap();
        assert_eq!(page(&s), 4096);
        s.insert(&rec(&"b".repeat(32), 5, "p", "s", "stop"))
            .unwrap();
        assert_eq!(s.count().unwrap(), 1);
    }

    /// A store written before named tokens (schema 2) gains the tokens
    /// table and an empty `token_name` on its records, keeping them.
    #[test]
    fn a_version_2_store_migrates_keeping_its_records() {
        let t = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(t.path().join(STORE_FILE)).unwrap();
            for step in &MIGRATIONS[..2] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 2).unwrap();
            conn.execute_batch(
                "INSERT INTO projects VALUES (1, 'default', 'p', 5, 5);
                 INSERT INTO records (key, occurred_ms, project_id, agent, event, native_event,
                    disposition) VALUES ('old', 5, 1, 'codex', 'stop', 'Stop', 'keep');",
            )
            .unwrap();
        }
        let mut s = Store::open(t.path()).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        let old = s.recent(None, 10).unwrap();
        assert_eq!(old.len(), 1);
        assert_eq!(
            (old[0].key.as_str(), old[0].token_name.as_deref()),
            ("old", None)
        );
        // New records name their token; a replay keeps the first name.
        let r = rec("k1", 7, "p", "s", "stop");
        s.insert_each_from([(&r, Some("alice"))]).unwrap();
        s.insert_each_from([(&r, Some("bob"))]).unwrap();
        let names: Vec<_> = s
            .recent(None, 10)
            .unwrap()
            .into_iter()
            .map(|r| r.token_name)
            .collect();
        assert_eq!(names, [Some("alice".to_string()), None]);
    }

    /// A version 3 store gains the columns of the agent's words and what a
    /// tool result did; its old records read back without them, new ones
    /// keep exit status, command line and plan (what the handoff reads).
    #[test]
    fn a_version_3_store_migrates_and_keeps_commands_plans_and_final_messages() {
        use memhook_core::record::{PlanItem, RecordPlan};
        let t = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(t.path().join(STORE_FILE)).unwrap();
            for step in &MIGRATIONS[..3] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 3).unwrap();
        }
        let mut s = Store::open(t.path()).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        let mut fail = rec("k1", 7, "p", "s", "post-tool-use");
        fail.tool.as_mut().unwrap().outcome = Some("error".into());
        fail.tool.as_mut().unwrap().exit_code = Some(101);
        fail.command = Some("cargo test".into());
        fail.body = Some("test failed\nmore".into());
        let mut plan = rec("k2", 8, "p", "s", "post-tool-use");
        plan.plan = Some(RecordPlan {
            full: true,
            items: vec![PlanItem {
                id: None,
                text: Some("add the CLI".into()),
                status: "pending".into(),
            }],
        });
        let mut stop = rec("k3", 9, "p", "s", "stop");
        stop.tool = None;
        stop.body = Some("Fixed: the leap-year rule.".into());
        for r in [&fail, &plan, &stop] {
            s.insert(r).unwrap();
        }
        let row = s.sessions(("default", "p"), None, 1).unwrap()[0].row;
        let notes = s.session_notes(row).unwrap();
        assert_eq!(notes.len(), 3);
        assert!(notes[0].failed && !notes[0].succeeded);
        assert_eq!(notes[0].exit_code, Some(101));
        assert_eq!(notes[0].command.as_deref(), Some("cargo test"));
        assert_eq!(notes[0].text.as_deref(), Some("test failed\nmore"));
        assert!(notes[1].succeeded && notes[1].text.is_none());
        assert_eq!(notes[1].plan, plan.plan);
        assert_eq!(notes[2].text.as_deref(), Some("Fixed: the leap-year rule."));
    }

    #[test]
    fn migrates_once_and_refuses_newer_schema() {
        let t = tempfile::tempdir().unwrap();
        let s = Store::open(t.path()).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        drop(s);
        let s = Store::open(t.path()).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        s.conn
            .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .unwrap();
        drop(s);
        let e = Store::open(t.path()).unwrap_err();
        assert!(matches!(e, StoreError::TooNew { .. }), "{e}");
        assert!(e.to_string().contains("upgrade memhook"));
    }

    #[cfg(unix)] // modes and symlinks as Unix has them (Windows: winacl)
    #[test]
    fn store_file_is_private_and_symlink_refused() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let data = t.path().join("d");
        Store::open(&data).unwrap();
        let mode = std::fs::metadata(data.join(STORE_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let other = t.path().join("o");
        std::fs::create_dir(&other).unwrap();
        std::os::unix::fs::symlink(data.join(STORE_FILE), other.join(STORE_FILE)).unwrap();
        assert!(matches!(
            Store::open(&other),
            Err(StoreError::Unsafe { .. })
        ));
    }

    /// Every project, session and record row, one line each: a tag, then
    /// the columns' values.
    fn rows(s: &Store) -> Vec<String> {
        use rusqlite::types::ValueRef;
        let mut out = Vec::new();
        for (tag, sql) in [
            (
                "p",
                "SELECT workspace, project, first_ms, last_ms FROM projects ORDER BY 1, 2",
            ),
            (
                "s",
                "SELECT p.project, s.agent, s.session_id, s.first_ms, s.last_ms, s.events, s.work
                 FROM sessions s JOIN projects p ON p.id = s.project_id ORDER BY 1, 2, 3",
            ),
            (
                "r",
                "SELECT key, session_row IS NULL FROM records ORDER BY key",
            ),
        ] {
            let mut st = s.conn.prepare(sql).unwrap();
            let n = st.column_count();
            let it = st
                .query_map([], |r| {
                    let mut line = tag.to_string();
                    for i in 0..n {
                        line.push(' ');
                        match r.get_ref(i)? {
                            ValueRef::Text(t) => line.push_str(&String::from_utf8_lossy(t)),
                            ValueRef::Integer(v) => line.push_str(&v.to_string()),
                            other => line.push_str(&format!("{other:?}")),
                        }
                    }
                    Ok(line)
                })
                .unwrap();
            out.extend(it.map(Result::unwrap));
        }
        out
    }

    #[test]
    fn a_batch_writes_the_same_rows_as_one_record_at_a_time() {
        // Out of order times, replays inside the batch and of earlier
        // batches, two projects, sessions shared across them, no session.
        let mut recs = Vec::new();
        for i in 0..40u64 {
            let project = if i % 3 == 0 { "a" } else { "b" };
            let session = ["s1", "s2", "s3"][(i % 7 % 3) as usize];
            let event = ["post-tool-use", "session-start", "user-prompt", "stop"][(i % 4) as usize];
            let mut r = rec(
                &format!("k{:02}", i % 31),
                1000 - i * 7 % 50,
                project,
                session,
                event,
            );
            if i % 11 == 0 {
                r.session_id = None;
            }
            recs.push(r);
        }
        let one = tempfile::tempdir().unwrap();
        let mut s1 = Store::open(one.path()).unwrap();
        let mut new1 = 0;
        for r in &recs {
            new1 += usize::from(s1.insert(r).unwrap());
        }
        let many = tempfile::tempdir().unwrap();
        let mut s2 = Store::open(many.path()).unwrap();
        let new2 =
            s2.insert_all(recs[..15].iter()).unwrap() + s2.insert_all(recs[10..].iter()).unwrap();
        assert_eq!(new1, 31);
        assert_eq!(new2, 31);
        assert_eq!(rows(&s1), rows(&s2));
        // And both match the rows worked out here from the first record of
        // each key (a replay changes nothing).
        let mut seen = std::collections::HashSet::new();
        let mut want: std::collections::BTreeMap<(String, String), (i64, i64, i64, i64)> =
            Default::default();
        let mut projects: std::collections::BTreeMap<String, (i64, i64)> = Default::default();
        for r in recs.iter().filter(|r| seen.insert(r.key.clone())) {
            let ms = r.occurred_ms as i64;
            let p = projects.entry(r.scope.project.clone()).or_insert((ms, ms));
            *p = (p.0.min(ms), p.1.max(ms));
            let Some(sid) = &r.session_id else { continue };
            let w = i64::from(WORK_EVENTS.contains(&r.event.as_str()));
            let e = want
                .entry((r.scope.project.clone(), sid.clone()))
                .or_insert((ms, ms, 0, 0));
            *e = (e.0.min(ms), e.1.max(ms), e.2 + 1, e.3 + w);
        }
        let mut expected: Vec<String> = projects
            .iter()
            .map(|(p, (f, l))| format!("p default {p} {f} {l}"))
            .collect();
        expected.extend(
            want.iter()
                .map(|((p, s), (f, l, e, w))| format!("s {p} claude-code {s} {f} {l} {e} {w}")),
        );
        let got: Vec<String> = rows(&s2)
            .into_iter()
            .filter(|r| !r.starts_with("r "))
            .collect();
        assert_eq!(got, expected);
        // The search index holds every new record exactly once.
        let fts: i64 = s2
            .conn
            .query_row("SELECT count(*) FROM records_fts", [], |r| r.get(0))
            .unwrap();
        assert_eq!(fts, 31);
    }

    #[test]
    fn replay_is_a_noop_and_sessions_track_work() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        assert!(s
            .insert(&rec("k1", 10, "p", "s1", "post-tool-use"))
            .unwrap());
        assert!(!s
            .insert(&rec("k1", 10, "p", "s1", "post-tool-use"))
            .unwrap());
        assert!(s
            .insert(&rec("k2", 20, "p", "s2", "session-start"))
            .unwrap());
        assert_eq!(s.count().unwrap(), 2);
        // s2 did no work: only s1 is a previous session.
        let sess = s.sessions(("default", "p"), None, 10).unwrap();
        assert_eq!(sess.len(), 1);
        assert_eq!(sess[0].session_id, "s1");
        assert_eq!(sess[0].work, 1);
        assert!(s
            .sessions(("default", "p"), Some("s1"), 10)
            .unwrap()
            .is_empty());
        let recs = s.session_records(sess[0].row, 10).unwrap();
        assert_eq!(recs[0].files, vec!["src/main.rs".to_string()]);
    }

    #[test]
    fn activity_aggregates_in_sql() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let mut prompt = rec("p", 1, "p", "s", "user-prompt");
        prompt.tool = None;
        prompt.title = None;
        prompt.body = Some("first line\nsecond".into());
        s.insert(&prompt).unwrap();
        let mut fail = rec("f1", 2, "p", "s", "post-tool-use-failure");
        fail.body = Some("\nboom: exit 1\nmore".into());
        s.insert(&fail).unwrap();
        let mut fail2 = fail.clone();
        fail2.key = "f2".into();
        fail2.files = vec!["b.rs".into(), "src/main.rs".into()];
        s.insert(&fail2).unwrap();
        s.insert(&rec("ok", 4, "p", "s", "post-tool-use")).unwrap();
        let row = s.sessions(("default", "p"), None, 1).unwrap()[0].row;
        let a = s.activity(&[row], 10).unwrap();
        // The prompts come from `session_prompts` (the handoff's query).
        let (first, tail, count) = s.session_prompts(row, 5).unwrap();
        assert_eq!(first.unwrap().text, "first line\nsecond");
        assert!(tail.is_empty());
        assert_eq!(count, 1);
        // A count past any real one is cut, not an error (it is written
        // into the SQL's LIMIT).
        let (first, tail, _) = s.session_prompts(row, usize::MAX).unwrap();
        assert!(first.is_some() && tail.is_empty());
        // `outcomes` is the same families and failures, and nothing else.
        let o = s.outcomes(&[row], 10).unwrap();
        assert_eq!((&o.families, &o.failures), (&a.families, &a.failures));
        assert!(o.tools.is_empty() && o.files.is_empty());
        assert_eq!(a.families, vec![("file".to_string(), 3, 2)]);
        assert_eq!(a.tools, vec![("Edit".to_string(), 3)]);
        // Grouped by tool and the excerpt's first non-blank line.
        assert_eq!(
            a.failures,
            vec![("Edit".to_string(), Some("boom: exit 1".to_string()), 2)]
        );
        assert_eq!(
            a.files,
            vec![("src/main.rs".to_string(), 4), ("b.rs".to_string(), 1)]
        );
        assert_eq!(a.file_count, 2);
        assert_eq!(s.activity(&[row], 1).unwrap().files.len(), 1);
        assert_eq!(
            s.session_outline(row).unwrap(),
            (1, 3, Some("first line\nsecond".to_string()))
        );
        assert_eq!(s.activity(&[], 5).unwrap(), Activity::default());
    }

    /// A tool result without an outcome (metadata-only, or a read whose path
    /// could not be extracted) must not turn an aggregate into NULL: a group
    /// of only such rows once failed the whole activity query (and with it
    /// the session-start briefing).
    #[test]
    fn activity_counts_results_without_an_outcome() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let bare = |key: &str, ms: u64, session: &str, family: &str| {
            let mut r = rec(key, ms, "p", session, "post-tool-use");
            let tool = r.tool.as_mut().unwrap();
            tool.family = family.into();
            tool.outcome = None;
            r
        };
        // Session "only": every tool result lacks an outcome.
        s.insert(&bare("a", 1, "only", "file")).unwrap();
        s.insert(&bare("b", 2, "only", "file")).unwrap();
        // Session "mixed": outcome-less rows beside a success and a failure.
        s.insert(&bare("c", 3, "mixed", "shell")).unwrap();
        s.insert(&bare("d", 4, "mixed", "file")).unwrap();
        let mut err = rec("e", 5, "p", "mixed", "post-tool-use");
        err.tool.as_mut().unwrap().outcome = Some("error".into());
        s.insert(&err).unwrap();
        s.insert(&rec("f", 6, "p", "mixed", "post-tool-use-failure"))
            .unwrap();
        let rows: BTreeMap<String, i64> = s
            .sessions(("default", "p"), None, 10)
            .unwrap()
            .into_iter()
            .map(|x| (x.session_id, x.row))
            .collect();
        let only = s.activity(&[rows["only"]], 10).unwrap();
        assert_eq!(only.families, vec![("file".to_string(), 2, 0)]);
        assert!(only.failures.is_empty());
        let mixed = s.activity(&[rows["mixed"]], 10).unwrap();
        assert_eq!(
            mixed.families,
            vec![("file".to_string(), 3, 2), ("shell".to_string(), 1, 0)]
        );
        assert_eq!(mixed.failures.iter().map(|f| f.2).sum::<u64>(), 2);
    }

    #[test]
    fn a_deadline_bounds_every_wait_for_a_lock() {
        let t = tempfile::tempdir().unwrap();
        Store::open(t.path()).unwrap();
        let holder = Connection::open(t.path().join(STORE_FILE)).unwrap();
        holder
            .execute_batch(
                "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; DELETE FROM record_rows;",
            )
            .unwrap();
        let start = std::time::Instant::now();
        let deadline = start + Duration::from_millis(200);
        assert!(Store::open_until(t.path(), Some(deadline)).is_err());
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(200), "{took:?}");
        // A hang guard well under BUSY_TIMEOUT (5 s), not a benchmark.
        assert!(took < Duration::from_secs(2), "{took:?}");
        // Past the deadline nothing waits at all.
        let start = std::time::Instant::now();
        assert!(Store::open_until(t.path(), Some(start)).is_err());
        assert!(start.elapsed() < Duration::from_secs(1));
        holder.execute_batch("ROLLBACK").unwrap();
    }

    #[test]
    fn checkpoint_empties_the_wal_without_waiting_for_readers() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let rs: Vec<Record> = (0..50)
            .map(|i| rec(&format!("k{i}"), i, "p", "s", "stop"))
            .collect();
        s.insert_all(rs.iter()).unwrap();
        let wal = t.path().join(format!("{STORE_FILE}-wal"));
        assert!(std::fs::metadata(&wal).unwrap().len() > 0);
        s.checkpoint();
        assert_eq!(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0), 0);
        // A reader holding a snapshot is never waited for.
        let reader = Store::open(t.path()).unwrap();
        reader.read(|r| {
            assert_eq!(r.count().unwrap(), 50);
            let more: Vec<Record> = (50..60)
                .map(|i| rec(&format!("k{i}"), i, "p", "s", "stop"))
                .collect();
            assert_eq!(s.insert_all(more.iter()).unwrap(), 10);
            s.checkpoint();
        });
        assert_eq!(reader.count().unwrap(), 60);
    }

    #[test]
    fn recent_is_newest_first_and_scoped() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let rs = [
            rec("a", 1, "p", "s", "user-prompt"),
            rec("b", 3, "p", "s", "user-prompt"),
            rec("c", 2, "q", "s", "user-prompt"),
        ];
        assert_eq!(s.insert_all(rs.iter()).unwrap(), 3);
        let keys = |v: Vec<StoredRecord>| v.into_iter().map(|r| r.key).collect::<Vec<_>>();
        assert_eq!(keys(s.recent(None, 10).unwrap()), ["b", "c", "a"]);
        assert_eq!(
            keys(s.recent(Some(("default", "p")), 10).unwrap()),
            ["b", "a"]
        );
        assert_eq!(keys(s.recent(None, 1).unwrap()), ["b"]);
    }

    #[test]
    fn search_takes_any_user_text_safely() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        s.insert(&rec("a", 1, "p", "s", "post-tool-use")).unwrap();
        let mut other = rec("b", 2, "q", "s", "post-tool-use");
        other.body = Some("nothing to see".into());
        s.insert(&other).unwrap();
        for q in [
            "fox-jumps",
            "\"over",
            "quick AND",
            "brown NEAR(",
            "title:fox",
            "fox*",
            "OR fox",
            "'; DROP TABLE records; --",
        ] {
            let r = s.search(None, q, 10);
            assert!(r.is_ok(), "{q}: {r:?}");
        }
        assert_eq!(s.search(None, "fox-jumps", 10).unwrap().len(), 1);
        assert_eq!(s.search(None, "\"over", 10).unwrap()[0].key, "a");
        assert_eq!(s.search(None, "main", 10).unwrap().len(), 2);
        assert_eq!(
            s.search(Some(("default", "q")), "main", 10).unwrap()[0].key,
            "b"
        );
        assert!(s.search(None, "-- \" '", 10).unwrap().is_empty());
        assert!(s.search(None, "absent", 10).unwrap().is_empty());
        assert_eq!(s.count().unwrap(), 2);
    }

    /// Records whose bodies are `texts`, keys `r0`, `r1`, … (oldest first).
    fn bodies(s: &mut Store, texts: &[&str]) {
        for (i, text) in texts.iter().enumerate() {
            let mut r = rec(&format!("r{i}"), 1000 + i as u64, "p", "s", "post-tool-use");
            r.title = None;
            r.body = Some((*text).into());
            r.files = Vec::new();
            s.insert(&r).unwrap();
        }
    }

    fn found(s: &Store, q: &str) -> Vec<String> {
        let mut keys: Vec<String> = s
            .search(None, q, 10)
            .unwrap()
            .into_iter()
            .map(|r| r.key)
            .collect();
        keys.sort();
        keys
    }

    #[test]
    fn search_finds_other_inflections_and_split_identifiers() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        bodies(
            &mut s,
            &[
                "add a retry to the client",
                "the test failed twice",
                "def parse_date(text):",
                "const d = parseDate(text)",
                "impl ParseDate for Row",
                "see parse-date.md",
                "parse the arguments; the date is today",
            ],
        );
        assert_eq!(found(&s, "retries"), ["r0"]);
        assert_eq!(found(&s, "retrying"), ["r0"]);
        assert_eq!(found(&s, "failing tests"), ["r1"]);
        assert_eq!(found(&s, "fail"), ["r1"]);
        assert_eq!(found(&s, "parse date"), ["r2", "r3", "r4", "r5", "r6"]);
        // An identifier finds its other spellings, not prose with its words.
        for q in ["parseDate", "parse_date", "ParseDate", "parse-date"] {
            assert_eq!(found(&s, q), ["r2", "r3", "r4", "r5"], "{q}");
        }
        // The identifier's spellings rank above prose that has its words.
        let best: Vec<String> = s
            .search(None, "parse date", 4)
            .unwrap()
            .into_iter()
            .map(|r| r.key)
            .collect();
        assert!(!best.contains(&"r6".to_string()), "{best:?}");
    }

    #[test]
    fn project_record_counts_are_a_roll_up_filled_by_the_migration_and_kept_by_writes() {
        let t = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(t.path().join(STORE_FILE)).unwrap();
            for step in &MIGRATIONS[..5] {
                conn.execute_batch(step).unwrap();
            }
            conn.execute_batch(
                "PRAGMA user_version = 5;
                 INSERT INTO projects VALUES (1, 'default', 'p', 1, 3), (2, 'default', 'q', 2, 2);
                 INSERT INTO records (key, occurred_ms, project_id, agent, event, native_event,
                    disposition) VALUES
                    ('a', 1, 1, 'codex', 'stop', 'Stop', 'keep'),
                    ('b', 3, 1, 'codex', 'stop', 'Stop', 'keep'),
                    ('c', 2, 2, 'codex', 'stop', 'Stop', 'keep');",
            )
            .unwrap();
        }
        let mut s = Store::open(t.path()).unwrap();
        let rolled = |s: &Store| -> Vec<(String, u64)> {
            let mut v: Vec<(String, u64)> = s
                .browse_projects()
                .unwrap()
                .into_iter()
                .map(|p| (p.project, p.records))
                .collect();
            v.sort();
            v
        };
        let stored: i64 = s
            .conn
            .query_row("SELECT sum(records) FROM projects", [], |r| r.get(0))
            .unwrap();
        assert_eq!(stored, 3, "the migration counts what was stored before");
        assert_eq!(rolled(&s), [("p".into(), 2), ("q".into(), 1)]);
        // New records and a replay (not counted twice).
        let r = rec(&format!("{:032x}", 7), 10, "q", "s1", "user-prompt");
        s.insert_all([&r, &r]).unwrap();
        s.insert(&rec(&format!("{:032x}", 8), 11, "q", "s1", "stop"))
            .unwrap();
        assert_eq!(rolled(&s), [("p".into(), 2), ("q".into(), 3)]);
        // Forgetting recounts.
        let sel = Selector {
            project: Some(("default".into(), "q".into())),
            before_ms: Some(11),
            ..Selector::default()
        };
        assert_eq!(s.forget(&sel, true).unwrap().records, 2);
        assert_eq!(rolled(&s), [("p".into(), 2), ("q".into(), 1)]);
    }

    #[test]
    fn a_store_of_version_4_is_indexed_anew_with_identifier_words() {
        let t = tempfile::tempdir().unwrap();
        {
            let conn = Connection::open(t.path().join(STORE_FILE)).unwrap();
            for step in &MIGRATIONS[..4] {
                conn.execute_batch(step).unwrap();
            }
            conn.execute_batch(
                "PRAGMA user_version = 4;
                 INSERT INTO projects VALUES (1, 'default', 'p', 1, 1);
                 INSERT INTO records (id, key, occurred_ms, project_id, agent, event,
                    native_event, disposition, body, files)
                 VALUES (1, 'k1', 1, 1, 'claude-code', 'stop', 'Stop', 'kept',
                    'renamed loadConfig; retries kept', '[\"src/RateLimiter.rs\"]');
                 INSERT INTO records_fts (rowid, title, body, files)
                    VALUES (1, NULL, 'renamed loadConfig; retries kept', 'src/RateLimiter.rs');
                 WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 2500)
                 INSERT INTO records (id, key, occurred_ms, project_id, agent, event,
                    native_event, disposition, body)
                 SELECT i, 'm' || i, 1, 1, 'claude-code', 'stop', 'Stop', 'kept',
                    'more retrying of fetchUrl' FROM n;",
            )
            .unwrap();
        }
        let s = Store::open(t.path()).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        for q in ["load config", "rate limiter", "loadConfig"] {
            assert_eq!(found(&s, q), ["k1"], "{q}");
        }
        // Every record is indexed, past the first batch of 1,000.
        let count = |q: &str| -> i64 {
            s.conn
                .query_row(
                    "SELECT count(*) FROM records_fts WHERE records_fts MATCH ?1",
                    [fts_query(q).unwrap()],
                    |r| r.get(0),
                )
                .unwrap()
        };
        assert_eq!(count("retry"), 2500);
        assert_eq!(count("fetch url"), 2499);
        let ok: rusqlite::Result<usize> = s.conn.execute(
            "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')",
            [],
        );
        assert!(ok.is_ok(), "{ok:?}");
    }

    #[test]
    fn a_recent_match_ranks_above_an_equal_older_one_but_not_a_better_one() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64;
        let year = 365 * 86_400_000;
        let texts = [
            ("old", now - year, "flaky test in the parser"),
            ("new", now - 60_000, "flaky test in the lexer"),
            ("best", now - 2 * year, "flaky flaky flaky"),
        ];
        for (key, ms, text) in texts {
            let mut r = rec(key, ms, "p", "s", "post-tool-use");
            r.title = None;
            r.files = Vec::new();
            r.body = Some(text.into());
            s.insert(&r).unwrap();
        }
        let order: Vec<String> = s
            .search(None, "flaky", 10)
            .unwrap()
            .into_iter()
            .map(|r| r.key)
            .collect();
        assert_eq!(order, ["best", "new", "old"]);
    }

    #[test]
    fn fts_query_quotes_every_term() {
        assert_eq!(fts_query("foo-bar").as_deref(), Some("\"foo-bar\""));
        assert_eq!(fts_query("-x- _y_ --").as_deref(), Some("\"x\" \"y\""));
        assert_eq!(fts_query("a\"b").as_deref(), Some("\"a\" \"b\""));
        assert_eq!(fts_query(" -\"* "), None);
        let many = "w ".repeat(MAX_QUERY_TERMS + 5);
        assert_eq!(
            fts_query(&many).unwrap().matches('"').count(),
            2 * MAX_QUERY_TERMS
        );
        let long = "x".repeat(MAX_QUERY_CHARS + 10);
        assert_eq!(fts_query(&long).unwrap().len(), MAX_QUERY_CHARS + 2);
    }
}
