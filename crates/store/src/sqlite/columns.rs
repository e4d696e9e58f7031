//! The columns of the view `records` as expressions over the compact table
//! (`record_rows r`, and for `session_id` and `cwd` its session row `s`,
//! `LEFT JOIN sessions s ON s.id = r.session_row`): what the view is made
//! of ([`records_view`]), and what the reads on a session start's path use
//! to read `record_rows` directly.
//!
//! Why those reads do not name the view: SQLite copies a view's whole
//! definition into every statement that names it when the statement is
//! prepared, and a session start prepares each of its statements once.
//! Naming the view cost about 9 µs a statement more than naming the table
//! (11 against 2 µs for a one-column read), and with the per-row name
//! lookups it made a session start's briefing 80 % more instructions
//! (docs/benchmarks.md, "sixth pass"). A filter on a name compares ids
//! ([`name_in`]), so no row's name is looked up to decide whether it is
//! read.

/// `key`: a minted key is kept as its 16 bytes (`compact::key_value`).
pub const KEY: &str = "CASE WHEN typeof(r.key) = 'blob' THEN lower(hex(r.key)) ELSE r.key END";

/// `body`: a long body is kept deflated (`compact::pack_body`).
pub const BODY: &str = "memhook_inflate(r.body)";

/// `session_id`: kept on the session row when the record has one.
pub const SESSION_ID: &str =
    "CASE WHEN r.session_row IS NULL THEN r.session_id ELSE s.session_id END";

/// `cwd`: NULL when equal to the session row's, an empty BLOB for none.
pub const CWD: &str = "CASE WHEN r.session_row IS NULL THEN r.cwd
             WHEN r.cwd IS NULL THEN s.cwd
             WHEN typeof(r.cwd) = 'blob' THEN NULL
             ELSE r.cwd END";

/// `words`: not stored; what the insert gave the full-text index.
pub const WORDS: &str = "memhook_words(r.title, r.body, r.files)";

/// The columns kept as an id in `names`.
pub const NAME_COLUMNS: [&str; 7] = [
    "agent",
    "event",
    "native_event",
    "tool_family",
    "tool_name",
    "outcome",
    "disposition",
];

/// The name column `col` (one of [`NAME_COLUMNS`]) as its name.
pub fn name(col: &str) -> String {
    debug_assert!(NAME_COLUMNS.contains(&col), "{col} is not a name column");
    format!("memhook_name(r.{col})")
}

/// Whether the name column `col` is one of the names whose ids are `ids`
/// (`Store::name_in` reads them): 0 or 1, never NULL (a record without the
/// column's value is none of them). Plain comparisons with the ids: a
/// subquery into `names` per name cost about 15,000 instructions per
/// statement to prepare, and any `IN` with a subquery builds a table and a
/// Bloom filter each run (callgrind, docs/benchmarks.md, sixth pass).
pub fn name_in(col: &str, ids: &[i64]) -> String {
    debug_assert!(NAME_COLUMNS.contains(&col), "{col} is not a name column");
    if ids.is_empty() {
        return "0".into();
    }
    let eqs: Vec<String> = ids.iter().map(|id| format!("r.{col} = {id}")).collect();
    format!("coalesce({}, 0)", eqs.join(" OR "))
}

/// The view `records`: every column of the records as they were stored
/// before migration 12, in that order.
pub fn records_view() -> String {
    let n = |c: &str| format!("{} AS {c}", name(c));
    let columns = [
        "r.id AS id".to_string(),
        format!("{KEY} AS key"),
        "r.occurred_ms AS occurred_ms".into(),
        "r.project_id AS project_id".into(),
        "r.session_row AS session_row".into(),
        n("agent"),
        n("event"),
        n("native_event"),
        format!("{SESSION_ID} AS session_id"),
        format!("{CWD} AS cwd"),
        "r.subagent AS subagent".into(),
        n("tool_family"),
        n("tool_name"),
        "r.tool_call_id AS tool_call_id".into(),
        n("outcome"),
        n("disposition"),
        "r.title AS title".into(),
        format!("{BODY} AS body"),
        "r.files AS files".into(),
        "r.token_name AS token_name".into(),
        "r.exit_code AS exit_code".into(),
        "r.command AS command".into(),
        "r.plan AS plan".into(),
        format!("{WORDS} AS words"),
    ];
    format!(
        "CREATE VIEW records AS SELECT\n        {}\n     FROM record_rows r LEFT JOIN sessions s ON s.id = r.session_row",
        columns.join(",\n        ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The view made of these expressions is the one migration 12 made,
    /// but for the names, read with `memhook_name` instead of a subquery.
    #[test]
    fn the_view_is_migration_12s_with_names_read_by_function() {
        let mut old = super::super::compact::RECORDS_VIEW_12.to_string();
        for c in NAME_COLUMNS {
            old = old.replace(
                &format!("(SELECT n.name FROM names n WHERE n.id = r.{c})"),
                &name(c),
            );
        }
        let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(squash(&records_view()), squash(&old));
    }

    #[test]
    fn a_name_filter_is_never_null() {
        let c = rusqlite::Connection::open_in_memory().unwrap();
        c.execute_batch(
            "CREATE TABLE record_rows (outcome INTEGER);
             INSERT INTO record_rows VALUES (1), (2), (NULL), (9);",
        )
        .unwrap();
        let got = |ids: &[i64]| -> Vec<i64> {
            c.prepare(&format!(
                "SELECT {} FROM record_rows r ORDER BY rowid",
                name_in("outcome", ids)
            ))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
        };
        assert_eq!(got(&[1]), [1, 0, 0, 0]);
        assert_eq!(got(&[2, 9]), [0, 1, 0, 1]);
        assert_eq!(got(&[]), [0, 0, 0, 0], "no such name");
    }
}
