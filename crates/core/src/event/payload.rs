//! Reading an agent's payload bytes into a JSON tree, bounded.
//!
//! Two things make a real payload differ from strict JSON or from what fits
//! in a hook's memory:
//! - Node cuts strings by UTF-16 code units, so a string cut mid-emoji ends
//!   in a lone surrogate escape (`"\ud83d"`), which strict JSON rejects.
//!   Each lone surrogate escape becomes `\ufffd` (U+FFFD) before parsing:
//!   the same six bytes, so the text is rewritten in place.
//! - A tree of every value costs tens of bytes per node: an 8 MiB array of
//!   zeros would be four million nodes (hundreds of MiB). The parser keeps
//!   at most [`MAX_NODES`] values below the top level and skips the rest
//!   (still checking their syntax), and at most [`MAX_MEMBERS`] top-level
//!   members. A record keeps a few KiB of a payload, so nothing it could
//!   show is lost.

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Most values kept below the payload's top level (the rest are skipped).
pub const MAX_NODES: usize = 64 * 1024;
/// Most top-level members kept (agents send a few dozen).
pub const MAX_MEMBERS: usize = 1024;

/// Why a payload could not be read. Never quotes the payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PayloadError {
    Empty,
    NotAnObject,
    /// Not JSON; the class of the error only (its message could quote bytes).
    Invalid(&'static str),
}

impl fmt::Display for PayloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PayloadError::Empty => write!(f, "the event payload on stdin is empty"),
            PayloadError::NotAnObject => write!(f, "the event payload is not a JSON object"),
            PayloadError::Invalid(class) => {
                write!(f, "the event payload is not valid JSON ({class})")
            }
        }
    }
}

impl std::error::Error for PayloadError {}

/// Parse an agent payload: one UTF-8 BOM stripped, lone surrogate escapes
/// replaced by U+FFFD, at most [`MAX_NODES`] nested values and
/// [`MAX_MEMBERS`] members kept. It must be a JSON object.
pub fn parse(bytes: &[u8]) -> Result<Value, PayloadError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let Some(first) = bytes.iter().find(|b| !b.is_ascii_whitespace()) else {
        return Err(PayloadError::Empty);
    };
    // Anything else is no agent event; say so without parsing it.
    if *first != b'{' {
        return match serde_json::from_slice::<IgnoredAny>(bytes) {
            Ok(_) => Err(PayloadError::NotAnObject),
            Err(e) => Err(PayloadError::Invalid(classify(&e))),
        };
    }
    let bytes = replace_lone_surrogates(bytes);
    let budget = Cell::new(MAX_NODES);
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    let v = de
        .deserialize_map(TopVisitor(&budget))
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| PayloadError::Invalid(classify(&e)))?;
    Ok(v)
}

/// Whether `bytes` hold a complete payload object (cheap: builds nothing).
pub fn is_complete_object(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return false;
    }
    serde_json::from_slice::<IgnoredAny>(&replace_lone_surrogates(bytes)).is_ok()
}

fn classify(e: &serde_json::Error) -> &'static str {
    use serde_json::error::Category;
    match e.classify() {
        Category::Io => "read error",
        Category::Syntax => "syntax error",
        Category::Data => "data error",
        Category::Eof => "truncated",
    }
}

/// `bytes` with every `\uXXXX` escape of an unpaired UTF-16 surrogate
/// replaced by `\ufffd` (same length). Borrowed when there is none.
/// Escapes are recognised only inside strings, after an odd run of
/// backslashes.
pub fn replace_lone_surrogates(bytes: &[u8]) -> Cow<'_, [u8]> {
    // The common case: no surrogate escape at all.
    if !has_surrogate_escape(bytes) {
        return Cow::Borrowed(bytes);
    }
    let mut out = bytes.to_vec();
    let mut in_string = false;
    let mut i = 0;
    while i < out.len() {
        match out[i] {
            b'"' => in_string = !in_string,
            b'\\' if in_string => {
                let Some(&next) = out.get(i + 1) else { break };
                if next != b'u' {
                    // `\"`, `\\`, `\n`, …: skip the escaped byte.
                    i += 2;
                    continue;
                }
                match surrogate_at(&out, i) {
                    Some(Surrogate::High) if surrogate_at(&out, i + 6) == Some(Surrogate::Low) => {
                        i += 12;
                        continue;
                    }
                    Some(_) => out[i + 2..i + 6].copy_from_slice(b"fffd"),
                    None => {}
                }
                i += 6;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    Cow::Owned(out)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surrogate {
    High,
    Low,
}

/// The surrogate half escaped as `\uXXXX` at `i`, if that is one.
fn surrogate_at(b: &[u8], i: usize) -> Option<Surrogate> {
    let esc = b.get(i..i + 6)?;
    if esc[0] != b'\\' || esc[1] != b'u' || !matches!(esc[2], b'd' | b'D') {
        return None;
    }
    let hex = std::str::from_utf8(&esc[2..6]).ok()?;
    let unit = u16::from_str_radix(hex, 16).ok()?;
    match unit {
        0xD800..=0xDBFF => Some(Surrogate::High),
        0xDC00..=0xDFFF => Some(Surrogate::Low),
        _ => None,
    }
}

fn has_surrogate_escape(bytes: &[u8]) -> bool {
    bytes
        .windows(3)
        .any(|w| w[0] == b'\\' && w[1] == b'u' && matches!(w[2], b'd' | b'D'))
}

/// The top-level object: at most [`MAX_MEMBERS`] members, each value read
/// with the shared node budget.
struct TopVisitor<'b>(&'b Cell<usize>);

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Value, A::Error> {
        read_map(m, self.0, |len| len < MAX_MEMBERS)
    }
}

/// Read an object's members while `more(members so far)` allows, each
/// value with the node budget; skip the rest.
fn read_map<'de, A: MapAccess<'de>>(
    mut m: A,
    budget: &Cell<usize>,
    mut more: impl FnMut(usize) -> bool,
) -> Result<Value, A::Error> {
    let mut out = Map::new();
    while more(out.len()) {
        let Some(k) = m.next_key::<String>()? else {
            return Ok(Value::Object(out));
        };
        let v = m.next_value_seed(Node { budget })?;
        out.insert(k, v);
    }
    while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(Value::Object(out))
}

/// One value below the top level; costs one unit of the budget, and once
/// the budget is spent, containers keep what they hold so far.
struct Node<'b> {
    budget: &'b Cell<usize>,
}

impl Node<'_> {
    /// Take one unit of the budget; false when none is left.
    fn take(&self) -> bool {
        let left = self.budget.get();
        if left == 0 {
            return false;
        }
        self.budget.set(left - 1);
        true
    }
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(NodeVisitor(self.budget))
    }
}

struct NodeVisitor<'b>(&'b Cell<usize>);

impl<'de> Visitor<'de> for NodeVisitor<'_> {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Value, A::Error> {
        let node = Node { budget: self.0 };
        let mut out = Vec::new();
        while node.take() {
            match s.next_element_seed(Node { budget: self.0 })? {
                Some(v) => out.push(v),
                None => return Ok(Value::Array(out)),
            }
        }
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<Value, A::Error> {
        let node = Node { budget: self.0 };
        read_map(m, self.0, |_| node.take())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_the_replacement_character() {
        let v = parse(br#"{"prompt":"cut \ud83d","b":"\udc00x","ok":"\ud83d\ude00"}"#).unwrap();
        assert_eq!(v["prompt"], "cut \u{fffd}");
        assert_eq!(v["b"], "\u{fffd}x");
        assert_eq!(v["ok"], "\u{1f600}");
        // A high half followed by another high half: both are lone.
        let v = parse(br#"{"p":"\uD83D\uD83D"}"#).unwrap();
        assert_eq!(v["p"], "\u{fffd}\u{fffd}");
        // An escaped backslash before `ud83d` is text, not an escape.
        let v = parse(br#"{"p":"\\ud83d"}"#).unwrap();
        assert_eq!(v["p"], "\\ud83d");
        // Keys too; and the early-accept check agrees.
        assert!(is_complete_object(br#"{"\ud83d":1}"#));
        assert_eq!(
            parse(br#"{"\ud83d":1}"#).unwrap()["\u{fffd}"],
            serde_json::json!(1)
        );
    }

    #[test]
    fn without_surrogates_the_bytes_are_borrowed() {
        assert!(matches!(
            replace_lone_surrogates(br#"{"a":"\u00e9"}"#),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn nested_values_past_the_budget_are_skipped_but_checked() {
        let mut s = String::from(r#"{"a":["#);
        for _ in 0..MAX_NODES + 10 {
            s.push_str("0,");
        }
        s.push_str(r#"0],"cwd":"/w"}"#);
        let v = parse(s.as_bytes()).unwrap();
        // The array holds what the budget allowed; later members are kept.
        assert_eq!(v["a"].as_array().unwrap().len(), MAX_NODES);
        assert_eq!(v["cwd"], "/w");
        // Skipped parts are still parsed: broken syntax there is an error.
        let broken = s.replace(r#"0],"cwd""#, r#"0,],"cwd""#);
        assert_eq!(
            parse(broken.as_bytes()),
            Err(PayloadError::Invalid("syntax error"))
        );
    }

    #[test]
    fn top_level_members_past_the_cap_are_skipped() {
        let mut s = String::from("{");
        for i in 0..MAX_MEMBERS + 5 {
            s.push_str(&format!(r#""k{i}":{i},"#));
        }
        s.push_str(r#""last":1}"#);
        let v = parse(s.as_bytes()).unwrap();
        assert_eq!(v.as_object().unwrap().len(), MAX_MEMBERS);
        assert!(v.get("last").is_none());
    }

    #[test]
    fn only_objects_are_payloads() {
        assert_eq!(parse(b" \n"), Err(PayloadError::Empty));
        assert_eq!(parse(b"\xEF\xBB\xBF{}"), Ok(serde_json::json!({})));
        assert_eq!(parse(b"[0,0,0]"), Err(PayloadError::NotAnObject));
        assert_eq!(parse(b"\"x\""), Err(PayloadError::NotAnObject));
        assert_eq!(parse(b"[0,"), Err(PayloadError::Invalid("truncated")));
        assert_eq!(parse(b"{} x"), Err(PayloadError::Invalid("syntax error")));
        assert!(!is_complete_object(b"[0]"));
        assert!(!is_complete_object(b"{\"a\":"));
    }
}
