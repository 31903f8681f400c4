//! An undelivered inbox item on disk (`v1/inbox`): a message or a task
//! notification, and who sent it.

use prost::Message;

use super::Corrupt;
use crate::domain::{AgentId, InboxItem, InboxKind};

#[derive(Clone, PartialEq, prost::Message)]
struct StoredInboxItem {
    /// 1 message, 2 notification.
    #[prost(int32, tag = "1")]
    kind: i32,
    #[prost(string, tag = "2")]
    text: String,
    #[prost(bytes = "vec", tag = "3")]
    from: Vec<u8>,
    #[prost(int64, tag = "4")]
    created_at_ms: i64,
}

pub fn encode_inbox_item(i: &InboxItem) -> Vec<u8> {
    StoredInboxItem {
        kind: match i.kind {
            InboxKind::Message => 1,
            InboxKind::Notification => 2,
        },
        text: i.text.clone(),
        from: i.from.map(|f| f.as_bytes().to_vec()).unwrap_or_default(),
        created_at_ms: i.created_at_ms,
    }
    .encode_to_vec()
}

pub fn decode_inbox_item(bytes: &[u8]) -> Result<InboxItem, Corrupt> {
    let s = StoredInboxItem::decode(bytes)?;
    let kind = match s.kind {
        1 => InboxKind::Message,
        2 => InboxKind::Notification,
        _ => return Err(Corrupt::Field("inbox kind")),
    };
    let from = if s.from.is_empty() {
        None
    } else {
        Some(AgentId::from_slice(&s.from).ok_or(Corrupt::Field("sender id"))?)
    };
    Ok(InboxItem {
        kind,
        text: s.text,
        from,
        created_at_ms: s.created_at_ms,
    })
}
