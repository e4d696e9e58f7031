//! HTML building blocks: the one escape function every stored string goes
//! through, the page frame, and small helpers (times, links, highlights).
//! Pages never contain inline scripts or styles: the Content-Security-Policy
//! allows only `/assets/…` from this server.

use memhook_store::sqlite::{HIT_END, HIT_START};

/// `text` safe inside HTML text and inside a double- or single-quoted
/// attribute value: `& < > " '` become entities, control characters other
/// than tab and newline and bidi controls (`is_bidi_control`) become U+FFFD. Every string from the store, the
/// memory documents or the request goes through here before it is shown.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() || is_bidi_control(c) => out.push('\u{FFFD}'),
            c => out.push(c),
        }
    }
    out
}

/// Characters that reorder the text around them (bidi embeddings,
/// overrides, isolates and marks): stored text could use them to show a
/// command or a path other than it is (Trojan Source).
pub fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' | '\u{061C}')
}

/// `text` percent-encoded for a URL query value or path segment.
pub fn url(text: &str) -> String {
    memhook_delivery::wire::encode(text)
}

/// A search snippet: every piece escaped, the hits between
/// [`HIT_START`] and [`HIT_END`] wrapped in `<mark>`.
pub fn highlight(snippet: &str) -> String {
    let mut out = String::new();
    for (i, part) in snippet.split(HIT_START).enumerate() {
        match part.split_once(HIT_END) {
            Some((hit, rest)) if i > 0 => {
                out.push_str("<mark>");
                out.push_str(&escape(hit));
                out.push_str("</mark>");
                out.push_str(&escape(&rest.replace(HIT_END, "")));
            }
            _ => out.push_str(&escape(&part.replace(HIT_END, ""))),
        }
    }
    out
}

/// A `<time>` element: UTC text (the script shows it in local time).
pub fn time(ms: u64) -> String {
    let t = memhook_core::timefmt::rfc3339_ms(ms);
    format!(
        "<time datetime=\"{t}\">{} {} UTC</time>",
        &t[..10],
        &t[11..19]
    )
}

/// A length of time in words: `45 s`, `12 min`, `3 h 5 min`.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", s / 60)
    } else {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    }
}

/// A whole page: title, navigation (with the search box), content.
pub fn page(title: &str, logged_in: bool, content: &str) -> String {
    let logout = if logged_in {
        "<form method=\"post\" action=\"/logout\" class=\"logout\">\
         <button type=\"submit\">Log out</button></form>"
    } else {
        ""
    };
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{} · memhook</title>\
         <link rel=\"stylesheet\" href=\"/assets/style.css\">\
         <script src=\"/assets/app.js\" defer></script></head>\n<body>\
         <header><a class=\"brand\" href=\"/\">memhook</a>\
         <form method=\"get\" action=\"/search\" class=\"search\">\
         <input type=\"search\" name=\"q\" placeholder=\"Search every project\" aria-label=\"Search\">\
         <button type=\"submit\">Search</button></form>{logout}</header>\n\
         <main>\n{content}\n</main></body></html>\n",
        escape(title)
    )
}

/// A hidden form field carrying the CSRF token.
pub fn csrf_field(token: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        escape(token)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_neutralises_markup_and_quotes() {
        assert_eq!(
            escape("<script>alert('x')</script>"),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"
        );
        assert_eq!(
            escape("<img src=x onerror=\"alert(1)\">"),
            "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"
        );
        assert_eq!(escape("a & b"), "a &amp; b");
        assert_eq!(escape("&amp;"), "&amp;amp;", "never double-unescaped");
        assert_eq!(escape("line\n\ttab é ✓"), "line\n\ttab é ✓");
        assert_eq!(
            escape("nul\0bell\x07esc\x1b"),
            "nul\u{FFFD}bell\u{FFFD}esc\u{FFFD}"
        );
        assert_eq!(escape(""), "");
        assert_eq!(
            escape("ls \u{202E}txt.exe\u{2066}x\u{2069}\u{200F}"),
            "ls \u{FFFD}txt.exe\u{FFFD}x\u{FFFD}\u{FFFD}"
        );
    }

    #[test]
    fn highlights_escape_every_piece() {
        let s = format!("a <b> {HIT_START}fl<i>ky{HIT_END} c {HIT_START}x{HIT_END}");
        assert_eq!(
            highlight(&s),
            "a &lt;b&gt; <mark>fl&lt;i&gt;ky</mark> c <mark>x</mark>"
        );
        // Stray or unbalanced markers in stored text never produce markup.
        let stray = format!("{HIT_END}a{HIT_START}b");
        assert_eq!(highlight(&stray), "ab");
    }

    #[test]
    fn times_and_durations() {
        assert_eq!(
            time(0),
            "<time datetime=\"1970-01-01T00:00:00.000Z\">1970-01-01 00:00:00 UTC</time>"
        );
        assert_eq!(duration(59_999), "59 s");
        assert_eq!(duration(60_000), "1 min");
        assert_eq!(duration(3_600_000 + 5 * 60_000), "1 h 5 min");
    }
}
