//! The `tokens` table in PostgreSQL (migration 1): the four statements
//! behind [`TokenStore`], as `sink/store/tokens.rs` has them for SQLite.
//! The same stored form: the name, the token's SHA-256 as lowercase hex
//! (`memhook_store::tokens::hash`), and RFC 3339 UTC text times.

use super::{PgError, PgStore};
use memhook_store::tokens::{TokenInfo, TokenStore};

fn info(r: &postgres::Row) -> TokenInfo {
    TokenInfo {
        name: r.get(0),
        created: r.get(1),
        revoked: r.get(2),
    }
}

impl TokenStore for PgStore {
    type Error = PgError;

    fn add_token(&mut self, name: &str, hash: &str, created: &str) -> Result<bool, PgError> {
        let db = self.describe().to_string();
        self.with_client(|c| {
            c.execute(
                "INSERT INTO tokens (name, hash, created) VALUES ($1, $2, $3)
                 ON CONFLICT (name) DO NOTHING",
                &[&name, &hash, &created],
            )
            .map(|n| n == 1)
            .map_err(|e| PgError::of(&db, &e))
        })
    }

    fn list_tokens(&self) -> Result<Vec<TokenInfo>, PgError> {
        let db = self.describe().to_string();
        self.with_client(|c| {
            c.query(
                "SELECT name, created, revoked FROM tokens ORDER BY name",
                &[],
            )
            .map(|rows| rows.iter().map(info).collect())
            .map_err(|e| PgError::of(&db, &e))
        })
    }

    fn revoke_token(&mut self, name: &str, at: &str) -> Result<Option<TokenInfo>, PgError> {
        let db = self.describe().to_string();
        self.with_client(|c| {
            let e = |x: postgres::Error| PgError::of(&db, &x);
            c.execute(
                "UPDATE tokens SET revoked = $2 WHERE name = $1 AND revoked IS NULL",
                &[&name, &at],
            )
            .map_err(e)?;
            c.query_opt(
                "SELECT name, created, revoked FROM tokens WHERE name = $1",
                &[&name],
            )
            .map(|r| r.as_ref().map(info))
            .map_err(e)
        })
    }

    fn active_tokens(&self) -> Result<Vec<(String, String)>, PgError> {
        let db = self.describe().to_string();
        self.with_client(|c| {
            c.query("SELECT name, hash FROM tokens WHERE revoked IS NULL", &[])
                .map(|rows| rows.iter().map(|r| (r.get(0), r.get(1))).collect())
                .map_err(|e| PgError::of(&db, &e))
        })
    }
}
