//! The worktree rules against real repositories (DESIGN §9). Each data-loss
//! report against Claude Code's worktrees has a case here.

use std::path::Path;

use super::remove::Target;
use super::testrepo::{TestRepo, git};
use super::*;
use crate::domain::AgentWorktree;

/// The store id the tests' trees are marked with.
const STORE: &str = "test-store";

fn make(repo: &TestRepo, short: &str) -> (Plan, AgentWorktree) {
    let plan = plan(&repo.root, None, short, STORE).expect("plan");
    create(&plan, &running_reason(short, "")).expect("create");
    let record = plan.record();
    (plan, record)
}

fn target(wt: &AgentWorktree, name: &str) -> Target {
    Target {
        checkout: wt.checkout.clone(),
        name: name.to_string(),
        path: wt.path.clone(),
        branch: wt.branch.clone(),
        base: wt.base.clone(),
        base_commit: wt.base_commit.clone(),
    }
}

fn snapshot(repo: &TestRepo) -> (String, String, String, String) {
    (
        repo.git(&["rev-parse", "HEAD"]),
        repo.git(&["symbolic-ref", "HEAD"]),
        repo.git(&["status", "--porcelain", "--untracked-files=all"]),
        std::fs::read_to_string(repo.root.join("README")).expect("read"),
    )
}

#[test]
fn a_tree_on_its_own_branch_locked_and_excluded_leaving_the_checkout_alone() {
    let repo = TestRepo::new();
    let before = snapshot(&repo);
    let (plan, wt) = make(&repo, "0a1b2c3d");
    assert_eq!(plan.path, repo.root.join(".agentd/worktrees/0a1b2c3d"));
    assert_eq!(
        plan.cwd.as_os_str(),
        plan.path.as_os_str(),
        "no trailing separator"
    );
    assert_eq!(wt.branch, "agentd/0a1b2c3d");
    assert_eq!(wt.base, "refs/heads/main");
    assert_eq!(
        git(&wt.path, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "agentd/0a1b2c3d"
    );
    assert_eq!(
        std::fs::read_to_string(wt.path.join("src/lib.rs")).expect("read"),
        "fn a() {}\n"
    );
    let list = repo.git(&["worktree", "list", "--porcelain"]);
    assert!(
        list.contains("locked agentd: agent 0a1b2c3d is running"),
        "{list}"
    );
    let exclude = std::fs::read_to_string(repo.root.join(".git/info/exclude")).expect("read");
    assert!(
        exclude.lines().any(|l| l == "/.agentd/worktrees/"),
        "{exclude}"
    );
    assert_eq!(snapshot(&repo), before, "the checkout is untouched");
}

#[test]
fn the_agent_cwd_is_its_directory_inside_the_tree() {
    let repo = TestRepo::new();
    let p = plan(&repo.root.join("src"), None, "11112222", STORE).expect("plan");
    assert_eq!(p.cwd, p.path.join("src"));
    repo.write("build/out.txt", "x");
    let err = plan(&repo.root.join("build"), None, "11112223", STORE).unwrap_err();
    assert!(err.to_string().contains("is not part of main"), "{err}");
}

#[test]
fn no_repository_a_bare_one_or_a_bad_base_is_a_clear_error_and_makes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let err = plan(dir.path(), None, "aaaa0000", STORE).unwrap_err();
    assert!(err.to_string().contains("not inside one"), "{err}");
    let bare = dir.path().join("bare.git");
    git(
        dir.path(),
        &["init", "-q", "--bare", bare.to_str().expect("utf8")],
    );
    let err = plan(&bare, None, "aaaa0001", STORE).unwrap_err();
    assert!(err.to_string().contains("bare repository"), "{err}");
    let repo = TestRepo::new();
    let err = plan(&repo.root, Some("no-such-ref"), "aaaa0002", STORE).unwrap_err();
    assert!(matches!(err, WorktreeError::Invalid(_)), "{err}");
    assert!(err.to_string().contains("does not name a commit"), "{err}");
    assert!(!repo.root.join(".agentd").exists());
    assert!(repo.git(&["branch", "--list", "agentd/*"]).is_empty());
}

#[test]
fn base_names_a_ref_fully_or_a_commit() {
    let repo = TestRepo::new();
    repo.git(&["tag", "v1"]);
    repo.write("README", "two\n");
    repo.git(&["commit", "-qam", "second"]);
    let p = plan(&repo.root, Some("v1"), "bbbb0000", STORE).expect("plan");
    assert_eq!(p.base, "refs/tags/v1");
    let p = plan(&repo.root, Some("main~1"), "bbbb0001", STORE).expect("plan");
    assert_eq!(p.base, repo.git(&["rev-parse", "main~1"]).trim());
    // "HEAD" is the checkout's branch, never a name that would mean the
    // worktree's own HEAD later.
    let p = plan(&repo.root, Some("HEAD"), "bbbb0002", STORE).expect("plan");
    assert_eq!(p.base, "refs/heads/main");
}

#[test]
fn a_clean_tree_and_its_branch_are_removed() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "cccc0000");
    let settled = remove_if_clean(&target(&wt, "cccc0000")).expect("remove");
    assert!(matches!(settled, Settled::Removed(_)), "{settled:?}");
    assert!(!wt.path.exists());
    assert!(repo.git(&["branch", "--list", "agentd/*"]).is_empty());
    assert!(!repo.git(&["worktree", "list"]).contains("cccc0000"));
}

fn kept(repo: &TestRepo, short: &str, work: impl FnOnce(&Path)) -> Inspection {
    let (_, wt) = make(repo, short);
    work(&wt.path);
    match remove_if_clean(&target(&wt, short)).expect("settle") {
        Settled::Kept(i) => {
            assert!(wt.path.exists(), "the tree is still there");
            assert!(
                !repo.git(&["branch", "--list", &wt.branch]).is_empty(),
                "the branch is still there"
            );
            assert!(
                !repo
                    .git(&["worktree", "list", "--porcelain"])
                    .contains("checking for work"),
                "agentd's removal lock is lifted"
            );
            i
        }
        other => panic!("work must be kept, got {other:?}"),
    }
}

#[test]
fn uncommitted_changes_are_kept() {
    let repo = TestRepo::new();
    let i = kept(&repo, "dddd0000", |p| {
        std::fs::write(p.join("README"), "changed\n").expect("write")
    });
    assert_eq!(i.work.changed, 1);
}

#[test]
fn untracked_files_deep_in_new_directories_are_kept() {
    // Claude Code #35862: `status -uno` hid untracked files.
    let repo = TestRepo::new();
    let i = kept(&repo, "dddd0001", |p| {
        std::fs::create_dir_all(p.join("new/deeper")).expect("mkdir");
        std::fs::write(p.join("new/deeper/notes.md"), "mine\n").expect("write");
    });
    assert_eq!(i.work.untracked, 1);
    assert_eq!(i.paths, vec!["new/deeper/notes.md".to_string()]);
}

#[test]
fn committed_work_is_kept() {
    // Claude Code #27753, #38287: committed work deleted on exit.
    let repo = TestRepo::new();
    let i = kept(&repo, "dddd0002", |p| {
        std::fs::write(p.join("README"), "committed\n").expect("write");
        git(p, &["commit", "-qam", "work"]);
    });
    assert_eq!(i.work.ahead, 1);
    assert_eq!(i.work.changed, 0);
}

#[test]
fn a_squash_merged_branch_counts_as_unmerged() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "dddd0003");
    std::fs::write(wt.path.join("README"), "squashed\n").expect("write");
    git(&wt.path, &["commit", "-qam", "work"]);
    repo.git(&["merge", "-q", "--squash", "agentd/dddd0003"]);
    repo.git(&["commit", "-qm", "squash"]);
    let settled = remove_if_clean(&target(&wt, "dddd0003")).expect("settle");
    assert!(
        matches!(settled, Settled::Kept(ref i) if i.work.ahead == 1),
        "{settled:?}"
    );
}

#[test]
fn a_branch_merged_into_its_base_is_no_longer_work() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "dddd0004");
    std::fs::write(wt.path.join("README"), "merged\n").expect("write");
    git(&wt.path, &["commit", "-qam", "work"]);
    repo.git(&["merge", "-q", "--ff-only", "agentd/dddd0004"]);
    let settled = remove_if_clean(&target(&wt, "dddd0004")).expect("settle");
    assert!(matches!(settled, Settled::Removed(_)), "{settled:?}");
}

#[test]
fn a_tree_a_person_locked_is_never_touched() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "eeee0000");
    repo.git(&["worktree", "unlock", wt.path.to_str().expect("utf8")]);
    repo.git(&[
        "worktree",
        "lock",
        "--reason",
        "on my usb disk",
        wt.path.to_str().expect("utf8"),
    ]);
    for settled in [
        remove_if_clean(&target(&wt, "eeee0000")).expect("settle"),
        discard(&target(&wt, "eeee0000")).expect("discard"),
    ] {
        assert!(
            matches!(settled, Settled::Untouchable(ref why) if why.contains("on my usb disk")),
            "{settled:?}"
        );
    }
    assert!(wt.path.exists());
    assert!(
        repo.git(&["worktree", "list", "--porcelain"])
            .contains("on my usb disk")
    );
}

#[test]
fn discard_removes_work_and_says_what_was_lost() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "eeee0001");
    std::fs::write(wt.path.join("scratch"), "x").expect("write");
    let settled = discard(&target(&wt, "eeee0001")).expect("discard");
    assert!(
        matches!(settled, Settled::Removed(ref i) if i.work.untracked == 1),
        "{settled:?}"
    );
    assert!(!wt.path.exists());
    assert!(repo.git(&["branch", "--list", "agentd/*"]).is_empty());
}

#[test]
fn an_orphan_with_no_recorded_base_keeps_commits_no_other_ref_has() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "ffff0000");
    let mut t = target(&wt, "ffff0000");
    t.base.clear();
    t.base_commit.clear();
    std::fs::write(wt.path.join("README"), "orphan work\n").expect("write");
    git(&wt.path, &["commit", "-qam", "work"]);
    assert!(
        matches!(remove_if_clean(&t).expect("settle"), Settled::Kept(ref i) if i.work.ahead == 1)
    );
    let (_, clean) = make(&repo, "ffff0001");
    let mut t = target(&clean, "ffff0001");
    t.base.clear();
    t.base_commit.clear();
    assert!(matches!(
        remove_if_clean(&t).expect("settle"),
        Settled::Removed(_)
    ));
}

#[test]
fn agentds_worktrees_are_listed_and_a_persons_are_not() {
    let repo = TestRepo::new();
    make(&repo, "12340000");
    let other = repo.root.parent().expect("parent").join("mine");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "mine",
        other.to_str().expect("utf8"),
    ]);
    let found = agentd_worktrees(&repo.root.join(".git")).expect("list");
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].name, "12340000");
    assert_eq!(found[0].branch, "agentd/12340000");
    assert_eq!(found[0].checkout, repo.root);
}

#[test]
fn diff_shows_new_changed_untracked_and_committed_files() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "23450000");
    std::fs::write(wt.path.join("committed.txt"), "c\n").expect("write");
    git(&wt.path, &["add", "committed.txt"]);
    git(&wt.path, &["commit", "-qm", "c"]);
    std::fs::write(wt.path.join("README"), "hello\nchanged\n").expect("write");
    std::fs::write(wt.path.join("untracked.txt"), "u\n").expect("write");
    let patch = diff(&wt, false).expect("diff");
    assert!(patch.contains("+changed"), "{patch}");
    assert!(
        patch.contains("+++ b/untracked.txt") && patch.contains("+u"),
        "{patch}"
    );
    assert!(patch.contains("+++ b/committed.txt"), "{patch}");
    let stat = diff(&wt, true).expect("stat");
    assert!(stat.contains("3 files changed"), "{stat}");
}

fn committed_tree(repo: &TestRepo, short: &str, file: &str, text: &str) -> AgentWorktree {
    let (_, wt) = make(repo, short);
    std::fs::write(wt.path.join(file), text).expect("write");
    git(&wt.path, &["add", file]);
    git(&wt.path, &["commit", "-qm", "agent work"]);
    wt
}

#[test]
fn merge_fast_forwards_merges_and_squashes_into_the_checkout() {
    let repo = TestRepo::new();
    let wt = committed_tree(&repo, "34560000", "a.txt", "a\n");
    let m = merge(&wt, false, "agent 34560000").expect("merge");
    assert!(matches!(m, Merged::FastForward { .. }), "{m:?}");
    assert_eq!(
        std::fs::read_to_string(repo.root.join("a.txt")).expect("read"),
        "a\n"
    );
    assert!(repo.git(&["status", "--porcelain"]).is_empty());
    assert_eq!(merge(&wt, false, "agent").expect("again"), Merged::UpToDate);

    let wt = committed_tree(&repo, "34560001", "b.txt", "b\n");
    repo.write("c.txt", "c\n");
    repo.git(&["add", "c.txt"]);
    repo.git(&["commit", "-qm", "person"]);
    let m = merge(&wt, false, "agent 34560001").expect("merge");
    assert!(
        matches!(
            m,
            Merged::Commit {
                squashed: false,
                ..
            }
        ),
        "{m:?}"
    );
    assert_eq!(
        repo.git(&["rev-list", "--parents", "-n1", "HEAD"])
            .split_whitespace()
            .count(),
        3
    );
    assert!(repo.root.join("b.txt").exists() && repo.root.join("c.txt").exists());
    assert!(repo.git(&["status", "--porcelain"]).is_empty());

    let wt = committed_tree(&repo, "34560002", "d.txt", "d\n");
    let m = merge(&wt, true, "agent 34560002").expect("squash");
    assert!(matches!(m, Merged::Commit { squashed: true, .. }), "{m:?}");
    assert_eq!(
        repo.git(&["rev-list", "--parents", "-n1", "HEAD"])
            .split_whitespace()
            .count(),
        2
    );
    assert!(repo.root.join("d.txt").exists());
}

#[test]
fn merge_refuses_a_dirty_checkout_and_a_conflict_changes_nothing() {
    let repo = TestRepo::new();
    let wt = committed_tree(&repo, "45670000", "README", "agent\n");
    repo.write("README", "person, uncommitted\n");
    let err = merge(&wt, false, "agent").unwrap_err();
    assert!(err.to_string().contains("uncommitted changes"), "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.root.join("README")).expect("read"),
        "person, uncommitted\n"
    );

    repo.git(&["commit", "-qam", "person"]);
    let before = snapshot(&repo);
    let err = merge(&wt, false, "agent").unwrap_err();
    assert!(err.to_string().contains("conflicts in: README"), "{err}");
    assert_eq!(snapshot(&repo), before, "a conflict changes nothing");
}

#[test]
fn merge_refuses_work_the_branch_does_not_hold() {
    let repo = TestRepo::new();
    let wt = committed_tree(&repo, "56780000", "a.txt", "a\n");
    std::fs::write(wt.path.join("loose.txt"), "l\n").expect("write");
    let err = merge(&wt, false, "agent").unwrap_err();
    assert!(err.to_string().contains("1 uncommitted files"), "{err}");
}

#[test]
fn submodules_are_initialised_in_the_new_tree() {
    let sub = TestRepo::new();
    let repo = TestRepo::new();
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        sub.root.to_str().expect("utf8"),
        "vendor/sub",
    ]);
    repo.git(&["commit", "-qm", "submodule"]);
    // git refuses local-path submodules unless the person allows them (as
    // they must for their own `git submodule update`).
    repo.git(&["config", "protocol.file.allow", "always"]);
    let (_, wt) = make(&repo, "67890000");
    assert_eq!(
        std::fs::read_to_string(wt.path.join("vendor/sub/README")).expect("submodule checked out"),
        "hello\n"
    );
    let i = inspect(&wt).expect("inspect");
    assert!(
        i.work.is_empty(),
        "a fresh tree with a submodule is clean: {i:?}"
    );
    std::fs::write(
        wt.path.join("vendor/sub/README"),
        "edited in the submodule\n",
    )
    .expect("write");
    let settled = remove_if_clean(&target(&wt, "67890000")).expect("settle");
    assert!(
        matches!(settled, Settled::Kept(_)),
        "work in a submodule is work: {settled:?}"
    );
}

#[test]
fn pinned_working_dir_must_be_a_registered_worktree_of_the_same_repo() {
    let repo = TestRepo::new();
    let mine = repo.root.parent().expect("parent").join("mine");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "mine",
        mine.to_str().expect("utf8"),
    ]);
    let (dir, wt) = pinned(mine.join("src").to_str().expect("utf8"), &repo.root).expect("pinned");
    assert_eq!(dir, mine.canonicalize().expect("c").join("src"));
    assert!(!wt.owned);
    assert_eq!(wt.branch, "mine");
    let err = pinned(repo.root.to_str().expect("utf8"), &repo.root).unwrap_err();
    assert!(
        err.to_string().contains("not in a linked worktree"),
        "{err}"
    );
    let other = TestRepo::new();
    let err = pinned(other.root.to_str().expect("utf8"), &repo.root).unwrap_err();
    assert!(err.to_string().contains("another repository"), "{err}");
    let err = pinned("relative/dir", &repo.root).unwrap_err();
    assert!(err.to_string().contains("not an absolute path"), "{err}");
}

#[test]
fn a_removed_tree_is_made_again_for_a_revived_agent() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "78900000");
    assert!(matches!(
        remove_if_clean(&target(&wt, "78900000")).expect("settle"),
        Settled::Removed(_)
    ));
    recreate(&wt, "78900000", &running_reason("78900000", ""), STORE).expect("recreate");
    assert!(wt.path.join("README").exists());
    assert_eq!(
        git(&wt.path, &["symbolic-ref", "--short", "HEAD"]).trim(),
        "agentd/78900000"
    );
}

#[test]
fn only_trees_under_agentd_worktrees_are_agentds() {
    assert!(is_agentd_tree(
        Path::new("/r/.agentd/worktrees/0a1b2c3d"),
        "0a1b2c3d"
    ));
    assert!(!is_agentd_tree(Path::new("/r/0a1b2c3d"), "0a1b2c3d"));
    assert!(!is_agentd_tree(
        Path::new("/r/.agentd/worktrees/other"),
        "0a1b2c3d"
    ));
    assert_eq!(
        checkout_of(Path::new("/r/.agentd/worktrees/0a1b2c3d")),
        Some(PathBuf::from("/r"))
    );
}

#[test]
fn a_vanished_tree_never_takes_its_committed_branch_with_it() {
    let repo = TestRepo::new();
    let wt = committed_tree(&repo, "9a000001", "a.txt", "a\n");
    std::fs::remove_dir_all(&wt.path).expect("a person deletes the directory");
    assert!(!would_remove(&target(&wt, "9a000001")).expect("dry run"));
    let settled = remove_if_clean(&target(&wt, "9a000001")).expect("settle");
    assert!(
        matches!(settled, Settled::Kept(ref i) if i.work.ahead == 1),
        "{settled:?}"
    );
    assert_eq!(
        repo.git(&["branch", "--list", "agentd/9a000001"]).trim(),
        "agentd/9a000001"
    );
    // Continuing the agent checks the branch out again, commits and all.
    recreate(&wt, "9a000001", &running_reason("9a000001", ""), STORE).expect("recreate");
    assert_eq!(
        std::fs::read_to_string(wt.path.join("a.txt")).expect("read"),
        "a\n"
    );
}

#[test]
fn trees_never_nest_and_a_tree_holding_another_is_not_removed() {
    let repo = TestRepo::new();
    let (_, outer) = make(&repo, "9b000001");
    // An agent started inside the outer tree gets its tree beside it.
    let inner = plan(&outer.path.join("src"), None, "9b000002", STORE).expect("plan");
    assert_eq!(inner.path, repo.root.join(".agentd/worktrees/9b000002"));
    assert_eq!(
        inner.checkout, outer.path,
        "it merges into the tree it came from"
    );
    assert_eq!(inner.base, "refs/heads/agentd/9b000001");
    assert_eq!(inner.cwd, inner.path.join("src"));
    // A worktree someone put inside a tree keeps that tree.
    let nested = outer.path.join("mine");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "nested",
        nested.to_str().expect("utf8"),
    ]);
    let settled = remove_if_clean(&target(&outer, "9b000001")).expect("settle");
    assert!(
        matches!(settled, Settled::Untouchable(ref why) if why.contains("inside it")),
        "{settled:?}"
    );
    assert!(nested.join("README").exists());
}

#[test]
fn a_new_agent_type_written_in_a_tree_is_work() {
    // Only the trees are excluded, not the rest of .agentd/.
    let repo = TestRepo::new();
    let i = kept(&repo, "9c000001", |p| {
        std::fs::create_dir_all(p.join(".agentd/agents")).expect("mkdir");
        std::fs::write(p.join(".agentd/agents/reviewer.md"), "---\n").expect("write");
    });
    assert_eq!(i.work.untracked, 1);
}

fn with_submodule(short: &str, ignore: Option<&str>) -> (TestRepo, TestRepo, AgentWorktree) {
    let sub = TestRepo::new();
    let repo = TestRepo::new();
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        sub.root.to_str().expect("utf8"),
        "vendor/sub",
    ]);
    if let Some(ignore) = ignore {
        repo.git(&[
            "config",
            "-f",
            ".gitmodules",
            "submodule.vendor/sub.ignore",
            ignore,
        ]);
        repo.git(&["add", ".gitmodules"]);
    }
    repo.git(&["commit", "-qm", "submodule"]);
    repo.git(&["config", "protocol.file.allow", "always"]);
    let (_, wt) = make(&repo, short);
    (sub, repo, wt)
}

#[test]
fn edits_in_a_submodule_count_even_when_gitmodules_says_ignore() {
    let (_sub, _repo, wt) = with_submodule("9d000001", Some("all"));
    assert!(inspect(&wt).expect("inspect").work.is_empty());
    std::fs::write(wt.path.join("vendor/sub/README"), "hidden edit\n").expect("write");
    let settled = remove_if_clean(&target(&wt, "9d000001")).expect("settle");
    assert!(
        matches!(settled, Settled::Kept(ref i) if i.work.changed == 1),
        "{settled:?}"
    );
}

#[test]
fn commits_made_in_a_submodule_count_as_work() {
    let (_sub, _repo, wt) = with_submodule("9d000002", None);
    let sub = wt.path.join("vendor/sub");
    std::fs::write(sub.join("README"), "sub work\n").expect("write");
    git(&sub, &["commit", "-qam", "in the submodule"]);
    // Even with the new gitlink committed in the tree and merged, the
    // submodule's commit exists only in the tree's clone.
    git(&wt.path, &["commit", "-qam", "bump"]);
    let i = inspect(&wt).expect("inspect");
    assert!(
        i.work.ahead >= 2,
        "the superproject commit and the submodule's: {i:?}"
    );
}

#[test]
fn agentds_lock_for_another_agent_is_not_this_trees_to_lift() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "9e000001");
    lock(&wt.checkout, "9e000001", &running_reason("9e000001", "x")).expect("own lock");
    assert!(matches!(
        remove_if_clean(&target(&wt, "9e000001")).expect("settle"),
        Settled::Removed(_)
    ));
    let (_, wt) = make(&repo, "9e000002");
    let path = wt.path.to_str().expect("utf8").to_string();
    repo.git(&["worktree", "unlock", &path]);
    repo.git(&[
        "worktree",
        "lock",
        "--reason",
        "agentd: agent 9e000003 is running",
        &path,
    ]);
    let settled = remove_if_clean(&target(&wt, "9e000002")).expect("settle");
    assert!(matches!(settled, Settled::Untouchable(_)), "{settled:?}");
}

#[test]
fn an_orphan_is_judged_by_its_marker_and_only_its_own_branch_can_go() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "9f000001");
    let common = repo.root.join(".git");
    assert_eq!(
        read_marker(&common, "9f000001"),
        Some(Marker {
            base: "refs/heads/main".to_string(),
            base_commit: wt.base_commit.clone(),
            store: STORE.to_string(),
        })
    );
    // Commits a tag (or a pushed branch) reaches are still not on the base.
    std::fs::write(wt.path.join("README"), "tagged work\n").expect("write");
    git(&wt.path, &["commit", "-qam", "work"]);
    repo.git(&["tag", "pushed", "agentd/9f000001"]);
    let Marker {
        base, base_commit, ..
    } = read_marker(&common, "9f000001").expect("marker");
    let orphan = Target {
        base,
        base_commit,
        ..target(&wt, "9f000001")
    };
    assert!(
        matches!(remove_if_clean(&orphan).expect("settle"), Settled::Kept(ref i) if i.work.ahead == 1)
    );
    // A person switched a clean orphan to their branch: their branch stays.
    let (_, other) = make(&repo, "9f000002");
    git(&other.path, &["switch", "-q", "-c", "feature"]);
    let settled = remove_if_clean(&target(&other, "9f000002")).expect("settle");
    assert!(matches!(settled, Settled::Removed(_)), "{settled:?}");
    assert_eq!(repo.git(&["branch", "--list", "feature"]).trim(), "feature");
    // A tree someone else made has no marker.
    let theirs = repo.root.join(".agentd/worktrees/experiment");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        "experiment",
        theirs.to_str().expect("utf8"),
    ]);
    assert_eq!(read_marker(&common, "experiment"), None);
}

#[test]
fn merging_the_same_change_again_is_up_to_date() {
    let repo = TestRepo::new();
    let wt = committed_tree(&repo, "a0000001", "a.txt", "a\n");
    repo.write("b.txt", "b\n");
    repo.git(&["add", "b.txt"]);
    repo.git(&["commit", "-qm", "person"]);
    assert!(matches!(
        merge(&wt, true, "agent").expect("squash"),
        Merged::Commit { .. }
    ));
    let head = repo.git(&["rev-parse", "HEAD"]);
    assert_eq!(merge(&wt, true, "agent").expect("again"), Merged::UpToDate);
    assert_eq!(repo.git(&["rev-parse", "HEAD"]), head, "no empty commit");
}

#[test]
fn working_dir_may_not_be_another_agents_tree() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "a1000001");
    let err = pinned(wt.path.to_str().expect("utf8"), &repo.root).unwrap_err();
    assert!(
        err.to_string().contains("inside another agent's worktree"),
        "{err}"
    );
}

#[test]
fn a_tree_made_from_a_removed_tree_is_still_reachable() {
    let repo = TestRepo::new();
    let (_, outer) = make(&repo, "a2000001");
    let inner_plan = plan(&outer.path, None, "a2000002", STORE).expect("plan");
    create(&inner_plan, &running_reason("a2000002", "")).expect("create");
    let inner = inner_plan.record();
    assert!(matches!(
        remove_if_clean(&target(&outer, "a2000001")).expect("outer"),
        Settled::Removed(_)
    ));
    assert!(!inner.checkout.exists(), "the tree it came from is gone");
    assert_eq!(repo_dir(&inner), repo.root);
    lock(
        &repo_dir(&inner),
        "a2000002",
        &running_reason("a2000002", "x"),
    )
    .expect("lock");
    let t = Target {
        checkout: repo_dir(&inner),
        ..target(&inner, "a2000002")
    };
    assert!(matches!(
        remove_if_clean(&t).expect("inner"),
        Settled::Removed(_)
    ));
}

#[test]
fn a_submodule_pinned_where_no_remote_branch_reaches_is_not_work() {
    let sub = TestRepo::new();
    sub.git(&["switch", "-q", "-c", "side"]);
    sub.write("side.txt", "s\n");
    sub.git(&["add", "side.txt"]);
    sub.git(&["commit", "-qm", "side"]);
    sub.git(&["tag", "pinned"]);
    sub.git(&["switch", "-q", "main"]);
    sub.git(&["branch", "-q", "-D", "side"]);
    let repo = TestRepo::new();
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        sub.root.to_str().expect("utf8"),
        "vendor/sub",
    ]);
    git(&repo.root.join("vendor/sub"), &["checkout", "-q", "pinned"]);
    repo.git(&["add", "vendor/sub"]);
    repo.git(&["commit", "-qm", "pin a tag-only commit"]);
    repo.git(&["config", "protocol.file.allow", "always"]);
    let (_, wt) = make(&repo, "a3000001");
    assert!(wt.path.join("vendor/sub/side.txt").exists());
    let i = inspect(&wt).expect("inspect");
    assert!(i.work.is_empty(), "an untouched tree is clean: {i:?}");
}

#[test]
fn a_vanished_trees_record_keeps_what_only_it_holds() {
    // A submodule commit: its clone lives in git's record of the tree.
    let (_sub, repo, wt) = with_submodule("a4000001", None);
    let sub = wt.path.join("vendor/sub");
    std::fs::write(sub.join("README"), "only here\n").expect("write");
    git(&sub, &["commit", "-qam", "in the submodule"]);
    std::fs::remove_dir_all(&wt.path).expect("a person deletes the tree");
    let settled = remove_if_clean(&target(&wt, "a4000001")).expect("settle");
    assert!(
        matches!(settled, Settled::Kept(ref i) if i.work.ahead >= 1),
        "{settled:?}"
    );
    assert!(repo.root.join(".git/worktrees/a4000001/modules").exists());
    let err = recreate(&wt, "a4000001", &running_reason("a4000001", ""), STORE).unwrap_err();
    assert!(err.to_string().contains("exist nowhere else"), "{err}");

    // Commits on a detached HEAD.
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "a4000002");
    git(&wt.path, &["switch", "-q", "--detach"]);
    std::fs::write(wt.path.join("README"), "detached\n").expect("write");
    git(&wt.path, &["commit", "-qam", "detached work"]);
    std::fs::remove_dir_all(&wt.path).expect("a person deletes the tree");
    let settled = remove_if_clean(&target(&wt, "a4000002")).expect("settle");
    assert!(
        matches!(settled, Settled::Kept(ref i) if i.work.ahead == 1),
        "{settled:?}"
    );
}

#[test]
fn making_a_tree_again_never_lifts_a_persons_lock() {
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "a5000001");
    let path = wt.path.to_str().expect("utf8").to_string();
    repo.git(&["worktree", "unlock", &path]);
    repo.git(&["worktree", "lock", "--reason", "mine, on a usb disk", &path]);
    std::fs::remove_dir_all(&wt.path).expect("the disk is away");
    let err = recreate(&wt, "a5000001", &running_reason("a5000001", ""), STORE).unwrap_err();
    assert!(err.to_string().contains("locked by someone else"), "{err}");
    assert!(
        repo.git(&["worktree", "list", "--porcelain"])
            .contains("mine, on a usb disk")
    );
}

#[test]
fn making_a_tree_leaves_the_persons_submodule_configuration_alone() {
    let (_sub, repo, _wt) = with_submodule("a6000001", None);
    repo.git(&["submodule", "deinit", "-q", "vendor/sub"]);
    let before = std::fs::read_to_string(repo.root.join(".git/config")).expect("config");
    let (_, wt) = make(&repo, "a6000002");
    assert_eq!(
        std::fs::read_to_string(repo.root.join(".git/config")).expect("config"),
        before
    );
    assert!(
        !wt.path.join("vendor/sub/README").exists(),
        "as in the person's checkout: not checked out"
    );
}

#[test]
fn merge_never_writes_over_an_ignored_file() {
    let repo = TestRepo::new();
    repo.write(".gitignore", "secret.env\n");
    repo.git(&["add", ".gitignore"]);
    repo.git(&["commit", "-qm", "ignore"]);
    let wt = committed_tree(&repo, "a7000001", "placeholder", "x");
    std::fs::write(wt.path.join("secret.env"), "agent's\n").expect("write");
    git(&wt.path, &["add", "-f", "secret.env"]);
    git(
        &wt.path,
        &["commit", "-qm", "adds a file the person ignores"],
    );
    repo.write("secret.env", "the person's key\n");
    let err = merge(&wt, false, "agent").unwrap_err();
    assert!(err.to_string().contains("nothing was changed"), "{err}");
    assert_eq!(
        std::fs::read_to_string(repo.root.join("secret.env")).expect("read"),
        "the person's key\n"
    );
}

#[test]
fn no_rm_rf_fallback_for_a_tree_git_does_not_know() {
    // Claude Code #58885: a tree removal that fell back to deleting the
    // directory. agentd deletes only a tree git lists where agentd put it.
    let repo = TestRepo::new();
    let (_, wt) = make(&repo, "a8000001");
    std::fs::remove_dir_all(repo.root.join(".git/worktrees/a8000001")).expect("drop git's record");
    for settled in [
        remove_if_clean(&target(&wt, "a8000001")).expect("settle"),
        discard(&target(&wt, "a8000001")).expect("discard"),
    ] {
        assert!(
            matches!(settled, Settled::Untouchable(ref why) if why.contains("not a worktree git knows")),
            "{settled:?}"
        );
    }
    assert!(wt.path.join("README").exists());
}

#[test]
fn trees_made_at_the_same_moment_in_one_repository_are_all_made() {
    // libgit2 scans every tree of the repository before adding one, and
    // reports a tree another thread has only half made as "reference …
    // is already checked out" (found by the torture run).
    let repo = TestRepo::new();
    for round in 0..20u32 {
        let made: Vec<Result<(), String>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..8u32)
                .map(|i| {
                    let repo = &repo;
                    s.spawn(move || {
                        let short = format!("{round:02x}{i:02x}0000");
                        let plan =
                            plan(&repo.root, None, &short, STORE).map_err(|e| e.to_string())?;
                        create(&plan, &running_reason(&short, "")).map_err(|e| e.to_string())
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let failed: Vec<&String> = made.iter().filter_map(|r| r.as_ref().err()).collect();
        assert!(failed.is_empty(), "round {round}: {failed:?}");
    }
}

#[test]
fn a_replaced_git_link_is_never_read_and_is_restored_keeping_what_was_there() {
    let repo = TestRepo::new();
    let (_plan, wt) = make(&repo, "a1b2c3d4");
    std::fs::write(wt.path.join("README"), "changed\n").unwrap();
    assert_eq!(super::link::check(&wt.path), super::link::Link::Intact);
    // The agent's own repository where the link was.
    std::fs::remove_file(wt.path.join(".git")).unwrap();
    testrepo::git(&wt.path, &["init", "-q", "--bare", ".git"]);
    assert!(matches!(
        super::link::check(&wt.path),
        super::link::Link::Replaced(w) if w.contains("directory")
    ));
    // Read through git's record: the real change, on the agent's branch.
    let held = work_in(&wt.path, &wt.branch, &wt.base, &wt.base_commit).unwrap();
    assert_eq!(held.work.changed, 1, "{held:?}");
    assert!(diff(&wt, false).unwrap().contains("+changed"));
    // A merge's message would have the person run git there: refused.
    let refused = merge(&wt, false, "agent x").unwrap_err().to_string();
    assert!(
        refused.contains("replaced its worktree's .git link"),
        "{refused}"
    );
    let notice = super::link::restore(&wt.path).unwrap().unwrap();
    assert!(notice.contains("restored"), "{notice}");
    assert_eq!(super::link::check(&wt.path), super::link::Link::Intact);
    assert!(wt.path.join(".git.replaced-by-agent/HEAD").is_file());
    assert!(diff(&wt, false).unwrap().contains("+changed"));
    let status = testrepo::git(&wt.path, &["status", "--porcelain"]);
    assert!(status.contains("README"), "{status}");
    assert_eq!(super::link::restore(&wt.path).unwrap(), None);
}

/// A merge cut short with some files written: `recover` puts every path on
/// the branch's side, forward or back, and leaves a path someone changed.
#[test]
fn a_merge_cut_short_is_finished_or_undone_by_where_its_branch_is() {
    for branch_moved in [false, true] {
        let repo = TestRepo::new();
        for i in 0..20 {
            repo.write(&format!("f{i}.txt"), "old\n");
        }
        repo.write("gone.txt", "old\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-qm", "files"]);
        let (_, wt) = make(&repo, if branch_moved { "77770001" } else { "77770002" });
        for i in 0..20 {
            std::fs::write(wt.path.join(format!("f{i}.txt")), "new\n").unwrap();
        }
        std::fs::create_dir_all(wt.path.join("dir")).unwrap();
        std::fs::write(wt.path.join("dir/added.txt"), "new\n").unwrap();
        std::fs::remove_file(wt.path.join("gone.txt")).unwrap();
        git(&wt.path, &["add", "-A"]);
        git(&wt.path, &["commit", "-qm", "agent work"]);
        let Prepared::Write { journal, .. } = prepare(&wt, false, "agent").unwrap() else {
            panic!("a merge to write");
        };
        // The crash: half of the files written, the branch moved or not,
        // and the index's lock left behind by the killed writer.
        for i in 0..10 {
            repo.write(&format!("f{i}.txt"), "new\n");
        }
        std::fs::write(repo.root.join(".git/index.lock"), "").unwrap();
        if branch_moved {
            repo.git(&["update-ref", &journal.branch_ref, &journal.to]);
        }
        let recovered = merge_journal::recover(&journal).unwrap();
        let want = if branch_moved { "new\n" } else { "old\n" };
        for i in 0..20 {
            assert_eq!(
                std::fs::read_to_string(repo.root.join(format!("f{i}.txt"))).unwrap(),
                want,
                "f{i} ({recovered:?})"
            );
        }
        assert_eq!(repo.root.join("dir/added.txt").exists(), branch_moved);
        assert_eq!(repo.root.join("gone.txt").exists(), !branch_moved);
        assert!(
            repo.git(&["status", "--porcelain"]).is_empty(),
            "{}",
            repo.git(&["status", "--porcelain"])
        );
        match recovered {
            merge_journal::Recovered::Finished { written, left } => {
                assert!(branch_moved);
                assert_eq!((written, left.len()), (12, 0));
            }
            merge_journal::Recovered::Undone { written, left } => {
                assert!(!branch_moved);
                assert_eq!((written, left.len()), (10, 0));
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn a_path_someone_changed_after_the_crash_is_left_alone() {
    let repo = TestRepo::new();
    let wt = committed_tree(&repo, "77770003", "README", "agent\n");
    let Prepared::Write { journal, .. } = prepare(&wt, false, "agent").unwrap() else {
        panic!("a merge to write");
    };
    repo.write("README", "the person's own edit\n");
    let recovered = merge_journal::recover(&journal).unwrap();
    assert_eq!(
        recovered,
        merge_journal::Recovered::Undone {
            written: 0,
            left: vec!["README".into()]
        }
    );
    assert_eq!(
        std::fs::read_to_string(repo.root.join("README")).unwrap(),
        "the person's own edit\n"
    );
}

#[test]
fn a_merge_writes_no_file_through_a_link_in_the_checkout() {
    let repo = TestRepo::new();
    let outside = tempfile::tempdir().unwrap();
    let (_, wt) = make(&repo, "77770004");
    std::fs::create_dir_all(wt.path.join("sub")).unwrap();
    std::fs::write(wt.path.join("sub/f.txt"), "agent\n").unwrap();
    git(&wt.path, &["add", "-A"]);
    git(&wt.path, &["commit", "-qm", "agent work"]);
    // An untracked link where the merge makes a directory.
    std::os::unix::fs::symlink(outside.path(), repo.root.join("sub")).unwrap();
    let err = merge(&wt, false, "agent").unwrap_err().to_string();
    assert!(
        err.contains("would overwrite") || err.contains("sub"),
        "{err}"
    );
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
}
