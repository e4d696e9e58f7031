//! `memhook hook`: the hot path.
//!
//! stdin (bounded in size and time) ─► event ─► scope ─► capture decision
//! ─► record ─► spool ─► detached drainer; stdout: the agent's envelope.
//!
//! Every path exits 0 and prints one valid envelope (an agent treats exit 2
//! as "block"). Problems go to stderr prefixed `memhook:`. A dropped event
//! leaves no trace anywhere: not in the spool, not on the network, not on
//! stderr. No async runtime and no thread pool: stdin is read with
//! `poll(2)` and a deadline on this thread.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::Value;

use memhook_core::capture::{
    self, Decision, Disposition, ExtractionState, PolicyState, ToolFamily,
};
use memhook_core::event::{self, Agent, Event, EventKind};
use memhook_core::scope::session::{ScopeFields, Session};
use memhook_core::scope::{self, CaptureConfig, Mode, Scope, ScopeInput};
use memhook_delivery::spool::{SinkTarget, Spool, SpoolEntry, SpoolError, ENTRY_VERSION};

pub mod arena;
mod args;
pub mod brief;
pub mod budget;
pub mod handover;
pub use args::{is_hook_invocation, parse_fast, HookArgs};

/// Largest payload read from stdin. Agents' payloads are a few KiB; a tool
/// response can be large, but the record keeps at most a 2,000-byte
/// excerpt of it. Past this the event is skipped with a warning (never a
/// partial record).
pub const MAX_STDIN_BYTES: usize = 8 * 1024 * 1024;
/// How long the hook waits for stdin to reach end-of-file. A writer that
/// never closes stdin costs at most this; a complete JSON object already
/// read is used without waiting for EOF.
pub const STDIN_TIMEOUT: Duration = Duration::from_millis(1500);
/// Past [`MAX_STDIN_BYTES`] the rest of stdin is read and thrown away (so
/// the agent never sees a broken pipe), up to this many bytes or the
/// deadline.
pub const MAX_DISCARD_BYTES: usize = 64 * 1024 * 1024;
/// Part of the session-start budget ([`budget::DEFAULT_BUDGET`])
/// kept back for what happens outside the briefing: process start before the
/// hook's clock starts, handing leftovers to the drainer and exit. Without
/// it a black-holed server pushed the whole run a few milliseconds past the
/// budget. Never more than a tenth of the budget ([`session_start_reserve`]),
/// so the smallest budget still leaves room for a briefing.
pub const SESSION_START_RESERVE: Duration = Duration::from_millis(100);

/// What [`SESSION_START_RESERVE`] keeps back from `budget`.
pub fn session_start_reserve(budget: Duration) -> Duration {
    SESSION_START_RESERVE.min(budget / 10)
}

/// Variable that makes a debug build panic once the payload is read (fault
/// injection: the tests prove a bug still ends in exit 0 and a valid
/// envelope, through the unwinder `build.rs` links in; release builds never
/// read it).
pub const PANIC_ENV: &str = "MEMHOOK_TEST_PANIC";

/// Environment variable naming the server URL when `--server-url` is absent.
pub use memhook_delivery::spool::HOOK_URL_ENV;

/// What stdin held.
#[derive(Debug, PartialEq)]
pub enum Stdin {
    /// The whole payload (EOF, or a complete JSON object before the deadline).
    Complete(Vec<u8>),
    /// More than [`MAX_STDIN_BYTES`].
    TooLarge,
    /// The deadline passed before EOF and what arrived is not a complete
    /// JSON object.
    TimedOut,
    /// stdin could not be read.
    Failed(String),
}

/// What the hook does at session start beyond recording the event: deliver
/// what is pending for the sink, then compose (or fetch) the briefing,
/// within the budget it is given. The store and the HTTP sink are not in
/// this crate: `memhook-session` and `memhook-cli` pass
/// `memhook_sinks::session_start::session_start`; the per-event binary
/// passes [`brief::kept_or_composed`] (a briefing kept ready, or one
/// `memhook-brief` composes).
pub type Briefer = fn(&Path, &SinkTarget, &Scope, &Event, Duration) -> Option<String>;

/// The briefer of a binary that cannot brief: no briefing (`{}`).
pub fn no_briefing(_: &Path, _: &SinkTarget, _: &Scope, _: &Event, _: Duration) -> Option<String> {
    None
}

/// Run the hook. Always exits 0 with an envelope on stdout.
pub fn run(args: &HookArgs, data_dir: Option<&Path>, briefer: Briefer) -> ExitCode {
    run_with(args, data_dir, briefer, None)
}

/// What [`late_briefing`] found: the per-event binary ran the event, or it
/// is the first of its session at the agent's briefing event and goes,
/// with the payload it read, where the briefing is composed.
pub enum Late {
    /// Run here; the exit code.
    Ran(ExitCode),
    /// Hand the event over, with these payload bytes for the other
    /// binary's stdin.
    HandOver(Vec<u8>),
}

/// An agent briefed at a later event than session start
/// ([`memhook_core::envelope::briefing_event`]: Cline at its tool calls,
/// OpenHands at its prompts) is briefed once per session, by the first such
/// event, which needs the store. Every later one is an ordinary event: the
/// per-event binary reads the payload, and runs it here when the session's
/// briefing was claimed already; otherwise the payload goes back to the
/// caller to hand over with the event (two first events at once both go:
/// the claim there is exclusive). An event without a session id or a data
/// dir can never claim a briefing, and a payload that is not a JSON object
/// is never briefed: they all run here.
pub fn late_briefing(args: &HookArgs, data_dir: Option<&Path>) -> Late {
    let started = Instant::now();
    let stdin = read_stdin(STDIN_TIMEOUT);
    let Stdin::Complete(bytes) = stdin else {
        return Late::Ran(run_with(
            args,
            data_dir,
            no_briefing,
            Some((Input::Read(stdin), started)),
        ));
    };
    let parsed = parse_payload(&bytes);
    // A bug here must not cost the event: run it here, where the same bug
    // is caught and answered with an envelope.
    let unclaimed = std::panic::catch_unwind(|| {
        let Ok(payload) = &parsed else {
            return false;
        };
        let event = event::normalize(&args.agent, args.event.as_deref(), payload);
        let dir = memhook_core::data_dir::resolve(data_dir).ok();
        match (dir, event.session_id.as_deref()) {
            (Some(dir), Some(id)) => {
                !Session::new(&dir, Agent::parse(&args.agent).as_str(), id).briefing_claimed()
            }
            // No data dir, no session: no briefing can be made anywhere.
            _ => false,
        }
    })
    .unwrap_or(false);
    if unclaimed {
        return Late::HandOver(bytes);
    }
    // Run here on what was parsed (not parsed again).
    let input = match parsed {
        Ok(payload) => Input::Parsed(payload),
        Err(_) => Input::Read(Stdin::Complete(bytes)),
    };
    Late::Ran(run_with(
        args,
        data_dir,
        no_briefing,
        Some((input, started)),
    ))
}

/// [`run`] on a payload already read, without a briefing.
pub fn run_payload(args: &HookArgs, data_dir: Option<&Path>, payload: Vec<u8>) -> ExitCode {
    run_with(
        args,
        data_dir,
        no_briefing,
        Some((Input::Read(Stdin::Complete(payload)), Instant::now())),
    )
}

/// The payload as the hook got it: read from stdin, or already parsed.
enum Input {
    Read(Stdin),
    Parsed(Value),
}

/// [`run`], with the payload already read (and when its reading started)
/// or not.
fn run_with(
    args: &HookArgs,
    data_dir: Option<&Path>,
    briefer: Briefer,
    input: Option<(Input, Instant)>,
) -> ExitCode {
    let agent = Agent::parse(&args.agent);
    if let Some(name) = args.event.as_deref() {
        warn_unknown_event(&agent, name);
    }
    let fallback_kind = args
        .event
        .as_deref()
        .map(EventKind::parse)
        .unwrap_or(EventKind::Other);
    // A bug must never block the agent: catch it, say so, print `{}`.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("memhook: internal error ({msg}); the event was not captured");
    }));
    let out =
        std::panic::catch_unwind(|| handle(args, data_dir, briefer, input)).unwrap_or_else(|_| {
            if args.check_capture {
                unreadable_decision(PolicyState::Invalid).to_json()
            } else {
                memhook_core::envelope::render(&agent, fallback_kind, None)
            }
        });
    let mut stdout = std::io::stdout().lock();
    // A closed stdout is the agent's business; it must not turn into a panic.
    let _ = writeln!(stdout, "{out}");
    let _ = stdout.flush();
    ExitCode::SUCCESS
}

/// `--event` names no event memhook knows (a typo in an agent's hook
/// configuration): the event is still captured, as `other`, and stderr says
/// so with the closest event name the agent uses (any agent's, for an agent
/// memhook has no profile of).
fn warn_unknown_event(agent: &Agent, name: &str) {
    if EventKind::parse(name) != EventKind::Other {
        return;
    }
    let shown: String = name
        .chars()
        .filter(|c| !c.is_control())
        .take(memhook_core::event::MAX_NAME_CHARS)
        .collect();
    match memhook_core::event::names::closest_event(agent.as_str(), name) {
        Some(known) => eprintln!(
            "memhook: unknown event '{shown}' (did you mean '{known}'?); captured as 'other'"
        ),
        None => eprintln!("memhook: unknown event '{shown}'; captured as 'other'"),
    }
}

/// `memhook hook` with arguments clap refused: one `memhook:` line on stderr,
/// stdin read (bounded) and dropped so the agent's write never fails, and the
/// empty envelope of the agent and event named in `argv` as best they can be
/// read. Exits 0: an agent treats exit 2 as "block".
pub fn run_bad_arguments(argv: &[std::ffi::OsString], problem: &str) -> ExitCode {
    eprintln!("memhook: hook: bad arguments ({problem}); the event was not captured");
    let _ = read_stdin(STDIN_TIMEOUT);
    let agent = Agent::parse(
        guess_option(argv, "--agent")
            .as_deref()
            .unwrap_or("generic"),
    );
    let kind = guess_option(argv, "--event")
        .as_deref()
        .map(EventKind::parse)
        .unwrap_or(EventKind::Other);
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(
        stdout,
        "{}",
        memhook_core::envelope::render(&agent, kind, None)
    );
    let _ = stdout.flush();
    ExitCode::SUCCESS
}

/// The value of the first `--name VALUE` or `--name=VALUE` in `argv`.
fn guess_option(argv: &[std::ffi::OsString], name: &str) -> Option<String> {
    let mut args = argv.iter().map(|a| a.to_string_lossy());
    while let Some(a) = args.next() {
        if a == name {
            return args.next().map(|v| v.into_owned());
        }
        if let Some(v) = a.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            return Some(v.to_string());
        }
    }
    None
}

/// The whole hook except printing; returns what goes to stdout.
fn handle(
    args: &HookArgs,
    data_dir_flag: Option<&Path>,
    briefer: Briefer,
    input: Option<(Input, Instant)>,
) -> String {
    let (input, started) = input.unwrap_or_else(|| {
        let started = Instant::now();
        (Input::Read(read_stdin(STDIN_TIMEOUT)), started)
    });
    let agent = Agent::parse(&args.agent);
    let payload = match input {
        Input::Parsed(payload) => Ok(payload),
        Input::Read(Stdin::Complete(bytes)) => parse_payload(&bytes),
        Input::Read(Stdin::TooLarge) => Err(format!(
            "the event payload is larger than {} MiB",
            MAX_STDIN_BYTES / (1024 * 1024)
        )),
        Input::Read(Stdin::TimedOut) => Err(format!(
            "stdin was not closed within {} ms and held no complete JSON object",
            STDIN_TIMEOUT.as_millis()
        )),
        Input::Read(Stdin::Failed(e)) => Err(format!("cannot read stdin: {e}")),
    };
    let payload = match payload {
        Ok(v) => v,
        Err(problem) => return bad_input(args, &agent, &problem),
    };

    if cfg!(debug_assertions) && std::env::var_os(PANIC_ENV).is_some() {
        panic!("{PANIC_ENV} is set");
    }
    let mut event = event::normalize(&args.agent, args.event.as_deref(), &payload);
    drop(payload);
    let process_cwd = std::env::current_dir().ok();
    if event.cwd.is_none() {
        event.cwd = process_cwd
            .as_ref()
            .and_then(|p| p.to_str())
            .map(str::to_string);
    }
    let (mut scope, home) = resolve_scope(args, &event);
    for w in &scope.warnings {
        eprintln!("memhook: {w}");
    }
    let decision = capture::decide(&scope.capture, home.as_deref(), &event);
    if args.check_capture {
        return decision.to_json();
    }

    let sink = SinkTarget::configured(args.server_url.as_deref());
    let data_dir = match memhook_core::data_dir::resolve(data_dir_flag) {
        Ok(d) => Some(d),
        Err(e) => {
            eprintln!("memhook: {e}; the event was not captured");
            None
        }
    };
    // A session stays in its scope unless a marker or env names another
    // (scope/session.rs); the capture decision above is the event's own.
    let session = data_dir
        .as_deref()
        .zip(event.session_id.as_deref())
        .map(|(dir, id)| Session::new(dir, agent.as_str(), id));
    let noted = session.as_ref().and_then(Session::read);
    let sticky = session
        .as_ref()
        .and_then(|s| s.recall(noted.as_ref(), &mut scope));
    // DESIGN §11: a root claiming a scope another root bound writes to its
    // own quarantine scope and gets no briefing. A noted scope was checked
    // when it was noted.
    let quarantined = sticky.unwrap_or_else(|| {
        let claimed = ScopeFields::of(&scope);
        let quarantined = data_dir.as_deref().is_some_and(|dir| {
            let loud = event.kind == EventKind::SessionStart;
            memhook_core::scope::binding::enforce_hook(dir, &mut scope, loud)
        });
        if let Some(s) = &session {
            s.remember(noted.as_ref(), claimed, &scope, quarantined);
        }
        quarantined
    });
    // Opt-in and pause (switches.rs): the user's own switches, checked once
    // the scope is final.
    let gate = data_dir
        .as_deref()
        .map_or(memhook_core::switches::Gate::Open, |dir| {
            memhook_core::switches::gate(dir, &scope, memhook_core::timefmt::now_ms())
        });
    let dropped = decision.disposition == Disposition::Drop
        || (scope.settings.drop_subagent_captures && event.subagent)
        || event::is_repeat(&event)
        || !gate.captures();
    if let (false, Some(dir)) = (dropped, &data_dir) {
        enqueue(dir, &sink, &event, &scope, &decision);
    }
    // A marker that cannot be used is also shown by `memhook status`: the
    // agent's stderr, where the warning above went, is rarely seen.
    if let (Some(dir), Some((marker, problem))) = (&data_dir, scope::problems::of(&scope.capture)) {
        let filed = format!("{}/{}", scope.workspace, scope.project);
        scope::problems::remember(
            dir,
            marker,
            problem,
            &filed,
            memhook_core::timefmt::now_ms(),
        );
    }

    // The whole session-start path shares one hard budget, counted from the
    // moment the hook started reading stdin. An agent that takes no context
    // at session start is briefed at its briefing event instead, once per
    // session (the first such event claims it).
    let briefing_event = memhook_core::envelope::briefing_event(&agent);
    let briefs_now = event.kind == briefing_event
        && (event.kind == EventKind::SessionStart
            || session.as_ref().is_some_and(Session::claim_briefing));
    let context = match (&data_dir, briefs_now) {
        (Some(dir), true) => {
            let budget = budget::start_budget();
            let budget = budget
                .saturating_sub(session_start_reserve(budget))
                .saturating_sub(started.elapsed());
            let briefing = (!quarantined && gate.briefs())
                .then(|| briefer(dir, &sink, &scope, &event, budget))
                .flatten();
            // Whatever the bounded delivery left behind goes to the drainer.
            spawn_drainer(dir, &sink);
            briefing
        }
        (Some(dir), false)
            if event.kind == EventKind::PreToolUse
                && !quarantined
                && gate.briefs()
                && scope.settings.file_history
                && decision.disposition == Disposition::Keep
                && decision.tool_family == ToolFamily::File
                && memhook_core::envelope::pre_tool_injection(&agent)
                    != memhook_core::envelope::Injection::Unsupported =>
        {
            file_history(dir, &scope, &event)
        }
        _ => None,
    };
    memhook_core::envelope::render(&agent, event.kind, context.as_deref())
}

/// How many of a file tool's paths are looked up in the file history.
const MAX_HISTORY_LOOKUPS: usize = 4;

/// The file history line of the first of the call's files that an earlier
/// session changed (memhook_core::history), as the pre-tool-use context.
/// Its budget is work, not a clock: one read of a regular file of at most
/// 64 KiB that cannot block and its parse (about 0.2 ms, docs/benchmarks.md),
/// then at most [`MAX_HISTORY_LOOKUPS`] lookups; a clock checked afterwards would only throw away a
/// line whose cost was already paid, and on a loaded machine it would drop
/// lines at random.
fn file_history(dir: &Path, scope: &Scope, event: &Event) -> Option<String> {
    let files = capture::kept_file_paths(event);
    if files.is_empty() {
        return None;
    }
    let history = memhook_core::history::History::load(dir, &scope.workspace, &scope.project)?;
    files
        .iter()
        .take(MAX_HISTORY_LOOKUPS)
        .find_map(|f| history.line(f))
        .map(|line| format!("memhook file history: {line}"))
}

/// Bad input: one warning, nothing stored. `--check-capture` still prints
/// its object, saying nothing is kept.
fn bad_input(args: &HookArgs, agent: &Agent, problem: &str) -> String {
    eprintln!("memhook: {problem}; the event was not captured");
    let kind = args
        .event
        .as_deref()
        .map(EventKind::parse)
        .unwrap_or(EventKind::Other);
    if args.check_capture {
        let state = match scope_input(args, None).and_then(|i| scope::resolve(&i)) {
            Ok(s) => capture::state_of(&s.capture),
            Err(_) => PolicyState::Invalid,
        };
        return unreadable_decision(state).to_json();
    }
    memhook_core::envelope::render(agent, kind, None)
}

/// The decision reported for a payload that could not be read: nothing is
/// kept.
fn unreadable_decision(policy_state: PolicyState) -> Decision {
    Decision {
        policy_state,
        tool_family: ToolFamily::Unknown,
        path_count: 0,
        disposition: Disposition::Drop,
        extraction_state: ExtractionState::UnsupportedSchema,
    }
}

/// Parse the payload (see [`event::payload::parse`]: bounded, lone UTF-16
/// surrogates accepted as U+FFFD). It must be a JSON object.
pub fn parse_payload(bytes: &[u8]) -> Result<Value, String> {
    event::payload::parse(bytes).map_err(|e| e.to_string())
}

/// Everything scope resolution needs, read the same way as every other
/// command reads it (`ScopeInput::from_env`), in hook mode. `cwd` is the
/// event's directory; `None` is the process's own.
fn scope_input(args: &HookArgs, cwd: Option<&Path>) -> Result<ScopeInput, scope::ScopeError> {
    ScopeInput::from_env(Mode::Hook, cwd, None, None, args.project_strategy)
}

/// The event's scope, and the home directory used for `~/` patterns.
/// Hooks never fail on scope: if resolution errors anyway, the event goes
/// to `default/<basename>` with a fail-closed capture policy.
fn resolve_scope(args: &HookArgs, event: &Event) -> (Scope, Option<PathBuf>) {
    let cwd = PathBuf::from(event.cwd.clone().unwrap_or_default());
    let input = scope_input(args, Some(&cwd));
    let home = input.as_ref().ok().and_then(|i| i.home.clone());
    let strategy = input.as_ref().ok().and_then(|i| i.install_strategy);
    match input.and_then(|i| scope::resolve(&i)) {
        Ok(s) => (s, home),
        Err(e) => {
            let scope = Scope {
                workspace: scope::DEFAULT_WORKSPACE.into(),
                project: scope::paths::basename_name(&cwd),
                workspace_source: scope::Source::Fallback,
                project_source: scope::Source::Fallback,
                marker: None,
                strategy: strategy.unwrap_or_default(),
                settings: scope::Settings::default(),
                capture: CaptureConfig::Invalid {
                    marker: PathBuf::new(),
                    reason: e.to_string(),
                },
                warnings: vec![format!("{e}; capture falls back to metadata-only")],
            };
            (scope, home)
        }
    }
}

fn enqueue(data_dir: &Path, sink: &SinkTarget, event: &Event, scope: &Scope, decision: &Decision) {
    let files = if decision.disposition == Disposition::Keep
        && decision.tool_family == ToolFamily::File
        && event.kind.is_post_tool()
    {
        capture::kept_file_paths(event)
    } else {
        Vec::new()
    };
    let now = memhook_core::timefmt::now_ms();
    let record = memhook_core::record::build(
        event,
        scope,
        decision,
        files,
        memhook_core::record::new_key(),
        now,
    );
    let entry = SpoolEntry {
        v: ENTRY_VERSION,
        sink: sink.clone(),
        attempts: 0,
        enqueued_ms: now,
        record,
        exclusions: memhook_core::fingerprint::Exclusions::of(&scope.capture),
    };
    let spool = match Spool::open(data_dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("memhook: {e}; the event was not captured");
            return;
        }
    };
    let full = match spool.enqueue(&entry) {
        Ok(_) => false,
        // A full spool needs a drainer most: its mark is what makes room
        // (spool/pending.rs).
        Err(e @ SpoolError::Full { .. }) => {
            eprintln!("memhook: {e}");
            true
        }
        Err(e) => {
            eprintln!("memhook: {e}");
            return;
        }
    };
    // Session start delivers in the foreground (within its budget) before
    // composing the briefing; every other event leaves it to the drainer.
    if full {
        spawn_drainer(data_dir, sink);
    } else if event.kind != EventKind::SessionStart {
        if let Err(e) = memhook_delivery::drain::spawn_after_enqueue(data_dir, sink) {
            eprintln!("memhook: cannot start the background drainer ({e}); records stay queued");
        }
    }
}

fn spawn_drainer(data_dir: &Path, sink: &SinkTarget) {
    if let Err(e) = memhook_delivery::drain::spawn_detached(data_dir, Some(sink)) {
        eprintln!("memhook: cannot start the background drainer ({e}); records stay queued");
    }
}

/// Read stdin to EOF, at most [`MAX_STDIN_BYTES`], within `timeout`.
/// A complete JSON object already read is accepted when no more input is
/// ready, so a writer that keeps stdin open costs nothing.
#[cfg(unix)]
pub fn read_stdin(timeout: Duration) -> Stdin {
    read_fd(0, timeout, MAX_STDIN_BYTES)
}

/// Windows: no `poll` on a pipe or console handle, so one thread reads
/// stdin into chunks and [`read_chunks`] applies the same rules (size,
/// deadline, early accept of a whole object) to what arrives. At the
/// deadline the thread is left blocked in its read; the process exits.
#[cfg(windows)]
pub fn read_stdin(timeout: Duration) -> Stdin {
    let (tx, rx) = std::sync::mpsc::channel();
    let spawned = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            use std::io::Read;
            let mut stdin = std::io::stdin().lock();
            let mut sent = 0usize;
            loop {
                let mut chunk = vec![0u8; 64 * 1024];
                let msg = match stdin.read(&mut chunk) {
                    Ok(n) => {
                        chunk.truncate(n);
                        Ok(chunk)
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    // A closed pipe is the end of the input.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(Vec::new()),
                    Err(e) => Err(e.to_string()),
                };
                let last = !matches!(&msg, Ok(c) if !c.is_empty());
                sent += msg.as_ref().map_or(0, Vec::len);
                if tx.send(msg).is_err() || last || sent > MAX_STDIN_BYTES + MAX_DISCARD_BYTES {
                    return;
                }
            }
        });
    if let Err(e) = spawned {
        return Stdin::Failed(e.to_string());
    }
    read_chunks(&rx, timeout, MAX_STDIN_BYTES)
}

/// Stdin as chunks from a reader thread (an empty chunk or a hung-up
/// sender is the end of the input): the rules of `read_fd` over a channel.
#[cfg(any(windows, test))]
fn read_chunks(
    rx: &std::sync::mpsc::Receiver<Result<Vec<u8>, String>>,
    timeout: Duration,
    max: usize,
) -> Stdin {
    use std::sync::mpsc::{RecvTimeoutError, TryRecvError};
    let deadline = Instant::now() + timeout;
    let mut buf: Vec<u8> = Vec::new();
    let mut too_large = false;
    let mut discarded = 0usize;
    let mut tried_at = 0usize;
    let end = |buf: Vec<u8>, too_large: bool| {
        if too_large {
            Stdin::TooLarge
        } else {
            Stdin::Complete(buf)
        }
    };
    loop {
        let chunk = match rx.try_recv() {
            Ok(c) => c,
            Err(TryRecvError::Disconnected) => return end(buf, too_large),
            Err(TryRecvError::Empty) => {
                if !too_large && ends_with_brace(&buf) && buf.len() >= tried_at.saturating_mul(2) {
                    if event::payload::is_complete_object(&buf) {
                        return Stdin::Complete(buf);
                    }
                    tried_at = buf.len();
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return if too_large {
                        Stdin::TooLarge
                    } else if ends_with_brace(&buf) && event::payload::is_complete_object(&buf) {
                        Stdin::Complete(buf)
                    } else {
                        Stdin::TimedOut
                    };
                }
                match rx.recv_timeout(left) {
                    Ok(c) => c,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => return end(buf, too_large),
                }
            }
        };
        let chunk = match chunk {
            Ok(c) if c.is_empty() => return end(buf, too_large),
            Ok(c) => c,
            Err(e) => return Stdin::Failed(e),
        };
        if too_large {
            discarded += chunk.len();
            if discarded > MAX_DISCARD_BYTES {
                return Stdin::TooLarge;
            }
        } else {
            buf.extend_from_slice(&chunk);
            if buf.len() > max {
                too_large = true;
                discarded = buf.len();
                buf = Vec::new();
            }
        }
    }
}

#[cfg(unix)]
pub(crate) fn read_fd(fd: libc::c_int, timeout: Duration, max: usize) -> Stdin {
    let deadline = Instant::now() + timeout;
    // The payload is read straight into `buf`'s spare capacity, never
    // through a zeroed scratch buffer: zeroing 64 KiB faulted in 16 pages
    // on every call for a payload that fills one. Past `max` the rest goes
    // through `scratch` (allocated only then) and is thrown away.
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    let mut scratch: Vec<u8> = Vec::new();
    let mut too_large = false;
    let mut discarded = 0usize;
    // Length at the last early-accept parse: parse again only once the
    // buffer has doubled, so a slow writer costs O(n) parsing, not O(n²).
    let mut tried_at = 0usize;
    loop {
        // Nothing ready right now and we hold a whole object: done.
        let ready = poll_in(fd, Duration::ZERO);
        if ready == Poll::NotReady
            && !too_large
            && ends_with_brace(&buf)
            && buf.len() >= tried_at.saturating_mul(2)
        {
            if event::payload::is_complete_object(&buf) {
                return Stdin::Complete(buf);
            }
            tried_at = buf.len();
        }
        if ready == Poll::NotReady {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return if too_large {
                    Stdin::TooLarge
                } else if ends_with_brace(&buf) && event::payload::is_complete_object(&buf) {
                    Stdin::Complete(buf)
                } else {
                    Stdin::TimedOut
                };
            }
            match poll_in(fd, left) {
                Poll::NotReady => continue,
                Poll::Failed(e) => return Stdin::Failed(e),
                Poll::Ready => {}
            }
        } else if let Poll::Failed(e) = ready {
            return Stdin::Failed(e);
        }
        if too_large && scratch.is_empty() {
            scratch = vec![0u8; 64 * 1024];
        }
        if !too_large && buf.capacity() - buf.len() < 4096 {
            // Doubling, as `Vec` grows; never more than one byte past `max`.
            let want = buf.capacity().max(16 * 1024);
            buf.reserve(want.min(max + 1 - buf.len()));
        }
        let (dst, room) = if too_large {
            (scratch.as_mut_ptr(), scratch.len())
        } else {
            // At most one byte more than `max` may arrive, to tell "too large".
            let room = (buf.capacity() - buf.len()).min(max + 1 - buf.len());
            // SAFETY: `buf.len()` is within the allocation.
            (unsafe { buf.as_mut_ptr().add(buf.len()) }, room)
        };
        // SAFETY: `dst` is valid for writes of `room` bytes (spare capacity
        // of `buf`, or all of `scratch`).
        let n = unsafe { libc::read(fd, dst.cast(), room) };
        if n < 0 {
            let err = std::io::Error::last_os_error();
            match err.kind() {
                std::io::ErrorKind::Interrupted | std::io::ErrorKind::WouldBlock => continue,
                _ => return Stdin::Failed(err.to_string()),
            }
        }
        let n = n as usize;
        if n == 0 {
            return if too_large {
                Stdin::TooLarge
            } else {
                Stdin::Complete(buf)
            };
        }
        if too_large {
            discarded += n;
            if discarded > MAX_DISCARD_BYTES {
                return Stdin::TooLarge;
            }
        } else {
            // SAFETY: the kernel initialised `n` bytes after `buf.len()`.
            unsafe { buf.set_len(buf.len() + n) };
            if buf.len() > max {
                too_large = true;
                discarded = buf.len();
                buf = Vec::new();
            }
        }
    }
}

#[cfg(unix)]
#[derive(Debug, PartialEq)]
enum Poll {
    Ready,
    NotReady,
    Failed(String),
}

#[cfg(unix)]
fn poll_in(fd: libc::c_int, wait: Duration) -> Poll {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = wait.as_millis().min(i32::MAX as u128) as libc::c_int;
    // SAFETY: one valid pollfd, count 1.
    let r = unsafe { libc::poll(&mut pfd, 1, ms) };
    if r < 0 {
        let err = std::io::Error::last_os_error();
        return if err.kind() == std::io::ErrorKind::Interrupted {
            Poll::NotReady
        } else {
            Poll::Failed(err.to_string())
        };
    }
    if r == 0 {
        return Poll::NotReady;
    }
    if pfd.revents & libc::POLLNVAL != 0 {
        return Poll::Failed("stdin is closed".into());
    }
    // POLLIN or POLLHUP/POLLERR: a read will not block (it returns data,
    // EOF or the error).
    Poll::Ready
}

/// The cheap test before a parse: an object can only end with `}`.
fn ends_with_brace(buf: &[u8]) -> bool {
    buf.trim_ascii_end().last() == Some(&b'}')
}

#[cfg(test)]
mod chunk_tests {
    use super::*;
    use std::sync::mpsc::channel;

    fn send(chunks: &[&[u8]]) -> std::sync::mpsc::Receiver<Result<Vec<u8>, String>> {
        let (tx, rx) = channel();
        for c in chunks {
            tx.send(Ok(c.to_vec())).unwrap();
        }
        // `tx` dropped: the end of the input.
        rx
    }

    #[test]
    fn chunks_read_to_the_end_and_stop_past_the_cap() {
        let rx = send(&[b"{\"a\":", b"1}"]);
        assert!(
            matches!(read_chunks(&rx, Duration::from_secs(1), 100), Stdin::Complete(b) if b == b"{\"a\":1}")
        );
        let rx = send(&[b"0123456789", b"0123456789"]);
        assert!(matches!(
            read_chunks(&rx, Duration::from_secs(1), 15),
            Stdin::TooLarge
        ));
        let (tx, rx) = channel();
        tx.send(Err("broken".to_string())).unwrap();
        assert!(
            matches!(read_chunks(&rx, Duration::from_secs(1), 15), Stdin::Failed(e) if e == "broken")
        );
    }

    #[test]
    fn a_whole_object_is_taken_while_the_writer_keeps_stdin_open() {
        let (tx, rx) = channel();
        tx.send(Ok(b"{\"a\":1}".to_vec())).unwrap();
        let t = Instant::now();
        assert!(matches!(
            read_chunks(&rx, Duration::from_secs(5), 100),
            Stdin::Complete(_)
        ));
        assert!(t.elapsed() < Duration::from_secs(1));
        // Half an object and a writer that never closes: the deadline.
        tx.send(Ok(b"{\"a\":".to_vec())).unwrap();
        let rx2 = {
            let (tx2, rx2) = channel();
            tx2.send(Ok(b"{\"a\":".to_vec())).unwrap();
            std::mem::forget(tx2);
            rx2
        };
        assert!(matches!(
            read_chunks(&rx2, Duration::from_millis(50), 100),
            Stdin::TimedOut
        ));
        drop(tx);
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn pipe() -> (libc::c_int, std::fs::File) {
        use std::os::fd::FromRawFd;
        let mut fds = [0; 2];
        // SAFETY: fds is a valid 2-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: fds[1] is a fresh fd we own.
        (fds[0], unsafe { std::fs::File::from_raw_fd(fds[1]) })
    }

    fn close(fd: libc::c_int) {
        // SAFETY: fd is ours.
        unsafe { libc::close(fd) };
    }

    #[test]
    fn reads_to_eof() {
        let (r, mut w) = pipe();
        w.write_all(b"{\"a\":1}").unwrap();
        drop(w);
        assert_eq!(
            read_fd(r, Duration::from_secs(2), 100),
            Stdin::Complete(b"{\"a\":1}".to_vec())
        );
        close(r);
    }

    #[test]
    fn a_complete_object_does_not_wait_for_eof() {
        let (r, mut w) = pipe();
        w.write_all(b"{\"a\":1}\n").unwrap();
        let t = Instant::now();
        assert!(matches!(
            read_fd(r, Duration::from_secs(30), 100),
            Stdin::Complete(_)
        ));
        assert!(t.elapsed() < Duration::from_secs(30));
        drop(w);
        close(r);
    }

    #[test]
    fn an_object_completed_after_a_failed_early_parse_is_still_accepted() {
        let (r, mut w) = pipe();
        // Ends with `}` but is not complete: the early parse fails...
        w.write_all(b"{\"a\":{}").unwrap();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            // ...then one byte completes it and stdin stays open.
            w.write_all(b"}").unwrap();
            std::thread::sleep(Duration::from_millis(400));
            drop(w);
        });
        assert_eq!(
            read_fd(r, Duration::from_millis(200), 100),
            Stdin::Complete(b"{\"a\":{}}".to_vec())
        );
        t.join().unwrap();
        close(r);
    }

    #[test]
    fn an_open_stdin_with_partial_json_times_out() {
        let (r, mut w) = pipe();
        w.write_all(b"{\"a\":").unwrap();
        assert_eq!(read_fd(r, Duration::from_millis(50), 100), Stdin::TimedOut);
        drop(w);
        close(r);
    }

    /// A payload many times the first buffer, arriving in pieces, is read
    /// whole and in order as the buffer grows; one byte over the bound is
    /// still refused after growing.
    #[test]
    fn a_large_payload_in_pieces_is_read_whole() {
        let inner: String = (0..300_000u32)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let body = format!("{{\"a\":\"{inner}\"}}");
        for (max, whole) in [(body.len(), true), (body.len() - 1, false)] {
            let (r, mut w) = pipe();
            let sent = body.clone();
            let t = std::thread::spawn(move || {
                for piece in sent.as_bytes().chunks(7_000) {
                    w.write_all(piece).unwrap();
                }
            });
            let got = read_fd(r, Duration::from_secs(10), max);
            t.join().unwrap();
            if whole {
                assert!(matches!(&got, Stdin::Complete(b) if b == body.as_bytes()));
            } else {
                assert_eq!(got, Stdin::TooLarge);
            }
            close(r);
        }
    }

    #[test]
    fn size_bound_at_its_edge() {
        let body = |n: usize| format!("{{\"a\":\"{}\"}}", "x".repeat(n - 8));
        let (r, mut w) = pipe();
        w.write_all(body(100).as_bytes()).unwrap();
        drop(w);
        assert!(
            matches!(read_fd(r, Duration::from_secs(2), 100), Stdin::Complete(b) if b.len() == 100)
        );
        close(r);
        let (r, mut w) = pipe();
        w.write_all(body(101).as_bytes()).unwrap();
        drop(w);
        assert_eq!(read_fd(r, Duration::from_secs(2), 100), Stdin::TooLarge);
        close(r);
    }

    #[test]
    fn payloads_must_be_json_objects() {
        assert!(parse_payload(b"\xEF\xBB\xBF{\"a\":1}").is_ok());
        assert!(parse_payload(b"").is_err());
        assert!(parse_payload(b"  \n").is_err());
        assert!(parse_payload(b"[1]").is_err());
        assert!(parse_payload(b"\xff\xfe{}").is_err());
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse_payload(deep.as_bytes()).is_err());
        // The message never quotes the payload.
        let e = parse_payload(b"{\"secret-value\" nope").unwrap_err();
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn options_are_guessed_from_argv_in_both_spellings() {
        let argv: Vec<std::ffi::OsString> = ["memhook", "hook", "--agent=codex", "--event", "Stop"]
            .into_iter()
            .map(Into::into)
            .collect();
        assert_eq!(guess_option(&argv, "--agent").as_deref(), Some("codex"));
        assert_eq!(guess_option(&argv, "--event").as_deref(), Some("Stop"));
        assert_eq!(guess_option(&argv[..4], "--event"), None);
        assert_eq!(guess_option(&argv, "--server-url"), None);
    }

    #[test]
    fn the_reserve_is_a_tenth_of_a_small_budget_at_most() {
        let ms = Duration::from_millis;
        assert_eq!(session_start_reserve(ms(1500)), SESSION_START_RESERVE);
        assert_eq!(session_start_reserve(ms(1000)), SESSION_START_RESERVE);
        assert_eq!(
            session_start_reserve(ms(999)),
            ms(99) + Duration::from_micros(900)
        );
        assert_eq!(session_start_reserve(ms(100)), ms(10));
    }
}
