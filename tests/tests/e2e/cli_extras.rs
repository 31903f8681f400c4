//! What a shell user expects of a CLI: completions, manual pages, and
//! colour only where it belongs.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::io::Write;
use std::process::{Command, Stdio};

use agentd_e2e::Env;
use agentd_e2e::script::{script, text, turn};

/// The top-level commands `agentctl --help` lists.
fn commands(env: &Env) -> Vec<String> {
    let help = env.ctl(&["--help"]).expect_code(0).stdout.clone();
    help.split("Commands:")
        .nth(1)
        .unwrap()
        .split("Options:")
        .next()
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn completions_load_in_bash_and_know_every_command() {
    let env = Env::new();
    let bash = env
        .ctl(&["completions", "bash"])
        .expect_code(0)
        .stdout
        .clone();
    let cmds = commands(&env);
    assert!(cmds.len() > 20, "{cmds:?}");
    for c in &cmds {
        assert!(bash.contains(c.as_str()), "bash completion lacks {c}");
    }
    // The script loads in bash and completes: `agentctl ser<TAB>` offers
    // service, `agentctl daemon <TAB>` its subcommands.
    let probe = "source /dev/stdin\n\
        complete -p agentctl\n\
        COMP_WORDS=(agentctl ser); COMP_CWORD=1; COMP_LINE='agentctl ser'; COMP_POINT=12\n\
        _agentctl agentctl ser agentctl; echo \"first: ${COMPREPLY[*]}\"\n\
        COMP_WORDS=(agentctl daemon ''); COMP_CWORD=2; COMP_LINE='agentctl daemon '; COMP_POINT=16\n\
        _agentctl agentctl '' daemon; echo \"daemon: ${COMPREPLY[*]}\"\n";
    let mut sh = Command::new("bash")
        .args(["--norc", "-c", probe])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    sh.stdin.take().unwrap().write_all(bash.as_bytes()).unwrap();
    let out = sh.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = |prefix: &str| {
        said.lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("{prefix} in {said}"))
            .split_whitespace()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(line("first: "), ["service"], "{said}");
    let daemon = line("daemon: ");
    for sub in ["stop", "restart", "reload", "logs"] {
        assert!(daemon.iter().any(|w| w == sub), "{sub} in {daemon:?}");
    }
    let zsh = env
        .ctl(&["completions", "zsh"])
        .expect_code(0)
        .stdout
        .clone();
    assert!(zsh.starts_with("#compdef agentctl"), "{}", &zsh[..40]);
    let fish = env
        .ctl(&["completions", "fish"])
        .expect_code(0)
        .stdout
        .clone();
    assert!(fish.contains("complete -c agentctl"));
    env.ctl(&["completions", "powershell"]).expect_code(2);
}

#[test]
fn man_writes_a_page_for_every_command_and_subcommand() {
    let env = Env::new();
    let dir = env.root.path().join("man");
    env.ctl(&["man", "--dir", dir.to_str().unwrap()])
        .expect_code(0);
    for c in commands(&env) {
        let page = std::fs::read_to_string(dir.join(format!("agentctl-{c}.1")))
            .unwrap_or_else(|e| panic!("agentctl-{c}.1: {e}"));
        assert!(
            page.contains(&format!(".TH agentctl-{c} 1")),
            "{c}: {}",
            &page[..80.min(page.len())]
        );
        assert!(page.contains(".SH NAME"), "{c}");
    }
    // Subcommands of subcommands too.
    for sub in ["service-install", "daemon-restart", "worktrees-prune"] {
        assert!(dir.join(format!("agentctl-{sub}.1")).is_file(), "{sub}");
    }
    let top = env.ctl(&["man"]).expect_code(0).stdout.clone();
    assert!(top.contains(".TH agentctl 1"), "{}", &top[..80]);
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let model = env.script("s.json", &script(vec![turn(vec![text("ok")])]));
    env.ctl(&["run", "--model", &model, "hi"]).expect_code(0);
    // Not a terminal: plain.
    let plain = env.ctl(&["list"]).expect_code(0).stdout.clone();
    assert!(
        plain.contains("completed") && !plain.contains('\x1b'),
        "{plain:?}"
    );
    let always = env
        .ctl(&["--color", "always", "list"])
        .expect_code(0)
        .stdout
        .clone();
    assert!(always.contains("\x1b[32mcompleted\x1b[0m"), "{always:?}");
    // Columns stay aligned around the escapes.
    let header = always.lines().next().unwrap();
    let row = always.lines().nth(1).unwrap();
    let age_col = header.find("AGE").unwrap();
    let visible: String = row.replace("\x1b[32m", "").replace("\x1b[0m", "");
    assert_eq!(&visible[age_col - 2..age_col], "  ", "{header}\n{visible}");
    let never = env
        .ctl(&["--color", "never", "list"])
        .expect_code(0)
        .stdout
        .clone();
    assert!(!never.contains('\x1b'));
    // NO_COLOR keeps auto plain; an explicit --color always still wins.
    let out = env
        .ctl_command(&["--no-autostart", "--color", "always", "list"])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains('\x1b'));
    env.ctl(&["--color", "sometimes", "list"]).expect_code(2);

    // On a terminal (script(1) gives it one): colour, unless NO_COLOR.
    let on_tty = |no_color: Option<&str>| {
        let ctl = agentd_e2e::agentctl_bin();
        let mut cmd = env.ctl_command(&[]);
        cmd.env("TERM", "xterm");
        if let Some(v) = no_color {
            cmd.env("NO_COLOR", v);
        }
        let out = Command::new("script")
            .args([
                "-qec",
                &format!("{} --no-autostart list", ctl.display()),
                "/dev/null",
            ])
            .envs(cmd.get_envs().filter_map(|(k, v)| v.map(|v| (k, v))))
            .current_dir(env.project())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let tty = on_tty(None);
    assert!(tty.contains("\x1b[32mcompleted"), "{tty:?}");
    let tty = on_tty(Some("1"));
    assert!(
        tty.contains("completed") && !tty.contains('\x1b'),
        "{tty:?}"
    );
}
