//! The compact records table (issue 29, migration 12): the rows are kept in
//! `record_rows`, smaller than the values they stand for, and the view
//! `records` gives every reader (and the full-text index, whose external
//! content it is) the values as they were stored before:
//!
//! - `key`: a key of 32 lowercase hex digits (every minted key,
//!   `memhook_core::record::new_key`) is its 16 bytes, a BLOB; any other
//!   key stays TEXT. [`key_value`] turns a key into what the column holds,
//!   for lookups that use the key's unique index.
//! - `agent`, `event`, `native_event`, `tool_family`, `tool_name`,
//!   `outcome`, `disposition`: the id of the name in `names`.
//! - `session_id`: NULL when the record has a session row (whose
//!   `session_id` it is); `cwd`: NULL when equal to its session row's
//!   `cwd` (set once, when the session row is made), an empty BLOB when the
//!   record had none but its session row has one.
//! - `body`: a body of [`DEFLATE_MIN`] bytes or more is its raw deflate
//!   stream (a BLOB) when that is shorter; any other body stays TEXT.
//! - `words` (the identifier words the index holds, `crate::words`) are
//!   not stored: the view computes them from title, body and files with the
//!   same function the insert gave the index, so that FTS5's `delete` and
//!   `snippet()` get back exactly what was indexed.
//!
//! The view calls functions of this build ([`register_functions`]): every
//! connection that reads `records` must register them (`Store::open` does);
//! `record_rows` can be read without them.

use miniz_oxide::deflate::core::{
    compress, create_comp_flags_from_zip_params, CompressorOxide, TDEFLFlush, TDEFLStatus,
};
use miniz_oxide::inflate::core::{decompress, DecompressorOxide};
use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::{Value, ValueRef};
use rusqlite::{params, Connection, OptionalExtension};

/// Bodies this long or longer (bytes) are stored deflated when that is
/// shorter.
pub const DEFLATE_MIN: usize = 100;

/// The most a stored body inflates to (a body is capped at 16 KiB, DESIGN
/// §4): anything larger is a damaged value, not a body.
const INFLATE_LIMIT: usize = 1 << 20;

/// zlib's default level: about as small as the highest, several times
/// faster.
const DEFLATE_LEVEL: u8 = 6;

/// What `record_rows.body` holds for `body`.
pub fn pack_body(body: &str) -> Value {
    if body.len() >= DEFLATE_MIN {
        if let Some(packed) = deflate(body.as_bytes()).filter(|p| p.len() < body.len()) {
            return Value::Blob(packed);
        }
    }
    Value::Text(body.to_string())
}

thread_local! {
    /// One compressor per thread, reset for each body. A new one (what
    /// `miniz_oxide::deflate::compress_to_vec` makes every time) allocates
    /// about 300 KiB for its window and hash chains, fresh pages that are
    /// faulted in, zeroed and unmapped again for a body of a few hundred
    /// bytes: in `perf record` of an import that was more than the
    /// compression itself (docs/benchmarks.md, fifth pass).
    static DEFLATER: std::cell::RefCell<Option<Box<CompressorOxide>>> =
        const { std::cell::RefCell::new(None) };
}

/// `input` as a raw deflate stream at [`DEFLATE_LEVEL`]: the same bytes as
/// `miniz_oxide::deflate::compress_to_vec`, with this thread's compressor
/// (`None` only if the compressor fails, which it does not for any input).
fn deflate(mut input: &[u8]) -> Option<Vec<u8>> {
    DEFLATER.with_borrow_mut(|slot| {
        let c = slot.get_or_insert_with(|| {
            Box::new(CompressorOxide::new(create_comp_flags_from_zip_params(
                i32::from(DEFLATE_LEVEL),
                0,
                0,
            )))
        });
        c.reset();
        let mut out = vec![0; (input.len() / 2).max(2)];
        let mut at = 0;
        loop {
            let (status, used, wrote) = compress(c, input, &mut out[at..], TDEFLFlush::Finish);
            at += wrote;
            match status {
                TDEFLStatus::Done => {
                    out.truncate(at);
                    return Some(out);
                }
                TDEFLStatus::Okay => {
                    input = &input[used.min(input.len())..];
                    if out.len() - at < 30 {
                        out.resize(out.len() * 2, 0);
                    }
                }
                // Only a bug in the compressor: the body is stored as it is.
                _ => return None,
            }
        }
    })
}

fn user_err(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> rusqlite::Error {
    rusqlite::Error::UserFunctionError(e.into())
}

thread_local! {
    /// The last body inflated on this thread and its text: a row read
    /// through the view inflates its body for `body` and again for
    /// `words`, and a search reads the row once more for its snippet.
    static LAST_INFLATED: std::cell::RefCell<(Vec<u8>, String)> =
        const { std::cell::RefCell::new((Vec::new(), String::new())) };
}

thread_local! {
    /// One decompressor and output buffer per thread, reset for each body:
    /// a new decompressor (what `decompress_to_vec_with_limit` makes every
    /// time) is about 11 KB zeroed and moved, and its output is zeroed
    /// again as it grows, about a third of inflating a body of a few KB
    /// (callgrind of a briefing at 1,000,000 records, docs/benchmarks.md,
    /// sixth pass).
    static INFLATER: std::cell::RefCell<(Box<DecompressorOxide>, Vec<u8>)> =
        std::cell::RefCell::new((Box::default(), Vec::new()));
}

/// The bytes of the raw deflate stream `b`, at most [`INFLATE_LIMIT`].
fn inflate(mut b: &[u8]) -> rusqlite::Result<Vec<u8>> {
    use miniz_oxide::inflate::core::inflate_flags::TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF;
    use miniz_oxide::inflate::TINFLStatus;
    INFLATER.with_borrow_mut(|(d, out)| {
        d.init();
        if out.len() < 16 * 1024 {
            out.resize(16 * 1024, 0);
        }
        let mut at = 0;
        loop {
            let (status, used, wrote) =
                decompress(d, b, out, at, TINFL_FLAG_USING_NON_WRAPPING_OUTPUT_BUF);
            at += wrote;
            match status {
                TINFLStatus::Done => return Ok(out[..at].to_vec()),
                TINFLStatus::HasMoreOutput if out.len() < INFLATE_LIMIT => {
                    b = &b[used.min(b.len())..];
                    let grown = (out.len() * 2).min(INFLATE_LIMIT);
                    out.resize(grown, 0);
                }
                other => return Err(user_err(format!("stored body does not inflate: {other:?}"))),
            }
        }
    })
}

/// The text a stored body stands for (see [`pack_body`]).
fn unpack_body(v: ValueRef<'_>) -> rusqlite::Result<Option<String>> {
    match v {
        ValueRef::Null => Ok(None),
        ValueRef::Text(t) => Ok(Some(String::from_utf8_lossy(t).into_owned())),
        ValueRef::Blob(b) => {
            if let Some(hit) = LAST_INFLATED.with_borrow(|(k, v)| (k == b).then(|| v.clone())) {
                return Ok(Some(hit));
            }
            let raw = inflate(b)?;
            let text = String::from_utf8(raw).map_err(|_| user_err("stored body is not UTF-8"))?;
            LAST_INFLATED.set((b.to_vec(), text.clone()));
            Ok(Some(text))
        }
        ValueRef::Integer(i) => Ok(Some(i.to_string())),
        ValueRef::Real(r) => Ok(Some(r.to_string())),
    }
}

fn text_arg(v: ValueRef<'_>) -> Option<String> {
    match v {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        _ => None,
    }
}

/// What `record_rows.key` holds for `key`.
pub fn key_value(key: &str) -> Value {
    match hex16(key) {
        Some(b) => Value::Blob(b.to_vec()),
        None => Value::Text(key.to_string()),
    }
}

/// The 16 bytes of 32 lowercase hex digits.
fn hex16(key: &str) -> Option<[u8; 16]> {
    let k = key.as_bytes();
    if k.len() != 32 || !k.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let digit = |c: u8| if c <= b'9' { c - b'0' } else { c - b'a' + 10 };
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = digit(k[2 * i]) << 4 | digit(k[2 * i + 1]);
    }
    Some(out)
}

/// The range of 16-byte keys whose hex starts with `prefix` (lowercase hex
/// digits; `None` when longer than a key).
pub fn key_blob_range(prefix: &str) -> Option<(Vec<u8>, Vec<u8>)> {
    if prefix.len() > 32 {
        return None;
    }
    let pad = |c: char| {
        let mut s = prefix.to_string();
        while s.len() < 32 {
            s.push(c);
        }
        hex16(&s).map(|b| b.to_vec())
    };
    Some((pad('0')?, pad('f')?))
}

/// Register the functions the view `records` calls on `conn`; what is
/// returned is the connection's names as `memhook_name` has read them
/// (`Names`).
pub fn register_functions(conn: &Connection) -> rusqlite::Result<Names> {
    let flags = FunctionFlags::SQLITE_UTF8
        | FunctionFlags::SQLITE_DETERMINISTIC
        | FunctionFlags::SQLITE_INNOCUOUS;
    conn.create_scalar_function("memhook_inflate", 1, flags, |ctx: &Context<'_>| {
        unpack_body(ctx.get_raw(0))
    })?;
    conn.create_scalar_function("memhook_deflate", 1, flags, |ctx: &Context<'_>| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(t) => pack_body(&String::from_utf8_lossy(t)),
            v => Value::from(v),
        })
    })?;
    conn.create_scalar_function("memhook_key", 1, flags, |ctx: &Context<'_>| {
        Ok(match ctx.get_raw(0) {
            ValueRef::Text(t) => key_value(&String::from_utf8_lossy(t)),
            v => Value::from(v),
        })
    })?;
    let names = register_names(conn, flags)?;
    conn.create_scalar_function("memhook_words", 3, flags, |ctx: &Context<'_>| {
        let title = text_arg(ctx.get_raw(0));
        let body = unpack_body(ctx.get_raw(1))?;
        let files: Vec<String> = text_arg(ctx.get_raw(2))
            .and_then(|f| serde_json::from_str(&f).ok())
            .unwrap_or_default();
        Ok(super::record_words(
            title.as_deref(),
            body.as_deref(),
            &files,
        ))
    })?;
    Ok(names)
}

/// The names one connection has read from `names`, by id and by name. A
/// name's id never changes once committed (names are never deleted), so
/// each is read once per connection and kept; a rollback forgets them all,
/// since an id read inside a transaction that is rolled back can be given
/// to another name later.
#[derive(Clone, Default)]
pub struct Names(std::sync::Arc<std::sync::Mutex<NameMaps>>);

#[derive(Default)]
struct NameMaps {
    by_id: std::collections::HashMap<i64, std::sync::Arc<str>>,
    by_name: std::collections::HashMap<std::sync::Arc<str>, i64>,
}

impl Names {
    fn maps(&self) -> std::sync::MutexGuard<'_, NameMaps> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Keep `names` (every row of `names`, read just now).
    fn keep_all(&self, names: Vec<(i64, String)>) {
        let mut m = self.maps();
        for (id, name) in names {
            let name: std::sync::Arc<str> = name.into();
            m.by_name.insert(name.clone(), id);
            m.by_id.insert(id, name);
        }
    }

    /// The name of `id` (read with all names on `conn`, this connection,
    /// when not kept yet); `None` for no id or an id `names` does not have.
    /// For reads of many rows, which select the ids and name them here
    /// instead of calling `memhook_name` for each (about 500 instructions
    /// a call through SQLite and rusqlite, against one hash lookup).
    pub fn name(&self, conn: &Connection, id: Option<i64>) -> rusqlite::Result<Option<String>> {
        let Some(id) = id else {
            return Ok(None);
        };
        if let Some(n) = self.maps().by_id.get(&id) {
            return Ok(Some(n.to_string()));
        }
        self.reload(conn)?;
        Ok(self.maps().by_id.get(&id).map(|n| n.to_string()))
    }

    /// Read every name on `conn` and keep them.
    fn reload(&self, conn: &Connection) -> rusqlite::Result<()> {
        let all = conn
            .prepare_cached("SELECT id, name FROM names")?
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<(i64, String)>>>()?;
        self.keep_all(all);
        Ok(())
    }

    /// The ids of those of `names` that are in `names` now. All names are
    /// read on `conn` (this connection) when one is not kept yet: one
    /// statement instead of one per name (the table holds tens of names);
    /// a name not there yet is looked for again next time.
    pub fn ids(&self, conn: &Connection, names: &[&str]) -> rusqlite::Result<Vec<i64>> {
        let find = |m: &NameMaps| -> Option<Vec<i64>> {
            names.iter().map(|n| m.by_name.get(*n).copied()).collect()
        };
        if let Some(ids) = find(&self.maps()) {
            return Ok(ids);
        }
        self.reload(conn)?;
        let m = self.maps();
        Ok(names
            .iter()
            .filter_map(|n| m.by_name.get(*n).copied())
            .collect())
    }
}

/// A connection's handle, for [`register_names`]'s function to read
/// `names` on the connection that calls it.
struct Handle(*mut rusqlite::ffi::sqlite3);

// SAFETY: SQLite runs a function only inside a statement of its own
// connection, on the thread stepping that statement; the handle is used
// only there, and the function (with the handle) is dropped when the
// connection closes.
unsafe impl Send for Handle {}

impl Handle {
    /// Every name in `names`, read on this connection (so inside its
    /// transaction, if one is open). A statement of its own, finalized
    /// before returning: a statement left open would keep the connection
    /// from closing.
    fn all_names(&self) -> rusqlite::Result<Vec<(i64, String)>> {
        use rusqlite::ffi;
        const SQL: &std::ffi::CStr = c"SELECT id, name FROM names";
        let failed = |what: &str| user_err(format!("could not read `names` ({what})"));
        let mut stmt = std::ptr::null_mut();
        let mut out = Vec::new();
        // SAFETY: `self.0` is the open connection running the calling
        // statement; `stmt` is finalized on every path below.
        unsafe {
            if ffi::sqlite3_prepare_v2(self.0, SQL.as_ptr(), -1, &mut stmt, std::ptr::null_mut())
                != ffi::SQLITE_OK
            {
                return Err(failed("prepare"));
            }
            let rc = loop {
                let rc = ffi::sqlite3_step(stmt);
                if rc != ffi::SQLITE_ROW {
                    break rc;
                }
                let text = ffi::sqlite3_column_text(stmt, 1);
                let len = ffi::sqlite3_column_bytes(stmt, 1);
                if !text.is_null() {
                    let bytes = std::slice::from_raw_parts(text, usize::try_from(len).unwrap_or(0));
                    out.push((
                        ffi::sqlite3_column_int64(stmt, 0),
                        String::from_utf8_lossy(bytes).into_owned(),
                    ));
                }
            };
            ffi::sqlite3_finalize(stmt);
            if rc != ffi::SQLITE_DONE {
                return Err(failed("step"));
            }
        }
        Ok(out)
    }
}

/// `memhook_name(id)`: the name of `id` in `names` (NULL when there is
/// none), what the view gives for each name column; read once per
/// connection ([`Names`]).
fn register_names(conn: &Connection, flags: FunctionFlags) -> rusqlite::Result<Names> {
    let names = Names::default();
    let forget = names.clone();
    conn.rollback_hook(Some(move || {
        let mut m = forget.maps();
        m.by_id.clear();
        m.by_name.clear();
    }));
    // SAFETY: the handle is not closed through this copy (see `Handle`).
    let db = Handle(unsafe { conn.handle() });
    let known = names.clone();
    conn.create_scalar_function("memhook_name", 1, flags, move |ctx: &Context<'_>| {
        let ValueRef::Integer(id) = ctx.get_raw(0) else {
            return Ok(None);
        };
        if let Some(name) = known.maps().by_id.get(&id) {
            return Ok(Some(name.clone()));
        }
        known.keep_all(db.all_names()?);
        Ok(known.maps().by_id.get(&id).cloned())
    })?;
    Ok(names)
}

/// The view as migration 12 made it (a subquery into `names` for each
/// name); migration 13 replaces it with `columns::records_view`.
pub(super) const RECORDS_VIEW_12: &str = "CREATE VIEW records AS SELECT
        r.id AS id,
        CASE WHEN typeof(r.key) = 'blob' THEN lower(hex(r.key)) ELSE r.key END AS key,
        r.occurred_ms AS occurred_ms,
        r.project_id AS project_id,
        r.session_row AS session_row,
        (SELECT n.name FROM names n WHERE n.id = r.agent) AS agent,
        (SELECT n.name FROM names n WHERE n.id = r.event) AS event,
        (SELECT n.name FROM names n WHERE n.id = r.native_event) AS native_event,
        CASE WHEN r.session_row IS NULL THEN r.session_id ELSE s.session_id END AS session_id,
        CASE WHEN r.session_row IS NULL THEN r.cwd
             WHEN r.cwd IS NULL THEN s.cwd
             WHEN typeof(r.cwd) = 'blob' THEN NULL
             ELSE r.cwd END AS cwd,
        r.subagent AS subagent,
        (SELECT n.name FROM names n WHERE n.id = r.tool_family) AS tool_family,
        (SELECT n.name FROM names n WHERE n.id = r.tool_name) AS tool_name,
        r.tool_call_id AS tool_call_id,
        (SELECT n.name FROM names n WHERE n.id = r.outcome) AS outcome,
        (SELECT n.name FROM names n WHERE n.id = r.disposition) AS disposition,
        r.title AS title,
        memhook_inflate(r.body) AS body,
        r.files AS files,
        r.token_name AS token_name,
        r.exit_code AS exit_code,
        r.command AS command,
        r.plan AS plan,
        memhook_words(r.title, r.body, r.files) AS words
     FROM record_rows r LEFT JOIN sessions s ON s.id = r.session_row";

/// Records copied per statement by [`compact_records`].
const COPY_BATCH: i64 = 5000;

/// Migration 12, after its SQL (which made `names`, `record_rows`,
/// `record_meaning_rows` and `sessions.cwd`): move the records of the
/// table `records` into `record_rows`, in batches of [`COPY_BATCH`] by
/// id, and their meanings into `record_meaning_rows`, deleting each batch
/// from the old tables once copied; re-index any record whose stored
/// words are not what `memhook_words` gives (so that the index holds what
/// the view gives back); then drop the old tables and make the view. The
/// caller has registered [`register_functions`].
pub(super) fn compact_records(tx: &rusqlite::Transaction<'_>) -> rusqlite::Result<()> {
    let names_sql = super::columns::NAME_COLUMNS
        .iter()
        .map(|c| format!("SELECT {c} FROM records WHERE id > ?1 AND id <= ?2 AND {c} IS NOT NULL"))
        .collect::<Vec<_>>()
        .join(" UNION ");
    let name = |c: &str| format!("(SELECT n.id FROM names n WHERE n.name = r.{c})");
    let copy_sql = format!(
        "INSERT INTO record_rows (id, key, occurred_ms, project_id, session_row, agent, event,
            native_event, session_id, cwd, subagent, tool_family, tool_name, tool_call_id,
            outcome, disposition, title, body, files, token_name, exit_code, command, plan)
         SELECT r.id, memhook_key(r.key), r.occurred_ms, r.project_id, r.session_row, {}, {},
            {}, CASE WHEN r.session_row IS NULL THEN r.session_id END,
            CASE WHEN r.session_row IS NULL THEN r.cwd
                 WHEN r.cwd IS s.cwd THEN NULL
                 WHEN r.cwd IS NULL THEN X''
                 ELSE r.cwd END,
            r.subagent, {}, {}, r.tool_call_id, {}, {}, r.title, memhook_deflate(r.body),
            r.files, r.token_name, r.exit_code, r.command, r.plan
         FROM records r LEFT JOIN sessions s ON s.id = r.session_row
         WHERE r.id > ?1 AND r.id <= ?2",
        name("agent"),
        name("event"),
        name("native_event"),
        name("tool_family"),
        name("tool_name"),
        name("outcome"),
        name("disposition"),
    );
    let mut next = tx.prepare(&format!(
        "SELECT max(id) FROM (SELECT id FROM records WHERE id > ?1 ORDER BY id LIMIT {COPY_BATCH})"
    ))?;
    let mut names = tx.prepare(&format!(
        "INSERT OR IGNORE INTO names (name) SELECT * FROM ({names_sql})"
    ))?;
    let mut copy = tx.prepare(&copy_sql)?;
    let mut meanings = tx.prepare(
        "INSERT INTO record_meaning_rows (id, project_id, occurred_ms, vector)
         SELECT id, project_id, occurred_ms, vector FROM record_meaning
         WHERE id > ?1 AND id <= ?2",
    )?;
    let mut gone = tx.prepare("DELETE FROM records WHERE id > ?1 AND id <= ?2")?;
    let mut stale = tx.prepare(
        "SELECT id, title, body, files, words FROM records
         WHERE id > ?1 AND id <= ?2 AND words IS NOT memhook_words(title, body, files)",
    )?;
    let mut del = tx.prepare(
        "INSERT INTO records_fts (records_fts, rowid, title, body, files, words)
         VALUES ('delete', ?1, ?2, ?3, ?4, ?5)",
    )?;
    let mut add = tx.prepare(
        "INSERT INTO records_fts (rowid, title, body, files, words)
         VALUES (?1, ?2, ?3, ?4, memhook_words(?2, ?3, ?5))",
    )?;
    let mut lo = 0i64;
    while let Some(hi) = next
        .query_row([lo], |r| r.get::<_, Option<i64>>(0))
        .optional()?
        .flatten()
    {
        names.execute([lo, hi])?;
        copy.execute([lo, hi])?;
        meanings.execute([lo, hi])?;
        type Row = (
            i64,
            Option<String>,
            Option<String>,
            Option<String>,
            Option<String>,
        );
        let rows: Vec<Row> = stale
            .query_map([lo, hi], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })?
            .collect::<rusqlite::Result<_>>()?;
        for (id, title, body, files_json, words) in rows {
            let files = files_json
                .as_deref()
                .and_then(|f| serde_json::from_str::<Vec<String>>(f).ok())
                .unwrap_or_default()
                .join(" ");
            del.execute(params![id, title, body, files, words])?;
            add.execute(params![id, title, body, files, files_json])?;
        }
        // The batch's old rows go now (their meanings with them, by the
        // cascade), so that the next batches reuse their pages instead of
        // growing the file by the whole new table.
        gone.execute([lo, hi])?;
        lo = hi;
    }
    drop((next, names, copy, meanings, stale, del, add, gone));
    tx.execute_batch(&format!(
        "DROP TABLE record_meaning;
         DROP TABLE records;
         ALTER TABLE record_meaning_rows RENAME TO record_meaning;
         CREATE INDEX record_meaning_scope ON record_meaning (project_id, id);
         CREATE INDEX records_scope_time ON record_rows (project_id, occurred_ms);
         CREATE INDEX records_time ON record_rows (occurred_ms);
         CREATE INDEX records_session ON record_rows (session_row, occurred_ms);
         CREATE INDEX records_rank ON record_rows (id, occurred_ms, project_id);
         {RECORDS_VIEW_12};"
    ))
}

/// The id of `name` in `names`, added when new; `cache` keeps those of a
/// batch.
pub(super) fn name_id(
    tx: &rusqlite::Transaction<'_>,
    cache: &mut Vec<(String, i64)>,
    name: &str,
) -> rusqlite::Result<i64> {
    if let Some((_, id)) = cache.iter().find(|(n, _)| n == name) {
        return Ok(*id);
    }
    let id = match tx
        .prepare_cached("SELECT id FROM names WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
        .optional()?
    {
        Some(id) => id,
        None => {
            tx.prepare_cached("INSERT INTO names (name) VALUES (?1)")?
                .execute([name])?;
            tx.last_insert_rowid()
        }
    };
    cache.push((name.to_string(), id));
    Ok(id)
}

#[cfg(test)]
mod tests {
    use super::super::{record_words, samples::rec, Store, MIGRATIONS, SCHEMA_VERSION, STORE_FILE};
    use super::*;
    use memhook_core::record::Record;
    use rusqlite::types::Value;

    /// Every column the view gives, in the order migration 11's table had.
    const COLUMNS: &str = "id, key, occurred_ms, project_id, session_row, agent, event, \
         native_event, session_id, cwd, subagent, tool_family, tool_name, tool_call_id, outcome, \
         disposition, title, body, files, token_name, exit_code, command, plan, words";

    /// A minted-looking key whose first digit is `i` (< 16).
    fn hex(i: u64) -> String {
        format!("{i:x}{i:031x}")
    }

    /// Records that take every path of `record_rows`: long and short
    /// bodies, minted and other keys, with and without a session, a cwd
    /// equal to the session's, another one and none, with and without a
    /// tool.
    fn varied() -> Vec<Record> {
        let long = format!(
            "error: parseDate failed in fetchUserProfile {}",
            "at line 42 of the_config_loader.rs; ".repeat(20)
        );
        let mut v = Vec::new();
        let mut r = rec(&hex(1), 10, "p", "s1", "post-tool-use");
        r.body = Some(long.clone());
        v.push(r);
        v.push(rec(&hex(2), 11, "p", "s1", "stop"));
        let mut r = rec(&hex(3), 12, "p", "s1", "user-prompt");
        r.cwd = None;
        r.tool = None;
        r.body = Some("x".repeat(99));
        v.push(r);
        let mut r = rec(&hex(4), 13, "p", "s1", "post-tool-use");
        r.cwd = Some("/elsewhere".into());
        r.body = Some("é".repeat(300));
        r.command = Some("cargo test --workspace".into());
        v.push(r);
        let mut r = rec("Not-A-Minted-Key", 14, "q", "s2", "notification");
        r.session_id = None;
        r.cwd = Some("/q".into());
        r.body = Some(long.clone());
        v.push(r);
        let mut r = rec(&format!("{:032X}", 0xab6), 15, "q", "", "stop");
        r.session_id = Some(String::new());
        r.cwd = None;
        r.body = None;
        r.title = None;
        r.files = Vec::new();
        v.push(r);
        let mut r = rec(&hex(7), 16, "q", "s3", "post-tool-use-failure");
        r.cwd = None;
        r.subagent = true;
        r.body = Some(long);
        v.push(r);
        let mut r = rec(&hex(8), 17, "q", "s3", "stop");
        r.cwd = Some("/s3".into());
        v.push(r);
        v
    }

    fn rows(conn: &Connection, sql: &str) -> Vec<Vec<Value>> {
        let mut st = conn.prepare(sql).unwrap();
        let n = st.column_count();
        let rows = st
            .query_map([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())
            .unwrap();
        rows.map(|r| r.unwrap()).collect()
    }

    fn integrity(conn: &Connection) {
        conn.execute(
            "INSERT INTO records_fts (records_fts, rank) VALUES ('integrity-check', 1)",
            [],
        )
        .unwrap();
    }

    /// What migration 11's `BatchWriter::insert` wrote for `r`.
    fn insert_v11(conn: &Connection, r: &Record, words: Option<String>) {
        conn.execute(
            "INSERT OR IGNORE INTO projects (workspace, project, first_ms, last_ms)
             VALUES ('default', ?1, ?2, ?2)",
            params![r.scope.project, r.occurred_ms as i64],
        )
        .unwrap();
        let project: i64 = conn
            .query_row(
                "SELECT id FROM projects WHERE project = ?1",
                [&r.scope.project],
                |x| x.get(0),
            )
            .unwrap();
        let session: Option<i64> = match r.session_id.as_deref() {
            Some(s) if !s.is_empty() => {
                conn.execute(
                    "INSERT OR IGNORE INTO sessions (project_id, agent, session_id, first_ms, last_ms)
                     VALUES (?1, ?2, ?3, ?4, ?4)",
                    params![project, r.agent, s, r.occurred_ms as i64],
                )
                .unwrap();
                Some(
                    conn.query_row(
                        "SELECT id FROM sessions WHERE project_id = ?1 AND session_id = ?2",
                        params![project, s],
                        |x| x.get(0),
                    )
                    .unwrap(),
                )
            }
            _ => None,
        };
        let tool = r.tool.as_ref();
        let files = (!r.files.is_empty()).then(|| serde_json::to_string(&r.files).unwrap());
        conn.execute(
            "INSERT INTO records (key, occurred_ms, project_id, session_row, agent, event,
                native_event, session_id, cwd, subagent, tool_family, tool_name, tool_call_id,
                outcome, disposition, title, body, files, token_name, exit_code, command,
                plan, words)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,
                ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
            params![
                r.key,
                r.occurred_ms as i64,
                project,
                session,
                r.agent,
                r.event,
                r.native_event,
                r.session_id,
                r.cwd,
                r.subagent,
                tool.map(|t| t.family.as_str()),
                tool.and_then(|t| t.name.as_deref()),
                tool.and_then(|t| t.call_id.as_deref()),
                tool.and_then(|t| t.outcome.as_deref()),
                r.disposition,
                r.title,
                r.body,
                files,
                Some("team-token"),
                Some(3),
                r.command,
                Option::<String>::None,
                words,
            ],
        )
        .unwrap();
        let id = conn.last_insert_rowid();
        conn.execute(
            "INSERT INTO records_fts (rowid, title, body, files, words) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![id, r.title, r.body, r.files.join(" "), words],
        )
        .unwrap();
        conn.execute(
            "INSERT INTO record_meaning (id, project_id, occurred_ms, vector)
             VALUES (?1, ?2, ?3, zeroblob(100))",
            params![id, project, r.occurred_ms as i64],
        )
        .unwrap();
    }

    #[test]
    fn a_store_of_version_11_migrates_and_every_record_reads_back_the_same() {
        let t = tempfile::tempdir().unwrap();
        let records = varied();
        let before = {
            let conn = Connection::open(t.path().join(STORE_FILE)).unwrap();
            conn.execute_batch("PRAGMA foreign_keys = ON").unwrap();
            for step in &MIGRATIONS[..11] {
                conn.execute_batch(step).unwrap();
            }
            conn.pragma_update(None, "user_version", 11).unwrap();
            for (i, r) in records.iter().enumerate() {
                let words = record_words(r.title.as_deref(), r.body.as_deref(), &r.files);
                // The last record's words as an older words function gave
                // them: the migration indexes it anew.
                let words = if i == records.len() - 1 {
                    Some("zzoldwords".to_string())
                } else {
                    words
                };
                insert_v11(&conn, r, words);
            }
            integrity(&conn);
            rows(&conn, &format!("SELECT {COLUMNS} FROM records ORDER BY id"))
        };
        let mut s = Store::open(t.path()).unwrap();
        assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
        let wal =
            std::fs::metadata(t.path().join(format!("{STORE_FILE}-wal"))).map_or(0, |m| m.len());
        assert_eq!(wal, 0, "the copy is checkpointed, not left in the WAL");
        let after = rows(
            &s.conn,
            &format!("SELECT {COLUMNS} FROM records ORDER BY id"),
        );
        assert_eq!(before.len(), records.len());
        let last = before.len() - 1;
        assert_eq!(before[..last], after[..last]);
        let n = before[0].len();
        assert_eq!(before[last][..n - 1], after[last][..n - 1]);
        let r = &records[last];
        let words = record_words(r.title.as_deref(), r.body.as_deref(), &r.files);
        assert_eq!(
            after[last][n - 1],
            Value::from(words),
            "words computed, not stored"
        );
        integrity(&s.conn);
        assert!(s.search(None, "zzoldwords", 10).unwrap().is_empty());
        // What the rows hold: every minted key in 16 bytes, long bodies
        // deflated, no session id or equal cwd beside a session row.
        let kinds = rows(
            &s.conn,
            "SELECT typeof(key), length(key), typeof(body), typeof(session_id), typeof(cwd)
             FROM record_rows ORDER BY id",
        );
        let kind = |i: usize, c: usize| match &kinds[i][c] {
            Value::Text(t) => t.clone(),
            v => format!("{v:?}"),
        };
        assert_eq!(
            (kind(0, 0), kind(0, 2), kind(0, 3), kind(0, 4)),
            ("blob".into(), "blob".into(), "null".into(), "null".into())
        );
        assert_eq!(kinds[0][1], Value::Integer(16));
        assert_eq!((kind(2, 2), kind(2, 4)), ("text".into(), "blob".into()));
        assert_eq!((kind(3, 2), kind(3, 4)), ("blob".into(), "text".into()));
        assert_eq!(
            (kind(4, 0), kind(4, 3), kind(4, 4)),
            ("text".into(), "null".into(), "text".into())
        );
        assert_eq!((kind(5, 0), kind(5, 3)), ("text".into(), "text".into()));
        // Search, why it matched and the meanings: as before.
        let found = s.search(None, "parse date", 10).unwrap();
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found.iter().all(|f| f.matched.is_some()), "{found:?}");
        let meanings = |s: &Store| -> i64 {
            s.conn
                .query_row("SELECT count(*) FROM record_meaning", [], |r| r.get(0))
                .unwrap()
        };
        // Every record with text of its own keeps its meaning (migration
        // 13 removes the others').
        let with_meaning = |rs: &mut dyn Iterator<Item = &Record>| -> i64 {
            rs.filter(|r| {
                let texts = crate::meaning::record_texts(
                    &r.event,
                    r.title.as_deref(),
                    r.body.as_deref(),
                    &r.files,
                );
                !crate::meaning::embed(texts).is_empty()
            })
            .count() as i64
        };
        let all = with_meaning(&mut records.iter());
        assert!(
            all < records.len() as i64,
            "some records have no text of their own"
        );
        assert_eq!(meanings(&s), all);
        // Forget and new records on the migrated store.
        let sel = crate::model::Selector {
            session: Some("s1".into()),
            ..Default::default()
        };
        assert_eq!(s.forget(&sel, true).unwrap().records, 4);
        let left = with_meaning(
            &mut records
                .iter()
                .filter(|r| r.session_id.as_deref() != Some("s1")),
        );
        assert_eq!(meanings(&s), left);
        integrity(&s.conn);
        s.insert_all(varied().iter()).unwrap();
        integrity(&s.conn);
        assert_eq!(s.count().unwrap(), records.len() as u64);
    }

    #[test]
    fn a_new_store_reads_back_what_it_was_given() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let records = varied();
        assert_eq!(s.insert_all(records.iter()).unwrap(), records.len());
        assert_eq!(s.insert_all(records.iter()).unwrap(), 0, "replays");
        integrity(&s.conn);
        let mut stored = Vec::new();
        s.export_each::<crate::model::StoreError>(&Default::default(), |r, x| {
            stored.push((r, x));
            Ok(())
        })
        .unwrap();
        assert_eq!(stored.len(), records.len());
        for r in &records {
            let (got, extras) = stored
                .iter()
                .find(|(g, _)| g.key == r.key)
                .unwrap_or_else(|| panic!("{} stored", r.key));
            let want_sid = r.session_id.clone();
            assert_eq!(
                (
                    got.occurred_ms,
                    &got.agent,
                    &got.event,
                    &got.native_event,
                    &got.session_id,
                    &got.cwd,
                    got.subagent,
                    &got.disposition,
                    &got.title,
                    &got.body,
                    &got.files,
                    &extras.command,
                ),
                (
                    r.occurred_ms,
                    &r.agent,
                    &r.event,
                    &r.native_event,
                    &want_sid,
                    &r.cwd,
                    r.subagent,
                    &r.disposition,
                    &r.title,
                    &r.body,
                    &r.files,
                    &r.command,
                ),
                "{}",
                r.key
            );
            let tool = r.tool.as_ref();
            assert_eq!(
                (
                    got.tool_family.as_deref(),
                    got.tool_name.as_deref(),
                    got.tool_call_id.as_deref(),
                    got.outcome.as_deref()
                ),
                (
                    tool.map(|t| t.family.as_str()),
                    tool.and_then(|t| t.name.as_deref()),
                    tool.and_then(|t| t.call_id.as_deref()),
                    tool.and_then(|t| t.outcome.as_deref())
                ),
            );
        }
        // Found by a prefix of the key, and its neighbours in the session.
        let prefix = &hex(2)[..12];
        let by_id = s.records_by_id(&[prefix.to_string()]).unwrap();
        assert_eq!(by_id.len(), 1);
        assert_eq!(by_id[0].key, hex(2));
        let (around, at) = s.around(&hex(2), 5, 5).unwrap().unwrap();
        assert_eq!(around[at].key, hex(2));
        assert_eq!(around.len(), 4);
        let text_key = s.records_by_id(&["Not-A-Minted-Key".into()]).unwrap();
        assert!(text_key.is_empty(), "not hex: not an id");
    }

    /// The view's names: a name another connection added after this one
    /// read (and kept) the others is found; an id this connection read
    /// inside a transaction it rolled back is read again when it is given
    /// to another name.
    #[test]
    fn the_view_reads_each_name_as_it_is_now() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        s.insert(&rec(&hex(1), 10, "p", "s1", "post-tool-use"))
            .unwrap();
        let events = |s: &Store| -> Vec<String> {
            s.conn
                .prepare("SELECT event FROM records ORDER BY id")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect()
        };
        assert_eq!(events(&s), ["post-tool-use"]);
        // Another connection adds a name; this one has kept the first.
        let mut other = Store::open(t.path()).unwrap();
        other.insert(&rec(&hex(2), 11, "p", "s1", "stop")).unwrap();
        assert_eq!(events(&s), ["post-tool-use", "stop"]);
        // A name read inside a transaction that is rolled back…
        let tx = s.conn.transaction().unwrap();
        let id = |tx: &Connection, name: &str| -> i64 {
            tx.query_row(
                "INSERT INTO names (name) VALUES (?1) RETURNING id",
                [name],
                |r| r.get(0),
            )
            .unwrap()
        };
        let first = id(&tx, "rolled-back-event");
        let read: String = tx
            .query_row("SELECT memhook_name(?1)", [first], |r| r.get(0))
            .unwrap();
        assert_eq!(read, "rolled-back-event");
        tx.rollback().unwrap();
        // …is read again when its id goes to another name.
        let tx = s.conn.transaction().unwrap();
        assert_eq!(id(&tx, "user-prompt"), first, "the id is given again");
        tx.commit().unwrap();
        let now: String = s
            .conn
            .query_row("SELECT memhook_name(?1)", [first], |r| r.get(0))
            .unwrap();
        assert_eq!(now, "user-prompt");
        let none: Option<String> = s
            .conn
            .query_row("SELECT memhook_name(?1)", [first + 100], |r| r.get(0))
            .unwrap();
        assert_eq!(none, None, "no such name");
    }

    /// The thread's reused compressor gives the bytes a fresh one gives,
    /// for one body after another of every size, and its reused
    /// decompressor gives them back.
    #[test]
    fn the_reused_compressor_and_decompressor_work_as_fresh_ones() {
        let mut bodies: Vec<String> = (0..40)
            .map(|i| format!("cargo test: {i} passed; 0 failed; ").repeat(1 + i * 7))
            .collect();
        bodies.push("x".repeat(70_000));
        bodies.push(
            (0..5000u32)
                .map(|i| char::from(b'a' + (i * 7919 % 26) as u8))
                .collect(),
        );
        for b in &bodies {
            let fresh = miniz_oxide::deflate::compress_to_vec(b.as_bytes(), DEFLATE_LEVEL);
            assert_eq!(
                deflate(b.as_bytes()).as_deref(),
                Some(&fresh[..]),
                "{} bytes",
                b.len()
            );
            let back = miniz_oxide::inflate::decompress_to_vec(&fresh).unwrap();
            assert_eq!(back, b.as_bytes());
            // The thread's reused decompressor too, one body after another
            // (the 70,000-byte one outgrows its first buffer).
            assert_eq!(inflate(&fresh).unwrap(), b.as_bytes());
        }
        // Past the limit, or not a deflate stream: an error, not a body.
        let huge = miniz_oxide::deflate::compress_to_vec(&vec![b'a'; INFLATE_LIMIT + 1], 6);
        assert!(inflate(&huge).is_err());
        assert!(inflate(b"not deflate at all").is_err());
        assert_eq!(
            inflate(&miniz_oxide::deflate::compress_to_vec(b"ok", 6)).unwrap(),
            b"ok"
        );
    }

    #[test]
    fn a_body_is_deflated_only_when_long_and_smaller() {
        assert!(matches!(pack_body("short"), Value::Text(_)));
        assert!(matches!(
            pack_body(&"a".repeat(DEFLATE_MIN - 1)),
            Value::Text(_)
        ));
        let long = "the quick brown fox ".repeat(10);
        let Value::Blob(b) = pack_body(&long) else {
            panic!("deflated")
        };
        assert!(b.len() < long.len());
        assert_eq!(
            unpack_body(ValueRef::Blob(&b)).unwrap().as_deref(),
            Some(&*long)
        );
        // Random-looking text that does not shrink stays text.
        let noise: String = (0..DEFLATE_MIN as u64)
            .map(|i| char::from(b'!' + ((i * 7919 + i * i * 104729) % 90) as u8))
            .collect();
        if let Value::Blob(b) = pack_body(&noise) {
            assert!(b.len() < noise.len());
        }
        assert!(key_value(&hex(5)) == Value::Blob(hex16(&hex(5)).unwrap().to_vec()));
        assert!(matches!(
            key_value(&hex(0xa).to_uppercase()),
            Value::Text(_)
        ));
        let (lo, hi) = key_blob_range("abc").unwrap();
        assert_eq!((lo[0], lo[1], hi[1], hi[15]), (0xab, 0xc0, 0xcf, 0xff));
        assert!(key_blob_range(&"a".repeat(33)).is_none());
    }
}
