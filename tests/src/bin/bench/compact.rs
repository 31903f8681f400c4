//! `bench compact` (DESIGN §17): one agent works through numbered steps
//! whose tool outputs add up to several times its model's context window
//! (the mock enforces the window and simulates Anthropic's prompt cache).
//! Measured: that it finishes with every step run once; the input tokens
//! billed at full price (uncached and cache writes) against the minimum
//! (every distinct token sent once); the cache read on each summary
//! request as a share of its prefix; the daemon's turnaround after a
//! summary (the boundary written durably, the next request built) against
//! its turnaround after an ordinary tool round in the same run.

use std::collections::HashSet;
use std::time::Duration;

use agentd_e2e::Env;
use agentd_e2e::compacting::{FINISHED, is_summary_request, steps_run, steps_workload};
use agentd_e2e::mock::{MODEL, MockServer, RecordedRequest};
use serde_json::Value;

use super::{arg, ms, percentile};

/// Tokens of bytes, as the mock and the daemon count them.
fn tokens(bytes: usize) -> u64 {
    bytes.div_ceil(4) as u64
}

/// A message without the breakpoint markers a request adds to it.
fn plain(message: &Value) -> String {
    message
        .to_string()
        .replace(r#","cache_control":{"type":"ephemeral"}"#, "")
}

pub fn bench_compact(args: &[String]) {
    let window: u64 = arg(args, "--window", "20000").parse().unwrap();
    let step_bytes: usize = arg(args, "--step-bytes", "1200").parse().unwrap();
    let times: u64 = arg(args, "--times", "5").parse().unwrap();
    let steps = (times * window * 4).div_ceil(step_bytes as u64) as u32;
    let mock = MockServer::start();
    mock.set_context_window(Some(window));
    mock.set_min_cacheable_tokens(1024);
    steps_workload(&mock, steps, step_bytes, Duration::ZERO);
    let env = Env::with_mock(&mock);
    env.write_config(&format!(
        "max_turns = {}\n[models.\"{MODEL}\"]\ncontext_window = {window}\n",
        steps + 10
    ));
    let _daemon = env.start_daemon();
    let started = std::time::Instant::now();
    let id = env.run_background(MODEL, "long", "run every step");
    let agent = env.wait_for_agent(&id, "ended", |a| {
        matches!(a["status"].as_str(), Some("completed" | "failed"))
    });
    let elapsed = started.elapsed();
    assert_eq!(agent["result"], FINISHED, "{agent}");
    let run = steps_run(&env.project());
    let once = run == (1..=steps).collect::<Vec<_>>();

    let requests = mock.requests();
    let served: Vec<&RecordedRequest> = requests.iter().filter(|r| r.cache.is_some()).collect();
    let refused = requests.len() - served.len();
    // Full-price input billed, and the minimum: each distinct token once.
    let mut seen: HashSet<String> = HashSet::new();
    let (mut full_price, mut read, mut minimum) = (0u64, 0u64, 0u64);
    for (i, r) in served.iter().enumerate() {
        let c = r.cache.as_ref().unwrap();
        full_price += c.input + c.creation;
        read += c.read;
        if i == 0 {
            minimum +=
                tokens(r.json["system"].to_string().len() + r.json["tools"].to_string().len());
        }
        for m in r.messages() {
            let m = plain(m);
            if seen.insert(m.clone()) {
                minimum += tokens(m.len());
            }
        }
    }
    // Cache read on summary requests, as a share of their prefix (all but
    // the ask, which is new by nature).
    let mut shares: Vec<f64> = served
        .iter()
        .filter(|r| is_summary_request(r))
        .map(|r| {
            let c = r.cache.as_ref().unwrap();
            let total = c.input + c.creation + c.read;
            let ask = r
                .messages()
                .last()
                .and_then(|m| m["content"].as_array())
                .and_then(|b| b.last())
                .map_or(0, |b| tokens(b.to_string().len()));
            c.read as f64 / (total.saturating_sub(ask)).max(1) as f64
        })
        .collect();
    shares.sort_by(f64::total_cmp);
    // Turnaround: from a response's end to the next request's arrival.
    let (mut after_summary, mut after_round) = (Vec::new(), Vec::new());
    for pair in served.windows(2) {
        let (Some(done), next) = (pair[0].completed_at, pair[1]) else {
            continue;
        };
        let gap = next.received_at.saturating_duration_since(done);
        if is_summary_request(pair[0]) {
            after_summary.push(gap);
        } else if !is_summary_request(next) {
            after_round.push(gap);
        }
    }
    after_summary.sort();
    after_round.sort();
    let shown = env.show(&id);
    println!(
        "bench compact: window {window} tokens, {steps} steps of {step_bytes} bytes (tool output {:.1}× the window), {:.1} s",
        (steps as u64 * step_bytes as u64) as f64 / 4.0 / window as f64,
        elapsed.as_secs_f64()
    );
    println!(
        "  finished: {}; every step run once, in order: {once} ({} runs recorded)",
        agent["status"],
        run.len()
    );
    println!(
        "  requests served {} (of them summaries {}), refused as too long {refused}; compactions {}",
        served.len(),
        shares.len(),
        shown["compactions"]
    );
    println!(
        "  full-price input tokens {full_price} vs minimum {minimum}: {:.3}×; cache-read tokens {read}",
        full_price as f64 / minimum as f64
    );
    if !shares.is_empty() {
        println!(
            "  summary cache read / prefix: min {:.1}%, median {:.1}%",
            shares[0] * 100.0,
            shares[shares.len() / 2] * 100.0
        );
    }
    if !after_summary.is_empty() && !after_round.is_empty() {
        let s = percentile(&after_summary, 0.5);
        let r = percentile(&after_round, 0.5);
        println!(
            "  turnaround after a summary (boundary written, next request built): median {:.2} ms; after a tool round (Bash run, result written): median {:.2} ms; ratio {:.2}",
            ms(s),
            ms(r),
            ms(s) / ms(r)
        );
    }
}
