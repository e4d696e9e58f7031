//! The `tokens` table of the embedded store: the four statements behind
//! [`TokenStore`] (the token logic itself is in `crate::tokens`).

use rusqlite::{params, OptionalExtension};

use super::{Store, StoreError};
use crate::tokens::{TokenInfo, TokenStore};

impl TokenStore for Store {
    type Error = StoreError;

    fn add_token(&mut self, name: &str, hash: &str, created: &str) -> Result<bool, StoreError> {
        self.conn
            .prepare_cached(
                "INSERT INTO tokens (name, hash, created) VALUES (?1, ?2, ?3)
                 ON CONFLICT (name) DO NOTHING",
            )
            .and_then(|mut st| st.execute(params![name, hash, created]))
            .map(|n| n == 1)
            .map_err(|e| self.err(e))
    }

    fn list_tokens(&self) -> Result<Vec<TokenInfo>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT name, created, revoked FROM tokens ORDER BY name")
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([], |r| {
            Ok(TokenInfo {
                name: r.get(0)?,
                created: r.get(1)?,
                revoked: r.get(2)?,
            })
        });
        super::collect(rows).map_err(|e| self.err(e))
    }

    fn revoke_token(&mut self, name: &str, at: &str) -> Result<Option<TokenInfo>, StoreError> {
        let e = |e| StoreError::sqlite(&self.path, e);
        self.conn
            .prepare_cached("UPDATE tokens SET revoked = ?2 WHERE name = ?1 AND revoked IS NULL")
            .and_then(|mut st| st.execute(params![name, at]))
            .map_err(e)?;
        self.conn
            .prepare_cached("SELECT name, created, revoked FROM tokens WHERE name = ?1")
            .and_then(|mut st| {
                st.query_row([name], |r| {
                    Ok(TokenInfo {
                        name: r.get(0)?,
                        created: r.get(1)?,
                        revoked: r.get(2)?,
                    })
                })
                .optional()
            })
            .map_err(e)
    }

    fn active_tokens(&self) -> Result<Vec<(String, String)>, StoreError> {
        let mut st = self
            .conn
            .prepare_cached("SELECT name, hash FROM tokens WHERE revoked IS NULL")
            .map_err(|e| self.err(e))?;
        let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)));
        super::collect(rows).map_err(|e| self.err(e))
    }
}
