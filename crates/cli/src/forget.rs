//! `memhook forget`: remove captured records for good — from the store (so
//! the text is in no page of the database, its WAL or the full-text index)
//! and from the spool, where records of that scope may still wait for
//! delivery. A dry run by default: it says what would go. With `--database`
//! (or `MEMHOOK_DATABASE_URL`) the store is a team server's PostgreSQL
//! database instead of the data dir's SQLite file (`sink/pg/forget.rs`).

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use crate::cmd::CmdResult;
use memhook_core::data_dir;

use memhook_delivery::spool::SinkTarget;
use memhook_sinks::forget::{forget_in, forget_with, Cleanup, Report, PENDING_FILE};
use memhook_store::sqlite::{ForgetError, Selector, Store, STORE_FILE};
use memhook_store_pg::PgStore;

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
    pub db: memhook_store_pg::config::DatabaseArgs,
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// The selector the arguments describe, or a usage error naming the fix.
pub fn selector(args: &ForgetArgs) -> Result<Selector, Error> {
    Ok(Selector::parse(
        args.record.as_deref(),
        args.session.as_deref(),
        args.project.as_deref(),
        args.before.as_deref(),
    )?)
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
                memhook_core::timefmt::rfc3339_ms(e.at_ms),
                e.records,
                e.sessions,
                e.projects,
                memhook_core::term::line(&e.selector)
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
                        earlier: Cleanup::None,
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
    if pg.is_none() {
        tell_cleanup(&dir, Ok(report.earlier));
    }
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
        if pg.is_none() && memhook_sinks::forget::cleanup_pending(&dir) {
            eprintln!(
                "memhook: an earlier forget's text may still be in {} (a reader held the \
                 store; see {}): `memhook forget … --yes` or `memhook drain` finishes that \
                 cleanup",
                dir.join(STORE_FILE).display(),
                dir.join(PENDING_FILE).display()
            );
        }
    } else {
        println!(
            "memhook forget: forgot {records} stored records{emptied} and {} pending \
             records: {what}",
            report.pending
        );
        if pg.is_none() && report.wal_pending() {
            eprintln!(
                "memhook: another process is reading the store (a `memhook serve`, a search, \
                 a `sqlite3` shell…), and after waiting {} s for it the forgotten text is \
                 still in {} and its write-ahead log. The cleanup is recorded in {}: the \
                 next `memhook forget` or `memhook drain` finishes it once that reader is \
                 gone (stop or close it, then run `memhook drain`)",
                memhook_store::sqlite::forget_reader_wait().as_secs_f64(),
                dir.join(STORE_FILE).display(),
                dir.join(PENDING_FILE).display()
            );
        }
        if let Some(pg) = pg.as_ref().filter(|_| records > 0) {
            eprintln!(
                "memhook: {}: {}",
                pg.describe(),
                memhook_store_pg::forget::PROMISE
            );
        }
    }
    if let SinkTarget::Http { .. } = SinkTarget::configured(None) {
        eprintln!(
            "memhook: {} is set: records already delivered to that server are not touched \
             by this command",
            memhook_delivery::spool::HOOK_URL_ENV
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Say what became of the cleanup an earlier forget left (stderr; nothing
/// when none was owed).
pub fn tell_cleanup(dir: &Path, outcome: Result<Cleanup, Error>) {
    let store = dir.join(STORE_FILE);
    match outcome {
        Ok(Cleanup::None) => {}
        Ok(Cleanup::Finished) => eprintln!(
            "memhook: finished the cleanup an earlier forget left pending: the forgotten text \
             is out of {} and its write-ahead log",
            store.display()
        ),
        Ok(Cleanup::StillPending) => eprintln!(
            "memhook: the cleanup an earlier forget left is still pending: another process is \
             still reading {}, so the forgotten text is still in its files (recorded in {}; \
             stop or close that reader, then run `memhook drain`)",
            store.display(),
            dir.join(PENDING_FILE).display()
        ),
        Err(e) => eprintln!(
            "memhook: the cleanup an earlier forget left ({}) failed: {e}",
            dir.join(PENDING_FILE).display()
        ),
    }
}
