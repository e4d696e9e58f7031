//! Temp homes: the HOME a test's `memhook` runs in, and its data dir.

use std::path::{Path, PathBuf};

/// The data dir of `home` ([`memhook`](super::binaries::memhook) points
/// `AI_MEMORY_DATA_DIR` there).
pub fn data_dir(home: &Path) -> PathBuf {
    home.join(".memhook-data")
}
