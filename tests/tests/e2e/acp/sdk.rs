//! The ACP clients nobody here wrote that the end-to-end tests drive
//! `agentctl acp` with, as an editor would: the official TypeScript SDK
//! (`@agentclientprotocol/sdk`, tests/acp-client) and the Python SDK
//! (`agent-client-protocol`, tests/acp-client-python). Each driver takes
//! the same steps and prints the same JSON lines, so a test runs one
//! scenario through both. Each directory's setup.sh installs its pinned
//! packages on first use (under a lock on the directory), quickly after.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use agentd_e2e::Env;
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sdk {
    TypeScript,
    Python,
}

impl Sdk {
    fn dir(self) -> PathBuf {
        let name = match self {
            Sdk::TypeScript => "acp-client",
            Sdk::Python => "acp-client-python",
        };
        Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
    }

    /// Installs the driver's pinned packages (its setup.sh, under a lock).
    pub(crate) fn setup(self) {
        let dir = self.dir();
        let out = Command::new("timeout")
            .args(["900", "flock"])
            .arg(dir.join(".setup.lock"))
            .arg("sh")
            .arg(dir.join("setup.sh"))
            .current_dir(&dir)
            .output()
            .expect("timeout and flock (coreutils, util-linux) are needed");
        assert!(
            out.status.success(),
            "{}/setup.sh failed: {}{}",
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn command(self) -> Command {
        let dir = self.dir();
        match self {
            Sdk::TypeScript => {
                let mut cmd = Command::new("node");
                cmd.arg(dir.join("client.mjs"));
                cmd
            }
            Sdk::Python => {
                let mut cmd = Command::new(dir.join(".venv/bin/python"));
                cmd.arg(dir.join("client.py"));
                cmd
            }
        }
    }

    /// Runs one step of the driver in `env`'s world, from its project
    /// directory; its JSON lines.
    pub(crate) fn run(self, env: &Env, args: &[&str]) -> Vec<Value> {
        let driver = self.spawn(env, args);
        self.finish(driver)
    }

    /// Starts one step of the driver, for a test that acts while it runs
    /// (`finish` collects its lines).
    pub(crate) fn spawn(self, env: &Env, args: &[&str]) -> Child {
        let cmd = env.ctl_command(&[]);
        let envs: Vec<_> = cmd
            .get_envs()
            .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned())))
            .collect();
        let driver = self.command();
        Command::new("timeout")
            .arg("120")
            .arg(driver.get_program())
            .args(driver.get_args())
            .arg(agentd_e2e::agentctl_bin())
            .args(args)
            .env_clear()
            .envs(envs)
            .current_dir(env.project())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("node and python3 are needed (scripts/test-deps installs them)")
    }

    /// Waits for a step started by `spawn` to end; its JSON lines.
    pub(crate) fn finish(self, driver: Child) -> Vec<Value> {
        let out = driver.wait_with_output().expect("the driver's output");
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "the {self:?} ACP client failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }
}
