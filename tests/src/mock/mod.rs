//! A mock model provider speaking Anthropic's Messages API
//! (`POST /v1/messages`, streaming only), OpenAI's Chat Completions API
//! (`POST /chat/completions`, `POST /v1/chat/completions`, streaming only)
//! and Google's Gemini API (`POST /v1beta/models/{model}:generateContent`
//! and `:streamGenerateContent?alt=sse`, see [`gemini`]) over plain
//! HTTP/1.1 on 127.0.0.1.
//!
//! Tests script replies ([`MockServer::enqueue`], [`MockServer::when`]) and
//! inspect what the daemon sent ([`MockServer::requests`]). Replies are
//! streamed in the format of the API that was called. Anthropic prompt
//! caching and OpenAI automatic prefix caching are simulated (see
//! [`cache`]), with each request's decision in [`RecordedRequest::cache`].
//!
//! ```no_run
//! use agentd_e2e::mock::{MockMessage, MockServer, Reply};
//! use serde_json::json;
//!
//! let mock = MockServer::start();
//! mock.enqueue(Reply::Message(MockMessage::tool("toolu_1", "Bash", json!({"command": "ls"}))));
//! mock.enqueue(Reply::text("done"));
//! // ... point the daemon at mock.url() ...
//! let requests = mock.wait_for_requests(2, std::time::Duration::from_secs(10));
//! assert_eq!(requests[1].json["messages"][2]["content"][0]["type"], "tool_result");
//! ```

// Test infrastructure: a failure to set up the mock is a test failure.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use agentd_shared::sync::Unpoisoned as _;

pub mod anthropic;
pub mod cache;
pub mod gemini;
pub mod openai;
pub mod script;
mod server;
pub mod stream;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A model to name for the mock (`--model`, `default_model`): Anthropic's
/// API, which the mock answers whatever the model.
pub const MODEL: &str = "anthropic:claude-test";

/// Which API a request was addressed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Api {
    /// `/v1/messages` (and any path that is not a chat-completions path).
    Anthropic,
    /// `/chat/completions`, `/v1/chat/completions`.
    OpenAi,
    /// `/v1beta/models/{model}:generateContent` and
    /// `:streamGenerateContent` (no prompt-cache simulation).
    Gemini,
}

/// The prompt-cache decision for one request, in tokens.
///
/// Anthropic: `read` = `cache_read_input_tokens`, `creation` =
/// `cache_creation_input_tokens`, `input` = `input_tokens` (uncached);
/// `hit_block` is the index of the last block of the prefix read (blocks in
/// prefix order: tools, system blocks, message content blocks), and
/// `breakpoints` the indexes of blocks carrying `cache_control`.
///
/// OpenAI: `read` = `prompt_tokens_details.cached_tokens`, `creation` = 0,
/// `input` = `prompt_tokens - cached_tokens`, `hit_block` the index of the
/// last message of the cached prefix, `breakpoints` empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheOutcome {
    pub read: u64,
    pub creation: u64,
    pub input: u64,
    pub hit_block: Option<usize>,
    pub breakpoints: Vec<usize>,
}

/// The text of a message's content: its text blocks (and the text of tool
/// results), one per line.
pub fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| {
                if b["type"] == "tool_result" {
                    text_of(&b["content"])
                } else {
                    b["text"].as_str().unwrap_or_default().to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// The text of a request's first message: the agent's prompt. Rules route
/// on it (`mock.when(|r| prompt_of(r).starts_with("CHILD"), …)`).
pub fn prompt_of(r: &RecordedRequest) -> String {
    text_of(&r.json["messages"][0]["content"])
}

/// The text of a request's newest message.
pub fn last_text(r: &RecordedRequest) -> String {
    r.messages()
        .last()
        .map(|m| text_of(&m["content"]))
        .unwrap_or_default()
}

/// How many messages a request carries.
pub fn n_messages(r: &RecordedRequest) -> usize {
    r.json["messages"].as_array().map_or(0, Vec::len)
}

/// One request as the mock received it.
#[derive(Clone, Debug)]
pub struct RecordedRequest {
    pub api: Api,
    pub method: String,
    /// The path without its query string (routing ignores the query).
    pub path: String,
    /// The query string without `?` (Claude Code calls
    /// `/v1/messages?beta=true`); `None` when the target has none.
    pub query: Option<String>,
    /// Header names lower-case, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The exact request body bytes.
    pub body: Vec<u8>,
    /// The body parsed (`Value::Null` if it is not JSON).
    pub json: Value,
    /// Set when a message was streamed for this request (usage was
    /// reported); `None` for error replies, resets and rejected requests.
    /// Always `None` in what [`MockServer::when`] rules see.
    pub cache: Option<CacheOutcome>,
    /// The output tokens reported with the streamed message (set with
    /// `cache`).
    pub output_tokens: Option<u64>,
    pub received_at: Instant,
    /// When the last event of a streamed reply that ended properly went
    /// out (for measuring the client's turn-around).
    pub completed_at: Option<Instant>,
    /// Position in arrival order, from 0.
    pub index: usize,
}

impl RecordedRequest {
    /// The first value of a header (name case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn body_text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// Whether the raw body contains `needle` (handy in rules).
    pub fn body_contains(&self, needle: &str) -> bool {
        self.body_text().contains(needle)
    }

    /// The model named in the body (Gemini's: in the path).
    pub fn model(&self) -> Option<&str> {
        match self.api {
            Api::Gemini => gemini::parse_path(&self.path).map(|(m, _)| m),
            _ => self.json.get("model").and_then(Value::as_str),
        }
    }

    /// The names of the tools the request offers the model, in order.
    pub fn tool_names(&self) -> Vec<String> {
        self.json["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect()
    }

    /// The `messages` array (empty if absent).
    pub fn messages(&self) -> &[Value] {
        self.json
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
}

/// One content block of a mock assistant message.
#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    Text(String),
    /// An empty `id` gets a generated one (`toolu_…` / `call_…`).
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// Anthropic only (omitted in OpenAI's format).
    Thinking {
        thinking: String,
        signature: String,
    },
    /// Anthropic only (omitted in OpenAI's format).
    RedactedThinking {
        data: String,
    },
}

impl Block {
    pub fn text(text: impl Into<String>) -> Block {
        Block::Text(text.into())
    }

    pub fn tool(id: impl Into<String>, name: impl Into<String>, input: Value) -> Block {
        Block::ToolUse {
            id: id.into(),
            name: name.into(),
            input,
        }
    }

    /// A Bash tool call running `command`.
    pub fn bash(id: impl Into<String>, command: impl Into<String>) -> Block {
        Block::tool(id, "Bash", serde_json::json!({"command": command.into()}))
    }

    /// An `Agent` tool call: a subagent or, with `"subagent_type": "fork"`,
    /// a fork.
    pub fn agent(id: impl Into<String>, input: Value) -> Block {
        Block::tool(id, "Agent", input)
    }

    pub fn thinking(thinking: impl Into<String>, signature: impl Into<String>) -> Block {
        Block::Thinking {
            thinking: thinking.into(),
            signature: signature.into(),
        }
    }
}

/// A complete assistant message, streamed in the called API's format.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct MockMessage {
    pub content: Vec<Block>,
    /// Anthropic stop reason; `None`: `tool_use` if there is a tool use,
    /// else `end_turn`. Mapped for OpenAI: end_turn/stop_sequence/pause_turn
    /// → `stop`, tool_use → `tool_calls`, max_tokens → `length`, refusal →
    /// `content_filter`; anything else passes through.
    pub stop_reason: Option<String>,
    /// Sleep between consecutive stream events.
    pub event_delay: Duration,
    /// Sleep before the response starts (before the HTTP response head and
    /// `message_start`): models time to first byte. Cache entries the request
    /// writes become readable only after it.
    pub start_delay: Duration,
    /// Held before the response starts until the gate is opened: for a
    /// test that must act while a request is in flight, without a timer.
    pub gate: Option<Gate>,
}

/// A gate a response waits at (see [`MockMessage::held`]).
#[derive(Clone, Debug)]
pub struct Gate(std::sync::Arc<tokio::sync::watch::Sender<bool>>);

impl Default for Gate {
    fn default() -> Self {
        Gate(std::sync::Arc::new(tokio::sync::watch::Sender::new(false)))
    }
}

impl PartialEq for Gate {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Lets every response held at it (now or later) go.
    pub fn open(&self) {
        self.0.send_replace(true);
    }

    pub(crate) async fn passed(&self) {
        let mut open = self.0.subscribe();
        let _ = open.wait_for(|o| *o).await;
    }
}

impl MockMessage {
    /// Output tokens of its text and tool calls, as the OpenAI and Gemini
    /// renderings report them (thinking is not rendered there).
    pub fn text_and_call_tokens(&self) -> u64 {
        let len: usize = self
            .content
            .iter()
            .map(|b| match b {
                Block::Text(t) => t.len(),
                Block::ToolUse { name, input, .. } => name.len() + input.to_string().len(),
                Block::Thinking { .. } | Block::RedactedThinking { .. } => 0,
            })
            .sum();
        cache::tokens_of(len).max(1)
    }

    pub fn new() -> MockMessage {
        MockMessage::default()
    }

    pub fn text(text: impl Into<String>) -> MockMessage {
        MockMessage::new().with(Block::text(text))
    }

    pub fn tool(id: impl Into<String>, name: impl Into<String>, input: Value) -> MockMessage {
        MockMessage::new().with(Block::tool(id, name, input))
    }

    pub fn with(mut self, block: Block) -> MockMessage {
        self.content.push(block);
        self
    }

    pub fn stop_reason(mut self, reason: impl Into<String>) -> MockMessage {
        self.stop_reason = Some(reason.into());
        self
    }

    /// Sleep `delay` between stream events.
    pub fn slow(mut self, delay: Duration) -> MockMessage {
        self.event_delay = delay;
        self
    }

    /// Sleep `delay` before responding at all.
    pub fn delay_start(mut self, delay: Duration) -> MockMessage {
        self.start_delay = delay;
        self
    }

    /// Held until `gate` is opened before responding.
    pub fn held(mut self, gate: &Gate) -> MockMessage {
        self.gate = Some(gate.clone());
        self
    }

    /// The Anthropic stop reason this message ends with.
    pub fn effective_stop_reason(&self) -> String {
        match &self.stop_reason {
            Some(r) => r.clone(),
            None if self
                .content
                .iter()
                .any(|b| matches!(b, Block::ToolUse { .. })) =>
            {
                "tool_use".to_string()
            }
            None => "end_turn".to_string(),
        }
    }
}

/// What the mock answers to one request.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A complete assistant message; streamed in the API's format.
    Message(MockMessage),
    /// An HTTP error status with the API's error body and an optional
    /// `retry-after` header (seconds).
    Status {
        code: u16,
        message: String,
        retry_after: Option<u64>,
    },
    /// Streams the message, then after `after_events` events (at most all
    /// but the final `message_stop` / `[DONE]`) sends an error event and
    /// ends the stream properly.
    ErrorEvent {
        message: MockMessage,
        after_events: usize,
        error_type: String,
        error_message: String,
    },
    /// Streams the message and breaks the connection after `after_events`
    /// events (at most all but the final `message_stop` / `[DONE]`): the
    /// chunked body is never terminated.
    Cut {
        message: MockMessage,
        after_events: usize,
    },
    /// Closes the connection (TCP reset) without any HTTP response.
    Reset,
}

impl Reply {
    pub fn text(text: impl Into<String>) -> Reply {
        Reply::Message(MockMessage::text(text))
    }

    pub fn tool(id: impl Into<String>, name: impl Into<String>, input: Value) -> Reply {
        Reply::Message(MockMessage::tool(id, name, input))
    }

    pub fn status(code: u16, message: impl Into<String>) -> Reply {
        Reply::Status {
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 429 with `retry-after: secs`.
    pub fn rate_limited(secs: u64) -> Reply {
        Reply::Status {
            code: 429,
            message: "Number of request tokens has exceeded your per-minute rate limit".into(),
            retry_after: Some(secs),
        }
    }

    /// 529 `overloaded_error`.
    pub fn overloaded() -> Reply {
        Reply::status(529, "Overloaded")
    }
}

impl From<MockMessage> for Reply {
    fn from(message: MockMessage) -> Reply {
        Reply::Message(message)
    }
}

/// Server settings; `MockConfig::default()` is what [`MockServer::start`]
/// uses.
#[derive(Clone, Debug)]
pub struct MockConfig {
    /// If set, requests must carry exactly this key (`x-api-key` for
    /// Anthropic, `Authorization: Bearer` for OpenAI); otherwise any
    /// non-empty key is accepted.
    pub api_key: Option<String>,
    /// Anthropic: the shortest prefix (tokens) a breakpoint writes. 1024.
    pub min_cacheable_tokens: u64,
    /// OpenAI: the shortest prefix (tokens) that is cached. 1024.
    pub openai_min_cached_tokens: u64,
    /// Reject malformed requests with 400 as the real APIs do (required
    /// fields, roles, tool_use/tool_result pairing). On by default.
    pub validate: bool,
    /// Print one line per request on stderr.
    pub log_requests: bool,
    /// The model's context window (tokens, as the mock counts them): a
    /// longer prompt is refused as the real APIs refuse it (Anthropic:
    /// 400 `invalid_request_error` "prompt is too long: N tokens > W
    /// maximum"; OpenAI: 400 with code `context_length_exceeded`). None:
    /// no limit.
    pub context_window: Option<u64>,
}

impl Default for MockConfig {
    fn default() -> MockConfig {
        MockConfig {
            api_key: None,
            min_cacheable_tokens: 1024,
            openai_min_cached_tokens: 1024,
            validate: true,
            log_requests: false,
            context_window: None,
        }
    }
}

type Predicate = Box<dyn Fn(&RecordedRequest) -> bool + Send + Sync>;
type Responder = Box<dyn Fn(&RecordedRequest) -> Option<Reply> + Send + Sync>;

struct Rule {
    matches: Predicate,
    reply: Reply,
}

struct State {
    config: MockConfig,
    records: Vec<RecordedRequest>,
    queue: VecDeque<Reply>,
    rules: Vec<Rule>,
    responders: Vec<Responder>,
    fallback: Option<Reply>,
    anthropic_cache: cache::AnthropicCache,
    openai_cache: cache::OpenAiCache,
}

struct Shared {
    state: Mutex<State>,
    arrived: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.locked()
    }
}

/// A running mock provider on 127.0.0.1 (its own thread and Tokio runtime).
/// Dropping it stops the server and breaks open connections.
pub struct MockServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl MockServer {
    pub fn start() -> MockServer {
        MockServer::start_with(MockConfig::default())
    }

    pub fn start_with(config: MockConfig) -> MockServer {
        MockServer::start_on(config, 0)
    }

    /// Like [`MockServer::start_with`] on a given port (0: any).
    pub fn start_on(config: MockConfig, port: u16) -> MockServer {
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                config,
                records: Vec::new(),
                queue: VecDeque::new(),
                rules: Vec::new(),
                responders: Vec::new(),
                fallback: None,
                anthropic_cache: cache::AnthropicCache::default(),
                openai_cache: cache::OpenAiCache::default(),
            }),
            arrived: Condvar::new(),
        });
        let listener =
            std::net::TcpListener::bind(("127.0.0.1", port)).expect("mock: bind 127.0.0.1");
        listener.set_nonblocking(true).expect("mock: nonblocking");
        let addr = listener.local_addr().expect("mock: local_addr");
        let (tx, rx) = tokio::sync::oneshot::channel();
        let for_thread = shared.clone();
        let thread = std::thread::Builder::new()
            .name(format!("mock-model-{}", addr.port()))
            .spawn(move || server::run(for_thread, listener, rx))
            .expect("mock: spawn thread");
        MockServer {
            shared,
            addr,
            shutdown: Some(tx),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Queues a reply for the next request no rule matches (FIFO).
    pub fn enqueue(&self, reply: impl Into<Reply>) {
        self.shared.lock().queue.push_back(reply.into());
    }

    pub fn enqueue_all(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.lock().queue.extend(replies);
    }

    /// Replies not served yet.
    pub fn queued(&self) -> usize {
        self.shared.lock().queue.len()
    }

    /// Adds a rule, checked before the queue, in the order added; the first
    /// matching rule answers (as often as it matches). The predicate runs
    /// with the mock locked: it must not call back into the server.
    pub fn when(
        &self,
        rule: impl Fn(&RecordedRequest) -> bool + Send + Sync + 'static,
        reply: impl Into<Reply>,
    ) {
        self.shared.lock().rules.push(Rule {
            matches: Box::new(rule),
            reply: reply.into(),
        });
    }

    /// Adds a responder, asked after the rules and before the queue, in the
    /// order added: the first `Some` answers. For replies computed from the
    /// request (a workload whose next step depends on the transcript). Like
    /// a rule's predicate it runs with the mock locked.
    pub fn respond_with(
        &self,
        responder: impl Fn(&RecordedRequest) -> Option<Reply> + Send + Sync + 'static,
    ) {
        self.shared.lock().responders.push(Box::new(responder));
    }

    /// The answer when no rule matches and the queue is empty (by default a
    /// 500 `api_error` "mock has no reply queued").
    pub fn set_fallback(&self, reply: Option<Reply>) {
        self.shared.lock().fallback = reply;
    }

    /// Every request received, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.shared.lock().records.clone()
    }

    /// Blocks until at least `n` requests have arrived; panics after
    /// `timeout`.
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<RecordedRequest> {
        let deadline = Instant::now() + timeout;
        let mut state = self.shared.lock();
        while state.records.len() < n {
            let now = Instant::now();
            if now >= deadline {
                let got = state.records.len();
                drop(state);
                panic!("mock: waited {timeout:?} for {n} requests, got {got}");
            }
            state = self
                .shared
                .arrived
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        state.records.clone()
    }

    /// Refuse prompts longer than `tokens` (None: no limit); see
    /// [`MockConfig::context_window`].
    pub fn set_context_window(&self, tokens: Option<u64>) {
        self.shared.lock().config.context_window = tokens;
    }

    pub fn set_min_cacheable_tokens(&self, n: u64) {
        self.shared.lock().config.min_cacheable_tokens = n;
    }

    pub fn set_openai_min_cached_tokens(&self, n: u64) {
        self.shared.lock().config.openai_min_cached_tokens = n;
    }

    pub fn set_api_key(&self, key: Option<String>) {
        self.shared.lock().config.api_key = key;
    }

    /// Forgets every cache entry (both APIs).
    pub fn clear_cache(&self) {
        let mut state = self.shared.lock();
        state.anthropic_cache.clear();
        state.openai_cache.clear();
    }

    /// Moves the caches' clock forward, e.g. past a 5-minute TTL.
    pub fn advance_cache_clock(&self, by: Duration) {
        let mut state = self.shared.lock();
        state.anthropic_cache.advance(by);
        state.openai_cache.advance(by);
    }
}

impl Drop for MockServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
