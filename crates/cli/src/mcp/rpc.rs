//! JSON-RPC 2.0 over newline-delimited stdio, as MCP's stdio transport uses
//! it: one message per line, a reply per request, nothing for
//! notifications, and the standard error codes for anything malformed.

use std::io::{self, BufRead, Write};

use serde_json::{json, Map, Value};

use super::tools::{self, Context};

/// Protocol versions this server speaks, newest first.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];
/// Longest accepted line (a 100 KiB document escaped as JSON fits easily).
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

/// What the model is told when it connects.
pub const INSTRUCTIONS: &str = "This server holds the project's memory: Markdown documents that persist \
across sessions, with /MEMORY.md as their index (shown at session start). Treat memory as background: \
the user's current instructions and the working tree win, so verify before relying on a note. Save only \
lasting, reusable knowledge (decisions, conventions, pitfalls, how to build and test), dated when it may \
change; no logs, transcripts or secrets. Writes replace a whole document and need the version you read \
(or \"new\"); on a conflict, merge with the returned current content and retry. Add one line per new \
document to /MEMORY.md and keep the rest of the index intact. memory_search also finds what past \
sessions did.";

/// One line read from the transport.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Text(Vec<u8>),
    /// Longer than [`MAX_LINE_BYTES`]; its bytes were discarded.
    TooLong,
}

/// Read one line of at most `max` bytes (without the newline). `None` at
/// end of input. An over-long line is consumed to its end and reported.
pub fn read_line(r: &mut impl BufRead, max: usize) -> io::Result<Option<Line>> {
    let mut buf = Vec::new();
    let mut too_long = false;
    let mut any = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        any = true;
        let (take, done) = match chunk.iter().position(|&b| b == b'\n') {
            Some(i) => (i, true),
            None => (chunk.len(), false),
        };
        if !too_long {
            if buf.len() + take > max {
                too_long = true;
                buf = Vec::new();
            } else {
                buf.extend_from_slice(&chunk[..take]);
            }
        }
        r.consume(if done { take + 1 } else { take });
        if done {
            break;
        }
    }
    Ok(match (any, too_long) {
        (false, _) => None,
        (true, true) => Some(Line::TooLong),
        (true, false) => Some(Line::Text(buf)),
    })
}

/// The protocol state: the tool context and the negotiated version.
pub struct Server<'a> {
    pub ctx: Context<'a>,
    pub negotiated: Option<&'static str>,
}

fn error(id: Value, code: i64, message: impl Into<String>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message.into()}})
}

fn reply(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

impl<'a> Server<'a> {
    pub fn new(ctx: Context<'a>) -> Server<'a> {
        Server {
            ctx,
            negotiated: None,
        }
    }

    /// Serve until end of input; replies go to `out`, one per line, flushed.
    pub fn serve(&mut self, input: &mut impl BufRead, out: &mut impl Write) -> io::Result<()> {
        while let Some(line) = read_line(input, MAX_LINE_BYTES)? {
            let response = match line {
                Line::TooLong => Some(error(
                    Value::Null,
                    INVALID_REQUEST,
                    format!("message longer than {MAX_LINE_BYTES} bytes"),
                )),
                Line::Text(bytes) => self.handle_line(&bytes),
            };
            if let Some(v) = response {
                let mut text = serde_json::to_vec(&v).expect("responses serialise");
                text.push(b'\n');
                out.write_all(&text)?;
                out.flush()?;
            }
        }
        Ok(())
    }

    /// Answer one line: `None` for blank lines, notifications and responses.
    pub fn handle_line(&mut self, bytes: &[u8]) -> Option<Value> {
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let msg: Value = match serde_json::from_slice(bytes) {
            Ok(v) => v,
            Err(e) => return Some(error(Value::Null, PARSE_ERROR, format!("parse error: {e}"))),
        };
        match msg {
            Value::Array(items) if items.is_empty() => Some(error(
                Value::Null,
                INVALID_REQUEST,
                "an empty batch is not a request",
            )),
            Value::Array(items) => {
                let replies: Vec<Value> = items.iter().filter_map(|m| self.handle(m)).collect();
                (!replies.is_empty()).then_some(Value::Array(replies))
            }
            other => self.handle(&other),
        }
    }

    /// Answer one message.
    fn handle(&mut self, msg: &Value) -> Option<Value> {
        let Some(obj) = msg.as_object() else {
            return Some(error(
                Value::Null,
                INVALID_REQUEST,
                "a message must be a JSON object",
            ));
        };
        let id = match obj.get("id") {
            None => None,
            Some(v @ (Value::String(_) | Value::Number(_))) => Some(v.clone()),
            Some(_) => {
                return Some(error(
                    Value::Null,
                    INVALID_REQUEST,
                    "id must be a string or a number",
                ))
            }
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some(error(
                id.unwrap_or(Value::Null),
                INVALID_REQUEST,
                "jsonrpc must be \"2.0\"",
            ));
        }
        let method = match obj.get("method") {
            Some(Value::String(m)) => m.as_str(),
            // A response to a request we never send: nothing to do.
            None if obj.contains_key("result") || obj.contains_key("error") => return None,
            _ => {
                return Some(error(
                    id.unwrap_or(Value::Null),
                    INVALID_REQUEST,
                    "method must be a string",
                ))
            }
        };
        // Notifications (initialized, cancelled, progress, …) need no reply.
        let id = id?;
        let empty = Map::new();
        let params = match obj.get("params") {
            None | Some(Value::Null) => &empty,
            Some(Value::Object(p)) => p,
            Some(_) => return Some(error(id, INVALID_PARAMS, "params must be an object")),
        };
        Some(match self.dispatch(method, params) {
            Ok(result) => reply(id, result),
            Err((code, message)) => error(id, code, message),
        })
    }

    fn dispatch(
        &mut self,
        method: &str,
        params: &Map<String, Value>,
    ) -> Result<Value, (i64, String)> {
        match method {
            "initialize" => {
                let asked = params.get("protocolVersion").and_then(Value::as_str);
                let version = PROTOCOL_VERSIONS
                    .iter()
                    .find(|v| Some(**v) == asked)
                    .copied()
                    .unwrap_or(PROTOCOL_VERSIONS[0]);
                self.negotiated = Some(version);
                Ok(json!({
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": false}},
                    "serverInfo": {"name": "memhook", "version": env!("CARGO_PKG_VERSION")},
                    "instructions": INSTRUCTIONS,
                }))
            }
            "ping" => Ok(json!({})),
            "tools/list" => Ok(tools::list()),
            "tools/call" => {
                let name = match params.get("name") {
                    Some(Value::String(n)) => n.as_str(),
                    _ => return Err((INVALID_PARAMS, "tools/call needs a string \"name\"".into())),
                };
                let empty = Map::new();
                let args = match params.get("arguments") {
                    None | Some(Value::Null) => &empty,
                    Some(Value::Object(a)) => a,
                    Some(_) => return Err((INVALID_PARAMS, "arguments must be an object".into())),
                };
                tools::call(&self.ctx, name, args)
                    .map(|answer| tools::result(&answer))
                    .map_err(|bad| (INVALID_PARAMS, bad.0))
            }
            other => Err((METHOD_NOT_FOUND, format!("method not found: {other:?}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::records::NoRecords;
    use memhook_store::memory::MemoryStore;

    fn with_server(f: impl FnOnce(&mut Server<'_>)) {
        let t = tempfile::tempdir().unwrap();
        let store = MemoryStore::new(t.path(), "acme", "api").unwrap();
        let ctx = Context {
            store: &store,
            records: &NoRecords,
            workspace: "acme",
            project: "api",
            default_global: false,
        };
        f(&mut Server::new(ctx));
    }

    fn code(v: &Value) -> i64 {
        v["error"]["code"].as_i64().unwrap()
    }

    #[test]
    fn negotiates_the_protocol_version() {
        with_server(|s| {
            for v in PROTOCOL_VERSIONS {
                let r = s
                    .handle_line(format!(r#"{{"jsonrpc":"2.0","id":1,"method":"initialize","params":{{"protocolVersion":"{v}"}}}}"#).as_bytes())
                    .unwrap();
                assert_eq!(r["result"]["protocolVersion"], json!(v));
            }
            let r = s
                .handle_line(br#"{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#)
                .unwrap();
            assert_eq!(r["id"], json!("a"));
            assert_eq!(r["result"]["protocolVersion"], json!(PROTOCOL_VERSIONS[0]));
            assert_eq!(r["result"]["serverInfo"]["name"], json!("memhook"));
            assert_eq!(
                r["result"]["capabilities"]["tools"]["listChanged"],
                json!(false)
            );
        });
    }

    #[test]
    fn error_codes() {
        with_server(|s| {
            assert_eq!(code(&s.handle_line(b"{not json").unwrap()), PARSE_ERROR);
            assert_eq!(s.handle_line(b"{not json").unwrap()["id"], Value::Null);
            assert_eq!(code(&s.handle_line(b"\xff\xfe").unwrap()), PARSE_ERROR);
            assert_eq!(code(&s.handle_line(b"42").unwrap()), INVALID_REQUEST);
            assert_eq!(code(&s.handle_line(b"[]").unwrap()), INVALID_REQUEST);
            assert_eq!(
                code(
                    &s.handle_line(br#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#)
                        .unwrap()
                ),
                INVALID_REQUEST
            );
            assert_eq!(
                code(
                    &s.handle_line(br#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#)
                        .unwrap()
                ),
                INVALID_REQUEST
            );
            assert_eq!(
                code(
                    &s.handle_line(br#"{"jsonrpc":"2.0","id":1,"method":7}"#)
                        .unwrap()
                ),
                INVALID_REQUEST
            );
            assert_eq!(
                code(
                    &s.handle_line(br#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#)
                        .unwrap()
                ),
                METHOD_NOT_FOUND
            );
            assert_eq!(
                code(
                    &s.handle_line(
                        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[1]}"#
                    )
                    .unwrap()
                ),
                INVALID_PARAMS
            );
            assert_eq!(
                code(
                    &s.handle_line(
                        br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}"#
                    )
                    .unwrap()
                ),
                INVALID_PARAMS
            );
            assert_eq!(code(&s.handle_line(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"memory_read","arguments":"x"}}"#).unwrap()), INVALID_PARAMS);
            assert_eq!(code(&s.handle_line(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"nope"}}"#).unwrap()), INVALID_PARAMS);
        });
    }

    #[test]
    fn notifications_responses_and_blank_lines_get_no_reply() {
        with_server(|s| {
            assert_eq!(s.handle_line(b""), None);
            assert_eq!(s.handle_line(b"  \r"), None);
            assert_eq!(
                s.handle_line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
                None
            );
            assert_eq!(
                s.handle_line(
                    br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"nope"}}"#
                ),
                None
            );
            assert_eq!(
                s.handle_line(br#"{"jsonrpc":"2.0","id":5,"result":{}}"#),
                None
            );
            let r = s
                .handle_line(br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#)
                .unwrap();
            assert_eq!(r, json!({"jsonrpc":"2.0","id":9,"result":{}}));
        });
    }

    #[test]
    fn batches_answer_each_request() {
        with_server(|s| {
            let r = s
                .handle_line(br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"x"},{"jsonrpc":"2.0","id":2,"method":"nope"}]"#)
                .unwrap();
            let a = r.as_array().unwrap();
            assert_eq!(a.len(), 2);
            assert_eq!(a[0]["id"], json!(1));
            assert_eq!(code(&a[1]), METHOD_NOT_FOUND);
            assert_eq!(s.handle_line(br#"[{"jsonrpc":"2.0","method":"x"}]"#), None);
        });
    }

    #[test]
    fn read_line_bounds_and_resynchronises() {
        let input = format!("{}\nsecond\n\nlast", "x".repeat(20));
        let mut r = io::BufReader::with_capacity(4, input.as_bytes());
        assert_eq!(read_line(&mut r, 10).unwrap(), Some(Line::TooLong));
        assert_eq!(
            read_line(&mut r, 10).unwrap(),
            Some(Line::Text(b"second".to_vec()))
        );
        assert_eq!(read_line(&mut r, 10).unwrap(), Some(Line::Text(Vec::new())));
        assert_eq!(
            read_line(&mut r, 10).unwrap(),
            Some(Line::Text(b"last".to_vec()))
        );
        assert_eq!(read_line(&mut r, 10).unwrap(), None);
        let exact = "y".repeat(10);
        let mut r = io::BufReader::new(exact.as_bytes());
        assert_eq!(
            read_line(&mut r, 10).unwrap(),
            Some(Line::Text(exact.into_bytes()))
        );
    }

    #[test]
    fn serve_writes_one_line_per_reply() {
        with_server(|s| {
            let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\nnope\n";
            let mut out = Vec::new();
            s.serve(&mut &input[..], &mut out).unwrap();
            let text = String::from_utf8(out).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 2);
            assert_eq!(code(&serde_json::from_str(lines[1]).unwrap()), PARSE_ERROR);
        });
    }
}
