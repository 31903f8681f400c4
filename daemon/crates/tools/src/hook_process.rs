//! Running one hook command (DESIGN §24) as the agent's Bash runs its
//! commands: `bash -c` in the agent's sandbox and PID namespace, with its
//! tool environment (no provider keys), in its working directory — its
//! input JSON on stdin, stdout and stderr kept apart and bounded, killed
//! with everything it started at its timeout or when the agent is
//! stopped. It never holds a turn, an interrupt or a shutdown longer than
//! that.

use std::time::Duration;

use agentd_rules::hook_output::HookRun;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWriteExt as _};

use super::bash::process::spawn_with_stdin;
use super::context::ToolContext;

/// The most of each of stdout and stderr a hook's result keeps.
pub const MAX_OUTPUT: usize = 64 * 1024;

/// Reads `r` to its end, keeping the first `MAX_OUTPUT` bytes.
async fn bounded(mut r: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = MAX_OUTPUT.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

/// Runs `command` with `input` on its stdin; how it ended and what it
/// wrote. A hook that cannot be started is an error run (code 127).
pub async fn run(command: &str, input: &[u8], timeout: Duration, ctx: &ToolContext) -> HookRun {
    if let Some(policy) = &ctx.sandbox
        && let Some(why) = agentd_sandbox::refusal(
            policy.mode,
            policy.network,
            &policy.workspace,
            &ctx.env.protected,
        )
    {
        return HookRun {
            code: Some(127),
            stderr: format!("the hook was not run: {why}"),
            ..HookRun::default()
        };
    }
    let mut process = match spawn_with_stdin(command, ctx, true).await {
        Ok(p) => p,
        Err(e) => {
            return HookRun {
                code: Some(127),
                stderr: format!("the hook could not be started: {e}"),
                ..HookRun::default()
            };
        }
    };
    let stdin = process.child.stdin.take();
    let stdout = process.child.stdout.take();
    let stderr = process.child.stderr.take();
    let input = input.to_vec();
    // A hook that does not read its input must not hold the daemon: the
    // write ends when it exits or is killed.
    let feed = tokio::spawn(async move {
        if let Some(mut w) = stdin {
            let _ = w.write_all(&input).await;
            let _ = w.shutdown().await;
        }
    });
    let out = tokio::spawn(async move {
        match stdout {
            Some(r) => bounded(r).await,
            None => String::new(),
        }
    });
    let err = tokio::spawn(async move {
        match stderr {
            Some(r) => bounded(r).await,
            None => String::new(),
        }
    });
    let ended = tokio::select! {
        status = process.wait() => Some(status),
        () = tokio::time::sleep(timeout) => None,
        () = ctx.cancel.cancelled() => None,
    };
    let (code, timed_out) = match ended {
        Some(Ok(status)) => (status.code(), false),
        Some(Err(_)) => {
            process.kill();
            process.reap().await;
            (None, false)
        }
        None => {
            process.kill();
            process.reap().await;
            (None, !ctx.cancel.is_cancelled())
        }
    };
    feed.abort();
    // What it left running may hold the pipes: not waited for long.
    let grace = Duration::from_millis(500);
    let stdout = tokio::time::timeout(grace, out)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    let stderr = tokio::time::timeout(grace, err)
        .await
        .ok()
        .and_then(Result::ok)
        .unwrap_or_default();
    HookRun {
        code,
        stdout,
        stderr,
        timed_out,
    }
}
