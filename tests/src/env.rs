//! One test's private world (`Env`): a temp root with its own socket,
//! data directory, HOME and config, the daemons it starts (`Daemon`) and
//! what its `agentctl` runs printed (`Out`).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::*;

/// One test's private world: a temp root with the socket, data dir, a HOME
/// and XDG config, and a project directory for agents to work in.
pub struct Env {
    pub root: tempfile::TempDir,
    /// Extra environment for daemons this world starts (API keys, base URLs).
    daemon_env: std::sync::Mutex<Vec<(String, String)>>,
}

impl Env {
    pub fn new() -> Env {
        let root = tempfile::Builder::new()
            .prefix("agentd-e2e-")
            .tempdir()
            .expect("tempdir");
        let env = Env {
            root,
            daemon_env: std::sync::Mutex::new(Vec::new()),
        };
        std::fs::create_dir_all(env.project()).expect("project dir");
        std::fs::create_dir_all(env.home()).expect("home dir");
        env
    }

    /// A world whose model providers are `mock` (see [`Env::use_mock`]).
    pub fn with_mock(mock: &MockServer) -> Env {
        let env = Env::new();
        env.use_mock(&mock.url());
        env
    }

    /// Keeps the world's files (its daemon log, store, project) for a
    /// post-mortem; returns where they are.
    pub fn keep(self) -> PathBuf {
        let Env { root, .. } = self;
        root.keep()
    }

    pub fn socket(&self) -> PathBuf {
        self.root.path().join("run/agentd.sock")
    }

    pub fn data_dir(&self) -> PathBuf {
        self.root.path().join("data")
    }

    pub fn home(&self) -> PathBuf {
        self.root.path().join("home")
    }

    /// Where agents work by default.
    pub fn project(&self) -> PathBuf {
        self.root.path().join("project")
    }

    pub fn daemon_log(&self) -> PathBuf {
        self.root.path().join("agentd.stderr")
    }

    fn apply(&self, cmd: &mut Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.home().join(".config"))
            .env("XDG_STATE_HOME", self.home().join(".state"))
            .env("AGENTD_SOCKET", self.socket())
            .env("AGENTD_DATA_DIR", self.data_dir())
            .env(
                "RUST_LOG",
                std::env::var("RUST_LOG").unwrap_or_else(|_| "info".into()),
            );
    }

    /// An `agentctl` command in this world, run from the project directory.
    pub fn ctl_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(agentctl_bin());
        self.apply(&mut cmd);
        cmd.current_dir(self.project())
            .args(args)
            .stdin(Stdio::null());
        cmd
    }

    /// An `agentd` command in this world (its environment, none of the
    /// harness's readiness plumbing), for tests that start it their way.
    pub fn agentd_command(&self) -> Command {
        let mut cmd = Command::new(agentd_bin());
        self.apply(&mut cmd);
        for (k, v) in self.daemon_env.lock().expect("daemon env").iter() {
            cmd.env(k, v);
        }
        cmd.stdin(Stdio::null());
        cmd
    }

    /// Runs `agentctl` (never autostarting: the test owns the daemon).
    pub fn ctl(&self, args: &[&str]) -> Out {
        let mut full = vec!["--no-autostart"];
        full.extend_from_slice(args);
        Out::from(self.ctl_command(&full).output().expect("run agentctl"))
    }

    /// `agentctl run --background ARGS`, which must succeed: the new
    /// agent's id.
    #[track_caller]
    pub fn start_agent(&self, args: &[&str]) -> String {
        let mut full = vec!["run", "--background"];
        full.extend_from_slice(args);
        self.ctl(&full).expect_code(0).stdout.trim().to_string()
    }

    /// `agentctl run --background --model MODEL FLAGS… work`: the new
    /// agent's id. For `scripted:` models, which do not read the prompt.
    #[track_caller]
    pub fn start_model(&self, model: &str, flags: &[&str]) -> String {
        let mut args = vec!["--model", model];
        args.extend_from_slice(flags);
        args.push("work");
        self.start_agent(&args)
    }

    /// `agentctl run --background --model MODEL --name NAME PROMPT`: the
    /// new agent's id.
    #[track_caller]
    pub fn run_background(&self, model: &str, name: &str, prompt: &str) -> String {
        self.start_agent(&["--model", model, "--name", name, prompt])
    }

    /// One agent, as `agentctl show --json` prints it.
    #[track_caller]
    pub fn show(&self, id: &str) -> Value {
        self.ctl(&["show", id, "--json"]).expect_code(0).json()
    }

    /// The agent once `show` says it is `status` (bounded by `limit`; the
    /// failure quotes what it last showed).
    #[track_caller]
    pub fn wait_status(&self, id: &str, status: &str, limit: Duration) -> Value {
        let deadline = Instant::now() + limit;
        loop {
            let a = self.show(id);
            if a["status"] == status {
                return a;
            }
            assert!(Instant::now() < deadline, "{id} never became {status}: {a}");
            std::thread::sleep(Duration::from_millis(30));
        }
    }

    /// Every agent, as `agentctl list --all --json` prints them.
    #[track_caller]
    pub fn agents(&self) -> Vec<Value> {
        self.ctl(&["list", "--all", "--json"])
            .expect_code(0)
            .json()
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// An agent's transcript, as `agentctl log --json` prints it.
    #[track_caller]
    pub fn transcript(&self, id: &str) -> Vec<Value> {
        self.ctl(&["log", id, "--json"])
            .expect_code(0)
            .json()
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Sets an environment variable for daemons started from now on.
    pub fn set_daemon_env(&self, key: &str, value: &str) {
        self.daemon_env
            .lock()
            .expect("daemon env")
            .push((key.to_string(), value.to_string()));
    }

    /// Points the providers at a mock server, with test keys and a quick
    /// retry policy.
    pub fn use_mock(&self, url: &str) {
        self.set_daemon_env("ANTHROPIC_BASE_URL", url);
        self.set_daemon_env("ANTHROPIC_API_KEY", "sk-ant-test-key");
        self.set_daemon_env("OPENAI_BASE_URL", url);
        self.set_daemon_env("OPENAI_API_KEY", "sk-openai-test-key");
    }

    /// Writes the daemon's config.toml (read at start).
    pub fn write_config(&self, toml: &str) {
        let dir = self.home().join(".config/agentd");
        std::fs::create_dir_all(&dir).expect("config dir");
        std::fs::write(dir.join("config.toml"), toml).expect("write config");
    }

    /// Writes a model script into the temp root and returns `scripted:<path>`.
    pub fn script(&self, name: &str, script: &Value) -> String {
        let path = self.root.path().join(name);
        std::fs::write(&path, serde_json::to_vec_pretty(script).expect("json"))
            .expect("write script");
        format!("scripted:{}", path.display())
    }

    /// Starts `agentd` and waits until it reports ready.
    pub fn start_daemon(&self) -> Daemon {
        self.try_start_daemon().unwrap_or_else(|e| {
            panic!(
                "agentd did not start: {e}\n{}",
                std::fs::read_to_string(self.daemon_log()).unwrap_or_default()
            )
        })
    }

    /// Starts `agentd` and waits until its start's worktree sweep, which
    /// runs after it is ready, is done.
    pub fn start_daemon_swept(&self) -> Daemon {
        let before = self
            .daemon_log_text()
            .matches("worktree sweep done")
            .count();
        let daemon = self.start_daemon();
        wait_until(
            "the start's worktree sweep",
            Duration::from_secs(30),
            || {
                self.daemon_log_text()
                    .matches("worktree sweep done")
                    .count()
                    > before
            },
        );
        daemon
    }

    /// Starts `agentd`; Err if it exits before it is ready.
    pub fn try_start_daemon(&self) -> Result<Daemon, String> {
        let notify_path = self
            .root
            .path()
            .join(format!("notify-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&notify_path);
        let notify = UnixDatagram::bind(&notify_path).map_err(|e| e.to_string())?;
        notify
            .set_read_timeout(Some(Duration::from_millis(100)))
            .map_err(|e| e.to_string())?;
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.daemon_log())
            .map_err(|e| e.to_string())?;
        let mut cmd = Command::new(agentd_bin());
        self.apply(&mut cmd);
        for (k, v) in self.daemon_env.lock().expect("daemon env").iter() {
            cmd.env(k, v);
        }
        cmd.env("NOTIFY_SOCKET", &notify_path)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        let mut child = cmd.spawn().map_err(|e| e.to_string())?;
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut buf = [0u8; 256];
        loop {
            if let Ok(n) = notify.recv(&mut buf)
                && String::from_utf8_lossy(&buf[..n])
                    .lines()
                    .any(|l| l == "READY=1")
            {
                let _ = std::fs::remove_file(&notify_path);
                return Ok(Daemon { child });
            }
            if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
                let _ = std::fs::remove_file(&notify_path);
                return Err(format!("agentd exited with {status}"));
            }
            if Instant::now() > deadline {
                // AGENTD_DEBUG_HANG=1: every thread's stack into the log
                // first (gdb), to see what a start is waiting for.
                if std::env::var_os("AGENTD_DEBUG_HANG").is_some()
                    && let Ok(out) = Command::new("gdb")
                        .args([
                            "-p",
                            &child.id().to_string(),
                            "-batch",
                            "-ex",
                            "thread apply all bt",
                        ])
                        .output()
                {
                    let mut log = std::fs::OpenOptions::new()
                        .append(true)
                        .open(self.daemon_log())
                        .map_err(|e| e.to_string())?;
                    let _ = std::io::Write::write_all(&mut log, &out.stdout);
                }
                let _ = child.kill();
                return Err("agentd was not ready within 20 s".into());
            }
        }
    }

    /// Runs `f` with a client of this world's daemon, on a runtime of its
    /// own (tests are synchronous).
    pub fn rpc<T>(&self, f: impl AsyncFnOnce(&mut ApiClient) -> T) -> T {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async {
            let mut client = agentd_shared::client::agent_client(&self.socket())
                .await
                .expect("connect to the daemon");
            f(&mut client).await
        })
    }

    pub fn daemon_log_text(&self) -> String {
        std::fs::read_to_string(self.daemon_log()).unwrap_or_default()
    }

    /// Polls `show --json` until `pred` holds (bounded), returning the agent.
    pub fn wait_for_agent(&self, id: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let out = self.ctl(&["show", id, "--json"]);
            if out.code == 0 {
                let v = out.json();
                if pred(&v) {
                    return v;
                }
            }
            assert!(
                Instant::now() < deadline,
                "agent {id} never reached: {what}; last: {}",
                out.stdout
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Makes the temp root world-traversable (for tests that run a client as
    /// another user).
    pub fn open_up(&self) {
        for dir in [
            self.root.path().to_path_buf(),
            self.socket().parent().expect("dir").to_path_buf(),
        ] {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        }
        std::fs::set_permissions(self.socket(), std::fs::Permissions::from_mode(0o666))
            .expect("chmod socket");
    }
}

impl Default for Env {
    fn default() -> Self {
        Env::new()
    }
}

/// A running daemon; killed (SIGKILL) when dropped.
pub struct Daemon {
    pub child: Child,
}

impl Daemon {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// SIGKILL: no chance to flush or clean up.
    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then wait (bounded) for the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid()),
            nix::sys::signal::Signal::SIGTERM,
        )
        .expect("SIGTERM");
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "agentd did not exit within 30 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A finished command's exit code and output.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<Output> for Out {
    fn from(o: Output) -> Out {
        Out {
            code: o.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }
}

impl Out {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}): {:?}\nstderr: {}",
                self.stdout, self.stderr
            )
        })
    }

    /// Asserts the exit code, showing the output when it differs.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Out {
        assert_eq!(
            self.code, code,
            "unexpected exit code; stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}
