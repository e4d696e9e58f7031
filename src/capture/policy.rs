//! Compiled `ignore_paths`: patterns rooted and normalised, matched with
//! globset (`literal_separator`) — lazily. Compiling a glob costs far more
//! than the whole rest of the hook, so each pattern keeps its literal
//! prefix (the whole segments before its first wildcard) and its glob is
//! built only when a candidate starts with that prefix.

use std::cell::OnceCell;

use globset::{GlobBuilder, GlobMatcher};

use super::path::{self, Flavour, NormPath};

/// Most patterns in `ignore_paths` (DESIGN §3).
pub const MAX_PATTERNS: usize = 128;
/// Longest pattern, in characters.
pub const MAX_PATTERN_CHARS: usize = 1024;
/// Most pattern×candidate character comparisons one call may spend.
pub const MAX_MATCH_WORK: u64 = 1_000_000;

/// Why a policy cannot be compiled (it then counts as invalid).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    TooManyPatterns(usize),
    PatternTooLong {
        index: usize,
    },
    /// Blank, `~` without home, drive-relative, … (index into the list).
    Unusable {
        index: usize,
    },
    /// A character other than `*` and `?` that a glob would treat specially.
    Syntax {
        index: usize,
    },
}

struct Pattern {
    path: NormPath,
    chars: u64,
    /// ASCII-lowercased for Windows flavour.
    prefix_key: String,
    /// Whole literal segments before the first wildcard, after the root.
    prefix_segments: Vec<String>,
    has_wildcard: bool,
    /// `dir/**`: `dir` itself matches too.
    dir_base: Option<String>,
    matcher: OnceCell<Option<GlobMatcher>>,
    base_matcher: OnceCell<Option<GlobMatcher>>,
}

/// The result of matching one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOutcome {
    Match,
    NoMatch,
    /// The work budget ran out before an answer.
    OverBudget,
}

/// A compiled policy plus its per-call work meter.
pub struct Policy {
    patterns: Vec<Pattern>,
    work: u64,
}

fn has_wild(s: &str) -> bool {
    s.contains(['*', '?'])
}

/// Glob text for a normalised pattern: `*` and `?` stay, every other glob
/// metacharacter is made literal.
fn glob_text(s: &str) -> String {
    let mut g = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '[' | ']' | '{' | '}' | '\\' => {
                g.push('[');
                g.push(c);
                g.push(']');
            }
            c => g.push(c),
        }
    }
    g
}

fn build(glob: &str, flavour: Flavour) -> Option<GlobMatcher> {
    GlobBuilder::new(&glob_text(glob))
        .literal_separator(true)
        .backslash_escape(false)
        .case_insensitive(flavour == Flavour::Windows)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

impl Policy {
    /// Root, normalise and index `patterns` (relative ones at `marker_dir`,
    /// `~/` at `home`). Nothing is compiled yet.
    pub fn compile(
        patterns: &[String],
        marker_dir: &NormPath,
        home: Option<&NormPath>,
    ) -> Result<Policy, PolicyError> {
        if patterns.len() > MAX_PATTERNS {
            return Err(PolicyError::TooManyPatterns(patterns.len()));
        }
        let mut out = Vec::with_capacity(patterns.len());
        for (index, raw) in patterns.iter().enumerate() {
            if raw.chars().count() > MAX_PATTERN_CHARS {
                return Err(PolicyError::PatternTooLong { index });
            }
            if raw.contains(['[', ']', '{', '}', '!'])
                || (raw.starts_with('~') && raw != "~" && !raw.starts_with("~/"))
            {
                return Err(PolicyError::Syntax { index });
            }
            // A pattern may grow when rooted; the bound is on what was written.
            let p = path::normalize(raw, Some(marker_dir), home, usize::MAX)
                .map_err(|_| PolicyError::Unusable { index })?;
            let mut prefix_segments = Vec::new();
            for seg in p.segments() {
                if has_wild(seg) {
                    break;
                }
                prefix_segments.push(seg.to_string());
            }
            let mut prefix = p.root().to_string();
            prefix.push_str(&prefix_segments.join("/"));
            let dir_base = p.text.strip_suffix("/**").map(|b| {
                if b.len() < p.root_len {
                    p.root().to_string()
                } else {
                    b.to_string()
                }
            });
            out.push(Pattern {
                chars: p.chars() as u64,
                prefix_key: match p.flavour {
                    Flavour::Posix => prefix,
                    Flavour::Windows => prefix.to_ascii_lowercase(),
                },
                prefix_segments,
                has_wildcard: has_wild(&p.text),
                dir_base,
                path: p,
                matcher: OnceCell::new(),
                base_matcher: OnceCell::new(),
            });
        }
        Ok(Policy {
            patterns: out,
            work: 0,
        })
    }

    /// Start a new call: the budget is per call.
    pub fn reset_work(&mut self) {
        self.work = 0;
    }

    /// Work spent so far in this call.
    #[cfg(test)]
    pub fn work(&self) -> u64 {
        self.work
    }

    fn charge(&mut self, cost: u64) -> bool {
        if self.work + cost > MAX_MATCH_WORK {
            self.work = MAX_MATCH_WORK + 1;
            return false;
        }
        self.work += cost;
        true
    }

    /// Does any pattern match `cand`? A candidate holding `*` or `?` (an
    /// unexpanded shell glob) matches when it can reach a pattern's literal
    /// prefix (see [`reaches`]).
    pub fn matches(&mut self, cand: &NormPath) -> MatchOutcome {
        let key = cand.key();
        let cand_chars = cand.chars() as u64;
        let cand_wild = has_wild(&cand.text[cand.root_len..]);
        for i in 0..self.patterns.len() {
            let p = &self.patterns[i];
            if p.path.flavour != cand.flavour {
                continue;
            }
            if cand_wild {
                if !same_root(p, cand) {
                    continue;
                }
                let cost = p.chars * cand_chars;
                if !self.charge(cost) {
                    return MatchOutcome::OverBudget;
                }
                if reaches(cand, &self.patterns[i]) {
                    return MatchOutcome::Match;
                }
                continue;
            }
            if !under_prefix(&key, &p.prefix_key) {
                continue;
            }
            let cost = p.chars * cand_chars;
            if !self.charge(cost) {
                return MatchOutcome::OverBudget;
            }
            let p = &self.patterns[i];
            if pattern_matches(p, cand, &key) {
                return MatchOutcome::Match;
            }
        }
        MatchOutcome::NoMatch
    }

    #[cfg(test)]
    fn compiled_count(&self) -> usize {
        self.patterns
            .iter()
            .filter(|p| p.matcher.get().is_some())
            .count()
    }
}

fn same_root(p: &Pattern, cand: &NormPath) -> bool {
    match p.path.flavour {
        Flavour::Posix => p.path.root() == cand.root(),
        Flavour::Windows => p.path.root().eq_ignore_ascii_case(cand.root()),
    }
}

/// `key` equals `prefix` or continues it at a segment boundary.
fn under_prefix(key: &str, prefix: &str) -> bool {
    match key.strip_prefix(prefix) {
        Some("") => true,
        Some(rest) => prefix.ends_with('/') || rest.starts_with('/'),
        None => false,
    }
}

fn pattern_matches(p: &Pattern, cand: &NormPath, key: &str) -> bool {
    let eq = |a: &str| match p.path.flavour {
        Flavour::Posix => a == cand.text,
        Flavour::Windows => a.to_ascii_lowercase() == key,
    };
    if !p.has_wildcard {
        return eq(&p.path.text);
    }
    let m = p
        .matcher
        .get_or_init(|| build(&p.path.text, p.path.flavour));
    if m.as_ref().is_some_and(|m| m.is_match(&cand.text)) {
        return true;
    }
    match &p.dir_base {
        Some(base) if has_wild(base) => p
            .base_matcher
            .get_or_init(|| build(base, p.path.flavour))
            .as_ref()
            .is_some_and(|m| m.is_match(&cand.text)),
        Some(base) => eq(base),
        None => false,
    }
}

/// Can the unexpanded shell glob `cand` name something under the pattern's
/// literal prefix? It can when each of its first segments matches the
/// prefix's segment at the same depth (a shell glob never crosses `/`).
/// `cat docs/*/0001.md` reaches `docs/adr/**`; `cat *.md` does not.
fn reaches(cand: &NormPath, p: &Pattern) -> bool {
    let win = p.path.flavour == Flavour::Windows;
    cand.segments()
        .zip(p.prefix_segments.iter())
        .all(|(c, l)| segment_glob(c, l, win))
}

/// `glob` (with `*`, `?`; a `[...]` class counts as one any-character)
/// matches all of `text`, within one segment.
fn segment_glob(glob: &str, text: &str, win: bool) -> bool {
    #[derive(Clone, Copy, PartialEq)]
    enum T {
        Lit(char),
        Any,
        Star,
    }
    let mut toks = Vec::new();
    let mut it = glob.chars();
    while let Some(c) = it.next() {
        toks.push(match c {
            '*' => T::Star,
            '?' => T::Any,
            '[' => {
                for d in it.by_ref() {
                    if d == ']' {
                        break;
                    }
                }
                T::Any
            }
            c => T::Lit(c),
        });
    }
    let text: Vec<char> = text.chars().collect();
    let (mut g, mut t) = (0usize, 0usize);
    let (mut star, mut mark) = (None::<usize>, 0usize);
    let eq = |a: char, b: char| {
        if win {
            a.eq_ignore_ascii_case(&b)
        } else {
            a == b
        }
    };
    while t < text.len() {
        match toks.get(g) {
            Some(T::Star) => {
                star = Some(g);
                mark = t;
                g += 1;
            }
            Some(T::Any) => {
                g += 1;
                t += 1;
            }
            Some(T::Lit(c)) if eq(*c, text[t]) => {
                g += 1;
                t += 1;
            }
            _ => match star {
                Some(s) => {
                    g = s + 1;
                    mark += 1;
                    t = mark;
                }
                None => return false,
            },
        }
    }
    toks[g..].iter().all(|t| *t == T::Star)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::path::{normalize, MAX_CANDIDATE_CHARS};

    fn np(s: &str) -> NormPath {
        normalize(s, None, None, usize::MAX).unwrap()
    }

    fn policy(pats: &[&str]) -> Policy {
        let pats: Vec<String> = pats.iter().map(|s| s.to_string()).collect();
        Policy::compile(&pats, &np("/repo"), Some(&np("/home/u"))).unwrap()
    }

    fn hit(p: &mut Policy, cand: &str) -> bool {
        p.reset_work();
        let c = normalize(cand, Some(&np("/repo")), None, MAX_CANDIDATE_CHARS).unwrap();
        p.matches(&c) == MatchOutcome::Match
    }

    #[test]
    fn relative_patterns_are_rooted_at_the_marker() {
        let mut p = policy(&["docs/adr/**", "*.env", "~/private/*", "/etc/x?"]);
        assert!(hit(&mut p, "/repo/docs/adr/0001.md"));
        assert!(hit(&mut p, "/repo/docs/adr/sub/deep.md"));
        assert!(hit(&mut p, "/repo/docs/adr"), "dir/** matches dir");
        assert!(!hit(&mut p, "/repo/docs/adrx"));
        assert!(!hit(&mut p, "/repo/docs/other.md"));
        assert!(hit(&mut p, "/repo/prod.env"));
        assert!(!hit(&mut p, "/repo/sub/prod.env"), "* never crosses /");
        assert!(hit(&mut p, "/home/u/private/key"));
        assert!(!hit(&mut p, "/home/u/private/a/key"));
        assert!(hit(&mut p, "/etc/x1"));
        assert!(
            hit(&mut p, "docs/./adr/../adr/x.md"),
            "candidates are normalised"
        );
    }

    #[test]
    fn double_star_in_the_middle_and_literal_patterns() {
        let mut p = policy(&["**/secret/**", "notes.txt"]);
        assert!(hit(&mut p, "/repo/a/b/secret/c"));
        assert!(hit(&mut p, "/repo/secret"));
        assert!(hit(&mut p, "/repo/notes.txt"));
        assert!(!hit(&mut p, "/repo/notes.txt.bak"));
        assert!(!hit(&mut p, "/other/secret/x"));
    }

    #[test]
    fn windows_flavour_is_case_insensitive_and_kept_apart() {
        let pats = vec![
            "C:\\Repo\\Secret\\**".to_string(),
            "\\\\srv\\share\\x\\*".to_string(),
        ];
        let mut p = Policy::compile(&pats, &np("/repo"), None).unwrap();
        let mut m = |s: &str| {
            p.reset_work();
            p.matches(&np(s)) == MatchOutcome::Match
        };
        assert!(m("c:\\repo\\secret\\a.txt"));
        assert!(m("C:/REPO/SECRET"));
        assert!(m("\\\\SRV\\Share\\X\\f"));
        assert!(
            !m("/Repo/Secret/a.txt"),
            "a POSIX path never meets a Windows pattern"
        );
        assert!(!m("D:/Repo/Secret/a.txt"));
    }

    #[test]
    fn shell_globs_reach_excluded_prefixes() {
        let mut p = policy(&["docs/adr/**"]);
        assert!(hit(&mut p, "docs/*/0001.md"));
        assert!(hit(&mut p, "docs/a?r"));
        assert!(hit(&mut p, "d*"));
        assert!(!hit(&mut p, "*.md"));
        assert!(!hit(&mut p, "src/*"));
    }

    #[test]
    fn globs_compile_only_when_a_prefix_fits() {
        let pats: Vec<String> = (0..MAX_PATTERNS)
            .map(|i| format!("dir{i}/**/*.key"))
            .collect();
        let mut p = Policy::compile(&pats, &np("/repo"), None).unwrap();
        let c = np("/repo/dir7/a/b.key");
        assert_eq!(p.matches(&c), MatchOutcome::Match);
        assert_eq!(p.compiled_count(), 1);
    }

    #[test]
    fn pattern_count_and_length_bounds_at_their_edges() {
        let ok: Vec<String> = (0..MAX_PATTERNS).map(|i| format!("p{i}")).collect();
        assert!(Policy::compile(&ok, &np("/r"), None).is_ok());
        let over: Vec<String> = (0..=MAX_PATTERNS).map(|i| format!("p{i}")).collect();
        assert!(matches!(
            Policy::compile(&over, &np("/r"), None),
            Err(PolicyError::TooManyPatterns(_))
        ));
        let at = vec!["a".repeat(MAX_PATTERN_CHARS)];
        assert!(Policy::compile(&at, &np("/r"), None).is_ok());
        let long = vec!["a".repeat(MAX_PATTERN_CHARS + 1)];
        assert_eq!(
            Policy::compile(&long, &np("/r"), None).err(),
            Some(PolicyError::PatternTooLong { index: 0 })
        );
        for bad in ["a[bc]", "{a,b}", "!x", "~x", "C:rel", " "] {
            assert!(
                Policy::compile(&[bad.to_string()], &np("/r"), None).is_err(),
                "{bad}"
            );
        }
        assert!(
            Policy::compile(&["~/x".to_string()], &np("/r"), None).is_err(),
            "~/ without a home"
        );
    }

    /// Work = Σ pattern chars × candidate chars over pairs that reach the
    /// glob. Two patterns whose prefixes fit two different candidates:
    /// `p1*c1 + p2*c2`, tuned to land exactly on the budget and one over.
    #[test]
    fn work_budget_at_its_edge() {
        fn pattern_of(prefix: &str, len: usize) -> String {
            // `prefix` + padding + `*`, `len` characters in all.
            let pad = len - prefix.len() - 1;
            format!("{prefix}{}*", "p".repeat(pad))
        }
        fn cand_of(prefix: &str, len: usize) -> NormPath {
            np(&format!("{prefix}{}", "c".repeat(len - prefix.len())))
        }
        let run = |p2: usize, c2: usize| {
            let pats = vec![pattern_of("/x/", 999), pattern_of("/y/", p2)];
            let mut pol = Policy::compile(&pats, &np("/r"), None).unwrap();
            let a = pol.matches(&cand_of("/x/", 1000));
            let b = pol.matches(&cand_of("/y/", c2));
            (a, b, pol.work())
        };
        // 999*1000 + 8*125 = 1,000,000 exactly: within budget.
        let (a, b, w) = run(8, 125);
        assert_eq!(
            (a, b, w),
            (MatchOutcome::NoMatch, MatchOutcome::NoMatch, MAX_MATCH_WORK)
        );
        // 999*1000 + 7*143 = 1,000,001: one over.
        let (a, b, _) = run(7, 143);
        assert_eq!((a, b), (MatchOutcome::NoMatch, MatchOutcome::OverBudget));
    }

    #[test]
    fn segment_globs() {
        assert!(segment_glob("*", "abc", false));
        assert!(segment_glob("a*c", "abbbc", false));
        assert!(segment_glob("a?c", "abc", false));
        assert!(!segment_glob("a?c", "ac", false));
        assert!(segment_glob("[ab]x", "bx", false));
        assert!(segment_glob("ABC", "abc", true));
        assert!(!segment_glob("ABC", "abc", false));
    }
}
