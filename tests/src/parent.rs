//! The parent agent of the subagent, fork and worktree tests, as the mock
//! model plays it: its prompt holds `PARENT` (the tests start it with
//! "PARENT go" or the like), its first turn calls the `Agent` tool, and its
//! later turns — the one reading the calls' results, the ones woken by a
//! child's notification — answer with text.

use serde_json::json;

use crate::mock::{Block, MockServer, RecordedRequest, Reply, n_messages, prompt_of};

/// How a delivered task notification begins (the `Agent` tool's own result
/// mentions "<task-notification>" too, so count this).
pub const NOTE: &str = "<task-notification>\n<task-id>";

/// Whether `r` is one of the parent's requests. A fork's requests are too:
/// they begin with its parent's bytes, so route forks before the parent.
pub fn is_parent(r: &RecordedRequest) -> bool {
    prompt_of(r).contains("PARENT")
}

/// Routes the parent: its first request gets `first` (its `Agent` calls),
/// every later one `later`. Rules for particular later turns must be added
/// before this, since the mock asks its rules in order.
pub fn answers(mock: &MockServer, first: impl Into<Reply>, later: impl Into<Reply>) {
    mock.when(|r| is_parent(r) && n_messages(r) == 1, first);
    mock.when(is_parent, later);
}

/// An `Agent` call starting a general-purpose child on `prompt` (its
/// description "delegated work"), in the background or not.
pub fn agent_call(prompt: &str, background: bool) -> Block {
    Block::agent(
        "",
        json!({"description": "delegated work", "prompt": prompt, "run_in_background": background}),
    )
}

/// The parent's request that carried `n` messages (3: the one answering
/// its first turn's calls); panics if there was none.
#[track_caller]
pub fn request(mock: &MockServer, n: usize) -> RecordedRequest {
    mock.requests()
        .into_iter()
        .find(|r| is_parent(r) && n_messages(r) == n)
        .unwrap_or_else(|| panic!("the parent sent no request of {n} messages"))
}
