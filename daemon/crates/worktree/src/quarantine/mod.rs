//! Commits from a confined agent (DESIGN §23): git's receive quarantine,
//! made for one agent.
//!
//! A confined agent cannot write the repository's git directory: not its
//! objects and packs, refs, `config`, `hooks`. It gets a git directory of
//! its own instead, `<main checkout>/.agentd/quarantine/<short id>/git`,
//! which its namespace mounts where its tools look for `.git` (over the
//! tree's `.git` file; for an agent in the checkout itself over `.git`,
//! with the real one mounted read only at `…/base`, where the quarantine's
//! objects and config point). Its git commits, amends, rebases, stashes
//! and tags there exactly as unconfined, on its own branch; new objects go
//! into the quarantine, the repository's are read through `alternates`.
//!
//! The daemon, which is not confined, takes the agent's branch into the
//! repository (`migrate`): the objects it reaches that the repository
//! lacks, each verified (`objects`), then the ref, compare-and-swap against
//! the value it handed the agent (`state`), then the index. It does so at
//! the start and end of every run and before `diff`, `merge`, `worktrees`
//! and `rm`, so the person's `git log agentd/…` always works: objects go in
//! before the ref, so a crash between the two leaves a ref whose objects
//! are all there (the old one) and objects nothing names yet.
//!
//! What stays in the quarantine: the agent's stash, tags and reflogs, and
//! whatever it wrote that its branch does not reach.

mod files;
mod index;
mod layout;
mod objects;
mod state;

use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use agentd_sandbox::GitQuarantine;
use agentd_sandbox::beneath;
use agentd_sandbox::pid_namespace::{Bind, FileId};
use agentd_shared::sync::Unpoisoned as _;
use git2::{ObjectType, Oid, Repository};

use crate::WorktreeError;
use layout::RealDirs;
use state::State;

/// Where quarantines live in the main checkout.
pub const QUARANTINE_DIR: &str = ".agentd/quarantine";
/// What agentd adds to `.git/info/exclude` for them.
pub const EXCLUDE_LINE: &str = "/.agentd/quarantine/";
/// The largest `packed-refs` of a quarantine agentd reads.
const MAX_PACKED_REFS: u64 = 64 * 1024 * 1024;

/// Where an agent's tools do git.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Place {
    /// The repository's main checkout (the quarantine lives in it).
    pub main: PathBuf,
    /// The repository's common git directory.
    pub common: PathBuf,
    /// The working tree's own git directory (`common` for the main
    /// checkout, `common/worktrees/<name>` for a linked tree).
    pub gitdir: PathBuf,
    /// The working tree's root, whose `.git` the namespace replaces.
    pub root: PathBuf,
    /// `root/.git` is a directory (the main checkout), not a file.
    pub dot_git_dir: bool,
    /// The branch the agent commits to (`refs/heads/…`).
    pub branch: String,
    /// The agent's short id: names its quarantine.
    pub name: String,
}

/// What a migration did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Migrated {
    /// The branch moved from → to.
    pub moved: Option<(Option<Oid>, Oid)>,
    /// Objects taken into the repository.
    pub objects: usize,
    /// Both the agent and someone else moved the branch: the agent's
    /// commit was kept at this ref, the branch left as it was.
    pub diverged: Option<String>,
}

/// The ref a diverged quarantine's commit is kept at.
pub fn diverged_ref(name: &str) -> String {
    format!("refs/agentd/diverged/{name}")
}

fn git_err(what: &str) -> impl Fn(git2::Error) -> WorktreeError + '_ {
    move |e| crate::git_error(what, e)
}

fn io_err(what: &str) -> impl Fn(std::io::Error) -> WorktreeError + '_ {
    move |e| WorktreeError::refused(format!("{what}: {e}"))
}

/// Where the agent working in `workspace` (its tree, or its working
/// directory) does git; None where no quarantine applies: not in a
/// repository, a bare one, or a detached `HEAD` (nothing to commit onto).
pub fn locate(workspace: &Path, name: &str) -> Result<Option<Place>, WorktreeError> {
    let Ok(repo) = Repository::discover(workspace) else {
        return Ok(None);
    };
    let Some(root) = repo.workdir() else {
        return Ok(None);
    };
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let root = canon(root);
    let common = canon(repo.commondir());
    let gitdir = canon(repo.path());
    let Some(main) = common
        .parent()
        .filter(|_| common.file_name().is_some_and(|f| f == ".git"))
        .map(Path::to_path_buf)
    else {
        return Ok(None);
    };
    let head = repo
        .find_reference("HEAD")
        .map_err(git_err("cannot read HEAD"))?;
    let Some(branch) = head
        .symbolic_target()
        .filter(|b| b.starts_with("refs/heads/"))
        .map(str::to_string)
    else {
        return Ok(None);
    };
    let dot_git = root.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).map_err(io_err("cannot read .git"))?;
    if meta.file_type().is_symlink() {
        return Err(WorktreeError::refused(format!(
            "{} is a symbolic link; agentd does not work in a repository reached through one; replace it with the repository itself",
            dot_git.display()
        )));
    }
    Ok(Some(Place {
        main,
        common,
        gitdir,
        root,
        dot_git_dir: meta.is_dir(),
        branch,
        name: name.to_string(),
    }))
}

/// One migration or preparation at a time (per process): they read and
/// write the same quarantine and state.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE.locked()
}

/// The opened places of a quarantine.
struct Opened {
    repo: Repository,
    real: RealDirs,
    /// `<main>/.agentd/quarantine/<name>`.
    qdir: OwnedFd,
    qdir_path: PathBuf,
}

impl Opened {
    fn open(place: &Place, make: bool) -> Result<Option<Opened>, WorktreeError> {
        let main = beneath::open_dir(&place.main).map_err(io_err("cannot open the checkout"))?;
        let rel = format!("{QUARANTINE_DIR}/{}", place.name);
        let qdir = match files::dir(&main, &rel, make) {
            Ok(d) => d,
            Err(e) if !make && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(WorktreeError::refused(format!(
                    "cannot open the agent's git quarantine {} ({e}); it must be a real directory, not a link",
                    place.main.join(&rel).display()
                )));
            }
        };
        let repo = Repository::open(&place.root).map_err(git_err("cannot open the repository"))?;
        let real = RealDirs {
            common: beneath::open_dir(&place.common)
                .map_err(io_err("cannot open the git directory"))?,
            gitdir: beneath::open_dir(&place.gitdir)
                .map_err(io_err("cannot open the git directory"))?,
        };
        Ok(Some(Opened {
            repo,
            real,
            qdir,
            qdir_path: place.main.join(rel),
        }))
    }

    fn qgit(&self, make: bool) -> Result<OwnedFd, WorktreeError> {
        files::dir(&self.qdir, "git", make).map_err(io_err("cannot open the agent's git directory"))
    }
}

/// Readies the quarantine of `place` for a run (taking in what a run
/// before left first) and says how the agent's namespace is to mount it.
pub fn prepare(place: &Place) -> Result<GitQuarantine, WorktreeError> {
    let _one = one_at_a_time();
    if let Some(opened) = Opened::open(place, false)? {
        migrate_opened(place, &opened)?;
    }
    let opened = Opened::open(place, true)?
        .ok_or_else(|| WorktreeError::refused("cannot make the agent's git quarantine"))?;
    if let Err(e) = exclude(place) {
        // Only `git status` is the worse for it: the run goes on.
        tracing::warn!(repo = %place.main.display(), error = %e, "cannot add the quarantines to info/exclude");
    }
    let qgit = opened.qgit(true)?;
    let base_dir = files::dir(&opened.qdir, "base", true)
        .map_err(io_err("cannot make the quarantine's base"))?;
    let real = if place.dot_git_dir {
        opened.qdir_path.join("base")
    } else {
        place.common.clone()
    };
    layout::lay_out(place, &opened.repo, &opened.real, &qgit, &real)?;
    let value = opened.repo.refname_to_id(&place.branch).ok();
    layout::set_branch(&qgit, &place.branch, value)?;
    let dotgit = format!("gitdir: {}\n", opened.qdir_path.join("git").display());
    files::put(&opened.qdir, "dotgit", dotgit.as_bytes())
        .map_err(io_err("cannot write the quarantine's .git file"))?;
    State {
        branch: place.branch.clone(),
        base: value,
        index: Some(index::digest_at(&place.gitdir.join("index"))?),
    }
    .write(&opened.real.common, &place.name)
    .map_err(io_err("cannot record the quarantine's state"))?;
    let id = |fd: &OwnedFd| FileId::of(fd).map_err(io_err("cannot identify a quarantine path"));
    let dot_git = nix::fcntl::open(
        &place.root.join(".git"),
        nix::fcntl::OFlag::O_PATH | nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_CLOEXEC,
        nix::sys::stat::Mode::empty(),
    )
    .map_err(|e| io_err("cannot open .git")(beneath::io(e)))?;
    // Its own config and hooks are read only to it too (mounted over
    // themselves, before its git directory is mounted where git looks).
    let qgit_path = opened.qdir_path.join("git");
    let hooks =
        files::dir(&qgit, "hooks", true).map_err(io_err("cannot make the quarantine's hooks"))?;
    let config = beneath::open(
        &qgit,
        Path::new("config"),
        nix::fcntl::OFlag::O_PATH,
        0,
        beneath::Links::Refused,
    )
    .map_err(io_err("cannot open the quarantine's config"))?;
    let same = |path: PathBuf, fd: &OwnedFd| -> Result<Bind, WorktreeError> {
        Ok(Bind {
            source: path.clone(),
            source_id: id(fd)?,
            target: path,
            target_id: id(fd)?,
            read_only: true,
        })
    };
    let own = [
        same(qgit_path.join("config"), &config)?,
        same(qgit_path.join("hooks"), &hooks)?,
    ];
    let binds = if place.dot_git_dir {
        let mut binds = vec![Bind {
            source: place.root.join(".git"),
            source_id: id(&dot_git)?,
            target: opened.qdir_path.join("base"),
            target_id: id(&base_dir)?,
            read_only: true,
        }];
        binds.extend(own);
        binds.push(Bind {
            source: qgit_path,
            source_id: id(&qgit)?,
            target: place.root.join(".git"),
            target_id: id(&dot_git)?,
            read_only: false,
        });
        binds
    } else {
        let file = beneath::open(
            &opened.qdir,
            Path::new("dotgit"),
            nix::fcntl::OFlag::O_PATH,
            0,
            beneath::Links::Refused,
        )
        .map_err(io_err("cannot open the quarantine's .git file"))?;
        let mut binds = own.to_vec();
        binds.push(Bind {
            source: opened.qdir_path.join("dotgit"),
            source_id: id(&file)?,
            target: place.root.join(".git"),
            target_id: id(&dot_git)?,
            read_only: false,
        });
        binds
    };
    Ok(GitQuarantine {
        writable: opened.qdir_path,
        binds,
    })
}

/// Adds the quarantines to the repository's `info/exclude`.
fn exclude(place: &Place) -> Result<(), WorktreeError> {
    let places = crate::Places::verify(&place.main, &place.common, true)?;
    places.exclude_line(&place.common, EXCLUDE_LINE)
}

/// Takes the agent's branch (and what it needs) from the quarantine of
/// `place` into the repository; nothing when it has no quarantine.
pub fn migrate(place: &Place) -> Result<Migrated, WorktreeError> {
    let _one = one_at_a_time();
    match Opened::open(place, false)? {
        Some(opened) => migrate_opened(place, &opened),
        None => Ok(Migrated::default()),
    }
}

/// The agent's value of its branch: its loose ref, else its packed one.
fn agent_branch(qgit: &OwnedFd, branch: &str) -> Result<Option<Oid>, WorktreeError> {
    let read =
        |rel: &str, cap| files::read(qgit, rel, cap).map_err(io_err("cannot read the agent's ref"));
    let parse = |s: &str| {
        Oid::from_str(s.trim())
            .ok()
            .filter(|_| s.trim().len() == 40)
    };
    if let Some(loose) = read(branch, 128)? {
        let text = String::from_utf8_lossy(&loose);
        return parse(&text).map(Some).ok_or_else(|| {
            WorktreeError::refused(format!("the agent's {branch} holds no commit id"))
        });
    }
    let Some(packed) = read("packed-refs", MAX_PACKED_REFS)? else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(&packed);
    Ok(text
        .lines()
        .filter_map(|l| l.split_once(' '))
        .find(|(_, name)| *name == branch)
        .and_then(|(id, _)| parse(id)))
}

fn migrate_opened(place: &Place, opened: &Opened) -> Result<Migrated, WorktreeError> {
    let mut done = Migrated::default();
    let Ok(qgit) = opened.qgit(false) else {
        return Ok(done);
    };
    let repo = &opened.repo;
    let state = State::read(&opened.real.common, &place.name)
        .map_err(io_err("cannot read the quarantine's state"))?;
    let Some(state) = state.filter(|s| s.branch == place.branch) else {
        // Never handed out for this branch: nothing the agent did here is
        // the daemon's to take.
        return Ok(done);
    };
    let Some(theirs) = agent_branch(&qgit, &place.branch)? else {
        return Ok(done);
    };
    let ours = repo.refname_to_id(&place.branch).ok();
    let copied = std::cell::OnceCell::new();
    let copy = || -> Result<&objects::Copied, WorktreeError> {
        if let Some(c) = copied.get() {
            return Ok(c);
        }
        let c = objects::Copied::from(&qgit)?;
        Ok(copied.get_or_init(|| c))
    };
    let mut next = state.clone();
    if Some(theirs) == ours {
        next.base = ours;
    } else {
        done.objects = objects::migrate(repo, copy()?, &[(theirs, Some(ObjectType::Commit))])?;
        repo.find_commit(theirs)
            .and_then(|c| c.tree().map(|_| ()))
            .map_err(git_err("the agent's commit is not whole in the repository"))?;
        let fast_forward =
            ours.is_none_or(|o| repo.graph_descendant_of(theirs, o).unwrap_or(false));
        if ours == state.base || fast_forward {
            let msg = format!("agentd: commits of agent {}", place.name);
            match ours {
                Some(o) => repo.reference_matching(&place.branch, theirs, true, o, &msg),
                None => repo.reference(&place.branch, theirs, false, &msg),
            }
            .map_err(git_err("cannot move the branch (it moved meanwhile)"))?;
            done.moved = Some((ours, theirs));
            next.base = Some(theirs);
        } else if Some(theirs) != state.base {
            // Both moved: the branch stays someone else's; the agent's
            // commit is kept, and the agent sees the branch as it is.
            let kept = diverged_ref(&place.name);
            repo.reference(&kept, theirs, true, "agentd: the agent's diverged commit")
                .map_err(git_err("cannot keep the agent's commit"))?;
            done.diverged = Some(kept);
            layout::set_branch(&qgit, &place.branch, ours)?;
            next.base = ours;
        } else {
            // Only the branch moved: the agent's view follows.
            layout::set_branch(&qgit, &place.branch, ours)?;
            next.base = ours;
        }
    }
    if done.moved.is_some() {
        let real_index = place.gitdir.join("index");
        if state.index.as_deref() == Some(index::digest_at(&real_index)?.as_str()) {
            index::adopt(repo, copy()?, &qgit, &real_index)?;
        }
    }
    next.index = Some(index::digest_at(&place.gitdir.join("index"))?);
    if next != state {
        next.write(&opened.real.common, &place.name)
            .map_err(io_err("cannot record the quarantine's state"))?;
    }
    Ok(done)
}

/// Removes the quarantine of `place` (its agent is removed), after
/// taking in its branch.
pub fn remove(place: &Place) -> Result<Migrated, WorktreeError> {
    let _one = one_at_a_time();
    let Some(opened) = Opened::open(place, false)? else {
        return Ok(Migrated::default());
    };
    let done = migrate_opened(place, &opened)?;
    drop(opened);
    discard_locked(&place.main, &place.common, &place.name)?;
    Ok(done)
}

/// Removes the quarantine `name` of the repository whose main checkout is
/// `main` without taking anything in: its tree and branch were removed
/// as holding no work (what it committed was taken in, and counted, first).
pub fn discard(main: &Path, common: &Path, name: &str) -> Result<(), WorktreeError> {
    let _one = one_at_a_time();
    discard_locked(main, common, name)
}

fn discard_locked(main: &Path, common: &Path, name: &str) -> Result<(), WorktreeError> {
    let root = beneath::open_dir(main).map_err(io_err("cannot open the checkout"))?;
    let parent = match files::dir(&root, QUARANTINE_DIR, false) {
        Ok(p) => p,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_err("cannot open the quarantines")(e)),
    };
    let gone = format!(".removing-{name}");
    match nix::fcntl::renameat(&parent, name, &parent, gone.as_str()) {
        Ok(()) => {}
        Err(nix::errno::Errno::ENOENT) => {}
        Err(e) => return Err(io_err("cannot remove the quarantine")(beneath::io(e))),
    }
    let path = beneath::fd_path(&parent).join(&gone);
    if path.exists() {
        // remove_dir_all follows no link inside.
        std::fs::remove_dir_all(&path).map_err(io_err("cannot remove the quarantine"))?;
    }
    let common = beneath::open_dir(common).map_err(io_err("cannot open the git directory"))?;
    State::remove(&common, name).map_err(io_err("cannot remove the quarantine's state"))
}

#[cfg(test)]
mod tests;
