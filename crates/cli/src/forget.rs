//! `memhook forget`: remove captured records for good — from the store (so
//! the text is in no page of the database, its WAL or the full-text index)
//! and from the spool, where records of that scope may still wait for
//! delivery. A dry run by default: it says what would go. `--project`
//! says what becomes of the project's memory documents: kept, unless
//! `--memory` deletes them too. With `--database`
//! (or `MEMHOOK_DATABASE_URL`) the store is a team server's PostgreSQL
//! database instead of the data dir's SQLite file (`sink/pg/forget.rs`).

use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use crate::cmd::CmdResult;
use memhook_core::data_dir;
use memhook_core::term::count;

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
    /// Every record of this agent session: its session id, or at least its
    /// first 8 characters as `memhook recent` prints them (a prefix that
    /// names several stored sessions is refused).
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Every record of this project, written WORKSPACE/PROJECT. Its memory
    /// documents (MEMORY.md and the rest) are kept unless --memory is given;
    /// forget says which.
    #[arg(long, value_name = "W/P")]
    pub project: Option<String>,
    /// With --project (and no --before): also delete the project's memory
    /// documents, the files in <data dir>/memory/W/P.
    #[arg(long, requires = "project", conflicts_with_all = ["before", "session", "record", "history"])]
    pub memory: bool,
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
    /// With --yes: then rebuild the store's file from what it keeps, so that
    /// no byte of anything forgotten stays in the unused space of a page
    /// (docs/operations.md, "Forgetting"). A store up to 64 MiB is rebuilt
    /// by every forget; a larger one only with this, at the cost of about
    /// the database's size in memory and twice its size on disk for the
    /// moment. The data dir's SQLite store only.
    #[arg(long, requires = "yes", conflicts_with = "history")]
    pub rebuild: bool,
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

/// The shortest session-id prefix `--session` completes (what `memhook
/// recent` prints).
pub const MIN_SESSION_PREFIX: usize = 8;

/// `--session ID` as the store knows it: the id itself when a session has
/// exactly that id (or none starts with it), else the one stored session id
/// that starts with it when it is at least [`MIN_SESSION_PREFIX`]
/// characters. A prefix that several sessions share is refused, naming
/// them.
fn full_session_id(dir: &Path, given: &str) -> Result<String, Error> {
    if given.chars().count() < MIN_SESSION_PREFIX || !dir.join(STORE_FILE).exists() {
        return Ok(given.to_string());
    }
    const SHOWN: usize = 5;
    let ids = Store::open(dir)?.session_ids_with_prefix(given, SHOWN + 1)?;
    if ids.iter().any(|id| id == given) {
        return Ok(given.to_string());
    }
    match ids.as_slice() {
        [] => Ok(given.to_string()),
        [one] => {
            eprintln!(
                "memhook: --session {}: session {}",
                memhook_core::term::line(given),
                memhook_core::term::line(one)
            );
            Ok(one.clone())
        }
        many => {
            let listed: Vec<String> = many
                .iter()
                .take(SHOWN)
                .map(|id| memhook_core::term::line(id))
                .collect();
            let more = if many.len() > SHOWN { ", …" } else { "" };
            Err(format!(
                "--session {}: {} stored sessions start with it ({}{more}); give more of \
                 the id (nothing was forgotten)",
                memhook_core::term::line(given),
                if many.len() > SHOWN {
                    format!("more than {SHOWN}")
                } else {
                    many.len().to_string()
                },
                listed.join(", ")
            )
            .into())
        }
    }
}

/// `memhook forget`. On PostgreSQL a database that cannot be reached (or
/// fails) is exit 1, as for `memhook token`.
pub fn run(args: &ForgetArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = data_dir::resolve(data_dir)?;
    let pg = args.db.target()?.map(|t| PgStore::new(t, &dir));
    if args.rebuild && pg.is_some() {
        return Err(
            "--rebuild rebuilds the data dir's SQLite store; a PostgreSQL database \
                    reclaims its space with its own VACUUM (docs/postgres.md)"
                .into(),
        );
    }
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
                "{} forgot {}, {}, {}: {}",
                memhook_core::timefmt::local_text(e.at_ms),
                count(e.records, "record"),
                count(e.sessions, "session"),
                count(e.projects, "project"),
                memhook_core::term::line(&e.selector)
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut sel = selector(args)?;
    if pg.is_none() {
        if let Some(s) = &sel.session {
            sel.session = Some(full_session_id(&dir, s)?);
        }
    }
    let what = sel.describe();
    // The project's memory documents, when the whole project is named.
    let memory = match &sel.project {
        Some((w, p)) if sel.before_ms.is_none() && sel.session.is_none() => {
            let m = memhook_store::memory::MemoryStore::new(&dir, w, p)?;
            let n = m.count()?;
            Some((m, n))
        }
        _ => None,
    };
    let report = match &pg {
        None => {
            if !dir.join(STORE_FILE).exists() && !dir.join("spool").is_dir() {
                println!("memhook forget: nothing is stored in {}", dir.display());
                if let Some((m, n)) = &memory {
                    tell_memory(m, *n, args.memory, args.yes)?;
                }
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
        format!(
            " (emptying {} and {})",
            count(sessions, "session"),
            count(projects, "project")
        )
    } else {
        String::new()
    };
    if !report.applied {
        println!(
            "memhook forget: would forget {}{emptied} and {}: {what}",
            count(records, "stored record"),
            count(report.pending, "pending record")
        );
        let documents = memory
            .as_ref()
            .filter(|_| args.memory)
            .map_or(0, |(_, n)| *n);
        if records + report.pending + documents as u64 > 0 {
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
            "memhook forget: forgot {}{emptied} and {}: {what}",
            count(records, "stored record"),
            count(report.pending, "pending record")
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
        if args.rebuild && dir.join(STORE_FILE).exists() {
            let mut store = memhook_store::sqlite::Store::open(&dir)?;
            let bytes = |s: &memhook_store::sqlite::Store| {
                std::fs::metadata(s.path()).map_or(0, |m| m.len())
            };
            let before = bytes(&store);
            if store.rebuild()? {
                println!(
                    "memhook forget: rebuilt {} ({} → {} bytes): nothing forgotten is left in it",
                    dir.join(STORE_FILE).display(),
                    before,
                    bytes(&store)
                );
            } else {
                memhook_sinks::forget::record_pending(&dir)?;
                eprintln!(
                    "memhook: rebuilt {}, but another process is reading the store and its \
                     write-ahead log still holds old pages; the cleanup is recorded in {}: \
                     `memhook drain` finishes it once that reader is gone",
                    dir.join(STORE_FILE).display(),
                    dir.join(PENDING_FILE).display()
                );
            }
        }
    }
    if let Some((m, n)) = &memory {
        tell_memory(m, *n, args.memory, report.applied)?;
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

/// Say (and, with `--memory --yes`, do) what becomes of the project's `n`
/// memory documents in `m`.
fn tell_memory(
    m: &memhook_store::memory::MemoryStore,
    n: usize,
    delete: bool,
    apply: bool,
) -> Result<(), Error> {
    let at = m.root().display().to_string();
    let gone = if delete && apply && n > 0 {
        m.forget_all()?
    } else {
        0
    };
    println!(
        "memhook forget: {}",
        memory_words(n, gone, delete, apply, &at)
    );
    Ok(())
}

/// What `tell_memory` says of `n` documents in `at` (`gone` deleted).
fn memory_words(n: usize, gone: usize, delete: bool, apply: bool, at: &str) -> String {
    let docs = count(n as u64, "memory document");
    let (are, them) = if n == 1 {
        ("is", "it")
    } else {
        ("are", "them")
    };
    match (n, delete, apply) {
        (0, _, _) => "the project has no memory documents".to_string(),
        (_, false, false) => {
            format!("its {docs} ({at}) {are} kept; add --memory to delete {them} too")
        }
        (_, false, true) => format!(
            "kept its {docs} ({at}); `memhook forget --project … --memory --yes` deletes {them}"
        ),
        (_, true, false) => format!("would delete its {docs} ({at})"),
        (_, true, true) => format!(
            "deleted its {} ({at})",
            count(gone as u64, "memory document")
        ),
    }
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

#[cfg(test)]
mod tests {
    use super::memory_words;

    #[test]
    fn memory_document_counts_agree_in_number() {
        assert_eq!(
            memory_words(1, 0, false, false, "/m"),
            "its 1 memory document (/m) is kept; add --memory to delete it too"
        );
        assert_eq!(
            memory_words(2, 0, false, false, "/m"),
            "its 2 memory documents (/m) are kept; add --memory to delete them too"
        );
        assert_eq!(
            memory_words(1, 1, true, true, "/m"),
            "deleted its 1 memory document (/m)"
        );
        assert_eq!(
            memory_words(1, 0, false, true, "/m"),
            "kept its 1 memory document (/m); `memhook forget --project … --memory --yes` deletes it"
        );
    }
}
