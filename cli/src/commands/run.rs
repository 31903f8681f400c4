//! `agentctl run`: start an agent; in the foreground, stream it until it ends.

use std::path::PathBuf;

use agentd_shared::proto as pb;
use futures::StreamExt;

use crate::permission_prompt::Mode;

use crate::autostart::Target;
use crate::exit::{FAILURE, Failure, INTERRUPTED, SUCCESS};
use crate::render;
use crate::transcript_view::TranscriptView;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Model as <scheme>:<name>: anthropic:<model>, openai:<model>, scripted:<file>.
    #[arg(long, env = "AGENTD_MODEL")]
    model: Option<String>,
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
    /// (only Bash asks), plan (read-only), bypass (nothing asks).
    #[arg(long, value_enum, default_value = "bypass")]
    permission_mode: Mode,
    /// What the agent should do.
    prompt: String,
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
    let model = args.model.as_deref().map(absolute_model).transpose()?;
    let mut client = target.client().await?;
    let agent = client
        .create_agent(pb::CreateAgentRequest {
            prompt: args.prompt,
            model: model.unwrap_or_default(),
            name: args.name.unwrap_or_default(),
            cwd: cwd.display().to_string(),
            background: args.background,
            max_turns: args.max_turns.unwrap_or(0),
            permission_mode: args.permission_mode.wire() as i32,
            ..Default::default()
        })
        .await?
        .into_inner();
    if args.background {
        println!("{}", agent.id);
        return Ok(SUCCESS);
    }
    follow(&mut client, &agent.id).await
}

/// Streams the agent from its first entry until it is no longer live.
async fn follow(client: &mut crate::autostart::Client, id: &str) -> Result<u8, Failure> {
    let start = pb::AttachRequest {
        request: Some(pb::attach_request::Request::Start(pb::AttachStart {
            id: id.to_string(),
            from_seq: 0,
        })),
    };
    // The request stream stays open for the life of the call (ending it
    // would mean "detach"); permission answers go up through it.
    let (tx, rx) = tokio::sync::mpsc::channel(8);
    let _ = tx.send(start).await;
    let mut events = client
        .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await?
        .into_inner();
    let mut view = TranscriptView::default();
    let short = agentd_shared::ids::short_id(id).to_string();
    loop {
        let next = tokio::select! {
            e = events.next() => e,
            _ = tokio::signal::ctrl_c() => {
                view.finish();
                eprintln!("agentctl: agent {short} keeps running; `agentctl stop {short}` cancels it, `agentctl wait {short}` waits for it");
                return Ok(INTERRUPTED);
            }
        };
        let event = match next {
            None => {
                return Err(Failure::failed(
                    "the daemon closed the stream before the agent ended",
                ));
            }
            Some(Err(status)) => return Err(status.into()),
            Some(Ok(pb::AttachEvent { event: Some(e) })) => e,
            Some(Ok(_)) => continue,
        };
        match event {
            pb::attach_event::Event::Entry(e) => view.entry(&e),
            pb::attach_event::Event::Delta(d) => view.delta(&d),
            pb::attach_event::Event::Retry(r) => view.retry(&r),
            pb::attach_event::Event::Notice(n) => eprintln!("[{}]", n.text),
            pb::attach_event::Event::PermissionRequest(p) if !p.resolved => {
                view.finish();
                if let Some(answer) = crate::permission_prompt::ask(&p).await {
                    let _ = tx.send(answer).await;
                }
            }
            pb::attach_event::Event::Released(_) => {
                view.finish();
                eprintln!(
                    "agent {short} moved to the background and keeps running; `agentctl attach {short}` or `agentctl wait {short}`"
                );
                println!("{id}");
                return Ok(SUCCESS);
            }
            pb::attach_event::Event::Status(s) => {
                let status = pb::AgentStatus::try_from(s.status).unwrap_or_default();
                match status {
                    pb::AgentStatus::Pending
                    | pb::AgentStatus::Running
                    | pb::AgentStatus::Waiting => {}
                    pb::AgentStatus::Completed => {
                        view.finish();
                        return Ok(SUCCESS);
                    }
                    other => {
                        view.finish();
                        let why = if s.error.is_empty() {
                            String::new()
                        } else {
                            format!(": {}", s.error)
                        };
                        eprintln!("agent {short} {}{why}", render::status_name(other as i32));
                        return Ok(FAILURE);
                    }
                }
            }
            _ => {}
        }
    }
}
