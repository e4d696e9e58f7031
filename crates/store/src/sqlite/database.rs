//! The embedded store as a server's [`Database`]: one write connection (for
//! the server's writer thread, reopened after a failure) and a few idle read
//! connections (`/handoff`, token checks, the web view).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use memhook_core::record::Record;

use super::{Store, STORE_FILE};
use crate::model::{Browse, Database, Forgotten, Reads, Selector, StoreError};

/// SQLite connections kept for reading; more are opened when more are asked
/// for at once, and closed after.
pub const KEPT_READERS: usize = 4;

/// The SQLite store of a data dir, shared by a server's threads.
pub struct SqliteDatabase {
    data_dir: PathBuf,
    /// Idle connections for reading.
    readers: Mutex<Vec<Store>>,
    /// The one write connection (`None` after a failure: reopened).
    writer: Mutex<Option<Store>>,
}

impl SqliteDatabase {
    /// The store of `data_dir`, opened (and migrated) now: a store that
    /// cannot open is an error at start, not a stream of failures later.
    pub fn open(data_dir: &Path) -> Result<SqliteDatabase, StoreError> {
        let writer = Store::open(data_dir)?;
        Ok(SqliteDatabase {
            writer: Mutex::new(Some(writer)),
            ..SqliteDatabase::lazy(data_dir)
        })
    }

    /// The store of `data_dir`, opened on first use.
    pub fn lazy(data_dir: &Path) -> SqliteDatabase {
        SqliteDatabase {
            data_dir: data_dir.to_path_buf(),
            readers: Mutex::new(Vec::new()),
            writer: Mutex::new(None),
        }
    }

    /// Run `f` on an idle connection (or a new one) inside one read
    /// transaction, and keep the connection for the next reader.
    fn with_reader<T>(
        &self,
        f: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let idle = self.readers.lock().map(|mut r| r.pop()).unwrap_or(None);
        let store = match idle {
            Some(s) => s,
            None => Store::open(&self.data_dir)?,
        };
        let out = store.read(f);
        if let Ok(mut idle) = self.readers.lock() {
            if idle.len() < KEPT_READERS {
                idle.push(store);
            }
        }
        out
    }
}

impl Database for SqliteDatabase {
    fn describe(&self) -> String {
        format!("sqlite {}", self.data_dir.join(STORE_FILE).display())
    }

    fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    fn insert_each(&self, records: &[(&Record, Option<&str>)]) -> Result<Vec<bool>, StoreError> {
        let mut conn = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if conn.is_none() {
            *conn = Some(Store::open(&self.data_dir)?);
        }
        let store = conn.as_mut().expect("opened above");
        store
            .insert_each_from(records.iter().copied())
            .inspect_err(|_| {
                // A broken connection is reopened for the next group.
                *conn = None;
            })
    }

    fn named_token(&self, given: &str) -> Result<Option<String>, StoreError> {
        self.with_reader(|s| crate::tokens::verify(s, given))
    }

    fn with_reads(
        &self,
        f: &mut dyn FnMut(&dyn Reads) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.with_reader(|s| f(s))
    }

    fn with_browse(
        &self,
        f: &mut dyn FnMut(&dyn Browse) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        self.with_reader(|s| f(s))
    }

    fn forget(
        &self,
        sel: &Selector,
        apply: bool,
    ) -> Result<Option<Forgotten>, Box<dyn std::error::Error + Send + Sync>> {
        if !self.data_dir.join(STORE_FILE).exists() {
            return Ok(None);
        }
        let mut store = Store::open(&self.data_dir)?;
        Ok(Some(store.forget(sel, apply)?))
    }

    fn forget_promise(&self) -> &'static str {
        "The text leaves the database file, its write-ahead log and the search index"
    }

    fn is_embedded(&self) -> bool {
        true
    }
}
