//! Which store `memhook serve` answers from: the embedded SQLite store in
//! the data dir (the default) or PostgreSQL (`--database`,
//! `MEMHOOK_DATABASE_URL`). Everything `serve` does with a store goes
//! through here: ingest ([`Backend::insert_each`], from the writer thread),
//! the named-token check of each request ([`Backend::named_token`]), the
//! briefing ([`Backend::briefing`]), the web view's reads
//! ([`Backend::browse`]) and forget ([`Backend::forget`]).
//!
//! Memory documents are files in the server's data dir on either store
//! (`src/memory/`): the web view shows and edits the data dir's documents.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memhook_core::record::Record;
use memhook_delivery::drain::forget::Report;
use memhook_store::model::Browse;
use memhook_store::sqlite::{Selector, Store, StoreError};
use memhook_store_pg::PgStore;

/// SQLite connections kept for reading (`/handoff`, token checks, the web
/// view); more are opened when more are asked for at once, and closed after.
pub const KEPT_READERS: usize = 4;

/// The store behind the server.
pub enum Backend {
    Sqlite {
        data_dir: PathBuf,
        /// Idle connections for reading.
        readers: Mutex<Vec<Store>>,
    },
    Postgres(Box<PgStore>),
}

/// What the writer thread holds between groups: SQLite's one write
/// connection (reopened after a failure); PostgreSQL uses its pool.
#[derive(Default)]
pub struct WriteConn(Option<Store>);

impl WriteConn {
    pub fn sqlite(store: Store) -> WriteConn {
        WriteConn(Some(store))
    }
}

impl Backend {
    pub fn sqlite(data_dir: &Path) -> Backend {
        Backend::Sqlite {
            data_dir: data_dir.to_path_buf(),
            readers: Mutex::new(Vec::new()),
        }
    }

    /// Where the records go, for the start-up line (never a password).
    pub fn describe(&self) -> String {
        match self {
            Backend::Sqlite { data_dir, .. } => {
                format!(
                    "sqlite {}",
                    data_dir.join(memhook_store::sqlite::STORE_FILE).display()
                )
            }
            Backend::Postgres(pg) => pg.describe().to_string(),
        }
    }

    /// Run `f` on an idle SQLite connection (or a new one) inside one read
    /// transaction, and keep the connection for the next reader.
    fn with_reader<T>(
        data_dir: &Path,
        readers: &Mutex<Vec<Store>>,
        f: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let idle = readers.lock().map(|mut r| r.pop()).unwrap_or(None);
        let store = match idle {
            Some(s) => s,
            None => Store::open(data_dir)?,
        };
        let out = store.read(f);
        if let Ok(mut idle) = readers.lock() {
            if idle.len() < KEPT_READERS {
                idle.push(store);
            }
        }
        out
    }

    /// Store `records`, each with the name of the token that delivered it,
    /// in one transaction; for each, whether it was new. A replay keeps the
    /// record's first token name.
    pub fn insert_each(
        &self,
        conn: &mut WriteConn,
        records: &[(&Record, Option<&str>)],
    ) -> Result<Vec<bool>, StoreError> {
        match self {
            Backend::Sqlite { data_dir, .. } => {
                if conn.0.is_none() {
                    conn.0 = Some(Store::open(data_dir)?);
                }
                let s = conn.0.as_mut().expect("opened above");
                s.insert_each_from(records.iter().copied())
                    .inspect_err(|_| {
                        // A broken connection is reopened for the next group.
                        conn.0 = None;
                    })
            }
            Backend::Postgres(pg) => Ok(pg.insert_each_from(records.iter().copied())?),
        }
    }

    /// The name of the live named token `given` is (`memhook token`): one
    /// store query per request, no cache, so a revocation holds at once.
    pub fn named_token(&self, given: &str) -> Result<Option<String>, StoreError> {
        match self {
            Backend::Sqlite { data_dir, readers } => Self::with_reader(data_dir, readers, |s| {
                memhook_store::tokens::verify(s, given)
            }),
            Backend::Postgres(pg) => Ok(memhook_store::tokens::verify(pg.as_ref(), given)?),
        }
    }

    /// The session-start briefing of `scope` (see `briefing::compose`).
    pub fn briefing(
        &self,
        scope: (&str, &str),
        exclude_session: Option<&str>,
        max_chars: usize,
        digest: bool,
    ) -> Result<Option<String>, StoreError> {
        match self {
            Backend::Sqlite { data_dir, readers } => Self::with_reader(data_dir, readers, |s| {
                memhook_store::briefing::compose_from(s, scope, exclude_session, max_chars, digest)
            }),
            Backend::Postgres(pg) => Ok(pg.read(|r| {
                memhook_store::briefing::compose_from(r, scope, exclude_session, max_chars, digest)
            })?),
        }
    }

    /// Run the web view's reads `f` on one consistent snapshot of the store
    /// (`f` may run again on PostgreSQL when a pooled connection was stale).
    pub fn browse<T>(
        &self,
        mut f: impl FnMut(&dyn Browse) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        match self {
            Backend::Sqlite { data_dir, readers } => Self::with_reader(data_dir, readers, |s| f(s)),
            Backend::Postgres(pg) => Ok(pg.read(|r| f(r))?),
        }
    }

    /// Forget what `sel` names (`apply` false: only count): from the store,
    /// and from the pending spool files of the server's data dir
    /// (`memhook_delivery::drain::forget::forget_with`).
    pub fn forget(
        &self,
        sel: &Selector,
        apply: bool,
    ) -> Result<Report, Box<dyn std::error::Error + Send + Sync>> {
        match self {
            Backend::Sqlite { data_dir, .. } => {
                memhook_delivery::drain::forget::forget_in(data_dir, sel, apply)
            }
            Backend::Postgres(pg) => {
                memhook_delivery::drain::forget::forget_with(pg.data_dir(), sel, apply, || {
                    Ok(Some(pg.forget(sel, apply)?))
                })
            }
        }
    }

    /// What forgetting promises about the text on this store, for the
    /// web view's confirmation page.
    pub fn forget_promise(&self) -> &'static str {
        match self {
            Backend::Sqlite { .. } => {
                "The text leaves the database file, its write-ahead log and the search index"
            }
            Backend::Postgres(_) => memhook_store_pg::forget::PROMISE,
        }
    }
}
