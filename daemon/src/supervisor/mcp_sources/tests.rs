#![allow(clippy::unwrap_used)]

use super::*;
use crate::mcp::Transport;
use crate::store::StoreOptions;

fn repo_with(json: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("repo");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    let root = root.canonicalize().unwrap();
    std::fs::write(root.join(".mcp.json"), json).unwrap();
    (dir, root)
}

fn names(c: &Candidates) -> Vec<(&str, McpOrigin, bool)> {
    c.servers
        .iter()
        .map(|s| (s.def.name.as_str(), s.origin, s.approved))
        .collect()
}

fn type_servers(own: bool, yaml: &str) -> TypeServers {
    let value: serde_norway::Value = serde_norway::from_str(yaml).unwrap();
    TypeServers {
        type_name: "reviewer".into(),
        own,
        mcp: TypeMcp::parse(&value).unwrap(),
    }
}

#[tokio::test]
async fn a_types_servers_come_between_config_and_the_repository() {
    let (dir, root) = repo_with(
        r#"{"mcpServers": {"mine": {"command": "repo-mine"}, "db": {"command": "repo-db"},
            "extra": {"command": "repo-extra"}}}"#,
    );
    let store = Store::open(&dir.path().join("data"), StoreOptions::default()).unwrap();
    let config = [
        ServerDef::stdio_for_test("mine", "x"),
        ServerDef::stdio_for_test("shared", "config-shared"),
    ];
    let by_name = |c: &Candidates, n: &str| {
        c.servers
            .iter()
            .find(|s| s.def.name.as_str() == n)
            .map(|s| (s.origin, s.approved, command_of(&s.def)))
    };

    // The person's own type: it takes config's name and needs no
    // approval; the repository cannot take its names.
    let own = type_servers(
        true,
        "- shared:\n    command: type-shared\n- db:\n    command: type-db\n- missing\n- extra\n",
    );
    let found = Candidates::gather(&store, &config, Some(&own), &root);
    let mine_type = McpOrigin::AgentType { own: true };
    assert_eq!(
        by_name(&found, "shared"),
        Some((mine_type, true, "type-shared".into()))
    );
    assert_eq!(
        by_name(&found, "db"),
        Some((mine_type, true, "type-db".into()))
    );
    assert_eq!(
        by_name(&found, "mine"),
        Some((McpOrigin::Config, true, "x".into()))
    );
    assert_eq!(
        by_name(&found, "extra"),
        Some((McpOrigin::Repository, false, "repo-extra".into()))
    );
    let notes = found.agent_notes(&[]);
    assert!(
        notes.iter().any(|n| n.contains("\"db\" is ignored")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("asks for MCP server \"missing\"")),
        "{notes:?}"
    );
    assert!(
        !notes.iter().any(|n| n.contains("\"extra\", which")),
        "a reference .mcp.json defines is no note: {notes:?}"
    );
    // A server the editor passes satisfies a reference too.
    let notes = found.agent_notes(&[ServerDef::stdio_for_test("missing", "editor")]);
    assert!(!notes.iter().any(|n| n.contains("asks for")), "{notes:?}");

    // A repository's type: never config's names, approved apart from
    // .mcp.json's, and .mcp.json's definition of a name wins.
    let theirs = type_servers(
        false,
        "tool:\n  command: type-tool\nmine:\n  command: type-mine\ndb:\n  command: type-db\n",
    );
    let found = Candidates::gather(&store, &config, Some(&theirs), &root);
    let their_type = McpOrigin::AgentType { own: false };
    assert_eq!(
        by_name(&found, "tool"),
        Some((their_type, false, "type-tool".into()))
    );
    assert_eq!(
        by_name(&found, "mine"),
        Some((McpOrigin::Config, true, "x".into()))
    );
    assert_eq!(
        by_name(&found, "db"),
        Some((McpOrigin::Repository, false, "repo-db".into()))
    );
    let notes = found.agent_notes(&[]);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("agent type \"reviewer\"'s MCP server \"mine\" is ignored")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("`agentctl mcp approve --type reviewer tool`")),
        "{notes:?}"
    );
    assert!(
        !found
            .to_start()
            .iter()
            .any(|(d, _)| d.name.as_str() == "tool")
    );

    // Approved under the type's name: the type's server, not a
    // .mcp.json server of that name.
    let tool = ServerDef::stdio_for_test("tool", "type-tool");
    let approve = |name: String, def: &ServerDef| Approval {
        name,
        fingerprint: def.fingerprint(),
        approved_at_ms: 1,
    };
    store
        .approve_durable(
            Approved::McpServers,
            &root,
            &[approve("tool".into(), &tool)],
        )
        .await
        .unwrap();
    let found = Candidates::gather(&store, &config, Some(&theirs), &root);
    assert!(!by_name(&found, "tool").unwrap().1);
    store
        .approve_durable(
            Approved::McpServers,
            &root,
            &[approve(
                TypeServers::approval_name("reviewer", &tool.name),
                &tool,
            )],
        )
        .await
        .unwrap();
    let found = Candidates::gather(&store, &config, Some(&theirs), &root);
    assert!(by_name(&found, "tool").unwrap().1);
    let started: Vec<_> = found
        .to_start()
        .into_iter()
        .filter(|(d, _)| d.name.as_str() == "tool")
        .map(|(_, source)| source)
        .collect();
    assert_eq!(started, [McpSource::AgentType]);
}

fn command_of(def: &ServerDef) -> String {
    match &def.transport {
        Transport::Stdio { command, .. } => command.clone(),
        Transport::Http { url, .. } => url.clone(),
    }
}

#[tokio::test]
async fn a_repository_server_starts_only_as_the_definition_approved() {
    let (dir, root) = repo_with(r#"{"mcpServers": {"tools": {"command": "run-me"}}}"#);
    let store = Store::open(&dir.path().join("data"), StoreOptions::default()).unwrap();
    let config = [ServerDef::stdio_for_test("mine", "x")];
    let found = Candidates::gather(&store, &config, None, &root);
    assert_eq!(
        names(&found),
        [
            ("mine", McpOrigin::Config, true),
            ("tools", McpOrigin::Repository, false)
        ]
    );
    assert_eq!(found.repository.as_deref(), Some(root.as_path()));
    let start: Vec<_> = found.to_start().into_iter().map(|(d, _)| d.name).collect();
    assert_eq!(start, [ServerName::parse("mine").unwrap()]);
    let notes = found.agent_notes(&[]);
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0].contains("\"tools\" (stdio) was not started"),
        "{notes:?}"
    );
    assert!(notes[0].contains("agentctl mcp approve tools"), "{notes:?}");

    let tools = ServerDef::stdio_for_test("tools", "run-me");
    let approval = |def: &ServerDef| Approval {
        name: def.name.as_str().into(),
        fingerprint: def.fingerprint(),
        approved_at_ms: 1,
    };
    store
        .approve_durable(Approved::McpServers, &root, &[approval(&tools)])
        .await
        .unwrap();
    let found = Candidates::gather(&store, &config, None, &root);
    assert_eq!(found.to_start().len(), 2);
    assert!(found.agent_notes(&[]).is_empty());

    // Changed arguments: a definition no one approved.
    std::fs::write(
        root.join(".mcp.json"),
        r#"{"mcpServers": {"tools": {"command": "run-me", "args": ["--more"]}}}"#,
    )
    .unwrap();
    let found = Candidates::gather(&store, &config, None, &root);
    assert_eq!(found.to_start().len(), 1);
    assert!(!found.servers[1].approved);
    // Approved elsewhere is not approved here.
    let other = dir.path().join("other");
    std::fs::create_dir_all(other.join(".git")).unwrap();
    std::fs::write(
        other.join(".mcp.json"),
        r#"{"mcpServers": {"tools": {"command": "run-me"}}}"#,
    )
    .unwrap();
    let found = Candidates::gather(&store, &config, None, &other);
    assert!(!found.servers[1].approved);
}

#[test]
fn outside_a_repository_only_config_servers_count() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("data"), StoreOptions::default()).unwrap();
    let found = Candidates::gather(
        &store,
        &[ServerDef::stdio_for_test("mine", "x")],
        None,
        Path::new("/"),
    );
    assert_eq!(names(&found), [("mine", McpOrigin::Config, true)]);
    assert!(found.notes.is_empty());
}

#[test]
fn a_client_directory_must_be_absolute_and_exist() {
    assert!(matches!(
        client_dir(Path::new("rel")),
        Err(AgentdError::Invalid(_))
    ));
    assert!(matches!(
        client_dir(Path::new("/definitely/not/here")),
        Err(AgentdError::Invalid(_))
    ));
    let long = PathBuf::from(format!("/{}", "a".repeat(10_000)));
    let err = client_dir(&long).unwrap_err().to_string();
    assert!(err.len() < 300, "{err}");
}
