//! Compiled `ignore_paths`: patterns rooted and normalised, then matched
//! segment by segment with globset's `literal_separator` semantics (`*` and
//! `?` never cross `/`; a whole `**` segment spans any number of segments).
//! Each pattern is split into its literal prefix (root + the whole segments
//! before its first wildcard) and the rest; patterns sharing a prefix form a
//! group, and a candidate is compared with a group's rests only when it
//! falls under the group's prefix.
//!
//! The matcher is our own, not globset's: nothing is compiled, and the
//! hook's path never reaches `memchr`, whose first call asks the CPU what it
//! supports (about 55 µs per hook in a VM, docs/benchmarks.md). A unit test
//! replays thousands of pattern × path pairs against globset itself.

use std::cell::RefCell;
use std::sync::Arc;

use super::path::{self, Flavour, NormPath};

/// The bounds and the refused characters of `ignore_paths` (DESIGN §3) are
/// the marker check's: one definition, in `scope::capture_config`.
pub use crate::scope::capture_config::{
    forbidden_char, MAX_IGNORE_PATTERNS as MAX_PATTERNS,
    MAX_IGNORE_PATTERN_CHARS as MAX_PATTERN_CHARS,
};
/// Most pattern×candidate character comparisons one call may spend.
pub const MAX_MATCH_WORK: u64 = 1_000_000;
/// The same, for checking the lines of one kept output (up to 8,000 bytes
/// of tokens, each joined to the command's directory, against the policy).
pub const MAX_OUTPUT_MATCH_WORK: u64 = 16 * MAX_MATCH_WORK;

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
    /// Whole literal segments before the first wildcard, after the root.
    prefix_segments: Vec<String>,
    /// What follows the literal prefix (empty for a literal pattern).
    rest: String,
    /// `dir/**` also matches `dir`: the rest without its `/**` (`""` when
    /// the rest is just `**`).
    base_rest: Option<String>,
}

/// Patterns sharing one literal prefix. The prefix is compared as text;
/// a candidate under it is matched against each member's rest.
struct Group {
    flavour: Flavour,
    /// Root + literal segments; case-folded (`path::fold`) where names fold (`path::folds`).
    prefix_key: String,
    members: Vec<usize>,
    /// Sum of the members' lengths: the work one candidate costs here.
    chars: u64,
}

/// The result of matching one candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MatchOutcome {
    Match,
    NoMatch,
    /// The work budget ran out before an answer.
    OverBudget,
}

/// A compiled policy plus its per-call work meter. The compiled patterns
/// are shared: compiling the same patterns again (the capture decision and
/// then the output filter of one event) reuses them ([`Policy::compile`]).
pub struct Policy {
    patterns: Arc<[Pattern]>,
    groups: Arc<[Group]>,
    work: u64,
    budget: u64,
}

/// What a compile was asked for, to recognise the same request again.
#[derive(PartialEq)]
struct CompileKey {
    patterns: Vec<String>,
    marker_dir: NormPath,
    home: Option<NormPath>,
}

type Compiled = (Arc<[Pattern]>, Arc<[Group]>);

thread_local! {
    /// The last successful compile of this thread. One process handles one
    /// event, whose policy is compiled up to three times (capture decision,
    /// output filter, the agent's words); rooting and indexing 16 patterns
    /// costs about 97,000 instructions each time (docs/benchmarks.md,
    /// "One policy, an arena, no libm, no clap for session start").
    static LAST_COMPILE: RefCell<Option<(CompileKey, Compiled)>> = const { RefCell::new(None) };
}

fn has_wild(s: &str) -> bool {
    s.contains(['*', '?'])
}

impl Policy {
    /// Root, normalise and index `patterns` (relative ones at `marker_dir`,
    /// `~/` at `home`). Nothing is compiled yet.
    pub fn compile(
        patterns: &[String],
        marker_dir: &NormPath,
        home: Option<&NormPath>,
    ) -> Result<Policy, PolicyError> {
        let same = |k: &CompileKey| {
            k.patterns == patterns && k.marker_dir == *marker_dir && k.home.as_ref() == home
        };
        let reused = LAST_COMPILE.with(|last| {
            last.borrow()
                .as_ref()
                .filter(|(k, _)| same(k))
                .map(|(_, c)| c.clone())
        });
        let (patterns, groups) = match reused {
            Some(c) => c,
            None => {
                let c = Self::root_and_index(patterns, marker_dir, home)?;
                let key = CompileKey {
                    patterns: patterns.to_vec(),
                    marker_dir: marker_dir.clone(),
                    home: home.cloned(),
                };
                LAST_COMPILE.with(|last| *last.borrow_mut() = Some((key, c.clone())));
                c
            }
        };
        Ok(Policy {
            patterns,
            groups,
            work: 0,
            budget: MAX_MATCH_WORK,
        })
    }

    fn root_and_index(
        patterns: &[String],
        marker_dir: &NormPath,
        home: Option<&NormPath>,
    ) -> Result<Compiled, PolicyError> {
        if patterns.len() > MAX_PATTERNS {
            return Err(PolicyError::TooManyPatterns(patterns.len()));
        }
        let mut out = Vec::with_capacity(patterns.len());
        let mut groups: Vec<Group> = Vec::new();
        for (index, raw) in patterns.iter().enumerate() {
            if raw.chars().count() > MAX_PATTERN_CHARS {
                return Err(PolicyError::PatternTooLong { index });
            }
            if forbidden_char(raw).is_some()
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
            let rest = p.text[prefix.len()..].trim_start_matches('/').to_string();
            let base_rest = if rest == "**" {
                Some(String::new())
            } else {
                rest.strip_suffix("/**").map(str::to_string)
            };
            let prefix_key = if path::folds(p.flavour) {
                path::fold(&prefix)
            } else {
                prefix
            };
            let chars = p.chars() as u64;
            match groups
                .iter_mut()
                .find(|g: &&mut Group| g.flavour == p.flavour && g.prefix_key == prefix_key)
            {
                Some(g) => {
                    g.members.push(index);
                    g.chars += chars;
                }
                None => groups.push(Group {
                    flavour: p.flavour,
                    prefix_key,
                    members: vec![index],
                    chars,
                }),
            }
            out.push(Pattern {
                prefix_segments,
                rest,
                base_rest,
            });
        }
        Ok((out.into(), groups.into()))
    }

    /// The literal directories the patterns start from (a pattern's path up
    /// to its first wildcard segment), for walking what they can match.
    /// Patterns of the flavour this system opens (Windows paths on
    /// Windows, POSIX paths elsewhere); distinct.
    pub fn literal_prefixes(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .groups
            .iter()
            // The flavour of paths this system opens: Windows paths (`C:/…`,
            // UNC) on Windows, POSIX paths elsewhere. Folded keys open the
            // same files where names fold (Windows, macOS).
            .filter(|g| path::native(g.flavour))
            .map(|g| g.prefix_key.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// Could an excluded path lie inside the directory `dir`? `Match` when
    /// `dir` itself matches or is an ancestor of a pattern's literal prefix
    /// (`.` under `secret/**`); `NoMatch` otherwise. [`Self::wild_below`]
    /// answers the other half (a pattern whose wildcard can reach below).
    pub fn contains_prefix(&mut self, dir: &NormPath) -> MatchOutcome {
        match self.matches(dir) {
            MatchOutcome::NoMatch => {}
            other => return other,
        }
        let key = dir.key();
        let hit = self.groups.iter().any(|g| {
            g.flavour == dir.flavour && same_root(g, dir) && under_prefix(&g.prefix_key, &key)
        });
        if hit {
            MatchOutcome::Match
        } else {
            MatchOutcome::NoMatch
        }
    }

    /// Does a pattern with a wildcard rest start at or above `dir` (so a
    /// directory `dir` may hold a match: `src/` under `**/.env`)?
    pub fn wild_below(&self, dir: &NormPath) -> bool {
        let key = dir.key();
        self.groups.iter().any(|g| {
            g.flavour == dir.flavour
                && same_root(g, dir)
                && under_prefix(&key, &g.prefix_key)
                && g.members.iter().any(|m| has_wild(&self.patterns[*m].rest))
        })
    }

    /// Start a new call: the budget is per call.
    pub fn reset_work(&mut self) {
        self.reset_work_to(MAX_MATCH_WORK);
    }

    /// Start a new call with this budget.
    pub fn reset_work_to(&mut self, budget: u64) {
        self.work = 0;
        self.budget = budget;
    }

    /// Work spent so far in this call.
    #[cfg(test)]
    pub fn work(&self) -> u64 {
        self.work
    }

    /// Does any pattern match `cand`? A candidate holding `*`, `?` or `[`
    /// (an unexpanded shell glob) matches when it can reach a pattern's
    /// literal prefix (see [`reaches`]).
    pub fn matches(&mut self, cand: &NormPath) -> MatchOutcome {
        let cand_chars = cand.chars() as u64;
        if cand.text[cand.root_len..].contains(['*', '?', '[']) {
            for g in 0..self.groups.len() {
                let grp = &self.groups[g];
                if grp.flavour != cand.flavour || !same_root(grp, cand) {
                    continue;
                }
                if !charge(&mut self.work, self.budget, grp.chars * cand_chars) {
                    return MatchOutcome::OverBudget;
                }
                let win = path::folds(grp.flavour);
                let first = self.groups[g].members[0];
                if reaches(cand, &self.patterns[first].prefix_segments, win) {
                    return MatchOutcome::Match;
                }
            }
            return MatchOutcome::NoMatch;
        }
        let key = cand.key();
        for g in 0..self.groups.len() {
            let grp = &self.groups[g];
            if grp.flavour != cand.flavour || !under_prefix(&key, &grp.prefix_key) {
                continue;
            }
            if !charge(&mut self.work, self.budget, grp.chars * cand_chars) {
                return MatchOutcome::OverBudget;
            }
            let rest = cand.text[grp.prefix_key.len()..].trim_start_matches('/');
            match group_matches(&self.groups[g], &self.patterns, rest) {
                MatchOutcome::NoMatch => {}
                other => return other,
            }
        }
        MatchOutcome::NoMatch
    }
}

/// Match a candidate's `rest` (what follows the group's prefix) against
/// the group's patterns.
fn group_matches(g: &Group, patterns: &[Pattern], rest: &str) -> MatchOutcome {
    let win = path::folds(g.flavour);
    let eq = |a: &str| {
        if win {
            path::eq_folded(a, rest)
        } else {
            a == rest
        }
    };
    let members = || g.members.iter().map(|&i| &patterns[i]);
    // Literal patterns (nothing after the prefix), and literal `dir/**` bases.
    if members().any(|p| {
        (p.rest.is_empty() && rest.is_empty())
            || p.base_rest
                .as_deref()
                .is_some_and(|b| !has_wild(b) && eq(b))
    }) {
        return MatchOutcome::Match;
    }
    if rest.is_empty() {
        return MatchOutcome::NoMatch;
    }
    // `*` and `?` never cross `/`; a whole `**` segment spans segments.
    if members().any(|p| {
        (has_wild(&p.rest) && deep_match(&p.rest, rest, win))
            || p.base_rest
                .as_deref()
                .is_some_and(|b| has_wild(b) && deep_match(b, rest, win))
    }) {
        return MatchOutcome::Match;
    }
    MatchOutcome::NoMatch
}

/// Spend `cost` from the call's `budget`; false (and the meter pinned past
/// the budget) when it does not fit.
fn charge(work: &mut u64, budget: u64, cost: u64) -> bool {
    if *work + cost > budget {
        *work = budget + 1;
        return false;
    }
    *work += cost;
    true
}

fn same_root(g: &Group, cand: &NormPath) -> bool {
    let root = cand.root();
    // `get` is `None` for a key shorter than the root or cut inside a char.
    g.prefix_key
        .get(..root.len())
        .is_some_and(|k| path::eq_folded(k, root))
        && (g.flavour == Flavour::Windows || g.prefix_key.starts_with(root))
}

/// `key` equals `prefix` or continues it at a segment boundary.
fn under_prefix(key: &str, prefix: &str) -> bool {
    match key.strip_prefix(prefix) {
        Some("") => true,
        Some(rest) => prefix.ends_with('/') || rest.starts_with('/'),
        None => false,
    }
}

/// One segment of a pattern's rest.
#[derive(Clone, Copy)]
enum Seg<'a> {
    /// A segment glob (`*`, `?`, literals; `**` inside a segment is `*`).
    Glob(&'a str),
    /// Exactly one segment, whatever it holds.
    One,
    /// Zero or more whole segments (a `**` segment).
    Deep,
}

/// `pattern` matches all of `text`, both split at `/`, with globset's
/// `literal_separator` semantics: a `**` segment matches zero or more
/// segments (runs of them count as one), except at the end of a pattern
/// with something before it, where it needs at least one (`dir/**` does
/// not match `dir`; the caller tries the base for that); any other segment
/// is a [`segment_glob`]. Greedy with a return to the last `**`, so the
/// work is bounded by pattern segments × text segments.
fn deep_match(pattern: &str, text: &str, win: bool) -> bool {
    let mut toks: Vec<Seg> = Vec::new();
    for s in pattern.split('/') {
        if s != "**" {
            toks.push(Seg::Glob(s));
        } else if !matches!(toks.last(), Some(Seg::Deep)) {
            toks.push(Seg::Deep);
        }
    }
    if toks.len() > 1 && matches!(toks.last(), Some(Seg::Deep)) {
        toks.insert(toks.len() - 1, Seg::One);
    }
    let text: Vec<&str> = text.split('/').collect();
    wildcard_match(
        &toks,
        &text,
        |k| matches!(k, Seg::Deep),
        |k, t| match k {
            Seg::Glob(g) => segment_glob(g, t, win),
            Seg::One | Seg::Deep => true,
        },
    )
}

/// The greedy wildcard match both levels share (segments of a path, and
/// characters of a segment): a `star` token matches any run of items,
/// every other token one item that `fits` it; on a mismatch the last star
/// takes one more item. Work is bounded by tokens × items.
fn wildcard_match<K, I>(
    toks: &[K],
    items: &[I],
    star: impl Fn(&K) -> bool,
    fits: impl Fn(&K, &I) -> bool,
) -> bool {
    let (mut k, mut i) = (0usize, 0usize);
    let (mut last_star, mut mark) = (None::<usize>, 0usize);
    while i < items.len() {
        match toks.get(k) {
            Some(tok) if star(tok) => {
                last_star = Some(k);
                mark = i;
                k += 1;
            }
            Some(tok) if fits(tok, &items[i]) => {
                k += 1;
                i += 1;
            }
            _ => match last_star {
                Some(s) => {
                    k = s + 1;
                    mark += 1;
                    i = mark;
                }
                None => return false,
            },
        }
    }
    toks[k..].iter().all(star)
}

/// Can the unexpanded shell glob `cand` name something under the pattern's
/// literal prefix? It can when each of its first segments matches the
/// prefix's segment at the same depth (a shell glob never crosses `/`).
/// `cat docs/*/0001.md` reaches `docs/adr/**`; `cat *.md` does not.
fn reaches(cand: &NormPath, prefix_segments: &[String], win: bool) -> bool {
    cand.segments()
        .zip(prefix_segments.iter())
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
    wildcard_match(
        &toks,
        &text,
        |k| *k == T::Star,
        |k, &c| match *k {
            T::Lit(l) if win => path::fold_char(l) == path::fold_char(c),
            T::Lit(l) => l == c,
            T::Any | T::Star => true,
        },
    )
}

#[cfg(test)]
mod tests {

    #[test]
    fn the_same_patterns_compile_once_and_a_change_compiles_again() {
        let pats = vec!["secret/**".to_string(), "*.pem".to_string()];
        let (a, b) = (
            Policy::compile(&pats, &np("/repo"), None).unwrap(),
            Policy::compile(&pats, &np("/repo"), None).unwrap(),
        );
        assert!(Arc::ptr_eq(&a.patterns, &b.patterns));
        // Each compile has its own work meter.
        let mut a = a;
        a.matches(&np("/repo/secret/k"));
        assert_eq!(b.work, 0);
        for (p, dir, home) in [
            (vec!["secret/**".to_string()], "/repo", None),
            (pats.clone(), "/other", None),
            (pats.clone(), "/repo", Some(np("/home/u"))),
        ] {
            let c = Policy::compile(&p, &np(dir), home.as_ref()).unwrap();
            assert!(
                !Arc::ptr_eq(&a.patterns, &c.patterns),
                "{p:?} {dir} {home:?}"
            );
            let mut c = c;
            assert_eq!(
                c.matches(&np(&format!("{dir}/secret/k"))),
                MatchOutcome::Match,
                "{p:?} {dir}"
            );
        }
    }

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

    /// Does `p` match the absolute path `path` (normalised without a base)?
    fn hit_abs(p: &mut Policy, path: &str) -> bool {
        p.reset_work();
        p.matches(&np(path)) == MatchOutcome::Match
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
        let mut m = |s: &str| hit_abs(&mut p, s);
        assert!(m("c:\\repo\\secret\\a.txt"));
        assert!(m("C:/REPO/SECRET"));
        assert!(m("\\\\SRV\\Share\\X\\f"));
        assert!(
            !m("/Repo/Secret/a.txt"),
            "a POSIX path never meets a Windows pattern"
        );
        assert!(!m("D:/Repo/Secret/a.txt"));
    }

    /// Windows compares names without regard to case for every letter, not
    /// only ASCII: a user named Émile writes the pattern one way and the
    /// agent reports the path the other.
    #[test]
    fn windows_flavour_folds_non_ascii_letters_too() {
        let pats = vec![
            "C:\\Users\\Émile\\Secret\\**".to_string(),
            "C:\\Data\\*Ω.key".to_string(),
            "\\\\sërver\\share\\**\\ÜBER".to_string(),
        ];
        let mut p = Policy::compile(&pats, &np("/repo"), None).unwrap();
        let mut m = |s: &str| hit_abs(&mut p, s);
        assert!(m("c:\\users\\émile\\secret\\notes.txt"));
        assert!(m("C:/USERS/ÉMILE/SECRET"));
        assert!(m("c:/data/aω.KEY"));
        assert!(m("\\\\SËRVER\\Share\\a\\b\\über"));
        assert!(!m("c:\\users\\emile\\secret\\notes.txt"), "é is not e");
        assert!(!m("/Users/Émile/Secret/x"), "a POSIX path stays apart");
    }

    /// A shell glob's root is compared with a pattern's prefix by length;
    /// where that length falls inside a multi-byte character of the prefix
    /// the answer is "no", not a panic.
    #[test]
    fn a_root_that_ends_inside_a_character_of_the_prefix_is_no_match() {
        let pats = vec!["\\\\srv\\shäre\\**".to_string()];
        let mut p = Policy::compile(&pats, &np("/repo"), None).unwrap();
        // `//ab/cde/` is 9 bytes; byte 9 of `//srv/shäre/` is inside `ä`.
        assert_eq!(p.matches(&np("\\\\ab\\cde\\*")), MatchOutcome::NoMatch);
        p.reset_work();
        assert_eq!(p.matches(&np("\\\\SRV\\SHÄRE\\*")), MatchOutcome::Match);
    }

    #[test]
    fn shell_globs_reach_excluded_prefixes() {
        let mut p = policy(&["docs/adr/**"]);
        assert!(hit(&mut p, "docs/*/0001.md"));
        assert!(hit(&mut p, "docs/a?r"));
        assert!(hit(&mut p, "d*"));
        assert!(hit(&mut p, "do[c]s/adr/x"));
        assert!(!hit(&mut p, "src/[ab]"));
        assert!(!hit(&mut p, "*.md"));
        assert!(!hit(&mut p, "src/*"));
    }

    #[test]
    fn only_the_group_whose_prefix_fits_is_charged() {
        let pats: Vec<String> = (0..MAX_PATTERNS)
            .map(|i| format!("dir{i}/**/*.key"))
            .collect();
        let mut p = Policy::compile(&pats, &np("/repo"), None).unwrap();
        let c = np("/repo/dir7/a/b.key");
        assert_eq!(p.matches(&c), MatchOutcome::Match);
        let one = ("/repo/dir7/**/*.key".len() * "/repo/dir7/a/b.key".len()) as u64;
        assert_eq!(p.work(), one);
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
        // Every character the marker check refuses, this refuses too (it
        // refused only `[]{}!` before the two sets became one).
        for c in crate::scope::capture_config::FORBIDDEN_CHARS {
            assert_eq!(
                Policy::compile(&[format!("a{c}b")], &np("/r"), None).err(),
                Some(PolicyError::Syntax { index: 0 }),
                "{c:?}"
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

    /// globset with the options memhook used before it had its own matcher
    /// (`literal_separator`, no backslash escapes).
    fn globset(pattern: &str, win: bool) -> globset::GlobMatcher {
        globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(false)
            .case_insensitive(win)
            .build()
            .unwrap()
            .compile_matcher()
    }

    /// Hand-picked shapes: `**` first, last, in the middle, repeated, inside
    /// a segment and alone.
    #[test]
    fn deep_patterns_agree_with_globset() {
        let pats = [
            "**",
            "**/*.key",
            "**/.env",
            "**/secret/**",
            "a/**",
            "a/**/b",
            "a/**/**",
            "**/**",
            "**/**/b",
            "a/**/**/b",
            "a**b/c",
            "a/**b",
            "***",
            "a/***/b",
            "*/**",
            "**/*",
            "?/**/?",
            "*.pem",
            "a/*/c",
            "?x*",
            "b*d/e?",
            "*",
        ];
        let paths = [
            "a",
            "b",
            "a/b",
            "a/b/c",
            "a/x/y/b",
            "x.key",
            "d/k.key",
            "d/e/.env",
            ".env",
            "secret",
            "x/secret/y",
            "aXb/c",
            "a/zb",
            "a/b/b/c",
            "k.pem",
            "d/k.pem",
            "yx",
            "bcd/ef",
            "a/x",
        ];
        for p in pats {
            let theirs = globset(p, false);
            for t in paths {
                assert_eq!(deep_match(p, t, false), theirs.is_match(t), "{p} vs {t}");
            }
        }
        assert!(deep_match("**/SECRET/*.KEY", "a/secret/x.key", true));
        assert!(!deep_match("**/SECRET/*.KEY", "a/secret/x.key", false));
    }

    /// Every pattern of up to four segments drawn from a small alphabet of
    /// segment shapes, against every path of up to four segments from
    /// another: the matcher and globset give the same answer, both cases.
    #[test]
    fn deep_patterns_agree_with_globset_exhaustively() {
        fn all(alphabet: &[&str], max: usize) -> Vec<String> {
            let mut out: Vec<String> = alphabet.iter().map(|s| s.to_string()).collect();
            let mut last = out.clone();
            for _ in 1..max {
                let next: Vec<String> = last
                    .iter()
                    .flat_map(|p| alphabet.iter().map(move |s| format!("{p}/{s}")))
                    .collect();
                out.extend(next.iter().cloned());
                last = next;
            }
            out
        }
        let pats = all(&["**", "a", "*", "?b", "a*"], 4);
        let paths = all(&["a", "b", "ab", "A"], 4);
        let mut compared = 0;
        for p in &pats {
            for win in [false, true] {
                let theirs = globset(p, win);
                for t in &paths {
                    assert_eq!(
                        deep_match(p, t, win),
                        theirs.is_match(t),
                        "{p} vs {t} (case-insensitive: {win})"
                    );
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 780 * 340 * 2);
    }

    /// Longer shapes than the exhaustive test reaches, drawn at random
    /// (fixed seed): up to seven segments of patterns built from `*`, `?`,
    /// `**` and letters, against paths of up to seven segments.
    #[test]
    fn deep_patterns_agree_with_globset_at_random() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let pat_segs = [
            "**", "**", "*", "?", "a", "b", "ab", "a*", "*b", "a?b", "*a*", "**a", "a**", "A*",
        ];
        let path_segs = ["a", "b", "ab", "ba", "aab", "bab", "A", "Ab", "bbb"];
        let mut compared = 0;
        for _ in 0..3000 {
            let n = 1 + next(7);
            let pat: Vec<&str> = (0..n).map(|_| pat_segs[next(pat_segs.len())]).collect();
            let pat = pat.join("/");
            for win in [false, true] {
                let theirs = globset(&pat, win);
                for _ in 0..12 {
                    let m = 1 + next(7);
                    let path: Vec<&str> =
                        (0..m).map(|_| path_segs[next(path_segs.len())]).collect();
                    let path = path.join("/");
                    assert_eq!(
                        deep_match(&pat, &path, win),
                        theirs.is_match(&path),
                        "{pat} vs {path} (case-insensitive: {win})"
                    );
                    compared += 1;
                }
            }
        }
        assert_eq!(compared, 3000 * 2 * 12);
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
