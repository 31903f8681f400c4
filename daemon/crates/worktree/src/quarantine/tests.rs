//! The quarantine against real repositories and real git, run inside a
//! real agent namespace with the binds `prepare` asks for (the Landlock
//! half of the confinement is the end-to-end tests').

use std::path::Path;

use agentd_sandbox::pid_namespace::{AgentNamespace, support};

use super::*;
use crate::testrepo::{TestRepo, git};

const STORE: &str = "test-store";

/// Runs git with `args` in `cwd` inside `ns`: success and its output.
fn agent_git(ns: &AgentNamespace, cwd: &Path, args: &[&str]) -> (bool, String) {
    let mut cmd = std::process::Command::new("git");
    cmd.args(args)
        .env("GIT_AUTHOR_NAME", "agent")
        .env("GIT_AUTHOR_EMAIL", "agent@example.com")
        .env("GIT_COMMITTER_NAME", "agent")
        .env("GIT_COMMITTER_EMAIL", "agent@example.com")
        .env("GIT_EDITOR", "true")
        .env("GIT_SEQUENCE_EDITOR", "true");
    ns.join(&mut cmd, cwd, || Ok(())).expect("join");
    let out = cmd.output().expect("git runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn agent_sh(ns: &AgentNamespace, cwd: &Path, script: &str) -> (bool, String) {
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["-c", script]);
    ns.join(&mut cmd, cwd, || Ok(())).expect("join");
    let out = cmd.output().expect("bash runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn ok(r: (bool, String)) -> String {
    assert!(r.0, "{}", r.1);
    r.1
}

/// A repository with an agentd tree for `short`, located.
fn tree(repo: &TestRepo, short: &str) -> (PathBuf, Place) {
    let plan = crate::plan(&repo.root, None, short, STORE).expect("plan");
    crate::create(&plan, &crate::running_reason(short, "")).expect("create");
    let place = locate(&plan.path, short).expect("locate").expect("a place");
    (plan.path, place)
}

async fn namespace(q: &GitQuarantine) -> AgentNamespace {
    AgentNamespace::make(support().expect("namespaces"), false, &q.binds)
        .await
        .expect("namespace")
}

#[tokio::test]
async fn a_worktree_agent_commits_amends_rebases_stashes_and_tags_and_its_branch_gets_them() {
    let repo = TestRepo::new();
    let (path, place) = tree(&repo, "0a0a0a0a");
    assert_eq!(place.branch, "refs/heads/agentd/0a0a0a0a");
    assert!(!place.dot_git_dir);
    let q = prepare(&place).expect("prepare");
    let ns = namespace(&q).await;
    std::fs::write(path.join("new.txt"), "one\n").expect("write");
    ok(agent_git(&ns, &path, &["add", "new.txt"]));
    ok(agent_git(&ns, &path, &["commit", "-qm", "agent one"]));
    std::fs::write(path.join("new.txt"), "two\n").expect("write");
    ok(agent_git(&ns, &path, &["commit", "-qam", "agent two"]));
    // Amend, and a rebase of its own commits (squash the two).
    ok(agent_git(
        &ns,
        &path,
        &["commit", "-q", "--amend", "-m", "agent two, amended"],
    ));
    ok(agent_git(&ns, &path, &["reset", "-q", "--soft", "HEAD~2"]));
    ok(agent_git(&ns, &path, &["commit", "-qm", "agent squashed"]));
    ok(agent_git(&ns, &path, &["rebase", "-q", "-i", "HEAD~1"]));
    std::fs::write(path.join("wip.txt"), "wip\n").expect("write");
    ok(agent_git(&ns, &path, &["stash", "-q", "-u"]));
    ok(agent_git(&ns, &path, &["tag", "agent-tag"]));
    let agent_head = ok(agent_git(&ns, &path, &["rev-parse", "HEAD"]));
    let (wrote, out) = agent_git(&ns, &path, &["config", "core.hooksPath", "/tmp"]);
    assert!(!wrote, "its config is read only: {out}");
    // Nothing of it is in the repository yet: the person's git never sees
    // a ref whose objects are missing.
    let before = repo.git(&["rev-parse", "agentd/0a0a0a0a"]);
    assert_ne!(before, agent_head);
    let moved = migrate(&place).expect("migrate");
    assert_eq!(
        moved.moved.map(|(_, to)| to.to_string() + "\n"),
        Some(agent_head.clone())
    );
    assert!(moved.objects >= 3, "{moved:?}");
    assert_eq!(repo.git(&["rev-parse", "agentd/0a0a0a0a"]), agent_head);
    assert_eq!(
        repo.git(&["log", "--format=%s", "main..agentd/0a0a0a0a"]),
        "agent squashed\n"
    );
    assert_eq!(repo.git(&["show", "agentd/0a0a0a0a:new.txt"]), "two\n");
    repo.git(&["fsck", "--strict", "--no-dangling"]);
    // The tree's own git (outside) agrees: the index came along.
    assert_eq!(git(&path, &["status", "--porcelain"]), "");
    // Stash and tag stay the agent's.
    assert_eq!(repo.git(&["tag", "-l"]), "");
    assert!(repo.git(&["for-each-ref", "refs/stash"]).is_empty());
    ok(agent_git(&ns, &path, &["stash", "pop", "-q"]));
    assert!(path.join("wip.txt").exists());
    // A second migration with nothing new moves nothing.
    assert_eq!(migrate(&place).expect("again").moved, None);
}

#[tokio::test]
async fn an_agent_in_the_checkout_commits_onto_its_branch_and_cannot_write_the_real_git_dir() {
    let repo = TestRepo::new();
    let place = locate(&repo.root, "1b1b1b1b")
        .expect("locate")
        .expect("a place");
    assert!(place.dot_git_dir);
    assert_eq!(place.branch, "refs/heads/main");
    let q = prepare(&place).expect("prepare");
    let ns = namespace(&q).await;
    let root = &repo.root;
    std::fs::write(root.join("README"), "changed by the agent\n").expect("write");
    ok(agent_git(&ns, root, &["commit", "-qam", "agent edit"]));
    let head = ok(agent_git(&ns, root, &["rev-parse", "HEAD"]));
    // Its own git directory's hooks and config are read only; the real
    // one is read only whole.
    for attempt in [
        "echo 'echo owned' > .git/hooks/pre-commit",
        "echo '[core] hooksPath=/tmp' >> .git/config",
        "git config core.hooksPath /tmp",
    ] {
        let (wrote, out) = agent_sh(&ns, root, attempt);
        assert!(!wrote, "{attempt}: {out}");
    }
    let base = q.writable.join("base");
    let (wrote, out) = agent_sh(
        &ns,
        root,
        &format!("echo '[core] hooksPath=/tmp' >> {}/config", base.display()),
    );
    assert!(!wrote, "the real config is read only: {out}");
    assert!(out.contains("Read-only file system"), "{out}");
    let (wrote, _) = agent_sh(
        &ns,
        root,
        &format!("touch {}/objects/pack/x.pack", base.display()),
    );
    assert!(!wrote);
    assert!(!root.join(".git/hooks/pre-commit").exists());
    assert!(
        !std::fs::read_to_string(root.join(".git/config"))
            .expect("config")
            .contains("/tmp")
    );
    let moved = migrate(&place).expect("migrate");
    assert!(moved.moved.is_some(), "{moved:?}");
    assert_eq!(repo.git(&["rev-parse", "main"]), head);
    assert_eq!(repo.git(&["log", "-1", "--format=%s"]), "agent edit\n");
    // The person's own checkout is clean again: its index came along.
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}

#[tokio::test]
async fn an_object_that_does_not_hash_to_its_name_is_refused_and_the_branch_stays() {
    let repo = TestRepo::new();
    let (path, place) = tree(&repo, "2c2c2c2c");
    let q = prepare(&place).expect("prepare");
    let ns = namespace(&q).await;
    std::fs::write(path.join("a.txt"), "a\n").expect("write");
    std::fs::write(path.join("b.txt"), "b\n").expect("write");
    ok(agent_git(&ns, &path, &["add", "a.txt", "b.txt"]));
    ok(agent_git(&ns, &path, &["commit", "-qm", "a"]));
    let a = ok(agent_git(&ns, &path, &["rev-parse", "HEAD:a.txt"]));
    let b = ok(agent_git(&ns, &path, &["rev-parse", "HEAD:b.txt"]));
    // The agent puts another blob under its new blob's name (both loose).
    let objects = q.writable.join("git/objects");
    let at = |id: &str| objects.join(&id[..2]).join(id[2..].trim());
    std::fs::remove_file(at(&a)).expect("rm");
    std::fs::copy(at(&b), at(&a)).expect("swap");
    let before = repo.git(&["rev-parse", "agentd/2c2c2c2c"]);
    let err = migrate(&place).unwrap_err();
    assert!(err.to_string().contains("will not take"), "{err}");
    assert_eq!(repo.git(&["rev-parse", "agentd/2c2c2c2c"]), before);
}

#[tokio::test]
async fn a_link_in_the_quarantine_is_not_followed() {
    let repo = TestRepo::new();
    let (path, place) = tree(&repo, "3d3d3d3d");
    let q = prepare(&place).expect("prepare");
    let ns = namespace(&q).await;
    std::fs::write(path.join("b.txt"), "b\n").expect("write");
    ok(agent_git(&ns, &path, &["add", "b.txt"]));
    ok(agent_git(&ns, &path, &["commit", "-qm", "b"]));
    let blob = ok(agent_git(&ns, &path, &["rev-parse", "HEAD:b.txt"]));
    let file = q
        .writable
        .join("git/objects")
        .join(&blob[..2])
        .join(blob[2..].trim());
    std::fs::remove_file(&file).expect("rm");
    std::os::unix::fs::symlink("/etc/passwd", &file).expect("link");
    let before = repo.git(&["rev-parse", "agentd/3d3d3d3d"]);
    let err = migrate(&place).unwrap_err();
    assert!(err.to_string().contains("will not take"), "{err}");
    assert_eq!(repo.git(&["rev-parse", "agentd/3d3d3d3d"]), before);
}

#[tokio::test]
async fn when_both_moved_the_branch_stays_and_the_agents_commit_is_kept() {
    let repo = TestRepo::new();
    let (path, place) = tree(&repo, "4e4e4e4e");
    let q = prepare(&place).expect("prepare");
    let ns = namespace(&q).await;
    std::fs::write(path.join("c.txt"), "agent\n").expect("write");
    ok(agent_git(&ns, &path, &["add", "c.txt"]));
    ok(agent_git(&ns, &path, &["commit", "-qm", "agent"]));
    let agent_head = ok(agent_git(&ns, &path, &["rev-parse", "HEAD"]));
    // Meanwhile the person commits onto the branch from outside.
    git(&path, &["commit", "-q", "--allow-empty", "-m", "person"]);
    let person = repo.git(&["rev-parse", "agentd/4e4e4e4e"]);
    let done = migrate(&place).expect("migrate");
    assert_eq!(
        done.diverged.as_deref(),
        Some("refs/agentd/diverged/4e4e4e4e")
    );
    assert_eq!(repo.git(&["rev-parse", "agentd/4e4e4e4e"]), person);
    assert_eq!(
        repo.git(&["rev-parse", "refs/agentd/diverged/4e4e4e4e"]),
        agent_head
    );
    // The agent now sees the branch as it is.
    assert_eq!(ok(agent_git(&ns, &path, &["rev-parse", "HEAD"])), person);
}

#[test]
fn removing_takes_the_branch_in_first_then_leaves_nothing() {
    let repo = TestRepo::new();
    let (_, place) = tree(&repo, "5f5f5f5f");
    let q = prepare(&place).expect("prepare");
    assert!(q.writable.is_dir());
    remove(&place).expect("remove");
    assert!(!q.writable.exists());
    assert!(!place.common.join("agentd-quarantine/5f5f5f5f").exists());
    let exclude = std::fs::read_to_string(place.common.join("info/exclude")).expect("read");
    assert!(exclude.lines().any(|l| l == EXCLUDE_LINE), "{exclude}");
    assert_eq!(repo.git(&["status", "--porcelain"]), "");
}
