//! Which store `memhook serve` answers from: the embedded SQLite store in
//! the data dir (the default) or PostgreSQL (`--database`,
//! `MEMHOOK_DATABASE_URL`). Everything `serve` does goes through here:
//! ingest ([`Backend::insert_each`], from the writer thread) and the
//! briefing ([`Backend::briefing`], from connection threads).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::record::Record;
use crate::sink::pg::PgStore;
use crate::sink::store::{Store, StoreError};

/// SQLite connections kept for reading (`/handoff`); more are opened when
/// more briefings are asked for at once, and closed after.
const KEPT_READERS: usize = 4;

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
                    data_dir.join(crate::sink::store::STORE_FILE).display()
                )
            }
            Backend::Postgres(pg) => pg.describe().to_string(),
        }
    }

    /// Store `records` in one transaction; for each, whether it was new.
    pub fn insert_each(
        &self,
        conn: &mut WriteConn,
        records: &[&Record],
    ) -> Result<Vec<bool>, StoreError> {
        match self {
            Backend::Sqlite { data_dir, .. } => {
                if conn.0.is_none() {
                    conn.0 = Some(Store::open(data_dir)?);
                }
                let s = conn.0.as_mut().expect("opened above");
                s.insert_each(records.iter().copied()).inspect_err(|_| {
                    // A broken connection is reopened for the next group.
                    conn.0 = None;
                })
            }
            Backend::Postgres(pg) => Ok(pg.insert_each(records.iter().copied())?),
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
            Backend::Sqlite { data_dir, readers } => {
                let idle = readers.lock().map(|mut r| r.pop()).unwrap_or(None);
                let store = match idle {
                    Some(s) => s,
                    None => Store::open(data_dir)?,
                };
                let text =
                    crate::briefing::compose(&store, scope, exclude_session, max_chars, digest);
                if let Ok(mut idle) = readers.lock() {
                    if idle.len() < KEPT_READERS {
                        idle.push(store);
                    }
                }
                text
            }
            Backend::Postgres(pg) => Ok(pg.read(|r| {
                crate::briefing::compose_from(r, scope, exclude_session, max_chars, digest)
            })?),
        }
    }
}
