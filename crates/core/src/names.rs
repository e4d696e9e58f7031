//! The scope-name rule shared by markers, environment, flags and the server:
//! `^[a-z0-9][a-z0-9._-]*$`.

/// Longest workspace or project name accepted anywhere.
pub const MAX_NAME_LEN: usize = 128;

/// Whether `name` is a valid workspace or project name.
pub fn is_valid_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    match bytes.first() {
        Some(b) if b.is_ascii_lowercase() || b.is_ascii_digit() => {}
        _ => return false,
    }
    bytes.len() <= MAX_NAME_LEN
        && bytes.iter().all(|b| {
            b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'_' | b'-')
        })
}

/// Why a name is invalid, as a sentence that tells the fix.
pub fn name_problem(name: &str) -> String {
    if name.is_empty() {
        "is empty; use lowercase letters, digits, '.', '_' or '-'".to_string()
    } else if name.len() > MAX_NAME_LEN {
        format!("{:?} is longer than {MAX_NAME_LEN} characters", name)
    } else {
        format!(
            "{name:?} is not a valid name: it must start with a lowercase letter or digit \
             and contain only lowercase letters, digits, '.', '_' or '-'"
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_and_rejects() {
        for ok in ["a", "0", "acme", "api-v2", "a.b_c-d", "9lives"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "A", "-a", ".a", "_a", "a b", "a/b", "Acme", "é", "a\n"] {
            assert!(!is_valid_name(bad), "{bad:?}");
        }
        assert!(is_valid_name(&"a".repeat(MAX_NAME_LEN)));
        assert!(!is_valid_name(&"a".repeat(MAX_NAME_LEN + 1)));
    }
}
