//! Checkpoints and rewind (DESIGN §23, `worktree::checkpoint`): the
//! supervisor records an agent's workspace when each of its user turns
//! begins and when each run ends, lists them, and rewinds an agent that is
//! not running — its files, its conversation, or both — journaled so a
//! crash midway is finished at the next start.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::Supervisor;
use super::worktrees::git;
use crate::domain::turns::{UserTurn, rewind_note, user_turns};
use crate::domain::{AgentId, AgentRecord, Role, TranscriptEntry, json_bytes, now_ms};
use crate::error::AgentdError;
use crate::store::Append;
use crate::worktree::WorktreeError;
use crate::worktree::checkpoint::{self, Changed, Restored, Shadow};

/// The name of the checkpoint of the workspace as a run left it.
const END: &str = "end";
/// The journal of a rewind under way, in the agent's store.
const JOURNAL: &str = "rewind.json";

/// The checkpoint name of the turn entry `seq` began.
fn turn_name(seq: u64) -> String {
    format!("turn-{seq:020}")
}

/// Where `record`'s tools work: its own tree, else its directory.
pub(super) fn workspace_of(record: &AgentRecord) -> PathBuf {
    record
        .worktree
        .as_ref()
        .filter(|w| w.owned && w.path.is_dir())
        .map_or_else(|| record.cwd.clone(), |w| w.path.clone())
}

/// What a rewind puts back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewindScope {
    Both,
    Code,
    Conversation,
}

impl RewindScope {
    fn code(self) -> bool {
        self != RewindScope::Conversation
    }
    fn conversation(self) -> bool {
        self != RewindScope::Code
    }
}

/// One user turn, with its checkpoint when it has one.
#[derive(Clone, Debug)]
pub struct TurnCheckpoint {
    pub turn: UserTurn,
    /// The workspace was recorded when it began.
    pub has_files: bool,
    /// What changed since the previous checkpoint (asked for).
    pub changed: Vec<Changed>,
}

/// What a rewind did.
#[derive(Debug, Default)]
pub struct Rewound {
    pub restored: Restored,
    pub conversation: bool,
}

/// A checkpoint's files, for a fork's new tree.
#[derive(Debug)]
pub(super) struct TreeFiles {
    shadow: PathBuf,
    tree: git2::Oid,
}

/// Where a fork `--at` starts: the conversation before the turn, and the
/// files for its tree.
pub(super) type ForkPoint = (Vec<(u64, crate::model::MessageBytes)>, Option<TreeFiles>);

/// A rewind under way, written before anything changes.
#[derive(Serialize, Deserialize)]
struct Journal {
    agent: String,
    to_seq: u64,
    turn: u32,
    tree: Option<String>,
    conversation: bool,
    workspace: PathBuf,
}

impl Supervisor {
    fn shadow_dir(&self, id: AgentId) -> PathBuf {
        self.settings
            .info()
            .data_dir
            .join("checkpoints")
            .join(format!("{id}.git"))
    }

    fn keep_checkpoints(&self) -> usize {
        self.config().checkpoints.keep.max(1) as usize
    }

    /// Records the checkpoint of the turn entry `seq` began (the host's
    /// hook, before anything of the turn runs); once.
    pub(super) async fn checkpoint_turn(&self, record: &AgentRecord, seq: u64) {
        let (dir, ws, keep) = (
            self.shadow_dir(record.id),
            workspace_of(record),
            self.keep_checkpoints(),
        );
        let message = self
            .store
            .transcript(record.id, seq, 1)
            .ok()
            .and_then(|e| e.first().and_then(crate::domain::turns::turn_text))
            .unwrap_or_default();
        let done = git(move || -> Result<_, WorktreeError> {
            let shadow = Shadow::open(&dir)?;
            let name = turn_name(seq);
            if shadow.tree(&name).is_some() {
                return Ok(None);
            }
            let recorded = shadow.record(&ws, &name, &cut(&message, 200))?;
            prune(&shadow, keep)?;
            Ok(Some(recorded))
        })
        .await;
        match done {
            Ok(Some(r)) => {
                tracing::debug!(agent = %record.id, seq, read = r.walked.read, entries = r.walked.entries, "checkpoint recorded")
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(agent = %record.id, seq, error = %e, "cannot record the turn's checkpoint")
            }
        }
    }

    /// Records the workspace as the run left it: what a rewind must not
    /// lose of the person's since is judged against it.
    pub(super) async fn checkpoint_end(&self, record: &AgentRecord) {
        let (dir, ws) = (self.shadow_dir(record.id), workspace_of(record));
        if !Shadow::exists(&dir) || !ws.is_dir() {
            return;
        }
        let done = git(move || Shadow::open(&dir)?.record(&ws, END, "as the run left it")).await;
        if let Err(e) = done {
            tracing::warn!(agent = %record.id, error = %e, "cannot record the workspace at the run's end");
        }
    }

    /// With `rm`: the agent's checkpoints go.
    pub(super) fn drop_checkpoints(&self, id: AgentId) {
        let dir = self.shadow_dir(id);
        if dir.is_dir()
            && let Err(e) = std::fs::remove_dir_all(&dir)
        {
            tracing::warn!(agent = %id, error = %e, "cannot remove the agent's checkpoints");
        }
    }

    fn turns_of(
        &self,
        record: &AgentRecord,
    ) -> Result<(Vec<TranscriptEntry>, Vec<UserTurn>), AgentdError> {
        let entries = self.store.transcript(record.id, 0, usize::MAX)?;
        let turns = user_turns(&entries);
        Ok((entries, turns))
    }

    /// `agentctl checkpoints`: every user turn of the agent, with whether
    /// its workspace was recorded and (with `stat`) what changed since the
    /// previous checkpoint.
    pub async fn list_checkpoints(
        &self,
        query: &str,
        stat: bool,
    ) -> Result<(AgentRecord, Vec<TurnCheckpoint>), AgentdError> {
        let record = self.resolve(query)?;
        let (_, turns) = self.turns_of(&record)?;
        let dir = self.shadow_dir(record.id);
        let listed = git(move || -> Result<_, WorktreeError> {
            let shadow = Shadow::exists(&dir)
                .then(|| Shadow::open(&dir))
                .transpose()?;
            let mut out = Vec::new();
            let mut previous = None;
            for turn in turns {
                let tree = shadow.as_ref().and_then(|s| s.tree(&turn_name(turn.seq)));
                // The first checkpoint has nothing before it to differ from
                // (its whole workspace is not a change).
                let changed = match (&shadow, tree, previous, stat) {
                    (Some(s), Some(t), Some(p), true) => s.changed(Some(p), t)?,
                    _ => Vec::new(),
                };
                if tree.is_some() {
                    previous = tree;
                }
                out.push(TurnCheckpoint {
                    turn,
                    has_files: tree.is_some(),
                    changed,
                });
            }
            Ok(out)
        })
        .await?;
        Ok((record, listed))
    }

    /// `agentctl rewind`: back to how things were when turn `to` began.
    /// The agent must not be running; a path changed since it last worked
    /// is refused by name unless `force`. All or nothing across a crash.
    pub async fn rewind_agent(
        &self,
        query: &str,
        to: u32,
        scope: RewindScope,
        force: bool,
    ) -> Result<(AgentRecord, Rewound), AgentdError> {
        let record = self.resolve(query)?;
        let handle = self.handle(&record)?;
        let _transition = handle.transition.lock().await;
        let record = self.reload(&record)?;
        if record.status.is_live() || handle.is_running() {
            return Err(AgentdError::refused(format!(
                "agent {} is {}; pause or interrupt it first (`agentctl pause {}`), then rewind",
                record.short_id, record.status, record.short_id
            )));
        }
        if scope.conversation() && record.external.is_some() {
            return Err(AgentdError::refused(format!(
                "agent {} is an external agent: its conversation lives in its own session, which agentd cannot cut; rewind its files with --code",
                record.short_id
            )));
        }
        let (_, turns) = self.turns_of(&record)?;
        let Some(turn) = to
            .checked_sub(1)
            .and_then(|i| turns.get(i as usize))
            .cloned()
        else {
            return Err(AgentdError::invalid(format!(
                "agent {} has {} user turns; --to takes a turn from 1 to {}",
                record.short_id,
                turns.len(),
                turns.len()
            )));
        };
        let dir = self.shadow_dir(record.id);
        let ws = workspace_of(&record);
        let tree = if scope.code() {
            let (d, w, seq) = (dir.clone(), ws.clone(), turn.seq);
            let tree = git(move || -> Result<_, WorktreeError> {
                if !Shadow::exists(&d) {
                    return Ok(None);
                }
                let shadow = Shadow::open(&d)?;
                let Some(tree) = shadow.tree(&turn_name(seq)) else {
                    return Ok(None);
                };
                if !force && let Some(guard) = shadow.tree(END) {
                    checkpoint::check(&shadow, &w, tree, guard)?;
                }
                Ok(Some(tree))
            })
            .await?;
            let Some(tree) = tree else {
                return Err(AgentdError::refused(format!(
                    "turn {to} of agent {} has no checkpoint of its files (it began before agentd kept them, or in another agent); rewind --conversation only",
                    record.short_id
                )));
            };
            Some(tree.to_string())
        } else {
            None
        };
        let journal = Journal {
            agent: record.id.to_string(),
            to_seq: turn.seq,
            turn: turn.turn,
            tree,
            conversation: scope.conversation(),
            workspace: ws,
        };
        write_journal(&dir, &journal)?;
        let rewound = self.finish_rewind(&record, &dir, &journal).await?;
        Ok((self.reload(&record)?, rewound))
    }

    /// A fork `--at` turn `n` of `parent`: the conversation before that
    /// turn began (the parent's own bytes) and, for a worktree, the files
    /// of its checkpoint.
    pub(super) fn fork_point(
        &self,
        parent: &AgentRecord,
        n: u32,
        worktree: bool,
    ) -> Result<ForkPoint, AgentdError> {
        let (entries, turns) = self.turns_of(parent)?;
        let Some(turn) = n.checked_sub(1).and_then(|i| turns.get(i as usize)) else {
            return Err(AgentdError::invalid(format!(
                "agent {} has {} user turns; --at takes a turn from 1 to {}",
                parent.short_id,
                turns.len(),
                turns.len()
            )));
        };
        let before = entries.partition_point(|e| e.seq < turn.seq);
        let messages = crate::agent::turn::conversation_of(&entries[..before]);
        if messages.is_empty() {
            return Err(AgentdError::invalid(format!(
                "agent {} had no conversation before turn {n}: a fork there would inherit nothing (start a new agent instead)",
                parent.short_id
            )));
        }
        let files = if worktree {
            let dir = self.shadow_dir(parent.id);
            let tree = Shadow::exists(&dir)
                .then(|| Shadow::open(&dir).ok()?.tree(&turn_name(turn.seq)))
                .flatten()
                .ok_or_else(|| {
                    AgentdError::refused(format!(
                        "turn {n} of agent {} has no checkpoint of its files; fork --at {n} without --worktree",
                        parent.short_id
                    ))
                })?;
            Some(TreeFiles { shadow: dir, tree })
        } else {
            None
        };
        Ok((messages, files))
    }

    /// Makes the new tree at `path` hold a checkpoint's files.
    pub(super) async fn fill_tree(
        &self,
        files: TreeFiles,
        path: &Path,
        record: &AgentRecord,
    ) -> Result<(), AgentdError> {
        let (key, path) = (format!("fork-{}", record.short_id), path.to_path_buf());
        git(move || -> Result<_, WorktreeError> {
            let view = Shadow::open_for(&files.shadow, &key)?;
            let done = checkpoint::restore(&view, &path, files.tree, &mut |_| {});
            view.forget("before-rewind")?;
            view.drop_view();
            done
        })
        .await?;
        Ok(())
    }

    /// Does (or finishes, after a crash) the rewind `journal` describes.
    async fn finish_rewind(
        &self,
        record: &AgentRecord,
        dir: &Path,
        journal: &Journal,
    ) -> Result<Rewound, AgentdError> {
        let mut rewound = Rewound::default();
        if let Some(tree) = &journal.tree {
            let tree = git2::Oid::from_str(tree)
                .map_err(|_| AgentdError::refused("the rewind's journal names no tree"))?;
            let (d, ws) = (dir.to_path_buf(), journal.workspace.clone());
            rewound.restored = git(move || -> Result<_, WorktreeError> {
                let shadow = Shadow::open(&d)?;
                let restored = checkpoint::restore(&shadow, &ws, tree, &mut test_stall)?;
                shadow.record(&ws, END, "as the rewind left it")?;
                Ok(restored)
            })
            .await?;
        }
        if journal.conversation {
            self.write_rewind_note(record, journal.to_seq, journal.turn)
                .await?;
            rewound.conversation = true;
        }
        std::fs::remove_file(dir.join(JOURNAL))
            .map_err(|e| AgentdError::refused(format!("cannot end the rewind's journal: {e}")))?;
        tracing::info!(agent = %record.id, turn = journal.turn, written = rewound.restored.written.len(), removed = rewound.restored.removed.len(), conversation = rewound.conversation, "rewound");
        Ok(rewound)
    }

    /// The conversation note, unless the last entry is that note already
    /// (a rewind a crash cut short after writing it).
    async fn write_rewind_note(
        &self,
        record: &AgentRecord,
        to_seq: u64,
        turn: u32,
    ) -> Result<(), AgentdError> {
        let record = self.reload(record)?;
        let last = match record.transcript_len.checked_sub(1) {
            Some(seq) => self.store.transcript(record.id, seq, 1)?,
            None => Vec::new(),
        };
        if last
            .first()
            .is_some_and(|e| crate::domain::turns::rewound_to(e) == Some(to_seq))
        {
            return Ok(());
        }
        let entry = TranscriptEntry {
            seq: record.transcript_len,
            role: Role::System,
            content_json: json_bytes(&rewind_note(to_seq, turn)),
            created_at_ms: now_ms(),
            usage: None,
            stop_reason: None,
            cache_point: None,
            compact: None,
            file_changes: Vec::new(),
            rule_decisions: Vec::new(),
        };
        let mut record = record;
        record.updated_at_ms = entry.created_at_ms;
        self.store
            .append_durable(
                record.id,
                Append::with_record(std::slice::from_ref(&entry), &record),
            )
            .await?;
        Ok(())
    }

    /// At start: rewinds a crash cut short are finished.
    pub(super) async fn recover_rewinds(&self) {
        let root = self.settings.info().data_dir.join("checkpoints");
        let Ok(dirs) = std::fs::read_dir(&root) else {
            return;
        };
        for dir in dirs.flatten().map(|e| e.path()) {
            let Ok(text) = std::fs::read(dir.join(JOURNAL)) else {
                continue;
            };
            let Ok(journal) = serde_json::from_slice::<Journal>(&text) else {
                tracing::warn!(path = %dir.display(), "a rewind's journal cannot be read; left as it is");
                continue;
            };
            let record = AgentId::parse(&journal.agent)
                .and_then(|id| self.store.get_agent(id).ok().flatten());
            let Some(record) = record else { continue };
            match self.finish_rewind(&record, &dir, &journal).await {
                Ok(_) => {
                    tracing::warn!(agent = %record.id, turn = journal.turn, "finished a rewind a crash had cut short")
                }
                Err(e) => {
                    tracing::error!(agent = %record.id, error = %e, "cannot finish a rewind a crash cut short; trying again at the next start")
                }
            }
        }
    }
}

fn write_journal(dir: &Path, journal: &Journal) -> Result<(), AgentdError> {
    let bytes = serde_json::to_vec(journal).unwrap_or_default();
    agentd_shared::durable_file::replace(dir, JOURNAL, &bytes)
        .map_err(|e| AgentdError::refused(format!("cannot journal the rewind: {e}")))
}

/// Forgets the oldest turn checkpoints beyond `keep` (in batches, then
/// collects the store).
fn prune(shadow: &Shadow, keep: usize) -> Result<(), WorktreeError> {
    let turns: Vec<_> = shadow
        .list()?
        .into_iter()
        .filter(|s| s.name.starts_with("turn-"))
        .collect();
    if turns.len() <= keep + keep / 10 {
        return Ok(());
    }
    for old in &turns[..turns.len() - keep] {
        shadow.forget(&old.name)?;
    }
    shadow.collect()
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

/// Tests stop a rewind midway to kill the daemon there (debug builds).
fn test_stall(_path: &str) {
    #[cfg(debug_assertions)]
    if let Some(marker) = std::env::var_os("AGENTD_TEST_REWIND_STALL").filter(|v| !v.is_empty()) {
        let _ = std::fs::write(&marker, _path);
        loop {
            std::thread::sleep(std::time::Duration::from_secs(3600));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn pruning_keeps_the_newest_turns_and_the_end_in_batches() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(&ws).unwrap();
        let shadow = Shadow::open(&dir.path().join("s.git")).unwrap();
        let turns = |s: &Shadow| -> Vec<String> {
            s.list()
                .unwrap()
                .into_iter()
                .map(|c| c.name)
                .filter(|n| n.starts_with("turn-"))
                .collect()
        };
        for seq in 0..11u64 {
            std::fs::write(ws.join("f"), seq.to_string()).unwrap();
            shadow.record(&ws, &turn_name(seq), "t").unwrap();
            prune(&shadow, 10).unwrap();
        }
        // Within the batch's slack (keep + keep/10): nothing goes yet.
        assert_eq!(turns(&shadow).len(), 11);
        shadow.record(&ws, END, "end").unwrap();
        std::fs::write(ws.join("f"), "11").unwrap();
        shadow.record(&ws, &turn_name(11), "t").unwrap();
        prune(&shadow, 10).unwrap();
        let kept = turns(&shadow);
        assert_eq!(kept.len(), 10);
        assert_eq!(kept[0], turn_name(2), "the oldest went");
        assert!(shadow.tree(END).is_some(), "the end is not a turn");
    }
}
