//! `agentctl attach`: an agent's recent history, then its live output.
//!
//! In a terminal: Ctrl-B moves a foreground agent to the background, Ctrl-D
//! detaches, Ctrl-C cancels the agent after a confirmation. `--json`
//! prints every event as one JSON line, for scripts and editor plugins.

use std::io::{IsTerminal, Write};

use agentd_shared::proto as pb;
use futures::StreamExt;
use serde_json::json;
use tokio::sync::mpsc;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::render;
use crate::transcript_view::TranscriptView;

/// History entries shown before live output when `--from` is not given.
const RECENT: u64 = 20;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Agent id, unique id prefix, or name.
    id: String,
    /// First transcript entry to show [default: the last 20].
    #[arg(long)]
    from: Option<u64>,
    /// Print events as JSON lines instead of a transcript.
    #[arg(long)]
    json: bool,
}

/// What the keyboard asks for.
enum Key {
    Background,
    Detach,
    Cancel,
    /// y, a or n: answers the oldest open permission ask.
    Answer(char),
}

/// Reads keys in raw mode on a blocking thread; restores the terminal when
/// dropped.
struct Keyboard {
    rx: mpsc::UnboundedReceiver<Key>,
}

impl Keyboard {
    fn start() -> Option<Keyboard> {
        if !std::io::stdin().is_terminal() {
            return None;
        }
        crossterm::terminal::enable_raw_mode().ok()?;
        let (tx, rx) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            use crossterm::event::{Event, KeyCode, KeyModifiers, read};
            while let Ok(ev) = read() {
                let Event::Key(k) = ev else { continue };
                if !k.modifiers.contains(KeyModifiers::CONTROL) {
                    if let KeyCode::Char(c @ ('y' | 'a' | 'n')) = k.code
                        && tx.send(Key::Answer(c)).is_err()
                    {
                        return;
                    }
                    continue;
                }
                let key = match k.code {
                    KeyCode::Char('b') => Key::Background,
                    KeyCode::Char('d') => Key::Detach,
                    KeyCode::Char('c') => Key::Cancel,
                    _ => continue,
                };
                if tx.send(key).is_err() {
                    return;
                }
            }
        });
        Some(Keyboard { rx })
    }
}

impl Drop for Keyboard {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// Asks y/N on the terminal (raw mode off while asking).
fn confirm(question: &str) -> bool {
    let _ = crossterm::terminal::disable_raw_mode();
    eprint!("\r\n{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    let yes =
        std::io::stdin().read_line(&mut line).is_ok() && line.trim().eq_ignore_ascii_case("y");
    let _ = crossterm::terminal::enable_raw_mode();
    yes
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let agent = client
        .get_agent(pb::GetAgentRequest { id: args.id })
        .await?
        .into_inner();
    let from = args
        .from
        .unwrap_or_else(|| agent.transcript_len.saturating_sub(RECENT));
    let (tx, rx) = mpsc::channel(8);
    tx.send(pb::AttachRequest {
        request: Some(pb::attach_request::Request::Start(pb::AttachStart {
            id: agent.id.clone(),
            from_seq: from,
        })),
    })
    .await
    .map_err(|_| Failure::failed("cannot start the attach stream"))?;
    let mut events = client
        .attach(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await?
        .into_inner();
    let short = agent.short_id.clone();
    let mut keyboard = if args.json { None } else { Keyboard::start() };
    if keyboard.is_some() {
        eprint!("attached to {short}: Ctrl-B background · Ctrl-D detach · Ctrl-C cancel\r\n");
    }
    let mut view = TranscriptView::with_user_text();
    // Open permission asks, oldest first.
    let mut asks: Vec<pb::PermissionRequest> = Vec::new();
    loop {
        let key = async {
            match keyboard.as_mut() {
                Some(k) => k.rx.recv().await,
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            e = events.next() => e,
            k = key => {
                match k {
                    Some(Key::Background) => {
                        let _ = tx.send(pb::AttachRequest { request: Some(pb::attach_request::Request::Background(true)) }).await;
                    }
                    Some(Key::Detach) | None => {
                        let _ = tx.send(pb::AttachRequest { request: Some(pb::attach_request::Request::Detach(true)) }).await;
                        drop(keyboard);
                        view.finish();
                        eprintln!("detached from {short}; it keeps running");
                        return Ok(SUCCESS);
                    }
                    Some(Key::Answer(c)) => {
                        if !asks.is_empty() {
                            use pb::permission_answer::Decision;
                            let ask = asks.remove(0);
                            let decision = match c {
                                'y' => Decision::AllowOnce,
                                'a' => Decision::AllowAlways,
                                _ => Decision::Deny,
                            };
                            let _ = tx.send(crate::permission_prompt::answer(&ask.request_id, decision, String::new())).await;
                        }
                    }
                    Some(Key::Cancel) => {
                        if confirm(&format!("Cancel agent {short} and its subagents?")) {
                            client.cancel_agent(pb::CancelAgentRequest { id: agent.id.clone() }).await?;
                        }
                    }
                }
                continue;
            }
        };
        let event = match next {
            None => {
                drop(keyboard);
                return Err(Failure::failed("the daemon closed the stream"));
            }
            Some(Err(status)) => {
                drop(keyboard);
                return Err(status.into());
            }
            Some(Ok(pb::AttachEvent { event: Some(e) })) => e,
            Some(Ok(_)) => continue,
        };
        if let pb::attach_event::Event::PermissionRequest(p) = &event {
            asks.retain(|a| a.request_id != p.request_id);
            if !p.resolved {
                asks.push(p.clone());
            }
        }
        if args.json {
            print_json(&event);
        } else {
            show(&mut view, &event, &short, keyboard.is_some());
        }
        if let pb::attach_event::Event::Status(s) = &event {
            let status = pb::AgentStatus::try_from(s.status).unwrap_or_default();
            if !matches!(
                status,
                pb::AgentStatus::Pending | pb::AgentStatus::Running | pb::AgentStatus::Waiting
            ) {
                drop(keyboard);
                view.finish();
                return Ok(SUCCESS);
            }
        }
    }
}

fn show(view: &mut TranscriptView, event: &pb::attach_event::Event, short: &str, keys: bool) {
    use pb::attach_event::Event;
    match event {
        Event::Entry(e) => view.entry(e),
        Event::Delta(d) => view.delta(d),
        Event::Retry(r) => view.retry(r),
        Event::Released(_) => {
            view.finish();
            eprint!("[{short} moved to the background]\r\n");
        }
        Event::Notice(n) => {
            view.finish();
            eprint!(
                "[{}{}]\r\n",
                if n.is_error { "error: " } else { "" },
                n.text
            );
        }
        Event::Status(s) => {
            let status = render::status_name(s.status);
            if !matches!(status, "running" | "pending") {
                view.finish();
                let why = if s.error.is_empty() {
                    String::new()
                } else {
                    format!(": {}", s.error)
                };
                eprint!("[{short} {status}{why}]\r\n");
            }
        }
        Event::PermissionRequest(p) if !p.resolved => {
            view.finish();
            let how = if keys {
                "press y (once), a (always) or n (deny)"
            } else {
                "attach in a terminal to answer"
            };
            eprint!("[{} — {how}]\r\n", crate::permission_prompt::question(p));
        }
        Event::Agent(_) | Event::Tool(_) | Event::PermissionRequest(_) => {}
    }
}

fn print_json(event: &pb::attach_event::Event) {
    use pb::attach_event::Event;
    let v = match event {
        Event::Agent(a) => json!({"type": "agent", "agent": render::AgentJson::of(a)}),
        Event::Entry(e) => json!({"type": "entry", "entry": render::EntryJson::of(e)}),
        Event::Delta(d) => {
            let (kind, text) = match &d.delta {
                Some(pb::content_delta::Delta::Text(t)) => ("text", t.clone()),
                Some(pb::content_delta::Delta::Thinking(t)) => ("thinking", t.clone()),
                Some(pb::content_delta::Delta::ToolUseStart(t)) => ("tool_use_start", t.clone()),
                Some(pb::content_delta::Delta::InputJson(t)) => ("input_json", t.clone()),
                None => ("none", String::new()),
            };
            json!({"type": "delta", "index": d.index, "kind": kind, "text": text})
        }
        Event::Tool(t) => json!({
            "type": "tool",
            "tool_use_id": t.tool_use_id,
            "name": t.name,
            "phase": if t.phase == pb::tool_activity::Phase::Finished as i32 { "finished" } else { "started" },
            "summary": t.summary,
            "is_error": t.is_error,
        }),
        Event::Status(s) => {
            json!({"type": "status", "status": render::status_name(s.status), "error": s.error, "result": s.result, "turns": s.turns})
        }
        Event::Retry(r) => {
            json!({"type": "retry", "attempt": r.attempt, "delay_ms": r.delay_ms, "reason": r.reason})
        }
        Event::Released(r) => json!({"type": "released", "reason": r.reason}),
        Event::Notice(n) => json!({"type": "notice", "text": n.text, "is_error": n.is_error}),
        Event::PermissionRequest(p) => json!({
            "type": "permission_request",
            "request_id": p.request_id,
            "agent_id": p.agent_id,
            "tool": p.tool_name,
            "input": serde_json::from_str::<serde_json::Value>(&p.input_json).unwrap_or_default(),
            "summary": p.summary,
            "resolved": p.resolved,
        }),
    };
    let mut out = std::io::stdout().lock();
    let _ = serde_json::to_writer(&mut out, &v);
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}
