//! Logarithms without `libm`.
//!
//! On Linux with glibc, one call to `f64::ln` or `f64::log2` anywhere in a
//! binary makes it load `libm.so.6` at every start: a second library to
//! open, map and relocate, whose pages then count in the process's memory.
//! memhook's only uses of libm were these logarithms (the redaction's
//! entropy, the search's idf, the meaning's word weights, and SQLite's
//! `bm25`), so they are computed here instead (docs/benchmarks.md, "One
//! policy, an arena, no libm…" and "A third binary for session start").

/// Base-2 logarithm of `x`, to within a few units in the last place, with
/// IEEE special cases: NaN for NaN and negative `x`, −∞ for ±0, +∞ for +∞.
/// Exact at powers of two (the redaction's entropy edge relies on that).
pub fn log2(x: f64) -> f64 {
    if x.is_nan() || x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    if x.is_infinite() {
        return x;
    }
    // A subnormal is scaled into the normal range first.
    let (x, shift) = if x.is_normal() {
        (x, 0)
    } else {
        (x * f64::from_bits(0x4350_0000_0000_0000), -54) // 2^54
    };
    const MANTISSA: u64 = (1 << 52) - 1;
    const ONE_EXPONENT: u64 = 0x3ff << 52;
    let bits = x.to_bits();
    let mut e = ((bits >> 52) & 0x7ff) as i64 - 1023 + shift;
    // x = m · 2^e with m in [1, 2), then moved to [√½, √2).
    let mut m = f64::from_bits((bits & MANTISSA) | ONE_EXPONENT);
    if m > std::f64::consts::SQRT_2 {
        m /= 2.0;
        e += 1;
    }
    // ln m = 2 atanh t = 2 (t + t³/3 + t⁵/5 + …), t = (m−1)/(m+1), |t| ≤ 0.172:
    // the 15th term is below 2⁻⁵³ of the first.
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let (mut term, mut sum) = (t, 0.0);
    for k in 0..15 {
        sum += term / f64::from(2 * k + 1);
        term *= t2;
    }
    e as f64 + 2.0 * sum * std::f64::consts::LOG2_E
}

/// Natural logarithm of `x` (see [`log2`] for accuracy and special cases).
pub fn ln(x: f64) -> f64 {
    log2(x) * std::f64::consts::LN_2
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::f64::consts::{LN_10, LN_2};

    /// ln of these numbers, from Python's `math.log` (correctly rounded to
    /// the last place for these inputs).
    const LN: [(f64, f64); 12] = [
        (2.0, LN_2),
        (10.0, LN_10),
        (0.5, -LN_2),
        (1.5, 0.4054651081081644),
        (3.0, 1.0986122886681098),
        (7.25, 1.9810014688665833),
        (1e-300, -690.7755278982137),
        (1e300, 690.7755278982137),
        (123456.789, 11.723646487185881),
        (0.001, -6.907755278982137),
        (1.0000001, 9.999999505838704e-08),
        (5e-324, -744.4400719213812),
    ];

    #[test]
    fn ln_agrees_with_correctly_rounded_values() {
        for (x, want) in LN {
            let got = ln(x);
            assert!(
                (got - want).abs() <= 4.0 * f64::EPSILON * want.abs().max(1e-7),
                "ln({x}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn powers_of_two_are_exact_and_special_values_follow_ieee() {
        for e in -1074i32..1024 {
            let x = if e >= -1022 {
                f64::from_bits(((e + 1023) as u64) << 52)
            } else {
                f64::from_bits(1u64 << (e + 1074)) // subnormal
            };
            assert_eq!(log2(x), f64::from(e), "2^{e}");
        }
        assert!(log2(f64::NAN).is_nan());
        assert!(log2(-1.0).is_nan());
        assert_eq!(log2(0.0), f64::NEG_INFINITY);
        assert_eq!(log2(-0.0), f64::NEG_INFINITY);
        assert_eq!(log2(f64::INFINITY), f64::INFINITY);
        assert_eq!(ln(1.0), 0.0);
    }

    #[test]
    fn log2_is_monotonic_across_the_range_it_is_fed() {
        let mut prev = f64::NEG_INFINITY;
        let mut x = 1e-12;
        while x < 1e12 {
            let y = log2(x);
            assert!(y >= prev, "log2 fell at {x}");
            prev = y;
            x *= 1.0 + 1.0 / 1024.0;
        }
    }
}
