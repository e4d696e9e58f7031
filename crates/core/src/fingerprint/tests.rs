use super::*;
use crate::record::sample;
use std::fs;

struct Project {
    _t: tempfile::TempDir,
    root: PathBuf,
    data: PathBuf,
}

fn project() -> Project {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    let data = t.path().join("data");
    fs::create_dir_all(root.join("secret")).unwrap();
    fs::create_dir_all(root.join("src")).unwrap();
    fs::write(
        root.join(".ai-memory.toml"),
        "[capture]\nignore_paths = [\"secret/**\"]\n",
    )
    .unwrap();
    fs::write(
        root.join("secret/prod.env"),
        "DB_PASSWORD=hunter2-horse-battery-staple\nSTRIPE_WEBHOOK=whsec_live_abcdefghijkl\n",
    )
    .unwrap();
    fs::write(
        root.join("src/main.rs"),
        "fn main() { run_the_server(); }\n",
    )
    .unwrap();
    Project { _t: t, root, data }
}

fn exclusions(p: &Project) -> Exclusions {
    Exclusions {
        marker: p.root.join(".ai-memory.toml").to_str().unwrap().to_string(),
        patterns: vec!["secret/**".into()],
        home: None,
    }
}

fn rec_with(body: &str) -> Record {
    Record {
        title: Some(body.lines().next().unwrap_or("").to_string()),
        body: Some(body.to_string()),
        ..sample::record("00112233445566778899aabbccddeeff")
    }
}

fn grep_dir(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut hits = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            hits.extend(grep_dir(&p, needle));
        } else if fs::read(&p)
            .unwrap()
            .windows(needle.len())
            .any(|w| w == needle)
        {
            hits.push(p);
        }
    }
    hits
}

#[test]
fn a_record_quoting_an_excluded_file_loses_those_lines_and_nothing_else() {
    let p = project();
    let mut fp = Fingerprints::open(&p.data).unwrap();
    let mut rec = rec_with(
        "DB_PASSWORD=hunter2-horse-battery-staple\nthe build passed\n  2\u{2192}STRIPE_WEBHOOK=whsec_live_abcdefghijkl",
    );
    // Two lines of the body, and the title.
    assert_eq!(fp.screen(&exclusions(&p), &mut rec), Screened::Removed(3));
    assert_eq!(rec.title.as_deref(), Some(filter::REMOVED));
    assert_eq!(
        rec.body.as_deref(),
        Some(format!("{}\nthe build passed\n{}", filter::REMOVED, filter::REMOVED).as_str())
    );
    // The data dir holds a key and a set: no line of the file.
    for needle in ["hunter2", "whsec_live", "secret", "prod.env"] {
        assert!(grep_dir(&p.data, needle.as_bytes()).is_empty(), "{needle}");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for e in fs::read_dir(p.data.join(DIR)).unwrap() {
            let m = e.unwrap().metadata().unwrap();
            assert_eq!(m.permissions().mode() & 0o077, 0);
        }
    }
}

#[test]
fn a_changed_excluded_file_is_fingerprinted_again_and_the_set_survives_a_restart() {
    let p = project();
    let ex = exclusions(&p);
    let mut fp = Fingerprints::open(&p.data).unwrap();
    let mut r = rec_with("NEW_SECRET=correct-horse-battery-staple-2");
    assert_eq!(fp.screen(&ex, &mut r), Screened::Clean);
    fs::write(
        p.root.join("secret/new.env"),
        "NEW_SECRET=correct-horse-battery-staple-2\n",
    )
    .unwrap();
    std::thread::sleep(RECHECK);
    let mut r = rec_with("NEW_SECRET=correct-horse-battery-staple-2");
    // The title and the body.
    assert_eq!(fp.screen(&ex, &mut r), Screened::Removed(2));
    // A new drainer reads the same key and set.
    let mut again = Fingerprints::open(&p.data).unwrap();
    let mut r = rec_with("x\nNEW_SECRET=correct-horse-battery-staple-2");
    assert_eq!(again.screen(&ex, &mut r), Screened::Removed(1));
}

#[test]
fn an_unusable_set_withholds_every_text() {
    let p = project();
    let mut fp = Fingerprints::open(&p.data).unwrap();
    let f = fs::File::create(p.root.join("secret/huge.bin")).unwrap();
    f.set_len(build::MAX_FILE_BYTES + 1).unwrap();
    let mut r = rec_with("the build passed");
    assert!(matches!(
        fp.screen(&exclusions(&p), &mut r),
        Screened::Withheld(_)
    ));
    assert_eq!(r.title.as_deref(), Some(WITHHELD));
    assert_eq!(r.body, None);
}

#[test]
fn a_key_file_that_is_a_link_or_the_wrong_size_is_refused() {
    let p = project();
    fs::create_dir_all(p.data.join(DIR)).unwrap();
    fs::write(p.data.join(DIR).join(KEY_FILE), b"short").unwrap();
    let err = Fingerprints::open(&p.data).err().expect("refused");
    assert!(err.to_string().contains("delete it"), "{err}");
    #[cfg(unix)]
    {
        fs::remove_file(p.data.join(DIR).join(KEY_FILE)).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", p.data.join(DIR).join(KEY_FILE)).unwrap();
        assert!(Fingerprints::open(&p.data).is_err());
    }
}

#[test]
fn entry_exclusions_are_bounded() {
    let p = project();
    let ok = exclusions(&p);
    assert_eq!(ok.problem(), None);
    let rel = Exclusions {
        marker: "repo/.ai-memory.toml".into(),
        ..ok.clone()
    };
    assert!(rel.problem().is_some());
    let many = Exclusions {
        patterns: vec!["a".into(); crate::capture::MAX_PATTERNS + 1],
        ..ok.clone()
    };
    assert!(many.problem().is_some());
}
