//! Shell words: a POSIX-like splitter with no expansion, enough to find
//! every word that could name a file.
//!
//! Whitespace and `| & ; < > ( )` separate words; single and double quotes
//! group; inside double quotes `\"`, `\\`, `` \` `` and `\$` escape; outside
//! quotes a backslash escapes only whitespace, an operator, a quote or a
//! backslash (so `docs\adr\x.md` keeps its separators). Each word yields
//! itself (unless it starts with `-`) and the value after its first `=`
//! (`--out=x`, `NAME=x`).

fn is_op(c: char) -> bool {
    matches!(c, '|' | '&' | ';' | '<' | '>' | '(' | ')')
}

/// Split `line` into words.
pub fn split_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    cur.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => match chars.peek() {
                            Some(&e) if matches!(e, '"' | '\\' | '`' | '$') => {
                                cur.push(e);
                                chars.next();
                            }
                            _ => cur.push('\\'),
                        },
                        d => cur.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.peek() {
                    Some(&e) if e.is_whitespace() || is_op(e) || matches!(e, '\'' | '"' | '\\') => {
                        cur.push(e);
                        chars.next();
                    }
                    _ => cur.push('\\'),
                }
            }
            c if c.is_whitespace() || is_op(c) => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    words
}

/// The strings of `words` that could be paths: each word unless it starts
/// with `-`, and the value after a word's first `=`. Empty strings dropped.
pub fn candidates(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for w in words {
        if !w.starts_with('-') && !w.is_empty() {
            out.push(w.clone());
        }
        if let Some((_, v)) = w.split_once('=') {
            if !v.is_empty() {
                out.push(v.to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(s: &str) -> Vec<String> {
        split_words(s)
    }

    #[test]
    fn operators_quotes_and_escapes() {
        assert_eq!(
            w("cat a|grep b>out;(cd x&&ls)"),
            ["cat", "a", "grep", "b", "out", "cd", "x", "ls"]
        );
        assert_eq!(
            w("cat 'a b' \"c \\\"d\\\"\" e\\ f"),
            ["cat", "a b", "c \"d\"", "e f"]
        );
        assert_eq!(w("cat docs\\adr\\x.md"), ["cat", "docs\\adr\\x.md"]);
        assert_eq!(w("echo ''"), ["echo", ""]);
        assert_eq!(w("cat<in>out 2>&1"), ["cat", "in", "out", "2", "1"]);
        assert_eq!(w("a'b'\"c\"d"), ["abcd"]);
        assert_eq!(w("  "), Vec::<String>::new());
        assert_eq!(w("unterminated 'quote"), ["unterminated", "quote"]);
    }

    #[test]
    fn candidates_skip_flags_and_take_assignments() {
        let c = candidates(&w("FOO=secret/x cmd --out=build/y -v file"));
        assert_eq!(c, ["FOO=secret/x", "secret/x", "cmd", "build/y", "file"]);
    }
}
