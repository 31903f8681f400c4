//! `agentctl run`: start an agent; in the foreground, follow it until it
//! ends (`follow`: the same terminal loop as `attach`).

use std::path::PathBuf;

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::follow::{Follower, follow};
use crate::permission_prompt::Mode;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Model as <scheme>:<name>: anthropic:<model>, openai:<model>, scripted:<file>.
    #[arg(long, env = "AGENTD_MODEL")]
    model: Option<String>,
    /// Run it with another coding agent over ACP instead of a model:
    /// claude-code, codex, gemini, or an [agents.NAME] of config.toml. It
    /// picks its own model (--model does not apply).
    #[arg(long, value_name = "NAME")]
    agent: Option<String>,
    /// A name to refer to the agent by, instead of its id.
    #[arg(long)]
    name: Option<String>,
    /// Working directory of the agent [default: the current directory].
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print the agent's id and return at once.
    #[arg(long)]
    background: bool,
    /// Model turns before the agent is stopped [default: the daemon's, 100].
    #[arg(long)]
    max_turns: Option<u32>,
    /// When tools ask first: default (Bash, Write, Edit ask), accept-edits
    /// (only Bash asks), plan (read-only), bypass (nothing asks) [default:
    /// permissions.defaultMode of ~/.claude/settings.json, made stricter by
    /// the repository's; else bypass].
    #[arg(long, value_enum)]
    permission_mode: Option<Mode>,
    #[command(flatten)]
    budget: super::budget::BudgetFlags,
    /// How its tools are confined [default: the daemon's, workspace-write].
    #[arg(long, value_enum)]
    sandbox: Option<Sandbox>,
    /// How its tools reach the network [default: the daemon's, proxy]: proxy (HTTP and HTTPS through agentd's proxy, to allowed hosts; others asked), full (directly), none (no TCP).
    #[arg(long, value_enum, conflicts_with = "no_network")]
    network: Option<Network>,
    /// The same as --network none.
    #[arg(long)]
    no_network: bool,
    /// A host its proxy allows without asking: host, *.domain, host:port (repeatable).
    #[arg(long = "allow-host", value_name = "HOST")]
    allow_hosts: Vec<String>,
    /// Leave the project instructions (AGENTS.md, CLAUDE.md, ~/.config/agentd/AGENTS.md) out of the agent's system prompt.
    #[arg(long)]
    no_instructions: bool,
    /// Work in a new git worktree of the current checkout, on branch agentd/<short id>.
    #[arg(long)]
    worktree: bool,
    /// With --worktree: the branch, tag or commit to start from [default: the checkout's HEAD].
    #[arg(long, requires = "worktree")]
    base: Option<String>,
    /// What the agent should do.
    prompt: String,
}

/// `--sandbox` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Sandbox {
    /// Tools write only beneath the working directory (or worktree) and a private TMPDIR.
    WorkspaceWrite,
    /// Tools write nothing; Write and Edit are refused.
    ReadOnly,
    /// No confinement.
    Off,
}

impl Sandbox {
    fn wire(self) -> pb::SandboxMode {
        match self {
            Sandbox::WorkspaceWrite => pb::SandboxMode::WorkspaceWrite,
            Sandbox::ReadOnly => pb::SandboxMode::ReadOnly,
            Sandbox::Off => pb::SandboxMode::Off,
        }
    }
}

/// `--network` values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Network {
    /// HTTP and HTTPS through agentd's proxy, to allowed hosts; others asked.
    Proxy,
    /// The machine's network, directly.
    Full,
    /// No TCP connections or listening.
    None,
}

impl Network {
    fn wire(self) -> pb::NetworkMode {
        match self {
            Network::Proxy => pb::NetworkMode::Proxy,
            Network::Full => pb::NetworkMode::Full,
            Network::None => pb::NetworkMode::None,
        }
    }
}

/// Scripts are named relative to where the user is, not to the agent's cwd.
fn absolute_model(model: &str) -> Result<String, Failure> {
    match model.split_once(':') {
        Some(("scripted", path)) if !path.is_empty() && !path.starts_with('/') => {
            let abs = std::path::absolute(path)
                .map_err(|e| Failure::failed(format!("cannot resolve script path {path}: {e}")))?;
            Ok(format!("scripted:{}", abs.display()))
        }
        _ => Ok(model.to_string()),
    }
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let cwd = match args.cwd {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?,
    };
    let cwd = std::path::absolute(&cwd)
        .map_err(|e| Failure::failed(format!("cannot resolve {}: {e}", cwd.display())))?;
    let model = match &args.agent {
        // AGENTD_MODEL may be set for agentd's own agents: only an
        // explicit --model conflicts.
        Some(_) if std::env::args().any(|a| a == "--model" || a.starts_with("--model=")) => {
            return Err(Failure::new(
                2,
                "--agent runs another coding agent, which picks its own model: leave out --model",
            ));
        }
        Some(_) => None,
        None => args.model.as_deref().map(absolute_model).transpose()?,
    };
    let (budget_usd, budget_tokens) = args.budget.wire()?;
    let mut client = target.client().await?;
    let agent = client
        .create_agent(pb::CreateAgentRequest {
            budget_usd,
            budget_tokens,
            prompt: args.prompt,
            model: model.unwrap_or_default(),
            name: args.name.unwrap_or_default(),
            cwd: cwd.display().to_string(),
            background: args.background,
            max_turns: args.max_turns.unwrap_or(0),
            permission_mode: args
                .permission_mode
                .map_or(pb::PermissionMode::Unspecified, Mode::wire)
                as i32,
            isolation: if args.worktree {
                pb::Isolation::Worktree
            } else {
                pb::Isolation::Unspecified
            } as i32,
            base: args.base.unwrap_or_default(),
            sandbox: args
                .sandbox
                .map_or(pb::SandboxMode::Unspecified, Sandbox::wire) as i32,
            no_network: args.no_network,
            network: args
                .network
                .map_or(pb::NetworkMode::Unspecified, Network::wire) as i32,
            allow_hosts: args.allow_hosts,
            no_instructions: args.no_instructions,
            executor: args.agent.unwrap_or_default(),
            ..Default::default()
        })
        .await?
        .into_inner();
    if args.background {
        say!("{}", agent.id);
        return Ok(SUCCESS);
    }
    follow(&mut client, &agent, 0, Follower::Run).await
}
