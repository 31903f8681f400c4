//! Checkpoints and rewind on the wire (DESIGN §23).

use agentd_shared::proto as pb;

use super::unknown;
use crate::error::AgentdError;
use crate::supervisor::{RewindScope, TurnCheckpoint};

pub fn checkpoints(turns: &[TurnCheckpoint]) -> pb::ListCheckpointsResponse {
    pb::ListCheckpointsResponse {
        checkpoints: turns
            .iter()
            .map(|t| pb::Checkpoint {
                turn: t.turn.turn,
                seq: t.turn.seq,
                at_ms: t.turn.at_ms,
                message: t.turn.text.clone(),
                has_files: t.has_files,
                changed: t
                    .changed
                    .iter()
                    .map(|c| pb::CheckpointFile {
                        path: c.path.clone(),
                        status: c.status.to_string(),
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// Unspecified is the documented default (both); an unknown value is
/// refused.
pub fn rewind_scope_from_wire(i: i32) -> Result<RewindScope, AgentdError> {
    Ok(
        match pb::RewindScope::try_from(i).map_err(|_| unknown("scope", i))? {
            pb::RewindScope::Unspecified | pb::RewindScope::Both => RewindScope::Both,
            pb::RewindScope::Code => RewindScope::Code,
            pb::RewindScope::Conversation => RewindScope::Conversation,
        },
    )
}
