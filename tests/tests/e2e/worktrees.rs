//! Worktrees (DESIGN §9) — the real daemon and agentctl against real git
//! repositories made here. Every agent's tree is its own; the person's
//! checkout is never touched (except by `merge`); work is never deleted:
//! not at the end, not by the startup sweep, not by prune, not by `rm`.
//! Claude Code's worktree data-loss reports are regression tests here:
//! dirty and unpushed trees collected (#74719), untracked files missed
//! (#35862), committed work deleted on exit (#27753, #38287), an in-use
//! tree removed (#88255).

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};

use agentd_e2e::Env;
use agentd_e2e::gitrepo::{agentd_branches, git, git_out, init_repo, snapshot, tree_of};
use agentd_e2e::script::{delayed, script, text, tool, turn};
use agentd_shared::proto as pb;
use serde_json::{Value, json};

/// A world whose project directory is a git repository.
fn repo_world() -> (Env, PathBuf) {
    let env = Env::new();
    let repo = env.project().canonicalize().unwrap();
    init_repo(&repo);
    (env, repo)
}

/// A scripted model that runs `calls` (one turn each), then answers `done`.
fn model(env: &Env, name: &str, calls: Vec<Value>) -> String {
    let mut turns: Vec<Value> = calls.into_iter().map(|c| turn(vec![c])).collect();
    turns.push(turn(vec![text("done")]));
    env.script(name, &script(turns))
}

fn run_worktree(env: &Env, model: &str, name: &str) -> String {
    start_worktree(env, model, name, &[])
}

/// For an agent that commits: the sandbox keeps a worktree agent out of
/// the repository's shared git directory (objects, refs), so committing
/// needs it off.
fn run_worktree_committing(env: &Env, model: &str, name: &str) -> String {
    start_worktree(env, model, name, &["--sandbox", "off"])
}

fn start_worktree(env: &Env, model: &str, name: &str, extra: &[&str]) -> String {
    let mut args = vec!["run", "--background", "--worktree"];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--model", model, "--name", name, "work in your tree"]);
    env.ctl(&args).expect_code(0).stdout.trim().to_string()
}

fn wait_ended(env: &Env, id: &str) -> Value {
    env.ctl(&["wait", id]).expect_code(0);
    env.show(id)
}

fn worktrees(env: &Env) -> Vec<Value> {
    env.ctl(&["worktrees", "--json"])
        .expect_code(0)
        .json()
        .as_array()
        .unwrap()
        .clone()
}

fn listed<'a>(list: &'a [Value], path: &Path) -> Option<&'a Value> {
    list.iter()
        .find(|w| w["path"] == path.display().to_string())
}

fn lock_line(repo: &Path, tree: &Path) -> Option<String> {
    let list = git(repo, &["worktree", "list", "--porcelain"]);
    let mut in_tree = false;
    for line in list.lines() {
        if let Some(p) = line.strip_prefix("worktree ") {
            in_tree = Path::new(p) == tree;
        } else if in_tree && line.starts_with("locked") {
            return Some(line.to_string());
        }
    }
    None
}

#[test]
fn two_agents_started_together_get_their_own_trees_and_the_checkout_is_untouched() {
    let (env, repo) = repo_world();
    let before = snapshot(&repo);
    let _daemon = env.start_daemon();
    let m = model(
        &env,
        "w.json",
        vec![
            tool(
                "Write",
                json!({"file_path": "agent-work.txt", "content": "mine\n"}),
            ),
            tool(
                "Edit",
                json!({"file_path": "README", "old_string": "hello", "new_string": "hello from an agent"}),
            ),
            tool("Bash", json!({"command": "pwd > where.txt"})),
        ],
    );
    let (a, b) = env.rpc(async |client| {
        let req = pb::CreateAgentRequest {
            prompt: "work".into(),
            model: m.clone(),
            cwd: repo.display().to_string(),
            background: true,
            isolation: pb::Isolation::Worktree as i32,
            ..Default::default()
        };
        let mut other = client.clone();
        let (a, b) = tokio::join!(client.create_agent(req.clone()), other.create_agent(req));
        (a.unwrap().into_inner(), b.unwrap().into_inner())
    });
    let (a, b) = (wait_ended(&env, &a.id), wait_ended(&env, &b.id));
    let (ta, tb) = (&a["worktree"], &b["worktree"]);
    assert_ne!(ta["path"], tb["path"]);
    assert_ne!(ta["branch"], tb["branch"]);
    for (agent, t) in [(&a, ta), (&b, tb)] {
        let short = agent["short_id"].as_str().unwrap();
        let path = tree_of(&repo, short);
        assert_eq!(t["path"], path.display().to_string());
        assert_eq!(t["branch"], format!("agentd/{short}"));
        assert_eq!(t["base"], "main");
        assert_eq!(t["state"], "kept", "{t}");
        assert_eq!(
            (t["changed"].as_u64(), t["untracked"].as_u64()),
            (Some(1), Some(2))
        );
        assert_eq!(agent["cwd"], path.display().to_string());
        assert_eq!(
            std::fs::read_to_string(path.join("agent-work.txt")).unwrap(),
            "mine\n"
        );
        assert_eq!(
            std::fs::read_to_string(path.join("where.txt"))
                .unwrap()
                .trim(),
            path.display().to_string(),
            "Bash ran in the tree"
        );
        assert_eq!(lock_line(&repo, &path), None, "unlocked once it ended");
    }
    assert_eq!(
        snapshot(&repo),
        before,
        "the person's checkout is byte for byte as it was"
    );
    assert!(!repo.join("agent-work.txt").exists());
    let exclude = std::fs::read_to_string(repo.join(".git/info/exclude")).unwrap();
    assert!(
        exclude.lines().any(|l| l == "/.agentd/worktrees/"),
        "{exclude}"
    );
}

#[test]
fn locked_while_running_and_removed_with_its_branch_when_nothing_changed() {
    let (env, repo) = repo_world();
    let _daemon = env.start_daemon();
    let m = env.script(
        "slow.json",
        &script(vec![
            turn(vec![tool("Read", json!({"file_path": "README"}))]),
            delayed(1_500, vec![text("looked, changed nothing")]),
        ]),
    );
    let id = run_worktree(&env, &m, "looker");
    let a = env.show(&id);
    let short = a["short_id"].as_str().unwrap().to_string();
    let tree = tree_of(&repo, &short);
    assert_eq!(a["worktree"]["state"], "active");
    let lock = lock_line(&repo, &tree).expect("locked while it runs");
    assert!(
        lock.contains(&format!("agent {short}")) && lock.contains("looker"),
        "{lock}"
    );
    let listed_now = worktrees(&env);
    let w = listed(&listed_now, &tree).unwrap();
    assert_eq!(w["agent_status"], "running");
    assert!(
        w["state"].as_array().unwrap().contains(&json!("locked")),
        "{w}"
    );
    // A person's prune never touches a tree whose agent is alive.
    env.ctl(&["worktrees", "prune"]).expect_code(0);
    assert!(tree.exists());

    let a = wait_ended(&env, &id);
    assert_eq!(a["status"], "completed");
    assert_eq!(a["worktree"]["state"], "removed");
    assert!(!tree.exists());
    assert!(agentd_branches(&repo).is_empty());
    assert!(!git(&repo, &["worktree", "list"]).contains(&short));
    assert!(worktrees(&env).is_empty());
}

/// The kinds of work a tree can hold; each must survive end, sweep, prune
/// and rm.
fn work_kinds() -> Vec<(&'static str, Vec<Value>)> {
    vec![
        (
            "dirty",
            vec![tool(
                "Edit",
                json!({"file_path": "README", "old_string": "hello", "new_string": "edited"}),
            )],
        ),
        (
            "untracked",
            vec![tool(
                "Write",
                json!({"file_path": "new/deeper/notes.md", "content": "deep\n"}),
            )],
        ),
        (
            "committed",
            vec![tool(
                "Bash",
                json!({"command": "echo c > c.txt && git add c.txt && git -c user.name=A -c user.email=a@x commit -qm work"}),
            )],
        ),
    ]
}

#[test]
fn work_survives_the_end_the_startup_sweep_prune_and_rm() {
    let (env, repo) = repo_world();
    let daemon = env.start_daemon();
    let mut trees = Vec::new();
    for (kind, calls) in work_kinds() {
        let m = model(&env, &format!("{kind}.json"), calls);
        let id = run_worktree_committing(&env, &m, kind);
        let a = wait_ended(&env, &id);
        assert_eq!(a["worktree"]["state"], "kept", "{kind}: {a}");
        let path = PathBuf::from(a["worktree"]["path"].as_str().unwrap());
        trees.push((kind, id, path));
    }
    let expect_state = |kind: &str| match kind {
        "dirty" => "dirty",
        "untracked" => "untracked",
        _ => "ahead 1",
    };
    let list = worktrees(&env);
    for (kind, _, path) in &trees {
        let w = listed(&list, path).unwrap();
        assert!(
            w["state"]
                .as_array()
                .unwrap()
                .contains(&json!(expect_state(kind))),
            "{kind}: {w}"
        );
        assert_eq!(w["orphan"], false);
    }
    // rm removes the record and keeps the tree, saying what it kept.
    for (kind, id, path) in &trees {
        let out = env.ctl(&["rm", id]).expect_code(0).stdout.clone();
        assert!(
            out.contains("kept its worktree") && out.contains(&path.display().to_string()),
            "{kind}: {out}"
        );
        assert!(path.exists(), "{kind}: rm keeps work");
    }
    let list = worktrees(&env);
    for (kind, _, path) in &trees {
        let w = listed(&list, path).unwrap();
        assert_eq!(w["orphan"], true, "{kind}");
    }
    // prune and the sweep after a SIGKILL keep orphans with work.
    let pruned = env
        .ctl(&["worktrees", "prune", "--json"])
        .expect_code(0)
        .json();
    assert!(pruned["removed"].as_array().unwrap().is_empty(), "{pruned}");
    assert_eq!(pruned["kept"].as_array().unwrap().len(), 3, "{pruned}");
    daemon.kill9();
    let _daemon = env.start_daemon_swept();
    for (kind, _, path) in &trees {
        assert!(path.exists(), "{kind}: the sweep keeps work");
    }
    assert_eq!(agentd_branches(&repo).len(), 3);
    assert!(env.daemon_log_text().contains("kept an orphaned worktree"));
}

#[test]
fn a_squash_merged_branch_is_still_unmerged_work() {
    let (env, repo) = repo_world();
    let _daemon = env.start_daemon();
    let (_, calls) = work_kinds().remove(2);
    let m = model(&env, "c.json", calls);
    let id = run_worktree_committing(&env, &m, "squashed");
    let a = wait_ended(&env, &id);
    let branch = a["worktree"]["branch"].as_str().unwrap().to_string();
    let path = PathBuf::from(a["worktree"]["path"].as_str().unwrap());
    git(&repo, &["merge", "-q", "--squash", &branch]);
    git(&repo, &["commit", "-qm", "squash"]);
    let out = env.ctl(&["rm", &id]).expect_code(0).stdout.clone();
    assert!(out.contains("ahead 1 commit"), "{out}");
    assert!(path.exists());
    assert_eq!(agentd_branches(&repo), vec![branch]);
}

#[test]
fn rm_discard_worktree_prints_what_is_lost_then_deletes_it() {
    let (env, repo) = repo_world();
    let _daemon = env.start_daemon();
    let (_, calls) = work_kinds().remove(1);
    let m = model(&env, "u.json", calls);
    let id = run_worktree(&env, &m, "scratch");
    let a = wait_ended(&env, &id);
    let path = PathBuf::from(a["worktree"]["path"].as_str().unwrap());
    let out = env.ctl(&["rm", &id, "--discard-worktree"]);
    out.expect_code(0);
    assert!(
        out.stderr.contains("what it holds now is lost")
            && out.stderr.contains("new/deeper/notes.md"),
        "{}",
        out.stderr
    );
    assert!(
        out.stdout.contains("lost new/deeper/notes.md"),
        "{}",
        out.stdout
    );
    assert!(!path.exists());
    assert!(agentd_branches(&repo).is_empty());
}

#[test]
fn a_live_agents_tree_is_never_removed_and_rm_refuses_it() {
    let (env, repo) = repo_world();
    let _daemon = env.start_daemon();
    let m = env.script(
        "hold.json",
        &script(vec![delayed(60_000, vec![text("never")])]),
    );
    let id = run_worktree(&env, &m, "busy");
    let short = env.show(&id)["short_id"].as_str().unwrap().to_string();
    let tree = tree_of(&repo, &short);
    env.wait_for_agent(&id, "running", |a| a["status"] == "running");
    let out = env.ctl(&["rm", &id]);
    out.expect_code(1);
    assert!(out.stderr.contains("stop it first"), "{}", out.stderr);
    let pruned = env
        .ctl(&["worktrees", "prune", "--json"])
        .expect_code(0)
        .json();
    assert!(pruned["removed"].as_array().unwrap().is_empty());
    assert!(tree.exists());
    // Cancelled with nothing in it: the end removes it.
    env.ctl(&["stop", &id]).expect_code(0);
    env.wait_for_agent(&id, "cancelled", |a| a["status"] == "cancelled");
    assert_eq!(env.show(&id)["worktree"]["state"], "removed");
    assert!(!tree.exists());
}

#[test]
fn sigkill_mid_run_keeps_the_tree_and_the_agent_resumes_in_it() {
    let (env, repo) = repo_world();
    let daemon = env.start_daemon();
    let m = env.script(
        "resume.json",
        &script(vec![
            turn(vec![tool(
                "Write",
                json!({"file_path": "before.txt", "content": "1"}),
            )]),
            delayed(
                3_000,
                vec![tool("Bash", json!({"command": "pwd > after.txt"}))],
            ),
            turn(vec![text("done")]),
        ]),
    );
    let id = run_worktree(&env, &m, "survivor");
    let short = env.show(&id)["short_id"].as_str().unwrap().to_string();
    let tree = tree_of(&repo, &short);
    env.wait_for_agent(&id, "first tool round written", |a| {
        a["transcript_len"].as_u64() >= Some(3)
    });
    daemon.kill9();
    assert!(tree.join("before.txt").exists());
    let _daemon = env.start_daemon();
    let a = wait_ended(&env, &id);
    assert_eq!(a["status"], "completed");
    assert_eq!(a["worktree"]["state"], "kept");
    assert_eq!(
        std::fs::read_to_string(tree.join("after.txt"))
            .unwrap()
            .trim(),
        tree.display().to_string(),
        "resumed in its tree"
    );
    assert!(!repo.join("after.txt").exists());
}

#[test]
fn the_startup_sweep_removes_clean_orphans_and_keeps_the_rest() {
    let (env, repo) = repo_world();
    let daemon = env.start_daemon();
    // An agent that used the repository, so the daemon knows it; its kept
    // tree's marker names the daemon's store.
    let m = model(
        &env,
        "n.json",
        vec![tool(
            "Write",
            json!({"file_path": "kept.txt", "content": "k"}),
        )],
    );
    let id = run_worktree(&env, &m, "first");
    let first = wait_ended(&env, &id);
    let marker = std::fs::read_to_string(
        repo.join(".git/worktrees")
            .join(first["short_id"].as_str().unwrap())
            .join("agentd"),
    )
    .unwrap();
    let store_line = marker
        .lines()
        .find(|l| l.starts_with("store "))
        .unwrap()
        .to_string();
    daemon.kill9();
    // Orphans as a crash between making a tree and storing its agent
    // leaves them: marked and locked by agentd for an agent nobody
    // recorded.
    let head = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    let make = |short: &str| {
        let tree = tree_of(&repo, short);
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("agentd/{short}"),
                tree.to_str().unwrap(),
            ],
        );
        git(
            &repo,
            &[
                "worktree",
                "lock",
                "--reason",
                &format!("agentd: agent {short} is running"),
                tree.to_str().unwrap(),
            ],
        );
        std::fs::write(
            repo.join(".git/worktrees").join(short).join("agentd"),
            format!("base refs/heads/main\ncommit {head}\n{store_line}\n"),
        )
        .unwrap();
        tree
    };
    let clean = make("0abc0001");
    let dirty = make("0abc0002");
    std::fs::write(dirty.join("README"), "work\n").unwrap();
    let theirs = make("0abc0003");
    git(&repo, &["worktree", "unlock", theirs.to_str().unwrap()]);
    git(
        &repo,
        &[
            "worktree",
            "lock",
            "--reason",
            "my usb disk",
            theirs.to_str().unwrap(),
        ],
    );
    // A person's own clean trees under .agentd/worktrees, unmarked: theirs.
    // Another daemon's clean orphan (another store's marker): not ours.
    let other_daemons = make("0abc0005");
    std::fs::write(
        repo.join(".git/worktrees/0abc0005/agentd"),
        format!("base refs/heads/main\ncommit {head}\nstore another-store\n"),
    )
    .unwrap();
    let persons = tree_of(&repo, "0abc0004");
    git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "mine",
            persons.to_str().unwrap(),
        ],
    );
    let _daemon = env.start_daemon_swept();
    assert!(
        persons.exists(),
        "a tree agentd did not make is never swept"
    );
    assert!(!clean.exists(), "a clean orphan is swept");
    assert!(!agentd_branches(&repo).contains(&"agentd/0abc0001".to_string()));
    assert!(dirty.exists() && theirs.exists());
    let list = worktrees(&env);
    assert!(
        other_daemons.exists(),
        "another daemon's tree is never swept"
    );
    assert_eq!(list.len(), 5, "{list:?}");
    assert!(
        listed(&list, &dirty).unwrap()["state"]
            .as_array()
            .unwrap()
            .contains(&json!("orphan"))
    );
    assert_eq!(
        listed(&list, &theirs).unwrap()["lock_reason"],
        "my usb disk"
    );
    let dry = env
        .ctl(&["worktrees", "prune", "--dry-run", "--json"])
        .expect_code(0)
        .json();
    assert!(dry["removed"].as_array().unwrap().is_empty(), "{dry}");
    env.ctl(&["worktrees", "prune"]).expect_code(0);
    assert!(persons.exists() && dirty.exists() && theirs.exists() && other_daemons.exists());
    assert!(git(&repo, &["branch", "--list", "mine"]).contains("mine"));
}

#[test]
fn diff_shows_new_changed_untracked_and_committed_files() {
    let (env, _repo) = repo_world();
    let _daemon = env.start_daemon();
    let m = model(
        &env,
        "d.json",
        vec![
            tool(
                "Bash",
                json!({"command": "echo c > committed.txt && git add committed.txt && git -c user.name=A -c user.email=a@x commit -qm c"}),
            ),
            tool(
                "Edit",
                json!({"file_path": "src/lib.rs", "old_string": "pub fn a() {}", "new_string": "pub fn a() { b() }"}),
            ),
            tool(
                "Write",
                json!({"file_path": "untracked.txt", "content": "u\n"}),
            ),
        ],
    );
    let id = run_worktree_committing(&env, &m, "differ");
    wait_ended(&env, &id);
    let patch = env.ctl(&["diff", &id]).expect_code(0).stdout.clone();
    assert!(patch.contains("+++ b/committed.txt"), "{patch}");
    assert!(
        patch.contains("-pub fn a() {}") && patch.contains("+pub fn a() { b() }"),
        "{patch}"
    );
    assert!(
        patch.contains("+++ b/untracked.txt") && patch.contains("+u"),
        "{patch}"
    );
    let stat = env
        .ctl(&["diff", &id, "--stat"])
        .expect_code(0)
        .stdout
        .clone();
    assert!(stat.contains("3 files changed"), "{stat}");
    let out = env.ctl(&["diff", "nobody"]);
    out.expect_code(1);
    assert!(out.stderr.contains("not found"), "{}", out.stderr);
}

#[test]
fn merge_succeeds_refuses_a_dirty_checkout_and_a_conflict_changes_nothing() {
    let (env, repo) = repo_world();
    let _daemon = env.start_daemon();
    let commit = |file: &str, text: &str| {
        tool(
            "Bash",
            json!({"command": format!("printf '{text}' > {file} && git add {file} && git -c user.name=A -c user.email=a@x commit -qm agent")}),
        )
    };
    // Success: a new file, merged while the person also committed.
    let id = run_worktree_committing(
        &env,
        &model(&env, "m1.json", vec![commit("feature.txt", "f\\n")]),
        "feature",
    );
    wait_ended(&env, &id);
    std::fs::write(repo.join("docs/guide.md"), "# Guide\nmore\n").unwrap();
    git(&repo, &["commit", "-qam", "person"]);
    let out = env.ctl(&["merge", &id]);
    out.expect_code(0);
    assert!(out.stdout.contains("merged into main"), "{}", out.stdout);
    assert_eq!(
        std::fs::read_to_string(repo.join("feature.txt")).unwrap(),
        "f\n"
    );
    assert_eq!(git(&repo, &["status", "--porcelain"]), "");
    assert_eq!(
        git(&repo, &["rev-list", "--parents", "-n1", "HEAD"])
            .split_whitespace()
            .count(),
        3
    );

    // Refused on a dirty checkout: nothing changes.
    let id = run_worktree_committing(
        &env,
        &model(&env, "m2.json", vec![commit("README", "agent\\n")]),
        "readme",
    );
    wait_ended(&env, &id);
    std::fs::write(repo.join("README"), "person, unsaved\n").unwrap();
    let before = snapshot(&repo);
    let out = env.ctl(&["merge", &id]);
    out.expect_code(1);
    assert!(out.stderr.contains("uncommitted changes"), "{}", out.stderr);
    assert_eq!(snapshot(&repo), before);

    // A conflict: aborted, with the paths, nothing changed.
    git(&repo, &["commit", "-qam", "person edits README"]);
    let before = snapshot(&repo);
    let out = env.ctl(&["merge", &id, "--squash"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("conflicts in: README"),
        "{}",
        out.stderr
    );
    assert_eq!(snapshot(&repo), before);
}

#[test]
fn bad_worktree_requests_are_clear_errors_that_make_nothing() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let m = model(&env, "x.json", vec![]);
    // Not a repository.
    let out = env.ctl(&["run", "--worktree", "--model", &m, "x"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("needs a git repository"),
        "{}",
        out.stderr
    );
    // A bare one.
    let bare = env.root.path().join("bare.git");
    git(
        env.root.path(),
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    let out = env.ctl(&[
        "run",
        "--worktree",
        "--cwd",
        bare.to_str().unwrap(),
        "--model",
        &m,
        "x",
    ]);
    out.expect_code(1);
    assert!(out.stderr.contains("bare repository"), "{}", out.stderr);
    // A base that resolves to nothing.
    let repo = env.project().canonicalize().unwrap();
    init_repo(&repo);
    let out = env.ctl(&[
        "run",
        "--worktree",
        "--base",
        "no-such-branch",
        "--model",
        &m,
        "x",
    ]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("invalid argument") && out.stderr.contains("does not name a commit"),
        "{}",
        out.stderr
    );
    assert!(!repo.join(".agentd").exists());
    assert!(agentd_branches(&repo).is_empty());
    let list = env.ctl(&["list", "--json"]).expect_code(0).json();
    assert!(
        list.as_array().unwrap().is_empty(),
        "no agent was stored: {list}"
    );
    // --base works with a tag.
    git(&repo, &["tag", "v1"]);
    std::fs::write(repo.join("README"), "newer\n").unwrap();
    git(&repo, &["commit", "-qam", "newer"]);
    let m = model(
        &env,
        "seen.json",
        vec![tool("Bash", json!({"command": "cat README > seen.txt"}))],
    );
    let id = env.start_agent(&["--worktree", "--base", "v1", "--model", &m, "x"]);
    let a = wait_ended(&env, &id);
    assert_eq!(a["worktree"]["base"], "tags/v1");
    let tree = PathBuf::from(a["worktree"]["path"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(tree.join("seen.txt")).unwrap(),
        "hello\n",
        "the tree was made from v1, not from the newer HEAD"
    );
}

#[test]
fn a_repository_with_a_submodule() {
    let env = Env::new();
    let sub = env.root.path().join("sub");
    init_repo(&sub);
    let repo = env.project().canonicalize().unwrap();
    init_repo(&repo);
    git(
        &repo,
        &[
            "submodule",
            "add",
            "-q",
            sub.to_str().unwrap(),
            "vendor/sub",
        ],
    );
    git(&repo, &["commit", "-qm", "submodule"]);
    // As the person must for their own `git submodule update` of a local path.
    git(&repo, &["config", "protocol.file.allow", "always"]);
    let _daemon = env.start_daemon();
    let m = model(
        &env,
        "s.json",
        vec![tool(
            "Bash",
            json!({"command": "cat vendor/sub/README > seen.txt"}),
        )],
    );
    let id = run_worktree(&env, &m, "subby");
    let a = wait_ended(&env, &id);
    let tree = PathBuf::from(a["worktree"]["path"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(tree.join("seen.txt")).unwrap(),
        "hello\n",
        "the submodule was checked out"
    );
    assert_eq!(a["worktree"]["untracked"], 1);
    assert!(git_out(&repo, &["status", "--porcelain"]).stdout.is_empty());
}

#[test]
fn a_sandboxed_worktree_agents_commit_reaches_its_own_branch_only() {
    let (env, repo) = repo_world();
    let main_before = git(&repo, &["rev-parse", "main"]);
    let _daemon = env.start_daemon();
    let m = model(
        &env,
        "c.json",
        vec![tool(
            "Bash",
            json!({"command": "echo c > c.txt && git add c.txt && git -c user.name=A -c user.email=a@x commit -qm work"}),
        )],
    );
    let id = run_worktree(&env, &m, "confined");
    let a = wait_ended(&env, &id);
    let log = env.ctl(&["log", &id, "--json"]).expect_code(0).json();
    let result = log.as_array().unwrap()[2]["content"][0].clone();
    assert_ne!(result["is_error"], true, "{result}");
    // Its commit is work, kept, on its branch (through its quarantine,
    // DESIGN §23); nothing else of the repository moved.
    assert_eq!(a["worktree"]["state"], "kept");
    let branch = a["worktree"]["branch"].as_str().unwrap();
    assert_eq!(
        git(&repo, &["log", "--format=%s", &format!("main..{branch}")]),
        "work\n"
    );
    assert_eq!(git(&repo, &["rev-parse", "main"]), main_before);
    assert_eq!(git(&repo, &["rev-list", "--all", "--count"]).trim(), "2");
}
