//! The policy asked about concrete files: which files under a project an
//! `ignore_paths` list excludes. The fingerprint walk uses it
//! ([`crate::fingerprint`]); a tool call's candidates go through
//! [`super::decide`] instead.

use std::path::PathBuf;

use super::path::{self, NormPath};
use super::policy::{MatchOutcome, Policy};

/// A compiled `ignore_paths` list.
pub struct Excluder {
    policy: Policy,
}

impl Excluder {
    /// The policy of `patterns`, rooted at `marker_dir`, `~/` at `home`;
    /// `None` when it cannot be compiled (the caller fails closed).
    pub fn new(patterns: &[String], marker_dir: &str, home: Option<&str>) -> Option<Excluder> {
        let dir = super::norm_abs(marker_dir)?;
        let home: Option<NormPath> = home.filter(|h| !h.is_empty()).and_then(super::norm_abs);
        let policy = Policy::compile(patterns, &dir, home.as_ref()).ok()?;
        Some(Excluder { policy })
    }

    /// The directories (or files) the patterns can match under: walk these.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.policy
            .literal_prefixes()
            .into_iter()
            .map(PathBuf::from)
            .collect()
    }

    /// Whether the file at the absolute path `p` is excluded; `None` when
    /// it cannot be decided (unusable path, over the work budget).
    pub fn excludes(&mut self, p: &str) -> Option<bool> {
        let cand = path::normalize(p, None, None, super::MAX_CANDIDATE_CHARS).ok()?;
        self.policy.reset_work();
        match self.policy.matches(&cand) {
            MatchOutcome::Match => Some(true),
            MatchOutcome::NoMatch => Some(false),
            MatchOutcome::OverBudget => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_for_concrete_files_and_names_the_roots_to_walk() {
        let pats = vec![
            "secret/**".to_string(),
            "**/.env".to_string(),
            "~/keys/*.pem".to_string(),
        ];
        let mut e = Excluder::new(&pats, "/repo", Some("/home/u")).unwrap();
        // Only paths of this system's flavour are walked.
        let posix = vec![
            PathBuf::from("/home/u/keys"),
            PathBuf::from("/repo"),
            PathBuf::from("/repo/secret"),
        ];
        assert_eq!(e.roots(), if cfg!(windows) { vec![] } else { posix });
        assert_eq!(e.excludes("/repo/secret/a/key.txt"), Some(true));
        assert_eq!(e.excludes("/repo/src/.env"), Some(true));
        assert_eq!(e.excludes("/home/u/keys/id.pem"), Some(true));
        assert_eq!(e.excludes("/repo/src/main.rs"), Some(false));
    }

    /// Windows patterns are walked on Windows (folded: names compare
    /// without case there), and not elsewhere; they match either way.
    #[test]
    fn windows_patterns_are_walked_on_windows_only() {
        let pats = vec!["secret/**".to_string()];
        let mut e = Excluder::new(&pats, r"C:\Repo", None).unwrap();
        let want = if cfg!(windows) {
            vec![PathBuf::from("c:/repo/secret")]
        } else {
            vec![]
        };
        assert_eq!(e.roots(), want);
        assert_eq!(e.excludes(r"c:\REPO\Secret\key.txt"), Some(true));
        assert_eq!(e.excludes(r"C:\Repo\src\main.rs"), Some(false));
    }
}
