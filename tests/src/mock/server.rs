//! The HTTP side: accept loop, per-connection control (resets), routing and
//! the decision for each request.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::cache::{AnthropicWrites, OpenAiWrites, anthropic_blocks, openai_prefixes};
use super::stream::{EventStream, Tail, random_id};
use super::{Api, RecordedRequest, Reply, Shared, State, anthropic, gemini, openai};

const MAX_BODY: usize = 256 << 20;

pub fn run(
    shared: Arc<Shared>,
    listener: std::net::TcpListener,
    shutdown: tokio::sync::oneshot::Receiver<()>,
) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("mock: tokio runtime");
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("mock: listener");
        let mut shutdown = shutdown;
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => {
                    if let Ok((stream, _)) = accepted {
                        tokio::spawn(connection(shared.clone(), stream));
                    }
                }
            }
        }
    });
    // Dropping the runtime cancels every connection task.
    runtime.shutdown_timeout(Duration::from_millis(100));
}

/// Serves one connection; a handler asking for a reset makes it drop the
/// connection with SO_LINGER 0 (the peer sees a TCP reset).
async fn connection(shared: Arc<Shared>, stream: tokio::net::TcpStream) {
    let _ = stream.set_nodelay(true);
    // A duplicate of the socket, kept to set SO_LINGER when resetting.
    let Ok(std_stream) = stream.into_std() else {
        return;
    };
    let dup = std_stream.try_clone().ok();
    let Ok(stream) = tokio::net::TcpStream::from_std(std_stream) else {
        return;
    };
    let kill = Arc::new(Notify::new());
    let for_service = kill.clone();
    let service =
        hyper::service::service_fn(move |req| handle(shared.clone(), for_service.clone(), req));
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = conn => {}
        _ = kill.notified() => {
            if let Some(dup) = &dup {
                let _ = nix::sys::socket::setsockopt(
                    dup,
                    nix::sys::socket::sockopt::Linger,
                    &nix::libc::linger { l_onoff: 1, l_linger: 0 },
                );
            }
        }
    }
    drop(dup);
}

/// What to do with a request, decided under the lock.
enum Action {
    Error {
        api: Api,
        status: u16,
        error_type: Option<String>,
        message: String,
        retry_after: Option<u64>,
    },
    Json(Value),
    /// An error whose body is made here (a code the status does not imply).
    JsonError {
        api: Api,
        status: u16,
        body: Value,
    },
    Reset,
    Stream {
        api: Api,
        stream: EventStream,
        start_delay: Duration,
        gate: Option<super::Gate>,
    },
}

impl Action {
    fn error(api: Api, status: u16, message: impl Into<String>) -> Action {
        Action::Error {
            api,
            status,
            error_type: None,
            message: message.into(),
            retry_after: None,
        }
    }
}

async fn handle(
    shared: Arc<Shared>,
    kill: Arc<Notify>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let received_at = Instant::now();
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().map(str::to_string);
    let api = if path.ends_with("/chat/completions") {
        Api::OpenAi
    } else if path.starts_with("/v1beta/models/") || path.starts_with("/v1/models/") {
        Api::Gemini
    } else {
        Api::Anthropic
    };
    let body = match axum::body::to_bytes(Body::new(body), MAX_BODY).await {
        Ok(b) => b,
        Err(e) => {
            return Ok(error_response(
                api,
                400,
                None,
                &format!("could not read body: {e}"),
                None,
            ));
        }
    };
    let record = RecordedRequest {
        api,
        method: parts.method.as_str().to_string(),
        path,
        query,
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        json: serde_json::from_slice(&body).unwrap_or(Value::Null),
        body: body.to_vec(),
        cache: None,
        output_tokens: None,
        received_at,
        completed_at: None,
        index: 0,
    };
    let action = decide(&shared, record);
    Ok(match action {
        Action::Reset => {
            // The connection task drops the connection; this never answers.
            kill.notify_one();
            return std::future::pending().await;
        }
        Action::Error {
            api,
            status,
            error_type,
            message,
            retry_after,
        } => error_response(api, status, error_type.as_deref(), &message, retry_after),
        Action::Json(v) => json_response(StatusCode::OK, &v, api, &new_request_id(api)),
        Action::JsonError { api, status, body } => {
            let code = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            json_response(code, &body, api, &new_request_id(api))
        }
        Action::Stream {
            api,
            stream,
            start_delay,
            gate,
        } => {
            if let Some(gate) = gate {
                gate.passed().await;
            }
            if !start_delay.is_zero() {
                tokio::time::sleep(start_delay).await;
            }
            let mut resp = Response::new(Body::from_stream(stream.into_stream()));
            let h = resp.headers_mut();
            h.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
            h.insert("cache-control", HeaderValue::from_static("no-cache"));
            add_request_id(h, api, &new_request_id(api));
            resp
        }
    })
}

fn new_request_id(api: Api) -> String {
    match api {
        Api::Anthropic => format!("req_01{}", random_id(22)),
        Api::OpenAi | Api::Gemini => format!("req_{}", random_id(32)),
    }
}

fn add_request_id(h: &mut hyper::HeaderMap, api: Api, id: &str) {
    let name = match api {
        Api::Anthropic => "request-id",
        Api::OpenAi => "x-request-id",
        // Google's API sends no request id.
        Api::Gemini => return,
    };
    if let Ok(v) = HeaderValue::from_str(id) {
        h.insert(name, v);
    }
}

fn json_response(status: StatusCode, v: &Value, api: Api, id: &str) -> Response<Body> {
    let mut resp = Response::new(Body::from(v.to_string()));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    add_request_id(resp.headers_mut(), api, id);
    resp
}

fn error_response(
    api: Api,
    status: u16,
    error_type: Option<&str>,
    message: &str,
    retry_after: Option<u64>,
) -> Response<Body> {
    let code = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let id = new_request_id(api);
    let body = match api {
        Api::Anthropic => {
            let kind = error_type.unwrap_or_else(|| anthropic::error_type(status));
            anthropic::error_body(kind, message, &id)
        }
        Api::OpenAi => openai::error_body(status, message),
        Api::Gemini => gemini::error_body(status, message),
    };
    let mut resp = json_response(code, &body, api, &id);
    if let Some(secs) = retry_after {
        resp.headers_mut()
            .insert("retry-after", HeaderValue::from(secs));
    }
    if api == Api::Anthropic {
        let retry = matches!(status, 408 | 409 | 429) || status >= 500;
        resp.headers_mut().insert(
            "x-should-retry",
            HeaderValue::from_static(if retry { "true" } else { "false" }),
        );
    }
    resp
}

/// Records the request and decides the answer, all under the lock so that
/// indexes, reply order and cache decisions follow arrival order.
fn decide(shared: &Arc<Shared>, mut record: RecordedRequest) -> Action {
    let mut state = shared.lock();
    record.index = state.records.len();
    let action = route(shared, &mut state, &mut record);
    if state.config.log_requests {
        eprintln!(
            "mock-model: #{} {} {}{} -> {}{}",
            record.index,
            record.method,
            record.path,
            record
                .query
                .as_ref()
                .map(|q| format!("?{q}"))
                .unwrap_or_default(),
            describe(&action),
            record
                .cache
                .as_ref()
                .map(|c| format!(
                    " (input {}, cache read {}, cache write {})",
                    c.input, c.read, c.creation
                ))
                .unwrap_or_default(),
        );
    }
    state.records.push(record);
    drop(state);
    shared.arrived.notify_all();
    action
}

fn describe(action: &Action) -> String {
    match action {
        Action::Error {
            status, message, ..
        } => format!("{status} {message}"),
        Action::Json(_) => "200 json".into(),
        Action::JsonError { status, .. } => format!("{status} json error"),
        Action::Reset => "reset".into(),
        Action::Stream { .. } => "200 stream".into(),
    }
}

fn route(shared: &Arc<Shared>, state: &mut State, record: &mut RecordedRequest) -> Action {
    let api = record.api;
    let path = record.path.as_str();
    let known = matches!(
        path,
        "/v1/messages" | "/v1/messages/count_tokens" | "/chat/completions" | "/v1/chat/completions"
    ) || gemini::parse_path(path).is_some();
    if !known {
        let message = format!("Not found: {} {}", record.method, path);
        return Action::error(api, 404, message);
    }
    if record.method != "POST" {
        return Action::error(api, 405, format!("Method {} not allowed", record.method));
    }
    if let Some(denied) = check_auth(state, record) {
        return denied;
    }
    if record.json.is_null() {
        let message = match api {
            Api::Anthropic => "There was an error parsing the body of your request as JSON",
            Api::OpenAi => "We could not parse the JSON body of your request.",
            Api::Gemini => "Invalid JSON payload received.",
        };
        return Action::error(api, 400, message);
    }
    if path != "/v1/messages/count_tokens"
        && let Some(refused) = over_window(state, record)
    {
        return refused;
    }
    match (api, path) {
        (Api::Anthropic, "/v1/messages/count_tokens") => match anthropic_blocks(&record.json) {
            Ok(blocks) => {
                let total: u64 = blocks.iter().map(|b| b.tokens).sum();
                Action::Json(json!({"input_tokens": total}))
            }
            Err(e) => Action::error(api, 400, e),
        },
        (Api::Anthropic, _) => anthropic_request(shared, state, record),
        (Api::OpenAi, _) => openai_request(shared, state, record),
        (Api::Gemini, _) => gemini_request(shared, state, record),
    }
}

/// The refusal of a prompt longer than the configured window, worded and
/// coded as each API words and codes it.
fn over_window(state: &State, record: &RecordedRequest) -> Option<Action> {
    let window = state.config.context_window?;
    let tokens = match record.api {
        Api::Anthropic => anthropic_blocks(&record.json)
            .ok()?
            .iter()
            .map(|b| b.tokens)
            .sum(),
        Api::OpenAi => openai_prefixes(&record.json).last().map(|p| p.1)?,
        Api::Gemini => gemini::prompt_tokens(&record.json),
    };
    if tokens <= window {
        return None;
    }
    Some(match record.api {
        Api::Anthropic => Action::error(
            Api::Anthropic,
            400,
            format!("prompt is too long: {tokens} tokens > {window} maximum"),
        ),
        Api::OpenAi => Action::JsonError {
            api: Api::OpenAi,
            status: 400,
            body: json!({"error": {
                "message": format!("This model's maximum context length is {window} tokens. However, your messages resulted in {tokens} tokens. Please reduce the length of the messages."),
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }}),
        },
        Api::Gemini => Action::error(
            Api::Gemini,
            400,
            format!(
                "The input token count ({tokens}) exceeds the maximum number of tokens allowed ({window})."
            ),
        ),
    })
}

fn check_auth(state: &State, record: &RecordedRequest) -> Option<Action> {
    let expected = state.config.api_key.as_deref();
    match record.api {
        Api::Anthropic => {
            let key = record.header("x-api-key").unwrap_or("");
            if key.is_empty() || expected.is_some_and(|k| k != key) {
                return Some(Action::error(Api::Anthropic, 401, "invalid x-api-key"));
            }
            if record.header("anthropic-version").is_none_or(str::is_empty) {
                return Some(Action::error(
                    Api::Anthropic,
                    400,
                    "anthropic-version: header is required",
                ));
            }
        }
        Api::OpenAi => {
            let auth = record.header("authorization").unwrap_or("");
            let key = auth.strip_prefix("Bearer ").unwrap_or("").trim();
            if key.is_empty() {
                return Some(Action::error(
                    Api::OpenAi,
                    401,
                    "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
                ));
            }
            if expected.is_some_and(|k| k != key) {
                return Some(Action::error(
                    Api::OpenAi,
                    401,
                    "Incorrect API key provided.",
                ));
            }
        }
        Api::Gemini => {
            let key = record.header("x-goog-api-key").unwrap_or("");
            if key.is_empty() {
                return Some(Action::error(
                    Api::Gemini,
                    403,
                    "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.",
                ));
            }
            if expected.is_some_and(|k| k != key) {
                return Some(Action::error(
                    Api::Gemini,
                    400,
                    "API key not valid. Please pass a valid API key.",
                ));
            }
        }
    }
    None
}

/// The reply for a request: the first matching rule, else the first
/// responder's answer, else the queue, else the fallback; `None` when there
/// is none.
fn next_reply(state: &mut State, record: &RecordedRequest) -> Option<Reply> {
    if let Some(rule) = state.rules.iter().find(|r| (r.matches)(record)) {
        return Some(rule.reply.clone());
    }
    if let Some(reply) = state.responders.iter().find_map(|r| r(record)) {
        return Some(reply);
    }
    state.queue.pop_front().or_else(|| state.fallback.clone())
}

fn no_reply(api: Api) -> Action {
    Action::error(api, 500, "mock has no reply queued")
}

/// Turns a non-message reply into its action, or gives back the message
/// and how its stream ends.
enum Planned {
    Done(Action),
    Message {
        message: super::MockMessage,
        stop: Option<(usize, Tail)>,
    },
}

fn plan_reply(api: Api, reply: Reply) -> Planned {
    match reply {
        Reply::Reset => Planned::Done(Action::Reset),
        Reply::Status {
            code,
            message,
            retry_after,
        } => Planned::Done(Action::Error {
            api,
            status: code,
            error_type: None,
            message,
            retry_after,
        }),
        Reply::Message(message) => Planned::Message {
            message,
            stop: None,
        },
        Reply::ErrorEvent {
            message,
            after_events,
            error_type,
            error_message,
        } => {
            let event = match api {
                Api::Anthropic => anthropic::error_event(&error_type, &error_message),
                Api::OpenAi => openai::error_chunk(&error_type, &error_message),
                Api::Gemini => gemini::error_chunk(&error_type, &error_message),
            };
            Planned::Message {
                message,
                stop: Some((after_events, Tail::Error(event))),
            }
        }
        Reply::Cut {
            message,
            after_events,
        } => Planned::Message {
            message,
            stop: Some((after_events, Tail::Cut)),
        },
    }
}

fn anthropic_request(
    shared: &Arc<Shared>,
    state: &mut State,
    record: &mut RecordedRequest,
) -> Action {
    let api = Api::Anthropic;
    let body = &record.json;
    if body.get("stream").and_then(Value::as_bool) != Some(true) {
        return Action::error(
            api,
            400,
            "this mock only serves streaming requests: set \"stream\": true",
        );
    }
    if state.config.validate
        && let Err(e) = anthropic::validate(body)
    {
        return Action::error(api, 400, e);
    }
    let blocks = match anthropic_blocks(body) {
        Ok(b) => b,
        Err(e) => return Action::error(api, 400, e),
    };
    let (usage, writes) = match state
        .anthropic_cache
        .plan(&blocks, state.config.min_cacheable_tokens)
    {
        Ok(p) => p,
        Err(e) => return Action::error(api, 400, e),
    };
    let Some(reply) = next_reply(state, record) else {
        return no_reply(api);
    };
    let (message, stop) = match plan_reply(api, reply) {
        Planned::Done(action) => return action,
        Planned::Message { message, stop } => (message, stop),
    };
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    let events = anthropic::render(&message, model, &usage);
    record.cache = Some(usage.outcome);
    record.output_tokens = Some(anthropic::output_tokens(&message));
    let mut stream = EventStream::new(events, message.event_delay);
    if let Some((n, tail)) = stop {
        stream = stream.stop_after(n, tail);
    }
    stream.on_start = Some(commit_anthropic(shared, writes));
    stream.on_finish = Some(mark_completed(shared, record.index));
    Action::Stream {
        api,
        stream,
        start_delay: message.start_delay,
        gate: message.gate.clone(),
    }
}

fn commit_anthropic(shared: &Arc<Shared>, writes: AnthropicWrites) -> Box<dyn FnOnce() + Send> {
    let shared = shared.clone();
    Box::new(move || shared.lock().anthropic_cache.commit(&writes))
}

fn mark_completed(shared: &Arc<Shared>, index: usize) -> Box<dyn FnOnce() + Send> {
    let shared = shared.clone();
    Box::new(move || {
        let now = Instant::now();
        if let Some(r) = shared.lock().records.get_mut(index) {
            r.completed_at = Some(now);
        }
    })
}

fn commit_openai(shared: &Arc<Shared>, writes: OpenAiWrites) -> Box<dyn FnOnce() + Send> {
    let shared = shared.clone();
    Box::new(move || shared.lock().openai_cache.commit(&writes))
}

fn openai_request(shared: &Arc<Shared>, state: &mut State, record: &mut RecordedRequest) -> Action {
    let api = Api::OpenAi;
    let body = &record.json;
    if body.get("stream").and_then(Value::as_bool) != Some(true) {
        return Action::error(
            api,
            400,
            "this mock only serves streaming requests: set \"stream\": true",
        );
    }
    if state.config.validate
        && let Err(e) = openai::validate(body)
    {
        return Action::error(api, 400, e);
    }
    let prefixes = openai_prefixes(body);
    let (outcome, writes) = state
        .openai_cache
        .plan(&prefixes, state.config.openai_min_cached_tokens);
    let Some(reply) = next_reply(state, record) else {
        return no_reply(api);
    };
    let (message, stop) = match plan_reply(api, reply) {
        Planned::Done(action) => return action,
        Planned::Message { message, stop } => (message, stop),
    };
    let model = body.get("model").and_then(Value::as_str).unwrap_or("");
    let include_usage = body
        .pointer("/stream_options/include_usage")
        .and_then(Value::as_bool)
        == Some(true);
    let usage = openai::Usage {
        prompt_tokens: prefixes.last().map_or(0, |p| p.1),
        cached_tokens: outcome.read,
    };
    let chunks = openai::render(&message, model, include_usage, &usage);
    record.cache = Some(outcome);
    record.output_tokens = Some(message.text_and_call_tokens());
    let mut stream = EventStream::new(chunks, message.event_delay);
    if let Some((n, tail)) = stop {
        stream = stream.stop_after(n, tail);
    }
    stream.on_start = Some(commit_openai(shared, writes));
    stream.on_finish = Some(mark_completed(shared, record.index));
    Action::Stream {
        api,
        stream,
        start_delay: message.start_delay,
        gate: message.gate.clone(),
    }
}

fn gemini_request(shared: &Arc<Shared>, state: &mut State, record: &mut RecordedRequest) -> Action {
    let api = Api::Gemini;
    let Some((model, method)) = gemini::parse_path(&record.path) else {
        return Action::error(api, 404, "no such method");
    };
    let model = model.to_string();
    if method == gemini::Method::Stream
        && !record
            .query
            .as_deref()
            .is_some_and(|q| q.split('&').any(|p| p == "alt=sse"))
    {
        return Action::error(
            api,
            400,
            "this mock serves streamGenerateContent as server-sent events only: add ?alt=sse",
        );
    }
    if state.config.validate
        && let Err(e) = gemini::validate(&record.json)
    {
        return Action::error(api, 400, e);
    }
    let prompt_tokens = gemini::prompt_tokens(&record.json);
    let Some(reply) = next_reply(state, record) else {
        return no_reply(api);
    };
    let (message, stop) = match plan_reply(api, reply) {
        Planned::Done(action) => return action,
        Planned::Message { message, stop } => (message, stop),
    };
    record.output_tokens = Some(message.text_and_call_tokens());
    if method == gemini::Method::Unary {
        return Action::Json(gemini::render_unary(&message, &model, prompt_tokens));
    }
    let events = gemini::render_stream(&message, &model, prompt_tokens);
    let mut stream = EventStream::new(events, message.event_delay);
    if let Some((n, tail)) = stop {
        stream = stream.stop_after(n, tail);
    }
    stream.on_finish = Some(mark_completed(shared, record.index));
    Action::Stream {
        api,
        stream,
        start_delay: message.start_delay,
        gate: message.gate.clone(),
    }
}
