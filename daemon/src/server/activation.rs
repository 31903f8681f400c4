//! Socket activation (systemd's `sd_listen_fds` protocol): a listener the
//! service manager bound and passed as fd 3, with `LISTEN_FDS` and
//! `LISTEN_PID` in the environment. It is validated — one fd, meant for
//! this process, a listening Unix stream socket bound to a path — and
//! anything else is an error the daemon exits with: a daemon that served
//! nothing, or the wrong thing, would leave every client hanging.

use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;

use nix::fcntl::{FcntlArg, FdFlag, OFlag, fcntl};
use nix::sys::socket::{
    AddressFamily, SockType, SockaddrLike, SockaddrStorage, getsockname, getsockopt, sockopt,
};
use nix::sys::stat::{SFlag, fstat};

/// The first passed fd (`SD_LISTEN_FDS_START`).
const FIRST_FD: i32 = 3;

/// Why an inherited socket cannot be served.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    #[error(
        "LISTEN_FDS is set but LISTEN_PID is not: refusing to guess whether the sockets are meant for this process"
    )]
    NoPid,
    #[error(
        "LISTEN_PID is {listen_pid}, not this process ({me}): the sockets were passed to another process; start agentd without LISTEN_FDS/LISTEN_PID"
    )]
    OtherProcess { listen_pid: String, me: u32 },
    #[error("LISTEN_FDS={0:?} is not a count of file descriptors")]
    BadCount(String),
    #[error(
        "{0} sockets were passed (LISTEN_FDS); agentd serves exactly one: give agentd.socket a single ListenStream"
    )]
    Count(usize),
    #[error(
        "the passed fd 3 is not a listening Unix stream socket bound to a path ({0}); agentd.socket needs ListenStream=%t/agentd/agentd.sock"
    )]
    Unsuitable(&'static str),
    #[error("cannot inspect the passed fd 3: {0}")]
    Inspect(nix::Error),
}

/// A listener handed over by the service manager, and the path it is
/// bound to.
#[derive(Debug)]
pub struct Inherited {
    pub listener: UnixListener,
    pub path: PathBuf,
}

fn take_env(name: &str) -> Option<String> {
    let value = std::env::var(name).ok();
    // SAFETY: called from `take` in main before any other thread exists.
    #[allow(unsafe_code)]
    unsafe {
        std::env::remove_var(name)
    };
    value
}

/// Takes the listener passed by socket activation, if any. Must run before
/// any thread starts: it removes `LISTEN_*` from the environment, so that
/// no tool process inherits them, and marks the fd close-on-exec.
pub fn take() -> Result<Option<Inherited>, ActivationError> {
    let fds = take_env("LISTEN_FDS");
    let pid = take_env("LISTEN_PID");
    let _names = take_env("LISTEN_FDNAMES");
    let Some(fds) = fds else {
        return Ok(None);
    };
    let me = std::process::id();
    match pid {
        None => return Err(ActivationError::NoPid),
        Some(p) if p.trim().parse::<u32>().ok() != Some(me) => {
            return Err(ActivationError::OtherProcess {
                listen_pid: p.chars().take(16).collect(),
                me,
            });
        }
        Some(_) => {}
    }
    let count: usize = fds
        .trim()
        .parse()
        .map_err(|_| ActivationError::BadCount(fds.chars().take(16).collect()))?;
    match count {
        0 => return Ok(None),
        1 => {}
        n => return Err(ActivationError::Count(n)),
    }
    let path = validate(FIRST_FD)?;
    // SAFETY: fd 3 was passed to this process by its service manager for it
    // to own (LISTEN_PID is this process), was checked above to be an open
    // socket, and nothing else in the process uses it.
    #[allow(unsafe_code)]
    let fd = unsafe { OwnedFd::from_raw_fd(FIRST_FD) };
    fcntl(&fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(ActivationError::Inspect)?;
    let flags = fcntl(&fd, FcntlArg::F_GETFL).map_err(ActivationError::Inspect)?;
    fcntl(
        &fd,
        FcntlArg::F_SETFL(OFlag::from_bits_truncate(flags) | OFlag::O_NONBLOCK),
    )
    .map_err(ActivationError::Inspect)?;
    Ok(Some(Inherited {
        listener: UnixListener::from(fd),
        path,
    }))
}

/// Checks that `fd` is a listening Unix stream socket bound to a path, and
/// returns the path.
fn validate(fd: i32) -> Result<PathBuf, ActivationError> {
    // SAFETY: the borrow lives only for these calls; fd 3 stays open.
    #[allow(unsafe_code)]
    let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
    let stat = fstat(borrowed).map_err(|e| match e {
        nix::Error::EBADF => ActivationError::Unsuitable("fd 3 is not open"),
        e => ActivationError::Inspect(e),
    })?;
    if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFSOCK {
        return Err(ActivationError::Unsuitable("it is not a socket"));
    }
    if getsockopt(&borrowed, sockopt::SockType).map_err(ActivationError::Inspect)?
        != SockType::Stream
    {
        return Err(ActivationError::Unsuitable("it is not a stream socket"));
    }
    let addr: SockaddrStorage = getsockname(fd).map_err(ActivationError::Inspect)?;
    if addr.family() != Some(AddressFamily::Unix) {
        return Err(ActivationError::Unsuitable("it is not a Unix socket"));
    }
    let Some(path) = addr.as_unix_addr().and_then(|u| u.path()) else {
        return Err(ActivationError::Unsuitable("it is not bound to a path"));
    };
    if !getsockopt(&borrowed, sockopt::AcceptConn).map_err(ActivationError::Inspect)? {
        return Err(ActivationError::Unsuitable("it is not listening"));
    }
    Ok(path.to_path_buf())
}
