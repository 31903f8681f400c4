//! The worktree notice (DESIGN §9): what an agent working in a worktree of
//! its own is told in its first message. A fork most of all: every path in
//! the conversation it inherited points at its parent's checkout.

use serde_json::{Value, json};

use crate::domain::{AgentWorktree, json_bytes};

/// The notice for an agent working in `wt`, whose working directory is
/// `cwd` (inside the tree), made from the checkout `wt.checkout`.
pub fn text(wt: &AgentWorktree, cwd: &std::path::Path) -> String {
    let (tree, checkout) = (wt.path.display(), wt.checkout.display());
    format!(
        "<worktree-notice>\n\
You work in a git worktree of your own: {tree}, on branch {branch}, made from {base} of the \
checkout {checkout}. Your working directory is {cwd}.\n\
- Paths that appear earlier in this conversation, or in what you were told, may point into \
{checkout}. That is somebody else's checkout: translate each such path to the same place under \
{tree} (for example {checkout}/README becomes {tree}/README). File tools refuse paths in \
{checkout}.\n\
- Files may differ from what the conversation shows: read a file again before you edit it.\n\
- Your changes stay in this worktree and on its branch; they do not touch {checkout}. Commit \
your work on {branch} when it is done, or leave it uncommitted: either way it is kept for review.\n\
</worktree-notice>",
        branch = wt.branch,
        base = crate::worktree::base_label(&wt.base),
        cwd = cwd.display(),
    )
}

/// `content_json` (a message's content array) with the notice as one more
/// text block at its end.
pub fn append_to(content_json: &[u8], notice: &str) -> Vec<u8> {
    let mut blocks: Vec<Value> = serde_json::from_slice(content_json).unwrap_or_default();
    blocks.push(json!({"type": "text", "text": notice}));
    json_bytes(&Value::Array(blocks))
}
