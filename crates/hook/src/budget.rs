//! The session-start budget: the one hard deadline of the whole
//! session-start path (delivery and briefing), read once per hook call.

use std::time::Duration;

/// Hard budget of the whole session-start path (delivery + composition).
pub const DEFAULT_BUDGET: Duration = Duration::from_millis(1500);
/// Environment variable overriding [`DEFAULT_BUDGET`] in milliseconds, for
/// slow machines: an integer in [`MIN_BUDGET_MS`, `MAX_BUDGET_MS`].
pub const BUDGET_ENV: &str = "MEMHOOK_START_BUDGET_MS";
pub const MIN_BUDGET_MS: u64 = 100;
pub const MAX_BUDGET_MS: u64 = 10_000;

/// The session-start budget: [`BUDGET_ENV`] when set, else
/// [`DEFAULT_BUDGET`]. A value that is not a number, or is out of range, is
/// reported on stderr (and replaced by the default, or clamped).
pub fn start_budget() -> Duration {
    let (budget, problem) = budget_from(std::env::var(BUDGET_ENV).ok().as_deref());
    if let Some(problem) = problem {
        eprintln!("memhook: {problem}");
    }
    budget
}

/// The budget `v` asks for, and what is wrong with `v` if anything.
fn budget_from(v: Option<&str>) -> (Duration, Option<String>) {
    let Some(v) = v.map(str::trim).filter(|v| !v.is_empty()) else {
        return (DEFAULT_BUDGET, None);
    };
    match v.parse::<u64>() {
        Ok(ms) if (MIN_BUDGET_MS..=MAX_BUDGET_MS).contains(&ms) => {
            (Duration::from_millis(ms), None)
        }
        Ok(ms) => {
            let used = ms.clamp(MIN_BUDGET_MS, MAX_BUDGET_MS);
            let problem = format!(
                "{BUDGET_ENV}={ms} is outside {MIN_BUDGET_MS}..={MAX_BUDGET_MS} \
                 milliseconds; using {used}"
            );
            (Duration::from_millis(used), Some(problem))
        }
        Err(_) => {
            let problem = format!(
                "{BUDGET_ENV} is not a whole number of milliseconds \
                 ({MIN_BUDGET_MS}..={MAX_BUDGET_MS}); using the default {}",
                DEFAULT_BUDGET.as_millis()
            );
            (DEFAULT_BUDGET, Some(problem))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_override_is_checked_at_its_edges() {
        let ms = |v: &str| budget_from(Some(v));
        let ok = |n: u64| (Duration::from_millis(n), None);
        assert_eq!(budget_from(None), (DEFAULT_BUDGET, None));
        assert_eq!(ms("  "), (DEFAULT_BUDGET, None));
        assert_eq!(ms(" 2500 "), ok(2500));
        assert_eq!(ms("100"), ok(MIN_BUDGET_MS));
        assert_eq!(ms("10000"), ok(MAX_BUDGET_MS));
        // Out of range: clamped, and said so.
        let (d, p) = ms("99");
        assert_eq!(d, Duration::from_millis(MIN_BUDGET_MS));
        assert!(p
            .unwrap()
            .contains("MEMHOOK_START_BUDGET_MS=99 is outside 100..=10000"));
        let (d, p) = ms("5");
        assert_eq!(d, Duration::from_millis(MIN_BUDGET_MS));
        assert!(p.is_some());
        let (d, p) = ms("10001");
        assert_eq!(d, Duration::from_millis(MAX_BUDGET_MS));
        assert!(p.is_some());
        // Not a number: the default, and said so.
        for bad in ["abc", "-5", "1.5", "1500ms"] {
            let (d, p) = ms(bad);
            assert_eq!(d, DEFAULT_BUDGET, "{bad}");
            assert!(p.unwrap().contains("not a whole number"), "{bad}");
        }
    }
}
