//! `memhook token add NAME` / `list` / `revoke NAME`: the command's
//! arguments and output; the token logic is `memhook_store::tokens`.

use std::fmt;
use std::path::Path;
use std::process::ExitCode;

use clap::{Args, Subcommand};

use crate::cmd::CmdResult;
use memhook_store::sqlite::Store;
use memhook_store::tokens::{add, check_name, Added, TokenStore, MAX_TOKENS};

#[derive(Debug, Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    pub action: TokenAction,
    /// The team server's PostgreSQL store (default: the data dir's SQLite
    /// file, or MEMHOOK_DATABASE_URL when set).
    #[command(flatten)]
    pub db: memhook_store_pg::config::DatabaseArgs,
}

#[derive(Debug, Subcommand)]
pub enum TokenAction {
    /// Create a token for NAME and print it once on stdout (only its hash
    /// is kept).
    Add {
        /// Who or what uses it: lowercase letters, digits, '.', '_', '-'.
        name: String,
    },
    /// List tokens: name, created, revoked (never a token).
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Revoke NAME's token: the server refuses it from the next request on.
    Revoke { name: String },
}

/// `memhook token …` on the server's store: the SQLite store of the data
/// dir (run it where `memhook serve` runs, with the same `--data-dir`), or
/// the PostgreSQL database `--database` / `MEMHOOK_DATABASE_URL` names (from
/// any machine that reaches it; the password as for `serve`, never in argv).
/// A store that cannot be reached is exit 1.
pub fn run(args: &TokenArgs, data_dir: Option<&Path>) -> CmdResult {
    let dir = memhook_core::data_dir::resolve(data_dir)?;
    if let TokenAction::Add { name } = &args.action {
        check_name(name)?;
    }
    match args.db.target()? {
        None => {
            let mut store = Store::open(&dir)?;
            run_on(&mut store, &args.action)
        }
        Some(target) => {
            let mut pg = memhook_store_pg::PgStore::new(target, &dir);
            run_on(&mut pg, &args.action)
        }
    }
}

/// One token action on `store`.
fn run_on<S: TokenStore>(store: &mut S, action: &TokenAction) -> CmdResult {
    let failed = |e: &dyn fmt::Display| {
        eprintln!("memhook: token: {e}");
        Ok(ExitCode::from(1))
    };
    match action {
        TokenAction::Add { name } => {
            let out = match add(store, name) {
                Ok(out) => out,
                Err(e) => return failed(&e),
            };
            match out {
                Added::Token(token) => {
                    println!("{token}");
                    eprintln!(
                        "memhook: token {name:?} added; it is shown only this once — give it \
                         to its user for AI_MEMORY_AUTH_TOKEN (`memhook token revoke {name}` \
                         ends it)"
                    );
                    Ok(ExitCode::SUCCESS)
                }
                Added::Taken => Err(format!(
                    "a token named {name:?} exists (or existed: names are not reused, so \
                     records keep meaning one token); pick another name"
                )
                .into()),
                Added::Full => Err(format!(
                    "this store holds {MAX_TOKENS} tokens, the most it keeps; nothing added"
                )
                .into()),
            }
        }
        TokenAction::List { json } => {
            let tokens = match store.list_tokens() {
                Ok(t) => t,
                Err(e) => return failed(&e),
            };
            for t in tokens {
                if *json {
                    println!(
                        "{}",
                        serde_json::json!({"name": t.name, "created": t.created,
                            "revoked": t.revoked})
                    );
                } else {
                    println!(
                        "{}\tcreated {}\t{}",
                        memhook_core::term::line(&t.name),
                        memhook_core::term::line(&t.created),
                        t.revoked
                            .as_deref()
                            .map_or("active".to_string(), |r| format!(
                                "revoked {}",
                                memhook_core::term::line(r)
                            ))
                    );
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        TokenAction::Revoke { name } => {
            let at = memhook_core::timefmt::rfc3339_ms(memhook_core::timefmt::now_ms());
            match store.revoke_token(name, &at) {
                Ok(Some(t)) => {
                    let when = t.revoked.unwrap_or(at);
                    println!("revoked {} ({when})", memhook_core::term::line(name));
                    Ok(ExitCode::SUCCESS)
                }
                Ok(None) => Err(format!(
                    "no token named {:?} (`memhook token list` shows them)",
                    memhook_core::term::line(name)
                )
                .into()),
                Err(e) => failed(&e),
            }
        }
    }
}
