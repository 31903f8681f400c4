//! Fan-out cost: N forks launched from one assistant message over a
//! ~48,000-token parent context, through the mock's prompt-cache
//! simulation, against the theoretical minimum and against N naive agents
//! each started cold with the same context in its prompt.
//!
//! Billed-equivalent input tokens of a request: input + 1.25 × cache write
//! + 0.1 × cache read (Anthropic's prices relative to input).
//!
//! The theoretical minimum for N forks over a parent prefix P (cached by
//! the parent's own request), a shared extension E (the assistant message
//! with the calls and the placeholders) and directives D_i: every fork
//! reads P, one writes E and the others read it, each pays its directive at
//! the input price: N·0.1·P + 1.25·E + (N−1)·0.1·E + ΣD_i.

use std::time::Duration;

use agentd_e2e::all_text;
use agentd_e2e::forking::{fork_call, is_fork_of};
use agentd_e2e::mock::cache::anthropic_blocks;
use agentd_e2e::mock::{
    MockMessage, MockServer, RecordedRequest, Reply, n_messages, prompt_of, text_of,
};
use agentd_e2e::parent::NOTE;
use agentd_e2e::{Env, wait_until};
use agentd_shared::proto as pb;
use serde_json::json;

use super::arg;

/// Files the parent reads before it fans out: its context.
const FILES: usize = 4;
const MODEL: &str = "anthropic:claude-bench";

fn billed(r: &RecordedRequest) -> f64 {
    let c = r.cache.as_ref().expect("a served request");
    c.input as f64 + 1.25 * c.creation as f64 + 0.1 * c.read as f64
}

/// The seed's accounting (seed 003): cache writes at the full input
/// price, reads at a tenth.
fn seed_billed(r: &RecordedRequest) -> f64 {
    let c = r.cache.as_ref().expect("a served request");
    (c.input + c.creation) as f64 + 0.1 * c.read as f64
}

fn prompt_tokens(r: &RecordedRequest) -> u64 {
    let c = r.cache.as_ref().expect("a served request");
    c.input + c.creation + c.read
}

/// Tokens of every prompt block but the last (a fork's directive).
fn shared_prefix(r: &RecordedRequest) -> u64 {
    let blocks = anthropic_blocks(&r.json).expect("a valid request");
    blocks[..blocks.len() - 1].iter().map(|b| b.tokens).sum()
}

/// Text of about `bytes` bytes in lines of source-like prose.
fn filler(seed: usize, bytes: usize) -> String {
    let mut out = String::with_capacity(bytes + 128);
    let mut line = 0;
    while out.len() < bytes {
        out.push_str(&format!(
            "// file {seed} line {line}: the service layer validates the request, loads the account and applies the change\n"
        ));
        line += 1;
    }
    out
}

fn directive(i: usize) -> String {
    format!("FANOUT-TASK {i}: update module {i} as the plan above says and report.")
}

struct Run {
    /// The parent's prompt when it fanned out (tokens).
    parent_prefix: u64,
    /// Everything the forks share before their directives.
    shared: u64,
    forks: Vec<RecordedRequest>,
    /// The text of the parent's conversation when it fanned out: what a
    /// naive agent must be given to know as much.
    context: String,
}

/// A parent reads its files, then forks `n` times in one message.
fn fan_out(n: usize, file_bytes: usize) -> Run {
    let mock = MockServer::start();
    let env = Env::new();
    env.use_mock(&mock.url());
    env.write_config("max_running_agents = 64\n");
    for f in 0..FILES {
        std::fs::write(
            env.project().join(format!("module{f}.rs")),
            filler(f, file_bytes),
        )
        .unwrap();
    }
    let _daemon = env.start_daemon();
    mock.when(
        |r| is_fork_of(r, "FANOUT-TASK"),
        Reply::text(
            "Scope: the module\nResult: updated\nKey files: one\nFiles changed: one\nIssues: none",
        ),
    );
    for f in 0..FILES {
        mock.when(
            move |r| prompt_of(r).contains("FANOUT-PARENT") && n_messages(r) == 1 + 2 * f,
            Reply::tool(
                format!("toolu_read_{f}"),
                "Read",
                json!({"file_path": format!("module{f}.rs")}),
            ),
        );
    }
    let mut calls = MockMessage::text("The plan is clear; one fork per module.");
    for i in 0..n {
        calls = calls.with(fork_call(&directive(i)));
    }
    mock.when(
        move |r| prompt_of(r).contains("FANOUT-PARENT") && n_messages(r) == 1 + 2 * FILES,
        Reply::Message(calls),
    );
    mock.when(
        |r| prompt_of(r).contains("FANOUT-PARENT"),
        Reply::text("Waiting for the forks."),
    );
    let parent = env
        .ctl(&[
            "run",
            "--background",
            "--model",
            MODEL,
            "FANOUT-PARENT: read the four modules, plan, then update them in parallel.",
        ])
        .expect_code(0)
        .stdout
        .trim()
        .to_string();
    wait_until("every fork reports", Duration::from_secs(300), || {
        all_text(&env.transcript(&parent)).matches(NOTE).count() == n
    });
    let reqs = mock.requests();
    let fanning = reqs
        .iter()
        .find(|r| prompt_of(r).contains("FANOUT-PARENT") && n_messages(r) == 1 + 2 * FILES)
        .expect("the parent's fan-out request");
    let forks: Vec<RecordedRequest> = (0..n)
        .map(|i| {
            reqs.iter()
                .find(|r| is_fork_of(r, &directive(i)))
                .expect("each fork's request")
                .clone()
        })
        .collect();
    let context = fanning
        .messages()
        .iter()
        .map(|m| text_of(&m["content"]))
        .collect::<Vec<_>>()
        .join("\n");
    Run {
        context,
        parent_prefix: prompt_tokens(fanning),
        shared: shared_prefix(&forks[0]),
        forks,
    }
}

/// `n` agents started cold, each with the parent's context in its prompt.
fn naive(n: usize, context: &str) -> Vec<RecordedRequest> {
    let mock = MockServer::start();
    let env = Env::new();
    env.use_mock(&mock.url());
    env.write_config("max_running_agents = 64\n");
    let _daemon = env.start_daemon();
    mock.set_fallback(Some(Reply::text("Done: updated.")));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let ids: Vec<String> = rt.block_on(async {
        let mut client = agentd_shared::client::agent_client(&env.socket())
            .await
            .unwrap();
        let mut ids = Vec::new();
        for i in 0..n {
            let agent = client
                .create_agent(pb::CreateAgentRequest {
                    prompt: format!("{context}\n{}", directive(i)),
                    model: MODEL.into(),
                    cwd: env.project().display().to_string(),
                    background: true,
                    ..Default::default()
                })
                .await
                .unwrap()
                .into_inner();
            ids.push(agent.id);
        }
        ids
    });
    for id in &ids {
        env.ctl(&["wait", id]).expect_code(0);
    }
    mock.requests()
}

pub fn bench_fanout(args: &[String]) {
    let counts: Vec<usize> = arg(args, "--forks", "5,10,20")
        .split(',')
        .map(|n| n.trim().parse().unwrap())
        .collect();
    // About 48,000 tokens of parent context: agentd's system prompt and
    // tools, and four files read.
    let file_bytes: usize = arg(args, "--file-bytes", "41300").parse().unwrap();
    println!(
        "| N | parent prefix P | shared S = P + E | forks, billed-equivalent | theoretical minimum | forks / minimum | naive agents, billed-equivalent | naive / forks |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut seed_line = None;
    for &n in &counts {
        let run = fan_out(n, file_bytes);
        let extension = run.shared - run.parent_prefix;
        let directives: u64 = run
            .forks
            .iter()
            .map(|r| prompt_tokens(r) - shared_prefix(r))
            .sum();
        let actual: f64 = run.forks.iter().map(billed).sum();
        let minimum = n as f64 * 0.1 * run.parent_prefix as f64
            + 1.25 * extension as f64
            + (n as f64 - 1.0) * 0.1 * extension as f64
            + directives as f64;
        let cold = naive(n, &run.context);
        let naive_billed: f64 = cold.iter().map(billed).sum();
        println!(
            "| {n} | {} | {} | {actual:.0} | {minimum:.0} | {:.3} | {naive_billed:.0} | {:.2}x |",
            run.parent_prefix,
            run.shared,
            actual / minimum,
            naive_billed / actual
        );
        if n == 5 {
            // The seed's worked example: the first fork cold at full price,
            // its siblings read the shared prefix; naive agents share nothing.
            let mut by_arrival = run.forks.clone();
            by_arrival.sort_by_key(|r| r.index);
            let first = prompt_tokens(&by_arrival[0]) as f64;
            let rest: f64 = by_arrival[1..].iter().map(seed_billed).sum();
            let naive_full: u64 = cold.iter().map(prompt_tokens).sum();
            seed_line = Some(format!(
                "seed accounting, N = 5 (shared prefix {} tokens, directives {:.0} tokens on average): forks {:.0} vs naive {naive_full} ({:.2}x); the seed's example: 68,900 vs 243,500 (3.53x)",
                run.shared,
                directives as f64 / n as f64,
                first + rest,
                naive_full as f64 / (first + rest)
            ));
        }
    }
    if let Some(line) = seed_line {
        println!("\n{line}");
    }
}
