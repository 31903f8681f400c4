//! What a confined agent cannot read (DESIGN §22), as a prompt-injected
//! agent would try it: the person's keys and logins planted in the test
//! HOME, agentd's config with its API key, another agent's transcript in
//! the store, through `cat`, `grep -r`, `find`, links it makes, `/proc`,
//! and an MCP server of its own; and `[sandbox] deny_read` / `allow_read`.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::Path;

use agentd_e2e::mock::{MockServer, Reply};
use agentd_e2e::script::{bash_each, script, text, turn};
use agentd_e2e::{Env, tool_results, wait_until};
use serde_json::json;

use crate::mcp::common::{call, fixtures};

/// Every secret holds this, so one search finds any of them.
const MARK: &str = "s3cr3t";

/// Plants the secret stores of the issue in `env`'s HOME, and the config
/// with an API key; returns the paths planted.
fn plant(env: &Env) -> Vec<String> {
    let home = env.home();
    let files = [
        ".ssh/id_ed25519",
        ".aws/credentials",
        ".netrc",
        ".config/gh/hosts.yml",
        ".claude/.credentials.json",
        ".gnupg/private.key",
        ".docker/config.json",
    ];
    let mut planted = Vec::new();
    for f in files {
        let path = home.join(f);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, format!("{MARK}-{f}\n")).unwrap();
        planted.push(path.display().to_string());
    }
    // Not secret: the rest of the home stays readable.
    std::fs::write(home.join(".gitconfig"), "[user]\n\tname = Test\n").unwrap();
    std::fs::create_dir_all(home.join(".docker")).unwrap();
    std::fs::write(home.join(".docker/daemon.json"), "{}\n").unwrap();
    env.write_config(&format!("[anthropic]\napi_key = \"sk-{MARK}-config\"\n"));
    planted.push(
        home.join(".config/agentd/config.toml")
            .display()
            .to_string(),
    );
    planted
}

/// Whether any file beneath `dir` holds `needle` (the test is not
/// confined: this is what an unconfined agent would find).
fn found_beneath(dir: &Path, needle: &[u8]) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let path = e.path();
        if path.is_dir() && !path.is_symlink() {
            found_beneath(&path, needle)
        } else {
            std::fs::read(&path).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
        }
    })
}

#[test]
fn a_default_agent_reads_no_secret_and_no_other_agents_transcript() {
    let env = Env::new();
    let planted = plant(&env);
    let _daemon = env.start_daemon();
    // Agent A: a secret in its prompt, kept in the store.
    let a_model = env.script("a.json", &script(vec![turn(vec![text("noted")])]));
    let a = env.start_agent(&["--model", &a_model, &format!("remember {MARK}-prompt-of-a")]);
    env.ctl(&["wait", &a]).expect_code(0);
    let data = env.data_dir();
    wait_until(
        "A's prompt in the store's files",
        std::time::Duration::from_secs(20),
        || found_beneath(&data, format!("{MARK}-prompt-of-a").as_bytes()),
    );
    let home = env.home().display().to_string();
    let data = data.display().to_string();
    let socket_dir = env.socket().parent().unwrap().display().to_string();
    let flag = env.project().join("go");
    let later = env.home().join(".kube/config");
    let commands = vec![
        format!("cat {}", planted.join(" ")),
        format!("grep -ra {MARK} {home} {data} {socket_dir}"),
        format!("find {data} {home} -type f -exec cat {{}} + 2>/dev/null | grep -a {MARK}"),
        format!("ln -s {home}/.ssh/id_ed25519 link && cat link"),
        format!("ln {home}/.ssh/id_ed25519 hard; cat hard"),
        format!("cat /proc/self/root{home}/.ssh/id_ed25519 /proc/1/root{home}/.aws/credentials"),
        format!("cp -r {home}/.ssh copied; cat copied/*"),
        // A secret store made while the command runs is denied too.
        format!(
            "while [ ! -e {} ]; do sleep 0.05; done; cat {}",
            flag.display(),
            later.display()
        ),
        // What stays readable: the rest of the home, its listing.
        format!("cat {home}/.gitconfig {home}/.docker/daemon.json && ls -a {home}"),
    ];
    let model = env.script("b.json", &bash_each(&commands));
    let b = env.start_model(&model, &[]);
    wait_until(
        "the waiting command",
        std::time::Duration::from_secs(60),
        || tool_results(&env.transcript(&b)).len() == commands.len() - 2,
    );
    std::fs::create_dir_all(later.parent().unwrap()).unwrap();
    std::fs::write(&later, format!("{MARK}-kube\n")).unwrap();
    std::fs::write(&flag, "").unwrap();
    env.ctl(&["wait", &b]).expect_code(0);
    let got = tool_results(&env.transcript(&b));
    assert_eq!(got.len(), commands.len(), "{got:?}");
    for (i, (_, output)) in got.iter().enumerate() {
        assert!(
            !output.contains(MARK),
            "command {i} ({}) read a secret: {output}",
            commands[i]
        );
    }
    let (is_error, output) = &got[0];
    assert!(*is_error, "{output}");
    assert_eq!(
        output.matches("Permission denied").count(),
        planted.len(),
        "each planted file is an ordinary permission error: {output}"
    );
    assert!(got[7].1.contains("Permission denied"), "{:?}", got[7]);
    let (is_error, output) = got.last().unwrap();
    assert!(!*is_error, "the rest of the home is readable: {output}");
    assert!(
        output.contains("name = Test") && output.contains(".ssh"),
        "{output}"
    );
}

#[test]
fn deny_read_adds_a_path_and_allow_read_takes_one_off_the_list() {
    let env = Env::new();
    let planted = plant(&env);
    let private = env.root.path().join("outside/private");
    std::fs::create_dir_all(&private).unwrap();
    std::fs::write(private.join("notes"), format!("{MARK}-private\n")).unwrap();
    let config = std::fs::read_to_string(env.home().join(".config/agentd/config.toml")).unwrap();
    env.write_config(&format!(
        "{config}[sandbox]\ndeny_read = [\"{}\"]\nallow_read = [\"~/.aws\"]\n",
        private.display()
    ));
    let _daemon = env.start_daemon();
    let aws = &planted[1];
    let commands = vec![
        format!("cat {aws}"),
        format!("cat {}/notes", private.display()),
    ];
    let model = env.script("b.json", &bash_each(&commands));
    let b = env.start_model(&model, &[]);
    env.ctl(&["wait", &b]).expect_code(0);
    let got = tool_results(&env.transcript(&b));
    assert!(
        !got[0].0 && got[0].1.contains(MARK),
        "allowed back: {:?}",
        got[0]
    );
    assert!(
        got[1].0 && got[1].1.contains("Permission denied") && !got[1].1.contains(MARK),
        "denied by config: {:?}",
        got[1]
    );
    let shown = env.ctl(&["show", &b]).expect_code(0).stdout.clone();
    let reads = shown
        .lines()
        .find(|l| l.starts_with("reads"))
        .unwrap_or_default();
    assert!(
        reads.contains("allowed back by sandbox.allow_read") && reads.contains(".aws"),
        "show says what was allowed back: {shown}"
    );
    let shown = env.ctl(&["config"]).expect_code(0).stdout.clone();
    assert!(
        shown.contains("sandbox.allow_read") && shown.contains(".aws"),
        "{shown}"
    );
}

#[test]
fn an_agents_mcp_server_reads_no_secret() {
    let fx = fixtures();
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let planted = plant(&env);
    let (command, args) = fx.python_stdio_command();
    let args: Vec<String> = args.iter().map(|a| format!("{a:?}")).collect();
    let config = std::fs::read_to_string(env.home().join(".config/agentd/config.toml")).unwrap();
    env.write_config(&format!(
        "{config}[mcp_servers.fx]\ncommand = {command:?}\nargs = [{}]\n",
        args.join(", ")
    ));
    let _daemon = env.start_daemon();
    mock.enqueue_all([
        call("r1", "mcp__fx__read_file", json!({"path": planted[0]})),
        call(
            "r2",
            "mcp__fx__read_file",
            json!({"path": planted.last().unwrap()}),
        ),
        Reply::text("read"),
    ]);
    env.ctl(&["run", "--model", "anthropic:claude-mock", "read"])
        .expect_code(0);
    let requests = mock.requests();
    for r in &requests {
        let body = serde_json::to_string(r.messages()).unwrap();
        assert!(!body.contains(MARK), "a secret reached the model: {body}");
    }
    let results = tool_results(requests.last().unwrap().messages());
    assert!(
        results
            .iter()
            .all(|(is_error, text)| *is_error && text.contains("Permission denied")),
        "{results:?}"
    );
}
