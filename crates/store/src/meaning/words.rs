//! The words of a text as the word vectors know them: lowercase runs of
//! ASCII letters and digits, identifiers split like `crate::words` splits
//! them (`parse_date` is `parse date`, `loadConfig` is `load config`,
//! `HTTPServer` is `http server`). The same splitting as
//! `scripts/bench-semantic.py`, which measured it.

/// Most words of one text that are looked up (a record's text is bounded
/// already; this bounds the work of any text).
pub const MAX_WORDS: usize = 4096;

/// Call `each` with the words of `text`, at most `budget` of them;
/// returns how many were given.
pub fn each_word(text: &str, budget: usize, mut each: impl FnMut(&str)) -> usize {
    let mut given = 0;
    let mut word = String::new();
    let runs = text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
    for run in runs {
        // A token starts at a letter (`42abc` is `abc`; `42` is no word).
        let Some(start) = run.find(|c: char| c.is_ascii_alphabetic()) else {
            continue;
        };
        for piece in run[start..].split('_').filter(|p| !p.is_empty()) {
            for part in crate::words::camel_parts(piece) {
                if given == budget {
                    return given;
                }
                word.clear();
                word.extend(part.chars().map(|c| c.to_ascii_lowercase()));
                each(&word);
                given += 1;
            }
        }
    }
    given
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_word(text, MAX_WORDS, |w| out.push(w.to_string()));
        out
    }

    #[test]
    fn identifiers_are_split_into_lowercase_words() {
        assert_eq!(
            words("loadConfig(path) parse_date HTTPServer utf8Decode"),
            ["load", "config", "path", "parse", "date", "http", "server", "utf8", "decode"]
        );
        assert_eq!(words("42 passed; 0 failed"), ["passed", "failed"]);
        assert_eq!(
            words("src/user-session.ts x_2"),
            ["src", "user", "session", "ts", "x", "2"]
        );
        // Not ASCII: not a word the table could hold; never a panic.
        assert_eq!(words("café ñ 日本"), ["caf"]);
        assert!(words("").is_empty());
    }

    #[test]
    fn the_words_are_bounded() {
        let text = "aB ".repeat(10);
        let mut n = 0;
        assert_eq!(each_word(&text, 5, |_| n += 1), 5);
        assert_eq!(n, 5);
    }
}
