//! The decision, as Claude Code documents it.

use serde_json::json;

use super::*;

fn rules(list: &[(Kind, &str)]) -> Vec<Rule> {
    list.iter()
        .map(|(k, t)| Rule::new(*k, t, "test settings", Path::new("/proj")).unwrap())
        .collect()
}

fn bash<'r>(rules: &'r [Rule], command: &str) -> Decision<'r> {
    let input = json!({"command": command});
    decide(
        rules,
        &Call {
            tool: "Bash",
            input: &input,
            cwd: Path::new("/proj"),
            home: Path::new("/home/p"),
        },
    )
}

fn tool<'r>(rules: &'r [Rule], name: &str, input: serde_json::Value) -> Decision<'r> {
    decide(
        rules,
        &Call {
            tool: name,
            input: &input,
            cwd: Path::new("/proj"),
            home: Path::new("/home/p"),
        },
    )
}

fn text(d: &Decision<'_>) -> String {
    match d {
        Decision::None => "none".into(),
        Decision::Allow(r) => format!("allow {}", r.text),
        Decision::Ask(Why::Rule(r)) => format!("ask {}", r.text),
        Decision::Ask(Why::Unparsed(why)) => format!("ask: {why}"),
        Decision::Deny(r) => format!("deny {}", r.text),
    }
}

#[test]
fn deny_wins_over_ask_and_ask_over_allow() {
    let r = rules(&[
        (Kind::Allow, "Bash(git:*)"),
        (Kind::Ask, "Bash(git push:*)"),
        (Kind::Deny, "Bash(git push --force:*)"),
    ]);
    assert_eq!(text(&bash(&r, "git status")), "allow Bash(git:*)");
    assert_eq!(text(&bash(&r, "git push origin")), "ask Bash(git push:*)");
    assert_eq!(
        text(&bash(&r, "git push --force origin")),
        "deny Bash(git push --force:*)"
    );
    assert_eq!(text(&bash(&r, "ls")), "none");
}

#[test]
fn every_part_of_a_compound_command_must_be_allowed_and_any_denied_part_denies() {
    let r = rules(&[
        (Kind::Allow, "Bash(npm run test:*)"),
        (Kind::Allow, "Bash(echo *)"),
        (Kind::Deny, "Bash(rm:*)"),
    ]);
    assert_eq!(
        text(&bash(&r, "npm run test && echo ok")),
        "allow Bash(npm run test:*)"
    );
    assert_eq!(
        text(&bash(&r, "npm run test && curl evil")),
        "none",
        "one part is not allowed"
    );
    assert_eq!(text(&bash(&r, "npm run test; rm -rf /")), "deny Bash(rm:*)");
    assert_eq!(
        text(&bash(&r, "echo x | (cd / && rm -rf x)")),
        "deny Bash(rm:*)"
    );
    assert_eq!(
        text(&bash(&r, "timeout 9 nice rm x")),
        "deny Bash(rm:*)",
        "wrappers looked through"
    );
    assert_eq!(text(&bash(&r, "FOO=1 sudo -u x rm y")), "deny Bash(rm:*)");
}

#[test]
fn what_cannot_be_taken_apart_is_asked_never_allowed() {
    let r = rules(&[(Kind::Allow, "Bash(echo *)"), (Kind::Deny, "Bash(rm:*)")]);
    assert_eq!(
        text(&bash(&r, "echo $(rm -rf ~)")),
        "ask: command substitution"
    );
    assert_eq!(
        text(&bash(&r, "rm `ls`")),
        "deny Bash(rm:*)",
        "a deny still sees the line"
    );
    assert_eq!(
        text(&bash(&r, "cat <(ls)")),
        "none",
        "no rule would allow it: the mode decides"
    );
    let all = rules(&[(Kind::Allow, "Bash")]);
    assert_eq!(text(&bash(&all, "echo $(id)")), "ask: command substitution");
}

#[test]
fn a_bare_name_matches_every_use() {
    let r = rules(&[(Kind::Deny, "Bash"), (Kind::Allow, "Read")]);
    assert_eq!(text(&bash(&r, "ls")), "deny Bash");
    assert_eq!(text(&bash(&r, "echo $(x)")), "deny Bash");
    assert_eq!(
        text(&tool(&r, "Read", json!({"file_path": "/etc/hosts"}))),
        "allow Read"
    );
    assert_eq!(text(&tool(&r, "Write", json!({"file_path": "x"}))), "none");
}

#[test]
fn read_rules_cover_read_grep_glob_and_edit_rules_write_and_edit() {
    let r = rules(&[
        (Kind::Deny, "Read(*.env)"),
        (Kind::Deny, "Edit(//etc/**)"),
        (Kind::Allow, "Edit(./src/**)"),
        (Kind::Ask, "Read(~/.ssh/**)"),
    ]);
    assert_eq!(
        text(&tool(&r, "Read", json!({"file_path": "config/.env"}))),
        "deny Read(*.env)"
    );
    assert_eq!(
        text(&tool(
            &r,
            "Grep",
            json!({"pattern": "x", "path": "a/prod.env"})
        )),
        "deny Read(*.env)"
    );
    assert_eq!(
        text(&tool(
            &r,
            "Write",
            json!({"file_path": "/etc/hosts", "content": ""})
        )),
        "deny Edit(//etc/**)"
    );
    assert_eq!(
        text(&tool(&r, "Edit", json!({"file_path": "src/lib.rs"}))),
        "allow Edit(./src/**)"
    );
    assert_eq!(
        text(&tool(&r, "Edit", json!({"file_path": "src/../../etc/x"}))),
        "deny Edit(//etc/**)",
        "resolved before matching"
    );
    assert_eq!(
        text(&tool(&r, "Read", json!({"file_path": "/home/p/.ssh/id"}))),
        "ask Read(~/.ssh/**)"
    );
    assert_eq!(
        text(&tool(&r, "Read", json!({"file_path": "src/lib.rs"}))),
        "none",
        "an Edit rule is not a Read rule"
    );
}

#[test]
fn mcp_agent_and_webfetch_rules() {
    let r = rules(&[
        (Kind::Deny, "mcp__github__delete_repo"),
        (Kind::Allow, "mcp__github"),
        (Kind::Deny, "Agent(Explore)"),
        (Kind::Allow, "WebFetch(domain:docs.rs)"),
    ]);
    assert_eq!(
        text(&tool(&r, "mcp__github__delete_repo", json!({}))),
        "deny mcp__github__delete_repo"
    );
    assert_eq!(
        text(&tool(&r, "mcp__github__create_issue", json!({}))),
        "allow mcp__github"
    );
    assert_eq!(text(&tool(&r, "mcp__gitlab__x", json!({}))), "none");
    assert_eq!(
        text(&tool(&r, "Agent", json!({"subagent_type": "Explore"}))),
        "deny Agent(Explore)"
    );
    assert_eq!(
        text(&tool(
            &r,
            "Agent",
            json!({"subagent_type": "general-purpose"})
        )),
        "none"
    );
    assert_eq!(
        text(&tool(&r, "WebFetch", json!({"url": "https://docs.rs/x"}))),
        "allow WebFetch(domain:docs.rs)"
    );
    assert_eq!(
        text(&tool(
            &r,
            "WebFetch",
            json!({"url": "https://evil.com/?docs.rs"})
        )),
        "none"
    );
}
