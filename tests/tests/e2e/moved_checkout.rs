//! A checkout moved (`mv proj proj2`) with agents' worktrees in it
//! (DESIGN §9). The hostile review found its agents stranded: `rm`, `rm
//! --force` and `rm --discard-worktree` failed with "cannot open the
//! repository" and `worktrees` listed nothing while both trees remained.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::path::{Path, PathBuf};

use agentd_e2e::gitrepo::{git, init_repo};
use agentd_e2e::script::{script, text, tool, turn};
use agentd_e2e::{Env, Out};
use serde_json::{Value, json};

/// `agentctl ARGS` run from `dir`.
fn ctl_in(env: &Env, dir: &Path, args: &[&str]) -> Out {
    let mut full = vec!["--no-autostart"];
    full.extend_from_slice(args);
    Out::from(env.ctl_command(&full).current_dir(dir).output().unwrap())
}

/// A repository with an agent whose tree holds uncommitted work, then the
/// checkout moved: (agent id, the tree where it is now, the new checkout).
fn moved(env: &Env) -> (String, PathBuf, PathBuf) {
    let repo = env.project().canonicalize().unwrap();
    init_repo(&repo);
    let model = env.script(
        "work.json",
        &script(vec![
            turn(vec![tool(
                "Bash",
                json!({"command": "echo work > notes.txt"}),
            )]),
            turn(vec![text("done")]),
        ]),
    );
    let id = env
        .ctl(&[
            "run",
            "--worktree",
            "--background",
            "--model",
            &model,
            "work",
        ])
        .expect_code(0)
        .stdout
        .trim()
        .to_string();
    env.ctl(&["wait", &id, "--timeout", "30"]).expect_code(0);
    let shown = env.show(&id);
    assert_eq!(shown["worktree"]["state"], "kept", "{shown}");
    let short = shown["short_id"].as_str().unwrap().to_string();
    let moved_to = env.root.path().join("project2");
    std::fs::rename(&repo, &moved_to).unwrap();
    let tree = moved_to.join(".agentd/worktrees").join(&short);
    assert!(tree.join("notes.txt").is_file());
    (id, tree, moved_to)
}

fn listed(out: &Out) -> Vec<Value> {
    out.json().as_array().unwrap().clone()
}

#[test]
fn a_moved_checkout_is_found_from_inside_it_and_its_agents_follow() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let (id, tree, moved_to) = moved(&env);
    let elsewhere = env.root.path();
    // From elsewhere: the tree is not dropped from the list; it is missing,
    // with where it was and what to do.
    let rows = listed(ctl_in(&env, elsewhere, &["worktrees", "--json"]).expect_code(0));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["missing"], true, "{rows:?}");
    assert!(
        rows[0]["note"]
            .as_str()
            .is_some_and(|n| n.contains("moved or deleted") && n.contains("agentctl worktrees")),
        "{rows:?}"
    );
    // From inside the moved checkout: found where it is, git's records
    // repaired, and the agent's record follows.
    let rows = listed(ctl_in(&env, &moved_to, &["worktrees", "--json"]).expect_code(0));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["missing"], false, "{rows:?}");
    assert_eq!(rows[0]["path"], tree.display().to_string(), "{rows:?}");
    assert_eq!(rows[0]["agent_id"], id.as_str(), "{rows:?}");
    let shown = ctl_in(&env, elsewhere, &["show", &id, "--json"])
        .expect_code(0)
        .json();
    assert_eq!(shown["worktree"]["path"], tree.display().to_string());
    let listed_by_git = git(&moved_to, &["worktree", "list", "--porcelain"]);
    assert!(
        listed_by_git.contains(&tree.display().to_string()),
        "{listed_by_git}"
    );
    assert!(git(&tree, &["status", "--porcelain"]).contains("notes.txt"));
    // And it can be removed, from anywhere.
    let out = ctl_in(&env, elsewhere, &["rm", &id, "--discard-worktree"]);
    out.expect_code(0);
    assert!(!tree.exists(), "{}", out.stdout);
}

#[test]
fn rm_of_an_agent_whose_checkout_moved_says_where_the_tree_is_and_deletes_nothing() {
    let env = Env::new();
    let _daemon = env.start_daemon();
    let (id, tree, moved_to) = moved(&env);
    let elsewhere = env.root.path();
    // Discarding what cannot be found is refused, with the way out.
    let out = ctl_in(&env, elsewhere, &["rm", &id, "--discard-worktree"]);
    out.expect_code(1);
    assert!(out.stderr.contains("moved or deleted"), "{}", out.stderr);
    // A plain rm forgets the agent and keeps the tree, saying where.
    let out = ctl_in(&env, elsewhere, &["rm", &id, "--force"]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("could not reach its worktree")
            && out.stdout.contains("moved or deleted"),
        "{}",
        out.stdout
    );
    assert!(tree.join("notes.txt").is_file(), "nothing was deleted");
    // In its new place it is an orphan agentd lists (and would prune only
    // if it held no work).
    let rows = listed(ctl_in(&env, &moved_to, &["worktrees", "--json"]).expect_code(0));
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["orphan"], true, "{rows:?}");
    assert_eq!(rows[0]["path"], tree.display().to_string(), "{rows:?}");
    ctl_in(&env, &moved_to, &["worktrees", "prune"]).expect_code(0);
    assert!(tree.join("notes.txt").is_file(), "its work is kept");
}
