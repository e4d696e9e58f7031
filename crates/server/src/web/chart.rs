//! A project's activity chart: sessions and failures per day over the last
//! [`CHART_DAYS`] days of its activity, drawn here as inline SVG (no
//! script: the page's Content-Security-Policy allows none inline, and the
//! chart needs none). Colours come from the stylesheet's classes; every
//! number and date goes through [`escape`] like any other text.

use super::html::escape;
use memhook_core::term::count;
use memhook_store::sqlite::SessionRow;

/// Days the chart spans, ending on the day of the project's latest activity.
pub const CHART_DAYS: u64 = 30;
const DAY_MS: u64 = 86_400_000;
const WIDTH: u64 = 640;
const HEIGHT: u64 = 150;
/// Room for the y-axis labels (left) and the dates (bottom).
const LEFT: u64 = 34;
const BOTTOM: u64 = 22;
const TOP: u64 = 8;

/// Sessions started and failures of those sessions, per day.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Day {
    pub day: u64,
    pub sessions: u64,
    pub failures: u64,
}

/// The [`CHART_DAYS`] days ending on the day of the latest activity of
/// `sessions`, oldest first; a session counts on the day it started.
pub fn days(sessions: &[SessionRow]) -> Vec<Day> {
    let Some(end) = sessions
        .iter()
        .map(|s| s.last_ms.max(s.first_ms) / DAY_MS)
        .max()
    else {
        return Vec::new();
    };
    let start = end.saturating_sub(CHART_DAYS - 1);
    let mut out: Vec<Day> = (start..=end)
        .map(|day| Day {
            day,
            ..Day::default()
        })
        .collect();
    for s in sessions {
        let d = s.first_ms / DAY_MS;
        if d >= start && d <= end {
            let slot = &mut out[(d - start) as usize];
            slot.sessions += 1;
            slot.failures += s.failures;
        }
    }
    out
}

fn date(day: u64) -> String {
    memhook_core::timefmt::rfc3339_ms(day * DAY_MS)[..10].to_string()
}

/// The chart of `sessions` as an `<svg>` element (empty when there are none).
pub fn svg(sessions: &[SessionRow]) -> String {
    let days = days(sessions);
    let (Some(first), Some(last)) = (days.first(), days.last()) else {
        return String::new();
    };
    let top = days
        .iter()
        .map(|d| d.sessions.max(d.failures))
        .max()
        .unwrap_or(0)
        .max(1);
    let total_s: u64 = days.iter().map(|d| d.sessions).sum();
    let total_f: u64 = days.iter().map(|d| d.failures).sum();
    let label = format!(
        "{} and {} from {} to {} (UTC days)",
        count(total_s, "session"),
        count(total_f, "failure"),
        date(first.day),
        date(last.day)
    );
    let plot_h = HEIGHT - TOP - BOTTOM;
    let slot = (WIDTH - LEFT) / days.len() as u64;
    let bar = (slot.saturating_sub(3) / 2).max(1);
    let y = |n: u64| TOP + plot_h - n * plot_h / top;
    let mut out = format!(
        "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" \
         width=\"{WIDTH}\" height=\"{HEIGHT}\" role=\"img\" aria-label=\"{}\">\
         <title>{}</title>\n",
        escape(&label),
        escape(&label)
    );
    // Axis: the top value and zero, the base line.
    out.push_str(&format!(
        "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{base}\" x2=\"{WIDTH}\" y2=\"{base}\"/>\
         <line class=\"grid\" x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{WIDTH}\" y2=\"{TOP}\"/>\
         <text class=\"tick\" x=\"{lx}\" y=\"{ty}\" text-anchor=\"end\">{}</text>\
         <text class=\"tick\" x=\"{lx}\" y=\"{base}\" text-anchor=\"end\">0</text>\n",
        escape(&top.to_string()),
        base = TOP + plot_h,
        lx = LEFT - 4,
        ty = TOP + 8,
    ));
    for (i, d) in days.iter().enumerate() {
        let x = LEFT + i as u64 * slot + 1;
        let tip = format!(
            "{}: {}, {}",
            date(d.day),
            count(d.sessions, "session"),
            count(d.failures, "failure")
        );
        out.push_str(&format!("<g class=\"day\"><title>{}</title>", escape(&tip)));
        // An invisible full-height target, so every day has a tooltip.
        out.push_str(&format!(
            "<rect class=\"hit\" x=\"{x}\" y=\"{TOP}\" width=\"{slot}\" height=\"{plot_h}\"/>"
        ));
        for (n, class, dx) in [(d.sessions, "s", 0), (d.failures, "f", bar + 1)] {
            if n > 0 {
                out.push_str(&format!(
                    "<rect class=\"bar {class}\" x=\"{}\" y=\"{}\" width=\"{bar}\" height=\"{}\" \
                     data-n=\"{}\"/>",
                    x + dx,
                    y(n),
                    TOP + plot_h - y(n),
                    escape(&n.to_string())
                ));
            }
        }
        out.push_str("</g>\n");
    }
    for (i, anchor) in [(0, "start"), (days.len() - 1, "end")] {
        let x = if anchor == "start" { LEFT } else { WIDTH };
        out.push_str(&format!(
            "<text class=\"tick\" x=\"{x}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>\n",
            HEIGHT - 6,
            escape(&date(days[i].day))
        ));
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(first_day: u64, failures: u64) -> SessionRow {
        SessionRow {
            row: 1,
            workspace: "w".into(),
            project: "p".into(),
            agent: "codex".into(),
            session_id: "x".into(),
            first_ms: first_day * DAY_MS + 5,
            last_ms: first_day * DAY_MS + 10,
            events: 3,
            prompts: 1,
            failures,
            families: Vec::new(),
            first_prompt: None,
        }
    }

    #[test]
    fn days_count_sessions_and_failures_in_the_last_thirty_days() {
        let sessions = [s(100, 2), s(100, 0), s(95, 1), s(60, 4)];
        let d = days(&sessions);
        assert_eq!(d.len() as u64, CHART_DAYS);
        assert_eq!(d.first().unwrap().day, 71);
        let last = d.last().unwrap();
        assert_eq!((last.day, last.sessions, last.failures), (100, 2, 2));
        assert_eq!((d[24].day, d[24].sessions, d[24].failures), (95, 1, 1));
        // Day 60 is outside the window.
        assert_eq!(d.iter().map(|x| x.sessions).sum::<u64>(), 3);
        assert!(days(&[]).is_empty());
    }

    #[test]
    fn the_svg_has_one_bar_per_count_and_no_script_or_style() {
        let svg = svg(&[s(100, 2), s(100, 0), s(95, 1)]);
        assert!(svg.starts_with("<svg class=\"chart\""), "{svg}");
        assert_eq!(svg.matches("class=\"bar s\"").count(), 2, "{svg}");
        assert_eq!(svg.matches("class=\"bar f\"").count(), 2, "{svg}");
        assert!(
            svg.contains("<title>1970-04-11: 2 sessions, 2 failures</title>"),
            "{svg}"
        );
        assert!(svg.contains("3 sessions and 3 failures from 1970-03-13 to 1970-04-11"));
        assert!(!svg.contains("<script") && !svg.contains("style=") && !svg.contains(" on"));
        assert_eq!(super::svg(&[]), "");
    }
}
