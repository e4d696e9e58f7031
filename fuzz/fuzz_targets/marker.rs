//! The `.ai-memory.toml` parser: any bytes give a marker (valid, or invalid
//! with a reason), never a panic; an invalid scope never leaves an active
//! capture policy behind (fail closed).
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use memhook_core::scope::CaptureConfig;

fuzz_target!(|data: &[u8]| {
    let m = memhook_core::scope::marker::parse(Path::new("/w/p/.ai-memory.toml"), data, true);
    if m.declared.is_err() {
        assert!(matches!(m.capture, CaptureConfig::Invalid { .. }));
    }
});
