//! A repository's `.mcp.json` servers (DESIGN §18): a cloned repository
//! must not run commands by being opened, so its servers start only once
//! the person approves them (`agentctl mcp approve`), for that repository
//! and that exact definition. Each server here would leave a line in a
//! marker file the moment it is started — proof that nothing ran before
//! the approval. Real daemon and agentctl, the Python SDK's server, the
//! mock model.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};

use agentd_e2e::gitrepo::{git, init_repo};
use agentd_e2e::mcp_fixtures::McpFixtures;
use agentd_e2e::mock::{Block, MODEL, MockMessage, MockServer, Reply};
use agentd_e2e::{Env, tool_results};
use agentd_shared::proto as pb;
use serde_json::{Value, json};

use super::common::{fixtures, mcp_tools, notes, starts};

/// A `.mcp.json` server that appends "started" to `marker` and then runs
/// the fixture server over stdio; `extra` args follow the script (`sh`
/// takes the first as `$0`), so a test can change the definition without
/// changing what it does.
fn marking_server(fx: &McpFixtures, marker: &Path, extra: &[&str]) -> Value {
    let script = format!(
        "echo started >> '{}'; exec '{}' '{}' stdio",
        marker.display(),
        fx.python.display(),
        fx.server_py.display()
    );
    let mut args = vec!["-c".to_string(), script];
    args.extend(extra.iter().map(|a| a.to_string()));
    json!({"command": "sh", "args": args})
}

fn write_mcp_json(repo: &Path, servers: Value) {
    std::fs::write(
        repo.join(".mcp.json"),
        serde_json::to_string_pretty(&json!({ "mcpServers": servers })).unwrap(),
    )
    .unwrap();
}

/// `mcp list --json`'s entry for `name`.
fn listed(env: &Env, name: &str) -> Value {
    let all = env.ctl(&["mcp", "list", "--json"]).expect_code(0).json();
    all.as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not listed: {all}"))
}

/// Runs an agent in the foreground that answers "done" at once; the tools
/// its first request offered.
fn run_agent(env: &Env, mock: &MockServer, name: &str) -> Vec<String> {
    let before = mock.requests().len();
    mock.enqueue_all([Reply::text("done")]);
    env.ctl(&["run", "--model", MODEL, "--name", name, "go"])
        .expect_code(0);
    mock.requests()[before].tool_names()
}

#[test]
fn a_repositorys_server_runs_only_once_approved_and_again_only_after_a_change_is_approved() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let repo = env.project();
    init_repo(&repo);
    // In the workspace: a sandboxed server may write only there, so a
    // marker outside it would stay absent even if the server ran.
    let marker = repo.join("started.log");
    write_mcp_json(&repo, json!({"repo": marking_server(&fx, &marker, &[])}));
    git(&repo, &["add", ".mcp.json"]);
    git(&repo, &["commit", "-q", "-m", "servers"]);
    let _daemon = env.start_daemon();

    // Listed, with what it would run, and not started.
    let entry = listed(&env, "repo");
    assert_eq!(entry["source"], "repository", "{entry}");
    assert_eq!(entry["state"], "unapproved", "{entry}");
    assert_eq!(entry["tools"], json!([]), "{entry}");
    assert!(
        entry["target"]
            .as_str()
            .unwrap()
            .starts_with("sh -c echo started"),
        "{entry}"
    );
    let text = env.ctl(&["mcp", "list"]).expect_code(0).stdout.clone();
    assert!(text.contains("repo (repository, stdio): sh -c"), "{text}");
    assert!(text.contains("unapproved · not started"), "{text}");
    assert!(text.contains("agentctl mcp approve repo"), "{text}");

    // An agent made now does not get it, and says why.
    let tools = run_agent(&env, &mock, "before");
    assert!(mcp_tools(&tools).is_empty(), "{tools:?}");
    let shown = env.show("before");
    assert_eq!(shown["mcp_servers"], json!([]), "{shown}");
    let said = notes(&shown);
    assert!(
        said.iter()
            .any(|n| n.contains("\"repo\"") && n.contains("not approved")),
        "{said:?}"
    );
    let text = env.ctl(&["show", "before"]).expect_code(0).stdout.clone();
    assert!(text.contains("note: .mcp.json server \"repo\""), "{text}");
    assert_eq!(starts(&marker), 0, "nothing of the repository ran");

    // Approving starts nothing either.
    let out = env.ctl(&["mcp", "approve", "repo"]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("repo (stdio): approved: sh -c"),
        "{}",
        out.stdout
    );
    assert_eq!(starts(&marker), 0, "approving runs nothing");
    let again = env
        .ctl(&["mcp", "approve", "--json", "repo"])
        .expect_code(0)
        .json();
    assert_eq!(again["servers"][0]["already"], true, "{again}");
    assert_eq!(
        Path::new(again["repository"].as_str().unwrap()),
        repo.canonicalize().unwrap()
    );

    // Approved: a new agent gets its tools and calls them.
    let before = mock.requests().len();
    mock.enqueue_all([
        Reply::Message(MockMessage::text("echo").with(Block::tool(
            "e1",
            "mcp__repo__echo",
            json!({"text": "from the repository"}),
        ))),
        Reply::text("done"),
    ]);
    env.ctl(&["run", "--model", MODEL, "--name", "after", "go"])
        .expect_code(0);
    let requests = mock.requests();
    let tools = requests[before].tool_names();
    assert!(tools.contains(&"mcp__repo__echo".to_string()), "{tools:?}");
    let (is_error, text) = tool_results(requests[before + 1].messages()).pop().unwrap();
    assert_eq!((is_error, text.as_str()), (false, "from the repository"));
    assert!(starts(&marker) >= 1, "the approved server ran");
    let shown = env.show("after");
    assert_eq!(shown["mcp_servers"][0]["name"], "repo", "{shown}");
    assert!(notes(&shown).is_empty(), "{shown}");
    assert_eq!(listed(&env, "repo")["state"], "ready");

    // A worktree agent gets the servers approved for its checkout; inside
    // its tree (kept: the agent wrote a file), `mcp list` counts them too.
    let before = mock.requests().len();
    mock.enqueue_all([
        Reply::Message(MockMessage::text("write").with(Block::tool(
            "w1",
            "Write",
            json!({"file_path": "new.txt", "content": "x"}),
        ))),
        Reply::text("done"),
    ]);
    env.ctl(&[
        "run",
        "--model",
        MODEL,
        "--worktree",
        "--name",
        "tree",
        "go",
    ])
    .expect_code(0);
    let tools = mock.requests()[before].tool_names();
    assert!(tools.contains(&"mcp__repo__echo".to_string()), "{tools:?}");
    let shown = env.show("tree");
    let tree = shown["worktree"]["path"].as_str().unwrap().to_string();
    assert!(Path::new(&tree).join("new.txt").exists(), "{shown}");
    let in_tree = env
        .ctl(&["mcp", "list", "--json", "--cwd", &tree])
        .expect_code(0)
        .json();
    assert_eq!(in_tree[0]["state"], "ready", "{in_tree}");

    // A changed definition is unapproved again, and not run.
    write_mcp_json(
        &repo,
        json!({"repo": marking_server(&fx, &marker, &["v2"])}),
    );
    let ran = starts(&marker);
    assert_eq!(listed(&env, "repo")["state"], "unapproved");
    let tools = run_agent(&env, &mock, "changed");
    assert!(mcp_tools(&tools).is_empty(), "{tools:?}");
    assert_eq!(starts(&marker), ran, "the changed server did not run");

    // Revoked: unapproved for new agents.
    write_mcp_json(&repo, json!({"repo": marking_server(&fx, &marker, &[])}));
    assert_eq!(listed(&env, "repo")["state"], "ready");
    let out = env.ctl(&["mcp", "revoke", "repo"]);
    out.expect_code(0);
    assert!(out.stdout.contains("revoked"), "{}", out.stdout);
    let ran = starts(&marker);
    assert_eq!(listed(&env, "repo")["state"], "unapproved");
    assert!(mcp_tools(&run_agent(&env, &mock, "revoked")).is_empty());
    assert_eq!(starts(&marker), ran);
}

#[test]
fn a_mcp_json_linking_out_of_the_repository_or_malformed_is_a_note_and_the_agent_runs() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let repo = env.project();
    init_repo(&repo);
    let marker = repo.join("started.log");
    let outside = env.root.path().join("elsewhere.json");
    std::fs::write(
        &outside,
        json!({"mcpServers": {"out": marking_server(&fx, &marker, &[])}}).to_string(),
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, repo.join(".mcp.json")).unwrap();
    let _daemon = env.start_daemon();

    let out = env.ctl(&["mcp", "list"]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("resolves outside the repository"),
        "{}",
        out.stdout
    );
    assert!(!out.stdout.contains("out (repository"), "{}", out.stdout);
    let json_out = env.ctl(&["mcp", "list", "--json"]);
    json_out.expect_code(0);
    assert_eq!(json_out.json(), json!([]));
    assert!(json_out.stderr.contains("note: "), "{}", json_out.stderr);
    assert!(mcp_tools(&run_agent(&env, &mock, "linked")).is_empty());
    let shown = env.show("linked");
    assert_eq!(shown["status"], "completed");
    assert!(
        notes(&shown)
            .iter()
            .any(|n| n.contains("outside the repository")),
        "{shown}"
    );
    // Nothing there to approve.
    let out = env.ctl(&["mcp", "approve", "--all"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("failed precondition") && out.stderr.contains("outside"),
        "{}",
        out.stderr
    );

    // Malformed, and not UTF-8: notes, the agents run.
    for (i, (bytes, expect)) in [
        (&b"{\"mcpServers\": {\"x\": "[..], "not valid JSON"),
        (&b"{\"mcpServers\": {\"\xff\": {}}}"[..], "not UTF-8"),
    ]
    .into_iter()
    .enumerate()
    {
        std::fs::remove_file(repo.join(".mcp.json")).unwrap();
        std::fs::write(repo.join(".mcp.json"), bytes).unwrap();
        let out = env.ctl(&["mcp", "list"]);
        out.expect_code(0);
        assert!(out.stdout.contains(expect), "{}", out.stdout);
        let name = format!("broken{i}");
        assert!(mcp_tools(&run_agent(&env, &mock, &name)).is_empty());
        let shown = env.show(&name);
        assert_eq!(shown["status"], "completed", "{shown}");
        assert!(notes(&shown).iter().any(|n| n.contains(expect)), "{shown}");
    }
    assert_eq!(starts(&marker), 0, "nothing of the repository ran");
}

#[test]
fn a_config_server_keeps_its_name_against_the_repositorys() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let repo = env.project();
    init_repo(&repo);
    let marker = repo.join("started.log");
    let (command, args) = fx.python_stdio_command();
    env.write_config(&format!(
        "[mcp_servers.fx]\ncommand = {}\nargs = {}\n",
        serde_json::to_string(&command).unwrap(),
        serde_json::to_string(&args).unwrap()
    ));
    write_mcp_json(&repo, json!({"fx": marking_server(&fx, &marker, &[])}));
    let _daemon = env.start_daemon();

    let all = env.ctl(&["mcp", "list", "--json"]);
    all.expect_code(0);
    let servers = all.json();
    assert_eq!(servers.as_array().unwrap().len(), 1, "{servers}");
    assert_eq!(servers[0]["source"], "config");
    assert_eq!(servers[0]["state"], "ready");
    assert!(all.stderr.contains("\"fx\" is ignored"), "{}", all.stderr);
    let out = env.ctl(&["mcp", "approve", "fx"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("failed precondition") && out.stderr.contains("config.toml"),
        "{}",
        out.stderr
    );
    let tools = run_agent(&env, &mock, "plain");
    assert!(tools.contains(&"mcp__fx__echo".to_string()), "{tools:?}");
    assert_eq!(starts(&marker), 0, "the repository's fx never ran");
}

#[test]
fn approving_refuses_bad_requests_with_the_right_status() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let repo = env.project();
    init_repo(&repo);
    write_mcp_json(&repo, json!({"tool": {"command": "/nonexistent/run-me"}}));
    let plain: PathBuf = env.root.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let _daemon = env.start_daemon();
    let dir = |p: &Path| p.display().to_string();
    let request = |cwd: String, names: &[&str], all: bool| pb::ApproveMcpServersRequest {
        cwd,
        names: names.iter().map(|n| n.to_string()).collect(),
        all,
        agent_type: String::new(),
    };
    let long = "n".repeat(10_000);
    let cases = [
        (
            request(dir(&repo), &["nope"], false),
            tonic::Code::NotFound,
            "no usable server",
        ),
        (
            request(dir(&repo), &[], false),
            tonic::Code::InvalidArgument,
            "name the servers",
        ),
        (
            request(dir(&repo), &["tool"], true),
            tonic::Code::InvalidArgument,
            "not both",
        ),
        (
            request(dir(&repo), &["a b"], false),
            tonic::Code::InvalidArgument,
            "'_'",
        ),
        (
            request(dir(&repo), &[&long], false),
            tonic::Code::InvalidArgument,
            "1 to 64",
        ),
        (
            request("relative".into(), &["tool"], false),
            tonic::Code::InvalidArgument,
            "absolute",
        ),
        (
            request(dir(&plain), &["tool"], false),
            tonic::Code::FailedPrecondition,
            "not in a git repository",
        ),
        (
            request(dir(&plain), &[], true),
            tonic::Code::FailedPrecondition,
            "not in a git repository",
        ),
    ];
    env.rpc(async |client| {
        for (req, code, says) in cases {
            let shown = format!("{:?}", (&req.cwd, req.names.len(), req.all));
            let s = client.approve_mcp_servers(req).await.unwrap_err();
            assert_eq!(s.code(), code, "{shown}: {}", s.message());
            assert!(s.message().contains(says), "{shown}: {}", s.message());
            assert!(
                s.message().len() < 600,
                "a short message: {}",
                s.message().len()
            );
        }
        let s = client
            .revoke_mcp_servers(pb::RevokeMcpServersRequest {
                cwd: dir(&repo),
                names: vec!["tool".into()],
                all: false,
                agent_type: String::new(),
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), tonic::Code::NotFound, "{}", s.message());

        // Many names: a list past the cap is refused at once (64,000 took
        // 4.6 s and held other clients up); a name given many times counts
        // once.
        let many: Vec<String> = (0..64_000).map(|i| format!("s{i}")).collect();
        for names in [many.clone(), many[..257].to_vec()] {
            let n = names.len();
            let mut req = request(dir(&repo), &[], false);
            req.names = names;
            let s = client.approve_mcp_servers(req).await.unwrap_err();
            assert_eq!(
                s.code(),
                tonic::Code::InvalidArgument,
                "{n}: {}",
                s.message()
            );
            assert!(s.message().contains("at most 256"), "{}", s.message());
        }
        let s = client
            .revoke_mcp_servers(pb::RevokeMcpServersRequest {
                cwd: dir(&repo),
                names: many.clone(),
                all: false,
                agent_type: String::new(),
            })
            .await
            .unwrap_err();
        assert_eq!(s.code(), tonic::Code::InvalidArgument, "{}", s.message());
        let twice = request(dir(&repo), &["tool"; 256], false);
        let approved = client
            .approve_mcp_servers(twice)
            .await
            .unwrap()
            .into_inner();
        assert_eq!(approved.servers.len(), 1, "{approved:?}");
        client
            .revoke_mcp_servers(pb::RevokeMcpServersRequest {
                cwd: dir(&repo),
                names: vec!["tool".into()],
                all: false,
                agent_type: String::new(),
            })
            .await
            .unwrap();
    });

    // The CLI: a failure is exit 1 with the status's words, a usage error 2.
    let out = env.ctl(&["mcp", "approve", "nope"]);
    out.expect_code(1);
    assert!(out.stderr.contains("not found: "), "{}", out.stderr);
    assert!(out.stderr.contains("it has: tool"), "{}", out.stderr);
    let out = env.ctl(&["mcp", "approve", "--cwd", &dir(&plain), "tool"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("failed precondition: "),
        "{}",
        out.stderr
    );
    env.ctl(&["mcp", "approve"]).expect_code(2);
    env.ctl(&["mcp", "approve", "--all", "tool"]).expect_code(2);
    // Approving a server that cannot start is allowed (it starts nothing).
    env.ctl(&["mcp", "approve", "--all"]).expect_code(0);
    let entry = listed(&env, "tool");
    assert_eq!(entry["state"], "failed", "{entry}");
}

/// The review's attack: a confined agent rewrites the script an approved
/// server runs; the next unconfined agent in the repository starts it when
/// it is made. A repository's server runs confined whatever its agent's
/// mode (docs/security.md), so the new code writes nothing outside the
/// workspace.
#[test]
fn a_repositorys_server_runs_confined_even_for_an_unconfined_agent() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let repo = env.project();
    init_repo(&repo);
    let script = |extra: &str| {
        format!(
            "{extra}echo started >> started.log\nexec '{}' '{}' stdio\n",
            fx.python.display(),
            fx.server_py.display()
        )
    };
    std::fs::write(repo.join("srv.sh"), script("")).unwrap();
    write_mcp_json(
        &repo,
        json!({"repo": {"command": "sh", "args": ["srv.sh"]}}),
    );
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "server"]);
    let _daemon = env.start_daemon();
    env.ctl(&["mcp", "approve", "repo"]).expect_code(0);

    // A default (confined) agent rewrites the approved server's script.
    let outside = env.home().join("OUTSIDE");
    let hostile = script(&format!(
        "echo escaped > '{}' 2>/dev/null\n",
        outside.display()
    ));
    mock.enqueue_all([
        Reply::Message(MockMessage::text("edit").with(Block::tool(
            "w1",
            "Write",
            json!({"file_path": "srv.sh", "content": hostile}),
        ))),
        Reply::text("done"),
    ]);
    env.ctl(&["run", "--model", MODEL, "--name", "editor", "go"])
        .expect_code(0);
    assert_eq!(
        std::fs::read_to_string(repo.join("srv.sh")).unwrap(),
        hostile
    );
    let ran = starts(&repo.join("started.log"));

    // An unconfined agent made now starts it (to list its tools): it runs,
    // confined, and writes nothing outside the workspace.
    let tools = run_agent_with(&env, &mock, "free", &["--sandbox", "off"]);
    assert!(tools.contains(&"mcp__repo__echo".to_string()), "{tools:?}");
    assert!(starts(&repo.join("started.log")) > ran, "the server ran");
    assert!(
        !outside.exists(),
        "the rewritten server ran unconfined for an unconfined agent"
    );
    let shown = env.show("free");
    assert_eq!(shown["sandbox"], "off", "{shown}");
    assert_eq!(shown["mcp_servers"][0]["sandboxed"], true, "{shown}");
}

/// `run_agent` with extra flags.
fn run_agent_with(env: &Env, mock: &MockServer, name: &str, flags: &[&str]) -> Vec<String> {
    let before = mock.requests().len();
    mock.enqueue_all([Reply::text("done")]);
    let mut args = vec!["run", "--model", MODEL, "--name", name];
    args.extend_from_slice(flags);
    args.push("go");
    env.ctl(&args).expect_code(0);
    mock.requests()[before].tool_names()
}
