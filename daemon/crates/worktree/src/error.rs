//! What work on agents' worktrees can fail with, in git's and the
//! repository's terms; the supervisor's error wraps it.

/// Why a worktree operation could not be done. Nothing was deleted.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The request names what cannot be (a base that names no commit, a
    /// working directory outside the repository).
    #[error("{0}")]
    Invalid(String),
    /// The repository's or the tree's state refuses it now (a dirty
    /// checkout, a conflict, a link where a directory should be, a tree
    /// someone else locked).
    #[error("{0}")]
    Refused(String),
}

impl WorktreeError {
    pub fn invalid(msg: impl Into<String>) -> Self {
        Self::Invalid(msg.into())
    }

    pub fn refused(msg: impl Into<String>) -> Self {
        Self::Refused(msg.into())
    }
}
