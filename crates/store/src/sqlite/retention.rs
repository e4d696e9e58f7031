//! Retention (docs/retention.md): records past their age are removed from
//! the store in bounded slices by the drainer when it is idle, never by
//! the hook.
//!
//! Three classes, each with its own age ([`Retention`], from the data dir's
//! [`RETENTION_FILE`], else the defaults): tool calls (`pre-tool-use`: the
//! result says what the call did and more), successful tool results (raw
//! tool output, most of the bytes), and everything else (prompts, the
//! agent's conclusions, failures, compaction summaries, session starts and
//! ends). A slice looks at most [`RETENTION_SCAN`] records of a class,
//! oldest first from where the last slice of that class stopped (its
//! cursor, kept in the `retention` table with what it removed), and
//! removes at most [`RETENTION_SLICE`] in one transaction, exactly as
//! forget removes them (full-text entries, rows, roll-ups; `secure_delete`
//! zeroes what they held). A record stored later with an older time than a
//! class's cursor is not looked at again by that class.

use std::fmt;
use std::path::{Path, PathBuf};

use rusqlite::params;

use super::{Store, StoreError};

/// The retention settings file in the data dir (`key = days` lines).
pub const RETENTION_FILE: &str = "retention.conf";
/// Milliseconds in a day.
pub const DAY_MS: i64 = 86_400_000;
/// Longest age a setting may give, in days (100 years); 0 keeps forever.
pub const MAX_RETENTION_DAYS: u32 = 36_500;
/// Records of one class one slice looks at, at most.
pub const RETENTION_SCAN: usize = 2_000;
/// Records one slice removes, at most (all classes together).
pub const RETENTION_SLICE: usize = 500;

/// What a record is, for retention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// `pre-tool-use`.
    ToolCalls,
    /// `post-tool-use` (a failed call is `post-tool-use-failure`: other).
    ToolResults,
    /// Every other event.
    Other,
}

impl Class {
    pub const ALL: [Class; 3] = [Class::ToolCalls, Class::ToolResults, Class::Other];

    /// Its key in [`RETENTION_FILE`] and the `retention` table.
    pub fn key(self) -> &'static str {
        match self {
            Class::ToolCalls => "tool-calls",
            Class::ToolResults => "tool-results",
            Class::Other => "everything-else",
        }
    }

    /// The class of a record of `event`.
    pub fn of(event: &str) -> Class {
        match event {
            "pre-tool-use" => Class::ToolCalls,
            "post-tool-use" => Class::ToolResults,
            _ => Class::Other,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How many days each class is kept (0: forever).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    pub days: [u32; 3],
}

/// Default days for tool calls.
pub const DEFAULT_TOOL_CALLS_DAYS: u32 = 30;
/// Default days for successful tool results.
pub const DEFAULT_TOOL_RESULTS_DAYS: u32 = 180;
/// Default days for everything else.
pub const DEFAULT_OTHER_DAYS: u32 = 730;

impl Default for Retention {
    fn default() -> Self {
        Retention {
            days: [
                DEFAULT_TOOL_CALLS_DAYS,
                DEFAULT_TOOL_RESULTS_DAYS,
                DEFAULT_OTHER_DAYS,
            ],
        }
    }
}

/// A [`RETENTION_FILE`] that cannot be read or understood: the file, the
/// line (0: the whole file) and what to write instead.
#[derive(Debug)]
pub struct RetentionError {
    pub file: PathBuf,
    pub line: usize,
    pub problem: String,
}

impl fmt::Display for RetentionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.problem)
        } else {
            write!(f, "{}:{}: {}", self.file.display(), self.line, self.problem)
        }
    }
}

impl std::error::Error for RetentionError {}

impl Retention {
    /// The settings of `data_dir`: its [`RETENTION_FILE`], or the defaults
    /// when there is none.
    pub fn load(data_dir: &Path) -> Result<Retention, RetentionError> {
        let file = data_dir.join(RETENTION_FILE);
        match std::fs::read_to_string(&file) {
            Ok(text) => Retention::parse(&text, &file),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Retention::default()),
            Err(e) => Err(RetentionError {
                file,
                line: 0,
                problem: format!("cannot read: {e} (fix its permissions or remove it)"),
            }),
        }
    }

    /// `key = days` lines (`#` starts a comment); a key not given keeps
    /// its default.
    pub fn parse(text: &str, file: &Path) -> Result<Retention, RetentionError> {
        let mut out = Retention::default();
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |problem: String| RetentionError {
                file: file.to_path_buf(),
                line: i + 1,
                problem,
            };
            let keys = Class::ALL.map(Class::key).join(", ");
            let (key, value) = line
                .split_once('=')
                .ok_or_else(|| bad(format!("write `key = days` (keys: {keys})")))?;
            let (key, value) = (key.trim(), value.trim());
            let class = Class::ALL
                .into_iter()
                .find(|c| c.key() == key)
                .ok_or_else(|| bad(format!("unknown key `{key}` (keys: {keys})")))?;
            let days = value
                .parse::<u32>()
                .ok()
                .filter(|d| *d <= MAX_RETENTION_DAYS)
                .ok_or_else(|| {
                    bad(format!(
                        "`{key} = {value}`: write a number of days from 1 to \
                         {MAX_RETENTION_DAYS}, or 0 to keep forever"
                    ))
                })?;
            out.days[class.index()] = days;
        }
        Ok(out)
    }
}

/// What retention removed: records per class, in [`Class::ALL`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Removed {
    pub records: [u64; 3],
    /// When it last removed something (Unix ms), if ever.
    pub last_ms: Option<u64>,
}

impl Store {
    /// One slice of retention under `policy` at `now_ms`: for each class
    /// kept for a limited time, look at up to [`RETENTION_SCAN`] records
    /// past its cursor and older than its age, and remove those of the
    /// class (at most [`RETENTION_SLICE`] in all, one transaction). Returns
    /// how many records it removed per class.
    pub fn retention_slice(
        &mut self,
        policy: &Retention,
        now_ms: u64,
    ) -> Result<[u64; 3], StoreError> {
        let path = self.path.clone();
        let e = |x| StoreError::sqlite(&path, x);
        self.conn
            .execute_batch("PRAGMA secure_delete = ON")
            .map_err(e)?;
        let tx = self
            .conn
            .transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)
            .map_err(e)?;
        tx.execute_batch(
            "CREATE TEMP TABLE IF NOT EXISTS forget_ids (id INTEGER PRIMARY KEY);
             DELETE FROM forget_ids;",
        )
        .map_err(e)?;
        let mut removed = [0u64; 3];
        let mut budget = RETENTION_SLICE;
        for class in Class::ALL {
            let days = policy.days[class.index()];
            if days == 0 || budget == 0 {
                continue;
            }
            let cutoff = now_ms as i64 - i64::from(days) * DAY_MS;
            let (cursor_ms, cursor_id): (i64, i64) = tx
                .query_row(
                    "SELECT cursor_ms, cursor_id FROM retention WHERE class = ?1",
                    [class.key()],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .or_else(|x| match x {
                    rusqlite::Error::QueryReturnedNoRows => Ok((i64::MIN, 0)),
                    x => Err(x),
                })
                .map_err(e)?;
            let scanned: Vec<(i64, i64, String)> = {
                let mut st = tx
                    .prepare_cached(&format!(
                        "SELECT id, occurred_ms, event FROM records INDEXED BY records_time
                         WHERE (occurred_ms, id) > (?1, ?2) AND occurred_ms < ?3
                         ORDER BY occurred_ms, id LIMIT {RETENTION_SCAN}"
                    ))
                    .map_err(e)?;
                let rows = st
                    .query_map(params![cursor_ms, cursor_id, cutoff], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })
                    .map_err(e)?;
                rows.collect::<rusqlite::Result<_>>().map_err(e)?
            };
            let mut last = (cursor_ms, cursor_id);
            let mut n = 0u64;
            for (id, ms, event) in scanned {
                if Class::of(&event) == class {
                    if budget == 0 {
                        break;
                    }
                    tx.execute("INSERT INTO forget_ids (id) VALUES (?1)", [id])
                        .map_err(e)?;
                    budget -= 1;
                    n += 1;
                }
                last = (ms, id);
            }
            removed[class.index()] = n;
            tx.execute(
                "INSERT INTO retention (class, cursor_ms, cursor_id, removed, last_ms)
                 VALUES (?1, ?2, ?3, ?4, CASE WHEN ?4 > 0 THEN ?5 END)
                 ON CONFLICT (class) DO UPDATE SET cursor_ms = ?2, cursor_id = ?3,
                    removed = removed + ?4,
                    last_ms = CASE WHEN ?4 > 0 THEN ?5 ELSE last_ms END",
                params![class.key(), last.0, last.1, n as i64, now_ms as i64],
            )
            .map_err(e)?;
        }
        if removed.iter().sum::<u64>() > 0 {
            let ids = |sql: &str| -> rusqlite::Result<Vec<i64>> {
                let mut st = tx.prepare(sql)?;
                let rows = st.query_map([], |r| r.get(0))?;
                rows.collect()
            };
            let sessions = ids("SELECT DISTINCT session_row FROM records
                 WHERE id IN (SELECT id FROM forget_ids) AND session_row IS NOT NULL")
            .map_err(e)?;
            let projects = ids(
                "SELECT DISTINCT project_id FROM records WHERE id IN (SELECT id FROM forget_ids)",
            )
            .map_err(e)?;
            super::forget::remove_selected(&tx, &sessions, &projects).map_err(e)?;
        }
        tx.commit().map_err(e)?;
        Ok(removed)
    }

    /// What retention removed so far, per class, and when it last did.
    pub fn retention_removed(&self) -> Result<Removed, StoreError> {
        let mut out = Removed::default();
        let mut st = self
            .conn
            .prepare("SELECT class, removed, last_ms FROM retention")
            .map_err(|x| self.err(x))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, Option<i64>>(2)?,
                ))
            })
            .map_err(|x| self.err(x))?;
        for row in rows {
            let (class, n, last) = row.map_err(|x| self.err(x))?;
            if let Some(c) = Class::ALL.into_iter().find(|c| c.key() == class) {
                out.records[c.index()] = n as u64;
            }
            if let Some(l) = last {
                out.last_ms = Some(out.last_ms.map_or(l as u64, |m| m.max(l as u64)));
            }
        }
        Ok(out)
    }

    /// How many records the store holds, from the projects' roll-ups (no
    /// count of the records themselves).
    pub fn record_total(&self) -> Result<u64, StoreError> {
        self.conn
            .query_row("SELECT coalesce(sum(records), 0) FROM projects", [], |r| {
                r.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|x| self.err(x))
    }

    /// The time of the oldest stored record (Unix ms), if any.
    pub fn oldest_ms(&self) -> Result<Option<u64>, StoreError> {
        self.conn
            .query_row("SELECT min(occurred_ms) FROM records", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .map(|v| v.map(|ms| ms as u64))
            .map_err(|x| self.err(x))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::samples::rec;

    const NOW: u64 = 2_000_000_000_000;

    fn day(d: u64) -> u64 {
        NOW - d * DAY_MS as u64
    }

    #[test]
    fn the_file_sets_each_class_and_names_what_is_wrong() {
        let f = Path::new("/d/retention.conf");
        assert_eq!(Retention::parse("", f).unwrap(), Retention::default());
        let r = Retention::parse(
            "# keep calls a week\ntool-calls = 7\n\neverything-else = 0 # forever\n",
            f,
        )
        .unwrap();
        assert_eq!(r.days, [7, DEFAULT_TOOL_RESULTS_DAYS, 0]);
        let at_edge = format!("tool-results = {MAX_RETENTION_DAYS}");
        assert_eq!(
            Retention::parse(&at_edge, f).unwrap().days[1],
            MAX_RETENTION_DAYS
        );
        let past = format!("tool-results = {}", MAX_RETENTION_DAYS + 1);
        let err = Retention::parse(&past, f).unwrap_err().to_string();
        assert!(
            err.starts_with("/d/retention.conf:1: `tool-results = 36501`"),
            "{err}"
        );
        let err = Retention::parse("\nprompts = 3", f)
            .unwrap_err()
            .to_string();
        assert!(err.contains(":2: unknown key `prompts`"), "{err}");
        assert!(
            err.contains("tool-calls, tool-results, everything-else"),
            "{err}"
        );
        assert!(Retention::parse("tool-calls 3", f).is_err());
        assert!(Retention::parse("tool-calls = -1", f).is_err());
    }

    #[test]
    fn a_class_goes_the_first_millisecond_past_its_age() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let policy = Retention::default();
        let days = [
            ("pre-tool-use", DEFAULT_TOOL_CALLS_DAYS),
            ("post-tool-use", DEFAULT_TOOL_RESULTS_DAYS),
            ("stop", DEFAULT_OTHER_DAYS),
        ];
        let mut n = 0;
        for (event, d) in days {
            let age = NOW - u64::from(d) * DAY_MS as u64;
            for ms in [age, age - 1] {
                n += 1;
                s.insert(&rec(&format!("{n:032x}"), ms, "p", "s", event))
                    .unwrap();
            }
        }
        assert_eq!(s.retention_slice(&policy, NOW).unwrap(), [1, 1, 1]);
        assert_eq!(s.count().unwrap(), 3, "exactly their age: kept");
    }

    #[test]
    fn a_slice_looks_at_most_at_retention_scan_records_of_a_class() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        // RETENTION_SCAN old prompts (kept 730 days), then one old call.
        let recs: Vec<_> = (0..=RETENTION_SCAN as u64)
            .map(|i| {
                let event = if i < RETENTION_SCAN as u64 {
                    "user-prompt"
                } else {
                    "pre-tool-use"
                };
                rec(&format!("{i:032x}"), day(400) + i, "p", "s", event)
            })
            .collect();
        s.insert_all(recs.iter()).unwrap();
        let calls_only = Retention { days: [30, 0, 0] };
        assert_eq!(s.retention_slice(&calls_only, NOW).unwrap(), [0, 0, 0]);
        assert_eq!(s.retention_slice(&calls_only, NOW).unwrap(), [1, 0, 0]);
        assert_eq!(s.retention_slice(&calls_only, NOW).unwrap(), [0, 0, 0]);
    }

    #[test]
    fn a_missing_file_is_the_default_policy() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(Retention::load(t.path()).unwrap(), Retention::default());
        std::fs::write(t.path().join(RETENTION_FILE), "tool-calls = 1\n").unwrap();
        assert_eq!(Retention::load(t.path()).unwrap().days[0], 1);
    }

    #[test]
    fn slices_remove_each_class_past_its_age_in_bounded_steps_and_keep_the_books() {
        let t = tempfile::tempdir().unwrap();
        let mut s = Store::open(t.path()).unwrap();
        let mut n = 0;
        let mut add = |s: &mut Store, d: u64, event: &str, count: usize| {
            let recs: Vec<_> = (0..count)
                .map(|_| {
                    n += 1;
                    let mut r = rec(&format!("{n:032x}"), day(d), "p", "s", event);
                    r.body = Some(format!("zqxretained{n} body"));
                    r
                })
                .collect();
            s.insert_all(recs.iter()).unwrap();
        };
        // Old calls and results (past 30 and 180 days), an old prompt
        // (younger than 730 days), and recent records of every class.
        add(&mut s, 400, "pre-tool-use", RETENTION_SLICE + 10);
        add(&mut s, 400, "post-tool-use", 20);
        add(&mut s, 400, "post-tool-use-failure", 3);
        add(&mut s, 400, "user-prompt", 2);
        add(&mut s, 10, "pre-tool-use", 4);
        add(&mut s, 10, "post-tool-use", 4);
        let before = s.count().unwrap();
        let policy = Retention::default();
        let first = s.retention_slice(&policy, NOW).unwrap();
        assert_eq!(
            first.iter().sum::<u64>(),
            RETENTION_SLICE as u64,
            "one slice is bounded"
        );
        let mut total = first;
        loop {
            let more = s.retention_slice(&policy, NOW).unwrap();
            if more.iter().sum::<u64>() == 0 {
                break;
            }
            for i in 0..3 {
                total[i] += more[i];
            }
        }
        assert_eq!(total, [RETENTION_SLICE as u64 + 10, 20, 0]);
        assert_eq!(s.count().unwrap(), before - RETENTION_SLICE as u64 - 30);
        // The books: what went, per class, and the roll-ups.
        let removed = s.retention_removed().unwrap();
        assert_eq!(removed.records, total);
        assert_eq!(removed.last_ms, Some(NOW));
        let listed = s.browse_projects().unwrap();
        assert_eq!(listed[0].records, s.count().unwrap());
        assert_eq!(s.record_total().unwrap(), s.count().unwrap());
        let events: i64 = s
            .conn
            .query_row("SELECT events FROM sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(events as u64, s.count().unwrap());
        // The failure and the prompt of 400 days ago stay, and search no
        // longer finds what went.
        assert_eq!(s.oldest_ms().unwrap(), Some(day(400)));
        assert!(s.search(None, "zqxretained1", 5).unwrap().is_empty());
        let kept = format!("zqxretained{}", RETENTION_SLICE + 10 + 20 + 1);
        assert_eq!(s.search(None, &kept, 5).unwrap().len(), 1);
        s.conn
            .execute(
                "INSERT INTO records_fts (records_fts) VALUES ('integrity-check')",
                [],
            )
            .unwrap();
        // Everything else past 730 days goes too, with its session.
        let later = NOW + 400 * DAY_MS as u64;
        while s
            .retention_slice(&policy, later)
            .unwrap()
            .iter()
            .sum::<u64>()
            > 0
        {}
        assert_eq!(s.count().unwrap(), 0);
        assert_eq!(s.oldest_ms().unwrap(), None);
        assert!(s.browse_projects().unwrap().is_empty());
        // Keeping forever removes nothing.
        let forever = Retention { days: [0, 0, 0] };
        assert_eq!(s.retention_slice(&forever, later * 2).unwrap(), [0, 0, 0]);
    }
}
