//! Wall-clock time as Unix milliseconds and RFC 3339 text, without a date crate.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// `ms` since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_ms(ms: u64) -> String {
    let secs = ms / 1000;
    let millis = ms % 1000;
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// `ms` since the epoch in the local time zone, for people:
/// `YYYY-MM-DD HH:MM:SS ±HH:MM` (the offset from UTC in force then, as the
/// `TZ` environment variable or the system's zone says). Stored data, JSON
/// and the briefing stay in UTC ([`rfc3339_ms`]).
pub fn local_text(ms: u64) -> String {
    with_offset(ms, local_offset_secs(ms))
}

/// `ms` shifted by `offset_secs` east of UTC, as [`local_text`] writes it.
pub fn with_offset(ms: u64, offset_secs: i64) -> String {
    let secs = (ms / 1000) as i64 + offset_secs;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let sign = if offset_secs < 0 { '-' } else { '+' };
    let off = offset_secs.unsigned_abs() / 60;
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} {sign}{:02}:{:02}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60,
        off / 60,
        off % 60
    )
}

/// Seconds east of UTC of the local zone at `ms` (0 when it cannot be known).
#[cfg(unix)]
fn local_offset_secs(ms: u64) -> i64 {
    let t = (ms / 1000) as libc::time_t;
    // SAFETY: localtime_r writes only into `tm`, which lives on this stack.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    let ok = unsafe { !libc::localtime_r(&t, &mut tm).is_null() };
    if ok {
        tm.tm_gmtoff as i64
    } else {
        0
    }
}

#[cfg(not(unix))]
fn local_offset_secs(_ms: u64) -> i64 {
    0
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
/// Howard Hinnant's public-domain algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// `YYYY-MM-DD` (midnight UTC) or `YYYY-MM-DDTHH:MM[:SS[.fff]]Z` as Unix
/// milliseconds. `None` for anything else (other offsets included: say UTC).
pub fn parse_utc_ms(text: &str) -> Option<u64> {
    let t = text.trim();
    let num = |s: &str| -> Option<u32> {
        (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .then(|| s.parse().ok())
            .flatten()
    };
    let (date, time) = match t.split_once(['T', 't', ' ']) {
        Some((d, rest)) => (d, Some(rest.strip_suffix(['Z', 'z'])?)),
        None => (t, None),
    };
    let mut it = date.split('-');
    let (y, m, d) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() || y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return None;
    }
    let (y, m, d) = (num(y)? as i64, num(m)?, num(d)?);
    if !(1..=12).contains(&m) || d == 0 || d > days_in_month(y, m) || y < 1970 {
        return None;
    }
    let mut ms = days_from_civil(y, m, d) as u64 * 86_400_000;
    if let Some(time) = time {
        let (hms, frac) = match time.split_once('.') {
            Some((a, f)) if (1..=3).contains(&f.len()) => {
                (a, num(f)? * 10u32.pow(3 - f.len() as u32))
            }
            Some(_) => return None,
            None => (time, 0),
        };
        let mut parts = hms.split(':');
        let h = num(parts.next()?)?;
        let mi = num(parts.next()?)?;
        let s = parts.next().map_or(Some(0), num)?;
        if parts.next().is_some() || h > 23 || mi > 59 || s > 59 {
            return None;
        }
        ms += (h as u64 * 3600 + mi as u64 * 60 + s as u64) * 1000 + frac as u64;
    }
    Some(ms)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// A proleptic Gregorian date to days since 1970-01-01 (the inverse of
/// [`civil_from_days`], same public-domain algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_dates_and_utc_times_and_refuses_the_rest() {
        assert_eq!(parse_utc_ms("1970-01-01"), Some(0));
        assert_eq!(parse_utc_ms("2000-02-29"), Some(951_782_400_000));
        assert_eq!(
            parse_utc_ms("2026-11-29T15:09:15.760Z"),
            Some(1_795_964_955_760)
        );
        assert_eq!(parse_utc_ms("2026-11-29T15:09Z"), Some(1_795_964_940_000));
        for ms in [0, 951_782_400_000, 1_795_964_955_760, 4_102_444_799_999] {
            assert_eq!(parse_utc_ms(&rfc3339_ms(ms)), Some(ms));
        }
        for bad in [
            "",
            "2026-02-30",
            "2025-02-29",
            "2026-13-01",
            "26-11-29",
            "2026-11-29T25:00Z",
            "2026-11-29T10:00+02:00",
            "2026-11-29T10:00",
            "yesterday",
            "2026-1-02",
            "1969-12-31",
        ] {
            assert_eq!(parse_utc_ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn local_text_carries_its_offset() {
        assert_eq!(
            with_offset(1_795_964_955_760, 0),
            "2026-11-29 15:09:15 +00:00"
        );
        assert_eq!(
            with_offset(1_795_964_955_760, 5 * 3600 + 1800),
            "2026-11-29 20:39:15 +05:30"
        );
        assert_eq!(with_offset(0, -3600), "1969-12-31 23:00:00 -01:00");
    }

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339_ms(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(rfc3339_ms(1_795_964_955_760), "2026-11-29T15:09:15.760Z");
    }
}
