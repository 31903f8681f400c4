//! Permission rules people keep for Claude Code (DESIGN §24), end to end:
//! `~/.claude/settings.json`, agentd's `[permissions]` and a repository's
//! `.claude/settings.json`, against scripted agents.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use agentd_e2e::script::bash_each;
use agentd_e2e::{Env, tool_results};

fn run(env: &Env, commands: &[String], flags: &[&str]) -> (String, Vec<(bool, String)>) {
    let model = env.script("rules.json", &bash_each(commands));
    let id = env.start_model(&model, flags);
    env.ctl(&["wait", &id]);
    let got = tool_results(&env.transcript(&id));
    (id, got)
}

#[test]
fn a_users_deny_holds_in_bypass_and_names_its_rule_and_file() {
    let env = Env::new();
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(rm:*)", "Read(*.env)"]}}"#,
    )
    .unwrap();
    let p = env.project();
    std::fs::write(p.join("keep.txt"), "x").unwrap();
    let _daemon = env.start_daemon();
    let commands = [
        "rm keep.txt".to_string(),
        "echo ok && timeout 5 rm -f keep.txt".to_string(),
        "echo fine".to_string(),
    ];
    let (id, got) = run(&env, &commands, &["--permission-mode", "bypass"]);
    assert_eq!(got.len(), 3, "{got:?}");
    for (is_error, text) in &got[..2] {
        assert!(*is_error, "{text}");
        assert!(
            text.contains("denied by Bash(rm:*) in ~/.claude/settings.json"),
            "{text}"
        );
    }
    assert!(!got[2].0 && got[2].1.contains("fine"), "{:?}", got[2]);
    assert!(p.join("keep.txt").exists(), "nothing was removed");
    assert_eq!(env.show(&id)["status"], "completed");
    // Each decision is in the transcript with its rule and file.
    let decisions: Vec<(String, String, String)> = env
        .transcript(&id)
        .iter()
        .flat_map(|e| e["rule_decisions"].as_array().cloned().unwrap_or_default())
        .map(|d| {
            let s = |k: &str| d[k].as_str().unwrap().to_string();
            (s("verdict"), s("rule"), s("source"))
        })
        .collect();
    let denied = (
        "denied".to_string(),
        "Bash(rm:*)".to_string(),
        "~/.claude/settings.json".to_string(),
    );
    assert_eq!(decisions, [denied.clone(), denied], "one per denied call");
}

#[test]
fn a_repositorys_deny_applies_and_its_allow_does_not() {
    let env = Env::new();
    let p = env.project();
    agentd_e2e::gitrepo::init_repo(&p);
    std::fs::create_dir_all(p.join(".claude")).unwrap();
    std::fs::write(
        p.join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(curl:*)"], "allow": ["Bash"]}}"#,
    )
    .unwrap();
    // agentd's own allow applies.
    env.write_config("[permissions]\nallow = [\"Bash(echo:*)\"]\n");
    let _daemon = env.start_daemon();
    let commands = [
        "curl http://example.com".to_string(),
        "echo mine".to_string(),
    ];
    let (first, got) = run(&env, &commands, &["--permission-mode", "default"]);
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(
        got[0].0 && got[0].1.contains("denied by Bash(curl:*)"),
        "{:?}",
        got[0]
    );
    assert!(got[0].1.contains(".claude/settings.json"), "{:?}", got[0]);
    // Allowed by config.toml without an ask (in default mode Bash asks).
    assert!(!got[1].0 && got[1].1.contains("mine"), "{:?}", got[1]);
    // `log` says which rule decided each call, and where it was written.
    let log = env.ctl(&["log", &first]).expect_code(0).stderr.clone();
    assert!(
        log.contains("· allowed by Bash(echo:*) in config.toml"),
        "{log}"
    );
    assert!(log.contains("denied by Bash(curl:*) in "), "{log}");
    // The repository's `allow: ["Bash"]` is not applied: `ls` asks.
    let model = env.script("ls.json", &bash_each(&["ls".to_string()]));
    let id = env.start_model(&model, &["--permission-mode", "default"]);
    env.wait_for_agent(&id, "its ask", |a| a["status"] == "waiting");
    env.ctl(&["stop", &id]).expect_code(0);
}

#[test]
fn a_malformed_rule_fails_the_run_naming_the_file_and_the_rule() {
    let env = Env::new();
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(rm:*"]}}"#,
    )
    .unwrap();
    let _daemon = env.start_daemon();
    let (id, got) = run(&env, &["echo never".to_string()], &[]);
    assert!(got.is_empty(), "nothing ran: {got:?}");
    let shown = env.show(&id);
    assert_eq!(shown["status"], "failed", "{shown}");
    let error = shown["error"].as_str().unwrap();
    assert!(
        error.contains("~/.claude/settings.json") && error.contains("\"Bash(rm:*\""),
        "{error}"
    );
}

#[test]
fn rules_list_shows_every_rule_its_file_and_whether_it_applies() {
    let env = Env::new();
    let p = env.project();
    agentd_e2e::gitrepo::init_repo(&p);
    std::fs::create_dir_all(p.join(".claude")).unwrap();
    std::fs::write(
        p.join(".claude/settings.local.json"),
        r#"{"permissions": {"allow": ["Bash"], "ask": ["Bash(git push:*)"]}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Read(~/.ssh/**)"]}}"#,
    )
    .unwrap();
    let _daemon = env.start_daemon();
    let rows = env.ctl(&["rules", "list", "--json"]).expect_code(0).json();
    let rows: Vec<(String, String, bool)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["kind"].as_str().unwrap().to_string(),
                r["rule"].as_str().unwrap().to_string(),
                r["applies"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("deny".to_string(), "Read(~/.ssh/**)".to_string(), true),
            ("allow".to_string(), "Bash".to_string(), false),
            ("ask".to_string(), "Bash(git push:*)".to_string(), true),
        ]
    );
    let text = env.ctl(&["rules", "list"]).expect_code(0).stdout.clone();
    assert!(
        text.contains("not approved") && text.contains("settings.local.json"),
        "{text}"
    );
    // A malformed rule is named, with its file.
    std::fs::write(
        p.join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(rm"]}}"#,
    )
    .unwrap();
    let out = env.ctl(&["rules", "list"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("\"Bash(rm\"") && out.stderr.contains(".claude/settings.json"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_deny_holds_for_a_fork_whatever_its_tools_say() {
    use agentd_e2e::forking::TAG;
    use agentd_e2e::mock::{MODEL, MockServer, Reply};
    use serde_json::json;
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config(agentd_e2e::FAST_RETRY);
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#,
    )
    .unwrap();
    std::fs::write(env.project().join("keep.txt"), "x").unwrap();
    mock.respond_with(|r| {
        let last = r.messages().last()?;
        if !tool_results(std::slice::from_ref(last)).is_empty() {
            return Some(Reply::text("done"));
        }
        if r.json.to_string().contains(TAG) {
            return Some(Reply::tool("f1", "Bash", json!({"command": "rm keep.txt"})));
        }
        Some(Reply::text("looked"))
    });
    let _daemon = env.start_daemon();
    let boss = env.run_background(MODEL, "boss", "look around");
    env.ctl(&["wait", &boss]).expect_code(0);
    let out = env.ctl(&[
        "fork",
        "boss",
        "--tools",
        "Bash",
        "--background",
        "clean up",
    ]);
    out.expect_code(0);
    let fork = out.stdout.trim().to_string();
    env.ctl(&["wait", &fork]).expect_code(0);
    let got = tool_results(&env.transcript(&fork));
    let last = got.last().unwrap();
    assert!(last.0 && last.1.contains("denied by Bash(rm:*)"), "{got:?}");
    assert!(env.project().join("keep.txt").exists());
}

#[test]
fn a_deny_holds_for_a_subagent() {
    use agentd_e2e::mock::{MODEL, MockMessage, MockServer, Reply, prompt_of};
    use agentd_e2e::parent;
    use serde_json::json;
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    env.write_config(agentd_e2e::FAST_RETRY);
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"permissions": {"deny": ["Bash(rm:*)"]}}"#,
    )
    .unwrap();
    std::fs::write(env.project().join("keep.txt"), "x").unwrap();
    mock.respond_with(|r| {
        if !prompt_of(r).contains("CHILD") {
            return None;
        }
        let last = r.messages().last()?;
        if tool_results(std::slice::from_ref(last)).is_empty() {
            Some(Reply::tool("c1", "Bash", json!({"command": "rm keep.txt"})))
        } else {
            Some(Reply::text("child done"))
        }
    });
    parent::answers(
        &mock,
        MockMessage::text("delegating").with(parent::agent_call("CHILD clean up", false)),
        Reply::text("ok"),
    );
    let _daemon = env.start_daemon();
    let boss = env.run_background(MODEL, "boss", "PARENT delegate");
    env.ctl(&["wait", &boss]).expect_code(0);
    let child = env
        .agents()
        .into_iter()
        .find(|a| a["parent_id"].as_str() == Some(boss.as_str()))
        .unwrap();
    let got = tool_results(&env.transcript(child["id"].as_str().unwrap()));
    assert!(
        got.first()
            .is_some_and(|(e, t)| *e && t.contains("denied by Bash(rm:*)")),
        "{got:?}"
    );
    assert!(env.project().join("keep.txt").exists());
}

#[test]
fn a_repositorys_settings_file_that_is_a_link_out_or_a_fifo_is_refused_unread() {
    let env = Env::new();
    let p = env.project();
    agentd_e2e::gitrepo::init_repo(&p);
    std::fs::create_dir_all(p.join(".claude")).unwrap();
    // A link out of the repository (to a secret, say), then a FIFO.
    let secret = env.root.path().join("secret.json");
    std::fs::write(&secret, r#"{"permissions": {"allow": ["Bash"]}}"#).unwrap();
    std::os::unix::fs::symlink(&secret, p.join(".claude/settings.json")).unwrap();
    let _daemon = env.start_daemon();
    let out = env.ctl(&["rules", "list"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("leads out of its directory"),
        "{}",
        out.stderr
    );
    std::fs::remove_file(p.join(".claude/settings.json")).unwrap();
    nix::unistd::mkfifo(
        &p.join(".claude/settings.json"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .unwrap();
    let out = env.ctl(&["rules", "list"]);
    out.expect_code(1);
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
}

/// `(rule, applies, fingerprint)` of the allow rules `rules list` shows.
fn allow_rules(env: &Env) -> Vec<(String, bool, String)> {
    let rows = env.ctl(&["rules", "list", "--json"]).expect_code(0).json();
    rows.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["kind"] == "allow")
        .map(|r| {
            (
                r["rule"].as_str().unwrap().to_string(),
                r["applies"].as_bool().unwrap(),
                r["fingerprint"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_repositorys_allow_rule_applies_once_approved_and_not_once_changed() {
    let env = Env::new();
    let p = env.project();
    agentd_e2e::gitrepo::init_repo(&p);
    std::fs::create_dir_all(p.join(".claude")).unwrap();
    let settings = p.join(".claude/settings.json");
    std::fs::write(&settings, r#"{"permissions": {"allow": ["Bash(ls:*)"]}}"#).unwrap();
    let _daemon = env.start_daemon();
    let listed = allow_rules(&env);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(!listed[0].1, "unapproved: {listed:?}");
    assert_eq!(listed[0].2.len(), 64, "a SHA-256: {listed:?}");

    // Unapproved, `ls` asks in default mode.
    let model = env.script("ls.json", &bash_each(&["ls".to_string()]));
    let asked = env.start_model(&model, &["--permission-mode", "default"]);
    env.wait_for_agent(&asked, "its ask", |a| a["status"] == "waiting");
    env.ctl(&["stop", &asked]).expect_code(0);

    // Naming a rule the files do not have is refused, approving nothing.
    let out = env.ctl(&["rules", "approve", "Bash(rm:*)"]);
    assert_ne!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("no allow rule"), "{}", out.stderr);
    assert!(!allow_rules(&env)[0].1);

    // Approved by its fingerprint's prefix: it runs without an ask.
    let approved = env
        .ctl(&["rules", "approve", &listed[0].2[..12], "--json"])
        .expect_code(0)
        .json();
    assert_eq!(approved["rules"][0]["rule"], "Bash(ls:*)", "{approved}");
    assert_eq!(approved["rules"][0]["already"], false);
    assert!(allow_rules(&env)[0].1);
    let (id, got) = run(&env, &["ls".to_string()], &["--permission-mode", "default"]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(!got[0].0, "{got:?}");
    let log = env.ctl(&["log", &id]).expect_code(0).stderr.clone();
    assert!(log.contains("allowed by Bash(ls:*) in "), "{log}");

    // A changed rule is unapproved again; written back as it was, it is
    // the rule approved.
    std::fs::write(
        &settings,
        r#"{"permissions": {"allow": ["Bash(ls -la:*)"]}}"#,
    )
    .unwrap();
    assert!(!allow_rules(&env)[0].1);
    std::fs::write(&settings, r#"{"permissions": {"allow": ["Bash(ls:*)"]}}"#).unwrap();
    assert!(allow_rules(&env)[0].1);
    let again = env
        .ctl(&["rules", "approve", "Bash(ls:*)", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(again["rules"][0]["already"], true, "{again}");

    // Revoked, it asks again.
    let revoked = env
        .ctl(&["rules", "revoke", "--all", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(revoked["rules"][0]["rule"], "Bash(ls:*)", "{revoked}");
    assert!(!allow_rules(&env)[0].1);
    let asked = env.start_model(&model, &["--permission-mode", "default"]);
    env.wait_for_agent(&asked, "its ask", |a| a["status"] == "waiting");
    env.ctl(&["stop", &asked]).expect_code(0);
    let out = env.ctl(&["rules", "revoke", "Bash(ls:*)"]);
    assert_ne!(out.code, 0, "nothing left to revoke: {out:?}");
}

#[test]
fn always_remembered_keeps_the_calls_rule_in_agentds_config_for_every_agent() {
    use agentd_e2e::attached::Attached;
    use agentd_shared::proto::permission_answer::Decision;
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script(
        "ask.json",
        &bash_each(&["echo $(id)".to_string(), "echo kept".to_string()]),
    );
    let id = env.start_model(&model, &["--permission-mode", "default"]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut client = Attached::open(&env, &id).await;
        // A line that cannot be taken apart has no rule to keep: asked to
        // remember, the daemon refuses and the ask stays open.
        let ask = client.next_ask().await;
        assert!(ask.remember_rules.is_empty(), "{ask:?}");
        client.answer_remembered(&ask, Decision::AllowAlways).await;
        let notice = client.next_notice().await;
        assert!(
            notice.is_error && notice.text.contains("no rule can be written"),
            "{notice:?}"
        );
        client.answer(&ask, Decision::AllowOnce, "").await;
        client.resolved(&ask).await;
        let ask = client.next_ask().await;
        assert_eq!(ask.remember_rules, ["Bash(echo kept)"], "{ask:?}");
        // Only an "always" is remembered.
        client.answer_remembered(&ask, Decision::AllowOnce).await;
        let notice = client.next_notice().await;
        assert!(notice.is_error, "{notice:?}");
        client.answer_remembered(&ask, Decision::AllowAlways).await;
        client.resolved(&ask).await;
    });
    env.ctl(&["wait", &id]).expect_code(0);
    let file = env.home().join(".config/agentd/remembered-rules.toml");
    let kept = std::fs::read_to_string(&file).unwrap();
    assert!(kept.contains("\"Bash(echo kept)\""), "{kept}");
    // Listed with the other rules, and applied to another agent: it runs
    // without an ask in default mode.
    let rows = env.ctl(&["rules", "list", "--json"]).expect_code(0).json();
    assert_eq!(rows[0]["rule"], "Bash(echo kept)", "{rows}");
    assert_eq!(rows[0]["source"], "remembered-rules.toml");
    assert_eq!(rows[0]["applies"], true);
    let (other, got) = run(
        &env,
        &["echo kept".to_string()],
        &["--permission-mode", "default"],
    );
    assert!(!got[0].0 && got[0].1.contains("kept"), "{got:?}");
    let log = env.ctl(&["log", &other]).expect_code(0).stderr.clone();
    assert!(
        log.contains("allowed by Bash(echo kept) in remembered-rules.toml"),
        "{log}"
    );
    // Nothing was written into the project.
    assert!(!env.project().join(".claude").exists());
}

#[test]
fn default_mode_comes_from_the_persons_settings_and_a_repository_only_tightens_it() {
    let env = Env::new();
    let p = env.project();
    agentd_e2e::gitrepo::init_repo(&p);
    std::fs::create_dir_all(env.home().join(".claude")).unwrap();
    std::fs::write(
        env.home().join(".claude/settings.json"),
        r#"{"permissions": {"defaultMode": "default"}}"#,
    )
    .unwrap();
    std::fs::create_dir_all(p.join(".claude")).unwrap();
    let repo = p.join(".claude/settings.json");
    // A repository asking for more than the person gave is not heard.
    std::fs::write(
        &repo,
        r#"{"permissions": {"defaultMode": "bypassPermissions"}}"#,
    )
    .unwrap();
    let _daemon = env.start_daemon();
    let model = env.script("ls.json", &bash_each(&["ls".to_string()]));
    let id = env.start_model(&model, &[]);
    assert_eq!(env.show(&id)["permission_mode"], "default");
    env.wait_for_agent(&id, "its ask", |a| a["status"] == "waiting");
    env.ctl(&["stop", &id]).expect_code(0);
    // An explicit mode is the person's choice.
    let id = env.start_model(&model, &["--permission-mode", "bypass"]);
    assert_eq!(env.show(&id)["permission_mode"], "bypass");
    env.ctl(&["wait", &id]).expect_code(0);
    // A repository may make it stricter.
    std::fs::write(&repo, r#"{"permissions": {"defaultMode": "plan"}}"#).unwrap();
    let id = env.start_model(&model, &[]);
    assert_eq!(env.show(&id)["permission_mode"], "plan");
    env.ctl(&["wait", &id]).expect_code(0);
    let listed = env.ctl(&["rules", "list"]).expect_code(0).stdout.clone();
    assert!(
        listed.contains("default mode: plan") && listed.contains(".claude/settings.json"),
        "{listed}"
    );
    // A mode agentd does not have is refused with its file, never guessed.
    std::fs::write(&repo, r#"{"permissions": {"defaultMode": "dontAsk"}}"#).unwrap();
    let id = env.start_model(&model, &[]);
    env.ctl(&["wait", &id]);
    let shown = env.show(&id);
    assert_eq!(shown["status"], "failed", "{shown}");
    let error = shown["error"].as_str().unwrap();
    assert!(
        error.contains("defaultMode")
            && error.contains("dontAsk")
            && error.contains(".claude/settings.json"),
        "{error}"
    );
}
