//! Project instructions (DESIGN §17): the AGENTS.md and CLAUDE.md files a
//! repository keeps, from its root down to the working directory, then the
//! user's own, quoted with their paths in the frozen system prompt; capped;
//! links out of the repository, FIFOs and non-UTF-8 files left out with a
//! note; `show` lists what was loaded; `--no-instructions` leaves them out.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::time::Duration;

use agentd_e2e::gitrepo::init_repo;
use agentd_e2e::mock::{MODEL, MockServer, RecordedRequest, Reply};
use agentd_e2e::{Env, wait_until};
use serde_json::Value;

/// The system prompt's text blocks of a request, joined.
fn system_text(r: &RecordedRequest) -> String {
    r.json["system"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

fn run_in(
    env: &Env,
    mock: &MockServer,
    cwd: &std::path::Path,
    extra: &[&str],
) -> (String, RecordedRequest) {
    let before = mock.requests().len();
    mock.enqueue(Reply::text("ok"));
    let cwd = cwd.display().to_string();
    let mut args = vec!["--model", MODEL, "--cwd", cwd.as_str()];
    args.extend_from_slice(extra);
    args.push("hello");
    let id = env.start_agent(&args);
    wait_until("the agent's request", Duration::from_secs(20), || {
        mock.requests().len() > before
    });
    (id, mock.requests()[before].clone())
}

#[test]
fn instruction_files_are_quoted_in_order_capped_and_contained() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let repo = env.project();
    init_repo(&repo);
    let sub = repo.join("crates/app");
    std::fs::create_dir_all(sub.join(".claude")).unwrap();
    std::fs::write(repo.join("AGENTS.md"), "ROOT-AGENTS: run make test\n").unwrap();
    std::fs::write(
        repo.join("CLAUDE.md"),
        "ROOT-CLAUDE\n@docs/style.md\n@../outside.md\n",
    )
    .unwrap();
    std::fs::create_dir_all(repo.join("docs")).unwrap();
    std::fs::write(repo.join("docs/style.md"), "IMPORTED-STYLE\n").unwrap();
    // A secret outside the repository, reached by an import and a link.
    let secret = env.root.path().join("outside.md");
    std::fs::write(&secret, "SECRET-OUTSIDE").unwrap();
    std::os::unix::fs::symlink(&secret, sub.join("AGENTS.md")).unwrap();
    // Too big: cut at 40 KiB.
    std::fs::write(
        sub.join(".claude/CLAUDE.md"),
        format!("BIG-START{}", "y".repeat(60 * 1024)),
    )
    .unwrap();
    // Not UTF-8.
    std::fs::write(sub.join("CLAUDE.md"), b"\xff\xfe binary").unwrap();
    // The user's own.
    let own = env.home().join(".config/agentd");
    std::fs::create_dir_all(&own).unwrap();
    std::fs::write(own.join("AGENTS.md"), "USER-OWN: be brief\n").unwrap();
    let _daemon = env.start_daemon();

    let (id, request) = run_in(&env, &mock, &sub, &[]);
    let system = system_text(&request);
    let order = [
        "Contents of AGENTS.md:",
        "ROOT-AGENTS",
        "Contents of CLAUDE.md:",
        "ROOT-CLAUDE",
        "Contents of docs/style.md:",
        "IMPORTED-STYLE",
        "Contents of crates/app/.claude/CLAUDE.md:",
        "BIG-START",
        "USER-OWN",
    ];
    let mut at = 0;
    for needle in order {
        let found = system[at..].find(needle).unwrap_or_else(|| {
            panic!(
                "{needle} after byte {at} in:\n{}",
                &system[..2000.min(system.len())]
            )
        });
        at += found;
    }
    assert!(
        !system.contains("SECRET-OUTSIDE"),
        "nothing outside the repository"
    );
    assert!(!system.contains("binary"));
    assert!(system.contains("the rest of crates/app/.claude/CLAUDE.md was left out"));
    assert!(system.len() < 60 * 1024, "the big file was cut");

    let shown = env.show(&id);
    let paths: Vec<String> = shown["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(paths.len(), 5, "{paths:?}");
    assert!(paths[0].ends_with("project/AGENTS.md"));
    assert!(paths[4].ends_with(".config/agentd/AGENTS.md"));
    let cut: Vec<bool> = shown["instructions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["cut"].as_bool().unwrap())
        .collect();
    assert_eq!(cut, [false, false, false, true, false]);
    let notes: Vec<&str> = shown["instruction_notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("crates/app/AGENTS.md") && n.contains("outside")),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("outside.md")),
        "the import out: {notes:?}"
    );
    assert!(notes.iter().any(|n| n.contains("not UTF-8")), "{notes:?}");
    let text = env.ctl(&["show", &id]).expect_code(0).stdout.clone();
    assert!(text.contains("instructions:"), "{text}");
    assert!(text.contains("cut"), "{text}");

    // The prompt is frozen: a revival sends the same system bytes even
    // though the files changed.
    std::fs::write(repo.join("AGENTS.md"), "CHANGED\n").unwrap();
    env.wait_for_agent(&id, "completed", |a| a["status"] == "completed");
    mock.enqueue(Reply::text("again"));
    env.ctl(&["send", &id, "more"]).expect_code(0);
    wait_until("the revival's request", Duration::from_secs(20), || {
        mock.requests().len() >= 2
    });
    assert_eq!(mock.requests()[1].json["system"], request.json["system"]);

    // Without instructions: agentd's own system block only.
    let (bare, request) = run_in(&env, &mock, &sub, &["--no-instructions"]);
    assert_eq!(request.json["system"].as_array().unwrap().len(), 1);
    assert!(!system_text(&request).contains("ROOT-AGENTS"));
    let shown = env.show(&bare);
    assert_eq!(shown["instructions_skipped"], true);
    assert_eq!(shown["instructions"].as_array().unwrap().len(), 0);
}

#[test]
fn the_config_switch_leaves_instructions_out() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    std::fs::write(env.project().join("AGENTS.md"), "SHOULD-NOT-APPEAR").unwrap();
    env.write_config("instructions = false\n");
    let _daemon = env.start_daemon();
    let project = env.project();
    let (id, request) = run_in(&env, &mock, &project, &[]);
    assert!(!system_text(&request).contains("SHOULD-NOT-APPEAR"));
    assert_eq!(env.show(&id)["instructions_skipped"], true);
}
