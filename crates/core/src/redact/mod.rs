//! Secret redaction and text hygiene applied to every excerpt before any cap.
//!
//! [`clean`] runs three passes, in this order:
//!
//! 1. `<private>…</private>` spans are removed (tags matched ASCII
//!    case-insensitively, nesting counted). An unclosed `<private>` removes
//!    everything up to the end of the text: a forgotten closing tag must not
//!    leak what the user meant to hide. A stray `</private>` is removed and
//!    the text around it kept.
//! 2. Terminal and display tricks are stripped: ANSI escape sequences (CSI,
//!    OSC, two-byte `ESC x`, and their 8-bit C1 forms), C0 and C1 control
//!    characters except tab, newline and carriage return, DEL, bidi overrides
//!    and isolates (U+202A–U+202E, U+2066–U+2069), the bidi marks U+200E,
//!    U+200F and U+061C, and the invisible characters U+200B, U+2060–U+2064,
//!    U+180E and U+FEFF. The joiners U+200C/U+200D are kept: scripts and
//!    emoji need them and they cannot reorder text.
//! 3. Secrets are replaced by `[REDACTED:<kind>]` (the kinds are listed in
//!    [`KINDS`]).
//!
//! Cost: a single byte pass over the text looks for each rule's keywords; a
//! rule's regex is compiled (once per process) and run only when one of its
//! keywords occurs. Clean text therefore costs one pass and no compilation.
//! Every pattern uses ASCII classes only (the regex crate is built without
//! Unicode tables, and Unicode classes are a compile-time trap anyway).
//!
//! Files: `hygiene` (passes 1 and 2), `rules` (the rule table, the keyword
//! prefilter, the regex rules and the prefixed-token matcher), `scan`
//! (private keys as PEM, base64 PEM and PuTTY files, `Bearer`, `Basic`,
//! URL credentials), `command` (password flags of known commands), `assign`
//! (`key = value` assignments, XML elements, `.netrc` entries, and the
//! random-value test for names that only look like a credential's).

mod assign;
mod command;
mod hygiene;
mod rules;
mod scan;
#[cfg(test)]
mod tests;

/// Whether a text holds a character [`clean`] removes (so no cleaned text
/// holds one).
pub use hygiene::holds_stripped_control;
pub use rules::warm_rule;

/// Every kind a redaction marker can name, in rule order.
pub const KINDS: &[&str] = &[
    "private_key",
    "age_secret_key",
    "aws_access_key",
    "github_token",
    "gitlab_token",
    "slack_token",
    "stripe_key",
    "anthropic_key",
    "openai_key",
    "npm_token",
    "pypi_token",
    "huggingface_token",
    "slack_webhook",
    "discord_webhook",
    "google_api_key",
    "google_oauth_token",
    "google_client_secret",
    "google_refresh_token",
    "sendgrid_key",
    "twilio_key",
    "vault_token",
    "digitalocean_token",
    "dockerhub_token",
    "atlassian_token",
    "mailgun_key",
    "linear_key",
    "doppler_token",
    "pulumi_token",
    "grafana_token",
    "sentry_token",
    "netlify_token",
    "heroku_key",
    "databricks_token",
    "figma_token",
    "postman_key",
    "shopify_token",
    "supabase_key",
    "planetscale_token",
    "tailscale_key",
    "onepassword_token",
    "openshift_token",
    "groq_key",
    "replicate_token",
    "perplexity_key",
    "xai_key",
    "alibaba_key",
    "buildkite_token",
    "dynatrace_token",
    "rubygems_key",
    "contentful_token",
    "sourcegraph_token",
    "mapbox_token",
    "braintree_token",
    "plaid_token",
    "langsmith_key",
    "notion_token",
    "flyio_token",
    "pinecone_key",
    "jfrog_token",
    "cloudflare_key",
    "easypost_key",
    "clojars_token",
    "azure_key",
    "azure_sas",
    "azure_client_secret",
    "discord_token",
    "telegram_bot_token",
    "mailchimp_key",
    "square_token",
    "newrelic_key",
    "terraform_token",
    "jwt",
    "authorization",
    "bearer",
    "url_credentials",
    "aws_secret",
    "password",
    "secret",
    "token",
    "api_key",
];

/// The marker prefix every redaction starts with.
pub const MARKER_PREFIX: &str = "[REDACTED:";

/// Remove private spans, strip control/ANSI/bidi characters, redact secrets.
///
/// The one entry point: every surface that stores text (the hook's
/// records, MCP memory writes, `memhook serve`'s ingest) calls it on that
/// text, whatever its source, before any cap. It never fails and is
/// idempotent: cleaning cleaned text changes nothing.
pub fn clean(text: &str) -> String {
    let text = hygiene::strip_private(text);
    let text = hygiene::strip_controls(&text);
    rules::redact_secrets(&text).into_owned()
}

// ---------------------------------------------------------------------------
// Helpers shared by the passes

fn starts_with_ci(hay: &[u8], needle: &[u8]) -> bool {
    hay.len() >= needle.len() && hay[..needle.len()].eq_ignore_ascii_case(needle)
}

const fn lower(b: u8) -> u8 {
    b.to_ascii_lowercase()
}

/// Builds the redacted copy of a text: the kept stretches and the markers
/// that replace secrets, in order. Every scanner uses one.
#[derive(Default)]
struct Splice {
    out: String,
    kept: usize,
}

impl Splice {
    /// Replace `text[start..end]` (at or after everything replaced so far)
    /// with the marker of `kind`.
    fn redact(&mut self, text: &str, start: usize, end: usize, kind: &str) {
        self.out.push_str(&text[self.kept..start]);
        self.out.push_str(MARKER_PREFIX);
        self.out.push_str(kind);
        self.out.push(']');
        self.kept = end;
    }

    /// The redacted text, or `None` when nothing was replaced.
    fn finish(mut self, text: &str) -> Option<String> {
        (self.kept > 0).then(|| {
            self.out.push_str(&text[self.kept..]);
            self.out
        })
    }
}
