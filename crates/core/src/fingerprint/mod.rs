//! The second line of exclusion (DESIGN §3, docs/capture.md): keyed
//! fingerprints of the lines of the files a project excludes, and the
//! filter that removes those lines from every kept text, however the
//! content travelled (an unknown tool, a copy, a variable, `cd`, a script,
//! a symlink, an archive, a diff in any format, a prompt, the agent's own
//! words).
//!
//! - The hook only notes, on each spool entry, which exclusions applied
//!   ([`Exclusions`]); it reads no excluded file and no set.
//! - The drainer, before it delivers an entry, makes sure the project's set
//!   is current (a stat-only walk whose digest names the set; a rebuild
//!   when it changed) and filters the record ([`Fingerprints::screen`]). A
//!   project seen for the first time is therefore no open window: its first
//!   records wait in the spool until its set exists.
//! - A set that cannot be built, or that a budget cut short, withholds every
//!   text of its project's records (fail closed) and says why in the log.
//! - Sets live in `<data dir>/fingerprints/`, owner-only: a 16-byte key per
//!   data dir and one file of sorted 64-bit SipHash values per policy. No
//!   line, path or pattern is written there.

pub mod build;
pub mod filter;
pub mod lines;
pub mod set;
pub mod sip;

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::capture::Excluder;
use crate::record::Record;
use crate::scope::CaptureConfig;
pub use set::FpSet;
pub use sip::SipKey;

/// The data dir's folder of fingerprint sets.
pub const DIR: &str = "fingerprints";
/// The key file in [`DIR`]: 32 random bytes (fingerprint key, digest key).
pub const KEY_FILE: &str = "key";
/// A set in memory is walked again (is it still current?) at most this often.
pub const RECHECK: Duration = Duration::from_secs(1);
/// Longest marker path an entry may name.
pub const MAX_MARKER_BYTES: usize = 4_096;
/// What replaces a record's texts when its project's set is not usable.
pub const WITHHELD: &str = "[text withheld: the fingerprints of this project's excluded files are not available; see `memhook status`]";

/// The exclusions that applied to one event: the marker whose `[capture]
/// ignore_paths` were active, its patterns as written, and the home
/// directory `~/` meant. Carried on the spool entry, never delivered.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Exclusions {
    pub marker: String,
    pub patterns: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
}

impl Exclusions {
    /// The exclusions of an active capture policy (none otherwise: an
    /// invalid policy has no usable patterns and fails closed on its own).
    pub fn of(config: &CaptureConfig) -> Option<Exclusions> {
        let CaptureConfig::Active {
            marker, patterns, ..
        } = config
        else {
            return None;
        };
        Some(Exclusions {
            marker: marker.to_str()?.to_string(),
            patterns: patterns.clone(),
            home: crate::scope::env::home_env().and_then(|h| h.into_string().ok()),
        })
    }

    /// Why an entry's exclusions are not what a hook writes, if they are not.
    pub fn problem(&self) -> Option<String> {
        if self.marker.len() > MAX_MARKER_BYTES || !Path::new(&self.marker).is_absolute() {
            return Some("exclusions name a marker that is not an absolute path".into());
        }
        if self.patterns.is_empty() || self.patterns.len() > crate::capture::MAX_PATTERNS {
            return Some("exclusions hold no pattern or too many".into());
        }
        if self
            .patterns
            .iter()
            .any(|p| p.chars().count() > crate::capture::MAX_PATTERN_CHARS)
        {
            return Some("an exclusion pattern is too long".into());
        }
        if self
            .home
            .as_ref()
            .is_some_and(|h| h.len() > MAX_MARKER_BYTES)
        {
            return Some("exclusions name a home that is too long".into());
        }
        None
    }

    fn marker_dir(&self) -> Option<&str> {
        Path::new(&self.marker).parent().and_then(Path::to_str)
    }

    fn excluder(&self) -> Option<Excluder> {
        Excluder::new(&self.patterns, self.marker_dir()?, self.home.as_deref())
    }
}

/// Why fingerprints cannot be used.
#[derive(Debug)]
pub enum FpError {
    Io { path: PathBuf, source: io::Error },
    BadKey { path: PathBuf },
    Policy,
}

impl fmt::Display for FpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FpError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            FpError::BadKey { path } => write!(
                f,
                "{} is not a fingerprint key (32 bytes, owner-only); delete it and memhook makes a new one",
                path.display()
            ),
            FpError::Policy => f.write_str("the exclusions cannot be compiled"),
        }
    }
}

impl std::error::Error for FpError {}

/// What [`Fingerprints::screen`] did to a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Screened {
    /// Nothing matched.
    Clean,
    /// This many lines were removed.
    Removed(usize),
    /// The set was not usable: every text was withheld. The reason names
    /// no path of an excluded file's content.
    Withheld(String),
}

struct Cached {
    set: Arc<FpSet>,
    checked: Instant,
}

/// The fingerprint sets of one data dir, as a drainer uses them.
pub struct Fingerprints {
    dir: PathBuf,
    key: SipKey,
    digest_key: SipKey,
    sets: HashMap<Exclusions, Cached>,
}

impl Fingerprints {
    /// Open (creating when missing) `<data_dir>/fingerprints` and its key.
    pub fn open(data_dir: &Path) -> Result<Fingerprints, FpError> {
        let dir = data_dir.join(DIR);
        crate::data_dir::ensure_private_dir(&dir).map_err(|e| FpError::Io {
            path: dir.clone(),
            source: io::Error::other(e.to_string()),
        })?;
        let (key, digest_key) = load_or_make_key(&dir.join(KEY_FILE))?;
        Ok(Fingerprints {
            dir,
            key,
            digest_key,
            sets: HashMap::new(),
        })
    }

    /// The file name of a policy's set.
    fn set_path(&self, ex: &Exclusions) -> PathBuf {
        let mut id = Vec::new();
        id.extend_from_slice(ex.marker.as_bytes());
        for p in &ex.patterns {
            id.push(0);
            id.extend_from_slice(p.as_bytes());
        }
        id.push(1);
        id.extend_from_slice(ex.home.as_deref().unwrap_or("").as_bytes());
        let h = self.digest_key.hash(&id);
        self.dir.join(format!("{h:016x}.set"))
    }

    /// The current set of `ex`: the one in memory when walked within
    /// [`RECHECK`], else the one on disk when its digest still matches the
    /// walk, else a new build (written to disk).
    pub fn set_for(&mut self, ex: &Exclusions) -> Result<Arc<FpSet>, FpError> {
        if let Some(c) = self.sets.get(ex) {
            if c.checked.elapsed() < RECHECK {
                return Ok(Arc::clone(&c.set));
            }
        }
        let mut excluder = ex.excluder().ok_or(FpError::Policy)?;
        let path = self.set_path(ex);
        let id = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let walk = build::scan(&mut excluder);
        let digest = walk.digest(&self.digest_key, id);
        if let Some(c) = self.sets.get_mut(ex) {
            if c.set.digest == digest {
                c.checked = Instant::now();
                return Ok(Arc::clone(&c.set));
            }
        }
        let on_disk = crate::data_dir::read_private_file(&path, max_set_file_bytes())
            .ok()
            .and_then(|b| FpSet::decode(&b).ok())
            .filter(|s| s.digest == digest);
        let set = match on_disk {
            Some(s) => s,
            None => {
                let project = ex.marker_dir().map(PathBuf::from);
                let s = build::build(&walk, &mut excluder, project.as_deref(), &self.key, digest);
                crate::data_dir::write_private_file(&path, &s.encode()).map_err(|source| {
                    FpError::Io {
                        path: path.clone(),
                        source,
                    }
                })?;
                s
            }
        };
        let set = Arc::new(set);
        self.sets.insert(
            ex.clone(),
            Cached {
                set: Arc::clone(&set),
                checked: Instant::now(),
            },
        );
        Ok(set)
    }

    /// Remove from every text of `rec` the lines of `ex`'s excluded files;
    /// withhold them all when the set is not usable.
    pub fn screen(&mut self, ex: &Exclusions, rec: &mut Record) -> Screened {
        let set =
            match self.set_for(ex) {
                Ok(s) if s.complete => s,
                Ok(_) => return withhold(
                    rec,
                    "a budget ran out while fingerprinting the excluded files (docs/capture.md)"
                        .into(),
                ),
                Err(e) => return withhold(rec, e.to_string()),
            };
        let mut removed = 0;
        for text in rec.texts_mut() {
            if let Some((kept, n)) = filter::filter(&set, &self.key, text) {
                *text = kept;
                removed += n;
            }
        }
        if removed == 0 {
            Screened::Clean
        } else {
            Screened::Removed(removed)
        }
    }
}

/// Withhold every text of `rec` (fail closed), for `why`.
pub fn withhold(rec: &mut Record, why: String) -> Screened {
    let mut any = false;
    for text in rec.texts_mut() {
        if !text.is_empty() {
            any = true;
            text.clear();
        }
    }
    if any {
        rec.body = None;
        rec.title = Some(WITHHELD.to_string());
    }
    Screened::Withheld(why)
}

fn max_set_file_bytes() -> u64 {
    41 + 8 * set::MAX_FINGERPRINTS as u64
}

/// Read the key, or make one (a new file, never through a link).
fn load_or_make_key(path: &Path) -> Result<(SipKey, SipKey), FpError> {
    let split = |b: &[u8]| {
        let mut a = [0u8; 16];
        let mut d = [0u8; 16];
        a.copy_from_slice(&b[..16]);
        d.copy_from_slice(&b[16..32]);
        (SipKey::from_bytes(&a), SipKey::from_bytes(&d))
    };
    match crate::data_dir::read_private_file(path, 64) {
        Ok(b) if b.len() == 32 => return Ok(split(&b)),
        Ok(_) => {
            return Err(FpError::BadKey {
                path: path.to_path_buf(),
            })
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(_) => {
            return Err(FpError::BadKey {
                path: path.to_path_buf(),
            })
        }
    }
    let mut b = [0u8; 32];
    crate::entropy::fill(&mut b).map_err(|source| FpError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    match opts.open(path) {
        Ok(mut f) => {
            use std::io::Write;
            f.write_all(&b)
                .and_then(|_| f.sync_all())
                .map_err(|source| FpError::Io {
                    path: path.to_path_buf(),
                    source,
                })?;
            Ok(split(&b))
        }
        // Another drainer made it first: use that one.
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            match crate::data_dir::read_private_file(path, 64) {
                Ok(b) if b.len() == 32 => Ok(split(&b)),
                _ => Err(FpError::BadKey {
                    path: path.to_path_buf(),
                }),
            }
        }
        Err(source) => Err(FpError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests;
