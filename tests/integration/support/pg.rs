//! A real PostgreSQL for the tests: a cluster made with `initdb` in a temp
//! dir, started with `pg_ctl` on a free 127.0.0.1 port (its Unix socket in
//! the temp dir too), stopped when dropped.
//!
//! PostgreSQL refuses to run as root: when the tests run as root the
//! cluster runs as `nobody` (through `runuser`), which owns its data dir.
//! Host connections need the superuser's password (SCRAM), so the tests
//! exercise memhook's password sources for real; the socket is trusted.
//! Missing binaries: see `deps::pg_bin` (a failure under CI, else skipped).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use super::http::free_port;

/// The cluster's superuser.
pub const USER: &str = "memhook";
/// The user a root test run starts PostgreSQL as.
const RUN_AS: &str = "nobody";

pub struct Cluster {
    _dir: tempfile::TempDir,
    bin: PathBuf,
    data: PathBuf,
    sock: PathBuf,
    log: PathBuf,
    pub port: u16,
    pub password: String,
    /// `Some(user)` when started through runuser (we are root).
    run_as: Option<&'static str>,
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Give `path` to `user` (root only).
fn chown(path: &Path, user: &str) {
    let out = Command::new("chown")
        .arg(format!("{user}:"))
        .arg(path)
        .output()
        .expect("chown");
    assert!(out.status.success(), "chown {}: {out:?}", path.display());
}

impl Cluster {
    /// A fresh running cluster, or `None` when PostgreSQL is not installed
    /// and this is not CI (the test returns).
    pub fn start(test: &str) -> Option<Cluster> {
        let bin = super::deps::pg_bin(test)?;
        let dir = tempfile::tempdir().unwrap();
        let run_as = is_root().then_some(RUN_AS);
        let data = dir.path().join("data");
        let sock = dir.path().join("sock");
        let log = dir.path().join("log");
        std::fs::create_dir(&data).unwrap();
        std::fs::create_dir(&sock).unwrap();
        let password = format!("pw-{}", std::process::id());
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, &password).unwrap();
        if let Some(user) = run_as {
            use std::os::unix::fs::PermissionsExt;
            // The user must reach its files through the temp dir.
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
            for p in [&data, &sock, &pwfile] {
                chown(p, user);
            }
            std::fs::write(&log, "").unwrap();
            chown(&log, user);
        }
        let mut c = Cluster {
            _dir: dir,
            bin,
            data,
            sock,
            log,
            port: 0,
            password,
            run_as,
        };
        let out = c.run(
            "initdb",
            &[
                "-D",
                c.data.to_str().unwrap(),
                "-U",
                USER,
                "--pwfile",
                pwfile.to_str().unwrap(),
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "-E",
                "UTF8",
                "--locale=C.UTF-8",
                "--no-sync",
            ],
        );
        assert!(out.status.success(), "initdb: {out:?}");
        std::fs::remove_file(&pwfile).unwrap();
        // A port taken between our probe and the server's bind: try again.
        for _ in 0..5 {
            c.port = free_port();
            if c.try_start() {
                return Some(c);
            }
        }
        panic!(
            "PostgreSQL did not start: {}",
            std::fs::read_to_string(&c.log).unwrap_or_default()
        );
    }

    /// Run one of PostgreSQL's programs as the cluster's user.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(program);
        let mut cmd = match self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(exe);
                c
            }
            None => Command::new(exe),
        };
        cmd.args(args).current_dir("/");
        cmd.output().unwrap_or_else(|e| panic!("{program}: {e}"))
    }

    fn try_start(&self) -> bool {
        let opts = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c full_page_writes=off -c max_connections=200",
            self.port,
            self.sock.display()
        );
        self.run(
            "pg_ctl",
            &[
                "-D",
                self.data.to_str().unwrap(),
                "-l",
                self.log.to_str().unwrap(),
                "-o",
                &opts,
                "-w",
                "-t",
                "60",
                "start",
            ],
        )
        .status
        .success()
    }

    /// Start the stopped cluster again, on the same port.
    pub fn restart(&self) {
        assert!(
            self.try_start(),
            "PostgreSQL did not restart: {}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    /// Stop at once (in-flight work is lost, as in a crash).
    pub fn stop(&self) {
        let out = self.stop_now();
        assert!(out.status.success(), "pg_ctl stop: {out:?}");
    }

    /// `pg_ctl stop -m immediate`, whatever it answers.
    fn stop_now(&self) -> std::process::Output {
        self.run(
            "pg_ctl",
            &[
                "-D",
                self.data.to_str().unwrap(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        )
    }

    /// `postgres://memhook@127.0.0.1:PORT/DB`: no password (for --database).
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{USER}@127.0.0.1:{}/{db}", self.port)
    }

    /// The URL with the password (for MEMHOOK_DATABASE_URL).
    pub fn url_with_password(&self, db: &str) -> String {
        format!(
            "postgres://{USER}:{}@127.0.0.1:{}/{db}",
            self.password, self.port
        )
    }

    /// A client connection to `db` (for the tests' own checks).
    pub fn client(&self, db: &str) -> postgres::Client {
        postgres::Client::connect(&self.url_with_password(db), postgres::NoTls)
            .unwrap_or_else(|e| panic!("connect to {db}: {e}"))
    }

    /// Create an empty database `name`.
    pub fn create_db(&self, name: &str) {
        self.client("postgres")
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .unwrap();
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.stop_now();
    }
}
