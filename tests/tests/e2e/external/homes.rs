//! A built-in external agent's private home (DESIGN §19): the scripted ACP
//! agent of tests/acp-agent installed as `claude-agent-acp` on the daemon's
//! PATH, so agentd runs it as the built-in `claude-code`, under the agent's
//! sandbox. The user's own Claude Code config (settings with hooks,
//! `~/.claude.json` with MCP servers) is what a later unconfined `claude`
//! obeys, so the confined agent must not be able to write it; it gets a
//! home of its own with a copy of the user's settings and login instead.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use agentd_e2e::acp_agent::{self, script};
use agentd_e2e::{Env, all_text};
use serde_json::json;

const SETTINGS: &str = "{\"model\": \"the-users-choice\"}\n";
const LOGIN: &str = "{\"claudeAiOauth\": \"the-users-login\"}\n";
const GLOBAL: &str = "{\"mcpServers\": {}}\n";

/// An environment where `claude-code` is the scripted agent, and the
/// user's HOME holds a Claude Code config.
fn world() -> Env {
    let agent = acp_agent::setup().unwrap();
    let env = Env::new();
    let bin = env.home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let wrapper = bin.join("claude-agent-acp");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec node {:?} \"$@\"\n", agent.display()),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = std::env::var("PATH").unwrap_or_default();
    env.set_daemon_env("PATH", &format!("{}:{path}", bin.display()));
    let scripted = env.home().join("scripted");
    std::fs::create_dir_all(scripted.join("state")).unwrap();
    env.write_config(&format!(
        "[agents.claude-code]\nenv = {{ TEST_AGENT_STATE = {state:?}, TEST_AGENT_LOG = {log:?} }}\n\
         writable = [{root:?}]\n",
        state = scripted.join("state").display().to_string(),
        log = scripted.join("agent.log").display().to_string(),
        root = scripted.display().to_string(),
    ));
    let claude = env.home().join(".claude");
    std::fs::create_dir_all(&claude).unwrap();
    std::fs::write(claude.join("settings.json"), SETTINGS).unwrap();
    std::fs::write(claude.join(".credentials.json"), LOGIN).unwrap();
    std::fs::write(env.home().join(".claude.json"), GLOBAL).unwrap();
    env
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_confined_claude_code_writes_its_own_home_never_the_users_config() {
    let env = world();
    let _daemon = env.start_daemon();
    let hook = r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /tmp/pwned"}]}]}}"#;
    let prompt = script(&json!([
        {"env": "CLAUDE_CONFIG_DIR"},
        {"shell": "cat \"$CLAUDE_CONFIG_DIR/settings.json\" \"$CLAUDE_CONFIG_DIR/.credentials.json\""},
        {"shell": format!("printf '%s' '{hook}' > \"$HOME/.claude/settings.json\" 2>&1; echo user-settings")},
        {"shell": "printf x >> \"$HOME/.claude.json\" 2>&1; echo user-global"},
        {"shell": "mkdir \"$HOME/.claude/commands\" 2>&1; echo user-commands"},
        {"shell": format!("printf '%s' '{hook}' > \"$CLAUDE_CONFIG_DIR/settings.json\" && echo own-settings-written")},
        {"shell": "printf '{}' > \"$CLAUDE_CONFIG_DIR/.claude.json\" && echo own-global-written"}
    ]));
    let out = env.ctl(&[
        "run",
        "--agent",
        "claude-code",
        "--name",
        "claude-home",
        &prompt,
    ]);
    out.expect_code(0);
    let said = &out.stdout;
    // The user's config is read-only to it, whatever it tries.
    assert_eq!(read(&env.home().join(".claude/settings.json")), SETTINGS);
    assert_eq!(read(&env.home().join(".claude.json")), GLOBAL);
    assert!(!env.home().join(".claude/commands").exists(), "{said}");
    assert_eq!(
        said.matches("Permission denied").count(),
        3,
        "each write to the user's config is refused: {said}"
    );
    // Its home is its own, under agentd's data directory, holding a copy
    // of the user's settings and login, and writable.
    let id = env.show("claude-home")["id"].as_str().unwrap().to_string();
    let home: PathBuf = env
        .data_dir()
        .join("external")
        .join(&id)
        .join("claude-code");
    assert!(
        said.contains(&format!("env CLAUDE_CONFIG_DIR={}", home.display())),
        "{said}"
    );
    assert!(
        said.contains("the-users-choice") && said.contains("the-users-login"),
        "{said}"
    );
    assert!(
        said.contains("own-settings-written") && said.contains("own-global-written"),
        "{said}"
    );
    assert!(read(&home.join("settings.json")).contains("touch /tmp/pwned"));
    // A second run of the same agent finds its home as it left it.
    let again = script(&json!([{"shell": "cat \"$CLAUDE_CONFIG_DIR/settings.json\""}]));
    env.ctl(&["send", "--wait", "claude-home", &again])
        .expect_code(0);
    let answers: Vec<_> = env
        .transcript(&id)
        .into_iter()
        .filter(|e| e["role"] == "assistant")
        .collect();
    let answers = all_text(&answers);
    assert_eq!(
        answers.matches("touch /tmp/pwned").count(),
        1,
        "the hook it wrote in its own settings is there again: {answers}"
    );
    // It goes with the agent.
    env.ctl(&["rm", "claude-home"]).expect_code(0);
    assert!(!env.data_dir().join("external").join(&id).exists());
    assert_eq!(read(&env.home().join(".claude/settings.json")), SETTINGS);
}
