//! `memhook import FILE`: records written by `memhook export`, into the
//! local store or (`--server URL`) to a server's `POST /hook/batch`.
//!
//! A file is hostile input: every line is checked and cleaned exactly as
//! `memhook serve` checks and cleans a client's record (key, names, bounds,
//! redaction and hygiene: `memhook_core::record::check::admit_imported`). Records are
//! stored under their own key, so importing a file twice, or several files
//! in any order, stores each record once; they keep their time, scope,
//! session and — in the local store — the name of the token that first
//! delivered them. A server names the token the import itself used.

use memhook_core::term::count;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Args;

use super::{Line, Lines};
use crate::cmd::CmdResult;
use memhook_core::record::Record;
use memhook_delivery::sink::{ItemOutcome, Sink};
use memhook_delivery::spool::{SinkTarget, SpoolEntry, ENTRY_VERSION};
use memhook_sinks::http::{HttpSink, MAX_BATCH_ITEMS};
use memhook_store::sqlite::Store;

/// Records stored (or sent) together.
pub const IMPORT_BATCH: usize = MAX_BATCH_ITEMS;
/// Tries per batch sent to a server before its records count as failed.
pub const SERVER_ATTEMPTS: u32 = 5;
/// Pause before the second try; it doubles for each one after.
pub const RETRY_PAUSE: Duration = Duration::from_millis(500);
/// Longest one delivery call to a server may take.
pub const SERVER_TIMEOUT: Duration = Duration::from_secs(30);
/// Problems printed one per line; past this many only the count is.
pub const MAX_REPORTED: u64 = 50;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// A file written by `memhook export` (`-` reads stdin).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Send the records to this memhook server (`POST /hook/batch`, with
    /// AI_MEMORY_AUTH_TOKEN or the data dir's token file) instead of
    /// storing them in the local store.
    #[arg(long, value_name = "URL")]
    pub server: Option<String>,
}

/// Where records go.
enum Target {
    Local(Box<Store>),
    Server {
        url: String,
        token: Option<String>,
        data_dir: PathBuf,
    },
}

/// What an import did, and the problems it printed.
#[derive(Debug, Default)]
struct Tally {
    /// Stored (local: new + already there) or accepted by the server.
    done: u64,
    /// Local only: records that were new here.
    new: u64,
    /// Lines that are not a usable record.
    bad: u64,
    /// Records a server would not take.
    failed: u64,
    /// Problems printed so far.
    reported: u64,
}

impl Tally {
    fn report(&mut self, name: &str, line: u64, problem: &str) {
        self.reported += 1;
        if self.reported <= MAX_REPORTED {
            eprintln!(
                "memhook: {name}:{line}: {}",
                memhook_core::term::line(problem)
            );
        }
    }
}

pub fn run(args: &ImportArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = memhook_core::data_dir::resolve(data_dir)?;
    let name = args.file.display().to_string();
    let input: Box<dyn BufRead> = if args.file.as_os_str() == "-" {
        Box::new(std::io::BufReader::new(std::io::stdin().lock()))
    } else {
        let f = std::fs::File::open(&args.file).map_err(|e| format!("{name}: {e}"))?;
        if f.metadata().map(|m| m.is_dir()).unwrap_or(false) {
            return Err(
                format!("{name}: is a directory; give a file `memhook export` wrote").into(),
            );
        }
        Box::new(std::io::BufReader::new(f))
    };
    let mut target = match &args.server {
        Some(url) => {
            let url = memhook_delivery::spool::check_base_url(url)
                .map_err(|e| format!("--server: {e}"))?;
            Target::Server {
                url,
                token: memhook_delivery::sink::auth_token(&dir),
                data_dir: dir.clone(),
            }
        }
        None => Target::Local(Box::new(Store::open(&dir)?)),
    };
    let mut tally = Tally::default();
    let mut lines = Lines::new(input);
    let mut batch: Vec<(u64, Record, Option<String>)> = Vec::new();
    loop {
        let next = lines.next_line().map_err(|e| format!("{name}: {e}"))?;
        let Some((n, text)) = next else { break };
        let prepared = text
            .and_then(|t| Line::parse(&t))
            .and_then(Line::into_record)
            .and_then(|(r, token)| {
                memhook_core::record::check::admit_imported(r).map(|r| (r, token))
            });
        match prepared {
            Ok((r, token)) => batch.push((n, r, token)),
            Err(problem) => {
                tally.bad += 1;
                tally.report(&name, n, &problem);
            }
        }
        if batch.len() >= IMPORT_BATCH {
            if let Err(e) = flush(&mut target, &mut batch, &mut tally, &name) {
                eprintln!("memhook: import stopped: {e}");
                return Ok(ExitCode::from(1));
            }
        }
    }
    if let Err(e) = flush(&mut target, &mut batch, &mut tally, &name) {
        eprintln!("memhook: import stopped: {e}");
        return Ok(ExitCode::from(1));
    }
    // Leave the WAL empty, as the drainer does after each run: a short-lived
    // reader (session start) that finds a WAL full of imported frames and no
    // other connection rebuilds the WAL's index from every frame, each time.
    if let Target::Local(store) = &target {
        store.checkpoint();
    }
    if tally.reported > MAX_REPORTED {
        eprintln!(
            "memhook: … {} more problems not shown",
            tally.reported - MAX_REPORTED
        );
    }
    match &target {
        Target::Local(_) => eprintln!(
            "memhook: imported {} ({} new, {} already stored); {}",
            count(tally.done, "record"),
            tally.new,
            tally.done - tally.new,
            count(tally.bad, "bad line")
        ),
        Target::Server { url, .. } => eprintln!(
            "memhook: sent {} to {} (it stores each key once); {}, \
             {} not taken",
            count(tally.done, "record"),
            memhook_delivery::spool::redact_url(url),
            count(tally.bad, "bad line"),
            tally.failed
        ),
    }
    Ok(if tally.bad == 0 && tally.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Store or send `batch` (emptied). `Err` when the local store fails: the
/// import stops there (what was committed stays; running it again is safe).
fn flush(
    target: &mut Target,
    batch: &mut Vec<(u64, Record, Option<String>)>,
    tally: &mut Tally,
    name: &str,
) -> Result<(), String> {
    if batch.is_empty() {
        return Ok(());
    }
    match target {
        Target::Local(store) => {
            let fates = store
                .insert_each_from(batch.iter().map(|(_, r, t)| (r, t.as_deref())))
                .map_err(|e| e.to_string())?;
            tally.done += fates.len() as u64;
            tally.new += fates.iter().filter(|n| **n).count() as u64;
        }
        Target::Server {
            url,
            token,
            data_dir,
        } => send(url, token, data_dir, batch, tally, name),
    }
    batch.clear();
    Ok(())
}

/// Send `batch` to the server, trying again (with a growing pause) what it
/// did not take, up to [`SERVER_ATTEMPTS`] times.
fn send(
    url: &str,
    token: &Option<String>,
    data_dir: &Path,
    batch: &[(u64, Record, Option<String>)],
    tally: &mut Tally,
    name: &str,
) {
    let now = memhook_core::timefmt::now_ms();
    let mut left: Vec<(u64, SpoolEntry)> = batch
        .iter()
        .map(|(n, r, _)| {
            (
                *n,
                SpoolEntry {
                    v: ENTRY_VERSION,
                    sink: SinkTarget::Http {
                        url: url.to_string(),
                    },
                    attempts: 0,
                    enqueued_ms: now,
                    record: r.clone(),
                    exclusions: None,
                },
            )
        })
        .collect();
    let mut pause = RETRY_PAUSE;
    for attempt in 1..=SERVER_ATTEMPTS {
        // A fresh sink per try: one that found the server unreachable
        // would not try again.
        let mut sink = HttpSink::new(url, token.clone(), SERVER_TIMEOUT).with_data_dir(data_dir);
        let entries: Vec<SpoolEntry> = left.iter().map(|(_, e)| e.clone()).collect();
        let outcomes = sink.deliver(&entries);
        // A refused token will be refused again: no point in waiting.
        let refused = memhook_sinks::http::HttpError::Unauthorized.to_string();
        if outcomes
            .iter()
            .any(|o| matches!(o, ItemOutcome::Retry { reason, .. } if reason.ends_with(&refused)))
        {
            for (n, _) in &left {
                tally.failed += 1;
                tally.report(name, *n, &refused);
            }
            return;
        }
        let mut again = Vec::new();
        for ((n, entry), outcome) in left.into_iter().zip(outcomes) {
            match outcome {
                ItemOutcome::Delivered => tally.done += 1,
                ItemOutcome::Drop { reason } => {
                    tally.failed += 1;
                    tally.report(name, n, &format!("the server refused it: {reason}"));
                }
                ItemOutcome::Retry { reason, .. } if attempt == SERVER_ATTEMPTS => {
                    tally.failed += 1;
                    tally.report(
                        name,
                        n,
                        &format!("not stored after {SERVER_ATTEMPTS} tries: {reason}"),
                    );
                }
                ItemOutcome::Retry { .. } => again.push((n, entry)),
            }
        }
        if again.is_empty() {
            return;
        }
        left = again;
        std::thread::sleep(pause);
        pause *= 2;
    }
}
