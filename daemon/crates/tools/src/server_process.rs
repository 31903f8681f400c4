//! A long-lived process the agent's tools talk to over its standard input
//! and output (an MCP server on stdio, DESIGN §18), started the way Bash
//! starts its shell (`bash::process`): without the secrets in its
//! environment, and, when the agent has a sandbox and the server does not
//! opt out, confined by it in the agent's process namespace, so it cannot
//! write outside the workspace and ends with the agent's run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::process::{ChildStdin, ChildStdout, Command};

use super::context::ToolContext;
use super::tool_process::{self, ToolProcess};

/// What to start.
pub struct ServerCommand<'a> {
    pub program: &'a str,
    pub args: &'a [String],
    /// Set after the secrets are removed: a variable the user put in the
    /// server's definition is theirs to give it.
    pub env: &'a BTreeMap<String, String>,
    /// Relative to the agent's working directory; None: that directory.
    pub cwd: Option<&'a Path>,
    /// Run under the agent's sandbox (when it has one).
    pub confined: bool,
    /// Pipe its standard error (the caller takes it from the child);
    /// else it goes nowhere.
    pub capture_stderr: bool,
}

/// Starts `command` for the agent of `ctx`: the process (killed, with its
/// group, when dropped) and its pipes.
pub async fn spawn(
    command: &ServerCommand<'_>,
    ctx: &ToolContext,
) -> std::io::Result<(ToolProcess, ChildStdin, ChildStdout)> {
    let cwd: PathBuf = command
        .cwd
        .map_or_else(|| ctx.cwd.clone(), |dir| ctx.cwd.join(dir));
    let mut cmd = Command::new(command.program);
    cmd.args(command.args)
        .current_dir(&cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if command.capture_stderr {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    for name in &ctx.env.secrets {
        cmd.env_remove(name);
    }
    let policy = ctx.sandbox.as_ref().filter(|_| command.confined);
    match policy {
        Some(policy) => {
            for var in ["TMPDIR", "TMP", "TEMP"] {
                cmd.env(var, &policy.tmpdir);
            }
        }
        None => {
            if let Some((name, value)) = &ctx.env.marker {
                cmd.env(name, value);
            }
        }
    }
    cmd.envs(command.env);
    let mut process = match policy {
        Some(policy) => {
            tool_process::spawn_contained(&ctx.processes, cmd, &cwd, policy, &ctx.env.read_denials)
                .await?
        }
        None => tool_process::spawn_grouped(cmd)?,
    };
    let (Some(stdin), Some(stdout)) = (process.child.stdin.take(), process.child.stdout.take())
    else {
        process.kill();
        return Err(std::io::Error::other("the server's pipes were not set up"));
    };
    Ok((process, stdin, stdout))
}
