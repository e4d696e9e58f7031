//! The web view in a real browser: headless Chromium through chromedriver
//! (WebDriver). Real hook events from the fixtures, a real `memhook serve`,
//! the link `memhook ui --no-open` prints. The browser logs in, opens the
//! project (goals and endings, the activity chart drawn as SVG, the next
//! briefing's size), the preview of the next briefing (checked against the
//! page's own text), a working session read like a log, searches for a
//! word of the stored prompt, opens the session,
//! edits a memory document (meeting one compare-and-swap conflict), and
//! forgets the session after confirming; every page's text is checked,
//! stored `<script>` / `<img onerror>` payloads never run or become
//! elements, and a screenshot of each page is written to the test's temp
//! dir (and to `$MEMHOOK_SCREENSHOT_DIR` when set).

use std::path::{Path, PathBuf};

use serde_json::json;

use super::pages::{seed_log, unescape, GOAL};
use super::webdriver::Browser;
use super::{call, seed, ui_link, IMG_PAYLOAD, PROJECT, SCRIPT_PAYLOAD, SEARCH_WORD, SESSION};

/// The id of the session [`seed_log`] writes (Claude Code's own, from the fixtures).
const LOG_SESSION: &str = "4c3ac1bf-95d6-487f-a6bc-140cd0de6f2b";
use crate::support::serve::Serve;

/// Where screenshots go: the temp dir, and a copy in the directory the
/// environment names (for docs/ui/).
struct Shots {
    dir: PathBuf,
    copy: Option<PathBuf>,
    n: usize,
}

impl Shots {
    fn take(&mut self, b: &Browser, name: &str) {
        self.n += 1;
        let file = format!("{:02}-{name}.png", self.n);
        let path = self.dir.join(&file);
        b.screenshot(&path);
        if let Some(c) = &self.copy {
            std::fs::copy(&path, c.join(&file)).unwrap();
        }
    }
}

/// The page holds no element a payload could have injected, and no dialog
/// opened.
fn inert(b: &Browser, page: &str) {
    assert_eq!(b.dialog(), None, "{page}: a dialog opened");
    let found = b.eval(
        "return [document.querySelectorAll('#injected').length, \
                 document.querySelectorAll('script:not([src])').length, \
                 document.querySelectorAll('img').length, \
                 document.querySelectorAll('[onerror]').length];",
    );
    assert_eq!(found, json!([0, 0, 0, 0]), "{page}: injected elements");
}

fn api_write(s: &Serve, bearer: &str, content: &str, version: &str) -> String {
    let got = call(
        "POST",
        &format!("{}/api/memory/{PROJECT}", s.url()),
        &[
            ("Authorization", bearer),
            ("Content-Type", "application/json"),
        ],
        Some(&json!({"path": "/MEMORY.md", "content": content, "if_version": version}).to_string()),
    );
    assert_eq!(got.code, 200, "{}", got.body);
    got.json()["version"].as_str().unwrap().to_string()
}

#[test]
fn a_browser_logs_in_searches_edits_and_forgets() {
    let Some((chromium, chromedriver)) =
        crate::support::deps::browser("a_browser_logs_in_searches_edits_and_forgets")
    else {
        return;
    };
    let home = tempfile::tempdir().unwrap();
    seed(home.path(), "");
    // A second session as an agent works: commands, a failure, an edit, its final message.
    seed_log(home.path(), LOG_SESSION);
    let s = Serve::start(home.path(), None);
    let bearer = format!(
        "Bearer {}",
        std::fs::read_to_string(home.path().join(".memhook-data/auth-token"))
            .unwrap()
            .trim()
    );
    // Two memory documents; the index must come first on the project page.
    let got = call(
        "POST",
        &format!("{}/api/memory/{PROJECT}", s.url()),
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
        ],
        Some(
            &json!({"path": "/a-notes.md", "content": "notes\n", "if_version": "new"}).to_string(),
        ),
    );
    assert_eq!(got.code, 200, "{}", got.body);
    api_write(&s, &bearer, "# Index\n- parser notes\n", "new");

    let profile = home.path().join("chromium-profile");
    let mut shots = Shots {
        dir: home.path().join("screenshots"),
        copy: std::env::var_os("MEMHOOK_SCREENSHOT_DIR").map(PathBuf::from),
        n: 0,
    };
    std::fs::create_dir_all(&shots.dir).unwrap();
    let b = Browser::start(&chromium, &chromedriver, &profile);

    // Not logged in: the explanation page.
    b.goto(&format!("{}/", s.url()));
    assert!(
        b.page_text().contains("Log in with memhook ui"),
        "{}",
        b.page_text()
    );
    shots.take(&b, "login-needed");

    // Log in with the code: the projects page.
    b.goto(&ui_link(home.path(), &s));
    // The login sent the browser to its session's prefix (`/s/KEY/`).
    let base = b.url().trim_end_matches('/').to_string();
    assert!(base.starts_with(&format!("{}/s/", s.url())), "{base}");
    let text = b.page_text();
    assert!(
        text.contains("Projects") && text.contains("default / demo"),
        "{text}"
    );
    inert(&b, "projects");
    shots.take(&b, "projects");

    // The project: its memory documents (index first) and its session.
    b.click("a[href$='/p/default/demo']");
    let text = b.page_text();
    assert!(
        text.contains("Memory documents") && text.contains("Sessions"),
        "{text}"
    );
    assert!(text.contains("claude-code"), "{text}");
    assert!(
        text.contains(SCRIPT_PAYLOAD),
        "the prompt shows as text: {text}"
    );
    let docs = b.find_all("ul.docs li a");
    let names: Vec<String> = docs.iter().map(|d| b.text_of(d)).collect();
    assert_eq!(names, ["/MEMORY.md", "/a-notes.md"]);
    // Each session's goal and how it ended.
    assert!(
        text.contains(GOAL) && text.contains("“All done.”"),
        "{text}"
    );
    assert!(text.contains("is this project's memory index"), "{text}");
    // The chart is drawn: two sessions today, one failure.
    let chart = b.eval(
        "var s = document.querySelector('svg.chart'); \
         return s ? [s.getBoundingClientRect().width > 300, \
                     s.querySelectorAll('rect.bar.s').length, \
                     s.querySelectorAll('rect.bar.f').length, \
                     document.querySelector('rect.bar.s').getAttribute('data-n')] : null;",
    );
    assert_eq!(chart, json!([true, 1, 1, "2"]), "the chart");
    let size = b.text_of(&b.find("code.size"));
    assert!(
        size.starts_with("memhook briefing for default/demo: "),
        "{size}"
    );
    inert(&b, "project");
    shots.take(&b, "project");

    // The preview of the next session's briefing.
    b.click("a.preview");
    let text = b.page_text();
    assert!(text.contains("The next session's briefing"), "{text}");
    let shown = b.text_of(&b.find("pre.briefing"));
    assert!(shown.starts_with(&size), "{shown}");
    assert!(shown.contains(GOAL), "{shown}");
    let served = call(
        "GET",
        &format!("{}/p/{PROJECT}/briefing", s.url()),
        &[("Authorization", &bearer)],
        None,
    );
    let html = served.body;
    let start = html.find("<pre class=\"briefing\">").unwrap() + "<pre class=\"briefing\">".len();
    let end = start + html[start..].find("</pre>").unwrap();
    assert_eq!(unescape(&html[start..end]).trim_end(), shown.trim_end());
    inert(&b, "briefing");
    shots.take(&b, "briefing");

    // The working session, read like a log.
    b.goto(&format!("{base}/p/{PROJECT}"));
    b.click(&format!("a[title='{LOG_SESSION}']"));
    assert!(
        b.url().ends_with(&format!("/p/{PROJECT}/s/{LOG_SESSION}")),
        "{}",
        b.url()
    );
    let text = b.page_text();
    for want in [
        "$ ls -la",
        "→ ok",
        "$ echo failing >&2; exit 1",
        "→ exit 1",
        "src/app.py",
        "All done.",
    ] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
    let steps = b.find_all("ol.log > li");
    assert_eq!(steps.len(), 5, "calls folded into their results");
    let font = b.eval("return getComputedStyle(document.querySelector('ol.log')).fontFamily;");
    assert!(font.as_str().unwrap_or("").contains("monospace"), "{font}");
    let title = b.eval("return document.querySelector('h1 code.id').title;");
    assert_eq!(title, LOG_SESSION);
    inert(&b, "log");
    shots.take(&b, "session-log");
    // Clicking the short id copies the whole id (the clipboard is watched:
    // a headless browser has none of its own).
    b.eval(
        "window.__copied = null; \
         Object.defineProperty(navigator, 'clipboard', {value: {writeText: function (t) { \
           window.__copied = t; return Promise.resolve(); }}, configurable: true}); \
         return null;",
    );
    b.click_in_place("h1 code.id");
    assert_eq!(b.eval("return window.__copied;"), LOG_SESSION);

    // Search this project for a word of the prompt.
    b.goto(&format!("{base}/p/{PROJECT}"));
    b.type_into("form.search-project input[name=q]", SEARCH_WORD);
    b.click("form.search-project button");
    let text = b.page_text();
    assert!(text.contains("1 results"), "{text}");
    let marks = b.find_all("ol.hits mark");
    assert_eq!(marks.len(), 1);
    assert_eq!(b.text_of(&marks[0]), SEARCH_WORD);
    inert(&b, "search");
    shots.take(&b, "search");

    // The hit opens its session.
    b.click("ol.hits a");
    assert!(
        b.url().contains(&format!("/p/{PROJECT}/s/{SESSION}#r-")),
        "{}",
        b.url()
    );
    let session_url = b.url().split('#').next().unwrap().to_string();
    let text = b.page_text();
    assert!(
        text.contains(&format!("Session {}", &SESSION[..8])),
        "{text}"
    );
    for want in ["prompt", "Bash", SCRIPT_PAYLOAD, IMG_PAYLOAD] {
        assert!(text.contains(want), "{want:?} in {text}");
    }
    inert(&b, "session");
    shots.take(&b, "session");

    // Edit MEMORY.md; an agent writes it meanwhile: a conflict, both shown.
    b.goto(&format!("{base}/p/{PROJECT}"));
    b.click("ul.docs a");
    let text = b.page_text();
    assert!(
        text.contains("/MEMORY.md") && text.contains("- parser notes"),
        "{text}"
    );
    shots.take(&b, "memory");
    let read = call(
        "GET",
        &format!("{}/api/memory/{PROJECT}", s.url()),
        &[("Authorization", &bearer)],
        None,
    )
    .json();
    b.type_into("form.edit textarea", "# Index\n- edited in the browser\n");
    api_write(
        &s,
        &bearer,
        "# Index\n- written by an agent meanwhile\n",
        read["version"].as_str().unwrap(),
    );
    b.click("form.edit button");
    let text = b.page_text();
    assert!(text.contains("changed meanwhile"), "{text}");
    assert!(
        text.contains("Their version") && text.contains("Your version"),
        "{text}"
    );
    assert!(text.contains("- written by an agent meanwhile"), "{text}");
    let mine = b.eval("return document.querySelector('form.edit textarea').value;");
    assert_eq!(mine, "# Index\n- edited in the browser\n");
    inert(&b, "conflict");
    shots.take(&b, "memory-conflict");
    // Saving again, now over their version, keeps the browser's text.
    b.click("form.edit button");
    let text = b.page_text();
    assert!(
        text.contains("Saved.") && text.contains("- edited in the browser"),
        "{text}"
    );
    assert!(!text.contains("written by an agent"), "{text}");
    shots.take(&b, "memory-saved");
    let read = call(
        "GET",
        &format!("{}/api/memory/{PROJECT}", s.url()),
        &[("Authorization", &bearer)],
        None,
    )
    .json();
    assert_eq!(read["content"], "# Index\n- edited in the browser\n");

    // Forget the session, after confirming.
    b.goto(&session_url);
    b.click("p.danger a");
    let text = b.page_text();
    assert!(text.contains("Forget for good?"), "{text}");
    assert!(text.contains("This forgets 3 stored records"), "{text}");
    shots.take(&b, "forget-confirm");
    b.click("form.confirm button");
    let text = b.page_text();
    assert!(text.contains("Forgot 3 stored records"), "{text}");
    shots.take(&b, "forgotten");
    b.goto(&session_url);
    assert!(b.page_text().contains("Not found"), "{}", b.page_text());
    let got = call(
        "GET",
        &format!("{}/api/search?q={SEARCH_WORD}", s.url()),
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(got.json()["results"], json!([]));
    // Log out from the header: the session ends, its pages ask for a login.
    b.goto(&format!("{base}/"));
    b.click("form.logout button");
    assert!(b.page_text().contains("Logged out"), "{}", b.page_text());
    b.goto(&format!("{base}/"));
    assert!(
        b.page_text().contains("Log in with memhook ui"),
        "{}",
        b.page_text()
    );
    let shots_written = std::fs::read_dir(&shots.dir).unwrap().count();
    assert_eq!(shots_written, 12);
    eprintln!("screenshots: {}", shots.dir.display());
    drop(b);
    let _ = Path::new(&shots.dir);
}
