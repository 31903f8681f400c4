//! Running the command: starting the shell the way the agent's sandbox
//! asks, and watching it until it exits, times out or is cancelled.

use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::process::Command;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::super::context::ToolContext;
use super::super::tool_process::{self, ToolProcess};
use super::DRAIN_AFTER_EXIT;
use super::capture::Pipes;

/// Starts `bash -c command`, or `sh -c command` where bash is not installed,
/// without the secrets in its environment: confined and in the agent's
/// process namespace when the agent has a sandbox (`tool_process`), else
/// in a process group of its own and marked so that whatever it leaves
/// behind can be reaped (`process::reap`).
pub(super) async fn spawn(command: &str, ctx: &ToolContext) -> std::io::Result<ToolProcess> {
    spawn_with_stdin(command, ctx, false).await
}

/// `spawn`, with a pipe to the command's stdin when `piped_stdin` (a hook
/// reads its input there).
pub(crate) async fn spawn_with_stdin(
    command: &str,
    ctx: &ToolContext,
    piped_stdin: bool,
) -> std::io::Result<ToolProcess> {
    let build = |shell: &str| {
        let mut cmd = Command::new(shell);
        cmd.arg("-c")
            .arg(command)
            .current_dir(&ctx.cwd)
            .stdin(if piped_stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in &ctx.env.secrets {
            cmd.env_remove(name);
        }
        match &ctx.sandbox {
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
        cmd
    };
    let spawn_with = async |shell: &str| match &ctx.sandbox {
        Some(policy) => {
            tool_process::spawn_contained(
                &ctx.processes,
                build(shell),
                &ctx.cwd,
                policy,
                &ctx.env.read_denials,
            )
            .await
        }
        None => tool_process::spawn_grouped(build(shell)),
    };
    match spawn_with("bash").await {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => spawn_with("sh").await,
        result => result,
    }
}

/// How watching the command ended.
pub(super) enum Outcome {
    Exited(ExitStatus),
    TimedOut,
    Cancelled,
    WaitFailed(std::io::Error),
}

/// Reads the command's output until it has exited and its pipes are
/// closed (or a moment after it exited: what it left running may hold
/// them), until `timeout`, or until `cancel`.
pub(super) async fn supervise(
    process: &mut ToolProcess,
    pipes: &mut Pipes,
    timeout: Duration,
    cancel: &CancellationToken,
) -> Outcome {
    let deadline = tokio::time::sleep(timeout);
    tokio::pin!(deadline);
    // Armed once the shell has exited.
    let drain = tokio::time::sleep(Duration::from_secs(365 * 24 * 3600));
    tokio::pin!(drain);
    let mut status: Option<ExitStatus> = None;
    loop {
        let open = pipes.open();
        if let (Some(status), false) = (status, open) {
            return Outcome::Exited(status);
        }
        tokio::select! {
            () = pipes.read_chunk(), if open => {}
            waited = process.wait(), if status.is_none() => match waited {
                Ok(exit) => {
                    status = Some(exit);
                    drain.as_mut().reset(Instant::now() + DRAIN_AFTER_EXIT);
                }
                Err(e) => return Outcome::WaitFailed(e),
            },
            () = &mut drain, if status.is_some() => {
                if let Some(status) = status {
                    return Outcome::Exited(status);
                }
            }
            () = &mut deadline => match status {
                Some(status) => return Outcome::Exited(status),
                None => return Outcome::TimedOut,
            },
            () = cancel.cancelled() => match status {
                Some(status) => return Outcome::Exited(status),
                None => return Outcome::Cancelled,
            },
        }
    }
}
