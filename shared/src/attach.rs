//! Opening an attach stream, the one way every client here opens one
//! (`agentctl run` and `attach`, the dashboard, the ACP bridge, the tests):
//! the request stream's first message is the start (which agent, from which
//! entry); the stream stays open for the attachment's life — ending it
//! means detach — and answers, messages and backgrounding go up it.

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;
use tonic::transport::Channel;

use crate::proto as pb;

/// The generated client of the agent service, over the Unix socket.
pub type ApiClient = pb::agent_service_client::AgentServiceClient<Channel>;

/// A request for the attach stream.
pub fn request(r: pb::attach_request::Request) -> pb::AttachRequest {
    pb::AttachRequest { request: Some(r) }
}

/// The first request of an attach stream: agent `id` from entry `from_seq`.
pub fn start(id: &str, from_seq: u64) -> pb::AttachRequest {
    request(pb::attach_request::Request::Start(pb::AttachStart {
        id: id.to_string(),
        from_seq,
        as_seen: false,
    }))
}

/// Attaches to agent `id` with its whole history as the agent sees it now
/// (without what a rewind took out, `AttachStart.as_seen`): a replay.
pub async fn open_as_seen(
    client: &mut ApiClient,
    id: &str,
    room: usize,
) -> Result<(mpsc::Sender<pb::AttachRequest>, Streaming<pb::AttachEvent>), tonic::Status> {
    let (tx, rx) = mpsc::channel(room.max(1));
    let _ = tx.try_send(request(pb::attach_request::Request::Start(
        pb::AttachStart {
            id: id.to_string(),
            from_seq: 0,
            as_seen: true,
        },
    )));
    let events = client.attach(ReceiverStream::new(rx)).await?.into_inner();
    Ok((tx, events))
}

/// Attaches to agent `id` from entry `from_seq`: where requests go up the
/// stream (`room` of them may wait), and its events.
pub async fn open(
    client: &mut ApiClient,
    id: &str,
    from_seq: u64,
    room: usize,
) -> Result<(mpsc::Sender<pb::AttachRequest>, Streaming<pb::AttachEvent>), tonic::Status> {
    let (tx, requests) = requests(id, from_seq, room);
    let events = client.attach(requests).await?.into_inner();
    Ok((tx, events))
}

/// The request side of an attach stream, its start already queued: where
/// requests go (`room` of them may wait), and the stream to pass to the
/// `Attach` call.
pub fn requests(
    id: &str,
    from_seq: u64,
    room: usize,
) -> (
    mpsc::Sender<pb::AttachRequest>,
    ReceiverStream<pb::AttachRequest>,
) {
    let (tx, rx) = mpsc::channel(room.max(1));
    // The channel is new and has room: the start is queued at once.
    let _ = tx.try_send(start(id, from_seq));
    (tx, ReceiverStream::new(rx))
}
