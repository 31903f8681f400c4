//! Claude Code as an ACP agent, offline, against the mock model: the adapter
//! `@zed-industries/claude-agent-acp` (pinned in
//! tests/external-agents/package-lock.json), which runs Claude Code's
//! `cli.js` from `@anthropic-ai/claude-agent-sdk` as a child process.
//!
//! - [`setup`] installs it (tests/external-agents/setup.sh, once per test
//!   process, under a lock) and gives the adapter's entry point;
//! - [`command`] is the command that starts it pointed at a mock, with the
//!   environment it needs and nothing else of the test's;
//! - [`kind`] tells the requests of a turn (the conversation with the model)
//!   from auxiliary ones, and [`answer_auxiliary`] answers the latter so
//!   that they never take a reply queued for a turn.
//!
//! What the pinned version does (see tests/tests/e2e/claude_code_probe.rs,
//! which checks each point):
//!
//! - at start it sends `HEAD /` to the base URL (a reachability probe; the
//!   mock's 404 does not bother it); then each model call of a turn is one
//!   `POST /v1/messages?beta=true` with `x-api-key` and the tools, streamed;
//!   no title, quota or small-model request is made;
//! - the model comes from `ANTHROPIC_DEFAULT_SONNET_MODEL`: the adapter
//!   selects its "default" model for each new session, which overrides
//!   `ANTHROPIC_MODEL`;
//! - Bash asks `session/request_permission` in the default mode, with the
//!   options `allow_always`/`allow_always`, `allow`/`allow_once`,
//!   `reject`/`reject_once` (id/kind);
//! - it advertises `loadSession` and `sessionCapabilities.resume`; sessions
//!   live under `$HOME/.claude/projects/`, so a restarted adapter with the
//!   same HOME loads (replaying the history) or resumes them;
//! - once a session is open, closing its stdin does not end it (nor its
//!   child, Claude Code); and Claude Code writes a turn's last message to
//!   the session file a moment after the turn ends, so a SIGKILL right
//!   after a turn can lose it (a loaded session then shows "No response
//!   requested." in its place). Stop it with SIGTERM to its process group
//!   and wait for the group to end ([`crate::acp_stdio::AcpAgent::stop`]).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use serde_json::Value;

use crate::mock::{MockServer, RecordedRequest, Reply};

/// The key the adapter sends (`x-api-key`, from `ANTHROPIC_API_KEY`).
pub const API_KEY: &str = "sk-ant-test-claude-code";
/// The model Claude Code asks for in turns (its "default" model, set with
/// `ANTHROPIC_DEFAULT_SONNET_MODEL`; Opus is mapped to it too).
pub const MODEL: &str = "claude-test-main";
/// Its small model (`ANTHROPIC_DEFAULT_HAIKU_MODEL`), for auxiliary work.
pub const SMALL_MODEL: &str = "claude-test-small";
/// How long one ACP step may take: starting Claude Code takes seconds.
pub const STEP_LIMIT: Duration = Duration::from_secs(30);

/// The adapter's entry point, installed; None (after saying why) when node
/// is missing outside CI — in CI (`CI` set) that fails the test instead.
pub fn installed() -> Option<PathBuf> {
    if let Some(why) = node_missing() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{why} (CI is set: this test must run, not be skipped)"
        );
        println!("skipped: {why}");
        return None;
    }
    Some(setup().unwrap_or_else(|e| panic!("{e}")))
}

/// tests/external-agents/.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("external-agents")
}

/// The adapter's version pinned in tests/external-agents/package.json.
pub fn pinned_version() -> String {
    let text = std::fs::read_to_string(dir().join("package.json")).expect("package.json");
    let json: Value = serde_json::from_str(&text).expect("package.json is JSON");
    json["dependencies"]["@zed-industries/claude-agent-acp"]
        .as_str()
        .expect("the adapter is pinned")
        .to_string()
}

/// Why Claude Code cannot run here (no `node`), if it cannot.
pub fn node_missing() -> Option<String> {
    match Command::new("node").arg("--version").output() {
        Ok(out) if out.status.success() => None,
        _ => Some(
            "node is not installed, so Claude Code cannot run \
             (scripts/test-deps installs it: apt-get install nodejs npm)"
                .into(),
        ),
    }
}

/// Installs the adapter (once per process, under a lock on the directory)
/// and gives its entry point (`dist/index.js`). Err says what failed.
pub fn setup() -> Result<PathBuf, String> {
    static DONE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    DONE.get_or_init(run_setup).clone()
}

fn run_setup() -> Result<PathBuf, String> {
    let dir = dir();
    let said = crate::setup_sh::run(&dir, "node and npm")
        .map_err(|e| format!("Claude Code's ACP adapter is not installed: {e}"))?;
    let entry = dir.join("node_modules/@zed-industries/claude-agent-acp/dist/index.js");
    if !entry.is_file() {
        return Err(format!(
            "{}/setup.sh succeeded but {} is missing\n{said}",
            dir.display(),
            entry.display()
        ));
    }
    Ok(entry)
}

/// The command that starts the adapter `entry` talking to `mock_url`, with
/// `home` as its HOME (where Claude Code keeps `.claude.json` and its
/// sessions: a fresh directory needs no onboarding) and `home/tmp` as its
/// temporary directory (Claude Code otherwise writes under
/// `/tmp/claude-UID/`; `CLAUDE_CODE_TMPDIR` moves it). The test's own
/// environment is not passed on (a developer's ANTHROPIC_* must not leak
/// in), except PATH. IS_SANDBOX stays unset: as root it only unlocks the
/// `bypassPermissions` mode.
pub fn command(entry: &Path, mock_url: &str, home: &Path) -> Command {
    let tmp = home.join("tmp");
    std::fs::create_dir_all(&tmp).expect("create HOME/tmp");
    let mut cmd = Command::new("node");
    cmd.arg(entry)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("TMPDIR", &tmp)
        .env("CLAUDE_CODE_TMPDIR", &tmp)
        .env("ANTHROPIC_BASE_URL", mock_url)
        .env("ANTHROPIC_API_KEY", API_KEY)
        .env("ANTHROPIC_DEFAULT_SONNET_MODEL", MODEL)
        .env("ANTHROPIC_DEFAULT_OPUS_MODEL", MODEL)
        .env("ANTHROPIC_DEFAULT_HAIKU_MODEL", SMALL_MODEL)
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1");
    cmd
}

/// What a request to the mock was for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// A model call of a turn: `POST /v1/messages` offering tools, for the
    /// main model.
    Turn,
    /// Anything else: the start-up `HEAD /`, token counts, small-model
    /// requests (titles, summaries) should a version make them.
    Auxiliary,
}

/// Which kind `r` is.
pub fn kind(r: &RecordedRequest) -> RequestKind {
    let turn = r.method == "POST"
        && r.path == "/v1/messages"
        && !r.tool_names().is_empty()
        && r.model() != Some(SMALL_MODEL);
    if turn {
        RequestKind::Turn
    } else {
        RequestKind::Auxiliary
    }
}

/// The turn requests among `requests`, in order.
pub fn turns(requests: &[RecordedRequest]) -> Vec<RecordedRequest> {
    requests
        .iter()
        .filter(|r| kind(r) == RequestKind::Turn)
        .cloned()
        .collect()
}

/// Answers auxiliary model calls with a short text (a rule, checked before
/// the queue), so that the queue serves turns only.
pub fn answer_auxiliary(mock: &MockServer) {
    mock.when(
        |r| kind(r) == RequestKind::Auxiliary,
        Reply::text("auxiliary"),
    );
}

/// The text the user typed, as Claude Code sends it: the last text block of
/// the request's last message (blocks before it are `<system-reminder>`s
/// it adds).
pub fn user_text(r: &RecordedRequest) -> Option<String> {
    let last = r.messages().last()?;
    if last["role"] != "user" {
        return None;
    }
    match &last["content"] {
        Value::String(s) => Some(s.clone()),
        Value::Array(blocks) => blocks
            .iter()
            .rev()
            .find(|b| b["type"] == "text")
            .and_then(|b| b["text"].as_str())
            .map(str::to_string),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request(method: &str, path: &str, body: Value) -> RecordedRequest {
        RecordedRequest {
            api: crate::mock::Api::Anthropic,
            method: method.into(),
            path: path.into(),
            query: Some("beta=true".into()),
            headers: Vec::new(),
            body: body.to_string().into_bytes(),
            json: body,
            cache: None,
            output_tokens: None,
            received_at: std::time::Instant::now(),
            completed_at: None,
            index: 0,
        }
    }

    #[test]
    fn turns_are_main_model_calls_with_tools() {
        let tools = json!([{"name": "Bash", "input_schema": {"type": "object"}}]);
        let call = |model: &str, tools: Value| {
            json!({"model": model, "tools": tools, "messages": [
                {"role": "user", "content": [
                    {"type": "text", "text": "<system-reminder>x</system-reminder>"},
                    {"type": "text", "text": "Say hello"},
                ]},
            ]})
        };
        let turn = request("POST", "/v1/messages", call(MODEL, tools.clone()));
        assert_eq!(kind(&turn), RequestKind::Turn);
        assert_eq!(user_text(&turn).as_deref(), Some("Say hello"));
        let small = request("POST", "/v1/messages", call(SMALL_MODEL, tools.clone()));
        assert_eq!(kind(&small), RequestKind::Auxiliary);
        let bare = request("POST", "/v1/messages", call(MODEL, json!([])));
        assert_eq!(kind(&bare), RequestKind::Auxiliary);
        let count = request("POST", "/v1/messages/count_tokens", call(MODEL, tools));
        assert_eq!(kind(&count), RequestKind::Auxiliary);
        let probe = request("HEAD", "/", Value::Null);
        assert_eq!(kind(&probe), RequestKind::Auxiliary);
        assert_eq!(user_text(&probe), None);
        let all = [probe, turn.clone(), small, turn];
        assert_eq!(turns(&all).len(), 2);
    }
}
