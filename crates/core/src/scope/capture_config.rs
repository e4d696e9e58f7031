//! Validation of a marker's `[capture]` section (DESIGN §3): structure,
//! bounds and pattern syntax. Compiling and matching patterns is the capture
//! module's job; this only decides `inactive` / `active` / `invalid`.

use std::path::Path;

use toml::Value;

use super::CaptureConfig;

/// Most patterns `ignore_paths` may hold; more makes the policy invalid.
pub const MAX_IGNORE_PATTERNS: usize = 128;
/// Longest pattern, in Unicode scalar values; longer makes the policy invalid.
pub const MAX_IGNORE_PATTERN_CHARS: usize = 1024;

/// Characters a pattern may not contain: only `*`, `?` and `**` are wildcards,
/// and anything that looks like another glob dialect, a regex or a shell
/// expansion is refused rather than silently read literally.
pub const FORBIDDEN_CHARS: &[char] = &['!', '{', '}', '[', ']', '(', ')', '|', '^', '$', '%'];

/// The first of [`FORBIDDEN_CHARS`] in `s`, if any: one table lookup per
/// byte (all of them are ASCII, so no byte of a multi-byte character can
/// be one).
pub fn forbidden_char(s: &str) -> Option<char> {
    const TABLE: [bool; 256] = {
        let mut t = [false; 256];
        let mut i = 0;
        while i < FORBIDDEN_CHARS.len() {
            assert!(FORBIDDEN_CHARS[i].is_ascii());
            t[FORBIDDEN_CHARS[i] as usize] = true;
            i += 1;
        }
        t
    };
    s.bytes().find(|&b| TABLE[b as usize]).map(char::from)
}

/// Build the capture configuration of the marker at `marker` from its parsed
/// top-level `capture` item (`None` when absent).
pub fn capture_config(marker: &Path, item: Option<&Value>, home_known: bool) -> CaptureConfig {
    let invalid = |reason: String| CaptureConfig::Invalid {
        marker: marker.to_path_buf(),
        reason,
    };
    let inactive = |assistant_text| CaptureConfig::Inactive {
        marker: marker.to_path_buf(),
        assistant_text,
    };
    let Some(item) = item else {
        return inactive(true);
    };
    let Some(table) = item.as_table() else {
        return invalid(format!(
            "`capture` must be a table ([capture]), found {}",
            item.type_str()
        ));
    };
    if let Some(key) = table.keys().find(|k| !CAPTURE_KEYS.contains(&k.as_str())) {
        return invalid(format!(
            "unknown key `{key}` in [capture] (only `ignore_paths` and `assistant_text` are allowed)"
        ));
    }
    let assistant_text = match table.get("assistant_text") {
        None => true,
        Some(v) => match truthy(v) {
            Some(b) => b,
            None => {
                return invalid(format!(
                    "[capture] assistant_text must be true or false, found {}",
                    v.type_str()
                ))
            }
        },
    };
    let Some(list) = table.get("ignore_paths") else {
        return inactive(assistant_text);
    };
    let Some(list) = list.as_array() else {
        return invalid(format!(
            "[capture] ignore_paths must be an array of strings, found {}",
            list.type_str()
        ));
    };
    if list.is_empty() {
        return inactive(assistant_text);
    }
    if list.len() > MAX_IGNORE_PATTERNS {
        return invalid(format!(
            "[capture] ignore_paths holds {} patterns; at most {MAX_IGNORE_PATTERNS} are allowed",
            list.len()
        ));
    }
    let mut patterns = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let Some(p) = v.as_str() else {
            return invalid(format!(
                "[capture] ignore_paths[{i}] must be a string, found {}",
                v.type_str()
            ));
        };
        if let Err(problem) = check_pattern(p, home_known) {
            return invalid(format!("[capture] ignore_paths[{i}] {problem}"));
        }
        patterns.push(p.to_string());
    }
    CaptureConfig::Active {
        marker: marker.to_path_buf(),
        patterns,
        assistant_text,
    }
}

/// The keys `[capture]` may hold; any other makes the policy invalid.
pub const CAPTURE_KEYS: &[&str] = &["ignore_paths", "assistant_text"];

/// A truthy or falsy value as markers write them (DESIGN §2: `true`/`1`/
/// `yes`/`on` and their opposites, bare or quoted, case-insensitive);
/// `None` for anything else.
fn truthy(v: &Value) -> Option<bool> {
    let text = match v {
        Value::Boolean(b) => return Some(*b),
        Value::Integer(i) => i.to_string(),
        Value::String(s) => s.trim().to_ascii_lowercase(),
        _ => return None,
    };
    match text.as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// Why `pattern` cannot be used, as the end of a sentence.
pub fn check_pattern(pattern: &str, home_known: bool) -> Result<(), String> {
    if pattern.trim().is_empty() {
        return Err("is blank".into());
    }
    let chars = pattern.chars().count();
    if chars > MAX_IGNORE_PATTERN_CHARS {
        return Err(format!(
            "is {chars} characters long; at most {MAX_IGNORE_PATTERN_CHARS} are allowed"
        ));
    }
    if let Some(c) = forbidden_char(pattern) {
        return Err(format!(
            "contains {c:?}: only the wildcards `*`, `?` and `**` are supported"
        ));
    }
    if pattern.chars().any(|c| c.is_control()) {
        return Err("contains a control character".into());
    }
    if pattern.contains("***") {
        return Err("contains `***`: use `**` for any depth".into());
    }
    let slashed = pattern.replace('\\', "/");
    if slashed.split('/').any(|seg| seg == "..") {
        return Err("contains a `..` segment: write the path without it".into());
    }
    if let Some(rest) = pattern.strip_prefix('~') {
        if !rest.starts_with('/') && !rest.starts_with('\\') {
            return Err("starts with `~` not followed by `/` (only `~/` is expanded)".into());
        }
        if !home_known {
            return Err("starts with `~/` but HOME is not set".into());
        }
    }
    let b = pattern.as_bytes();
    if b.len() >= 2
        && b[0].is_ascii_alphabetic()
        && b[1] == b':'
        && !matches!(b.get(2), Some(b'/' | b'\\'))
    {
        return Err("is drive-relative (`X:` not followed by a slash): write `X:/…`".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbidden_char_finds_the_first_and_only_those() {
        for &c in FORBIDDEN_CHARS {
            assert_eq!(forbidden_char(&format!("é/a{c}b!")), Some(c));
        }
        assert_eq!(forbidden_char("src/**/é*.k?y ~ # @ \\ \"'"), None);
        assert_eq!(forbidden_char(""), None);
    }

    fn cfg(toml_src: &str, home: bool) -> CaptureConfig {
        let t: toml::Table = toml_src.parse().unwrap();
        capture_config(Path::new("/m/.ai-memory.toml"), t.get("capture"), home)
    }

    #[test]
    fn states() {
        assert_eq!(cfg("", true).state_str(), "inactive");
        assert_eq!(cfg("[capture]", true).state_str(), "inactive");
        assert_eq!(
            cfg("[capture]\nignore_paths = []", true).state_str(),
            "inactive"
        );
        match cfg(
            "[capture]\nignore_paths = ['a/**', '~/x', '/abs/*.env']",
            true,
        ) {
            CaptureConfig::Active { patterns, .. } => assert_eq!(patterns.len(), 3),
            other => panic!("{other:?}"),
        }
        for bad in [
            "capture = 1",
            "capture = ['a']",
            "[capture]\nignore_path = ['a']",
            "[capture]\nignore_paths = 'a'",
            "[capture]\nignore_paths = [1]",
            "[capture]\nignore_paths = [['a']]",
        ] {
            assert_eq!(cfg(bad, true).state_str(), "invalid", "{bad}");
        }
    }

    #[test]
    fn assistant_text_is_a_closed_switch() {
        assert!(cfg("[capture]", true).keeps_assistant_text());
        for off in [
            "[capture]\nassistant_text = false",
            "[capture]\nassistant_text = 'off'",
            "[capture]\nassistant_text = 0",
        ] {
            let c = cfg(off, true);
            assert_eq!(c.state_str(), "inactive", "{off}");
            assert!(!c.keeps_assistant_text(), "{off}");
        }
        let c = cfg(
            "[capture]\nassistant_text = 'NO'\nignore_paths = ['a/**']",
            true,
        );
        assert_eq!(c.state_str(), "active");
        assert!(!c.keeps_assistant_text());
        let on = cfg(
            "[capture]\nassistant_text = 'yes'\nignore_paths = ['a/**']",
            true,
        );
        assert!(on.keeps_assistant_text());
        // A value that is neither is a broken policy: fail closed.
        for bad in [
            "[capture]\nassistant_text = 'maybe'",
            "[capture]\nassistant_text = [1]",
        ] {
            let c = cfg(bad, true);
            assert_eq!(c.state_str(), "invalid", "{bad}");
            assert!(!c.keeps_assistant_text());
        }
        assert!(CaptureConfig::Absent.keeps_assistant_text());
    }

    #[test]
    fn pattern_syntax() {
        for ok in [
            "*.env",
            "secrets/**",
            "a?c",
            "~/notes/**",
            "C:/x",
            "/abs/**/y",
            "dir\\sub",
        ] {
            assert_eq!(check_pattern(ok, true), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "  ",
            "!x",
            "{a,b}",
            "[ab]",
            "(x)",
            "a|b",
            "^a",
            "a$",
            "${HOME}/x",
            "%APPDATA%",
            "a/***/b",
            "../x",
            "a/../b",
            "a\\..\\b",
            "~x",
            "~",
            "C:foo",
            "c:",
            "a\tb",
        ] {
            assert!(check_pattern(bad, true).is_err(), "{bad:?}");
        }
        assert!(check_pattern("~/x", false).is_err());
    }

    #[test]
    fn bounds_at_their_edges() {
        let at = "a".repeat(MAX_IGNORE_PATTERN_CHARS);
        assert_eq!(check_pattern(&at, true), Ok(()));
        assert!(check_pattern(&format!("{at}a"), true).is_err());
        // Counted in characters, not bytes.
        assert_eq!(
            check_pattern(&"é".repeat(MAX_IGNORE_PATTERN_CHARS), true),
            Ok(())
        );

        let list = |n: usize| {
            let items: Vec<String> = (0..n).map(|i| format!("'p{i}'")).collect();
            format!("[capture]\nignore_paths = [{}]", items.join(","))
        };
        assert_eq!(cfg(&list(MAX_IGNORE_PATTERNS), true).state_str(), "active");
        assert_eq!(
            cfg(&list(MAX_IGNORE_PATTERNS + 1), true).state_str(),
            "invalid"
        );
    }
}
