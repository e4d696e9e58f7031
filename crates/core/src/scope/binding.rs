//! Scope binding (DESIGN §11): the first root that writes to a scope its
//! marker names owns that scope; another root claiming it is untrusted for
//! it (its events go to a quarantine scope of its own, and it gets no
//! briefing and no memory of the claimed scope) until the user runs
//! `memhook trust` there.
//!
//! The ledger lives in `<data dir>/bindings/`, one directory per scope
//! (named by a hash of `workspace/project`):
//!
//! ```text
//! bindings/<scope key>/owner              the root that bound the scope
//! bindings/<scope key>/roots/<root key>   every other root seen: same
//!                                         repository, other repository, or
//!                                         the user's trust / untrust
//! ```
//!
//! Each file is one small JSON object (at most [`MAX_ENTRY_BYTES`]), 0600,
//! opened without following symlinks. `owner` is created with a hard link
//! from a complete temporary file, so two hooks of new roots racing for the
//! same scope bind it once; root entries are replaced whole (rename). A
//! root already known costs one file read (`owner` for the owner, its own
//! entry besides for any other root); only an unknown root (or one whose
//! `.git` was replaced) pays for its identity (`root::identity`). A ledger
//! that cannot be read fails closed: the claim is untrusted, with a warning.

use crate::hex::encode as hex;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::root::{self, Identity, Root};
use super::{Scope, Source};
use crate::data_dir::{check_private_dir, ensure_private_dir, open_private_sized};

/// The ledger's directory in the data dir.
pub const LEDGER_DIR: &str = "bindings";
/// The file naming the root that bound a scope.
pub const OWNER_FILE: &str = "owner";
/// The directory of the other roots seen for a scope.
pub const ROOTS_DIR: &str = "roots";
/// Largest ledger file read; a bigger one is corrupt.
pub const MAX_ENTRY_BYTES: u64 = 8 * 1024;
/// At most this many other roots are remembered per scope; past it a new
/// root's verdict is computed on each call instead of kept (the user's
/// `trust` / `untrust` is always kept).
pub const MAX_ROOTS_PER_SCOPE: usize = 256;
/// The workspace quarantined events go to. A marker cannot claim it.
pub const QUARANTINE_WORKSPACE: &str = "quarantine";
/// Hex digits of the root hash in a quarantine project name.
pub const QUARANTINE_HASH_LEN: usize = 8;
/// Ledger format version.
const VERSION: u32 = 1;

/// What a ledger file says about one root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Verdict {
    /// This root bound the scope (the `owner` file).
    Owner,
    /// Same repository as the owner (clone, worktree, moved checkout).
    Same,
    /// Another repository: untrusted.
    Other,
    /// The user ran `memhook trust` here.
    Trusted,
    /// The user ran `memhook untrust` here.
    Untrusted,
}

/// One ledger file.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Entry {
    v: u32,
    workspace: String,
    project: String,
    root: PathBuf,
    stamp: String,
    verdict: Verdict,
    #[serde(flatten)]
    identity: Identity,
    at_ms: u64,
}

/// Whether a check may write the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Bind an unbound scope and remember verdicts (hooks, commands that
    /// read or write the scope's data).
    Bind,
    /// Report only (`memhook show`).
    ReadOnly,
}

/// Where a scope stands for the root that claims it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No marker names the scope: it is derived from the directory itself.
    Derived,
    /// A command-line flag names the scope (the user's own words).
    FlagTrusted,
    /// `AI_MEMORY_WORKSPACE` / `AI_MEMORY_PROJECT` name the scope.
    EnvTrusted,
    /// The marker names a scope nobody has bound yet.
    Unbound,
    /// This root bound the scope.
    BoundHere,
    /// Another checkout of the same repository bound it.
    SameRepository,
    /// The user trusted this root with `memhook trust`.
    Trusted,
    /// Untrusted: see [`Binding::reason`].
    Untrusted,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Derived => "derived",
            State::FlagTrusted => "flag-trusted",
            State::EnvTrusted => "env-trusted",
            State::Unbound => "unbound",
            State::BoundHere => "bound-here",
            State::SameRepository => "same-repository",
            State::Trusted => "trusted",
            State::Untrusted => "untrusted",
        }
    }
}

/// The binding of a resolved scope, as seen from the root claiming it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub state: State,
    /// The scope the marker claims.
    pub claimed: (String, String),
    /// This checkout's root (for a marker-named scope).
    pub root: Option<PathBuf>,
    /// The directory to pass to `memhook trust` / `untrust` (the marker's).
    pub marker_dir: Option<PathBuf>,
    /// The root that bound the scope.
    pub bound_root: Option<PathBuf>,
    /// The scope's ledger directory.
    pub ledger: Option<PathBuf>,
    /// Where this root's events go while it is untrusted.
    pub quarantine: Option<(String, String)>,
    /// Why the root is untrusted.
    pub reason: Option<String>,
    /// What made it untrusted.
    pub cause: Option<Cause>,
}

/// What made a root untrusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// Another repository bound the scope.
    OtherRepository,
    /// The user ran `memhook untrust` here.
    User,
    /// The ledger (or the checkout) cannot be read: fail closed.
    Unusable,
    /// The marker claims memhook's own quarantine workspace.
    Reserved,
}

impl Binding {
    /// Whether the root may use the claimed scope.
    pub fn trusted(&self) -> bool {
        self.state != State::Untrusted
    }

    /// The command the user runs next, if any: `trust` for an untrusted
    /// root, `untrust` to take back a trust (or a same-repository match).
    pub fn run(&self) -> Option<String> {
        let dir = self.marker_dir.as_deref()?;
        let verb = match self.state {
            State::Untrusted => "trust",
            State::SameRepository | State::Trusted => "untrust",
            _ => return None,
        };
        Some(format!("memhook {verb} {}", shell_word(dir)))
    }

    /// The `binding` object of `memhook show --json`.
    pub fn to_json(&self) -> serde_json::Value {
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        json!({
            "state": self.state.as_str(),
            "trusted": self.trusted(),
            "claimed": format!("{}/{}", self.claimed.0, self.claimed.1),
            "root": path(&self.root),
            "bound_root": path(&self.bound_root),
            "quarantine": self.quarantine.as_ref().map(|(w, p)| format!("{w}/{p}")),
            "reason": self.reason,
            "ledger": path(&self.ledger),
            "run": self.run(),
        })
    }

    /// One line for `memhook show`.
    pub fn describe(&self) -> String {
        let (w, p) = &self.claimed;
        let shown = |p: &Option<PathBuf>| p.as_deref().map_or("?".to_string(), printable);
        let mut s = match self.state {
            State::Derived => "derived from the directory (no marker names the scope)".to_string(),
            State::FlagTrusted => "trusted (named on the command line)".to_string(),
            State::EnvTrusted => {
                "trusted (named by AI_MEMORY_WORKSPACE/AI_MEMORY_PROJECT)".to_string()
            }
            State::Unbound => format!(
                "unbound: the next hook event from {} binds {w}/{p} to it",
                shown(&self.root)
            ),
            State::BoundHere => format!("bound here ({})", shown(&self.root)),
            State::SameRepository => format!(
                "trusted: same repository as {}, which bound {w}/{p}",
                shown(&self.bound_root)
            ),
            State::Trusted => format!("trusted by you (bound to {})", shown(&self.bound_root)),
            State::Untrusted => {
                let q = self.quarantine.as_ref().map_or(String::new(), |(qw, qp)| {
                    format!("; events go to {qw}/{qp}")
                });
                format!(
                    "untrusted: {}{q}; no briefing or memory from {w}/{p}",
                    self.reason.as_deref().unwrap_or("")
                )
            }
        };
        if let Some(cmd) = self.run() {
            s.push_str(&format!(" (run: {cmd})"));
        }
        s
    }

    /// The stderr warning an untrusted root gets.
    pub fn warning(&self) -> String {
        let (w, p) = &self.claimed;
        let q = self.quarantine.as_ref().map_or(String::new(), |(qw, qp)| {
            format!("its events go to {qw}/{qp} and ")
        });
        let run = self.run().map_or(String::new(), |c| {
            format!("; if this checkout is yours, run: {c}")
        });
        format!(
            "scope {w}/{p} is not trusted here ({}): {q}it gets no briefing or memory from {w}/{p}{run}",
            self.reason.as_deref().unwrap_or("untrusted")
        )
    }
}

/// The binding of `scope` (resolved for the directory that claims it).
pub fn check(data_dir: &Path, scope: &Scope, access: Access) -> Binding {
    let claimed = (scope.workspace.clone(), scope.project.clone());
    let mut b = Binding {
        state: State::Derived,
        claimed,
        root: None,
        marker_dir: None,
        bound_root: None,
        ledger: None,
        quarantine: None,
        reason: None,
        cause: None,
    };
    let sources = [scope.workspace_source, scope.project_source];
    if !sources.contains(&Source::Marker) {
        b.state = if sources.contains(&Source::Flag) {
            State::FlagTrusted
        } else if sources.contains(&Source::Env) {
            State::EnvTrusted
        } else {
            State::Derived
        };
        return b;
    }
    let marker_dir = scope.marker.as_deref().and_then(Path::parent);
    b.marker_dir = marker_dir.map(Path::to_path_buf);
    let Some(root) = marker_dir.and_then(root::find) else {
        return untrusted(
            b,
            None,
            Cause::Unusable,
            "the marker's directory cannot be inspected".into(),
        );
    };
    b.root = Some(root.path.clone());
    if scope.workspace == QUARANTINE_WORKSPACE {
        return untrusted(
            b,
            Some(&root),
            Cause::Reserved,
            format!(
                "the workspace {QUARANTINE_WORKSPACE:?} is memhook's own; a marker cannot claim it"
            ),
        );
    }
    let ledger = data_dir
        .join(LEDGER_DIR)
        .join(scope_key(&scope.workspace, &scope.project));
    b.ledger = Some(ledger.clone());
    let owner = match read_owner(data_dir, &ledger, scope, &root, access) {
        Ok(Some(o)) => o,
        Ok(None) => {
            b.state = State::Unbound;
            return b;
        }
        Err(e) => {
            let why = format!("{e}; delete {} to rebind", ledger.display());
            return untrusted(b, Some(&root), Cause::Unusable, why);
        }
    };
    b.bound_root = Some(owner.root.clone());
    if owner.root == root.path && owner.stamp == root.stamp {
        b.state = State::BoundHere;
        return b;
    }
    let entry_path = ledger.join(ROOTS_DIR).join(root_key(&root.path));
    let known = match read_entry(&ledger, &entry_path) {
        Ok(e) => e.filter(|e| e.root == root.path && e.stamp == root.stamp),
        Err(e) => {
            let why = format!("{e}; delete it or run memhook trust/untrust again");
            return untrusted(b, Some(&root), Cause::Unusable, why);
        }
    };
    let verdict = match known {
        Some(e) => e.verdict,
        None => {
            let identity = root::identity(&root);
            let verdict = if owner.identity.same_repository(&identity) {
                Verdict::Same
            } else {
                Verdict::Other
            };
            if access == Access::Bind {
                let _ = remember(&ledger, &entry_path, scope, &root, identity, verdict, false);
            }
            verdict
        }
    };
    let bound = printable(&owner.root);
    match verdict {
        Verdict::Owner => {
            b.state = State::BoundHere;
            b
        }
        Verdict::Same => {
            b.state = State::SameRepository;
            b
        }
        Verdict::Trusted => {
            b.state = State::Trusted;
            b
        }
        Verdict::Other => {
            let why = format!("bound to {bound}, another repository");
            untrusted(b, Some(&root), Cause::OtherRepository, why)
        }
        Verdict::Untrusted => {
            let why = format!("bound to {bound}; you ran memhook untrust here");
            untrusted(b, Some(&root), Cause::User, why)
        }
    }
}

fn untrusted(mut b: Binding, root: Option<&Root>, cause: Cause, reason: String) -> Binding {
    b.state = State::Untrusted;
    b.reason = Some(reason);
    b.cause = Some(cause);
    b.quarantine = Some(quarantine_scope(
        &b.claimed.0,
        &b.claimed.1,
        root.map_or(Path::new(""), |r| r.path.as_path()),
    ));
    b
}

/// The hook's check: bind or verify, then send an untrusted root's events
/// to its quarantine. Returns `true` when the scope was quarantined (the
/// caller then composes no briefing). `loud`: say why on stderr (session
/// start); an unusable ledger is reported on every call.
pub fn enforce_hook(data_dir: &Path, scope: &mut Scope, loud: bool) -> bool {
    let b = check(data_dir, scope, Access::Bind);
    if b.trusted() {
        return false;
    }
    if loud || b.cause == Some(Cause::Unusable) {
        eprintln!("memhook: {}", b.warning());
    }
    quarantine(scope, &b);
    true
}

/// A client command's check: `mcp` (which writes memory) binds
/// ([`Access::Bind`]), `recent` and `search` only read. An untrusted root
/// is moved to its quarantine with a warning on stderr.
pub fn enforce_client(data_dir: &Path, scope: &mut Scope, access: Access) -> Binding {
    let b = check(data_dir, scope, access);
    if !b.trusted() {
        eprintln!("memhook: warning: {}", b.warning());
        quarantine(scope, &b);
    }
    b
}

/// Rewrite an untrusted scope to its quarantine: the quarantine's names,
/// and nothing that reaches beyond it (no global recall, no project brief).
pub fn quarantine(scope: &mut Scope, b: &Binding) {
    if let Some((w, p)) = &b.quarantine {
        scope.workspace = w.clone();
        scope.project = p.clone();
        scope.settings.default_global = false;
        scope.settings.inject_on_session_start = false;
    }
}

/// `quarantine/<project>.<hash>`: one per (root, claimed scope), a valid
/// name whatever the claimed project's length.
pub fn quarantine_scope(workspace: &str, project: &str, root: &Path) -> (String, String) {
    let mut h = Sha256::new();
    h.update(root.as_os_str().as_encoded_bytes());
    h.update([0]);
    h.update(workspace.as_bytes());
    h.update([0]);
    h.update(project.as_bytes());
    let hash = hex(&h.finalize())[..QUARANTINE_HASH_LEN].to_string();
    let keep = crate::names::MAX_NAME_LEN - QUARANTINE_HASH_LEN - 1;
    let base = &project[..project.len().min(keep)];
    (QUARANTINE_WORKSPACE.to_string(), format!("{base}.{hash}"))
}

/// What `memhook trust` / `untrust` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The scope was unbound: `trust` bound it to this root.
    Bound,
    /// The verdict was written.
    Recorded,
    /// Nothing to change.
    Unchanged,
}

/// Why `memhook trust` / `untrust` cannot do it (exit 2).
#[derive(Debug)]
pub struct TrustError(pub String);

impl std::fmt::Display for TrustError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TrustError {}

/// Record the user's trust (`trusted`) or distrust of the root claiming
/// `scope`.
pub fn set_trust(
    data_dir: &Path,
    scope: &Scope,
    trusted: bool,
) -> Result<(Change, Binding), TrustError> {
    let b = check(data_dir, scope, Access::ReadOnly);
    let (w, p) = &b.claimed;
    let verb = if trusted { "trust" } else { "untrust" };
    match b.state {
        State::Derived => {
            return Err(TrustError(format!(
                "no marker names the scope {w}/{p} (it is derived from the directory): nothing to {verb}; \
                 run it in a directory whose .ai-memory.toml names a workspace or project"
            )))
        }
        State::FlagTrusted | State::EnvTrusted => {
            return Err(TrustError(format!(
                "the scope {w}/{p} comes from the environment or the command line, which are always trusted: \
                 unset AI_MEMORY_WORKSPACE/AI_MEMORY_PROJECT to {verb} the marker's scope"
            )))
        }
        _ => {}
    }
    let (Some(ledger), Some(marker_dir)) = (b.ledger.clone(), b.marker_dir.clone()) else {
        return Err(TrustError(format!(
            "{w}/{p}: {}",
            b.reason.as_deref().unwrap_or("cannot be bound")
        )));
    };
    let root = root::find(&marker_dir)
        .ok_or_else(|| TrustError(format!("{}: cannot be inspected", marker_dir.display())))?;
    let io_err = |e: io::Error| TrustError(format!("{}: {e}", ledger.display()));
    match (b.state, trusted) {
        (State::BoundHere | State::SameRepository | State::Trusted, true) => Ok((Change::Unchanged, b)),
        (State::Unbound, true) => {
            let after = check(data_dir, scope, Access::Bind);
            Ok((Change::Bound, after))
        }
        (State::Unbound, false) => Err(TrustError(format!(
            "{w}/{p} is not bound to any checkout yet: nothing to untrust (the first hook event binds it)"
        ))),
        (State::BoundHere, false) => Err(TrustError(format!(
            "{} bound {w}/{p}, so it owns it; to hand the scope to another checkout, delete {} and run \
             memhook trust there",
            printable(&root.path),
            ledger.display()
        ))),
        (State::Untrusted, false) if b.cause == Some(Cause::User) => Ok((Change::Unchanged, b)),
        (State::Untrusted, _) if b.bound_root.is_none() || b.cause == Some(Cause::Reserved) => Err(TrustError(format!(
            "{w}/{p}: {}",
            b.reason.as_deref().unwrap_or("the ledger cannot be used")
        ))),
        _ => {
            let verdict = if trusted { Verdict::Trusted } else { Verdict::Untrusted };
            let entry = ledger.join(ROOTS_DIR).join(root_key(&root.path));
            let identity = root::identity(&root);
            remember(&ledger, &entry, scope, &root, identity, verdict, true).map_err(io_err)?;
            Ok((Change::Recorded, check(data_dir, scope, Access::ReadOnly)))
        }
    }
}

/// The owner of the scope; with [`Access::Bind`] an unbound scope is bound
/// to `root` first (creation is atomic: a racing binder's owner wins).
fn read_owner(
    data_dir: &Path,
    ledger: &Path,
    scope: &Scope,
    root: &Root,
    access: Access,
) -> Result<Option<Entry>, String> {
    let owner_path = ledger.join(OWNER_FILE);
    let bindings = data_dir.join(LEDGER_DIR);
    if let Some(e) = read_entry(ledger, &owner_path)? {
        return check_names(e, scope, &owner_path).map(Some);
    }
    if access == Access::ReadOnly {
        return Ok(None);
    }
    let fail =
        |e: &dyn std::fmt::Display| format!("cannot bind the scope in {}: {e}", ledger.display());
    ensure_private_dir(data_dir).map_err(|e| fail(&e))?;
    ensure_private_dir(&bindings).map_err(|e| fail(&e))?;
    ensure_private_dir(ledger).map_err(|e| fail(&e))?;
    let entry = new_entry(scope, root, root::identity(root), Verdict::Owner);
    create_new(&owner_path, &encode(&entry)).map_err(|e| fail(&e))?;
    // Whoever won the race, the owner file is now complete.
    match read_entry(ledger, &owner_path)? {
        Some(e) => check_names(e, scope, &owner_path).map(Some),
        None => Err(fail(&"the owner file vanished")),
    }
}

fn check_names(e: Entry, scope: &Scope, path: &Path) -> Result<Entry, String> {
    if e.workspace == scope.workspace && e.project == scope.project && e.verdict == Verdict::Owner {
        Ok(e)
    } else {
        Err(format!(
            "{} does not belong to {}/{}",
            path.display(),
            scope.workspace,
            scope.project
        ))
    }
}

/// Read one ledger file: `Ok(None)` when it does not exist; an error for a
/// symlink, a file of another user, an oversized or unparsable file, or a
/// ledger directory that is not a real directory of ours.
fn read_entry(ledger: &Path, path: &Path) -> Result<Option<Entry>, String> {
    let bad = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let (f, len) = match open_private_sized(path) {
        Ok(opened) => opened,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return match fs::symlink_metadata(ledger) {
                Ok(_) => check_private_dir(ledger).map(|_| None).map_err(|e| bad(&e)),
                Err(_) => Ok(None),
            };
        }
        Err(e) => return Err(bad(&e)),
    };
    // O_NOFOLLOW guards the file itself; its directories must be ours too.
    check_private_dir(ledger).map_err(|e| bad(&e))?;
    if let Some(parent) = path.parent().filter(|p| *p != ledger) {
        check_private_dir(parent).map_err(|e| bad(&e))?;
    }
    let buf = crate::data_dir::read_capped(&f, len, MAX_ENTRY_BYTES + 1).map_err(|e| bad(&e))?;
    if buf.len() as u64 > MAX_ENTRY_BYTES {
        return Err(bad(&format!("larger than {MAX_ENTRY_BYTES} bytes")));
    }
    let e: Entry =
        serde_json::from_slice(&buf).map_err(|e| bad(&format!("not a ledger entry ({e})")))?;
    if e.v != VERSION {
        return Err(bad(&format!(
            "ledger version {} (this memhook reads {VERSION})",
            e.v
        )));
    }
    Ok(Some(e))
}

/// Remember the verdict for a root that is not the owner. A computed
/// verdict (`user == false`) is not kept past [`MAX_ROOTS_PER_SCOPE`]
/// entries.
fn remember(
    ledger: &Path,
    entry_path: &Path,
    scope: &Scope,
    root: &Root,
    identity: Identity,
    verdict: Verdict,
    user: bool,
) -> io::Result<()> {
    let roots = ledger.join(ROOTS_DIR);
    let to_io = |e: crate::data_dir::DirError| io::Error::other(e.to_string());
    ensure_private_dir(&roots).map_err(to_io)?;
    if !user && fs::read_dir(&roots)?.take(MAX_ROOTS_PER_SCOPE).count() >= MAX_ROOTS_PER_SCOPE {
        return Ok(());
    }
    let bytes = encode(&new_entry(scope, root, identity, verdict));
    if let Ok(m) = fs::symlink_metadata(entry_path) {
        if m.file_type().is_symlink() || !m.is_file() {
            return Err(io::Error::other(format!(
                "{} is not a regular file; delete it",
                entry_path.display()
            )));
        }
    }
    crate::data_dir::write_private_file(entry_path, &bytes)
}

fn new_entry(scope: &Scope, root: &Root, identity: Identity, verdict: Verdict) -> Entry {
    Entry {
        v: VERSION,
        workspace: scope.workspace.clone(),
        project: scope.project.clone(),
        root: root.path.clone(),
        stamp: root.stamp.clone(),
        verdict,
        identity,
        at_ms: crate::timefmt::now_ms(),
    }
}

fn encode(e: &Entry) -> Vec<u8> {
    let mut v = serde_json::to_vec(e).unwrap_or_default();
    v.push(b'\n');
    v
}

/// Create `path` holding `bytes` only if it does not exist: a complete
/// 0600 temporary file is hard-linked to it (a racing creator's file wins;
/// that is not an error).
fn create_new(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut rnd = [0u8; 8];
    let _ = crate::entropy::fill(&mut rnd);
    let tmp = dir.join(format!(".owner.{}.{}.tmp", std::process::id(), hex(&rnd)));
    let written = crate::data_dir::write_new_synced(&tmp, bytes, 0o600);
    let linked = written.and_then(|_| fs::hard_link(&tmp, path));
    let _ = fs::remove_file(&tmp);
    match linked {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        other => other,
    }
}

/// The ledger directory name of a scope.
fn scope_key(workspace: &str, project: &str) -> String {
    let mut h = Sha256::new();
    h.update(workspace.as_bytes());
    h.update([0]);
    h.update(project.as_bytes());
    hex(&h.finalize())[..32].to_string()
}

/// The entry name of a root.
fn root_key(root: &Path) -> String {
    hex(&Sha256::digest(root.as_os_str().as_encoded_bytes()))[..32].to_string()
}

/// A path as shown on a terminal: control characters dropped.
fn printable(p: &Path) -> String {
    p.display()
        .to_string()
        .chars()
        .filter(|c| !c.is_control())
        .collect()
}

/// A path as one word of the shell the user types the hint into: on
/// Windows, cmd or PowerShell ([`windows_word`]) unless Git Bash's
/// `MSYSTEM` says the shell is bash; elsewhere a POSIX shell
/// ([`posix_word`]).
fn shell_word(p: &Path) -> String {
    let s = printable(p);
    if cfg!(windows) && std::env::var_os("MSYSTEM").is_none() {
        windows_word(&s)
    } else {
        posix_word(&s)
    }
}

/// A POSIX shell word: as is when it holds only safe characters, else
/// single-quoted.
fn posix_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+:,@%=".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// One word that cmd and PowerShell both read as `s`: as is when it holds
/// only letters, digits and `\ / . _ - :` (`C:\Users\me\src\fork`);
/// else double-quoted, which both shells take literally when `s` has no
/// `$` or `` ` `` (PowerShell expands them there) and no `%` (cmd does);
/// with one of those, PowerShell's literal single quotes (`'` doubled),
/// PowerShell being the Windows default. Backslashes before the closing
/// `"` are doubled so a program reading its command line the Microsoft C
/// way does not take the quote as escaped.
fn windows_word(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"\\/._-:".contains(&b))
    {
        return s.to_string();
    }
    if s.contains(['$', '`', '%', '"']) {
        return format!("'{}'", s.replace('\'', "''"));
    }
    let trailing = s.len() - s.trim_end_matches('\\').len();
    format!("\"{s}{}\"", "\\".repeat(trailing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scope::{CaptureConfig, Settings, Strategy};

    fn scope_at(marker_dir: &Path, ws: Source, pj: Source) -> Scope {
        Scope {
            workspace: "default".into(),
            project: "alpha".into(),
            workspace_source: ws,
            project_source: pj,
            marker: Some(marker_dir.join(super::super::MARKER_FILE)),
            strategy: Strategy::Basename,
            settings: Settings {
                default_global: true,
                inject_on_session_start: true,
                ..Settings::default()
            },
            capture: CaptureConfig::Absent,
            warnings: vec![],
        }
    }

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let data = t.path().join("data");
        let a = t.path().join("a");
        let b = t.path().join("b");
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        (t, data, a, b)
    }

    #[test]
    fn the_first_root_binds_and_another_directory_is_quarantined() {
        let (_t, data, a, b) = dirs();
        if root::find(&a).unwrap().git_dir.is_some() {
            return; // the temp dir sits inside a repository
        }
        let sa = scope_at(&a, Source::Marker, Source::Marker);
        assert_eq!(check(&data, &sa, Access::ReadOnly).state, State::Unbound);
        assert!(!data.exists(), "a read-only check writes nothing");
        assert_eq!(check(&data, &sa, Access::Bind).state, State::BoundHere);
        assert_eq!(check(&data, &sa, Access::ReadOnly).state, State::BoundHere);

        let mut sb = scope_at(&b, Source::Marker, Source::Fallback);
        let got = check(&data, &sb, Access::Bind);
        assert_eq!(got.state, State::Untrusted, "{got:?}");
        assert_eq!(got.bound_root.as_deref(), Some(a.as_path()));
        assert_eq!(got.run(), Some(format!("memhook trust {}", b.display())));
        assert!(enforce_hook(&data, &mut sb, false));
        assert_eq!(sb.workspace, QUARANTINE_WORKSPACE);
        assert!(sb.project.starts_with("alpha."), "{}", sb.project);
        assert!(crate::names::is_valid_name(&sb.project));
        assert!(!sb.settings.default_global && !sb.settings.inject_on_session_start);

        // Trust, then untrust.
        let sb = scope_at(&b, Source::Marker, Source::Fallback);
        let (c, after) = set_trust(&data, &sb, true).unwrap();
        assert_eq!((c, after.state), (Change::Recorded, State::Trusted));
        assert_eq!(set_trust(&data, &sb, true).unwrap().0, Change::Unchanged);
        let (c, after) = set_trust(&data, &sb, false).unwrap();
        assert_eq!((c, after.state), (Change::Recorded, State::Untrusted));
        assert!(
            set_trust(&data, &sa, false).is_err(),
            "the owner cannot untrust itself"
        );
    }

    #[test]
    fn env_and_flags_are_trusted_and_derived_scopes_need_no_binding() {
        let (_t, data, a, _b) = dirs();
        for (ws, pj, want) in [
            (Source::Env, Source::Env, State::EnvTrusted),
            (Source::Flag, Source::Fallback, State::FlagTrusted),
            (Source::Fallback, Source::RepoRoot, State::Derived),
        ] {
            assert_eq!(
                check(&data, &scope_at(&a, ws, pj), Access::Bind).state,
                want
            );
        }
        assert!(!data.exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_corrupt_or_linked_ledger_fails_closed() {
        let (t, data, a, _b) = dirs();
        let sa = scope_at(&a, Source::Marker, Source::Marker);
        assert_eq!(check(&data, &sa, Access::Bind).state, State::BoundHere);
        let owner = data
            .join(LEDGER_DIR)
            .join(scope_key("default", "alpha"))
            .join(OWNER_FILE);
        fs::write(&owner, "{not json").unwrap();
        let got = check(&data, &sa, Access::Bind);
        assert_eq!(got.state, State::Untrusted);
        assert_eq!(got.cause, Some(Cause::Unusable));
        assert!(got.reason.unwrap().contains("delete"));
        // A symlink in its place is refused, not followed.
        let elsewhere = t.path().join("elsewhere");
        fs::write(
            &elsewhere,
            encode(&new_entry(
                &sa,
                &root::find(&a).unwrap(),
                Identity::default(),
                Verdict::Owner,
            )),
        )
        .unwrap();
        fs::remove_file(&owner).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &owner).unwrap();
        assert_eq!(check(&data, &sa, Access::Bind).state, State::Untrusted);
        // Oversized.
        fs::remove_file(&owner).unwrap();
        fs::write(&owner, vec![b' '; MAX_ENTRY_BYTES as usize + 1]).unwrap();
        assert_eq!(check(&data, &sa, Access::ReadOnly).state, State::Untrusted);
    }

    #[test]
    fn racing_binders_bind_once() {
        let (t, data, _a, _b) = dirs();
        let roots: Vec<PathBuf> = (0..8)
            .map(|i| {
                let d = t.path().join(format!("r{i}"));
                fs::create_dir_all(&d).unwrap();
                d
            })
            .collect();
        let states: Vec<State> = std::thread::scope(|s| {
            let hs: Vec<_> = roots
                .iter()
                .map(|r| {
                    let data = &data;
                    s.spawn(move || {
                        check(
                            data,
                            &scope_at(r, Source::Marker, Source::Marker),
                            Access::Bind,
                        )
                        .state
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        if root::find(&roots[0]).unwrap().git_dir.is_some() {
            return;
        }
        assert_eq!(
            states.iter().filter(|s| **s == State::BoundHere).count(),
            1,
            "{states:?}"
        );
        assert_eq!(states.iter().filter(|s| **s == State::Untrusted).count(), 7);
    }

    #[test]
    fn a_marker_cannot_claim_the_quarantine_workspace() {
        let (_t, data, a, _b) = dirs();
        let mut s = scope_at(&a, Source::Marker, Source::Marker);
        s.workspace = QUARANTINE_WORKSPACE.into();
        let got = check(&data, &s, Access::Bind);
        assert_eq!(
            (got.state, got.cause),
            (State::Untrusted, Some(Cause::Reserved))
        );
        assert!(set_trust(&data, &s, true).is_err());
        // The same scope named by the user is theirs to read.
        s.workspace_source = Source::Flag;
        s.project_source = Source::Flag;
        assert_eq!(check(&data, &s, Access::Bind).state, State::FlagTrusted);
    }

    #[test]
    fn a_replaced_checkout_at_the_bound_path_is_checked_again() {
        let (_t, data, a, _b) = dirs();
        let sa = scope_at(&a, Source::Marker, Source::Marker);
        assert_eq!(check(&data, &sa, Access::Bind).state, State::BoundHere);
        // Same path, another directory (another birth time or inode).
        fs::remove_dir(&a).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::create_dir(&a).unwrap();
        if root::find(&a).unwrap().stamp
            == read_entry(
                &data.join(LEDGER_DIR).join(scope_key("default", "alpha")),
                &data
                    .join(LEDGER_DIR)
                    .join(scope_key("default", "alpha"))
                    .join(OWNER_FILE),
            )
            .unwrap()
            .unwrap()
            .stamp
        {
            return; // no birth time here and the inode was reused
        }
        assert_eq!(check(&data, &sa, Access::Bind).state, State::Untrusted);
    }

    #[test]
    fn quarantine_names_are_valid_at_the_length_edge() {
        let long = "p".repeat(crate::names::MAX_NAME_LEN);
        let (w, p) = quarantine_scope("w", &long, Path::new("/r"));
        assert_eq!(w, QUARANTINE_WORKSPACE);
        assert_eq!(p.len(), crate::names::MAX_NAME_LEN);
        assert!(crate::names::is_valid_name(&p));
        let (_, other) = quarantine_scope("w", &long, Path::new("/s"));
        assert_ne!(p, other, "each root has its own quarantine");
    }

    #[test]
    fn shell_words() {
        assert_eq!(posix_word("/a/b-c_d.e"), "/a/b-c_d.e");
        assert_eq!(posix_word("/a b/it's"), r"'/a b/it'\''s'");
        assert_eq!(posix_word(r"C:\a"), r"'C:\a'", "bash reads \\ as an escape");
        assert_eq!(printable(Path::new("/a\u{1b}[2J")), "/a[2J");
        if !cfg!(windows) {
            assert_eq!(shell_word(Path::new("/a\u{1b}[2J")), "'/a[2J'");
        }
    }

    /// cmd and PowerShell: a backslash is an ordinary character in both.
    #[test]
    fn windows_words_read_the_same_in_cmd_and_powershell() {
        for (path, word) in [
            (r"C:\Users\me\src\fork", r"C:\Users\me\src\fork"),
            (r"C:\Program Files\x", r#""C:\Program Files\x""#),
            (r"C:\Users\O'Brien\x", r#""C:\Users\O'Brien\x""#),
            (r"D:\a,b\@c", r#""D:\a,b\@c""#),
            (r"C:\my dir\", r#""C:\my dir\\""#),
            (r"C:\$x\it's", r"'C:\$x\it''s'"),
            (r"C:\100%\y", r"'C:\100%\y'"),
            (r"\\srv\share\p q", r#""\\srv\share\p q""#),
            ("", r#""""#),
        ] {
            assert_eq!(windows_word(path), word, "{path}");
        }
    }
}
