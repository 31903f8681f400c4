//! A real terminal for tests of full-screen programs (`agentctl ui`): a
//! tmux server of the test's own (its own socket, so nothing of the
//! person's tmux is touched), one window running the program at a given
//! size; keys go in with `send-keys`, the screen comes out with
//! `capture-pane`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// One tmux server with one window.
pub struct Tmux {
    socket: PathBuf,
    config: PathBuf,
    target: String,
}

impl Tmux {
    /// Starts `program` with `args` in a `cols`×`rows` window, in `cwd`,
    /// with exactly the environment `env` (and TERM).
    pub fn start(
        dir: &Path,
        program: &Path,
        args: &[&str],
        env: &[(String, String)],
        (cols, rows): (u16, u16),
    ) -> Tmux {
        let socket = dir.join("tmux.sock");
        // The server's own configuration keeps a pane when its program
        // exits, to read what it left. It is read when the server starts,
        // before the program runs: set afterwards, a program that exits at
        // once would take the session, and the server, with it.
        let config = dir.join("tmux.conf");
        std::fs::write(&config, "set-option -g remain-on-exit on\n").expect("tmux.conf");
        let tmux = Tmux {
            socket,
            config,
            target: "ui:0".into(),
        };
        // `env` runs the program with the environment given, nothing of
        // the test's: tmux would pass its own on otherwise.
        let mut command = vec!["env".to_string(), "-i".to_string()];
        command.extend(env.iter().map(|(k, v)| format!("{k}={v}")));
        command.push("TERM=xterm-256color".into());
        command.push(program.display().to_string());
        command.extend(args.iter().map(|a| a.to_string()));
        let (cols, rows, cwd) = (
            cols.to_string(),
            rows.to_string(),
            dir.display().to_string(),
        );
        let line = shell_line(&command);
        let out = tmux.run(&[
            "new-session",
            "-d",
            "-s",
            "ui",
            "-x",
            &cols,
            "-y",
            &rows,
            "-c",
            &cwd,
            &line,
        ]);
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux
    }

    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("tmux");
        // A server started from a test thread would inherit its signal
        // mask; with SIGCHLD blocked there it never reaps the program, and
        // never sees it exit. tmux starts with every signal deliverable.
        unblock_signals(&mut cmd);
        cmd.arg("-S")
            .arg(&self.socket)
            .arg("-f")
            .arg(&self.config)
            .args(args)
            .output()
            .expect("tmux is needed (scripts/test-deps installs it)")
    }

    /// Sends keys, as tmux names them (`Enter`, `Down`, `C-d`, or text).
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.target];
        args.extend_from_slice(keys);
        let out = self.run(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Types `text` literally.
    pub fn type_text(&self, text: &str) {
        let out = self.run(&["send-keys", "-t", &self.target, "-l", text]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The screen as text, one line per row.
    pub fn screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-t", &self.target]);
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// The screen with its styles, as escape sequences (`capture-pane -e`):
    /// what a test of colours reads.
    pub fn styled_screen(&self) -> String {
        let out = self.run(&["capture-pane", "-p", "-e", "-t", &self.target]);
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Resizes the window.
    pub fn resize(&self, cols: u16, rows: u16) {
        self.run(&[
            "resize-window",
            "-t",
            "ui",
            "-x",
            &cols.to_string(),
            "-y",
            &rows.to_string(),
        ]);
    }

    /// Waits until the screen satisfies `ok`; panics with the screen.
    #[track_caller]
    pub fn wait_for(&self, what: &str, limit: Duration, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if ok(&screen) {
                return screen;
            }
            if start.elapsed() > limit {
                let tree = Command::new("sh")
                    .arg("-c")
                    .arg(format!(
                        "ps -o pid,ppid,stat,wchan:20,args --ppid {pid}; ps -o pid,ppid,stat,wchan:20,args -p {pid}; ps -o pid,stat,args -p $(ps -o ppid= -p {pid}); cat /proc/{pid}/task/*/wchan 2>/dev/null | tr '\\0' ' '",
                        pid = self.pid()
                    ))
                    .output()
                    .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
                    .unwrap_or_default();
                panic!(
                    "timed out waiting for {what}; the screen:\n{screen}\nthe pane's processes:\n{tree}"
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until the screen shows `text`.
    #[track_caller]
    pub fn wait_text(&self, text: &str) -> String {
        self.wait_for(&format!("{text:?}"), Duration::from_secs(20), |s| {
            s.contains(text)
        })
    }

    /// Whether the program has exited (the pane is dead): its exit code,
    /// or 128 + the signal that ended it.
    pub fn exited(&self) -> Option<i32> {
        self.nudge_if_zombie();
        let out = self.run(&[
            "display-message",
            "-p",
            "-t",
            &self.target,
            "#{pane_dead}:#{pane_dead_status}:#{pane_dead_signal}",
        ]);
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mut parts = text.split(':');
        match (parts.next(), parts.next(), parts.next()) {
            (Some("1"), Some(code), _) if !code.is_empty() => code.parse().ok(),
            (Some("1"), _, Some(signal)) => signal.parse::<i32>().ok().map(|s| 128 + s),
            _ => None,
        }
    }

    /// Under a loaded test run the tmux server sometimes misses the
    /// SIGCHLD of the program's exit and leaves it a zombie, its pane
    /// alive: a SIGCHLD sent again makes it reap the program.
    fn nudge_if_zombie(&self) {
        let out = self.run(&["display-message", "-p", "-t", &self.target, "#{pane_pid}"]);
        let Ok(pid) = String::from_utf8_lossy(&out.stdout).trim().parse::<i32>() else {
            return;
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Fields after the command's closing parenthesis: state, ppid, …
        let mut rest = stat
            .rsplit_once(')')
            .map(|(_, r)| r)
            .unwrap_or("")
            .split_whitespace();
        if let (Some("Z"), Some(ppid)) = (rest.next(), rest.next().and_then(|p| p.parse().ok())) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(ppid),
                nix::sys::signal::Signal::SIGCHLD,
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The pane's terminal modes as tmux sees them: whether the alternate
    /// screen is on (a program that exits must turn it off).
    pub fn alternate_on(&self) -> bool {
        let out = self.run(&[
            "display-message",
            "-p",
            "-t",
            &self.target,
            "#{alternate_on}",
        ]);
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    /// Whether the pane shows its cursor (a program that hid it must show
    /// it again on its way out).
    pub fn cursor_visible(&self) -> bool {
        let out = self.run(&[
            "display-message",
            "-p",
            "-t",
            &self.target,
            "#{cursor_flag}",
        ]);
        String::from_utf8_lossy(&out.stdout).trim() == "1"
    }

    /// The pid of the program in the pane.
    pub fn pid(&self) -> i32 {
        let out = self.run(&["display-message", "-p", "-t", &self.target, "#{pane_pid}"]);
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .expect("a pane pid")
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}

/// Clears the signal mask of `cmd`'s process before it runs.
#[allow(unsafe_code)]
fn unblock_signals(cmd: &mut Command) {
    use std::os::unix::process::CommandExt;
    // SAFETY: sigprocmask with an empty set is async-signal-safe and
    // touches only the child's own mask, between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            nix::sys::signal::sigprocmask(
                nix::sys::signal::SigmaskHow::SIG_SETMASK,
                Some(&nix::sys::signal::SigSet::empty()),
                None,
            )
            .map_err(std::io::Error::from)
        });
    }
}

/// `words` as one line for a shell, each quoted.
fn shell_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', "'\\''")))
        .collect::<Vec<_>>()
        .join(" ")
}
