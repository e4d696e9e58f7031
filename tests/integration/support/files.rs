//! Files on disk: every byte under a directory, and where a text is.

use std::fs;
use std::path::{Path, PathBuf};

/// Every regular file under `dir` with its bytes (files that vanish while
/// a drainer moves them are skipped).
pub fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for ent in rd.flatten() {
        let p = ent.path();
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() => walk(&p, out),
            Ok(m) if m.is_file() => {
                if let Ok(b) = fs::read(&p) {
                    out.push((p, b));
                }
            }
            _ => {}
        }
    }
}

/// Does `hay` hold the bytes of `needle`?
pub fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The files under `dir` whose bytes hold `needle`.
pub fn files_holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if std::fs::read(&p)
                .unwrap_or_default()
                .windows(needle.len())
                .any(|w| w == needle.as_bytes())
            {
                hits.push(p);
            }
        }
    }
    hits
}
