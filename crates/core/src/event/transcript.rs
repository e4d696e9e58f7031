//! Exit statuses an agent writes to its own transcript but not into the
//! hook's payload. Codex (0.171) sends PostToolUse for `exec_command` with
//! the command's output only; when the hook runs, the last line of its
//! rollout transcript (the payload's `transcript_path`) is the call's
//! `item_completed` event, which carries `exit_code`. Without it the
//! handoff could not say that a command failed and passed later.
//!
//! The hook must never become a reader of arbitrary files, so the path is
//! accepted only when it looks like a Codex rollout (absolute, under a
//! `sessions` directory, named `rollout-*.jsonl`), is a regular file owned
//! by this user, opened without following a final symlink or blocking on a
//! FIFO. Only its last [`TAIL_BYTES`] are read, and nothing but one integer
//! leaves this module: the exit code of the item whose id is the call id.
//! A call whose line does not fit in the tail, or any doubt, is `None`
//! (exit status unknown), never a guess.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use serde_json::Value;

/// How much of the transcript's end is read at most.
pub const TAIL_BYTES: u64 = 64 * 1024;
/// How much is read first: the call's line is usually the last, a few
/// hundred bytes.
pub const FIRST_TAIL_BYTES: u64 = 4 * 1024;

/// The exit code Codex recorded for call `call_id` in the rollout that
/// `payload.transcript_path` names.
pub fn codex_exit_code(payload: &Value, call_id: &str) -> Option<i64> {
    let path = Path::new(payload.get("transcript_path")?.as_str()?);
    if !looks_like_rollout(path) {
        return None;
    }
    let mut file = open_rollout(path)?;
    let small = read_tail(&mut file, FIRST_TAIL_BYTES)?;
    if let Some(code) = exit_code_in(&small, call_id) {
        return Some(code);
    }
    let tail = read_tail(&mut file, TAIL_BYTES)?;
    exit_code_in(&tail, call_id)
}

/// An absolute `…/sessions/…/rollout-*.jsonl` path without `..`.
fn looks_like_rollout(path: &Path) -> bool {
    use std::path::Component;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    path.is_absolute()
        && name.starts_with("rollout-")
        && name.ends_with(".jsonl")
        && !path.components().any(|c| c == Component::ParentDir)
        && path.components().any(|c| c.as_os_str() == "sessions")
}

/// The regular file at `path`, owned by this user, opened for reading
/// without following a final symlink or blocking on a FIFO.
fn open_rollout(path: &Path) -> Option<File> {
    let mut opts = std::fs::OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_NOCTTY);
    }
    let file: File = opts.open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        // SAFETY: geteuid has no preconditions and cannot fail.
        if meta.uid() != unsafe { libc::geteuid() } {
            return None;
        }
    }
    Some(file)
}

/// The last `max` bytes of `file`.
fn read_tail(file: &mut File, max: u64) -> Option<Vec<u8>> {
    let meta = file.metadata().ok()?;
    let start = meta.len().saturating_sub(max);
    file.seek(SeekFrom::Start(start)).ok()?;
    let mut buf = Vec::with_capacity((meta.len() - start) as usize);
    file.take(max).read_to_end(&mut buf).ok()?;
    Some(buf)
}

/// The `exit_code` of the newest `item_completed` event for item `call_id`
/// among the complete lines of `tail`.
fn exit_code_in(tail: &[u8], call_id: &str) -> Option<i64> {
    // A cheap filter before the parse; the parse decides (any spacing).
    let needle = format!("\"{call_id}\"");
    tail.split(|&b| b == b'\n')
        .rev()
        .filter(|line| contains(line, b"item_completed") && contains(line, needle.as_bytes()))
        .find_map(|line| {
            let v: Value = serde_json::from_slice(line).ok()?;
            let p = v.get("payload")?;
            let item = p.get("item")?;
            (p.get("type")?.as_str()? == "item_completed" && item.get("id")?.as_str()? == call_id)
                .then(|| item.get("exit_code").and_then(Value::as_i64))
                .flatten()
        })
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let mut from = 0;
    while let Some(i) = hay[from..].iter().position(|&b| b == first) {
        let at = from + i + 1;
        if hay[at..].starts_with(rest) {
            return true;
        }
        from = at;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The last lines of a real Codex 0.171.0 rollout at the moment its
    /// PostToolUse hook ran for a failing `exec_command` (trimmed).
    const ROLLOUT_TAIL: &str = r#"{"timestamp":"2026-12-04T14:43:50.400Z","ordinal":9,"type":"response_item","payload":{"type":"function_call","status":"completed","id":"fc_0","name":"exec_command","arguments":"{\"cmd\":\"echo failing >&2; exit 3\"}","call_id":"call_mock0"}}
{"timestamp":"2026-12-04T14:43:50.582Z","ordinal":11,"type":"event_msg","payload":{"type":"item_completed","thread_id":"01a24182-f011-7022-921c-904b9c017a24","turn_id":"01a24182-f030-7af2-829d-25d5ad53e144","item":{"type":"CommandExecution","id":"call_mock0","process_id":"66985","command":["/bin/bash","-lc","echo failing >&2; exit 3"],"status":"failed","aggregated_output":"failing\n","exit_code":3,"duration":{"secs":0,"nanos":9916}},"started_at_ms":1796395430581,"completed_at_ms":1796395430582}}
"#;

    fn rollout(dir: &Path, text: &str) -> std::path::PathBuf {
        let d = dir.join(".codex/sessions/2026/12/04");
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("rollout-2026-12-04T14-43-49-01a24182.jsonl");
        std::fs::write(&p, text).unwrap();
        p
    }

    #[test]
    fn the_exit_code_of_the_call_is_read_from_the_rollout() {
        let t = tempfile::tempdir().unwrap();
        let p = rollout(t.path(), ROLLOUT_TAIL);
        let payload = json!({"transcript_path": p});
        assert_eq!(codex_exit_code(&payload, "call_mock0"), Some(3));
        assert_eq!(codex_exit_code(&payload, "call_other"), None);
        assert_eq!(codex_exit_code(&json!({}), "call_mock0"), None);
    }

    #[test]
    fn only_a_rollout_file_is_read() {
        let t = tempfile::tempdir().unwrap();
        let real = rollout(t.path(), ROLLOUT_TAIL);
        // Same bytes under another name or outside `sessions`: not read.
        for name in ["notes.jsonl", "rollout-x.json"] {
            let p = real.with_file_name(name);
            std::fs::copy(&real, &p).unwrap();
            assert_eq!(
                codex_exit_code(&json!({"transcript_path": p}), "call_mock0"),
                None
            );
        }
        let outside = t.path().join("rollout-x.jsonl");
        std::fs::copy(&real, &outside).unwrap();
        assert_eq!(
            codex_exit_code(&json!({"transcript_path": outside}), "call_mock0"),
            None
        );
        let relative = "sessions/rollout-x.jsonl";
        assert_eq!(
            codex_exit_code(&json!({"transcript_path": relative}), "call_mock0"),
            None
        );
        let dotdot = real
            .parent()
            .unwrap()
            .join("../04/")
            .join(real.file_name().unwrap());
        assert_eq!(
            codex_exit_code(&json!({"transcript_path": dotdot}), "call_mock0"),
            None
        );
        #[cfg(unix)]
        {
            // A symlink named like a rollout is not followed; a FIFO does not block.
            let link = real.with_file_name("rollout-link.jsonl");
            std::os::unix::fs::symlink(&real, &link).unwrap();
            assert_eq!(
                codex_exit_code(&json!({"transcript_path": link}), "call_mock0"),
                None
            );
            let fifo = real.with_file_name("rollout-fifo.jsonl");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a valid C string; mkfifo only creates a file.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            assert_eq!(
                codex_exit_code(&json!({"transcript_path": fifo}), "call_mock0"),
                None
            );
        }
    }

    #[test]
    fn a_line_cut_by_the_tail_or_a_lookalike_gives_no_code() {
        // The id inside another item's output, or a non-completion event,
        // is not the call's completion.
        let tricky = concat!(
            r#"{"type":"event_msg","payload":{"type":"item_completed","item":{"id":"call_b","aggregated_output":"\"id\":\"call_a\"","exit_code":9}}}"#,
            "\n",
            r#"{"type":"event_msg","payload":{"type":"item_started","item":{"id":"call_a","exit_code":7}}}"#,
            "\n"
        );
        assert_eq!(exit_code_in(tricky.as_bytes(), "call_a"), None);
        assert_eq!(exit_code_in(tricky.as_bytes(), "call_b"), Some(9));
        // Spacing does not matter: the parse decides.
        let spaced = r#"{"type": "event_msg", "payload": {"type": "item_completed", "item": {"id": "call_s", "exit_code": 2}}}"#;
        assert_eq!(exit_code_in(spaced.as_bytes(), "call_s"), Some(2));
        // The tail starts inside the call's line: no guess.
        let cut = &ROLLOUT_TAIL.as_bytes()[ROLLOUT_TAIL.find("\"thread_id\"").unwrap()..];
        assert_eq!(exit_code_in(cut, "call_mock0"), None);
        // Only the last TAIL_BYTES are read.
        let t = tempfile::tempdir().unwrap();
        let padding = format!("{}\n", "x".repeat(TAIL_BYTES as usize));
        let p = rollout(t.path(), &format!("{ROLLOUT_TAIL}{padding}"));
        assert_eq!(
            codex_exit_code(&json!({"transcript_path": p}), "call_mock0"),
            None
        );
    }
}
