//! Build script: how the Linux binary is linked, for a cheaper process start.
//!
//! On `*-linux-gnu`, Rust's std asks for `libgcc_s.so.1` for unwinding.
//! Loading it costs every process about 0.1–0.2 ms before `main`: one more
//! library to map and relocate, and its constructor probes the CPU with 12
//! `CPUID` instructions, each a VM exit under a hypervisor
//! (docs/benchmarks.md, "The unwinder, the store's plans and hot code
//! first"). The hook is started twice per tool
//! call, so memhook links GCC's static unwinder (`libgcc_eh.a`, the one the
//! `+crt-static` build already uses) into the binary instead, and the
//! linker, which only keeps libraries that resolve something
//! (`--as-needed`), leaves `libgcc_s` out.
//!
//! Whole-archive, so the unwinder's symbols are defined before std's
//! `-lgcc_s` is reached in every profile, not only when LTO happens to put
//! all code first; the test build then runs the same unwinder as the
//! release build. A toolchain without `libgcc_eh.a` (clang-only, musl,
//! another OS) keeps the default, which is correct and 0.1 ms slower.
//!
//! This is memhook-hook's build script because a `rustc-link-lib` reaches
//! every binary that links this library (both `memhook` and `memhook-cli`),
//! ahead of std's own `-lgcc_s`, which is what lets `--as-needed` drop it.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    let wanted = var("CARGO_CFG_TARGET_OS") == "linux"
        && var("CARGO_CFG_TARGET_ENV") == "gnu"
        && !var("CARGO_CFG_TARGET_FEATURE")
            .split(',')
            .any(|f| f == "crt-static");
    if !wanted {
        return;
    }
    let Some(dir) = libgcc_eh_dir() else {
        println!(
            "cargo:warning=libgcc_eh.a not found (`cc -print-file-name=libgcc_eh.a`); \
             memhook links libgcc_s.so dynamically, which costs each hook call about 0.1 ms"
        );
        return;
    };
    println!("cargo:rustc-link-search=native={}", dir.display());
    println!("cargo:rustc-link-lib=static:+whole-archive,-bundle=gcc_eh");
}

/// The directory of the C compiler's `libgcc_eh.a`, if it has one.
fn libgcc_eh_dir() -> Option<PathBuf> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(cc)
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .ok()?;
    let path = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    // Without the file, the compiler echoes the bare name back.
    (out.status.success() && path.is_absolute() && path.is_file())
        .then(|| path.parent().map(PathBuf::from))
        .flatten()
}
