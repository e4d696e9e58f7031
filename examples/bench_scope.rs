//! Benchmark: CPU time of one scope resolution for a cwd ten levels deep
//! inside a git repository, with the repo-root strategy, against baselines
//! measured in the same run. Run by hand (numbers go to docs/benchmarks.md):
//!
//! ```text
//! cargo run --release --example bench_scope -- [iterations]
//! ```
//!
//! CPU time (user + system, getrusage) is reported because wall time is
//! noisy on a shared VM.

use std::path::{Path, PathBuf};
use std::process::Command;

use memhook_core::scope::{self, Mode, ScopeInput, Strategy, MARKER_FILE};

fn cpu_micros() -> f64 {
    // SAFETY: getrusage only writes into the struct we pass.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 * 1e6 + t.tv_usec as f64;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Mean CPU µs per call of `f` over `n` calls (after a short warm-up).
fn measure(n: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..n / 10 + 1 {
        f();
    }
    let start = cpu_micros();
    for _ in 0..n {
        f();
    }
    (cpu_micros() - start) / f64::from(n)
}

fn git(dir: &Path, args: &[&str]) {
    let ok = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .status()
        .expect("run git")
        .success();
    assert!(ok, "git {args:?}");
}

fn input(cwd: &Path, home: &Path, strategy: Strategy) -> ScopeInput {
    ScopeInput {
        cwd: cwd.to_path_buf(),
        home: Some(home.to_path_buf()),
        install_strategy: Some(strategy),
        mode: Some(Mode::Hook),
        ..ScopeInput::default()
    }
}

fn main() {
    let n: u32 = std::env::args()
        .nth(1)
        .map_or(20_000, |a| a.parse().expect("iterations"));
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let repo = home.join("src/app");
    let deep: PathBuf = (1..=10).fold(repo.clone(), |p, i| p.join(format!("d{i}")));
    std::fs::create_dir_all(&deep).unwrap();
    git(&repo, &["init", "-q"]);
    // A linked worktree: the common case that needs `commondir`.
    git(
        &repo,
        &[
            "-c",
            "user.name=b",
            "-c",
            "user.email=b@b",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "i",
        ],
    );
    let wt = home.join("src/app-feature");
    git(&repo, &["worktree", "add", "-q", wt.to_str().unwrap()]);
    let wt_deep: PathBuf = (1..=10).fold(wt.clone(), |p, i| p.join(format!("d{i}")));
    std::fs::create_dir_all(&wt_deep).unwrap();
    std::fs::write(
        home.join("src").join(MARKER_FILE),
        "workspace = \"bench\"\n[briefing]\nmax_chars = 6000\n",
    )
    .unwrap();

    // Sanity: the scenarios resolve to what they should.
    let s = scope::resolve(&input(&deep, &home, Strategy::RepoRoot)).unwrap();
    assert_eq!((s.workspace.as_str(), s.project.as_str()), ("bench", "app"));
    let s = scope::resolve(&input(&wt_deep, &home, Strategy::RepoRoot)).unwrap();
    assert_eq!(s.project, "app");

    // Baseline 1: the bare walk, one stat per directory up to HOME.
    let stat_walk = measure(n, || {
        let mut found = 0;
        for dir in deep.ancestors() {
            if std::fs::metadata(dir.join(MARKER_FILE)).is_ok_and(|m| m.is_file()) {
                found += 1;
            }
            if dir == home {
                break;
            }
        }
        assert_eq!(found, 1);
    });
    // Baseline 2: full resolution with the basename strategy (no git).
    let basename = measure(n, || {
        let s = scope::resolve(&input(&deep, &home, Strategy::Basename)).unwrap();
        assert_eq!(s.project, "d10");
    });
    let repo_root = measure(n, || {
        let s = scope::resolve(&input(&deep, &home, Strategy::RepoRoot)).unwrap();
        assert_eq!(s.project, "app");
    });
    let worktree = measure(n, || {
        let s = scope::resolve(&input(&wt_deep, &home, Strategy::RepoRoot)).unwrap();
        assert_eq!(s.project, "app");
    });

    println!("iterations per scenario: {n}");
    println!(
        "{:<52} {:>9} {:>8}",
        "scenario (cwd 10 levels deep)", "CPU µs", "ratio"
    );
    let row = |name: &str, v: f64| println!("{name:<52} {v:>9.1} {:>7.1}x", v / stat_walk);
    row("baseline: bare stat walk to HOME", stat_walk);
    row("resolve, basename strategy", basename);
    row("resolve, repo-root strategy (main checkout)", repo_root);
    row("resolve, repo-root strategy (linked worktree)", worktree);
}
