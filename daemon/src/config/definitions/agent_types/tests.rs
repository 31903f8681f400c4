use super::*;
use crate::domain::ToolName;

#[test]
fn builtins_resolve_and_custom_files_override_them() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cfg");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join("sub")).unwrap();
    assert_eq!(
        resolve("Explore", &repo.join("sub"), &cfg)
            .unwrap()
            .tools
            .unwrap()
            .tools()[0],
        ToolName::Read
    );
    std::fs::create_dir_all(repo.join(".agentd/agents")).unwrap();
    std::fs::write(
        repo.join(".agentd/agents/reviewer.md"),
        "---\nname: reviewer\ndescription: Reviews diffs\ntools: Read, Grep\nmodel: anthropic:claude-x\npermissionMode: plan\n---\nYou review code.\n",
    )
    .unwrap();
    let t = resolve("reviewer", &repo.join("sub"), &cfg).unwrap();
    assert_eq!(
        t.tools,
        Some(ToolAllowlist::only(&[ToolName::Read, ToolName::Grep]))
    );
    assert_eq!(t.model.as_deref(), Some("anthropic:claude-x"));
    assert_eq!(t.instructions, "You review code.");
    assert_eq!(t.permission_mode, Some(PermissionMode::Plan));
    let err = resolve("nobody", &repo, &cfg).unwrap_err();
    assert!(
        matches!(&err, TypeError::Unknown(m) if m.contains("unknown subagent_type 'nobody'")),
        "{err}"
    );
}

/// A file as Claude Code writes it (its documented sub-agent format).
const CLAUDE_CODE_REVIEWER: &str = "---\nname: code-reviewer\ndescription: Expert code \
review specialist. Use proactively after writing code.\ntools: Read, Grep, Glob, Bash, \
WebFetch\nmodel: sonnet\ncolor: purple\n---\n\nYou are a senior code reviewer.\n";

#[test]
fn claude_code_agent_files_are_read_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("cfg");
    let repo = dir.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::create_dir_all(repo.join(".claude/agents")).unwrap();
    std::fs::write(
        repo.join(".claude/agents/code-reviewer.md"),
        CLAUDE_CODE_REVIEWER,
    )
    .unwrap();
    let t = resolve("code-reviewer", &repo, &cfg).unwrap();
    // WebFetch is not agentd's: left out, never more.
    assert_eq!(
        t.tools,
        Some(ToolAllowlist::only(&[
            ToolName::Read,
            ToolName::Grep,
            ToolName::Glob,
            ToolName::Bash
        ]))
    );
    assert_eq!(t.model.as_deref(), Some("sonnet"));
    assert_eq!(t.instructions, "You are a senior code reviewer.");
    // The same file among agentd's own types: `color` is refused there.
    let err = parse_type_file(Path::new("x.md"), CLAUDE_CODE_REVIEWER).unwrap_err();
    assert!(err.contains("unknown field `color`"), "{err}");
    // agentd's directory wins over Claude Code's for the same name.
    std::fs::create_dir_all(repo.join(".agentd/agents")).unwrap();
    std::fs::write(
        repo.join(".agentd/agents/code-reviewer.md"),
        "---\nname: code-reviewer\ndescription: ours\n---\nOurs.\n",
    )
    .unwrap();
    assert_eq!(
        resolve("code-reviewer", &repo, &cfg).unwrap().description,
        "ours"
    );
    // ~/.claude/agents too, after the repository's and agentd's own;
    // `model: inherit` means the parent's model.
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".claude/agents")).unwrap();
    std::fs::write(
        home.join(".claude/agents/helper.md"),
        "---\nname: helper\ndescription: Helps\nmodel: inherit\ncolor: red\n---\nHelp.\n",
    )
    .unwrap();
    let t = resolve_in("helper", &repo, &cfg, Some(&home)).unwrap();
    assert_eq!(t.model, None);
    assert_eq!(t.instructions, "Help.");
    assert!(resolve_in("helper", &repo, &cfg, None).is_err());
}

#[test]
fn claude_code_model_aliases_resolve_on_anthropic_and_inherit_elsewhere() {
    let on = |m, parent| model_for_child(m, parent);
    assert_eq!(
        on(Some("sonnet"), "anthropic:claude-opus-4-1").as_deref(),
        Some("anthropic:claude-sonnet-4-5")
    );
    assert_eq!(
        on(Some("haiku"), "anthropic:x").as_deref(),
        Some("anthropic:claude-haiku-4-5")
    );
    assert_eq!(on(Some("sonnet"), "openai:gpt-5"), None);
    assert_eq!(on(Some("opus"), "scripted:s.json"), None);
    assert_eq!(on(None, "anthropic:x"), None);
    assert_eq!(
        on(Some("openai:gpt-5"), "anthropic:x").as_deref(),
        Some("openai:gpt-5")
    );
}

#[test]
fn a_type_can_ask_for_a_worktree_and_a_stricter_sandbox() {
    let p = Path::new("x.md");
    let t = parse_type_file(
        p,
        "---\nname: a\ndescription: d\nisolation: worktree\nsandbox: read-only\n---\nbody",
    )
    .unwrap();
    assert_eq!(t.isolation, Isolation::Worktree);
    assert_eq!(t.sandbox, Some(SandboxMode::ReadOnly));
    let hosts = parse_type_file(
        p,
        "---\nname: a\ndescription: d\nnetwork_allow: [\"*.corp.example\", \"h:8443\"]\n---\nbody",
    )
    .unwrap();
    assert_eq!(hosts.network_allow.len(), 2);
    let bad = parse_type_file(
        p,
        "---\nname: a\ndescription: d\nnetwork_allow: [\"a b\"]\n---\nb",
    )
    .unwrap_err();
    assert!(bad.contains("network_allow"), "{bad}");
    let err =
        parse_type_file(p, "---\nname: a\ndescription: d\nsandbox: yolo\n---\nbody").unwrap_err();
    assert!(err.contains("sandbox 'yolo' is not one of"), "{err}");
    let err =
        parse_type_file(p, "---\nname: a\ndescription: d\nisolation: vm\n---\nbody").unwrap_err();
    assert!(err.contains("isolation 'vm' is not one of"), "{err}");
}

#[test]
fn a_type_sets_family_limits_and_a_budget_in_either_dialect() {
    let p = Path::new("x.md");
    let text = "---\nname: a\ndescription: d\nmax_children: 2\nmax_depth: 1\nmax_concurrent_requests: 3\nbudget_usd: 0.5\n---\nbody";
    for dialect in [Dialect::Agentd, Dialect::ClaudeCode] {
        let t = parse_type_file_as(p, text, dialect).unwrap();
        assert_eq!(
            t.limits,
            FamilyLimits::new(Some(2), Some(1), Some(3)).unwrap()
        );
        assert_eq!(t.budget, Some(Budget::new(Some(0.5), None).unwrap()));
    }
    let none = parse_type_file(p, "---\nname: a\ndescription: d\n---\nbody").unwrap();
    assert!(none.limits.is_empty() && none.budget.is_none());
    let err =
        parse_type_file(p, "---\nname: a\ndescription: d\nmax_children: 0\n---\nb").unwrap_err();
    assert!(err.contains("x.md: max_children must be from 1"), "{err}");
    let err =
        parse_type_file(p, "---\nname: a\ndescription: d\nbudget_usd: -1\n---\nb").unwrap_err();
    assert!(err.contains("budget_usd / budget_tokens"), "{err}");
    let err =
        parse_type_file(p, "---\nname: a\ndescription: d\nmax_depth: deep\n---\nb").unwrap_err();
    assert!(err.contains("invalid front matter"), "{err}");
}

#[test]
fn malformed_type_files_are_clear_errors() {
    let p = Path::new("x.md");
    assert!(
        parse_type_file(p, "no front matter")
            .unwrap_err()
            .contains("must start")
    );
    assert!(
        parse_type_file(p, "---\nname: a\n")
            .unwrap_err()
            .contains("closing")
    );
    assert!(
        parse_type_file(p, "---\nname: a\ndescription: d\nbogus: 1\n---\nbody")
            .unwrap_err()
            .contains("invalid front matter")
    );
    assert!(
        parse_type_file(p, "---\nname: a\ndescription: d\n---\n")
            .unwrap_err()
            .contains("body")
    );
    assert!(
        parse_type_file(
            p,
            "---\nname: a\ndescription: d\npermissionMode: yolo\n---\nbody"
        )
        .unwrap_err()
        .contains("unknown permissionMode")
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::create_dir_all(dir.path().join(".agentd/agents")).unwrap();
    std::fs::write(
        dir.path().join(".agentd/agents/broken.md"),
        "---\nname: broken\n---\nx",
    )
    .unwrap();
    let err = resolve("broken", dir.path(), &dir.path().join("cfg")).unwrap_err();
    assert!(
        matches!(&err, TypeError::Unusable(m) if m.contains("broken.md")),
        "{err}"
    );
}

#[test]
fn a_types_servers_are_read_and_its_origin_says_whose_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let cfg = dir.path().join("cfg");
    let home = dir.path().join("home");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    for d in [
        repo.join(".claude/agents"),
        cfg.join("agents"),
        home.join(".claude/agents"),
    ] {
        std::fs::create_dir_all(d).unwrap();
    }
    let file = |servers: &str| {
        format!(
            "---\nname: db-helper\ndescription: Queries\ntools: Read, mcp__github__*\n\
             mcpServers:\n{servers}---\nYou query.\n"
        )
    };
    std::fs::write(
        home.join(".claude/agents/db.md"),
        file("  - github\n  - db:\n      command: db-server\n"),
    )
    .unwrap();
    let t = resolve_in("db-helper", &repo, &cfg, Some(&home)).unwrap();
    assert_eq!(
        t.origin,
        TypeOrigin::User(home.join(".claude/agents/db.md"))
    );
    assert_eq!(t.mcp.inline.len(), 1);
    assert_eq!(t.mcp.references[0].as_str(), "github");
    // Its own server's tools are on its list; others' only as listed.
    let tools = t.tools.unwrap();
    let tool = |n: &str| crate::domain::McpToolName::parse(n).unwrap();
    assert!(tools.allows_mcp(&tool("mcp__db__query")));
    assert!(tools.allows_mcp(&tool("mcp__github__search")));
    assert!(!tools.allows_mcp(&tool("mcp__other__x")));

    // The same in agentd's own dialect, which knows the key.
    std::fs::write(cfg.join("agents/db.md"), file("  db:\n    command: mine\n")).unwrap();
    let t = resolve_in("db-helper", &repo, &cfg, Some(&home)).unwrap();
    assert_eq!(t.origin, TypeOrigin::User(cfg.join("agents/db.md")));

    // A repository's type file is the repository's.
    std::fs::write(
        repo.join(".claude/agents/db.md"),
        file("  db:\n    command: theirs\n"),
    )
    .unwrap();
    let t = resolve_in("db-helper", &repo, &cfg, Some(&home)).unwrap();
    assert_eq!(
        t.origin,
        TypeOrigin::Repository(repo.join(".claude/agents/db.md"))
    );
    // A bad definition makes the type unusable, saying why.
    std::fs::write(
        repo.join(".claude/agents/db.md"),
        file("  db:\n    command: x\n    sandbox: off\n"),
    )
    .unwrap();
    let err = resolve_in("db-helper", &repo, &cfg, Some(&home)).unwrap_err();
    assert!(
        matches!(&err, TypeError::Unusable(m) if m.contains("server \"db\"") && m.contains("sandbox")),
        "{err}"
    );
}
