//! Moving memory between machines: `memhook export` writes every stored
//! record as one JSON line, `memhook import` reads such lines into the
//! local store or a server. The line format is [`Line`], version
//! [`FORMAT_VERSION`], documented in `docs/team.md`.
//!
//! A line holds what the store holds for a record and nothing it derives:
//! key, time, scope, session, agent, event, tool, disposition, title,
//! excerpt, files and the delivering token's name. Project and session
//! roll-ups are recomputed from the records on import, so a store made by
//! importing a file is the store the file was exported from, whatever the
//! order or number of imports.

pub mod export;
pub mod import;

use std::io::BufRead;

use serde::{Deserialize, Serialize};

use memhook_core::record::{Record, RecordScope, RecordTool, RECORD_VERSION};
use memhook_store::sqlite::StoredRecord;

/// The line format written by this build (`"v"` of every line).
pub const FORMAT_VERSION: u32 = 1;
/// Longest line `import` reads, newline excluded; a longer line is
/// reported and skipped. A record's texts are bounded far below it (16 KiB
/// excerpt, 64 paths of 4 KiB), even with every byte JSON-escaped.
pub const MAX_LINE_BYTES: usize = 2 * 1024 * 1024;
/// The `workspace_source` / `project_source` an imported record carries
/// (the store does not keep where a scope came from).
pub const IMPORT_SOURCE: &str = "import";

/// One exported record. Members in this order; `null` for an absent value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Line {
    pub v: u32,
    pub key: String,
    /// RFC 3339 UTC with milliseconds: the time the hook saw the event.
    pub occurred_at: String,
    pub workspace: String,
    pub project: String,
    pub agent: String,
    pub event: String,
    pub native_event: String,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub subagent: bool,
    #[serde(default)]
    pub tool_family: Option<String>,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_call_id: Option<String>,
    #[serde(default)]
    pub outcome: Option<String>,
    pub disposition: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub body: Option<String>,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub token_name: Option<String>,
    /// Optional members, written only when set (a line without them is the
    /// line an earlier memhook wrote): the record's `tool.exit_code`,
    /// `command` and `plan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<memhook_core::record::RecordPlan>,
}

impl Line {
    /// The line for a stored record.
    pub fn of(r: StoredRecord, extras: memhook_store::model::RecordExtras) -> Line {
        Line {
            v: FORMAT_VERSION,
            key: r.key,
            occurred_at: memhook_core::timefmt::rfc3339_ms(r.occurred_ms),
            workspace: r.workspace,
            project: r.project,
            agent: r.agent,
            event: r.event,
            native_event: r.native_event,
            session_id: r.session_id,
            cwd: r.cwd,
            subagent: r.subagent,
            tool_family: r.tool_family,
            tool_name: r.tool_name,
            tool_call_id: r.tool_call_id,
            outcome: r.outcome,
            disposition: r.disposition,
            title: r.title,
            body: r.body,
            files: r.files,
            token_name: r.token_name,
            exit_code: extras.exit_code,
            command: extras.command,
            plan: extras.plan,
        }
    }

    /// Read one line of text: its version first (a newer format is named
    /// as such), then every member, strictly (unknown members are errors).
    pub fn parse(text: &str) -> Result<Line, String> {
        #[derive(Deserialize)]
        struct Version {
            v: Option<u32>,
        }
        let version: Version =
            serde_json::from_str(text).map_err(|e| format!("not a JSON object: {e}"))?;
        match version.v {
            None => return Err("no `\"v\"` member: not a memhook export line".into()),
            Some(v) if v > FORMAT_VERSION => {
                return Err(format!(
                    "format v{v} is newer than this memhook reads (v{FORMAT_VERSION}); \
                     upgrade memhook"
                ))
            }
            Some(_) => {}
        }
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// The record this line describes, and the name of the token that
    /// delivered it. Not yet cleaned: see `memhook_core::record::check::admit_imported`.
    pub fn into_record(self) -> Result<(Record, Option<String>), String> {
        let occurred_ms =
            memhook_core::timefmt::parse_utc_ms(&self.occurred_at).ok_or_else(|| {
                format!(
                    "`occurred_at` {:?} is not a UTC time like 2026-01-31T09:15:00.000Z",
                    memhook_core::term::line(&self.occurred_at)
                )
            })?;
        if let Some(n) = &self.token_name {
            if n != memhook_store::tokens::OWNER {
                memhook_store::tokens::check_name(n).map_err(|e| format!("`token_name`: {e}"))?;
            }
        }
        let tool = match self.tool_family {
            Some(family) => Some(RecordTool {
                family,
                name: self.tool_name,
                call_id: self.tool_call_id,
                outcome: self.outcome,
                exit_code: self.exit_code,
            }),
            None if self.tool_name.is_some()
                || self.tool_call_id.is_some()
                || self.outcome.is_some()
                || self.exit_code.is_some() =>
            {
                return Err("`tool_name`, `tool_call_id` or `outcome` without `tool_family`".into())
            }
            None => None,
        };
        let record = Record {
            v: RECORD_VERSION,
            key: self.key,
            occurred_ms,
            agent: self.agent,
            event: self.event,
            native_event: self.native_event,
            session_id: self.session_id,
            cwd: self.cwd,
            scope: RecordScope {
                workspace: self.workspace,
                project: self.project,
                workspace_source: IMPORT_SOURCE.into(),
                project_source: IMPORT_SOURCE.into(),
                project_strategy: "basename".into(),
                drop_subagent: false,
                default_global: false,
                briefing: false,
                briefing_budget: memhook_core::scope::MAX_CHARS_DEFAULT,
            },
            subagent: self.subagent,
            tool,
            capture: None,
            disposition: self.disposition,
            title: self.title,
            body: self.body,
            files: self.files,
            command: self.command,
            plan: self.plan,
        };
        Ok((record, self.token_name))
    }
}

/// One line of input: its number (from 1) and its text, or why it cannot
/// be read (too long, not UTF-8). Blank lines are skipped.
pub type NumberedLine = (u64, Result<String, String>);

/// The lines of `input`, each at most [`MAX_LINE_BYTES`]: a longer line is
/// reported and skipped without being held in memory. `Err` on a read error.
pub struct Lines<R> {
    input: R,
    number: u64,
    buf: Vec<u8>,
}

impl<R: BufRead> Lines<R> {
    pub fn new(input: R) -> Lines<R> {
        Lines {
            input,
            number: 0,
            buf: Vec::new(),
        }
    }

    /// The next line, `Ok(None)` at the end.
    pub fn next_line(&mut self) -> std::io::Result<Option<NumberedLine>> {
        loop {
            self.buf.clear();
            let n = <&mut R as std::io::Read>::take(&mut self.input, MAX_LINE_BYTES as u64 + 1)
                .read_until(b'\n', &mut self.buf)?;
            if n == 0 {
                return Ok(None);
            }
            self.number += 1;
            let ended = self.buf.last() == Some(&b'\n');
            if ended {
                self.buf.pop();
                if self.buf.last() == Some(&b'\r') {
                    self.buf.pop();
                }
            }
            if self.buf.len() > MAX_LINE_BYTES {
                if !ended {
                    self.skip_rest()?;
                }
                return Ok(Some((
                    self.number,
                    Err(format!("longer than {MAX_LINE_BYTES} bytes")),
                )));
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let text = match std::str::from_utf8(&self.buf) {
                Ok(t) => Ok(t.to_string()),
                Err(_) => Err("not UTF-8".to_string()),
            };
            return Ok(Some((self.number, text)));
        }
    }

    /// Read past the rest of an over-long line.
    fn skip_rest(&mut self) -> std::io::Result<()> {
        loop {
            let chunk = self.input.fill_buf()?;
            if chunk.is_empty() {
                return Ok(());
            }
            match chunk.iter().position(|&b| b == b'\n') {
                Some(i) => {
                    self.input.consume(i + 1);
                    return Ok(());
                }
                None => {
                    let n = chunk.len();
                    self.input.consume(n);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Vec<NumberedLine> {
        let mut l = Lines::new(input);
        let mut out = Vec::new();
        while let Some(x) = l.next_line().unwrap() {
            out.push(x);
        }
        out
    }

    #[test]
    fn lines_are_numbered_bounded_at_their_edge_and_blank_ones_skipped() {
        let edge = "x".repeat(MAX_LINE_BYTES);
        let over = "y".repeat(MAX_LINE_BYTES + 1);
        let input = format!("a\n\n  \r\n{edge}\n{over}\nb\r\n\u{e9}");
        let mut bytes = input.into_bytes();
        bytes.extend_from_slice(b"\n\xff\n");
        let got = all(&bytes);
        let nums: Vec<u64> = got.iter().map(|(n, _)| *n).collect();
        assert_eq!(nums, [1, 4, 5, 6, 7, 8]);
        assert_eq!(got[0].1.as_deref(), Ok("a"));
        assert_eq!(got[1].1.as_ref().map(String::len), Ok(MAX_LINE_BYTES));
        assert!(got[2].1.as_ref().unwrap_err().contains("longer than"));
        assert_eq!(got[3].1.as_deref(), Ok("b"));
        assert_eq!(got[4].1.as_deref(), Ok("\u{e9}"));
        assert_eq!(got[5].1, Err("not UTF-8".to_string()));
        // An over-long last line without a newline ends the input cleanly.
        let got = all(over.as_bytes());
        assert_eq!(got.len(), 1);
        assert!(got[0].1.is_err());
    }

    fn sample_line() -> Line {
        Line {
            v: 1,
            key: "0123456789abcdef0123456789abcdef".into(),
            occurred_at: "2026-01-31T09:15:00.123Z".into(),
            workspace: "acme".into(),
            project: "api".into(),
            agent: "codex".into(),
            event: "post-tool-use".into(),
            native_event: "PostToolUse".into(),
            session_id: Some("s".into()),
            cwd: Some("/w".into()),
            subagent: false,
            tool_family: Some("shell".into()),
            tool_name: Some("Bash".into()),
            tool_call_id: Some("c1".into()),
            outcome: Some("success".into()),
            disposition: "keep".into(),
            title: Some("t".into()),
            body: Some("b".into()),
            files: vec![],
            token_name: Some("alice".into()),
            exit_code: None,
            command: None,
            plan: None,
        }
    }

    /// The record fields added with schema 4 travel when set; a line
    /// without them is written exactly as before.
    #[test]
    fn command_exit_status_and_plan_travel_only_when_set() {
        let plain = serde_json::to_string(&sample_line()).unwrap();
        assert!(!plain.contains("exit_code") && !plain.contains("command"));
        let mut l = sample_line();
        l.exit_code = Some(2);
        l.command = Some("cargo test".into());
        l.plan = Some(memhook_core::record::RecordPlan {
            full: true,
            items: vec![memhook_core::record::PlanItem {
                id: None,
                text: Some("ship".into()),
                status: "pending".into(),
            }],
        });
        let text = serde_json::to_string(&l).unwrap();
        assert_eq!(Line::parse(&text).unwrap(), l);
        let (r, _) = l.clone().into_record().unwrap();
        assert_eq!(r.tool.unwrap().exit_code, Some(2));
        assert_eq!(r.command.as_deref(), Some("cargo test"));
        assert_eq!(r.plan, l.plan);
    }

    #[test]
    fn lines_round_trip_and_refuse_what_they_do_not_know() {
        let l = sample_line();
        let text = serde_json::to_string(&l).unwrap();
        assert!(text.starts_with("{\"v\":1,\"key\":"), "{text}");
        assert_eq!(Line::parse(&text).unwrap(), l);
        let (r, token) = l.clone().into_record().unwrap();
        assert_eq!(r.occurred_ms, 1_769_850_900_123);
        assert_eq!(token.as_deref(), Some("alice"));
        assert_eq!(r.tool.unwrap().call_id.as_deref(), Some("c1"));
        let newer = text.replacen("\"v\":1", "\"v\":2", 1);
        assert!(Line::parse(&newer).unwrap_err().contains("newer"));
        let extra = text.replacen("{", "{\"surprise\":1,", 1);
        assert!(Line::parse(&extra).unwrap_err().contains("surprise"));
        assert!(Line::parse("{}").unwrap_err().contains("\"v\""));
        assert!(Line::parse("[1]").is_err());
        let mut bad = l.clone();
        bad.occurred_at = "yesterday".into();
        assert!(bad.into_record().unwrap_err().contains("occurred_at"));
        let mut bad = l.clone();
        bad.token_name = Some("Not A Name".into());
        assert!(bad.into_record().unwrap_err().contains("token_name"));
        let mut owner = l.clone();
        owner.token_name = Some(memhook_store::tokens::OWNER.into());
        assert!(owner.into_record().is_ok());
        let mut bad = l;
        bad.tool_family = None;
        assert!(bad.into_record().unwrap_err().contains("tool_family"));
    }
}
