//! `Bash`: runs a shell command in the agent's working directory.

mod capture;
pub(crate) mod process;

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde_json::{Value, json};

use super::context::{ToolContext, ToolOutput, ToolSpec};
use super::input::{optional_u64, required_str};
use super::spool::SpoolWriter;
use super::tool_process::ToolProcess;
use agentd_sandbox::Policy;
use capture::Pipes;
use process::{Outcome, spawn, supervise};

/// MCP results are capped like Bash's output (`mcp::result`).
pub use capture::{MAX_OUTPUT_CHARS, truncate_middle};

const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
/// After the shell exits, how long to wait for background processes it left
/// behind to close the output pipes before returning without them.
pub(super) const DRAIN_AFTER_EXIT: Duration = Duration::from_millis(250);
/// After killing the process group, how long to collect the remaining output.
const DRAIN_AFTER_KILL: Duration = Duration::from_millis(500);

pub fn spec() -> ToolSpec {
    ToolSpec {
        name: "Bash",
        description: "Runs a command with `bash -c` in the agent's working directory and returns \
its output.\n\
\n\
- stdout comes first, then stderr (marked with a `[stderr]` line when both are present). \
Output longer than 30000 characters is shortened: the beginning and the end are kept and the \
number of characters left out is reported.\n\
- A non-zero exit status makes the result an error that starts with `Exit code N`.\n\
- stdin is not connected, so interactive commands (editors, pagers, prompts) cannot be used; \
pass flags such as `--yes` or `--no-pager` instead.\n\
- `timeout` is in milliseconds (default 120000, at most 600000); when it expires, or the \
agent is cancelled, the command is killed with everything it started and the output so far \
is returned.\n\
- Each call starts a fresh shell: `cd`, variables and aliases do not carry over to the next \
call. Chain dependent steps with `&&`.\n\
- Processes started in the background with `&` keep running after the command returns, \
until the agent stops; redirect their output to a file, or the result will not wait for it.\n\
- Prefer the Read, Write, Edit, Glob and Grep tools for looking at and changing files.",
        input_schema: json!({
            "type": "object",
            "properties": {
                "command": {
                    "type": "string",
                    "description": "The shell command to run."
                },
                "timeout": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TIMEOUT_MS,
                    "description": "How long the command may run, in milliseconds (default 120000, at most 600000)."
                },
                "description": {
                    "type": "string",
                    "description": "A few words on what the command does, shown to people watching the agent."
                }
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

/// Runs the tool; a refusal or failure is the `Err` the model is told.
pub async fn run(input: &Value, ctx: &ToolContext) -> Result<ToolOutput, ToolOutput> {
    let (command, timeout_ms) = preflight(input, ctx).await?;
    let mut process = spawn(command, ctx)
        .await
        .map_err(|e| ToolOutput::error(format!("Failed to start the shell: {e}")))?;
    let (Some(stdout), Some(stderr)) = (process.child.stdout.take(), process.child.stderr.take())
    else {
        return Err(ToolOutput::error("Failed to capture the command's output."));
    };
    let mut pipes = Pipes::new(stdout, stderr, SpoolWriter::create(ctx.spool.as_deref()));
    let outcome = supervise(
        &mut process,
        &mut pipes,
        Duration::from_millis(timeout_ms),
        &ctx.cancel,
    )
    .await;
    match outcome {
        Outcome::Exited(status) => Ok(exited(status, &pipes.render(), ctx)),
        Outcome::TimedOut => {
            stop(&mut process, &mut pipes).await;
            Err(ToolOutput::error(format!(
                "The command timed out after {timeout_ms} ms and was killed, together with \
everything it started.\nOutput before the timeout:\n{}",
                pipes.render()
            )))
        }
        Outcome::Cancelled => {
            stop(&mut process, &mut pipes).await;
            Err(ToolOutput::error(format!(
                "The command was cancelled and killed, together with everything it started.\n\
Output before cancellation:\n{}",
                pipes.render()
            )))
        }
        Outcome::WaitFailed(e) => {
            process.kill();
            process.reap().await;
            Err(ToolOutput::error(format!(
                "Lost track of the command: {e}\n{}",
                pipes.render()
            )))
        }
    }
}

/// The command and its timeout, once the call and the agent's state allow
/// running it: a working directory that exists, no cancellation, and a
/// sandbox that can be enforced.
async fn preflight<'a>(input: &'a Value, ctx: &ToolContext) -> Result<(&'a str, u64), ToolOutput> {
    let command = required_str(input, "command")?;
    let timeout_ms = match optional_u64(input, "timeout")? {
        None => DEFAULT_TIMEOUT_MS,
        Some(0) => {
            return Err(ToolOutput::error(format!(
                "`timeout` must be between 1 and {MAX_TIMEOUT_MS} milliseconds."
            )));
        }
        Some(ms) => ms.min(MAX_TIMEOUT_MS),
    };
    match tokio::fs::metadata(&ctx.cwd).await {
        Ok(meta) if meta.is_dir() => {}
        _ => {
            return Err(ToolOutput::error(format!(
                "The agent's working directory {} does not exist or is not a directory.",
                ctx.cwd.display()
            )));
        }
    }
    if ctx.cancel.is_cancelled() {
        return Err(ToolOutput::error(
            "The command was not run: the agent was cancelled.",
        ));
    }
    if let Some(policy) = &ctx.sandbox
        && let Some(why) = agentd_sandbox::refusal(
            policy.mode,
            policy.network,
            &policy.workspace,
            &ctx.env.protected,
        )
    {
        return Err(ToolOutput::error(format!(
            "The command was not run: {why}."
        )));
    }
    Ok((command, timeout_ms))
}

/// What the model is told of a command that exited by itself.
fn exited(status: ExitStatus, output: &str, ctx: &ToolContext) -> ToolOutput {
    match (status.code(), status.signal()) {
        (Some(0), _) => ToolOutput::ok(output),
        (Some(code), _) => ToolOutput::error(format!(
            "Exit code {code}\n{output}{}",
            sandbox_hint(ctx.sandbox.as_ref(), output)
        )),
        (None, Some(signal)) => ToolOutput::error(format!(
            "Killed by signal {signal}{}\n{output}",
            signal_name(signal)
        )),
        (None, None) => ToolOutput::error(format!("Exited abnormally\n{output}")),
    }
}

/// Kills the command and all it started, keeping what it wrote meanwhile.
async fn stop(process: &mut ToolProcess, pipes: &mut Pipes) {
    process.kill();
    pipes.drain_for(DRAIN_AFTER_KILL).await;
    process.reap().await;
}

/// For a failed command that hit the sandbox: what it allows, so the model
/// can act on it rather than retry.
fn sandbox_hint(policy: Option<&Policy>, output: &str) -> String {
    let Some(policy) = policy else {
        return String::new();
    };
    let denied = [
        "Permission denied",
        "Operation not permitted",
        "Read-only file system",
    ];
    if !denied.iter().any(|d| output.contains(d)) {
        return String::new();
    }
    let writes = match policy.mode {
        crate::domain::SandboxMode::ReadOnly => {
            "this agent's sandbox is read-only: its commands may read anything and write nothing"
                .to_string()
        }
        _ => format!(
            "this agent's sandbox lets commands write only beneath {} and its TMPDIR {}; writing elsewhere is outside the agent's working directory and refused",
            policy.workspace.display(),
            policy.tmpdir.display()
        ),
    };
    let net = match policy.network {
        crate::domain::NetworkMode::None => "; TCP connections and listening are refused",
        crate::domain::NetworkMode::Proxy => {
            "; the network is reached only through agentd's proxy (HTTP_PROXY, HTTPS_PROXY): HTTP and HTTPS to allowed hosts, others asked about; direct connections, SSH and UDP fail"
        }
        crate::domain::NetworkMode::Full => "",
    };
    format!("\n(agentd: {writes}{net}.)")
}

fn signal_name(signal: i32) -> String {
    Signal::try_from(signal)
        .map(|s| format!(" ({})", s.as_str()))
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::capture::{CAPTURE_BYTES, Capture, MAX_OUTPUT_CHARS, truncate_middle};
    use super::*;
    use std::path::Path;
    use tokio_util::sync::CancellationToken;

    /// The pid a test command wrote to `bg.pid` (a process it left running).
    fn background_pid(dir: &Path) -> i32 {
        std::fs::read_to_string(dir.join("bg.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// The tool's answer as the model gets it.
    async fn run(input: &Value, ctx: &ToolContext) -> ToolOutput {
        ToolOutput::either(super::run(input, ctx).await)
    }

    fn ctx(dir: &Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf(), CancellationToken::new())
    }

    async fn bash(ctx: &ToolContext, command: &str) -> ToolOutput {
        run(&json!({ "command": command }), ctx).await
    }

    #[tokio::test]
    async fn returns_stdout() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(&ctx(dir.path()), "echo hello; echo world").await;
        assert_eq!(out, ToolOutput::ok("hello\nworld"));
    }

    #[tokio::test]
    async fn runs_in_the_working_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("marker.txt"), "").unwrap();
        let out = bash(&ctx(dir.path()), "ls").await;
        assert_eq!(out, ToolOutput::ok("marker.txt"));
    }

    #[tokio::test]
    async fn the_shell_leads_a_session_of_its_own_with_no_terminal() {
        let dir = tempfile::tempdir().unwrap();
        // Field 6 of /proc/<pid>/stat is the session id; field 7 the tty.
        let out = bash(
            &ctx(dir.path()),
            "set -- $(sed 's/^.*) //' /proc/$$/stat); echo \"$$ $4 $5\"",
        )
        .await;
        let fields: Vec<String> = out.content.split_whitespace().map(String::from).collect();
        assert_eq!(fields.len(), 3, "{out:?}");
        assert_eq!(fields[0], fields[1], "session leader: {out:?}");
        assert_eq!(fields[2], "0", "no controlling terminal: {out:?}");
    }

    #[tokio::test]
    async fn labels_stderr_when_both_streams_have_output() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(&ctx(dir.path()), "echo out; echo err >&2").await;
        assert_eq!(out, ToolOutput::ok("out\n[stderr]\nerr"));
        let out = bash(&ctx(dir.path()), "echo only-err >&2").await;
        assert_eq!(out, ToolOutput::ok("only-err"));
    }

    #[tokio::test]
    async fn non_zero_exit_is_an_error_with_the_code() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(&ctx(dir.path()), "echo failing; exit 3").await;
        assert!(out.is_error);
        assert_eq!(out.content, "Exit code 3\nfailing");
    }

    #[tokio::test]
    async fn death_by_signal_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(&ctx(dir.path()), "kill -TERM $$").await;
        assert!(out.is_error);
        assert!(
            out.content.contains("signal 15 (SIGTERM)"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn empty_output_says_so() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            bash(&ctx(dir.path()), "true").await,
            ToolOutput::ok("(no output)")
        );
        let out = bash(&ctx(dir.path()), "false").await;
        assert_eq!(out, ToolOutput::error("Exit code 1\n(no output)"));
    }

    #[tokio::test]
    async fn stdin_is_not_connected() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let out = bash(&ctx(dir.path()), "cat; echo done").await;
        assert_eq!(out, ToolOutput::ok("done"));
        assert!(started.elapsed() < Duration::from_secs(5));
    }

    #[tokio::test]
    async fn missing_or_mistyped_command_is_a_tool_error() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&json!({}), &ctx(dir.path())).await;
        assert!(
            out.is_error && out.content.contains("`command` is required"),
            "{}",
            out.content
        );
        let out = run(&json!({"command": 5}), &ctx(dir.path())).await;
        assert!(
            out.is_error && out.content.contains("`command`"),
            "{}",
            out.content
        );
        let out = run(
            &json!({"command": "true", "timeout": "soon"}),
            &ctx(dir.path()),
        )
        .await;
        assert!(
            out.is_error && out.content.contains("`timeout`"),
            "{}",
            out.content
        );
        let out = run(&json!({"command": "true", "timeout": 0}), &ctx(dir.path())).await;
        assert!(
            out.is_error && out.content.contains("`timeout`"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn timeout_kills_the_command_and_keeps_partial_output() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let out = run(
            &json!({"command": "echo partial; sleep 30", "timeout": 300}),
            &ctx(dir.path()),
        )
        .await;
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
        assert!(out.is_error);
        assert!(
            out.content.contains("timed out after 300 ms"),
            "{}",
            out.content
        );
        assert!(out.content.contains("partial"), "{}", out.content);
    }

    /// Whether the process `pid` has exited (it is gone or a zombie).
    fn is_dead(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            // The state follows the parenthesized command name.
            Ok(stat) => stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
        }
    }

    async fn wait_dead(pid: i32) -> bool {
        for _ in 0..100 {
            if is_dead(pid) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        false
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        // A grandchild in the background, and a foreground child that outlives
        // the timeout; both must die.
        let command = "sleep 30 & echo $! > bg.pid; sleep 30";
        let started = std::time::Instant::now();
        let out = run(
            &json!({"command": command, "timeout": 1000}),
            &ctx(dir.path()),
        )
        .await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(
            out.is_error && out.content.contains("timed out"),
            "{}",
            out.content
        );
        let pid = background_pid(dir.path());
        assert!(wait_dead(pid).await, "background process {pid} survived");
    }

    #[tokio::test]
    async fn dropping_the_call_kills_the_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let command = "sleep 30 & echo $! > bg.pid; sleep 30";
        let call = bash(&ctx, command);
        assert!(
            tokio::time::timeout(Duration::from_millis(1000), call)
                .await
                .is_err()
        );
        let pid = background_pid(dir.path());
        assert!(wait_dead(pid).await, "background process {pid} survived");
    }

    #[tokio::test]
    async fn cancellation_kills_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1000)).await;
            cancel.cancel();
        });
        let started = std::time::Instant::now();
        let out = bash(&ctx, "echo $$ > sh.pid; echo before; sleep 30").await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(out.is_error);
        assert!(out.content.contains("cancelled"), "{}", out.content);
        assert!(out.content.contains("before"), "{}", out.content);
        let pid: i32 = std::fs::read_to_string(dir.path().join("sh.pid"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(wait_dead(pid).await, "shell {pid} survived");
    }

    #[tokio::test]
    async fn already_cancelled_does_not_run() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx(dir.path());
        ctx.cancel.cancel();
        let out = bash(&ctx, "touch ran").await;
        assert!(out.is_error);
        assert!(!dir.path().join("ran").exists());
    }

    #[tokio::test]
    async fn background_processes_do_not_hold_up_the_result() {
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let out = bash(&ctx(dir.path()), "sleep 3 & echo started").await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "took {:?}",
            started.elapsed()
        );
        assert_eq!(out, ToolOutput::ok("started"));
    }

    fn seq_output(n: u32) -> String {
        (1..=n)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn omitted_count(content: &str) -> usize {
        let start = content.find("[... ").unwrap() + 5;
        let end = content[start..].find(' ').unwrap() + start;
        content[start..end].parse().unwrap()
    }

    #[tokio::test]
    async fn long_output_keeps_head_and_tail() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(&ctx(dir.path()), "seq 1 100000").await;
        assert!(!out.is_error);
        let full = seq_output(100_000);
        assert!(out.content.starts_with("1\n2\n3\n"));
        assert!(out.content.ends_with("99999\n100000"));
        assert_eq!(omitted_count(&out.content), full.len() - MAX_OUTPUT_CHARS);
        let marker_len = out.content.len() - MAX_OUTPUT_CHARS;
        assert!(marker_len < 100, "{marker_len}");
        assert!(full.starts_with(&out.content[..MAX_OUTPUT_CHARS / 2]));
        assert!(full.ends_with(&out.content[out.content.len() - MAX_OUTPUT_CHARS / 2..]));
    }

    #[tokio::test]
    async fn huge_output_is_counted_exactly_without_keeping_it() {
        let dir = tempfile::tempdir().unwrap();
        let out = bash(&ctx(dir.path()), "seq 1 1000000").await;
        let full = seq_output(1_000_000);
        assert!(out.content.starts_with("1\n2\n"));
        assert!(out.content.ends_with("999999\n1000000"));
        assert_eq!(omitted_count(&out.content), full.len() - MAX_OUTPUT_CHARS);
    }

    #[tokio::test]
    async fn large_stdout_and_stderr_do_not_deadlock() {
        let dir = tempfile::tempdir().unwrap();
        let command = "head -c 1000000 /dev/zero | tr '\\0' e >&2; echo >&2; \
                       head -c 1000000 /dev/zero | tr '\\0' o; echo; echo end >&2";
        let out = run(
            &json!({"command": command, "timeout": 20000}),
            &ctx(dir.path()),
        )
        .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(out.content.starts_with("ooooo"));
        assert!(out.content.ends_with("eeee\nend"));
        assert_eq!(
            omitted_count(&out.content),
            2_000_000 + "\n[stderr]\n".len() + "\nend".len() - MAX_OUTPUT_CHARS
        );
    }

    #[test]
    fn capture_counts_multibyte_characters() {
        let mut capture = Capture::default();
        let text = "é".repeat(CAPTURE_BYTES * 2);
        for chunk in text.as_bytes().chunks(1000) {
            capture.push(chunk);
        }
        let (kept, omitted) = capture.text();
        assert_eq!(kept.chars().count() + omitted, text.chars().count());
        assert!(kept.chars().all(|c| c == 'é'));
    }

    #[test]
    fn truncate_middle_keeps_short_text() {
        assert_eq!(truncate_middle("abc", 10, 0), "abc");
        assert_eq!(
            truncate_middle("abcdefghij", 4, 0),
            "ab\n\n[... 6 characters omitted ...]\n\nij"
        );
    }

    #[test]
    fn spec_is_well_formed() {
        let spec = spec();
        assert_eq!(spec.name, "Bash");
        assert_eq!(spec.input_schema["required"], json!(["command"]));
        assert_eq!(spec.input_schema["additionalProperties"], json!(false));
        let keys: Vec<_> = spec.input_schema["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys, ["command", "timeout", "description"]);
    }
}
