//! `memhook forget`: remove captured records for good — from the store (so
//! the text is in no page of the database, its WAL or the full-text index)
//! and from the spool, where records of that scope may still wait for
//! delivery. A dry run by default: it says what would go. With `--database`
//! (or `MEMHOOK_DATABASE_URL`) the store is a team server's PostgreSQL
//! database instead of the data dir's SQLite file (`sink/pg/forget.rs`).

use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Args;

use crate::cmd::CmdResult;
use crate::data_dir;
use crate::drain;
use crate::names;
use crate::sink::pg::PgStore;
use crate::sink::store::{ForgetError, Forgotten, Selector, Store, STORE_FILE};
use crate::spool::{SinkTarget, Spool};

/// How long `forget --yes` waits for a running drainer to let go of the
/// spool before giving up.
pub const LOCK_WAIT: Duration = Duration::from_secs(10);

#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// One record: its key, or at least its first 8 characters as `memhook
    /// recent` prints them.
    #[arg(long, value_name = "KEY", conflicts_with_all = ["session", "project", "before"])]
    pub record: Option<String>,
    /// Every record of this agent session (its session id).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Every record of this project, written WORKSPACE/PROJECT.
    #[arg(long, value_name = "W/P")]
    pub project: Option<String>,
    /// Only records from before this UTC date or time: YYYY-MM-DD or
    /// YYYY-MM-DDTHH:MM[:SS]Z.
    #[arg(long, value_name = "DATE")]
    pub before: Option<String>,
    /// Really forget. Without it nothing changes: the command says what
    /// would go.
    #[arg(long)]
    pub yes: bool,
    /// List what was forgotten before (when, which selector, how many;
    /// never the text) instead of forgetting.
    #[arg(long, conflicts_with_all = ["record", "session", "project", "before", "yes"])]
    pub history: bool,
    /// Forget in a team server's PostgreSQL database instead of the data
    /// dir's SQLite store (default: MEMHOOK_DATABASE_URL when set).
    #[command(flatten)]
    pub db: crate::sink::pg::config::DatabaseArgs,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The selector the arguments describe, or a usage error naming the fix.
pub fn selector(args: &ForgetArgs) -> Result<Selector, Error> {
    let project = match &args.project {
        None => None,
        Some(wp) => {
            let (w, p) = wp.split_once('/').ok_or_else(|| {
                format!("--project {wp:?}: write it as WORKSPACE/PROJECT, e.g. default/api")
            })?;
            for n in [w, p] {
                if !names::is_valid_name(n) {
                    return Err(format!("--project: {}", names::name_problem(n)).into());
                }
            }
            Some((w.to_string(), p.to_string()))
        }
    };
    let before_ms = match &args.before {
        None => None,
        Some(d) => Some(crate::timefmt::parse_utc_ms(d).ok_or_else(|| {
            format!(
                "--before {d:?}: write a UTC date or time, e.g. 2026-11-30 or 2026-11-30T18:00Z"
            )
        })?),
    };
    let sel = Selector {
        record: args.record.clone(),
        session: args.session.clone(),
        project,
        before_ms,
    };
    if sel == Selector::default() {
        return Err(
            "say what to forget: --record KEY, --session ID, --project W/P \
                    and/or --before DATE"
                .into(),
        );
    }
    Ok(sel)
}

/// What is pending in the spool for `sel`: (file, its sink).
fn pending_matches(
    dir: &Path,
    sel: &Selector,
) -> Result<Vec<(std::path::PathBuf, SinkTarget)>, Error> {
    if !dir.join("spool").is_dir() {
        return Ok(Vec::new());
    }
    let spool = Spool::open(dir)?;
    let mut out = Vec::new();
    for path in spool.pending()? {
        // An entry that cannot be read is the drainer's business (it drops
        // it as corrupt); it is not ours to guess about.
        let Ok(e) = Spool::load(&path) else { continue };
        let r = &e.record;
        if sel.matches(
            &r.key,
            r.session_id.as_deref(),
            (&r.scope.workspace, &r.scope.project),
            r.occurred_ms,
        ) {
            out.push((path, e.sink));
        }
    }
    Ok(out)
}

/// What forgetting did (`applied`) or would do (a dry run).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    pub applied: bool,
    /// The store's counts (`None` when there is no store).
    pub stored: Option<Forgotten>,
    /// Pending spool records of that scope removed (or that would be).
    pub pending: u64,
}

impl Report {
    /// Whether forgotten text may still be in the WAL file (a reader kept
    /// the checkpoint from emptying it).
    pub fn wal_pending(&self) -> bool {
        self.applied
            && self
                .stored
                .as_ref()
                .is_some_and(|f| f.records > 0 && !f.wal_emptied)
    }
}

/// Forget what `sel` names in the data dir `dir`: from the store and from
/// the pending spool files (`apply` false: only count). While applying, the
/// drain lock is held throughout so no drainer delivers a record of this
/// scope into the store behind our back; a drainer that keeps it longer
/// than [`LOCK_WAIT`] is an error that says to try again. The one
/// implementation `memhook forget` and `memhook serve`'s web view share.
pub fn forget_in(dir: &Path, sel: &Selector, apply: bool) -> Result<Report, Error> {
    forget_with(dir, sel, apply, || {
        if dir.join(STORE_FILE).exists() {
            let mut store = Store::open(dir)?;
            Ok(Some(store.forget(sel, apply)?))
        } else {
            Ok(None)
        }
    })
}

/// [`forget_in`] with another store: `store` forgets in it (or counts, as
/// `apply` says) and returns its counts (`None`: there is no store), while
/// the spool of `dir` is handled here under the drain lock. `memhook
/// serve --database` uses it with PostgreSQL.
pub fn forget_with(
    dir: &Path,
    sel: &Selector,
    apply: bool,
    store: impl FnOnce() -> Result<Option<Forgotten>, Error>,
) -> Result<Report, Error> {
    let lock =
        if apply {
            Some(drain::lock_until(dir, Instant::now() + LOCK_WAIT)?.ok_or(
                "a drainer is delivering right now; run `memhook forget` again in a moment",
            )?)
        } else {
            None
        };
    let pending = pending_matches(dir, sel)?;
    let stored = store()?;
    let pending = match &lock {
        None => pending.len() as u64,
        Some(lock) => drain::drop_pending(lock, dir, &pending, drain::DROP_FORGOTTEN)? as u64,
    };
    Ok(Report {
        applied: apply,
        stored,
        pending,
    })
}

/// `memhook forget`. On PostgreSQL a database that cannot be reached (or
/// fails) is exit 1, as for `memhook token`.
pub fn run(args: &ForgetArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = data_dir::resolve(data_dir)?;
    let pg = args.db.target()?.map(|t| PgStore::new(t, &dir));
    let failed = |e: &dyn std::fmt::Display| {
        eprintln!("memhook: forget: {e}");
        Ok(ExitCode::from(1))
    };
    if args.history {
        let log = match &pg {
            Some(pg) => match pg.forget_log() {
                Ok(log) => log,
                Err(e) => return failed(&e),
            },
            None if dir.join(STORE_FILE).exists() => Store::open(&dir)?.forget_log()?,
            None => Vec::new(),
        };
        for e in log {
            println!(
                "{} forgot {} records, {} sessions, {} projects: {}",
                crate::timefmt::rfc3339_ms(e.at_ms),
                e.records,
                e.sessions,
                e.projects,
                crate::term::line(&e.selector)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let sel = selector(args)?;
    let what = sel.describe();
    let report = match &pg {
        None => {
            if !dir.join(STORE_FILE).exists() && !dir.join("spool").is_dir() {
                println!("memhook forget: nothing is stored in {}", dir.display());
                return Ok(ExitCode::SUCCESS);
            }
            forget_in(&dir, &sel, args.yes)?
        }
        Some(pg) => {
            // The data dir's pending records of that scope go too, as with
            // the SQLite store; without a spool there is nothing to lock.
            let out = if dir.join("spool").is_dir() {
                forget_with(&dir, &sel, args.yes, || {
                    Ok(Some(pg.forget(&sel, args.yes)?))
                })
            } else {
                pg.forget(&sel, args.yes)
                    .map(|f| Report {
                        applied: args.yes,
                        stored: Some(f),
                        pending: 0,
                    })
                    .map_err(Error::from)
            };
            match out {
                Ok(report) => report,
                Err(e) => match e.downcast_ref::<ForgetError>() {
                    Some(ForgetError::Store(s)) => return failed(s),
                    _ => return Err(e),
                },
            }
        }
    };
    let (records, sessions, projects) = report
        .stored
        .as_ref()
        .map_or((0, 0, 0), |f| (f.records, f.sessions, f.projects));
    let emptied = if sessions + projects > 0 {
        format!(" (emptying {sessions} sessions and {projects} projects)")
    } else {
        String::new()
    };
    if !report.applied {
        println!(
            "memhook forget: would forget {records} stored records{emptied} and {} pending \
             records: {what}",
            report.pending
        );
        if records + report.pending > 0 {
            println!("run it again with --yes to forget them");
        }
    } else {
        println!(
            "memhook forget: forgot {records} stored records{emptied} and {} pending \
             records: {what}",
            report.pending
        );
        if pg.is_none() && report.wal_pending() {
            eprintln!(
                "memhook: another process is reading the store, so its write-ahead log \
                 ({}-wal) could not be emptied yet; the forgotten text leaves it at the \
                 next checkpoint (run `memhook forget` again with the same arguments to \
                 retry now)",
                dir.join(STORE_FILE).display()
            );
        }
        if let Some(pg) = pg.as_ref().filter(|_| records > 0) {
            eprintln!(
                "memhook: {}: {}",
                pg.describe(),
                crate::sink::pg::forget::PROMISE
            );
        }
    }
    if let SinkTarget::Http { .. } = SinkTarget::configured(None) {
        eprintln!(
            "memhook: {} is set: records already delivered to that server are not touched \
             by this command",
            crate::spool::HOOK_URL_ENV
        );
    }
    Ok(ExitCode::SUCCESS)
}
