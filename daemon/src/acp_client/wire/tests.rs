use super::*;
use crate::domain::ContextFill;

#[test]
fn capabilities_are_read_and_absent_ones_are_off() {
    let info = AgentInfo::read(&json!({
        "protocolVersion": 1,
        "agentCapabilities": {"loadSession": true, "mcpCapabilities": {"http": true},
            "sessionCapabilities": {"resume": {}}}
    }));
    assert!(info.load_session && info.resume_session && info.mcp_http && info.can_reopen());
    let bare = AgentInfo::read(&json!({"protocolVersion": 1}));
    assert!(!bare.can_reopen() && !bare.mcp_http);
}

#[test]
fn env_var_auth_methods_are_read_and_others_ignored() {
    // codex-acp's list, shortened.
    let info = AgentInfo::read(&json!({
        "protocolVersion": 1,
        "authMethods": [
            {"id": "chatgpt", "name": "Login with ChatGPT"},
            {"type": "env_var", "id": "codex-api-key", "name": "Use CODEX_API_KEY",
             "vars": [{"name": "CODEX_API_KEY"}]},
            {"type": "env_var", "id": "openai-api-key", "name": "Use OPENAI_API_KEY",
             "vars": [{"name": "OPENAI_API_KEY"}]},
            {"type": "env_var", "id": "bad", "vars": [{"name": "NOT A NAME"}]},
            {"type": "env_var", "id": "none"},
            {"type": "terminal", "id": "tui", "name": "Log in in a terminal"}
        ]
    }));
    let ids: Vec<&str> = info.env_auth.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(ids, vec!["codex-api-key", "openai-api-key"]);
    let login = info.env_login(|v| v == "OPENAI_API_KEY").unwrap();
    assert_eq!(login.id, "openai-api-key");
    assert!(info.env_login(|_| false).is_none());
}

#[test]
fn updates_are_read_into_what_agentd_stores() {
    let read = |u: Value| Update::read(&json!({"sessionId": "s", "update": u}));
    assert_eq!(
        read(
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
        ),
        Ok(Update::Text("hi".into()))
    );
    assert_eq!(
        read(
            json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hm"}})
        ),
        Ok(Update::Thought("hm".into()))
    );
    let call = read(
        json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Run ls",
        "kind": "execute", "status": "pending", "rawInput": {"command": "ls"},
        "locations": [{"path": "/w/a.rs", "line": 3}]}),
    )
    .unwrap();
    let Update::Call(c) = call else {
        panic!("{call:?}")
    };
    assert_eq!(c.id, "t1");
    assert_eq!(c.kind, Some(CallKind::Execute));
    assert_eq!(c.status, Some(CallStatus::Pending));
    assert_eq!(c.raw_input, Some(json!({"command": "ls"})));
    assert_eq!(c.locations, vec![(PathBuf::from("/w/a.rs"), Some(3))]);
    assert_eq!(c.text, None);
    let done = read(
        json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed",
        "content": [{"type": "content", "content": {"type": "text", "text": "out"}},
                    {"type": "diff", "path": "/w/a.rs", "oldText": null, "newText": "x"}]}),
    )
    .unwrap();
    let Update::CallUpdate(d) = done else {
        panic!()
    };
    assert_eq!(d.text.as_deref(), Some("out"));
    assert_eq!(
        d.diffs,
        vec![Diff {
            path: "/w/a.rs".into(),
            old_text: None,
            new_text: "x".into()
        }]
    );
    assert!(d.status.unwrap().is_done());
    let plan = read(json!({"sessionUpdate": "plan", "entries": [
        {"content": "a", "priority": "high", "status": "in_progress"}]}))
    .unwrap();
    assert_eq!(
        plan,
        Update::Plan(vec![PlanItem {
            content: "a".into(),
            status: PlanStatus::InProgress,
            active_form: "a".into()
        }])
    );
    assert!(matches!(
        read(json!({"sessionUpdate": "current_mode_update"})),
        Ok(Update::Ignored(_))
    ));
}

#[test]
fn usage_updates_give_the_context_and_the_cost_in_dollars() {
    let read = |u: Value| {
        let mut u = u;
        u["sessionUpdate"] = json!("usage_update");
        Update::read(&json!({"update": u}))
    };
    let fill = Some(ContextFill {
        used: 53_000,
        size: 200_000,
    });
    assert_eq!(
        read(json!({"used": 53000, "size": 200000, "cost": {"amount": 0.045, "currency": "USD"}})),
        Ok(Update::Usage(UsageReport {
            context: fill,
            cost_micros: Some(45_000)
        }))
    );
    assert_eq!(
        read(json!({"used": 53000, "size": 200000, "cost": {"amount": 0, "currency": "usd"}})),
        Ok(Update::Usage(UsageReport {
            context: fill,
            cost_micros: Some(0)
        }))
    );
    // No cost, or another currency: nothing to count; no window: no fill.
    for (u, context) in [
        (json!({"used": 53000, "size": 200000}), fill),
        (
            json!({"used": 53000, "size": 200000, "cost": {"amount": 3.0, "currency": "EUR"}}),
            fill,
        ),
        (json!({"used": 53000, "size": 0}), None),
        (json!({"used": -1, "size": 200000}), None),
    ] {
        assert_eq!(
            read(u),
            Ok(Update::Usage(UsageReport {
                context,
                cost_micros: None
            }))
        );
    }
    for amount in [json!(-1.0), json!("3"), json!(1e12), Value::Null] {
        let err =
            read(json!({"used": 1, "size": 2, "cost": {"amount": amount, "currency": "USD"}}))
                .unwrap_err();
        assert!(err.contains("not a cost"), "{err}");
    }
}

#[test]
fn unknown_statuses_are_refused_not_defaulted() {
    let read = |u: Value| Update::read(&json!({"update": u}));
    assert!(
        read(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "status": "done"})).is_err()
    );
    assert!(read(json!({"sessionUpdate": "tool_call", "status": "pending"})).is_err());
    assert!(
        read(json!({"sessionUpdate": "plan", "entries": [{"content": "a", "status": "sort of"}]}))
            .is_err()
    );
    assert!(read(json!({})).is_err());
    let long = "z".repeat(100_000);
    let err =
        read(json!({"sessionUpdate": "tool_call", "toolCallId": "t", "status": long})).unwrap_err();
    assert!(err.len() < 300);
}

#[test]
fn permission_options_never_grant_more_than_asked() {
    let req = PermissionRequest::read(&json!({
        "sessionId": "s",
        "toolCall": {"toolCallId": "t1", "kind": "execute"},
        "options": [
            {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
            {"optionId": "no", "name": "Reject", "kind": "reject_once"},
            {"optionId": "odd", "name": "Sometimes", "kind": "allow_sometimes"}
        ]
    }))
    .unwrap();
    assert_eq!(req.option(OptionKind::AllowAlways), Some("yes"));
    assert_eq!(req.option(OptionKind::AllowOnce), Some("yes"));
    assert_eq!(req.option(OptionKind::RejectAlways), Some("no"));
    let only_allow = PermissionRequest {
        call: req.call.clone(),
        options: vec![("yes".into(), OptionKind::AllowOnce)],
    };
    // No reject on offer: the answer is `cancelled`, never an allow.
    assert_eq!(only_allow.option(OptionKind::RejectOnce), None);
    assert_eq!(permission_outcome(None)["outcome"]["outcome"], "cancelled");
    assert_eq!(
        permission_outcome(Some("yes"))["outcome"]["optionId"],
        "yes"
    );
}

#[test]
fn prompt_ends_carry_usage_when_reported() {
    let end = PromptEnd::read(&json!({"stopReason": "max_tokens",
        "usage": {"inputTokens": 10, "outputTokens": 5, "cachedReadTokens": 2, "totalTokens": 17}}));
    assert_eq!(end.stop_reason, "max_tokens");
    assert_eq!(end.usage.unwrap().cache_read_input_tokens, 2);
    assert_eq!(
        PromptEnd::read(&json!({"stopReason": "end_turn"})).usage,
        None
    );
}

#[test]
fn mcp_servers_are_passed_in_acps_shape() {
    use crate::mcp::{ServerName, Transport};
    let stdio = ServerDef::new(
        ServerName::parse("fx").unwrap(),
        Transport::Stdio {
            command: "./srv".into(),
            args: vec!["-v".into()],
            env: [("K".to_string(), "v".to_string())].into(),
            cwd: Some("tools".into()),
        },
    );
    let http = ServerDef::new(
        ServerName::parse("web").unwrap(),
        Transport::Http {
            url: "http://127.0.0.1:1/mcp".into(),
            headers: Default::default(),
        },
    );
    let (servers, notes) = mcp_servers(&[stdio.clone(), http.clone()], Path::new("/w"), false);
    assert_eq!(
        servers,
        vec![
            json!({"name": "fx", "command": "/w/tools/./srv", "args": ["-v"],
            "env": [{"name": "K", "value": "v"}]})
        ]
    );
    assert!(notes[0].contains("web"), "{notes:?}");
    let (servers, notes) = mcp_servers(&[http], Path::new("/w"), true);
    assert_eq!(servers[0]["type"], "http");
    assert!(notes.is_empty());
}
