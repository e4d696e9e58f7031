//! Files on disk: every byte under a directory, and where a text is.

use std::fs;
use std::path::{Path, PathBuf};

/// Every regular file under `dir` with its bytes (files that vanish while
/// a drainer moves them are skipped). A store (`store.sqlite3`) also comes
/// as `store.sqlite3#records`: the text of its records as the store gives
/// them back, because a long body is stored deflated (schema 12) and a
/// scan of the file's bytes finds nothing of it, kept or not.
pub fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for ent in rd.flatten() {
        let p = ent.path();
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => walk(&p, out),
            Ok(m) if m.is_file() => {
                if let Ok(b) = fs::read(&p) {
                    if p.file_name().is_some_and(|n| n == "store.sqlite3") {
                        if let Some(text) = store_text(&p) {
                            out.push((p.with_file_name("store.sqlite3#records"), text));
                        }
                    }
                    out.push((p, b));
                }
            }
            _ => {}
        }
    }
}

/// Every text column of every record of the store `db`, read through the
/// view `records` (inflated); `None` when it cannot be read (not made yet).
pub fn store_text(db: &Path) -> Option<Vec<u8>> {
    let conn = rusqlite::Connection::open(db).ok()?;
    conn.busy_timeout(std::time::Duration::from_secs(5)).ok()?;
    memhook_store::sqlite::register_functions(&conn).ok()?;
    let mut st = conn
        .prepare(
            "SELECT concat_ws(char(10), key, agent, event, native_event, session_id, cwd,
                tool_family, tool_name, tool_call_id, outcome, disposition, title, body, files,
                token_name, command, plan, words)
             FROM records",
        )
        .ok()?;
    let rows = st.query_map([], |r| r.get::<_, String>(0)).ok()?;
    let mut text = Vec::new();
    for row in rows {
        text.extend_from_slice(row.ok()?.as_bytes());
        text.push(b'\n');
    }
    Some(text)
}

/// Does `hay` hold the bytes of `needle`?
pub fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The files under `dir` whose bytes hold `needle`.
pub fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .unwrap_or_default()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
            {
                hits.push(p);
            }
        }
    }
    hits
}
