//! An agent type's own MCP servers (front matter `mcpServers`, DESIGN §18):
//! a subagent of the type gets them. A type file in the repository is the
//! repository's, so its servers start only once the person approves them
//! (`agentctl mcp approve --type T`); one of the person's own needs no
//! approval. Each server here leaves a line in a marker file when started —
//! proof that nothing ran before the approval. Real daemon and agentctl,
//! the Python SDK's server, the mock model.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::Path;

use agentd_e2e::gitrepo::init_repo;
use agentd_e2e::mcp_fixtures::McpFixtures;
use agentd_e2e::mock::{MODEL, MockServer, Reply};
use agentd_e2e::{Env, tool_results};
use serde_json::{Value, json};

use super::common::{call, fixtures, mcp_tools, notes, starts};

/// A type file whose `db` server appends "started" to `marker` and then
/// runs the fixture server over stdio, in Claude Code's list form; the
/// type may use Read and its own server's tools.
fn type_file(fx: &McpFixtures, marker: &Path) -> String {
    let script = format!(
        "echo started >> '{}'; exec '{}' '{}' stdio",
        marker.display(),
        fx.python.display(),
        fx.server_py.display()
    );
    let server = json!({"command": "sh", "args": ["-c", script]});
    format!(
        "---\nname: db-helper\ndescription: Looks things up in the database\ntools: Read\n\
         mcpServers:\n  - db: {server}\n  - github\n---\nYou look things up.\n"
    )
}

/// Runs a parent in the foreground that starts one `db-helper` subagent;
/// `child` is what the subagent's model says (its replies, in order).
/// Returns the subagent's first request's tools, and `show --json` of it.
fn run_typed_child(
    env: &Env,
    mock: &MockServer,
    name: &str,
    child: Vec<Reply>,
) -> (Vec<String>, Value) {
    let before = mock.requests().len();
    let mut replies = vec![call(
        "a1",
        "Agent",
        json!({"description": "look up", "prompt": "look it up", "subagent_type": "db-helper"}),
    )];
    replies.extend(child);
    replies.push(Reply::text("parent done"));
    mock.enqueue_all(replies);
    env.ctl(&["run", "--model", MODEL, "--name", name, "go"])
        .expect_code(0);
    let tools = mock.requests()[before + 1].tool_names();
    let parent = env.show(name);
    let list = env.ctl(&["list", "--all", "--json"]).expect_code(0).json();
    let child = list
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["parent_id"] == parent["id"])
        .unwrap_or_else(|| panic!("{name}'s subagent is not listed: {list}"));
    let shown = env.show(child["id"].as_str().unwrap());
    assert_eq!(shown["subagent_type"], "db-helper", "{shown}");
    (tools, shown)
}

fn listed(env: &Env, name: &str) -> Value {
    let all = env
        .ctl(&["mcp", "list", "--json", "--type", "db-helper"])
        .expect_code(0)
        .json();
    all.as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("{name} is not listed: {all}"))
}

#[test]
fn a_repository_types_servers_run_only_once_approved_for_that_type() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let repo = env.project();
    init_repo(&repo);
    let marker = repo.join("started.log");
    std::fs::create_dir_all(repo.join(".claude/agents")).unwrap();
    std::fs::write(
        repo.join(".claude/agents/db-helper.md"),
        type_file(&fx, &marker),
    )
    .unwrap();
    let _daemon = env.start_daemon();

    // Listed for the type, unapproved, with what it would run; plain
    // `mcp list` knows nothing of it.
    let entry = listed(&env, "db");
    assert_eq!(entry["source"], "agent_type", "{entry}");
    assert_eq!(entry["state"], "unapproved", "{entry}");
    let plain = env.ctl(&["mcp", "list", "--json"]).expect_code(0).json();
    assert_eq!(plain, json!([]));
    let text = env
        .ctl(&["mcp", "list", "--type", "db-helper"])
        .expect_code(0)
        .stdout
        .clone();
    assert!(
        text.contains("agentctl mcp approve --type db-helper db")
            && text.contains("agentctl mcp approve --type db-helper NAME"),
        "{text}"
    );
    assert!(
        text.contains("\"github\", which neither config.toml"),
        "a name no source defines is a note: {text}"
    );

    // A subagent of the type made now does not get it, and says why.
    let (tools, shown) = run_typed_child(&env, &mock, "before", vec![Reply::text("child done")]);
    assert!(mcp_tools(&tools).is_empty(), "{tools:?}");
    assert!(
        notes(&shown).iter().any(
            |n| n.contains("agent type \"db-helper\"'s MCP server \"db\"")
                && n.contains("mcp approve --type db-helper db")
        ),
        "{shown}"
    );
    assert_eq!(starts(&marker), 0, "nothing of the repository ran");

    // `.mcp.json`'s approval is not the type's; approving starts nothing.
    let out = env.ctl(&["mcp", "approve", "db"]);
    out.expect_code(1);
    assert!(out.stderr.contains("does not exist"), "{}", out.stderr);
    let out = env.ctl(&["mcp", "approve", "--type", "db-helper", "db"]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("db (stdio): approved: sh -c"),
        "{}",
        out.stdout
    );
    assert_eq!(starts(&marker), 0, "approving runs nothing");
    let out = env.ctl(&["mcp", "approve", "--type", "db-helper", "nope"]);
    out.expect_code(1);
    assert!(out.stderr.contains("it has: db"), "{}", out.stderr);
    let out = env.ctl(&["mcp", "approve", "--type", "nobody", "db"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("unknown subagent_type 'nobody'"),
        "{}",
        out.stderr
    );

    // Approved: the subagent gets its type's tools (beside Read, which its
    // list allows) and calls them.
    let before = mock.requests().len();
    let (tools, shown) = run_typed_child(
        &env,
        &mock,
        "after",
        vec![
            call("e1", "mcp__db__echo", json!({"text": "from the type"})),
            Reply::text("child done"),
        ],
    );
    assert!(tools.contains(&"mcp__db__echo".to_string()), "{tools:?}");
    assert!(tools.contains(&"Read".to_string()), "{tools:?}");
    assert!(!tools.contains(&"Bash".to_string()), "{tools:?}");
    let (is_error, text) = tool_results(mock.requests()[before + 2].messages())
        .pop()
        .unwrap();
    assert_eq!((is_error, text.as_str()), (false, "from the type"));
    assert!(starts(&marker) >= 1, "the approved server ran");
    assert_eq!(shown["mcp_servers"][0]["name"], "db", "{shown}");
    assert_eq!(shown["mcp_servers"][0]["source"], "agent_type", "{shown}");
    let text = env
        .ctl(&["show", shown["id"].as_str().unwrap()])
        .expect_code(0)
        .stdout
        .clone();
    assert!(text.contains("db (stdio, agent_type)"), "{text}");
    assert_eq!(listed(&env, "db")["state"], "ready");

    // A changed definition is unapproved again; revoking forgets it.
    let changed = type_file(&fx, &marker).replace("stdio\"", "stdio \"");
    std::fs::write(repo.join(".claude/agents/db-helper.md"), changed).unwrap();
    assert_eq!(listed(&env, "db")["state"], "unapproved");
    std::fs::write(
        repo.join(".claude/agents/db-helper.md"),
        type_file(&fx, &marker),
    )
    .unwrap();
    assert_eq!(listed(&env, "db")["state"], "ready");
    let out = env.ctl(&["mcp", "revoke", "--type", "db-helper", "--all"]);
    out.expect_code(0);
    assert!(out.stdout.contains("db-helper/db"), "{}", out.stdout);
    let ran = starts(&marker);
    let (tools, _) = run_typed_child(&env, &mock, "revoked", vec![Reply::text("child done")]);
    assert!(mcp_tools(&tools).is_empty(), "{tools:?}");
    assert_eq!(starts(&marker), ran);
}

#[test]
fn a_type_of_the_persons_own_brings_its_servers_without_approval() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let repo = env.project();
    init_repo(&repo);
    let marker = repo.join("started.log");
    let agents = env.home().join(".config/agentd/agents");
    std::fs::create_dir_all(&agents).unwrap();
    std::fs::write(agents.join("db-helper.md"), type_file(&fx, &marker)).unwrap();
    let _daemon = env.start_daemon();

    let entry = listed(&env, "db");
    assert_eq!(
        (&entry["source"], &entry["state"]),
        (&json!("agent_type"), &json!("ready")),
        "{entry}"
    );
    let out = env.ctl(&["mcp", "approve", "--type", "db-helper", "db"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("is your own") && out.stderr.contains("need no approval"),
        "{}",
        out.stderr
    );
    let before = mock.requests().len();
    let (tools, shown) = run_typed_child(
        &env,
        &mock,
        "own",
        vec![
            call("e1", "mcp__db__echo", json!({"text": "mine"})),
            Reply::text("child done"),
        ],
    );
    assert!(tools.contains(&"mcp__db__echo".to_string()), "{tools:?}");
    let (is_error, text) = tool_results(mock.requests()[before + 2].messages())
        .pop()
        .unwrap();
    assert_eq!((is_error, text.as_str()), (false, "mine"));
    assert!(
        notes(&shown).iter().any(|n| n.contains("\"github\"")),
        "the reference no source defines is noted: {shown}"
    );
    // The parent, of no type, has none of them.
    let parent_tools = mock.requests()[before].tool_names();
    assert!(mcp_tools(&parent_tools).is_empty(), "{parent_tools:?}");
}
