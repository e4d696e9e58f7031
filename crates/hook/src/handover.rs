//! Handing a command line to a sibling binary (docs/architecture.md,
//! "Four binaries"): `memhook` hands a server's session start to
//! `memhook-session` and every other command to `memhook-cli`;
//! `memhook-session` hands what it does not run to `memhook-cli`. On Unix the sibling replaces this
//! process (`exec`: same arguments, stdin, stdout and exit code); Windows
//! has no `exec`, so there the sibling runs as a child that inherits the
//! standard handles (stdin still unread) and its exit code is returned.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub use memhook_delivery::drain::spawn::{BRIEF_BINARY, FULL_BINARY, SESSION_BINARY};

/// `name` in this binary's directory.
pub fn sibling(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("memhook"));
    exe.with_file_name(name)
}

/// How often an `exec` or a spawn refused as "Text file busy" is tried
/// (10 ms apart).
const BUSY_TRIES: u32 = 100;

/// `program` with `argv[1..]`, named `argv[0]` where the platform can
/// (Unix), as the sibling that takes this call over runs.
fn command(program: &Path, argv: &[OsString]) -> std::process::Command {
    let mut cmd = std::process::Command::new(program);
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.arg0(argv.first().cloned().unwrap_or_else(|| "memhook".into()));
    }
    cmd.args(argv.iter().skip(1));
    cmd
}

/// `start` (an `exec` or a spawn), tried again while it is refused as
/// "Text file busy": the file is still open for writing somewhere (being
/// installed, or a write descriptor a concurrent fork inherited for a
/// moment). Waits for it, briefly ([`BUSY_TRIES`], 10 ms apart).
pub(crate) fn unless_busy<T>(
    mut start: impl FnMut() -> Result<T, std::io::Error>,
) -> Result<T, std::io::Error> {
    let mut tries = 0;
    loop {
        match start() {
            Err(e)
                if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries + 1 < BUSY_TRIES =>
            {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            done => return done,
        }
    }
}

/// A child's exit status as this process's exit code (1 for a child ended
/// by a signal).
fn exit_code(st: std::process::ExitStatus) -> ExitCode {
    ExitCode::from(st.code().map_or(1, |c| c.clamp(0, 255) as u8))
}

/// Run `program` with `argv[1..]` in place of this process. Returns only
/// when that failed (Unix), or with the child's exit code (Windows).
pub fn hand_over(program: &Path, argv: &[OsString]) -> Result<ExitCode, std::io::Error> {
    let mut cmd = command(program, argv);
    #[cfg(windows)]
    {
        unless_busy(|| cmd.status()).map(exit_code)
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        unless_busy(|| Err::<ExitCode, _>(cmd.exec()))
    }
}

/// Run `program` with `argv[1..]` as a child that reads `stdin` (a
/// payload this process already read) and shares this process's stdout
/// and stderr; its exit code. Used where `exec` cannot pass the payload on:
/// the child reads all of its stdin before it writes anything, so writing
/// it all first cannot deadlock. A child that stops reading early (it
/// failed) only ends the write; its exit code still counts.
pub fn hand_over_with_stdin(
    program: &Path,
    argv: &[OsString],
    stdin: &[u8],
) -> Result<ExitCode, std::io::Error> {
    use std::io::Write;
    let mut cmd = command(program, argv);
    cmd.stdin(std::process::Stdio::piped());
    let mut child = unless_busy(|| cmd.spawn())?;
    if let Some(mut pipe) = child.stdin.take() {
        let _ = pipe.write_all(stdin);
    }
    child.wait().map(exit_code)
}

/// Run any of the three command lines memhook itself runs many times a
/// session, without clap: a hook call as [`crate::parse_fast`] reads it,
/// with `briefer` for session start; the detached drainer's spawn line
/// ([`background_drainer`]), with `drain` (its error is printed as
/// `memhook: …`, exit 2); and the per-event binary's request for a
/// briefing ([`crate::brief::brief_line`]), with `compose`. `None` for any
/// other line, which is clap's. `memhook-session` and `memhook-cli` both
/// start here; memhook-cli's tests keep the hook's and the drainer's lines
/// read as clap reads them.
pub fn run_own_line<E: std::fmt::Display>(
    argv: &[OsString],
    briefer: crate::Briefer,
    compose: crate::brief::Composer,
    drain: impl FnOnce(&Path) -> Result<(), E>,
) -> Option<ExitCode> {
    if let Some((args, data_dir)) = crate::parse_fast(argv) {
        return Some(crate::run(&args, data_dir.as_deref(), briefer));
    }
    if let Some(dir) = crate::brief::brief_line(argv) {
        return Some(crate::brief::answer(&dir, compose));
    }
    let dir = background_drainer(argv)?;
    Some(match drain(&dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memhook: {e}");
            ExitCode::from(2)
        }
    })
}

/// The detached drainer's command line, exactly as the hook spawns it
/// (`--data-dir DIR drain --background`): its data dir. Anything else is
/// for clap.
pub fn background_drainer(argv: &[OsString]) -> Option<PathBuf> {
    match argv {
        [_, flag, dir, drain, background]
            if flag == "--data-dir" && drain == "drain" && background == "--background" =>
        {
            Some(dir.into())
        }
        _ => None,
    }
}
