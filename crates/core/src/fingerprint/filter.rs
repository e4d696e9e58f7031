//! Removing the lines of excluded files from a kept text: each line is
//! looked at through its views ([`lines::view_starts`]), each view's core
//! is checked against the set's line fingerprints, and a long line's every
//! piece against its piece fingerprints. A line that matches is replaced;
//! consecutive removed lines become one marker line.

use super::lines::{self, KGRAM_BYTES};
use super::set::FpSet;
use super::sip::SipKey;

/// What replaces a run of removed lines.
pub const REMOVED: &str = "[removed: matches a file this project excludes]";

/// `text` without the lines that match `set`, and how many were removed;
/// `None` when nothing matched (the text stays as it is).
pub fn filter(set: &FpSet, key: &SipKey, text: &str) -> Option<(String, usize)> {
    if set.is_empty() {
        return None;
    }
    let mut buf = Vec::new();
    let mut out = String::with_capacity(text.len());
    let mut removed = 0usize;
    let mut in_run = false;
    let mut first = true;
    for line in lines::lines(text) {
        let hit = matches(set, key, line, &mut buf)
            || lines::unescaped_lines(line)
                .is_some_and(|ls| ls.iter().any(|l| matches(set, key, l, &mut buf)));
        if hit {
            removed += 1;
            if in_run {
                continue;
            }
            in_run = true;
        } else {
            in_run = false;
        }
        if !first {
            out.push('\n');
        }
        first = false;
        out.push_str(if hit { REMOVED } else { line });
    }
    (removed > 0).then_some((out, removed))
}

/// Whether one line holds a line (or a long line's piece) of the set.
pub fn matches(set: &FpSet, key: &SipKey, line: &str, buf: &mut Vec<u8>) -> bool {
    let raw = line.as_bytes();
    lines::squeeze(raw, buf);
    let end = lines::core_end(buf);
    for start in lines::view_starts(line, buf) {
        if start < end {
            let view = &buf[start..end];
            if lines::identifying(view) && set.has_line(key.hash(view)) {
                return true;
            }
        }
    }
    if set.has_pieces() && buf.len() >= KGRAM_BYTES {
        return buf.windows(KGRAM_BYTES).any(|w| set.has_piece(key.hash(w)));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::super::set::Builder;
    use super::*;

    const SECRET: &str = "\
# production settings
DB_PASSWORD=hunter2-horse-battery-staple
customer: Alice Smith, 42 Elm Street, Springfield
}
import os
SIGNING_KEY = \"c2VjcmV0LXNpZ25pbmcta2V5LWZvci1wcm9kdWN0aW9uLXVzZS1vbmx5LWRvLW5vdC1zaGFyZQ==\"
";

    fn set() -> (SipKey, FpSet) {
        let k = SipKey::from_bytes(&[9; 16]);
        let mut b = Builder::new(&k);
        b.add_excluded(SECRET.as_bytes());
        let s = b.finish([0; 16], true);
        (k, s)
    }

    fn kept(text: &str) -> String {
        let (k, s) = set();
        match filter(&s, &k, text) {
            Some((t, _)) => t,
            None => text.to_string(),
        }
    }

    #[test]
    fn every_way_a_tool_shows_a_line_is_removed() {
        let shown = [
            "DB_PASSWORD=hunter2-horse-battery-staple",
            "     2\u{2192}DB_PASSWORD=hunter2-horse-battery-staple",
            "+DB_PASSWORD=hunter2-horse-battery-staple",
            "-    DB_PASSWORD = hunter2-horse-battery-staple",
            "| + DB_PASSWORD=hunter2-horse-battery-staple",
            "config/prod.env:2:DB_PASSWORD=hunter2-horse-battery-staple",
            "Output: DB_PASSWORD=hunter2-horse-battery-staple",
            "DB_PASSWORD=hunter2-horse-battery-staple$",
            "     2\tcustomer: Alice Smith, 42 Elm Street, Springfield",
            "> customer: Alice Smith, 42 Elm Street, Springfield",
            r#"{"content":[{"type":"text","text":"x\nDB_PASSWORD=hunter2-horse-battery-staple\n"}]}"#,
            // A piece of a long line, cut by an excerpt's cap.
            "SIGNING_KEY = \"c2VjcmV0LXNpZ25pbmcta2V5LWZvci1wcm9kdWN0aW9uLX…",
            // The long line inside a longer one.
            "echo export SIGNING_KEY=c2VjcmV0LXNpZ25pbmcta2V5LWZvci1wcm9kdWN0aW9uLXVzZS1vbmx5LWRvLW5vdC1zaGFyZQ== >> ~/.profile",
        ];
        for s in shown {
            let text = format!("before the line\n{s}\nafter the line");
            let got = kept(&text);
            assert_eq!(
                got,
                format!("before the line\n{REMOVED}\nafter the line"),
                "{s:?}"
            );
        }
    }

    #[test]
    fn ordinary_text_and_too_common_lines_survive() {
        let text = "}\nimport os\n# production\nDB_PASSWORD is read from the environment\ncustomer records live in the database";
        assert_eq!(kept(text), text);
    }

    #[test]
    fn a_run_of_removed_lines_becomes_one_marker() {
        let text = "DB_PASSWORD=hunter2-horse-battery-staple\ncustomer: Alice Smith, 42 Elm Street, Springfield\nok";
        let (k, s) = set();
        let (t, n) = filter(&s, &k, text).unwrap();
        assert_eq!(n, 2);
        assert_eq!(t, format!("{REMOVED}\nok"));
    }
}
