//! `memhook export`: every stored record (or one project's, or those since
//! a date) as JSON lines on stdout, oldest first — from the data dir's
//! SQLite store, or from a team server's PostgreSQL database (`--database`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use clap::Args;

use super::Line;
use crate::cmd::CmdResult;
use memhook_core::names;
use memhook_store::sqlite::{ExportFilter, Store, StoreError, STORE_FILE};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// Only this project, written WORKSPACE/PROJECT.
    #[arg(long, value_name = "W/P")]
    pub project: Option<String>,
    /// Only records from this UTC date or time on: YYYY-MM-DD or
    /// YYYY-MM-DDTHH:MM[:SS]Z.
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Read from a team server's PostgreSQL store instead of the data dir's
    /// SQLite file (default: MEMHOOK_DATABASE_URL when set).
    #[command(flatten)]
    pub db: memhook_store_pg::config::DatabaseArgs,
}

/// `--project W/P` as a checked `(workspace, project)`.
pub fn parse_project(flag: &str, wp: &str) -> Result<(String, String), String> {
    let (w, p) = wp
        .split_once('/')
        .ok_or_else(|| format!("{flag} {wp:?}: write it as WORKSPACE/PROJECT, e.g. default/api"))?;
    for n in [w, p] {
        if !names::is_valid_name(n) {
            return Err(format!("{flag}: {}", names::name_problem(n)));
        }
    }
    Ok((w.to_string(), p.to_string()))
}

/// The filter the arguments describe, or a usage error naming the fix.
pub fn filter(args: &ExportArgs) -> Result<ExportFilter, String> {
    let project = args
        .project
        .as_deref()
        .map(|wp| parse_project("--project", wp))
        .transpose()?;
    let since_ms = match &args.since {
        None => None,
        Some(d) => Some(memhook_core::timefmt::parse_utc_ms(d).ok_or_else(|| {
            format!("--since {d:?}: write a UTC date or time, e.g. 2026-11-30 or 2026-11-30T18:00Z")
        })?),
    };
    Ok(ExportFilter { project, since_ms })
}

/// Why writing the export stopped.
enum Stop {
    Store(StoreError),
    Write(std::io::Error),
}

impl From<StoreError> for Stop {
    fn from(e: StoreError) -> Self {
        Stop::Store(e)
    }
}

pub fn run(args: &ExportArgs, data_dir: Option<&Path>) -> CmdResult {
    let filter = filter(args)?;
    let dir = memhook_core::data_dir::resolve(data_dir)?;
    let target = args.db.target()?;
    if target.is_none() && !dir.join(STORE_FILE).exists() {
        return Err(format!(
            "{}: no store to export (nothing was delivered into this data dir; pass \
             --data-dir of the machine or server that holds the records, or --database \
             for a team server on PostgreSQL)",
            dir.join(STORE_FILE).display()
        )
        .into());
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let each = |r, extras| {
        serde_json::to_writer(&mut out, &Line::of(r, extras))
            .map_err(|e| Stop::Write(e.into()))
            .and_then(|_| out.write_all(b"\n").map_err(Stop::Write))
    };
    let written = match target {
        None => Store::open(&dir)?.export_each(&filter, each),
        Some(target) => memhook_store_pg::PgStore::new(target, &dir).export_each(&filter, each),
    };
    let written = written.and_then(|n| out.flush().map(|_| n).map_err(Stop::Write));
    match written {
        Ok(n) => {
            eprintln!(
                "memhook: exported {}",
                memhook_core::term::count(n, "record")
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(Stop::Store(e)) => {
            eprintln!("memhook: export failed: {e}");
            Ok(ExitCode::from(1))
        }
        Err(Stop::Write(e)) => {
            eprintln!("memhook: export failed writing the output: {e}");
            Ok(ExitCode::from(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_are_checked() {
        let args = |p: Option<&str>, s: Option<&str>| ExportArgs {
            project: p.map(str::to_string),
            since: s.map(str::to_string),
            db: Default::default(),
        };
        assert_eq!(filter(&args(None, None)).unwrap(), ExportFilter::default());
        let f = filter(&args(Some("acme/api"), Some("2026-01-02"))).unwrap();
        assert_eq!(f.project, Some(("acme".into(), "api".into())));
        assert_eq!(f.since_ms, Some(1_767_312_000_000));
        assert!(filter(&args(Some("api"), None))
            .unwrap_err()
            .contains("WORKSPACE/PROJECT"));
        assert!(filter(&args(Some("acme/Bad"), None)).is_err());
        assert!(filter(&args(None, Some("last week")))
            .unwrap_err()
            .contains("--since"));
    }
}
