//! Where the PostgreSQL store is and how to log in: `--database URL` or
//! `MEMHOOK_DATABASE_URL`, and the password — never from the command line.
//!
//! Password sources, first found wins:
//! 1. `--database-password-file FILE` (a regular file, not a symlink, mode
//!    0600 or stricter; its first line);
//! 2. the password inside `MEMHOOK_DATABASE_URL` (the environment is not
//!    visible to other users the way argv is);
//! 3. the libpq password file: `PGPASSFILE`, else `~/.pgpass`, read as
//!    libpq does (`host:port:database:user:password`, `*` matches anything,
//!    `\:` and `\\` escape, the first matching line wins, and a file that
//!    its group or others may read is ignored with a warning).
//!
//! A `--database` value that holds a password is refused: argv is readable
//! by every local user (`ps`). TLS to the database is not supported yet:
//! `sslmode=require` is refused; reach the database over a Unix socket,
//! loopback, or a TLS-terminating proxy (see `docs/postgres.md`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use postgres::config::{Host, SslMode};
use postgres::Config;

/// Environment variable holding the database URL (may hold the password).
pub const DATABASE_URL_ENV: &str = "MEMHOOK_DATABASE_URL";
/// Environment variable naming the libpq password file.
pub const PGPASSFILE_ENV: &str = "PGPASSFILE";
/// PostgreSQL's default port (for `.pgpass` matching).
pub const DEFAULT_PORT: u16 = 5432;
/// Largest password file read (`--database-password-file`, `.pgpass`).
pub const MAX_PASSWORD_FILE_BYTES: u64 = 64 * 1024;

/// Why the database settings cannot be used (exit 2: the user fixes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// `--database` holds a password.
    PasswordInArgv,
    /// The URL does not parse; `from` names where it came from.
    BadUrl { from: &'static str, why: String },
    /// TLS was asked for (`sslmode=require`).
    Tls { from: &'static str },
    /// The URL names no user and the environment has none (`USER`).
    NoUser { from: &'static str },
    /// `--database-password-file` cannot be used.
    PasswordFile { path: PathBuf, problem: String },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::PasswordInArgv => write!(
                f,
                "--database holds a password, and a command line is visible to every local \
                 user; remove it from the URL and put it in {DATABASE_URL_ENV} (the whole URL), \
                 a --database-password-file (mode 0600) or ~/.pgpass"
            ),
            ConfigError::BadUrl { from, why } => write!(
                f,
                "{from}: not a PostgreSQL connection URL ({why}); expected \
                 postgres://USER@HOST:PORT/DATABASE"
            ),
            ConfigError::Tls { from } => write!(
                f,
                "{from}: sslmode asks for TLS, which memhook does not support yet; connect \
                 over a Unix socket (host=/run/postgresql), loopback, or a TLS-terminating \
                 proxy, and drop sslmode"
            ),
            ConfigError::NoUser { from } => write!(
                f,
                "{from}: no user in the URL and USER is unset; write postgres://USER@HOST/DATABASE"
            ),
            ConfigError::PasswordFile { path, problem } => {
                write!(f, "--database-password-file {}: {problem}", path.display())
            }
        }
    }
}

impl std::error::Error for ConfigError {}

/// A database to connect to: the parsed settings (password included) and a
/// description safe to log (no password).
#[derive(Clone)]
pub struct Target {
    pub config: Config,
    pub shown: String,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target").field("db", &self.shown).finish()
    }
}

/// Where settings come from, passed in so tests need no process environment.
#[derive(Debug, Default, Clone)]
pub struct Env {
    /// `MEMHOOK_DATABASE_URL`.
    pub url: Option<String>,
    /// `PGPASSFILE`.
    pub pgpassfile: Option<PathBuf>,
    /// `HOME`.
    pub home: Option<PathBuf>,
    /// `USER` (or `LOGNAME`): the default user, as libpq's.
    pub user: Option<String>,
}

impl Env {
    /// The process environment (blank values count as unset).
    pub fn from_process() -> Env {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        Env {
            url: var(DATABASE_URL_ENV),
            pgpassfile: var(PGPASSFILE_ENV).map(PathBuf::from),
            home: var("HOME").map(PathBuf::from),
            user: var("USER").or_else(|| var("LOGNAME")),
        }
    }
}

/// `--database` and `--database-password-file`, shared by every command
/// that can work on a team server's PostgreSQL database (`serve`, `token`,
/// `export`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DatabaseArgs {
    /// Use this PostgreSQL database instead of the data dir's SQLite file:
    /// postgres://USER@HOST:PORT/DATABASE (host=/run/postgresql for a Unix
    /// socket). Default: MEMHOOK_DATABASE_URL when set. Never put the
    /// password here (it is refused): use MEMHOOK_DATABASE_URL,
    /// --database-password-file or ~/.pgpass (PGPASSFILE).
    #[arg(long, value_name = "URL", global = true)]
    pub database: Option<String>,
    /// Read the database password from the first line of FILE (mode 0600,
    /// not a symlink).
    #[arg(long, value_name = "FILE", global = true)]
    pub database_password_file: Option<PathBuf>,
}

impl DatabaseArgs {
    /// The database these arguments and the process environment name
    /// (`None`: the SQLite store), see [`resolve`].
    pub fn target(&self) -> Result<Option<Target>, ConfigError> {
        resolve(
            self.database.as_deref(),
            self.database_password_file.as_deref(),
            &Env::from_process(),
        )
    }
}

/// The database `memhook serve` stores into: `None` for the embedded
/// SQLite store (neither `--database` nor the variable set).
pub fn resolve(
    flag: Option<&str>,
    password_file: Option<&Path>,
    env: &Env,
) -> Result<Option<Target>, ConfigError> {
    let (url, from) = match (flag, env.url.as_deref()) {
        (Some(u), _) => (u, "--database"),
        (None, Some(u)) => (u, DATABASE_URL_ENV),
        (None, None) => {
            if let Some(path) = password_file {
                return Err(ConfigError::PasswordFile {
                    path: path.to_path_buf(),
                    problem: format!("given without --database or {DATABASE_URL_ENV}"),
                });
            }
            return Ok(None);
        }
    };
    let mut config = Config::from_str(url).map_err(|e| ConfigError::BadUrl {
        from,
        // The parser's message never echoes the password.
        why: e.to_string(),
    })?;
    if from == "--database" && config.get_password().is_some() {
        return Err(ConfigError::PasswordInArgv);
    }
    match config.get_ssl_mode() {
        SslMode::Require => return Err(ConfigError::Tls { from }),
        // Prefer (the default) falls back to plain; say so by asking for it.
        _ => {
            config.ssl_mode(SslMode::Disable);
        }
    }
    if config.get_user().is_none() {
        let user = env.user.clone().ok_or(ConfigError::NoUser { from })?;
        config.user(&user);
    }
    if config.get_hosts().is_empty() {
        // libpq's default: the local socket directory (Windows: localhost).
        #[cfg(unix)]
        config.host_path("/var/run/postgresql");
        #[cfg(not(unix))]
        config.host("localhost");
    }
    if let Some(path) = password_file {
        config.password(read_password_file(path)?);
    } else if config.get_password().is_none() {
        if let Some(pw) = pgpass_password(&config, env) {
            config.password(pw);
        }
    }
    let shown = describe(&config);
    Ok(Some(Target { config, shown }))
}

/// `postgres://user@host:port/db`, never the password.
pub fn describe(config: &Config) -> String {
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => String::new(),
    };
    let port = config.get_ports().first().copied().unwrap_or(DEFAULT_PORT);
    let user = config.get_user().unwrap_or("");
    let db = config.get_dbname().unwrap_or(user);
    format!("postgres://{user}@{host}:{port}/{db}")
}

/// The first line of `--database-password-file`: a regular file (not a
/// symlink) that only its owner may read or write.
fn read_password_file(path: &Path) -> Result<String, ConfigError> {
    let bad = |problem: String| ConfigError::PasswordFile {
        path: path.to_path_buf(),
        problem,
    };
    let meta = std::fs::symlink_metadata(path).map_err(|e| bad(e.to_string()))?;
    if meta.file_type().is_symlink() {
        return Err(bad("is a symlink; name the file itself".into()));
    }
    if !meta.is_file() {
        return Err(bad("is not a regular file".into()));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(bad(format!(
                "mode {mode:04o} lets others read it; run `chmod 600 {}`",
                path.display()
            )));
        }
    }
    if meta.len() > MAX_PASSWORD_FILE_BYTES {
        return Err(bad(format!("over {MAX_PASSWORD_FILE_BYTES} bytes")));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let pw = text.lines().next().unwrap_or("").trim_end_matches('\r');
    if pw.is_empty() {
        return Err(bad("its first line is empty".into()));
    }
    Ok(pw.to_string())
}

/// The password libpq would take from the password file for `config`.
fn pgpass_password(config: &Config, env: &Env) -> Option<String> {
    let path = env
        .pgpassfile
        .clone()
        .or_else(|| env.home.as_ref().map(|h| h.join(".pgpass")))?;
    let meta = std::fs::metadata(&path).ok()?;
    if !meta.is_file() || meta.len() > MAX_PASSWORD_FILE_BYTES {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            eprintln!(
                "memhook: warning: password file {} has group or world access; it is \
                 ignored (run `chmod 600` on it)",
                path.display()
            );
            return None;
        }
    }
    let text = std::fs::read_to_string(&path).ok()?;
    // libpq matches a Unix-socket connection as host `localhost`.
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        _ => "localhost".to_string(),
    };
    let port = config
        .get_ports()
        .first()
        .copied()
        .unwrap_or(DEFAULT_PORT)
        .to_string();
    let user = config.get_user().unwrap_or("");
    let db = config.get_dbname().unwrap_or(user);
    pgpass_lookup(&text, [&host, &port, db, user])
}

/// The password of the first line of a `.pgpass` text whose four fields
/// match `want` (host, port, database, user); `*` matches anything.
pub fn pgpass_lookup(text: &str, want: [&str; 4]) -> Option<String> {
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields = split_pgpass(line);
        if fields.len() < 5 {
            continue;
        }
        let matches = fields[..4]
            .iter()
            .zip(want)
            .all(|(f, w)| f.as_str() == "*" || f.as_str() == w);
        if matches {
            return Some(fields[4].clone());
        }
    }
    None
}

/// Split one `.pgpass` line on unescaped `:` into at most five fields (the
/// password is the rest of the line), removing `\` escapes.
fn split_pgpass(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.last_mut().unwrap().push(n);
                }
            }
            ':' if out.len() < 5 => out.push(String::new()),
            c => out.last_mut().unwrap().push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> Env {
        Env {
            user: Some("me".into()),
            ..Env::default()
        }
    }

    #[test]
    fn nothing_configured_is_sqlite() {
        assert!(resolve(None, None, &env()).unwrap().is_none());
    }

    #[test]
    fn a_password_on_the_command_line_is_refused() {
        let e = resolve(Some("postgres://u:hunter2@db/x"), None, &env()).unwrap_err();
        assert_eq!(e, ConfigError::PasswordInArgv);
        let msg = e.to_string();
        assert!(
            msg.contains(DATABASE_URL_ENV) && !msg.contains("hunter2"),
            "{msg}"
        );
        // Key-value form too.
        let e = resolve(Some("host=db user=u password=hunter2"), None, &env()).unwrap_err();
        assert_eq!(e, ConfigError::PasswordInArgv);
        // From the environment it is accepted, and never shown.
        let mut en = env();
        en.url = Some("postgres://u:hunter2@db:6543/x".into());
        let t = resolve(None, None, &en).unwrap().unwrap();
        assert_eq!(t.config.get_password(), Some(&b"hunter2"[..]));
        assert_eq!(t.shown, "postgres://u@db:6543/x");
        assert!(!format!("{t:?}").contains("hunter2"));
    }

    #[test]
    fn the_flag_wins_over_the_variable_and_tls_is_refused() {
        let mut en = env();
        en.url = Some("postgres://a@one/x".into());
        let t = resolve(Some("postgres://b@two/y"), None, &en)
            .unwrap()
            .unwrap();
        assert_eq!(t.shown, "postgres://b@two:5432/y");
        let e = resolve(Some("postgres://b@two/y?sslmode=require"), None, &en).unwrap_err();
        assert!(matches!(e, ConfigError::Tls { .. }), "{e}");
        assert!(matches!(
            resolve(Some("mysql://nope"), None, &en).unwrap_err(),
            ConfigError::BadUrl { .. }
        ));
        // No user anywhere: named.
        let t = resolve(Some("postgres://db/y"), None, &env())
            .unwrap()
            .unwrap();
        assert_eq!(t.config.get_user(), Some("me"));
        assert!(matches!(
            resolve(Some("postgres://db/y"), None, &Env::default()).unwrap_err(),
            ConfigError::NoUser { .. }
        ));
    }

    #[test]
    fn the_password_file_must_be_private_and_not_a_symlink() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("pw");
        std::fs::write(&f, "s3cret\nignored\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        let url = Some("postgres://u@db/x");
        let e = resolve(url, Some(&f), &env()).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let got = resolve(url, Some(&f), &env()).unwrap().unwrap();
        assert_eq!(got.config.get_password(), Some(&b"s3cret"[..]));
        let link = t.path().join("link");
        std::os::unix::fs::symlink(&f, &link).unwrap();
        let e = resolve(url, Some(&link), &env()).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        // A password file without a database is a mistake, said so.
        assert!(resolve(None, Some(&f), &env()).is_err());
    }

    #[test]
    fn pgpass_matches_like_libpq() {
        let text = "# comment\n\
                    other:5432:*:*:wrong\n\
                    db:*:x:u:pa\\:ss\\\\word\n\
                    *:*:*:*:fallback\n";
        assert_eq!(
            pgpass_lookup(text, ["db", "6543", "x", "u"]).as_deref(),
            Some("pa:ss\\word")
        );
        assert_eq!(
            pgpass_lookup(text, ["db", "5432", "y", "u"]).as_deref(),
            Some("fallback")
        );
        assert_eq!(pgpass_lookup("a:b:c\n", ["a", "b", "c", "d"]), None);
        // A password may hold unescaped colons after the fourth field.
        assert_eq!(
            pgpass_lookup("*:*:*:*:a:b", ["h", "1", "d", "u"]).as_deref(),
            Some("a:b")
        );
    }

    #[test]
    fn pgpass_file_is_used_only_when_private() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join(".pgpass");
        std::fs::write(&f, "localhost:5432:x:u:frompass\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        let mut en = env();
        en.home = Some(t.path().to_path_buf());
        // A Unix-socket connection matches as localhost.
        let url = Some("postgres://u@%2Frun%2Fpostgresql/x");
        let got = resolve(url, None, &en).unwrap().unwrap();
        assert_eq!(got.config.get_password(), Some(&b"frompass"[..]));
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
        let got = resolve(url, None, &en).unwrap().unwrap();
        assert_eq!(got.config.get_password(), None);
        // PGPASSFILE points elsewhere.
        let g = t.path().join("elsewhere");
        std::fs::write(&g, "*:*:*:*:viaenv\n").unwrap();
        std::fs::set_permissions(&g, std::fs::Permissions::from_mode(0o600)).unwrap();
        en.pgpassfile = Some(g);
        let got = resolve(url, None, &en).unwrap().unwrap();
        assert_eq!(got.config.get_password(), Some(&b"viaenv"[..]));
    }
}
