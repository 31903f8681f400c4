//! `Watch`: the daemon-wide stream of lifecycle events.
//!
//! The stream reads the supervisor's broadcast only when the connection
//! asks for the next message, so a watcher that does not read holds no
//! queue of its own: what waits for it is the shared ring (4,096 events),
//! tonic's encoding buffer (32 KiB) and HTTP/2's send buffer (at most
//! 64 KiB, third_party/h2/PATCH.md). A watcher that falls a whole ring
//! behind is ended with RESOURCE_EXHAUSTED and re-reads state with a list.
//! (A queue of 64 converted events per stream held up to 64 completed
//! agents' results for every watcher that never read.)

use tokio::sync::broadcast::{self, error::RecvError};
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::convert;
use crate::agent::events::Lifecycle;
use agentd_shared::proto as pb;

/// A watcher's stream state: `None` once it has ended.
struct Watcher {
    events: broadcast::Receiver<Lifecycle>,
    shutdown: CancellationToken,
    // What the stream buffered is given back when it ends.
    _freed: crate::memory::FreedOnDrop,
}

/// The stream of `events` until the daemon shuts down or the watcher
/// falls behind.
pub fn stream(
    events: broadcast::Receiver<Lifecycle>,
    shutdown: CancellationToken,
) -> impl futures::Stream<Item = Result<pb::WatchEvent, Status>> + Send + 'static {
    let start = Watcher {
        events,
        shutdown,
        _freed: crate::memory::FreedOnDrop,
    };
    futures::stream::unfold(Some(start), |state| async move {
        let mut w = state?;
        let next = tokio::select! {
            e = w.events.recv() => e,
            _ = w.shutdown.cancelled() => return None,
        };
        match next {
            Ok(e) => Some((Ok(convert::lifecycle(&e)), Some(w))),
            Err(RecvError::Lagged(n)) => Some((
                Err(Status::resource_exhausted(format!(
                    "this watcher fell {n} events behind and was dropped; watch again and re-read state with list"
                ))),
                None,
            )),
            Err(RecvError::Closed) => None,
        }
    })
}
