//! An agent's JSON file, read and edited in the dialect the agent itself
//! reads (the profile's `json`: comments, trailing commas, a byte-order
//! mark). Edits go through jsonc-parser's concrete syntax tree, so every
//! comment, the key order, the indentation and the line endings outside
//! memhook's own keys stay as they were, new members take the file's own
//! indentation and line ending, and removing what an install appended gives
//! the original bytes back.

use super::apply::{line_col, InstallError};
use super::profile::JsonSyntax;
use jsonc_parser::cst::{CstInputValue, CstNode, CstObject, CstRootNode};
use jsonc_parser::errors::ParseErrorKind;
use jsonc_parser::{CollectOptions, ParseOptions};
use serde_json::{Map, Value};
use std::path::Path;

/// The UTF-8 byte-order mark.
const BOM: char = '\u{feff}';
/// What a missing or blank file is edited from.
const EMPTY: &str = "{}\n";

/// A parsed JSON(C) document whose root is an object.
pub struct Doc {
    bom: bool,
    root: CstRootNode,
}

impl Doc {
    /// Parse `text` (`None`: the file does not exist) as `agent` would read
    /// it, or refuse naming the file, line, column and the fix.
    pub fn parse(
        path: &Path,
        text: Option<&str>,
        syntax: JsonSyntax,
        agent: &str,
    ) -> Result<Doc, InstallError> {
        let text = text.unwrap_or("");
        let (bom, body) = match text.strip_prefix(BOM) {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let refuse = |offset: usize, message: String| {
            // Counted in the text after the BOM, as an editor shows it.
            let (line, column) = line_col(body, offset);
            InstallError::Malformed {
                path: path.to_path_buf(),
                line,
                column,
                message,
            }
        };
        if bom && !syntax.bom {
            return Err(InstallError::Malformed {
                path: path.to_path_buf(),
                line: 1,
                column: 1,
                message: format!(
                    "the file starts with a byte-order mark, which {agent} cannot read either; save it as UTF-8 without a BOM"
                ),
            });
        }
        let body = if body.trim().is_empty() { EMPTY } else { body };
        let options = ParseOptions {
            allow_comments: syntax.comments,
            allow_trailing_commas: syntax.trailing_commas,
            allow_loose_object_property_names: false,
            allow_missing_commas: false,
            allow_single_quoted_strings: false,
            allow_hexadecimal_numbers: false,
            allow_unary_plus_numbers: false,
            allow_bare_decimal_point_numbers: false,
            allow_non_finite_numbers: false,
            allow_extended_string_escapes: false,
        };
        // The AST parse enforces the dialect (the CST keeps comments as
        // tokens whatever the options say).
        let ast = jsonc_parser::parse_to_ast(body, &CollectOptions::default(), &options)
            .map_err(|e| refuse(e.range().start, explain(e.kind(), agent)))?;
        if !matches!(ast.value, Some(jsonc_parser::ast::Value::Object(_))) {
            let at = body.len() - body.trim_start().len();
            return Err(refuse(
                at,
                "the top level is not an object; expected `{ … }`".into(),
            ));
        }
        let root = CstRootNode::parse(body, &options)
            .map_err(|e| refuse(e.range().start, explain(e.kind(), agent)))?;
        Ok(Doc { bom, root })
    }

    /// The root object.
    pub fn root(&self) -> CstObject {
        self.root
            .object_value()
            .expect("parse checked the root is an object")
    }

    /// The document as plain JSON values (comments dropped), for reading.
    pub fn value(&self) -> Map<String, Value> {
        match self.root().to_serde_value() {
            Some(Value::Object(m)) => m,
            _ => Map::new(),
        }
    }

    /// The text, byte-order mark included when the file had one.
    pub fn render(&self) -> String {
        let body = self.root.to_string();
        if self.bom {
            format!("{BOM}{body}")
        } else {
            body
        }
    }
}

/// A parser complaint phrased for the user, with the fix for the dialect
/// errors (the agent rejects the same thing).
fn explain(kind: &ParseErrorKind, agent: &str) -> String {
    match kind {
        ParseErrorKind::CommentsNotAllowed => format!(
            "a comment, but {agent} reads this file as strict JSON and would skip it; remove the comment"
        ),
        ParseErrorKind::TrailingCommasNotAllowed => format!(
            "a trailing comma, which {agent} cannot read either; remove the comma after the last member"
        ),
        other => other.to_string(),
    }
}

/// The plain value of a node (`Null` for one that has none).
pub fn value_of(node: &CstNode) -> Value {
    node.to_serde_value().unwrap_or(Value::Null)
}

/// A value to insert, from a plain JSON value (object keys keep their order).
pub fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GEMINI: JsonSyntax = JsonSyntax {
        comments: true,
        trailing_commas: false,
        bom: false,
    };
    const STRICT_BOM: JsonSyntax = JsonSyntax {
        comments: false,
        trailing_commas: false,
        bom: true,
    };

    fn refused(text: &str, syntax: JsonSyntax) -> (usize, usize, String) {
        match Doc::parse(Path::new("/s.json"), Some(text), syntax, "Agent") {
            Err(InstallError::Malformed {
                line,
                column,
                message,
                ..
            }) => (line, column, message),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("accepted {text:?}"),
        }
    }

    #[test]
    fn each_dialect_refuses_what_its_agent_refuses() {
        let (l, c, m) = refused("{\n  \"a\": 1,\n}\n", GEMINI);
        assert_eq!((l, c), (2, 9));
        assert!(m.contains("trailing comma") && m.contains("Agent"), "{m}");
        let (l, c, m) = refused("{\n  // note\n  \"a\": 1\n}\n", STRICT_BOM);
        assert_eq!((l, c), (2, 3));
        assert!(m.contains("remove the comment"), "{m}");
        let (l, c, m) = refused("\u{feff}{}", GEMINI);
        assert_eq!((l, c), (1, 1));
        assert!(m.contains("byte-order mark"), "{m}");
        // Positions count the BOM as the first character of line 1.
        let (l, c, _) = refused("\u{feff}{\"a\":1,}", JsonSyntax::default());
        assert_eq!((l, c), (1, 1));
        let (l, c, _) = refused("\u{feff}{\"a\" 1}", STRICT_BOM);
        assert_eq!((l, c), (1, 6));
        let (_, _, m) = refused("[]", GEMINI);
        assert!(m.contains("not an object"), "{m}");
        assert!(refused("{\"a\":1} x", GEMINI).2.contains("more than one"));
    }

    #[test]
    fn accepted_text_renders_unchanged() {
        for (text, syntax) in [
            ("{\r\n  // c\r\n  \"a\": [1, /* x */ 2]\r\n}\r\n", GEMINI),
            ("\u{feff}{\n  \"a\": 1\n}", STRICT_BOM),
            (
                "{\"a\":[1,],}",
                JsonSyntax {
                    comments: true,
                    trailing_commas: true,
                    bom: false,
                },
            ),
        ] {
            let doc = Doc::parse(Path::new("/s.json"), Some(text), syntax, "A").unwrap();
            assert_eq!(doc.render(), text);
        }
        let blank = Doc::parse(Path::new("/s.json"), Some("  \n"), GEMINI, "A").unwrap();
        assert_eq!(blank.render(), "{}\n");
        assert!(blank.value().is_empty());
    }

    #[test]
    fn appended_members_take_the_file_layout_and_come_out_again() {
        let text = "\u{feff}{\r\n\t\"a\": 1 // keep\r\n}\r\n";
        let all = JsonSyntax {
            comments: true,
            trailing_commas: false,
            bom: true,
        };
        let doc = Doc::parse(Path::new("/s.json"), Some(text), all, "A").unwrap();
        let prop = doc
            .root()
            .append("hooks", input(&serde_json::json!({"Stop": []})));
        let out = doc.render();
        assert_eq!(
            out,
            "\u{feff}{\r\n\t\"a\": 1, // keep\r\n\t\"hooks\": {\r\n\t\t\"Stop\": []\r\n\t}\r\n}\r\n"
        );
        prop.remove();
        assert_eq!(doc.render(), text);
    }
}
