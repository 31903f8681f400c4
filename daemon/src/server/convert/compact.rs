//! Compaction on the wire (DESIGN §17): boundaries and instruction files.

use agentd_shared::proto as pb;

use crate::domain::{CompactBoundary, CompactTrigger, InstructionsLoaded};

pub fn boundary(b: &CompactBoundary) -> pb::CompactBoundary {
    pb::CompactBoundary {
        trigger: match b.trigger {
            CompactTrigger::Auto => pb::CompactTrigger::Auto,
            CompactTrigger::Manual => pb::CompactTrigger::Manual,
            CompactTrigger::Overflow => pb::CompactTrigger::Overflow,
        } as i32,
        summary: b.summary.clone(),
        tokens_before: b.tokens_before,
        tokens_after: b.tokens_after,
        covers_through_seq: b.covers_through_seq,
    }
}

pub fn instruction_files(i: &InstructionsLoaded) -> Vec<pb::InstructionFile> {
    i.files
        .iter()
        .map(|f| pb::InstructionFile {
            path: f.path.to_string_lossy().into_owned(),
            bytes: f.bytes,
            cut: f.cut,
        })
        .collect()
}
