//! What a confined agent can reach (DESIGN §22), as a prompt-injected
//! agent would try it: a local server on the test machine's loopback,
//! reached directly (`curl`, bash's `/dev/tcp`) and through the agent's
//! proxy; refused when no rule allows it (bypass mode never asks), asked
//! in default mode (once, then "always"), let through by `--allow-host`
//! and config.toml's `[network] allow` by host name (the test maps the
//! name to 127.0.0.1 for the proxy's resolver), recorded durably with
//! byte counts; `network = "full"` and `"none"` as before.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use agentd_e2e::attached::Attached;
use agentd_e2e::script::bash_each;
use agentd_e2e::{Env, tool_results};
use agentd_shared::proto as pb;
use pb::permission_answer::Decision;

/// What the origin answers with.
pub(super) const HELLO: &str = "hello-from-origin";

/// A local HTTP server: each request's head is kept; each is answered
/// with `HELLO`.
pub(super) struct Origin {
    pub(super) port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Origin {
    pub(super) fn start() -> Origin {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = heads.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let kept = kept.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut head = String::new();
                    loop {
                        let mut line = String::new();
                        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                            break;
                        }
                        head.push_str(&line);
                    }
                    kept.lock().unwrap().push(head);
                    let mut stream = stream;
                    let _ = write!(
                        stream,
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{HELLO}",
                        HELLO.len()
                    );
                });
            }
        });
        Origin { port, heads }
    }

    pub(super) fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// `agentctl network ID --json`'s connections.
fn connections(env: &Env, id: &str) -> Vec<serde_json::Value> {
    env.ctl(&["network", id, "--json"]).expect_code(0).json()["connections"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn by_default_a_tool_reaches_nothing_directly_and_bypass_mode_never_widens_the_proxy() {
    let origin = Origin::start();
    let port = origin.port;
    let env = Env::new();
    let _daemon = env.start_daemon();
    let url = format!("http://127.0.0.1:{port}/secret-upload");
    let commands = vec![
        format!("curl -sS -m 10 {url}; echo rc=$?"),
        format!("(exec 3<>/dev/tcp/127.0.0.1/{port}) && echo reached || echo blocked"),
        "echo \"$HTTPS_PROXY|$http_proxy|$NO_PROXY\"".to_string(),
        format!("curl -sS -m 10 --noproxy '' -x \"$HTTP_PROXY\" {url}; echo rc=$?"),
        format!(
            "curl -sS -m 10 --noproxy '' -x \"$HTTP_PROXY\" -p https://127.0.0.1:{port}/; echo rc=$?"
        ),
    ];
    // `agentctl run`'s permission mode is bypass: nothing asks.
    let id = env.start_model(&env.script("b.json", &bash_each(&commands)), &[]);
    env.ctl(&["wait", &id]).expect_code(0);
    let got = tool_results(&env.transcript(&id));
    assert_eq!(got.len(), commands.len(), "{got:?}");
    assert!(
        !got[0].1.contains(HELLO) && !got[0].1.contains("rc=0"),
        "direct curl: {}",
        got[0].1
    );
    assert!(got[1].1.contains("blocked"), "/dev/tcp: {}", got[1].1);
    let vars: Vec<&str> = got[2].1.trim().split('|').collect();
    assert!(vars[0].starts_with("http://127.0.0.1:"), "{vars:?}");
    assert_eq!(vars[0], vars[1], "{vars:?}");
    assert!(vars[2].contains("127.0.0.1"), "{vars:?}");
    for through in [&got[3].1, &got[4].1] {
        assert!(!through.contains(HELLO), "{through}");
    }
    assert!(
        got[3].1.contains("bypass mode never widens the network")
            && got[3].1.contains(&format!("--allow-host 127.0.0.1:{port}")),
        "the refusal says why and what to add: {}",
        got[3].1
    );
    assert!(origin.heads().is_empty(), "{:?}", origin.heads());
    // Both refusals are recorded, with the host as the tool named it.
    let records = connections(&env, &id);
    assert_eq!(records.len(), 2, "{records:?}");
    for (r, method) in records.iter().zip(["GET", "CONNECT"]) {
        assert_eq!(r["decision"], "refused", "{r}");
        assert_eq!(r["host"], "127.0.0.1");
        assert_eq!(r["port"], u64::from(port));
        assert_eq!(r["method"], method);
    }
    let shown = env.ctl(&["show", &id]).expect_code(0).stdout.clone();
    assert!(
        shown.contains("network workspace-write") || shown.contains("proxy:"),
        "{shown}"
    );
    let text = env.ctl(&["network", &id]).expect_code(0).stdout.clone();
    assert!(
        text.contains("refused") && text.contains(&format!("127.0.0.1:{port}")),
        "{text}"
    );
}

#[test]
fn allowed_names_reach_their_server_through_the_proxy_and_are_recorded_with_their_bytes() {
    let origin = Origin::start();
    let port = origin.port;
    let env = Env::new();
    env.set_daemon_env(
        "AGENTD_TEST_PROXY_HOSTS",
        "flag.test=127.0.0.1,config.test=127.0.0.1",
    );
    env.write_config(&format!("[network]\nallow = [\"config.test:{port}\"]\n"));
    let _daemon = env.start_daemon();
    let commands = vec![
        // The proxy variables do the work: a tool needs no flag.
        format!("curl -sS -m 10 http://flag.test:{port}/by-flag; echo rc=$?"),
        format!("curl -sS -m 10 -p http://config.test:{port}/tunnelled; echo rc=$?"),
        // Another port of an allowed host is not allowed.
        format!("curl -sS -m 10 http://flag.test:1/; echo rc=$?"),
    ];
    let allow = format!("flag.test:{port}");
    let id = env.start_model(
        &env.script("b.json", &bash_each(&commands)),
        &["--allow-host", &allow],
    );
    env.ctl(&["wait", &id]).expect_code(0);
    let got = tool_results(&env.transcript(&id));
    assert!(got[0].1.contains(HELLO), "--allow-host: {}", got[0].1);
    assert!(
        got[1].1.contains(HELLO),
        "config allow, CONNECT: {}",
        got[1].1
    );
    assert!(!got[2].1.contains(HELLO), "{}", got[2].1);
    let heads = origin.heads();
    assert_eq!(heads.len(), 2, "{heads:?}");
    // Sent on in origin form, without the proxy's headers.
    assert!(
        heads[0].starts_with("GET /by-flag HTTP/1.1\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        heads[0].contains(&format!("Host: flag.test:{port}")),
        "{}",
        heads[0]
    );
    assert!(
        !heads[0].to_ascii_lowercase().contains("proxy-"),
        "{}",
        heads[0]
    );
    assert!(
        heads[1].starts_with("GET /tunnelled HTTP/1.1\r\n"),
        "{}",
        heads[1]
    );
    let records = connections(&env, &id);
    assert_eq!(records.len(), 3, "{records:?}");
    assert_eq!(records[0]["decision"], "allowed");
    assert_eq!(records[0]["host"], "flag.test");
    assert!(
        records[0]["reason"]
            .as_str()
            .unwrap()
            .contains("--allow-host"),
        "{}",
        records[0]
    );
    assert_eq!(records[1]["method"], "CONNECT");
    assert_eq!(records[1]["reason"], "config.toml [network] allow");
    for r in &records[..2] {
        assert!(r["ended_at"].is_string(), "{r}");
        assert!(r["bytes_sent"].as_u64().unwrap() > 0, "{r}");
        assert!(
            r["bytes_received"].as_u64().unwrap() >= HELLO.len() as u64,
            "{r}"
        );
    }
    assert_eq!(records[2]["decision"], "refused");
    assert_eq!(records[2]["port"], 1);
    // `show` names the agent's own allow list.
    let shown = env.show(&id);
    assert_eq!(shown["network"], "proxy");
    let defaults = env
        .ctl(&["network", "defaults", "--json"])
        .expect_code(0)
        .json();
    assert!(
        defaults["built_in"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["pattern"] == "crates.io")
    );
    assert_eq!(
        defaults["config"][0]["pattern"],
        format!("config.test:{port}")
    );
}

#[test]
fn default_mode_asks_and_an_always_answer_holds_for_the_next_connection() {
    let origin = Origin::start();
    let port = origin.port;
    let env = Env::new();
    env.set_daemon_env("AGENTD_TEST_PROXY_HOSTS", "ask.test=127.0.0.1");
    let _daemon = env.start_daemon();
    let fetch = format!("curl -sS -m 60 http://ask.test:{port}/n; echo rc=$?");
    let commands = vec![fetch.clone(), fetch.clone(), fetch.clone(), fetch];
    let id = env.start_model(
        &env.script("b.json", &bash_each(&commands)),
        &["--permission-mode", "default"],
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut client = Attached::open(&env, &id).await;
        // The Bash call itself asks first.
        let ask = client.next_ask().await;
        assert_eq!(ask.tool_name, "Bash");
        client.answer(&ask, Decision::AllowAlways, "").await;
        // First connection: asked; no.
        let ask = client.next_ask().await;
        assert_eq!(ask.tool_name, "Network");
        assert_eq!(ask.summary, format!("ask.test:{port}"));
        client.answer(&ask, Decision::Deny, "").await;
        // Second: once.
        let ask = client.next_ask().await;
        assert_eq!(ask.tool_name, "Network");
        client.answer(&ask, Decision::AllowOnce, "").await;
        // Third: always for this agent; the fourth is not asked.
        let ask = client.next_ask().await;
        assert_eq!(ask.tool_name, "Network");
        client.answer(&ask, Decision::AllowAlways, "").await;
    });
    env.ctl(&["wait", &id]).expect_code(0);
    let got = tool_results(&env.transcript(&id));
    assert_eq!(got.len(), 4, "{got:?}");
    assert!(!got[0].1.contains(HELLO), "{}", got[0].1);
    assert!(got[0].1.contains("answered: no"), "{}", got[0].1);
    for g in &got[1..] {
        assert!(g.1.contains(HELLO), "{}", g.1);
    }
    assert_eq!(origin.heads().len(), 3);
    let reasons: Vec<String> = connections(&env, &id)
        .iter()
        .map(|r| r["reason"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        reasons,
        [
            "answered: no",
            "answered: allow once",
            "answered: always for this agent",
            "answered: always for this agent"
        ]
    );
    let listed = env.ctl(&["network", &id, "--json"]).expect_code(0).json();
    assert_eq!(listed["allowed_always"][0], format!("ask.test:{port}"));
    // The fourth connection ran without an ask (none was answered).
}

#[test]
fn full_and_none_behave_as_before_and_a_repository_cannot_widen_the_list() {
    let origin = Origin::start();
    let port = origin.port;
    let env = Env::new();
    let _daemon = env.start_daemon();
    // A repository's agentd config is not read for the network: only
    // config.toml and flags widen it.
    std::fs::create_dir_all(env.project().join(".agentd")).unwrap();
    std::fs::write(
        env.project().join(".agentd/config.toml"),
        format!("[network]\nallow = [\"127.0.0.1:{port}\"]\n"),
    )
    .unwrap();
    let direct = vec![format!(
        "curl -sS -m 10 http://127.0.0.1:{port}/full; echo rc=$?"
    )];
    let full = env.start_model(
        &env.script("full.json", &bash_each(&direct)),
        &["--network", "full"],
    );
    env.ctl(&["wait", &full]).expect_code(0);
    assert!(tool_results(&env.transcript(&full))[0].1.contains(HELLO));
    assert_eq!(env.show(&full)["network"], "full");
    let none = env.start_model(
        &env.script("none.json", &bash_each(&direct)),
        &["--network", "none"],
    );
    env.ctl(&["wait", &none]).expect_code(0);
    assert!(!tool_results(&env.transcript(&none))[0].1.contains(HELLO));
    assert_eq!(env.show(&none)["no_network"], true);
    let proxied = vec![format!(
        "curl -sS -m 10 --noproxy '' -x \"$HTTP_PROXY\" http://127.0.0.1:{port}/repo; echo rc=$?"
    )];
    let repo = env.start_model(&env.script("repo.json", &bash_each(&proxied)), &[]);
    env.ctl(&["wait", &repo]).expect_code(0);
    assert!(!tool_results(&env.transcript(&repo))[0].1.contains(HELLO));
    assert_eq!(origin.heads().len(), 1, "only the full agent reached it");
    // --network proxy with --sandbox off is refused: nothing would hold it.
    let model = env.script("x.json", &bash_each(&direct));
    let refused = env.ctl(&[
        "run",
        "--background",
        "--model",
        &model,
        "--sandbox",
        "off",
        "--network",
        "proxy",
        "x",
    ]);
    assert_ne!(refused.code, 0);
    assert!(
        refused.stderr.contains("--network full"),
        "{}",
        refused.stderr
    );
    // --sandbox off alone gets the full network (nothing confines it).
    let off = env.start_model(
        &env.script("off.json", &bash_each(&direct)),
        &["--sandbox", "off"],
    );
    env.ctl(&["wait", &off]).expect_code(0);
    assert_eq!(env.show(&off)["network"], "full");
}

#[test]
fn an_external_agent_reaches_its_api_host_through_the_proxy_and_nothing_else() {
    let origin = Origin::start();
    let port = origin.port;
    let w = crate::external::agents::World::new(
        &format!(", MODEL_BASE_URL = \"http://model.test:{port}\""),
        "",
    );
    w.env.set_daemon_env(
        "AGENTD_TEST_PROXY_HOSTS",
        "model.test=127.0.0.1,other.test=127.0.0.1",
    );
    let _daemon = w.env.start_daemon();
    let steps = serde_json::json!([
        {"shell": "curl -sS -m 10 \"$MODEL_BASE_URL/v1/messages\""},
        {"shell": format!("curl -sS -m 10 http://other.test:{port}/; echo; curl -sS -m 5 --noproxy '*' http://127.0.0.1:{port}/direct || echo direct-failed")},
    ]);
    let out = w
        .env
        .ctl(&["run", "--agent", "scripted", &format!("script:{steps}")]);
    out.expect_code(0);
    let said: Vec<&str> = out.stdout.split("shell exit=").skip(1).collect();
    assert_eq!(said.len(), 2, "{}", out.stdout);
    assert!(said[0].contains(HELLO), "its API host: {}", said[0]);
    assert!(!said[1].contains(HELLO), "{}", said[1]);
    assert!(
        said[1].contains("other.test") && said[1].contains("refused"),
        "{}",
        said[1]
    );
    assert!(said[1].contains("direct-failed"), "{}", said[1]);
    let heads = origin.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(heads[0].starts_with("GET /v1/messages "), "{}", heads[0]);
    let id = w.env.agents()[0]["id"].as_str().unwrap().to_string();
    let records = connections(&w.env, &id);
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(records[0]["reason"], "[agents.scripted] env MODEL_BASE_URL");
    assert_eq!(records[1]["decision"], "refused");
}
