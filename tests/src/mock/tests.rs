//! The mock over real HTTP, with reqwest.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::*;

const KEY: &str = "sk-test";

fn client() -> reqwest::Client {
    reqwest::Client::new()
}

async fn anthropic(mock: &MockServer, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/v1/messages", mock.url()))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap()
}

async fn openai(mock: &MockServer, path: &str, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}{path}", mock.url()))
        .bearer_auth(KEY)
        .json(body)
        .send()
        .await
        .unwrap()
}

/// (event name, data) of every SSE event in a complete body.
fn parse_sse(text: &str) -> Vec<(String, Value)> {
    assert!(
        text.ends_with("\n\n"),
        "events end with a blank line: {text:?}"
    );
    text.split_terminator("\n\n")
        .map(|event| {
            let mut lines = event.lines();
            let name = lines.next().unwrap().strip_prefix("event: ").unwrap();
            let data = lines.next().unwrap().strip_prefix("data: ").unwrap();
            assert!(lines.next().is_none());
            (name.to_string(), serde_json::from_str(data).unwrap())
        })
        .collect()
}

async fn events(resp: reqwest::Response) -> Vec<(String, Value)> {
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    parse_sse(&resp.text().await.unwrap())
}

/// The `data:` payloads of an OpenAI stream.
async fn chunks(resp: reqwest::Response) -> Vec<String> {
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    assert!(text.ends_with("\n\n"));
    text.split_terminator("\n\n")
        .map(|c| c.strip_prefix("data: ").unwrap().to_string())
        .collect()
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

fn request(messages: Vec<Value>) -> Value {
    json!({"model": "claude-test", "max_tokens": 1000, "stream": true, "messages": messages})
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(n, _)| n.as_str()).collect()
}

#[tokio::test]
async fn anthropic_event_order_and_reassembly() {
    let mock = MockServer::start();
    let input = json!({"command": "echo \"hi there\"\nls -la | grep 'x'", "timeout": 30, "flags": ["a", "b"]});
    let text = "Let me list the files in this directory, then read them.";
    mock.enqueue(MockMessage::text(text).with(Block::tool("toolu_1", "Bash", input.clone())));
    let evs = events(anthropic(&mock, &request(vec![user("hi")])).await).await;
    let n = names(&evs);
    assert_eq!(n[0], "message_start");
    assert_eq!(n[1], "ping");
    assert_eq!(&n[n.len() - 2..], ["message_delta", "message_stop"]);
    for (name, data) in &evs {
        assert_eq!(data["type"], name.as_str());
    }
    let start = &evs[0].1["message"];
    assert!(start["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(start["model"], "claude-test");
    assert_eq!(start["content"], json!([]));
    assert_eq!(start["stop_reason"], Value::Null);
    for k in [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
    ] {
        assert!(start["usage"][k].is_u64(), "{k}");
    }
    assert_eq!(start["usage"]["output_tokens"], 1);

    // Blocks: start, deltas, stop, with matching indexes, in order.
    let mut text_out = String::new();
    let mut json_out = String::new();
    let mut json_deltas = 0;
    let mut open: Option<u64> = None;
    let mut starts = Vec::new();
    for (name, data) in &evs {
        match name.as_str() {
            "content_block_start" => {
                assert!(open.is_none());
                open = data["index"].as_u64();
                starts.push(data["content_block"].clone());
            }
            "content_block_delta" => {
                assert_eq!(data["index"].as_u64(), open);
                let d = &data["delta"];
                match d["type"].as_str().unwrap() {
                    "text_delta" => text_out.push_str(d["text"].as_str().unwrap()),
                    "input_json_delta" => {
                        json_deltas += 1;
                        json_out.push_str(d["partial_json"].as_str().unwrap());
                    }
                    other => panic!("delta {other}"),
                }
            }
            "content_block_stop" => {
                assert_eq!(data["index"].as_u64(), open);
                open = None;
            }
            _ => assert!(open.is_none(), "{name} inside a block"),
        }
    }
    assert_eq!(
        starts,
        vec![
            json!({"type": "text", "text": ""}),
            json!({"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {}}),
        ]
    );
    assert_eq!(text_out, text);
    assert!(n.iter().filter(|n| **n == "content_block_delta").count() > 5);
    assert!(json_deltas >= 10, "{json_deltas} json deltas");
    assert_eq!(serde_json::from_str::<Value>(&json_out).unwrap(), input);

    let delta = &evs[evs.len() - 2].1;
    assert_eq!(
        delta["delta"],
        json!({"stop_reason": "tool_use", "stop_sequence": null})
    );
    let expected_out = (text.len() + "Bash".len() + input.to_string().len()).div_ceil(4);
    assert_eq!(delta["usage"]["output_tokens"], expected_out as u64);
}

#[tokio::test]
async fn thinking_redacted_pings_and_stop_reason() {
    let mock = MockServer::start();
    mock.enqueue(
        MockMessage::new()
            .with(Block::thinking(
                "I should think about this carefully.",
                "c2lnbmF0dXJl",
            ))
            .with(Block::RedactedThinking {
                data: "EmwKAhgBEgy".into(),
            })
            .with(Block::text("Answer."))
            .with(Block::text("More."))
            .stop_reason("max_tokens"),
    );
    let evs = events(anthropic(&mock, &request(vec![user("hi")])).await).await;
    let n = names(&evs);
    assert!(n.iter().filter(|n| **n == "ping").count() >= 2, "{n:?}");
    let thinking: String = evs
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "thinking_delta")
        .map(|(_, d)| d["delta"]["thinking"].as_str().unwrap())
        .collect();
    assert_eq!(thinking, "I should think about this carefully.");
    let sig: Vec<&Value> = evs
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "signature_delta")
        .map(|(_, d)| &d["delta"]["signature"])
        .collect();
    assert_eq!(sig, vec!["c2lnbmF0dXJl"]);
    // The signature comes last in the thinking block.
    let stop0 = evs
        .iter()
        .position(|(n, d)| n == "content_block_stop" && d["index"] == 0)
        .unwrap();
    assert_eq!(evs[stop0 - 1].1["delta"]["type"], "signature_delta");
    // Redacted thinking: start and stop, no deltas.
    let i = evs
        .iter()
        .position(|(n, d)| n == "content_block_start" && d["index"] == 1)
        .unwrap();
    assert_eq!(
        evs[i].1["content_block"],
        json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy"})
    );
    assert_eq!(evs[i + 1].0, "content_block_stop");
    assert_eq!(evs[evs.len() - 2].1["delta"]["stop_reason"], "max_tokens");
}

#[tokio::test]
async fn auth_and_request_checks() {
    let mock = MockServer::start_with(MockConfig {
        api_key: Some(KEY.into()),
        ..MockConfig::default()
    });
    mock.enqueue(Reply::text("ok"));
    let url = format!("{}/v1/messages", mock.url());
    let body = request(vec![user("hi")]).to_string();

    let resp = client()
        .post(&url)
        .header("anthropic-version", "2023-06-01")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(
        v["error"],
        json!({"type": "authentication_error", "message": "invalid x-api-key"})
    );

    let resp = client()
        .post(&url)
        .header("x-api-key", "sk-other")
        .header("anthropic-version", "2023-06-01")
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);

    let resp = client()
        .post(&url)
        .header("x-api-key", KEY)
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 400);

    let mut not_streaming = request(vec![user("hi")]);
    not_streaming["stream"] = json!(false);
    let resp = anthropic(&mock, &not_streaming).await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");

    // A dangling tool_use is refused and does not use up the queued reply.
    let dangling = request(vec![
        user("hi"),
        json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_9", "name": "Bash", "input": {}}]}),
        user("and?"),
    ]);
    let resp = anthropic(&mock, &dangling).await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert!(v["error"]["message"].as_str().unwrap().contains("toolu_9"));
    assert_eq!(mock.queued(), 1);

    let evs = events(anthropic(&mock, &request(vec![user("hi")])).await).await;
    assert_eq!(evs.last().unwrap().0, "message_stop");
    assert_eq!(mock.requests().len(), 6);
    assert!(mock.requests()[..5].iter().all(|r| r.cache.is_none()));
    assert!(mock.requests()[5].cache.is_some());
}

#[tokio::test]
async fn status_replies_and_no_reply() {
    let mock = MockServer::start();
    mock.enqueue(Reply::rate_limited(7));
    mock.enqueue(Reply::overloaded());
    mock.enqueue(Reply::status(418, "teapot"));
    let body = request(vec![user("hi")]);

    let resp = anthropic(&mock, &body).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "7");
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["type"], "error");
    assert_eq!(v["error"]["type"], "rate_limit_error");

    let resp = anthropic(&mock, &body).await;
    assert_eq!(resp.status(), 529);
    assert!(resp.headers().get("retry-after").is_none());
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v["error"],
        json!({"type": "overloaded_error", "message": "Overloaded"})
    );

    let resp = anthropic(&mock, &body).await;
    assert_eq!(resp.status(), 418);

    let resp = anthropic(&mock, &body).await;
    assert_eq!(resp.status(), 500);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(
        v["error"],
        json!({"type": "api_error", "message": "mock has no reply queued"})
    );
}

#[tokio::test]
async fn cut_error_event_and_reset() {
    let mock = MockServer::start();
    let long = "A long answer that is streamed in many small pieces. ".repeat(3);
    mock.enqueue(Reply::Cut {
        message: MockMessage::text(long.clone()),
        after_events: 5,
    });
    mock.enqueue(Reply::ErrorEvent {
        message: MockMessage::text(long.clone()),
        after_events: 4,
        error_type: "overloaded_error".into(),
        error_message: "Overloaded".into(),
    });
    mock.enqueue(Reply::Reset);
    mock.enqueue(Reply::text("after the reset"));
    let body = request(vec![user("hi")]);

    // Cut: five complete events arrive, then the body fails.
    let mut resp = anthropic(&mock, &body).await;
    assert_eq!(resp.status(), 200);
    let mut got = Vec::new();
    let err = loop {
        match resp.chunk().await {
            Ok(Some(c)) => got.extend_from_slice(&c),
            Ok(None) => panic!("cut stream ended cleanly"),
            Err(e) => break e,
        }
    };
    assert!(err.is_body() || err.is_decode(), "{err:?}");
    let evs = parse_sse(std::str::from_utf8(&got).unwrap());
    assert_eq!(evs.len(), 5);
    assert_eq!(evs[4].0, "content_block_delta");
    assert!(!names(&evs).contains(&"message_stop"));

    // Error event: four events, then `event: error`, then a clean end.
    let evs = events(anthropic(&mock, &body).await).await;
    assert_eq!(evs.len(), 5);
    assert_eq!(evs[4].0, "error");
    assert_eq!(
        evs[4].1,
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    );

    // Reset: no HTTP response at all.
    let err = client()
        .post(format!("{}/v1/messages", mock.url()))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .body(body.to_string())
        .send()
        .await
        .unwrap_err();
    assert!(err.is_request() || err.is_connect(), "{err:?}");

    let evs = events(anthropic(&mock, &body).await).await;
    assert_eq!(evs.last().unwrap().0, "message_stop");
    assert_eq!(mock.requests().len(), 4);
}

#[tokio::test]
async fn slow_streams_are_slow() {
    let mock = MockServer::start();
    mock.enqueue(
        MockMessage::text("abc")
            .slow(Duration::from_millis(40))
            .delay_start(Duration::from_millis(100)),
    );
    let t = Instant::now();
    let evs = events(anthropic(&mock, &request(vec![user("hi")])).await).await;
    // 7 events: message_start, ping, start, delta, stop, message_delta, message_stop.
    assert_eq!(evs.len(), 7);
    assert!(
        t.elapsed() >= Duration::from_millis(100 + 6 * 40),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test]
async fn rules_before_queue() {
    let mock = MockServer::start();
    mock.enqueue(Reply::text("first"));
    mock.enqueue(Reply::text("second"));
    mock.when(|r| r.body_contains("special"), Reply::text("by rule"));
    mock.when(|_| false, Reply::text("never"));
    let text_of = |evs: Vec<(String, Value)>| -> String {
        evs.iter()
            .filter(|(_, d)| d["delta"]["type"] == "text_delta")
            .map(|(_, d)| d["delta"]["text"].as_str().unwrap().to_string())
            .collect()
    };
    let plain = request(vec![user("hi")]);
    let special = request(vec![user("special")]);
    assert_eq!(
        text_of(events(anthropic(&mock, &plain).await).await),
        "first"
    );
    assert_eq!(
        text_of(events(anthropic(&mock, &special).await).await),
        "by rule"
    );
    assert_eq!(
        text_of(events(anthropic(&mock, &special).await).await),
        "by rule"
    );
    assert_eq!(
        text_of(events(anthropic(&mock, &plain).await).await),
        "second"
    );
    let reqs = mock.requests();
    assert_eq!(
        reqs.iter().map(|r| r.index).collect::<Vec<_>>(),
        [0, 1, 2, 3]
    );
    assert!(
        reqs.windows(2)
            .all(|w| w[0].received_at <= w[1].received_at)
    );
    assert_eq!(reqs[1].json["messages"][0]["content"][0]["text"], "special");
}

#[tokio::test]
async fn records_exact_bytes_and_headers() {
    let mock = MockServer::start();
    mock.enqueue(Reply::text("ok"));
    let raw = "{ \"stream\":true,\"model\" : \"claude-test\",\n \"max_tokens\":5,\"messages\":[{\"role\":\"user\",\"content\":\"h\\u00e9\"}] }";
    let resp = client()
        .post(format!("{}/v1/messages", mock.url()))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .header("X-Custom", "Value")
        .body(raw)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.bytes().await.unwrap();
    let reqs = mock.wait_for_requests(1, Duration::from_secs(1));
    let r = &reqs[0];
    assert_eq!(r.body, raw.as_bytes());
    assert_eq!(r.json["messages"][0]["content"], "hé");
    assert_eq!(r.api, Api::Anthropic);
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/v1/messages");
    assert_eq!(r.header("x-custom"), Some("Value"));
    assert_eq!(r.header("X-API-KEY"), Some(KEY));
    assert_eq!(r.model(), Some("claude-test"));
}

/// Claude Code calls `/v1/messages?beta=true` and probes the base URL with
/// `HEAD /` at start: the first is served as `/v1/messages` with its query
/// recorded, the second gets a 404 and is recorded too.
#[tokio::test]
async fn a_query_string_is_recorded_and_does_not_change_the_route() {
    let mock = MockServer::start();
    mock.enqueue(Reply::text("ok"));
    let resp = client()
        .post(format!("{}/v1/messages?beta=true", mock.url()))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .json(&request(vec![user("hi")]))
        .send()
        .await
        .unwrap();
    let evs = events(resp).await;
    assert_eq!(evs.last().unwrap().0, "message_stop");
    let resp = client().head(mock.url()).send().await.unwrap();
    assert_eq!(resp.status(), 404);
    let count = client()
        .post(format!("{}/v1/messages/count_tokens?beta=true", mock.url()))
        .header("x-api-key", KEY)
        .header("anthropic-version", "2023-06-01")
        .json(&json!({"model": "claude-test", "messages": [user("hi")]}))
        .send()
        .await
        .unwrap();
    assert_eq!(count.status(), 200);
    let reqs = mock.requests();
    let seen: Vec<_> = reqs
        .iter()
        .map(|r| (r.method.as_str(), r.path.as_str(), r.query.as_deref()))
        .collect();
    assert_eq!(
        seen,
        [
            ("POST", "/v1/messages", Some("beta=true")),
            ("HEAD", "/", None),
            ("POST", "/v1/messages/count_tokens", Some("beta=true")),
        ]
    );
    assert!(reqs[0].cache.is_some(), "the message was streamed");
}

#[test]
#[should_panic(expected = "got 0")]
fn wait_for_requests_times_out() {
    let mock = MockServer::start();
    mock.wait_for_requests(1, Duration::from_millis(50));
}

/// A system prompt of `n` text blocks of 100 tokens each, with
/// `cache_control` on the blocks in `marks`.
fn cached_request(n: usize, marks: &[usize], first: &str) -> Value {
    let system: Vec<Value> = (0..n)
        .map(|i| {
            let tag = if i == 0 {
                first.to_string()
            } else {
                format!("block {i}")
            };
            let base = json!({"type": "text", "text": tag}).to_string().len();
            let mut b = json!({"type": "text", "text": format!("{tag}{}", ".".repeat(400 - base))});
            if marks.contains(&i) {
                b["cache_control"] = json!({"type": "ephemeral"});
            }
            b
        })
        .collect();
    json!({
        "model": "claude-test",
        "max_tokens": 1000,
        "stream": true,
        "system": system,
        "messages": [{"role": "user", "content": "hi"}],
    })
}

fn usage(evs: &[(String, Value)]) -> (u64, u64, u64) {
    let u = &evs[0].1["message"]["usage"];
    (
        u["input_tokens"].as_u64().unwrap(),
        u["cache_creation_input_tokens"].as_u64().unwrap(),
        u["cache_read_input_tokens"].as_u64().unwrap(),
    )
}

#[tokio::test]
async fn prompt_caching_over_http() {
    let mock = MockServer::start();
    mock.set_fallback(Some(Reply::text("ok")));
    mock.set_min_cacheable_tokens(250);
    // "hi" as one text block: {"type":"text","text":"hi"} is 26 bytes, 7 tokens.
    let tail = 7;

    // Breakpoint at block 1 (200 tokens): below the minimum, nothing written.
    let evs = events(anthropic(&mock, &cached_request(6, &[1], "block 0")).await).await;
    assert_eq!(usage(&evs), (600 + tail, 0, 0));

    // Breakpoint at block 2 (300 tokens): written.
    let evs = events(anthropic(&mock, &cached_request(6, &[2], "block 0")).await).await;
    assert_eq!(usage(&evs), (300 + tail, 300, 0));

    // Breakpoint moved to block 4: reads the 300, writes 200 more.
    let evs = events(anthropic(&mock, &cached_request(6, &[4], "block 0")).await).await;
    assert_eq!(usage(&evs), (100 + tail, 200, 300));

    // Same again: reads all 500.
    let evs = events(anthropic(&mock, &cached_request(6, &[4], "block 0")).await).await;
    assert_eq!(usage(&evs), (100 + tail, 0, 500));

    // One byte changed in the first block: nothing matches.
    let evs = events(anthropic(&mock, &cached_request(6, &[4], "block 0!")).await).await;
    assert_eq!(usage(&evs), (100 + tail, 500, 0));

    // Five breakpoints: refused, nothing recorded as served.
    let resp = anthropic(&mock, &cached_request(6, &[0, 1, 2, 3, 4], "block 0")).await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert!(v["error"]["message"].as_str().unwrap().contains("Found 5"));

    let reqs = mock.requests();
    assert_eq!(
        reqs[2].cache,
        Some(CacheOutcome {
            read: 300,
            creation: 200,
            input: 100 + tail,
            hit_block: Some(2),
            breakpoints: vec![4]
        })
    );
    assert_eq!(reqs[5].cache, None);
}

#[tokio::test]
async fn lookback_over_http() {
    let mock = MockServer::start();
    mock.set_fallback(Some(Reply::text("ok")));
    mock.set_min_cacheable_tokens(0);
    events(anthropic(&mock, &cached_request(30, &[3], "block 0")).await).await;
    let evs = events(anthropic(&mock, &cached_request(30, &[24], "block 0")).await).await;
    assert_eq!(usage(&evs).2, 0, "21 blocks back is out of reach");
    mock.clear_cache();
    events(anthropic(&mock, &cached_request(30, &[3], "block 0")).await).await;
    let evs = events(anthropic(&mock, &cached_request(30, &[23], "block 0")).await).await;
    assert_eq!(usage(&evs).2, 400, "20 blocks back is found");
}

#[tokio::test]
async fn entries_readable_only_once_the_writer_started() {
    let mock = MockServer::start();
    mock.set_min_cacheable_tokens(0);
    mock.enqueue(MockMessage::text("slow").delay_start(Duration::from_millis(500)));
    mock.enqueue(Reply::text("fast"));
    mock.enqueue(Reply::text("later"));
    let body = cached_request(4, &[3], "block 0");

    let slow = {
        let url = mock.url();
        let body = body.clone();
        tokio::spawn(async move {
            client()
                .post(format!("{url}/v1/messages"))
                .header("x-api-key", KEY)
                .header("anthropic-version", "2023-06-01")
                .body(body.to_string())
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    let evs = events(anthropic(&mock, &body).await).await;
    assert_eq!(usage(&evs).2, 0, "the slow writer has not started");
    assert_eq!(usage(&evs).1, 400);

    let slow_evs = parse_sse(&slow.await.unwrap());
    assert_eq!(usage(&slow_evs).1, 400);
    let evs = events(anthropic(&mock, &body).await).await;
    assert_eq!(usage(&evs).2, 400);
}

#[tokio::test]
async fn failed_requests_write_nothing() {
    let mock = MockServer::start();
    mock.set_min_cacheable_tokens(0);
    mock.enqueue(Reply::overloaded());
    mock.enqueue(Reply::text("a"));
    mock.enqueue(Reply::text("b"));
    let body = cached_request(2, &[1], "block 0");
    assert_eq!(anthropic(&mock, &body).await.status(), 529);
    let evs = events(anthropic(&mock, &body).await).await;
    assert_eq!(usage(&evs), (7, 200, 0));
    let evs = events(anthropic(&mock, &body).await).await;
    assert_eq!(usage(&evs), (7, 0, 200));
    mock.advance_cache_clock(Duration::from_secs(301));
    mock.enqueue(Reply::text("c"));
    let evs = events(anthropic(&mock, &body).await).await;
    assert_eq!(usage(&evs), (7, 200, 0), "expired after five minutes");
}

fn openai_request(messages: Value) -> Value {
    json!({
        "model": "gpt-test",
        "stream": true,
        "stream_options": {"include_usage": true},
        "tools": [{"type": "function", "function": {"name": "Bash", "description": "run", "parameters": {"type": "object"}}}],
        "messages": messages,
    })
}

#[tokio::test]
async fn openai_stream_format() {
    let mock = MockServer::start();
    let input = json!({"command": "cat \"a b\"", "n": 1});
    mock.enqueue(
        MockMessage::text("Looking at it now.")
            .with(Block::thinking("hidden", "sig"))
            .with(Block::tool("call_1", "Bash", input.clone()))
            .with(Block::tool("", "Read", json!({"path": "x"}))),
    );
    let body = openai_request(
        json!([{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]),
    );
    let chunks = chunks(openai(&mock, "/v1/chat/completions", &body).await).await;
    assert_eq!(chunks.last().unwrap(), "[DONE]");
    let parsed: Vec<Value> = chunks[..chunks.len() - 1]
        .iter()
        .map(|c| serde_json::from_str(c).unwrap())
        .collect();
    let id = parsed[0]["id"].as_str().unwrap();
    assert!(id.starts_with("chatcmpl-"));
    for c in &parsed {
        assert_eq!(c["object"], "chat.completion.chunk");
        assert_eq!(c["id"], id);
        assert_eq!(c["model"], "gpt-test");
        assert!(c["created"].is_u64());
    }
    let first = &parsed[0]["choices"][0];
    assert_eq!(first["index"], 0);
    assert_eq!(first["delta"]["role"], "assistant");
    assert_eq!(first["delta"]["content"], "");

    let choice_chunks = &parsed[..parsed.len() - 1];
    let content: String = choice_chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(content, "Looking at it now.");
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut fragments = 0;
    for c in choice_chunks {
        assert_eq!(c["usage"], Value::Null);
        for tc in c["choices"][0]["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let i = tc["index"].as_u64().unwrap() as usize;
            if let Some(id) = tc["id"].as_str() {
                assert_eq!(i, calls.len());
                assert_eq!(tc["type"], "function");
                assert_eq!(tc["function"]["arguments"], "");
                calls.push((
                    id.into(),
                    tc["function"]["name"].as_str().unwrap().into(),
                    String::new(),
                ));
            } else {
                assert!(tc.get("id").is_none() && tc["function"].get("name").is_none());
                fragments += 1;
                calls[i]
                    .2
                    .push_str(tc["function"]["arguments"].as_str().unwrap());
            }
        }
    }
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].0, "call_1");
    assert!(calls[1].0.starts_with("call_"));
    assert_eq!((calls[0].1.as_str(), calls[1].1.as_str()), ("Bash", "Read"));
    assert_eq!(serde_json::from_str::<Value>(&calls[0].2).unwrap(), input);
    assert_eq!(
        serde_json::from_str::<Value>(&calls[1].2).unwrap(),
        json!({"path": "x"})
    );
    assert!(fragments >= 6);
    for c in &choice_chunks[..choice_chunks.len() - 1] {
        assert_eq!(c["choices"][0]["finish_reason"], Value::Null);
    }
    assert_eq!(
        choice_chunks.last().unwrap()["choices"][0]["finish_reason"],
        "tool_calls"
    );
    let usage = parsed.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    let u = &usage["usage"];
    assert_eq!(
        u["total_tokens"].as_u64().unwrap(),
        u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap()
    );
    assert_eq!(u["prompt_tokens_details"]["cached_tokens"], 0);
    assert!(!chunks.iter().any(|c| c.contains("hidden")));
}

#[tokio::test]
async fn openai_cached_tokens_and_paths() {
    let mock = MockServer::start();
    mock.set_fallback(Some(Reply::text("ok")));
    mock.set_openai_min_cached_tokens(100);
    let long = "You are a careful assistant. ".repeat(40);
    let first = openai_request(
        json!([{"role": "system", "content": long}, {"role": "user", "content": "hi"}]),
    );
    let second = openai_request(json!([
        {"role": "system", "content": long},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "file.txt"},
    ]));
    let usage_of = |chunks: &[String]| -> Value {
        let v: Value = serde_json::from_str(&chunks[chunks.len() - 2]).unwrap();
        v["usage"].clone()
    };
    let c1 = chunks(openai(&mock, "/chat/completions", &first).await).await;
    assert_eq!(usage_of(&c1)["prompt_tokens_details"]["cached_tokens"], 0);
    let c2 = chunks(openai(&mock, "/v1/chat/completions", &second).await).await;
    let u1 = usage_of(&c1);
    let u2 = usage_of(&c2);
    assert_eq!(
        u2["prompt_tokens_details"]["cached_tokens"],
        u1["prompt_tokens"]
    );
    let reqs = mock.requests();
    assert_eq!(reqs[1].api, Api::OpenAi);
    assert_eq!(reqs[1].cache.as_ref().unwrap().hit_block, Some(1));

    // Without include_usage: no usage chunk, no usage field.
    let mut plain = first.clone();
    plain.as_object_mut().unwrap().remove("stream_options");
    let c3 = chunks(openai(&mock, "/chat/completions", &plain).await).await;
    assert!(c3.iter().all(|c| !c.contains("usage")));
    assert_eq!(c3.last().unwrap(), "[DONE]");
}

#[tokio::test]
async fn openai_errors() {
    let mock = MockServer::start();
    let body = openai_request(json!([{"role": "user", "content": "hi"}]));
    let resp = client()
        .post(format!("{}/v1/chat/completions", mock.url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    assert_eq!(v["error"]["code"], "invalid_api_key");
    assert_eq!(v["error"]["param"], Value::Null);

    mock.enqueue(Reply::rate_limited(2));
    let resp = openai(&mock, "/v1/chat/completions", &body).await;
    assert_eq!(resp.status(), 429);
    assert_eq!(resp.headers()["retry-after"], "2");
    let v: Value = resp.json().await.unwrap();
    assert!(v["error"]["message"].is_string());

    mock.enqueue(Reply::ErrorEvent {
        message: MockMessage::text("partial answer"),
        after_events: 2,
        error_type: "server_error".into(),
        error_message: "boom".into(),
    });
    let c = chunks(openai(&mock, "/v1/chat/completions", &body).await).await;
    assert_eq!(c.len(), 3);
    let err: Value = serde_json::from_str(&c[2]).unwrap();
    assert_eq!(err["error"]["message"], "boom");
    assert!(!c.contains(&"[DONE]".to_string()));

    mock.enqueue(Reply::Cut {
        message: MockMessage::text("partial answer"),
        after_events: 2,
    });
    let resp = openai(&mock, "/v1/chat/completions", &body).await;
    assert!(resp.text().await.is_err());

    // Tool message without a preceding call.
    let bad = openai_request(
        json!([{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "x", "content": "y"}]),
    );
    let resp = openai(&mock, "/v1/chat/completions", &bad).await;
    assert_eq!(resp.status(), 400);
}

#[test]
fn sync_use_with_threads() {
    // Plain #[test] usage, as end-to-end tests do: requests from another
    // thread, waiting on the main one.
    let mock = MockServer::start();
    mock.enqueue(Reply::text("hi"));
    let url = mock.url();
    let t = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            client()
                .post(format!("{url}/v1/messages"))
                .header("x-api-key", KEY)
                .header("anthropic-version", "2023-06-01")
                .body(request(vec![user("hi")]).to_string())
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
    });
    let reqs = mock.wait_for_requests(1, Duration::from_secs(5));
    assert_eq!(reqs.len(), 1);
    assert!(t.join().unwrap().contains("message_stop"));
}

#[tokio::test]
async fn a_prompt_over_the_window_is_refused_as_each_api_refuses_it() {
    let mock = MockServer::start();
    mock.enqueue(MockMessage::text("fits"));
    mock.set_context_window(Some(200));
    // The mock counts a quarter of the bytes: 2,000 bytes are 500 tokens.
    let long = "x".repeat(2000);

    let resp = anthropic(&mock, &request(vec![user(&long)])).await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["type"], "invalid_request_error");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with("prompt is too long: ") && message.ends_with(" tokens > 200 maximum"),
        "{message}"
    );

    let resp = openai(
        &mock,
        "/v1/chat/completions",
        &openai_request(json!([{"role": "user", "content": long}])),
    )
    .await;
    assert_eq!(resp.status(), 400);
    let v: Value = resp.json().await.unwrap();
    assert_eq!(v["error"]["code"], "context_length_exceeded");
    assert_eq!(v["error"]["type"], "invalid_request_error");

    // A prompt inside the window is answered, and the refusals used up no
    // queued reply.
    let resp = anthropic(&mock, &request(vec![user("short")])).await;
    assert_eq!(resp.status(), 200);
    mock.set_context_window(None);
}
