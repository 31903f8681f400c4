//! `bench sandbox`: what the tool sandbox costs a Bash call — `true`, and
//! a `find` over 1,000 files — confined (Landlock ruleset built in the
//! daemon, applied in the child before exec; with and without the read
//! denials carved out of it) against unconfined, calls in rotating order
//! so noise hits all.

use std::time::{Duration, Instant};

use agentd::domain::{SandboxMode, ToolName};
use agentd::sandbox::{Policy, ReadDenials};
use agentd::tools::{ToolContext, run_tool};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{arg, ms, percentile};

pub fn bench_sandbox(args: &[String]) {
    let runs: usize = arg(args, "--runs", "300").parse().unwrap();
    let files: usize = arg(args, "--files", "1000").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    for i in 0..files {
        let sub = project.join(format!("d{:02}", i % 50));
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join(format!("f{i}.txt")), "x").unwrap();
    }
    let project = project.canonicalize().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let plain = ToolContext::new(project.clone(), CancellationToken::new());
    let mut confined = plain.clone();
    confined.sandbox = Some(Policy {
        mode: SandboxMode::WorkspaceWrite,
        network: agentd::domain::NetworkMode::Full,
        workspace: project.clone(),
        tmpdir: tmp,
        also_writable: Vec::new(),
    });
    // As the daemon builds them: its own directories and the secret
    // stores, carved out of every grant (DESIGN §22).
    let mut denying = confined.clone();
    let own: Vec<std::path::PathBuf> = vec![
        agentd_shared::paths::data_dir(None),
        agentd_shared::paths::socket_path(None)
            .parent()
            .map(std::path::PathBuf::from)
            .unwrap_or_default(),
        agentd::sandbox::tmp_root(),
        agentd_shared::paths::config_dir(),
    ];
    let mut env = (*denying.env).clone();
    env.read_denials = ReadDenials::new(&agentd_shared::paths::home_dir(), &own, &[], &[]);
    let denied = env.read_denials.paths.len();
    denying.env = std::sync::Arc::new(env);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    agentd::sandbox::pid_namespace::set_helper().unwrap();
    println!(
        "Landlock ABI {}; commands contained in {}; {files} files; {denied} paths denied to reads; Bash tool calls through agentd::tools::run_tool, in rotating order.",
        agentd::sandbox::kernel_abi(),
        agentd::sandbox::pid_namespace::support()
            .map(|m| m.describe())
            .unwrap_or("nothing")
    );
    println!(
        "| command | runs | unconfined p50 | confined, no read denials p50 | confined p50 | confined p90 | no denials / unconfined | confined / unconfined (p50) |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let contexts = [&plain, &confined, &denying];
    for (label, command, n) in [
        ("true", "true".to_string(), runs),
        (
            "find, 1,000 files",
            "find . -type f | wc -l".to_string(),
            runs / 3,
        ),
    ] {
        let input = json!({"command": command});
        let mut times = [Vec::new(), Vec::new(), Vec::new()];
        for i in 0..n + 5 {
            for j in 0..contexts.len() {
                // Rotate which goes first, so noise hits all alike.
                let k = (i + j) % contexts.len();
                let started = Instant::now();
                let out = rt.block_on(run_tool(ToolName::Bash, &input, contexts[k]));
                let took = started.elapsed();
                assert!(!out.is_error, "{}", out.content);
                if i >= 5 {
                    times[k].push(took);
                }
            }
        }
        for t in &mut times {
            t.sort();
        }
        let p = |t: &[Duration], q| ms(percentile(t, q));
        println!(
            "| {label} | {n} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:.2}x | {:.2}x |",
            p(&times[0], 0.5),
            p(&times[1], 0.5),
            p(&times[2], 0.5),
            p(&times[2], 0.9),
            p(&times[1], 0.5) / p(&times[0], 0.5),
            p(&times[2], 0.5) / p(&times[0], 0.5)
        );
    }
}
