#![allow(clippy::unwrap_used)]

use std::io::Read as _;
use std::path::Path;
use std::time::Duration;

use super::*;

fn modes() -> Vec<Mode> {
    let mut modes = vec![support().unwrap()];
    // As root, the way people get (in a user namespace) is tried too.
    if modes[0] == Mode::Direct {
        modes.push(Mode::UserNamespace);
    }
    modes
}

/// Runs `script` with `bash -c` in `ns`; its stdout and exit status.
fn run_in(ns: &AgentNamespace, script: &str) -> (String, std::process::ExitStatus) {
    let mut cmd = std::process::Command::new("bash");
    cmd.arg("-c")
        .arg(script)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    ns.join(&mut cmd, Path::new("/tmp"), || Ok(())).unwrap();
    let mut child = cmd.spawn().unwrap();
    let mut out = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    (out, child.wait().unwrap())
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        !s.rsplit_once(')')
            .is_some_and(|(_, r)| r.trim_start().starts_with(['Z', 'X']))
    })
}

/// Pids (the daemon's numbering) of the processes whose command line holds
/// `tag`.
fn with_tag(tag: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline).contains(tag) && alive(pid) {
            out.push(pid);
        }
    }
    out
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    for _ in 0..500 {
        if ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn commands_share_the_agents_namespace_and_see_each_other() {
    for mode in modes() {
        let ns = AgentNamespace::make(mode, false, &[]).await.unwrap();
        assert!(ns.own_proc(), "{mode:?}: the namespace has its own /proc");
        let tag = format!("agentd-test-{}", uuid::Uuid::new_v4().simple());
        let (_, status) = run_in(
            &ns,
            &format!("(exec -a {tag} sleep 300 >/dev/null 2>&1 &); echo started"),
        );
        assert!(status.success(), "{mode:?}");
        // The next command sees it by its own numbering, and can stop it.
        let (out, status) = run_in(&ns, &format!("pgrep -f ^{tag} && pkill -f ^{tag}"));
        assert!(status.success(), "{mode:?}: {out}");
        let pid: i32 = out.trim().parse().unwrap();
        assert!(pid < 100, "{mode:?}: a pid of the namespace: {pid}");
        wait_for("the server to stop", || with_tag(&tag).is_empty());
        // Exit codes and signals come back as the command's own.
        let (_, status) = run_in(&ns, "exit 7");
        assert_eq!(status.code(), Some(7), "{mode:?}");
        let (_, status) = run_in(&ns, "kill -TERM $$");
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGTERM),
            "{mode:?}"
        );
    }
}

#[tokio::test]
async fn nothing_started_in_it_outlives_the_namespace() {
    for mode in modes() {
        let mut ns = AgentNamespace::make(mode, false, &[]).await.unwrap();
        let tag = format!("agentd-test-{}", uuid::Uuid::new_v4().simple());
        // Leaves the session, the environment, the process tree and its
        // name behind.
        let (_, status) = run_in(
            &ns,
            &format!(
                "(setsid env -i nohup bash -c '(exec -a {tag} sleep 300 &)' >/dev/null 2>&1 &); exit 0"
            ),
        );
        assert!(status.success());
        wait_for("the survivor to start", || with_tag(&tag).len() == 1);
        assert!(ns.alive());
        drop(ns);
        wait_for("the survivor to die with its namespace", || {
            with_tag(&tag).is_empty()
        });
    }
}

#[tokio::test]
async fn commands_run_in_a_namespace_other_than_the_daemons() {
    let ns = AgentNamespace::make(support().unwrap(), false, &[])
        .await
        .unwrap();
    let (out, _) = run_in(&ns, "readlink /proc/self/ns/pid");
    let ours = std::fs::read_link("/proc/self/ns/pid").unwrap();
    assert!(out.trim().starts_with("pid:["), "{out}");
    assert_ne!(out.trim(), ours.to_string_lossy(), "{out}");
    assert_ne!(namespace_of("self"), None);
}

#[tokio::test]
async fn a_namespace_whose_init_died_is_seen_as_dead() {
    let mut ns = AgentNamespace::make(support().unwrap(), false, &[])
        .await
        .unwrap();
    let keeper = ns.keeper.id().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(keeper as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    wait_for("the keeper to die", || !ns.alive());
}

#[tokio::test]
async fn a_network_namespace_has_only_loopback_and_the_proxy_listener() {
    for mode in modes() {
        let mut ns = AgentNamespace::make(mode, true, &[]).await.unwrap();
        let port = ns.proxy_port().expect("a proxy port");
        let listener = ns.take_proxy_listener().expect("the listener");
        assert_eq!(listener.local_addr().unwrap().port(), port);
        // The daemon's loopback is not the namespace's: a listener of the
        // daemon's cannot be reached from inside.
        let outside = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let outside_port = outside.local_addr().unwrap().port();
        let (out, status) = run_in(
            &ns,
            &format!(
                "cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '; \
                 (exec 3<>/dev/tcp/127.0.0.1/{outside_port}) 2>/dev/null && echo reached-outside; \
                 (exec 3<>/dev/tcp/127.0.0.1/{port}) && echo reached-proxy"
            ),
        );
        assert!(status.success(), "{mode:?}: {out}");
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.first(), Some(&"lo"), "{mode:?}: {out}");
        assert!(!out.contains("reached-outside"), "{mode:?}: {out}");
        assert!(out.contains("reached-proxy"), "{mode:?}: {out}");
        // The connection from inside arrives on the daemon's listener.
        listener.set_nonblocking(false).unwrap();
        let (_, from) = listener.accept().unwrap();
        assert!(from.ip().is_loopback(), "{from}");
    }
}

fn id_of(path: &Path) -> FileId {
    FileId::of(std::fs::File::open(path).unwrap()).unwrap()
}

fn bind(source: &Path, target: &Path, read_only: bool) -> Bind {
    Bind {
        source: source.to_path_buf(),
        source_id: id_of(source),
        target: target.to_path_buf(),
        target_id: id_of(target),
        read_only,
    }
}

#[tokio::test]
async fn binds_show_inside_the_namespace_only_and_read_only_ones_refuse_writes() {
    for mode in modes() {
        let dir = tempfile::tempdir().unwrap();
        let (real, shown, file, over) = (
            dir.path().join("real"),
            dir.path().join("shown"),
            dir.path().join("file"),
            dir.path().join("over"),
        );
        std::fs::create_dir(&real).unwrap();
        std::fs::write(real.join("config"), "the real one").unwrap();
        std::fs::create_dir(&shown).unwrap();
        std::fs::write(&file, "gitdir: elsewhere").unwrap();
        std::fs::write(&over, "gitdir: the real one").unwrap();
        let binds = [bind(&real, &shown, true), bind(&file, &over, false)];
        let ns = AgentNamespace::make(mode, false, &binds).await.unwrap();
        let script = format!(
            "cat {shown}/config; echo; cat {over}; echo; echo x > {shown}/new && echo wrote; echo y > {over} && echo rewrote",
            shown = shown.display(),
            over = over.display()
        );
        let (out, _) = run_in(&ns, &script);
        assert_eq!(
            out, "the real one\ngitdir: elsewhere\nrewrote\n",
            "{mode:?}: the read-only bind refused the write, the other took it"
        );
        // Outside, nothing moved: the daemon's view is the real one.
        assert!(
            std::fs::read_dir(&shown).unwrap().next().is_none(),
            "{mode:?}"
        );
        assert_eq!(
            std::fs::read_to_string(&over).unwrap(),
            "gitdir: the real one"
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "y\n", "{mode:?}");
    }
}

#[tokio::test]
async fn a_bind_whose_path_was_swapped_since_it_was_checked_is_not_made() {
    let dir = tempfile::tempdir().unwrap();
    let (source, target, secret) = (
        dir.path().join("git"),
        dir.path().join("dotgit"),
        dir.path().join("secret"),
    );
    for d in [&source, &target, &secret] {
        std::fs::create_dir(d).unwrap();
    }
    let checked = bind(&source, &target, false);
    // The agent swaps the source for a link to what it wants writable
    // (the checked directory kept, so its inode number is not reused).
    std::fs::rename(&source, dir.path().join("kept")).unwrap();
    std::os::unix::fs::symlink(&secret, &source).unwrap();
    let err = AgentNamespace::make(support().unwrap(), false, std::slice::from_ref(&checked))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("replaced since agentd checked it"),
        "{err}"
    );
    // The same for another directory put in its place.
    std::fs::remove_file(&source).unwrap();
    std::fs::create_dir(&source).unwrap();
    let err = AgentNamespace::make(support().unwrap(), false, &[checked])
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("replaced since agentd checked it"),
        "{err}"
    );
}
