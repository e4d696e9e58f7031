//! Tool calls folded into their results, for every listing of records
//! (`memhook recent`, the web view's session page): a pre-tool-use record
//! keeps only the tool and its call id (DESIGN §4), so once its result (a
//! post-tool-use or post-tool-use-failure record of the same session and
//! call id) is listed, the call says nothing the result does not.

use std::collections::BTreeSet;

use crate::model::{RecordRow, StoredRecord};

/// What folding needs to know of a listed record.
pub trait ToolCall {
    fn event(&self) -> &str;
    /// The agent's session id (`None`: all of one session, or unknown).
    fn session(&self) -> Option<&str>;
    fn call_id(&self) -> Option<&str>;
}

impl ToolCall for StoredRecord {
    fn event(&self) -> &str {
        &self.event
    }
    fn session(&self) -> Option<&str> {
        self.session_id.as_deref()
    }
    fn call_id(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }
}

/// A session page's records are all of one session.
impl ToolCall for RecordRow {
    fn event(&self) -> &str {
        &self.event
    }
    fn session(&self) -> Option<&str> {
        None
    }
    fn call_id(&self) -> Option<&str> {
        self.tool_call_id.as_deref()
    }
}

/// Whether `event` is a tool result.
pub fn is_result(event: &str) -> bool {
    event == "post-tool-use" || event == "post-tool-use-failure"
}

/// Drop the pre-tool-use records whose result is in `records`, in either
/// order (newest or oldest first). A call without an id, or whose result
/// has not arrived, stays: it is the only sign of a call in flight.
pub fn fold_calls<T: ToolCall>(records: Vec<T>) -> Vec<T> {
    let results: BTreeSet<(Option<String>, String)> = records
        .iter()
        .filter(|r| is_result(r.event()))
        .filter_map(|r| Some((r.session().map(str::to_string), r.call_id()?.to_string())))
        .collect();
    records
        .into_iter()
        .filter(|r| {
            r.event() != "pre-tool-use"
                || r.call_id().is_none_or(|c| {
                    !results.contains(&(r.session().map(str::to_string), c.to_string()))
                })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(event: &str, call: Option<&str>) -> RecordRow {
        RecordRow {
            key: format!("{event}-{call:?}"),
            occurred_ms: 0,
            agent: "claude-code".into(),
            event: event.into(),
            tool_family: None,
            tool_name: None,
            outcome: None,
            failed: false,
            files: Vec::new(),
            title: None,
            excerpt: None,
            cut: false,
            tool_call_id: call.map(str::to_string),
            exit_code: None,
            command: None,
        }
    }

    #[test]
    fn a_call_folds_into_its_result_and_a_call_in_flight_stays() {
        let rows = vec![
            row("user-prompt", None),
            row("pre-tool-use", Some("c1")),
            row("post-tool-use", Some("c1")),
            row("pre-tool-use", Some("c2")),
            row("post-tool-use-failure", Some("c2")),
            row("pre-tool-use", Some("c3")),
            row("pre-tool-use", None),
        ];
        let events: Vec<(String, Option<String>)> = fold_calls(rows)
            .into_iter()
            .map(|r| (r.event, r.tool_call_id))
            .collect();
        let want = [
            ("user-prompt", None),
            ("post-tool-use", Some("c1")),
            ("post-tool-use-failure", Some("c2")),
            ("pre-tool-use", Some("c3")),
            ("pre-tool-use", None),
        ];
        let want: Vec<(String, Option<String>)> = want
            .iter()
            .map(|(e, c)| (e.to_string(), c.map(str::to_string)))
            .collect();
        assert_eq!(events, want);
    }
}
