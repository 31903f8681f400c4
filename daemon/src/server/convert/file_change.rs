//! What file tools changed, on the wire (`TranscriptEntry.file_changes`).

use agentd_shared::proto as pb;

use crate::domain::{Before, ToolFileChange};

pub fn file_change(c: &ToolFileChange) -> pb::FileChange {
    let change = &c.change;
    let (created, binary, before) = match &change.before {
        Before::Absent => (true, None, None),
        Before::Binary { size } => (false, Some(*size), None),
        Before::Text(t) => (false, None, Some(t)),
    };
    pb::FileChange {
        tool_use_id: c.tool_use_id.clone(),
        path: change.path.to_string_lossy().into_owned(),
        created,
        before: before.map(|t| t.text.clone()).unwrap_or_default(),
        after: change.after.text.clone(),
        before_size: before.map(|t| t.size).or(binary).unwrap_or(0),
        after_size: change.after.size,
        first_line: change.first_line,
        before_cut: before.is_some_and(|t| t.cut),
        after_cut: change.after.cut,
        before_binary: binary.is_some(),
        reported: c.reported,
    }
}
