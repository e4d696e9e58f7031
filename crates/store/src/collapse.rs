//! Identical texts collapsed in search results (issue 24): twelve
//! `cargo test: 42 passed; 0 failed` results are one row that says it
//! stands for twelve, so they do not push the record that was asked for
//! out of the first rows. Both stores' searches ask for
//! [`candidates`]`(limit)` rows and keep [`collapse`]`(rows, limit)`.

use std::collections::HashMap;

use crate::model::{StoredRecord, MAX_QUERY_LIMIT};

/// A search looks at this many times the rows it returns (at the least
/// [`MIN_EXTRA`] more), so that the rows identical texts free are filled.
pub const OVERFETCH: usize = 4;
/// Rows a search looks at beyond its limit, at the least.
pub const MIN_EXTRA: usize = 16;

/// How many ranked rows a search of `limit` rows reads before
/// [`collapse`] (bounded by [`MAX_QUERY_LIMIT`]).
pub fn candidates(limit: usize) -> usize {
    limit
        .saturating_mul(OVERFETCH)
        .max(limit.saturating_add(MIN_EXTRA))
        .min(MAX_QUERY_LIMIT)
}

/// What makes two records' texts identical: title, body, files.
type Text<'a> = (Option<&'a str>, Option<&'a str>, &'a [String]);

/// `found` (best first) with each group of records of identical text
/// (title, body and files) as one row: the newest of them, at the place
/// of the best, its [`StoredRecord::identical`] counting the others; at
/// most `limit` rows. Identical texts among rows past the candidates are
/// not counted (the count is of what the search looked at).
pub fn collapse(found: Vec<StoredRecord>, limit: usize) -> Vec<StoredRecord> {
    // For each row: the index of the first row of its text.
    let mut first: HashMap<Text<'_>, usize> = HashMap::new();
    let mut group = Vec::with_capacity(found.len());
    for (i, r) in found.iter().enumerate() {
        let key = (r.title.as_deref(), r.body.as_deref(), r.files.as_slice());
        group.push(*first.entry(key).or_insert(i));
    }
    drop(first);
    // Per group (by its first row): the newest row and how many there are.
    let mut newest: HashMap<usize, (usize, u64)> = HashMap::new();
    for (i, &g) in group.iter().enumerate() {
        let e = newest.entry(g).or_insert((i, 0));
        e.1 += 1;
        if found[i].occurred_ms > found[e.0].occurred_ms {
            e.0 = i;
        }
    }
    let mut slots: Vec<Option<StoredRecord>> = found.into_iter().map(Some).collect();
    let mut out = Vec::new();
    for (i, &g) in group.iter().enumerate() {
        if g != i || out.len() == limit {
            continue;
        }
        let (keep, n) = newest[&g];
        let mut r = slots[keep].take().expect("each group is kept once");
        r.identical += n - 1;
        // The best row's reason (the newest has the same text, so the same).
        if r.matched.is_none() {
            r.matched = slots[i].as_ref().and_then(|b| b.matched.clone());
        }
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(key: &str, ms: u64, body: &str) -> StoredRecord {
        StoredRecord {
            key: key.into(),
            occurred_ms: ms,
            agent: "codex".into(),
            event: "post-tool-use".into(),
            native_event: "PostToolUse".into(),
            workspace: "w".into(),
            project: "p".into(),
            session_id: None,
            cwd: None,
            subagent: false,
            tool_family: None,
            tool_name: None,
            tool_call_id: None,
            outcome: None,
            disposition: "keep".into(),
            title: None,
            body: Some(body.into()),
            files: Vec::new(),
            token_name: None,
            matched: None,
            identical: 0,
        }
    }

    #[test]
    fn identical_texts_are_one_row_the_newest_at_the_best_place() {
        let found = vec![
            rec("a", 1, "cargo test: 42 passed; 0 failed"),
            rec("b", 3, "cargo test: 42 passed; 0 failed"),
            rec("c", 2, "FAILED test_leap_year"),
            rec("d", 2, "cargo test: 42 passed; 0 failed"),
            rec("e", 9, "other"),
        ];
        let out = collapse(found.clone(), 10);
        let keys: Vec<(&str, u64)> = out.iter().map(|r| (r.key.as_str(), r.identical)).collect();
        assert_eq!(keys, [("b", 2), ("c", 0), ("e", 0)]);
        // The limit counts rows after collapsing.
        assert_eq!(collapse(found, 2).len(), 2);
        // Same body, other files: not identical.
        let mut f = rec("f", 1, "x");
        f.files = vec!["a.rs".into()];
        assert_eq!(collapse(vec![f, rec("g", 1, "x")], 5).len(), 2);
    }

    #[test]
    fn candidates_are_bounded() {
        assert_eq!(candidates(3), 19);
        assert_eq!(candidates(10), 40);
        assert_eq!(candidates(usize::MAX), MAX_QUERY_LIMIT);
        assert_eq!(candidates(0), MIN_EXTRA);
    }
}
