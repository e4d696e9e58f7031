//! The detached drainer the hook starts (`--data-dir DIR drain
//! --background`): deliver through [`make_sink`](crate::make_sink) until
//! the spool stays empty, then finish a forget that was interrupted.
//! `memhook-session` runs it for the per-event binary; `memhook-cli` runs
//! it for `memhook drain --background`.

use std::path::Path;

/// Run the background drainer for `data_dir` (as given on the command
/// line, or the default when `None`).
pub fn run_background(data_dir: Option<&Path>) -> Result<(), memhook_core::data_dir::DirError> {
    let dir = memhook_core::data_dir::resolve(data_dir)?;
    memhook_delivery::drain::run_background(&dir, crate::make_sink);
    let _ = crate::forget::finish_pending(&dir);
    Ok(())
}
