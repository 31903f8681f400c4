//! `agentctl doctor`: what this machine can do for agentd — the daemon,
//! the kernel's Landlock (the tool sandbox), git (worktrees' submodules).
//! Exit 1 when agents started with the defaults would be refused.

use agentd_shared::proto as pb;
use serde_json::json;

use crate::autostart::Target;
use crate::exit::{FAILURE, Failure, SUCCESS};
use crate::sandbox_view;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let s = client
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner();
    let git = std::process::Command::new("git")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let default_off = s.default_sandbox == pb::SandboxMode::Off as i32;
    let sandbox_ok = default_off || s.landlock_abi >= 3;
    if args.json {
        println!(
            "{}",
            json!({
                "version": s.version,
                "landlock_abi": s.landlock_abi,
                "default_sandbox": sandbox_view::name(s.default_sandbox),
                "sandbox_enforceable": s.landlock_abi >= 3,
                "network_rules": s.landlock_abi >= 4,
                "git": git,
                "ok": sandbox_ok,
            })
        );
        return Ok(if sandbox_ok { SUCCESS } else { FAILURE });
    }
    println!("agentd {}: running (socket {})", s.version, s.socket);
    println!("landlock: {}", sandbox_view::landlock_line(s.landlock_abi));
    println!(
        "sandbox:  {} by default{}",
        sandbox_view::name(s.default_sandbox),
        if sandbox_ok {
            ""
        } else {
            " — agents will be refused: this kernel cannot enforce it; set sandbox = \"off\" in config.toml or start agents with --sandbox off"
        }
    );
    match &git {
        Some(v) => println!("git:      {v}"),
        None => println!(
            "git:      not found (worktrees still work; submodules are checked out with libgit2)"
        ),
    }
    Ok(if sandbox_ok { SUCCESS } else { FAILURE })
}
