//! Hostile text in front of a person (docs/security.md, "What a person is
//! shown"): what the model, a tool, a repository or an agent wrote never
//! reaches the terminal raw. A permission ask shows the exact command — in
//! a real terminal (tmux), where a forged one would be rewritten by its
//! own escapes — and every line view prints control characters as visible
//! stand-ins; `--json` stays exact.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::Path;
use std::time::Duration;

use agentd_e2e::gitrepo::{git, init_repo};
use agentd_e2e::mock::{Block, MODEL, MockMessage, MockServer, Reply, n_messages, prompt_of};
use agentd_e2e::tmux::Tmux;
use agentd_e2e::{Env, Out};
use serde_json::json;

/// The review's attack: what runs is `touch PWNED`; the cursor moves back
/// over it and erases the line, so a raw terminal shows `ls -la`.
const FORGED: &str = "touch PWNED && echo pwned #\x1b[27D\x1b[K ls -la";
/// The same command as it must be shown.
const SHOWN: &str = "touch PWNED && echo pwned #␛[27D␛[K ls -la";

/// `program args` in a 160×40 tmux window with `env`'s agentctl
/// environment.
fn terminal(env: &Env, args: &[&str]) -> Tmux {
    let cmd = env.ctl_command(&[]);
    let vars: Vec<(String, String)> = cmd
        .get_envs()
        .filter_map(|(k, v)| {
            Some((
                k.to_string_lossy().to_string(),
                v?.to_string_lossy().to_string(),
            ))
        })
        .chain([("LANG".to_string(), "C.UTF-8".to_string())])
        .collect();
    // A directory (and so a tmux server) of each terminal's own.
    static TERMINALS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = TERMINALS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = env.root.path().join(format!("tty-{n}"));
    std::fs::create_dir_all(&dir).unwrap();
    Tmux::start(&dir, &agentd_e2e::agentctl_bin(), args, &vars, (160, 40))
}

const LIMIT: Duration = Duration::from_secs(60);

/// An agent whose first turn asks for the forged command.
fn forged_turn(mock: &MockServer) {
    mock.enqueue(Reply::Message(
        MockMessage::text("Listing the files.").with(Block::bash("t1", FORGED)),
    ));
    mock.enqueue(Reply::text("all done"));
}

/// The screen holds the command as it runs, never the forgery.
#[track_caller]
fn shows_what_runs(screen: &str) {
    assert!(
        screen.contains(&format!("asks to run Bash: {SHOWN}")),
        "{screen}"
    );
    assert!(
        !screen.contains("asks to run Bash: ls -la"),
        "the forged ask was shown:\n{screen}"
    );
}

#[test]
fn a_forged_command_is_asked_about_as_it_would_run_by_a_foreground_run() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    forged_turn(&mock);
    let run = terminal(
        &env,
        &[
            "--color",
            "never",
            "run",
            "--model",
            MODEL,
            "--permission-mode",
            "default",
            "list the files",
        ],
    );
    let screen = run.wait_for("the ask", LIMIT, |s| s.contains("asks to run Bash"));
    shows_what_runs(&screen);
    assert!(
        screen.contains("a: always allow Bash for this agent"),
        "{screen}"
    );
    // Denied: it never runs, and the tool line says what was denied.
    run.keys(&["n"]);
    run.wait_text("Deny: why");
    run.keys(&["Enter"]);
    let screen = run.wait_for("the run's end", LIMIT, |s| s.contains("all done"));
    assert!(
        screen.contains(&format!("✗ Bash({SHOWN})")),
        "the tool line hides what was asked:\n{screen}"
    );
    assert!(!env.project().join("PWNED").exists());
}

#[test]
fn a_forged_command_is_asked_about_as_it_would_run_by_attach_and_the_dashboard() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    forged_turn(&mock);
    let id = env.start_agent(&[
        "--model",
        MODEL,
        "--name",
        "asker",
        "--permission-mode",
        "default",
        "list the files",
    ]);
    env.wait_status(&id, "waiting", LIMIT);
    // `list` and `show` say what it waits for, made visible.
    let list = env.ctl(&["list"]);
    assert!(list.stdout.contains("touch PWNED"), "{}", list.stdout);
    clean("list", &list);

    let attach = terminal(&env, &["--color", "never", "attach", "asker"]);
    let screen = attach.wait_for("the ask", LIMIT, |s| s.contains("asks to run Bash"));
    shows_what_runs(&screen);
    attach.keys(&["C-d"]);
    attach.wait_for("the detach", LIMIT, |s| s.contains("detached from"));

    let ui = terminal(&env, &["ui"]);
    // The selected agent's pane follows it: the ask shows there first.
    let screen = ui.wait_for("the ask in the pane", LIMIT, |s| {
        s.contains("asks to run Bash")
    });
    assert!(screen.contains(SHOWN), "{screen}");
    ui.keys(&["p"]);
    let screen = ui.wait_for("the ask's box", LIMIT, |s| s.contains("always allow Bash"));
    assert!(screen.contains(SHOWN), "{screen}");
    ui.keys(&["n"]);
    env.wait_status(&id, "completed", LIMIT);
    assert!(!env.project().join("PWNED").exists());
}

/// Characters a terminal acts on (ESC, BEL, a lone CR, C1 CSI) or that
/// reorder what is read (RLO): none may be in what a line view prints.
#[track_caller]
fn clean(what: &str, out: &Out) {
    for (stream, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        for bad in ['\x1b', '\x07', '\r', '\u{9b}', '\u{202e}'] {
            assert!(
                !text.contains(bad),
                "`{what}` printed U+{:04X} raw on {stream}:\n{text:?}",
                bad as u32
            );
        }
    }
}

/// Escapes in the repository's file content and file names, in the
/// model's text and descriptions, and in what an error quotes.
const OSC52: &str = "\x1b]52;c;cHduZWQ=\x07";
const LINK: &str = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\";
const BIDI: &str = "abc\u{202e}fed";

fn hostile_repository(dir: &Path) {
    init_repo(dir);
    std::fs::write(
        dir.join("evil.txt"),
        format!("line one\rFORGED{OSC52}\x1b[2J\u{9b}31m\n"),
    )
    .unwrap();
    std::fs::write(dir.join("name\x1b]0;title\x07.txt"), "x\n").unwrap();
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", "hostile"]);
}

#[test]
fn escapes_from_the_model_its_tools_and_the_repository_reach_no_line_view_raw() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    hostile_repository(&env.project());
    let _daemon = env.start_daemon();
    let events = env
        .ctl_command(&["--color", "never", "events"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The child: a subagent whose description is the model's.
    mock.when(
        |r| prompt_of(r).contains("CHILD") && n_messages(r) == 1,
        Reply::text(format!("child says {LINK}")),
    );
    mock.when(
        |r| prompt_of(r).contains("PARENT") && n_messages(r) == 1,
        Reply::Message(
            MockMessage::text(format!("Reading. {BIDI}\rForged final answer"))
                .with(Block::bash("b1", "cat evil.txt; ls"))
                .with(Block::tool(
                    "w1",
                    "Write",
                    json!({"file_path": "out\x1b[31m.txt", "content": format!("{OSC52}\n")}),
                )),
        ),
    );
    mock.when(
        |r| prompt_of(r).contains("PARENT") && n_messages(r) == 3,
        Reply::Message(MockMessage::new().with(Block::agent(
            "a1",
            json!({"description": format!("desc {OSC52}"), "prompt": "CHILD work"}),
        ))),
    );
    mock.when(
        |r| prompt_of(r).contains("PARENT") && n_messages(r) == 5,
        Reply::Message(MockMessage::new().with(Block::agent(
            "a2",
            json!({"description": "typed", "prompt": "x", "subagent_type": "\x1b[2Jnobody"}),
        ))),
    );
    mock.when(
        |r| prompt_of(r).contains("PARENT"),
        Reply::text(format!("done {OSC52}")),
    );
    let run = env.ctl(&[
        "--color",
        "never",
        "run",
        "--worktree",
        "--name",
        "hostile",
        "--model",
        MODEL,
        "PARENT go",
    ]);
    run.expect_code(0);
    clean("run", &run);
    assert!(
        run.stdout.contains("abc<U+202E>fed␍Forged"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("done ␛]52;c;cHduZWQ=␇"),
        "{}",
        run.stdout
    );

    let log = env.ctl(&["--color", "never", "log", "hostile"]);
    clean("log", &log);
    // Bash output (the repository's), file names, the model's text.
    assert!(log.stderr.contains("out␛[31m.txt"), "{}", log.stderr);
    assert!(
        log.stderr.contains("unknown subagent_type '␛[2Jnobody'"),
        "{}",
        log.stderr
    );
    // `--json` is exact: JSON escapes what a terminal would act on.
    let json = env.ctl(&["log", "hostile", "--json"]);
    clean("log --json", &json);
    assert!(
        json.stdout.contains("\\u001b]52;c;cHduZWQ=\\u0007"),
        "{}",
        json.stdout
    );

    for args in [
        &["show", "hostile"][..],
        &["list"],
        &["list", "--tree"],
        &["usage", "hostile", "--family"],
        &["worktrees"],
        &["wait", "hostile"],
    ] {
        let mut all = vec!["--color", "never"];
        all.extend_from_slice(args);
        let out = env.ctl(&all);
        clean(&args.join(" "), &out);
    }
    let tree = env.ctl(&["--color", "never", "list", "--tree"]);
    assert!(tree.stdout.contains("desc ␛]52"), "{}", tree.stdout);

    // Error messages quote what was sent, made visible.
    let bad = env.ctl(&["run", "--agent", "\x1b]0;pwn\x07", "hi"]);
    assert_ne!(bad.code, 0);
    clean("run --agent", &bad);
    let missing = env.ctl(&["show", "\x1b[2Jnobody"]);
    assert_ne!(missing.code, 0);
    clean("show of a missing agent", &missing);
    assert!(missing.stderr.contains("␛[2Jnobody"), "{}", missing.stderr);

    // `diff` on a terminal shows the patch made visible; to a pipe it is
    // the exact patch.
    let piped = env.ctl(&["diff", "hostile"]);
    assert!(piped.stdout.contains(OSC52), "{:?}", piped.stdout);
    let diff = terminal(&env, &["--color", "never", "diff", "hostile"]);
    let screen = diff.wait_for("the diff", LIMIT, |s| s.contains("out"));
    assert!(screen.contains("+␛]52;c;cHduZWQ=␇"), "{screen}");

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(events.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out: Out = events.wait_with_output().unwrap().into();
    clean("events", &out);
    assert!(out.stdout.contains("created: desc ␛]52"), "{}", out.stdout);

    // A model is a name: one with a control character is refused, not
    // stored to be shown in every listing.
    let id = env.show("hostile")["id"].as_str().unwrap().to_string();
    let refused = env.rpc(async |c| {
        c.update_agent(agentd_shared::proto::UpdateAgentRequest {
            id,
            model: "anthropic:claude\x1b[2J".into(),
            ..Default::default()
        })
        .await
    });
    let status = refused.unwrap_err();
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert!(!status.message().contains('\x1b'), "{status:?}");
    assert_eq!(env.show("hostile")["model"], MODEL);
}
