//! C's `log`, for SQLite, without `libm`.
//!
//! SQLite's FTS5 `bm25()` is the only caller of C's `log` in memhook's
//! binaries. glibc keeps `log` in `libm.so.6`, so that one call made every
//! process that links the store load a second library at start, whose
//! pages then count in its memory (docs/benchmarks.md, "A third binary for
//! session start"). With this definition in the binary the static linker
//! resolves SQLite's reference here, and `--as-needed` leaves `libm.so.6`
//! out. Linux with glibc only: elsewhere the C library's `log` is part of
//! what every process loads anyway.

/// `log(x)` as C defines it: the natural logarithm, NaN for NaN and
/// negative `x`, −∞ for ±0.
#[no_mangle]
pub extern "C" fn log(x: f64) -> f64 {
    memhook_core::mathlog::ln(x)
}

#[cfg(test)]
mod tests {
    extern "C" {
        // SQLite's view of the function: the symbol this binary resolves.
        #[link_name = "log"]
        fn c_log(x: f64) -> f64;
    }

    #[test]
    fn the_symbol_sqlite_calls_is_this_one() {
        // bm25's idf for 1 hit among 3 rows: ln(2.5 / 1.5).
        // SAFETY: a pure function of a double.
        let got = unsafe { c_log(2.5 / 1.5) };
        assert_eq!(
            got.to_bits(),
            memhook_core::mathlog::ln(2.5 / 1.5).to_bits()
        );
        assert!(unsafe { c_log(-1.0) }.is_nan());
    }
}
