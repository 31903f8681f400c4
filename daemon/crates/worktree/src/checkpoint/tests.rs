//! Checkpoints of real directories in a real shadow store.

use std::path::Path;

use super::*;

fn store() -> (tempfile::TempDir, Shadow, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(ws.join("src")).expect("mkdir");
    std::fs::write(ws.join("README"), "hello\n").expect("write");
    std::fs::write(ws.join("src/lib.rs"), "fn a() {}\n").expect("write");
    let shadow = Shadow::open(&dir.path().join("shadow.git")).expect("open");
    (dir, shadow, ws)
}

fn read(ws: &Path, rel: &str) -> Option<String> {
    std::fs::read_to_string(ws.join(rel)).ok()
}

#[test]
fn a_rewind_puts_back_what_changed_however_it_changed_and_removes_what_was_made() {
    let (_d, shadow, ws) = store();
    std::os::unix::fs::symlink("README", ws.join("link")).expect("link");
    let first = shadow.record(&ws, "t1", "turn 1").expect("record").tree;
    // Changed, removed, made, a link retargeted, a directory made.
    std::fs::write(ws.join("README"), "changed\n").expect("write");
    std::fs::remove_file(ws.join("src/lib.rs")).expect("rm");
    std::fs::create_dir_all(ws.join("new/deep")).expect("mkdir");
    std::fs::write(ws.join("new/deep/file"), "new\n").expect("write");
    std::fs::remove_file(ws.join("link")).expect("rm");
    std::os::unix::fs::symlink("/etc/passwd", ws.join("link")).expect("link");
    let second = shadow.record(&ws, "t2", "turn 2").expect("record").tree;
    let mut changed: Vec<String> = shadow
        .changed(Some(first), second)
        .expect("changed")
        .into_iter()
        .map(|c| format!("{} {}", c.status, c.path))
        .collect();
    changed.sort();
    assert_eq!(
        changed,
        ["A new/deep/file", "D src/lib.rs", "M README", "M link"]
    );
    let mut seen = Vec::new();
    let done = restore(&shadow, &ws, first, &mut |p| seen.push(p.to_string())).expect("restore");
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert_eq!(done.removed, ["new/deep/file"]);
    assert_eq!(read(&ws, "README").as_deref(), Some("hello\n"));
    assert_eq!(read(&ws, "src/lib.rs").as_deref(), Some("fn a() {}\n"));
    assert!(
        !ws.join("new").exists(),
        "the directories made since go too"
    );
    assert_eq!(
        std::fs::read_link(ws.join("link")).expect("link"),
        Path::new("README")
    );
    // Restoring again changes nothing (a restore a crash cut short is
    // finished by doing it again).
    let again = restore(&shadow, &ws, first, &mut |_| {}).expect("again");
    assert_eq!(again, Restored::default());
}

#[test]
fn only_what_changed_is_read_again() {
    let (_d, shadow, ws) = store();
    for i in 0..500 {
        std::fs::write(ws.join(format!("src/f{i}.txt")), format!("{i}\n")).expect("write");
    }
    let first = shadow.record(&ws, "t1", "one").expect("record");
    assert!(first.walked.read >= 502, "{:?}", first.walked);
    // Settle past the racy window: the next walk starts after the files'
    // change times.
    std::thread::sleep(std::time::Duration::from_millis(20));
    shadow.record(&ws, "t1b", "settled").expect("record");
    std::fs::write(ws.join("src/f7.txt"), "seven\n").expect("write");
    let second = shadow.record(&ws, "t2", "two").expect("record");
    assert_eq!(second.walked.read, 1, "{:?}", second.walked);
    assert_eq!(second.walked.entries, first.walked.entries);
    let changed = shadow
        .changed(Some(first.tree), second.tree)
        .expect("changed");
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].path, "src/f7.txt");
}

#[test]
fn links_fifos_big_files_and_dependency_dirs_are_not_followed_or_read() {
    let (d, shadow, ws) = store();
    let secret = d.path().join("secret");
    std::fs::write(&secret, "the key\n").expect("write");
    std::os::unix::fs::symlink(&secret, ws.join("innocent")).expect("link");
    std::os::unix::fs::symlink(d.path(), ws.join("outside-dir")).expect("link");
    nix::unistd::mkfifo(
        &ws.join("fifo"),
        nix::sys::stat::Mode::from_bits_truncate(0o600),
    )
    .expect("fifo");
    std::fs::write(ws.join("big"), vec![b'x'; 9 * 1024 * 1024]).expect("write");
    std::fs::create_dir_all(ws.join("node_modules/pkg")).expect("mkdir");
    std::fs::write(ws.join("node_modules/pkg/index.js"), "x").expect("write");
    std::fs::write(ws.join(".git"), "gitdir: /elsewhere\n").expect("write");
    let rec = shadow.record(&ws, "t1", "one").expect("record");
    let repo = shadow.repo();
    let tree = repo.find_tree(rec.tree).expect("tree");
    let blob = |p: &str| {
        let e = tree.get_path(Path::new(p)).expect(p);
        repo.find_blob(e.id()).expect("blob").content().to_vec()
    };
    assert_eq!(
        blob("innocent"),
        secret.display().to_string().into_bytes(),
        "a link is its target's name"
    );
    assert_eq!(
        tree.get_path(Path::new("innocent")).expect("e").filemode(),
        0o120000
    );
    for gone in ["fifo", "big", "node_modules", "outside-dir/secret", ".git"] {
        assert!(
            tree.get_path(Path::new(gone)).is_err(),
            "{gone} is not recorded"
        );
    }
    assert!(rec.walked.skipped.iter().any(|p| p == Path::new("big")));
}

#[test]
fn what_the_person_changed_since_the_agent_is_refused_by_name_unless_forced() {
    let (_d, shadow, ws) = store();
    let first = shadow.record(&ws, "t1", "one").expect("record").tree;
    std::fs::write(ws.join("README"), "agent\n").expect("write");
    let end = shadow
        .record(&ws, "end", "the agent's end")
        .expect("record")
        .tree;
    // The person edits after the agent ended.
    std::fs::write(ws.join("README"), "person\n").expect("write");
    let err = check(&shadow, &ws, first, end).unwrap_err();
    assert!(err.to_string().contains("README"), "{err}");
    assert_eq!(
        read(&ws, "README").as_deref(),
        Some("person\n"),
        "nothing changed"
    );
    // A file the person made is a conflict too (the rewind would remove
    // it); one they changed back is not.
    std::fs::write(ws.join("README"), "agent\n").expect("write");
    std::fs::write(ws.join("notes"), "mine\n").expect("write");
    let err = check(&shadow, &ws, first, end).unwrap_err();
    assert!(
        err.to_string().contains("notes") && !err.to_string().contains("README"),
        "{err}"
    );
    std::fs::write(ws.join("README"), "person\n").expect("write");
    std::fs::remove_file(ws.join("notes")).expect("rm");
    restore(&shadow, &ws, first, &mut |_| {}).expect("forced");
    assert_eq!(read(&ws, "README").as_deref(), Some("hello\n"));
}

#[test]
fn a_forgotten_checkpoint_is_collected() {
    let (_d, shadow, ws) = store();
    std::fs::write(ws.join("only-once"), "unique content 81723\n").expect("write");
    let one = shadow.record(&ws, "t1", "one").expect("record").tree;
    std::fs::remove_file(ws.join("only-once")).expect("rm");
    shadow.record(&ws, "t2", "two").expect("record");
    let blob = shadow
        .repo()
        .find_tree(one)
        .expect("tree")
        .get_name("only-once")
        .expect("e")
        .id();
    shadow.forget("t1").expect("forget");
    shadow.forget("before-rewind").expect("forget");
    shadow.collect().expect("gc");
    let reopened = Shadow::open(shadow.dir()).expect("open");
    assert!(reopened.repo().find_blob(blob).is_err(), "collected");
    assert_eq!(reopened.list().expect("list").len(), 1);
}
