//! PostgreSQL as the store behind `memhook serve` (DESIGN §13): for a team
//! server, or several servers behind one load balancer, on one database.
//!
//! - [`config`]: `--database` / `MEMHOOK_DATABASE_URL` and the password
//!   sources (never argv);
//! - [`schema`]: versioned migrations under an advisory lock;
//! - [`ingest`]: exactly once on the record key across servers, roll-ups
//!   in the same transaction;
//! - [`read`]: the briefing's reads ([`memhook_store::model::Reads`]), recent
//!   and full-text search;
//! - [`browse`]: the web view's reads ([`memhook_store::model::Browse`]);
//! - [`tokens`]: named tokens ([`memhook_store::tokens::TokenStore`]);
//! - [`forget`]: forgetting records, and what PostgreSQL can promise about it;
//! - [`export`]: every record, streamed, for `memhook export --database`.
//!
//! Connections come from a small bounded pool ([`POOL_SIZE`]); each is
//! opened with [`CONNECT_TIMEOUT`] and a server-side `statement_timeout`
//! of [`STATEMENT_TIMEOUT`]. A connection that broke is dropped, and the
//! next checkout opens a new one, so the server recovers by itself when the
//! database comes back. While the database cannot be reached every call
//! fails at once with [`PgError::Unavailable`] (retried at most every
//! [`RECONNECT_PAUSE`]); `serve` answers it 503. The `postgres` client runs
//! a small single-threaded tokio runtime per connection; only `serve` and
//! the commands that manage a team server's database (`token`, `export`
//! with `--database`) reach this module (never `memhook hook`).

pub mod browse;
pub mod config;
mod database;
pub mod export;
pub mod forget;
pub mod ingest;
mod meaning;
pub mod read;
pub mod retention;
pub mod schema;
pub mod tokens;

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use postgres::{Client, NoTls, Statement};

use memhook_core::record::Record;
use memhook_store::model::StoreError;

pub use config::{Target, DATABASE_URL_ENV};
pub use read::PgRead;

/// Most connections one server holds to the database.
pub const POOL_SIZE: usize = 8;
/// Longest wait for a new connection (TCP connect plus login).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// Server-side bound on any one statement (`statement_timeout`), lock
/// waits included.
pub const STATEMENT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest wait for a free connection when all [`POOL_SIZE`] are in use.
pub const CHECKOUT_WAIT: Duration = Duration::from_secs(5);
/// After a failed connect, calls fail at once for this long before the
/// next attempt (a database that is down costs no connect timeout per
/// request).
pub const RECONNECT_PAUSE: Duration = Duration::from_millis(500);
/// Sent data unacknowledged this long ends the connection (a database
/// host that vanished), and so do this many failed keepalive probes.
pub const TCP_USER_TIMEOUT: Duration = Duration::from_secs(15);
/// Idle time before the first keepalive probe.
pub const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
/// How the briefing's read transaction starts. Its queries each read one
/// session's or a few sessions' records (thousands of rows at most), where
/// starting parallel workers costs more than it saves: with 100k records
/// the planner, overestimating the file list's rows, sent the files query
/// to two workers and took 8 ms for 1.5 ms of work (docs/benchmarks.md).
/// `SET LOCAL` ends with the transaction; the database's own setting is
/// untouched.
pub const BRIEFING_READ_SETTINGS: &str = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; \
     SET LOCAL max_parallel_workers_per_gather = 0";
/// Times one call is tried again after a deadlock or serialization failure.
pub const MAX_TX_RETRIES: usize = 3;

/// Why the PostgreSQL store failed. `db` is the database's description
/// without its password ([`config::describe`]).
#[derive(Debug)]
pub enum PgError {
    /// The database cannot be reached or the connection broke (also: the
    /// server is shutting down, too many connections, a statement timed
    /// out). Nothing was committed; retrying later is right.
    Unavailable { db: String, reason: String },
    /// A statement failed.
    Query {
        db: String,
        code: Option<String>,
        reason: String,
    },
    /// The schema was migrated by a newer memhook.
    TooNew { db: String, version: i32 },
}

impl fmt::Display for PgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PgError::Unavailable { db, reason } => {
                write!(f, "{db}: database unavailable: {reason}")
            }
            PgError::Query { db, code, reason } => match code {
                Some(c) => write!(f, "{db}: {reason} (SQLSTATE {c})"),
                None => write!(f, "{db}: {reason}"),
            },
            PgError::TooNew { db, version } => write!(
                f,
                "{db}: schema version {version} is newer than this memhook understands \
                 ({}); upgrade memhook",
                schema::SCHEMA_VERSION
            ),
        }
    }
}

impl std::error::Error for PgError {}

impl PgError {
    /// Classify a client error: connection-level failures and the server
    /// states that end or refuse a session are [`PgError::Unavailable`].
    pub fn of(db: &str, e: &postgres::Error) -> PgError {
        let code = e.code().map(|c| c.code().to_string());
        let unavailable = match &code {
            // Without a server's code: a broken or refused connection (an
            // I/O error underneath) is unavailable; a configuration error
            // (a password the server asked for and we lack) is not.
            None => e.is_closed() || io_underneath(e),
            Some(c) => {
                c.starts_with("08") // connection exception
                    || c.starts_with("57P") // admin/crash shutdown, cannot connect now
                    || c == "53300" // too many connections
                    || c == "57014" // statement timeout / cancelled
            }
        };
        let reason = match e.as_db_error() {
            Some(d) => d.message().to_string(),
            None => e.to_string(),
        };
        if unavailable {
            PgError::Unavailable {
                db: db.to_string(),
                reason,
            }
        } else {
            PgError::Query {
                db: db.to_string(),
                code,
                reason,
            }
        }
    }

    /// Worth trying the whole transaction again (deadlock, serialization).
    fn retryable(&self) -> bool {
        matches!(self, PgError::Query { code: Some(c), .. } if c == "40P01" || c == "40001")
    }

    /// The database could not be reached or the connection broke.
    pub fn is_unavailable(&self) -> bool {
        matches!(self, PgError::Unavailable { .. })
    }

    /// The PostgreSQL error a [`StoreError`] carries, or a query error
    /// holding its words.
    pub fn from_store(e: StoreError, db: &str) -> PgError {
        match e {
            StoreError::Engine { source, .. } if source.is::<PgError>() => *source
                .downcast::<PgError>()
                .expect("checked by is::<PgError>()"),
            other => PgError::Query {
                db: db.to_string(),
                code: None,
                reason: other.to_string(),
            },
        }
    }
}

/// A PostgreSQL error as the store interface's error: the engine's error
/// kept whole (its text names the database without its password).
impl From<PgError> for StoreError {
    fn from(e: PgError) -> StoreError {
        StoreError::Engine {
            db: String::new(),
            source: Box::new(e),
        }
    }
}

/// Whether an I/O error (refused, reset, timed out) caused `e`.
fn io_underneath(e: &postgres::Error) -> bool {
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        if s.is::<std::io::Error>() {
            return true;
        }
        source = s.source();
    }
    false
}

/// One pooled connection and the statements prepared on it (by their
/// SQL text): a statement used again on the same connection costs one round
/// trip instead of two (no Parse/Describe) and no planning once PostgreSQL
/// keeps a generic plan.
pub struct Conn {
    pub client: Client,
    prepared: HashMap<&'static str, Statement>,
}

impl Conn {
    fn new(client: Client) -> Conn {
        Conn {
            client,
            prepared: HashMap::new(),
        }
    }

    /// `sql` prepared on this connection, once.
    pub fn prepared(&mut self, sql: &'static str) -> Result<Statement, postgres::Error> {
        if let Some(s) = self.prepared.get(sql) {
            return Ok(s.clone());
        }
        let s = self.client.prepare(sql)?;
        self.prepared.insert(sql, s.clone());
        Ok(s)
    }
}

/// The pool's bookkeeping.
struct PoolState {
    idle: Vec<Conn>,
    /// Connections open (idle or checked out).
    open: usize,
    /// No new connection is tried before this (after a failure).
    pause_until: Option<Instant>,
    /// Why the last connect failed.
    last_failure: String,
}

/// The PostgreSQL store: settings, a bounded pool, and whether the schema
/// was checked.
pub struct PgStore {
    target: Target,
    state: Mutex<PoolState>,
    freed: Condvar,
    migrated: AtomicBool,
    migrating: Mutex<()>,
    data_dir: PathBuf,
}

impl fmt::Debug for PgStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PgStore")
            .field("db", &self.target.shown)
            .finish()
    }
}

/// A checked-out connection; `reused` when it came from the idle list (and
/// may have broken while it sat there).
struct Lease {
    conn: Conn,
    reused: bool,
}

impl PgStore {
    /// A store for `target`; nothing is connected yet. `data_dir` is the
    /// server's data dir (the project memory the briefing shows).
    pub fn new(mut target: Target, data_dir: &Path) -> PgStore {
        let opts = format!(
            "-c statement_timeout={} -c lock_timeout={}",
            STATEMENT_TIMEOUT.as_millis(),
            STATEMENT_TIMEOUT.as_millis()
        );
        target
            .config
            .connect_timeout(CONNECT_TIMEOUT)
            .tcp_user_timeout(TCP_USER_TIMEOUT)
            .keepalives(true)
            .keepalives_idle(KEEPALIVE_IDLE)
            .application_name("memhook serve")
            .options(&opts);
        PgStore {
            target,
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                open: 0,
                pause_until: None,
                last_failure: String::new(),
            }),
            freed: Condvar::new(),
            migrated: AtomicBool::new(false),
            migrating: Mutex::new(()),
            data_dir: data_dir.to_path_buf(),
        }
    }

    /// The database, safe to log (no password).
    pub fn describe(&self) -> &str {
        &self.target.shown
    }

    /// The server's data dir.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn unavailable(&self, reason: impl Into<String>) -> PgError {
        PgError::Unavailable {
            db: self.target.shown.clone(),
            reason: reason.into(),
        }
    }

    fn checkout(&self) -> Result<Lease, PgError> {
        let deadline = Instant::now() + CHECKOUT_WAIT;
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            while let Some(conn) = st.idle.pop() {
                if conn.client.is_closed() {
                    st.open -= 1;
                    continue;
                }
                return Ok(Lease { conn, reused: true });
            }
            if st.open < POOL_SIZE {
                if let Some(until) = st.pause_until {
                    if Instant::now() < until {
                        return Err(self.unavailable(st.last_failure.clone()));
                    }
                }
                st.open += 1;
                drop(st);
                return match self.target.config.connect(NoTls) {
                    Ok(client) => {
                        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                        st.pause_until = None;
                        Ok(Lease {
                            conn: Conn::new(client),
                            reused: false,
                        })
                    }
                    Err(e) => {
                        let err = PgError::of(&self.target.shown, &e);
                        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
                        st.open -= 1;
                        st.pause_until = Some(Instant::now() + RECONNECT_PAUSE);
                        st.last_failure = match &err {
                            PgError::Unavailable { reason, .. } | PgError::Query { reason, .. } => {
                                reason.clone()
                            }
                            other => other.to_string(),
                        };
                        self.freed.notify_one();
                        Err(err)
                    }
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(self.unavailable(format!(
                    "all {POOL_SIZE} connections busy for {CHECKOUT_WAIT:?}"
                )));
            }
            st = self
                .freed
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Return a connection: kept when the call succeeded, closed otherwise
    /// (a failed call may have left it broken or mid-transaction).
    fn give_back(&self, conn: Conn, keep: bool) {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if keep && !conn.client.is_closed() {
            st.idle.push(conn);
        } else {
            st.open -= 1;
            drop(st);
            drop(conn);
        }
        self.freed.notify_one();
    }

    /// Run `f` on a pooled connection. A connection that broke while idle
    /// (the database restarted) is replaced and `f` runs again; a deadlock
    /// or serialization failure runs `f` again up to [`MAX_TX_RETRIES`]
    /// times. `f` must be safe to repeat (one transaction).
    fn with_client<T>(
        &self,
        mut f: impl FnMut(&mut Client) -> Result<T, PgError>,
    ) -> Result<T, PgError> {
        self.with_conn(|c| f(&mut c.client))
    }

    /// [`PgStore::with_client`] with the connection's prepared statements.
    fn with_conn<T>(
        &self,
        mut f: impl FnMut(&mut Conn) -> Result<T, PgError>,
    ) -> Result<T, PgError> {
        self.ensure_schema()?;
        self.with_raw_conn(&mut f)
    }

    fn with_raw_conn<T>(
        &self,
        f: &mut impl FnMut(&mut Conn) -> Result<T, PgError>,
    ) -> Result<T, PgError> {
        let mut retries = 0;
        // Every idle connection may be stale after a restart: one more try
        // than the pool holds.
        let mut stale = 0;
        loop {
            let mut lease = self.checkout()?;
            let out = f(&mut lease.conn);
            let ok = out.is_ok();
            let reused = lease.reused;
            self.give_back(lease.conn, ok);
            match out {
                Err(e) if e.is_unavailable() && reused && stale < POOL_SIZE => stale += 1,
                Err(e) if e.retryable() && retries < MAX_TX_RETRIES => retries += 1,
                other => return other,
            }
        }
    }

    /// Apply the missing migrations once per process (under the database's
    /// advisory lock, so once across servers).
    pub fn ensure_schema(&self) -> Result<(), PgError> {
        if self.migrated.load(Ordering::SeqCst) {
            return Ok(());
        }
        let _one = self.migrating.lock().unwrap_or_else(|e| e.into_inner());
        if self.migrated.load(Ordering::SeqCst) {
            return Ok(());
        }
        let db = self.target.shown.clone();
        let found = self.with_raw_conn(&mut |c| {
            schema::migrate(&mut c.client).map_err(|e| PgError::of(&db, &e))
        })?;
        match found {
            schema::Migrated::TooNew { version } => Err(PgError::TooNew { db, version }),
            schema::Migrated::Current { applied } => {
                if applied > 0 {
                    eprintln!(
                        "memhook: {db}: applied {applied} schema migration(s), now at \
                         version {}",
                        schema::SCHEMA_VERSION
                    );
                }
                self.migrated.store(true, Ordering::SeqCst);
                Ok(())
            }
        }
    }

    /// Store many records in one transaction; for each, whether it was new
    /// (a key stored before, by this server or another, is not).
    pub fn insert_each<'a>(
        &self,
        records: impl IntoIterator<Item = &'a Record>,
    ) -> Result<Vec<bool>, PgError> {
        self.insert_each_from(records.into_iter().map(|r| (r, None)))
    }

    /// [`PgStore::insert_each`], each record with the name of the token that
    /// delivered it (`records.token_name`; `None` for none). A replay keeps
    /// the record's first token name.
    pub fn insert_each_from<'a>(
        &self,
        records: impl IntoIterator<Item = (&'a Record, Option<&'a str>)>,
    ) -> Result<Vec<bool>, PgError> {
        let records: Vec<(&Record, Option<&str>)> = records.into_iter().collect();
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let db = self.target.shown.clone();
        self.with_conn(|c| ingest::insert_each(c, &db, &records))
    }

    /// Run `f` on one consistent snapshot (a read-only, repeatable-read
    /// transaction): the briefing's reads. Parallel query is off inside it
    /// ([`BRIEFING_READ_SETTINGS`]).
    pub fn read<T>(
        &self,
        mut f: impl FnMut(&PgRead<'_>) -> Result<T, memhook_store::model::StoreError>,
    ) -> Result<T, PgError> {
        let db = self.target.shown.clone();
        let data_dir = self.data_dir.clone();
        self.with_client(|c| {
            let e = |x: postgres::Error| PgError::of(&db, &x);
            c.batch_execute(BRIEFING_READ_SETTINGS).map_err(e)?;
            let out = {
                let reader = PgRead::new(c, &db, &data_dir);
                f(&reader)
            };
            let out = out.map_err(|x| PgError::from_store(x, &db))?;
            c.batch_execute("COMMIT").map_err(e)?;
            Ok(out)
        })
    }
}
