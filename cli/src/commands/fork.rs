//! `agentctl fork`: fork an agent. The fork starts from everything the
//! agent knows (its stored prompt, tools and messages, byte for byte) and
//! works on the directive; in the foreground it is followed like `run`.

use agentd_shared::proto as pb;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::follow::{Follower, follow};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The agent to fork: id, unique id prefix, or name. Running, idle,
    /// ended, or from before a daemon restart.
    id: String,
    /// What the fork should do ("-" reads it from stdin).
    directive: String,
    /// History to keep: "all", or N to keep from the Nth-last user turn.
    #[arg(long, default_value = "all")]
    turns: String,
    /// Comma-separated tools the fork may run (their declarations stay, so
    /// the prompt cache still matches); "" allows none [default: the parent's].
    #[arg(long, conflicts_with = "profile")]
    tools: Option<String>,
    /// A fork profile: <repo>/.agentd/fork-profiles/<NAME>.md.
    #[arg(long)]
    profile: Option<String>,
    /// A name to refer to the fork by, instead of its id.
    #[arg(long)]
    name: Option<String>,
    /// Print the fork's id and return at once.
    #[arg(long)]
    background: bool,
    /// Work in a new git worktree of the parent's checkout.
    #[arg(long)]
    worktree: bool,
    /// With --worktree: the branch, tag or commit to start from [default: the checkout's HEAD].
    #[arg(long, requires = "worktree", conflicts_with = "at")]
    base: Option<String>,
    /// Fork the agent as it was when its user turn N began (`agentctl checkpoints` counts them): its context up to there; with --worktree, a tree holding that turn's checkpoint.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    at: Option<u32>,
    #[command(flatten)]
    budget: super::budget::BudgetFlags,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let directive = if args.directive == "-" {
        std::io::read_to_string(std::io::stdin())
            .map_err(|e| Failure::failed(format!("cannot read the directive from stdin: {e}")))?
    } else {
        args.directive
    };
    let fork_tools = args.tools.map(|list| pb::ToolList {
        names: if list.is_empty() {
            Vec::new()
        } else {
            list.split(',').map(str::to_string).collect()
        },
    });
    let (budget_usd, budget_tokens) = args.budget.wire()?;
    let mut client = target.client().await?;
    let agent = client
        .fork_agent(pb::ForkAgentRequest {
            parent_id: args.id,
            directive,
            name: args.name.unwrap_or_default(),
            fork_turns: args.turns,
            fork_tools,
            fork_profile: args.profile.unwrap_or_default(),
            background: args.background,
            isolation: if args.worktree {
                pb::Isolation::Worktree
            } else {
                pb::Isolation::Unspecified
            } as i32,
            base: args.base.unwrap_or_default(),
            at_turn: args.at.unwrap_or(0),
            budget_usd,
            budget_tokens,
            ..Default::default()
        })
        .await?
        .into_inner();
    if args.background {
        say!("{}", agent.id);
        return Ok(SUCCESS);
    }
    // The inherited history is the parent's: follow from the fork's own
    // message.
    let own = agent.transcript_len.saturating_sub(1);
    follow(&mut client, &agent, own, Follower::Run).await
}
