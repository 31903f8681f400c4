//! `agentctl ui` (DESIGN §20) in a real terminal: the real binary in a
//! tmux window of its own, against a daemon with a tree of agents; keys go
//! in with `send-keys`, what it shows comes out with `capture-pane`.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::Path;
use std::time::{Duration, Instant};

use agentd_e2e::mock::{Block, MODEL, MockMessage, MockServer, Reply};
use agentd_e2e::script::{script, text, tool, turn};
use agentd_e2e::tmux::Tmux;
use agentd_e2e::{Env, parent, wait_until};
use serde_json::json;

/// The dashboard open on `env`'s daemon, 160×40.
fn open(env: &Env) -> Tmux {
    open_with(env, &agentd_e2e::agentctl_bin(), &["ui"], &[])
}

/// `program args` in a 160×40 window, with `env`'s agentctl environment
/// and `extra` variables.
fn open_with(env: &Env, program: &Path, args: &[&str], extra: &[(&str, &str)]) -> Tmux {
    let cmd = env.ctl_command(&[]);
    let mut vars: Vec<(String, String)> = cmd
        .get_envs()
        .filter_map(|(k, v)| {
            Some((
                k.to_string_lossy().to_string(),
                v?.to_string_lossy().to_string(),
            ))
        })
        .collect();
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Tmux::start(&env.project(), program, args, &vars, (160, 40))
}

/// The screen's line that holds `text`.
fn line_with<'a>(screen: &'a str, text: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(text))
        .unwrap_or_else(|| panic!("no line holds {text:?}:\n{screen}"))
}

/// A world with a finished parent and its child, and a sleeper that runs.
fn family(mock: &MockServer, env: &Env) -> (String, String) {
    parent::answers(
        mock,
        Reply::Message(MockMessage::new().with(Block::agent(
            "toolu_01Child",
            json!({"description": "count the files", "prompt": "count them"}),
        ))),
        Reply::text("parent is done"),
    );
    mock.enqueue(Reply::text("there are three files"));
    env.ctl(&["run", "--model", MODEL, "--name", "tree-top", "PARENT go"])
        .expect_code(0);
    let sleeper = env.script(
        "sleeper.json",
        &script(vec![
            turn(vec![tool("Bash", json!({"command": "sleep 120"}))]),
            turn(vec![text("slept")]),
        ]),
    );
    let id = env.start_model(&sleeper, &["--name", "sleeper"]);
    wait_until("the sleeper runs", Duration::from_secs(20), || {
        env.show(&id)["status"] == "running"
    });
    (
        env.show("tree-top")["short_id"]
            .as_str()
            .unwrap()
            .to_string(),
        id,
    )
}

#[test]
fn the_dashboard_shows_the_tree_output_filter_and_stops_with_confirmation() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    let (top, sleeper) = family(&mock, &env);
    let ui = open(&env);
    let screen = ui.wait_text("sleeper");
    // The tree: the child under its parent, statuses, types.
    let top_line = line_with(&screen, "tree-top");
    assert!(
        top_line.contains(&top) && top_line.contains("completed"),
        "{screen}"
    );
    let child_line = line_with(&screen, "count the files");
    assert!(
        child_line.contains("└─") && child_line.contains("general-pur"),
        "{screen}"
    );
    let top_row = screen.lines().position(|l| l.contains("tree-top")).unwrap();
    let child_row = screen
        .lines()
        .position(|l| l.contains("count the files"))
        .unwrap();
    assert_eq!(child_row, top_row + 1, "{screen}");
    assert!(
        line_with(&screen, "sleeper").contains("running"),
        "{screen}"
    );

    // The filter leaves the matching agents.
    ui.keys(&["/"]);
    ui.type_text("sleep");
    ui.keys(&["Enter"]);
    let screen = ui.wait_for("the filter", Duration::from_secs(10), |s| {
        s.contains("filter: sleep") && !s.contains("tree-top")
    });
    // The one agent left is selected: its live output shows.
    ui.wait_text("sleep 120");
    // Stop asks first: `n` keeps it running, `y` stops it.
    ui.keys(&["x"]);
    ui.wait_text("[y/n]");
    ui.keys(&["n"]);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(env.show(&sleeper)["status"], "running", "{screen}");
    ui.keys(&["x"]);
    ui.wait_text("[y/n]");
    ui.keys(&["y"]);
    wait_until("the sleeper is cancelled", Duration::from_secs(20), || {
        env.show(&sleeper)["status"] == "cancelled"
    });
    ui.wait_for("cancelled in the tree", Duration::from_secs(10), |s| {
        s.lines()
            .any(|l| l.contains("sleeper") && l.contains("cancelled"))
    });
    // Esc in the filter prompt clears it: the whole tree again.
    ui.keys(&["/", "Escape"]);
    ui.wait_text("tree-top");
    ui.keys(&["q"]);
    ui.wait_for("the dashboard exits", Duration::from_secs(10), |_| {
        ui.exited().is_some()
    });
    assert_eq!(ui.exited(), Some(0));
    assert!(!ui.alternate_on(), "the terminal is restored");
}

#[test]
fn asks_are_answered_in_place_attach_comes_back_and_a_daemon_restart_is_survived() {
    let env = Env::new();
    let daemon = env.start_daemon();
    let asker = env.script(
        "asker.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "echo allowed > asked.txt"}),
            )]),
            turn(vec![text("ran it after the answer")]),
        ]),
    );
    let id = env.start_model(&asker, &["--name", "asker", "--permission-mode", "default"]);
    wait_until("the ask is open", Duration::from_secs(20), || {
        env.show(&id)["status"] == "waiting"
    });
    let ui = open(&env);
    // The waiting agent is marked, and the ask is shown for `p`.
    let screen = ui.wait_text("asks to run Bash");
    assert!(line_with(&screen, "asker").contains("waiting"), "{screen}");
    ui.keys(&["p"]);
    let screen = ui.wait_text("y: allow once");
    // The bar holds the ask and its keys; the box over the pane holds the
    // whole call, its keys in the title.
    let bar = screen
        .lines()
        .rev()
        .find(|l| l.contains("y: allow once"))
        .unwrap();
    assert!(bar.contains("echo allowed"), "{screen}");
    assert!(
        line_with(&screen, "┌ y: allow once · a: always allow Bash").contains('┐'),
        "{screen}"
    );
    ui.keys(&["y"]);
    wait_until("the agent ran the command", Duration::from_secs(20), || {
        env.show(&id)["status"] == "completed"
    });
    assert_eq!(
        std::fs::read_to_string(env.project().join("asked.txt")).unwrap(),
        "allowed\n"
    );
    ui.wait_text("ran it after the answer");

    // Enter: full screen attach, as `agentctl attach` shows it; Ctrl-D back.
    ui.keys(&["Enter"]);
    ui.wait_for("the attach view", Duration::from_secs(10), |s| {
        !s.contains("j/k move") && s.contains("ran it after the answer")
    });
    ui.keys(&["C-d"]);
    ui.wait_text("j/k move");

    // The daemon goes away: the dashboard says so and waits; it comes back
    // by itself when the daemon does.
    daemon.kill9();
    ui.wait_text("reconnecting");
    let _daemon = env.start_daemon();
    let screen = ui.wait_for("the tree again", Duration::from_secs(30), |s| {
        !s.contains("reconnecting to") && s.contains("asker")
    });
    assert!(
        line_with(&screen, "asker").contains("completed"),
        "{screen}"
    );
    ui.keys(&["q"]);
    ui.wait_for("the dashboard exits", Duration::from_secs(10), |_| {
        ui.exited().is_some()
    });
    assert_eq!(ui.exited(), Some(0));
}

#[test]
fn send_help_resize_and_sigterm_keep_the_terminal_sound() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script(
        "talker.json",
        &script(vec![
            turn(vec![text("first answer")]),
            turn(vec![text("second answer")]),
        ]),
    );
    let id = env.start_model(&model, &["--name", "talker"]);
    wait_until("the first answer", Duration::from_secs(20), || {
        env.show(&id)["status"] == "completed"
    });
    let ui = open(&env);
    ui.wait_text("first answer");
    // `s` sends a message to the selected agent, which answers it.
    ui.keys(&["s"]);
    ui.type_text("tell me more");
    ui.keys(&["Enter"]);
    ui.wait_text("second answer");
    assert_eq!(env.show(&id)["result"], "second answer");
    // `?` shows the keys; any key closes it.
    ui.keys(&["?"]);
    ui.wait_text("answer the selected agent's permission ask");
    ui.keys(&["Escape"]);
    ui.wait_for("the help closes", Duration::from_secs(10), |s| {
        !s.contains("answer the selected agent's permission ask")
    });
    // A smaller window: the layout follows, the keys line stays at the bottom.
    let short = env.show(&id)["short_id"].as_str().unwrap().to_string();
    ui.resize(90, 20);
    let screen = ui.wait_for("the smaller layout", Duration::from_secs(10), |s| {
        let lines: Vec<&str> = s.lines().collect();
        lines.len() <= 20
            && lines.iter().all(|l| l.chars().count() <= 90)
            && s.contains(&short)
            && lines.last().is_some_and(|l| l.starts_with("j/k move"))
    });
    assert!(screen.contains("second answer"), "{screen}");
    // SIGTERM: the dashboard ends and gives the terminal back.
    nix_kill(ui.pid());
    ui.wait_for("the dashboard exits", Duration::from_secs(10), |_| {
        ui.exited().is_some()
    });
    assert!(!ui.alternate_on(), "the terminal is restored after SIGTERM");
}

/// SIGTERM to `pid` (the program in the pane).
fn nix_kill(pid: i32) {
    let _ = std::process::Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status();
}

#[test]
fn interrupt_fork_diff_merge_and_rm_act_on_the_selected_agent() {
    let env = Env::new();
    let repo = env.project().canonicalize().unwrap();
    agentd_e2e::gitrepo::init_repo(&repo);
    let _daemon = env.start_daemon();
    // A worktree agent that commits a file (sandbox off: a commit writes
    // the checkout's .git), then a sleeper.
    let committer = env.script(
        "committer.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "echo tree > t.txt && git add t.txt && git commit -qm 'add t' && echo done"}),
            )]),
            turn(vec![text("committed t.txt")]),
        ]),
    );
    let tree = env.start_model(
        &committer,
        &["--name", "treeish", "--worktree", "--sandbox", "off"],
    );
    wait_until("the commit", Duration::from_secs(30), || {
        env.show(&tree)["status"] == "completed"
    });
    let sleeper = env.script(
        "sleeper.json",
        &script(vec![
            turn(vec![tool("Bash", json!({"command": "sleep 120"}))]),
            turn(vec![text("slept")]),
            turn(vec![text("forked and answered")]),
        ]),
    );
    let sleepy = env.start_model(&sleeper, &["--name", "sleepy"]);
    wait_until("the sleeper runs", Duration::from_secs(20), || {
        env.show(&sleepy)["status"] == "running"
    });
    let ui = open(&env);
    // (`/` edits the filter in force: Esc clears it first.)
    let filter = |ui: &Tmux, text: &str| {
        assert_eq!(
            ui.exited(),
            None,
            "the dashboard ended early:\n{}",
            ui.screen()
        );
        ui.keys(&["/", "Escape"]);
        // (An Esc closely followed by a key reads as Alt and that key.)
        std::thread::sleep(Duration::from_millis(150));
        ui.keys(&["/"]);
        ui.type_text(text);
        ui.keys(&["Enter"]);
        ui.wait_text(&format!("filter: {text}"));
    };
    // i: the sleeper is interrupted (paused, continuable).
    filter(&ui, "sleepy");
    ui.wait_text("sleep 120");
    ui.keys(&["i"]);
    wait_until("the sleeper pauses", Duration::from_secs(20), || {
        env.show(&sleepy)["status"] == "paused"
    });
    // f: a fork with the directive typed in.
    ui.keys(&["f"]);
    ui.wait_text("directive");
    ui.type_text("try it another way");
    ui.keys(&["Enter"]);
    wait_until("the fork exists", Duration::from_secs(20), || {
        env.agents().iter().any(|a| a["subagent_type"] == "fork")
    });
    // d: the worktree agent's diff, in the output pane.
    filter(&ui, "treeish");
    ui.wait_text("committed t.txt");
    ui.keys(&["d"]);
    ui.wait_text("+tree");
    ui.keys(&["d"]);
    // m: merge asks, then merges into the checkout.
    ui.keys(&["m"]);
    ui.wait_text("into its checkout? [y/n]");
    ui.keys(&["y"]);
    wait_until("the merge", Duration::from_secs(20), || {
        repo.join("t.txt").exists()
    });
    // r: rm asks, saying what its tree holds, then removes it.
    ui.keys(&["r"]);
    let screen = ui.wait_text("? [y/n] worktree");
    let short = env.show(&tree)["short_id"].as_str().unwrap().to_string();
    assert!(line_with(&screen, "y/n").contains(&short), "{screen}");
    ui.keys(&["y"]);
    ui.wait_for("the agent is gone", Duration::from_secs(20), |_| {
        !env.agents().iter().any(|a| a["name"] == "treeish")
    });
    ui.keys(&["q"]);
    ui.wait_for("the dashboard exits", Duration::from_secs(10), |_| {
        ui.exited().is_some()
    });
}

#[test]
fn a_panic_gives_the_terminal_back_and_shows_its_message() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    // A shell runs the dashboard (which panics after its first frame, in
    // a debug build with AGENTCTL_UI_TEST_PANIC), then shows the modes the
    // terminal was left in.
    let ctl = agentd_e2e::agentctl_bin().display().to_string();
    let ui = open_with(
        &env,
        Path::new("/bin/sh"),
        &[
            "-c",
            "\"$0\" ui; echo \"ui exited $?\"; stty -a; echo modes-shown; sleep 60",
            &ctl,
        ],
        &[("AGENTCTL_UI_TEST_PANIC", "1")],
    );
    // (The shell lives on: a dead pane shows no cursor.)
    let screen = ui.wait_text("modes-shown");
    assert!(screen.contains("ui exited 101"), "{screen}");
    assert!(screen.contains("a panic on purpose"), "{screen}");
    // Cooked mode again: lines and echo, as before the dashboard.
    let modes: Vec<&str> = screen.split_whitespace().collect();
    for mode in ["icanon", "echo", "isig"] {
        assert!(modes.contains(&mode), "{mode} is on again:\n{screen}");
        assert!(!modes.contains(&format!("-{mode}").as_str()), "{screen}");
    }
    assert!(!ui.alternate_on(), "the alternate screen is left");
    assert!(ui.cursor_visible(), "the cursor shows again");
}

/// Whether `styled` (a `capture-pane -e` screen) sets any foreground or
/// background colour.
fn has_colour(styled: &str) -> bool {
    styled.split("\x1b[").skip(1).any(|seq| {
        let Some((params, _)) = seq.split_once('m') else {
            return false;
        };
        params.split(';').any(|p| {
            matches!(
                p.parse::<u32>(),
                Ok(30..=38 | 40..=48 | 90..=97 | 100..=107)
            )
        })
    })
}

/// The dashboard's arguments, extra variables, and whether it colours.
type ColourCase = (
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
    bool,
);

#[test]
fn no_color_and_the_color_flag_decide_the_colours() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("talker.json", &script(vec![turn(vec![text("an answer")])]));
    let id = env.start_model(&model, &["--name", "talker"]);
    wait_until("the answer", Duration::from_secs(20), || {
        env.show(&id)["status"] == "completed"
    });
    let ctl = agentd_e2e::agentctl_bin();
    let cases: [ColourCase; 4] = [
        (&["ui"], &[], true),
        (&["ui"], &[("NO_COLOR", "1")], false),
        (&["ui", "--color", "always"], &[("NO_COLOR", "1")], true),
        (&["ui", "--color", "never"], &[], false),
    ];
    for (args, extra, coloured) in cases {
        let ui = open_with(&env, &ctl, args, extra);
        ui.wait_text("an answer");
        let styled = ui.styled_screen();
        assert_eq!(
            has_colour(&styled),
            coloured,
            "{args:?} with {extra:?}:\n{styled:?}"
        );
        ui.keys(&["q"]);
        ui.wait_for("the dashboard quits", Duration::from_secs(10), |_| {
            ui.exited().is_some()
        });
    }
}

#[test]
fn b_releases_a_foreground_run_from_the_dashboard() {
    let mock = MockServer::start();
    let env = Env::with_mock(&mock);
    let _daemon = env.start_daemon();
    mock.enqueue(Reply::Message(
        MockMessage::text("slow answer").delay_start(Duration::from_secs(15)),
    ));
    let run = env
        .ctl_command(&[
            "--no-autostart",
            "run",
            "--model",
            MODEL,
            "--name",
            "held",
            "take your time",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    mock.wait_for_requests(1, Duration::from_secs(10));
    let ui = open(&env);
    ui.wait_text("held");
    ui.keys(&["b"]);
    ui.wait_text("running in the background");
    let started = Instant::now();
    let out = agentd_e2e::Out::from(run.wait_with_output().unwrap());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "released by `b`, not by the agent's end"
    );
    out.expect_code(0);
    let agent = env.show("held");
    assert_eq!(out.stdout.lines().last(), agent["id"].as_str());
    assert_eq!(agent["status"], "running", "it runs on in the background");
    env.ctl(&["wait", "held"]).expect_code(0);
    assert_eq!(mock.requests().len(), 1, "the model call was never re-sent");
}

#[test]
fn c_shows_the_checkpoints_and_w_rewinds_the_selected_agent() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let maker = env.script(
        "maker.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "echo one > one.txt && echo made"}),
            )]),
            turn(vec![text("made one.txt")]),
        ]),
    );
    // Open first: the terminal's own files in the project are there before
    // the agent, so they are no change of someone else's since it ended.
    let ui = open(&env);
    let id = env.start_model(&maker, &["--name", "maker"]);
    wait_until("the agent ends", Duration::from_secs(30), || {
        env.show(&id)["status"] == "completed"
    });
    assert!(env.project().join("one.txt").exists());
    ui.wait_text("made one.txt");
    ui.keys(&["c"]);
    ui.wait_text("turn 1: work");
    ui.wait_text("w rewinds to the beginning of a turn");
    ui.keys(&["c", "w"]);
    ui.wait_text("rewind");
    ui.type_text("1 code");
    ui.keys(&["Enter"]);
    ui.wait_text("rewound to the beginning of turn 1");
    assert!(!env.project().join("one.txt").exists());
    // Something that is not a turn is said so, and nothing happens.
    ui.keys(&["w"]);
    ui.type_text("soon");
    ui.keys(&["Enter"]);
    ui.wait_text("not a turn");
    ui.keys(&["q"]);
    ui.wait_for("the dashboard exits", Duration::from_secs(10), |_| {
        ui.exited().is_some()
    });
}
