//! Finding and reading a project's excluded files, within budgets: a
//! stat-only walk ([`scan`], cheap, run before every use of a set to see
//! whether it is still current) and the build ([`build`], which reads the
//! files, run only when the walk's digest changed).
//!
//! The walk never follows a symbolic link, never opens anything but a
//! regular file (a FIFO or device is never read, so it cannot block), and
//! stops at its budgets. A budget that runs out makes the set incomplete,
//! and an incomplete set withholds its project's texts (fail closed).

use std::fs;
use std::path::{Path, PathBuf};

use super::set::{Builder, FpSet};
use super::sip::SipKey;
use crate::capture::Excluder;

/// Directory entries one walk looks at.
pub const MAX_WALK_ENTRIES: usize = 200_000;
/// Excluded files one set covers.
pub const MAX_EXCLUDED_FILES: usize = 20_000;
/// Bytes of one excluded file.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Bytes of all excluded files together.
pub const MAX_EXCLUDED_BYTES: u64 = 64 * 1024 * 1024;
/// Bytes of kept files read to learn which lines are common (best effort:
/// past it, common lines are simply not known).
pub const MAX_KEPT_BYTES: u64 = 32 * 1024 * 1024;
/// Bytes of one kept file read for that.
pub const MAX_KEPT_FILE_BYTES: u64 = 1024 * 1024;
/// A file whose first this many bytes hold a NUL is binary: it has no lines.
pub const BINARY_SNIFF_BYTES: usize = 8 * 1024;

/// One excluded file as the walk saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub path: PathBuf,
    pub len: u64,
    pub mtime_ns: i128,
    pub ino: u64,
}

/// What a stat-only walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Walk {
    pub files: Vec<Seen>,
    /// Every root was walked to its end within the budgets, and every file
    /// could be decided.
    pub complete: bool,
    /// Why not, when not (for the drainer's log).
    pub gap: Option<String>,
}

impl Walk {
    /// A keyed digest of the policy and of every excluded file's name,
    /// size, modification time and inode: equal digests, same set.
    pub fn digest(&self, key: &SipKey, policy_id: &str) -> [u8; 16] {
        let mut data = Vec::new();
        data.extend_from_slice(policy_id.as_bytes());
        data.push(u8::from(self.complete));
        for f in &self.files {
            data.extend_from_slice(f.path.as_os_str().as_encoded_bytes());
            data.push(0);
            data.extend_from_slice(&f.len.to_le_bytes());
            data.extend_from_slice(&f.mtime_ns.to_le_bytes());
            data.extend_from_slice(&f.ino.to_le_bytes());
        }
        let mut out = [0u8; 16];
        data.push(0);
        out[..8].copy_from_slice(&key.hash(&data).to_le_bytes());
        *data.last_mut().expect("pushed") = 1;
        out[8..].copy_from_slice(&key.hash(&data).to_le_bytes());
        out
    }
}

fn stat_of(path: &Path, meta: &fs::Metadata) -> Seen {
    #[cfg(unix)]
    let (mtime_ns, ino) = {
        use std::os::unix::fs::MetadataExt;
        (
            i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            meta.ino(),
        )
    };
    #[cfg(not(unix))]
    let (mtime_ns, ino) = (
        meta.modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos() as i128),
        0,
    );
    Seen {
        path: path.to_path_buf(),
        len: meta.len(),
        mtime_ns,
        ino,
    }
}

/// Visit the regular files under `roots` (a root may itself be a file),
/// in a stable order, without following links; `visit` returns `false` to
/// stop. Returns whether the walk ended within `max_entries`.
fn walk_files(
    roots: &[PathBuf],
    max_entries: usize,
    mut visit: impl FnMut(&Path, &fs::Metadata) -> bool,
) -> bool {
    let mut entries = 0usize;
    // Roots under another root are walked once, as part of it.
    let mut roots: Vec<&PathBuf> = roots.iter().collect();
    roots.sort();
    roots.dedup();
    let kept: Vec<&PathBuf> = roots
        .iter()
        .filter(|r| !roots.iter().any(|o| o != *r && r.starts_with(o)))
        .copied()
        .collect();
    for root in kept {
        let Ok(meta) = fs::symlink_metadata(root) else {
            continue;
        };
        let mut stack = vec![(root.clone(), meta)];
        while let Some((p, meta)) = stack.pop() {
            entries += 1;
            if entries > max_entries {
                return false;
            }
            let ft = meta.file_type();
            if ft.is_file() {
                if !visit(&p, &meta) {
                    return true;
                }
            } else if ft.is_dir() {
                if p.file_name().is_some_and(|n| n == ".git") {
                    continue;
                }
                let Ok(rd) = fs::read_dir(&p) else { continue };
                let mut kids: Vec<(PathBuf, fs::Metadata)> = rd
                    .filter_map(Result::ok)
                    .filter_map(|e| {
                        let path = e.path();
                        fs::symlink_metadata(&path).ok().map(|m| (path, m))
                    })
                    .collect();
                kids.sort_by(|a, b| b.0.cmp(&a.0));
                stack.extend(kids);
            }
            // Links, FIFOs, sockets, devices: never followed, never read.
        }
    }
    true
}

/// The stat-only walk: which files `excluder` excludes under its roots.
pub fn scan(excluder: &mut Excluder) -> Walk {
    let mut files = Vec::new();
    let mut gap: Option<String> = None;
    let roots = excluder.roots();
    let ended = walk_files(&roots, MAX_WALK_ENTRIES, |p, meta| {
        let Some(text) = p.to_str() else {
            // Not UTF-8: the policy cannot speak of it. Fingerprint it.
            files.push(stat_of(p, meta));
            return files.len() <= MAX_EXCLUDED_FILES;
        };
        match excluder.excludes(text) {
            Some(true) => files.push(stat_of(p, meta)),
            Some(false) => {}
            None => {
                gap.get_or_insert_with(|| format!("{} could not be matched", p.display()));
            }
        }
        if files.len() > MAX_EXCLUDED_FILES {
            gap = Some(format!("more than {MAX_EXCLUDED_FILES} excluded files"));
            return false;
        }
        true
    });
    if !ended {
        gap.get_or_insert_with(|| format!("more than {MAX_WALK_ENTRIES} entries to walk"));
    }
    Walk {
        complete: gap.is_none(),
        gap,
        files,
    }
}

/// Read `p` if it is still a regular file, at most `limit` bytes (`None`:
/// gone, not regular, larger than `limit`).
fn read_regular(p: &Path, limit: u64) -> Option<Vec<u8>> {
    let f = crate::data_dir::open_nofollow(p).ok()?;
    let meta = f.metadata().ok()?;
    if !meta.is_file() || meta.len() > limit {
        return None;
    }
    crate::data_dir::read_capped(&f, meta.len(), limit + 1)
        .ok()
        .filter(|b| b.len() as u64 <= limit)
}

fn is_binary(b: &[u8]) -> bool {
    b[..b.len().min(BINARY_SNIFF_BYTES)].contains(&0)
}

/// Read the excluded files of `walk` into a set; `project` is walked (best
/// effort, within [`MAX_KEPT_BYTES`]) for the lines of kept files, which are
/// common and not fingerprints.
pub fn build(
    walk: &Walk,
    excluder: &mut Excluder,
    project: Option<&Path>,
    key: &SipKey,
    digest: [u8; 16],
) -> FpSet {
    let mut b = Builder::new(key);
    let mut complete = walk.complete;
    let mut total = 0u64;
    for f in &walk.files {
        if f.len > MAX_FILE_BYTES || total + f.len > MAX_EXCLUDED_BYTES {
            complete = false;
            break;
        }
        match read_regular(&f.path, MAX_FILE_BYTES) {
            Some(bytes) => {
                total += bytes.len() as u64;
                // Binary files have no lines; the path rules keep them out.
                if !is_binary(&bytes) {
                    b.add_excluded(&bytes);
                }
            }
            // Gone since the walk: the next walk's digest differs.
            None if !f.path.exists() => {}
            None => complete = false,
        }
        if b.len() > super::set::MAX_FINGERPRINTS {
            complete = false;
            break;
        }
    }
    if let Some(project) = project {
        let mut kept_total = 0u64;
        let excluded: std::collections::HashSet<&Path> =
            walk.files.iter().map(|f| f.path.as_path()).collect();
        walk_files(&[project.to_path_buf()], MAX_WALK_ENTRIES, |p, meta| {
            if excluded.contains(p) || meta.len() > MAX_KEPT_FILE_BYTES {
                return true;
            }
            if p.to_str().map(|t| excluder.excludes(t)) != Some(Some(false)) {
                return true;
            }
            if kept_total + meta.len() > MAX_KEPT_BYTES {
                return false;
            }
            if let Some(bytes) = read_regular(p, MAX_KEPT_FILE_BYTES) {
                kept_total += bytes.len() as u64;
                if !is_binary(&bytes) {
                    b.add_kept(&bytes);
                }
            }
            true
        });
    }
    b.finish(digest, complete)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_finds_excluded_files_and_never_follows_a_link() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        fs::create_dir_all(root.join("secret/deep")).unwrap();
        fs::create_dir_all(root.join("src")).unwrap();
        fs::write(
            root.join("secret/deep/key.txt"),
            "DB_PASSWORD=hunter2-horse-battery\n",
        )
        .unwrap();
        fs::write(root.join("src/.env"), "TOKEN=abcdefghijklmnop\n").unwrap();
        fs::write(
            root.join("src/main.rs"),
            "fn main() { println!(\"hello\"); }\n",
        )
        .unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("other.txt"), "not excluded\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(outside.path(), root.join("secret/link")).unwrap();
        let pats = vec!["secret/**".to_string(), "**/.env".to_string()];
        let mut ex = Excluder::new(&pats, root.to_str().unwrap(), None).unwrap();
        let w = scan(&mut ex);
        assert!(w.complete, "{:?}", w.gap);
        // Where names fold (Windows), the walk starts from the folded
        // prefix: compare folded, with `/`.
        let norm = |p: &Path| {
            let s = p.to_str().unwrap().replace('\\', "/");
            if cfg!(windows) {
                s.to_lowercase()
            } else {
                s
            }
        };
        let base = norm(root);
        let names: Vec<String> = w
            .files
            .iter()
            .map(|f| norm(&f.path)[base.len() + 1..].to_string())
            .collect();
        assert_eq!(names, vec!["secret/deep/key.txt", "src/.env"]);

        let key = SipKey::from_bytes(&[5; 16]);
        let d = w.digest(&key, "p");
        let set = build(&w, &mut ex, Some(root), &key, d);
        assert!(set.complete);
        assert!(set.has_line(key.hash(b"DB_PASSWORD=hunter2-horse-battery")));
        assert!(set.has_line(key.hash(b"TOKEN=abcdefghijklmnop")));
        assert_eq!(set.len(), 2);

        // A change to an excluded file changes the digest; to a kept one, not.
        fs::write(root.join("src/main.rs"), "fn main() {}\n").unwrap();
        assert_eq!(scan(&mut ex).digest(&key, "p"), d);
        fs::write(
            root.join("secret/deep/key.txt"),
            "DB_PASSWORD=changed-horse-battery-x\n",
        )
        .unwrap();
        assert_ne!(scan(&mut ex).digest(&key, "p"), d);
    }

    #[test]
    fn an_excluded_file_over_its_budget_makes_the_set_incomplete() {
        let t = tempfile::tempdir().unwrap();
        let root = t.path();
        fs::create_dir_all(root.join("data")).unwrap();
        let f = fs::File::create(root.join("data/huge.csv")).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let pats = vec!["data/**".to_string()];
        let mut ex = Excluder::new(&pats, root.to_str().unwrap(), None).unwrap();
        let w = scan(&mut ex);
        let key = SipKey::from_bytes(&[5; 16]);
        let set = build(&w, &mut ex, None, &key, [0; 16]);
        assert!(!set.complete);
    }
}
