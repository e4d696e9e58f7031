//! PostgreSQL as a server's [`Database`]: every method over the pool.

use std::path::Path;

use memhook_core::record::Record;
use memhook_store::model::{Browse, Database, Forgotten, Reads, Selector, StoreError};

use crate::PgStore;

impl Database for PgStore {
    fn describe(&self) -> String {
        PgStore::describe(self).to_string()
    }

    fn data_dir(&self) -> &Path {
        PgStore::data_dir(self)
    }

    fn insert_each(&self, records: &[(&Record, Option<&str>)]) -> Result<Vec<bool>, StoreError> {
        Ok(self.insert_each_from(records.iter().copied())?)
    }

    fn named_token(&self, given: &str) -> Result<Option<String>, StoreError> {
        Ok(memhook_store::tokens::verify(self, given)?)
    }

    fn with_reads(
        &self,
        f: &mut dyn FnMut(&dyn Reads) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        Ok(self.read(|r| f(r))?)
    }

    fn with_browse(
        &self,
        f: &mut dyn FnMut(&dyn Browse) -> Result<(), StoreError>,
    ) -> Result<(), StoreError> {
        Ok(self.read(|r| f(r))?)
    }

    fn forget(
        &self,
        sel: &Selector,
        apply: bool,
    ) -> Result<Option<Forgotten>, Box<dyn std::error::Error + Send + Sync>> {
        Ok(Some(PgStore::forget(self, sel, apply)?))
    }

    fn forget_promise(&self) -> &'static str {
        crate::forget::PROMISE
    }
}
