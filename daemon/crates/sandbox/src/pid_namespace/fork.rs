//! The code that runs between fork and exec (and in the small helper
//! processes): only async-signal-safe system calls on values prepared
//! before the fork; nothing allocates, nothing takes a lock.
//!
//! Two steps, each in the process the daemon forks:
//! - `make`: makes the agent's namespaces and forks their init (pid 1),
//!   which mounts the namespace's `/proc`, says it is ready and waits;
//! - `join`: enters them and forks the command inside, which the caller
//!   confines and execs.
//!
//! In both, the forking process stays behind as a **keeper** that waits for
//! its one child and mirrors its exit. Every child arms a parent-death
//! signal (and checks, through a pipe only its parent holds, that the
//! parent did not die before it was armed), so the chain daemon → keeper →
//! init/command dies from the top.

use std::ffi::CStr;
use std::os::fd::RawFd;

/// The daemon's own binary, opened (`O_PATH`) at start: keepers and inits
/// exec it by descriptor, since a path through `/proc/self` may name
/// another namespace's `/proc` by then.
pub(super) type Helper = Option<RawFd>;

/// What `make` needs.
pub(super) struct MakePlan {
    pub(super) flags: libc::c_int,
    pub(super) user_maps: Option<UserMaps>,
    /// Written by the init, one byte: b'1' with a `/proc` of its own, b'0'
    /// without.
    pub(super) ready_w: RawFd,
    pub(super) helper: Helper,
    /// With a network namespace of its own: where to send the proxy's
    /// listener (made inside it, on loopback).
    pub(super) net: Option<NetPlan>,
    /// Made once the namespace is private (`binds`).
    pub(super) binds: Vec<super::binds::Prepared>,
}

/// A new network namespace's loopback and the proxy's listening socket in
/// it (`CLONE_NEWNET` is among the flags).
pub(super) struct NetPlan {
    /// One end of a socket pair: the listener is sent on it (SCM_RIGHTS).
    pub(super) send_fd: RawFd,
}

/// The user namespace's maps: the person's own uid and gid onto
/// themselves.
pub(super) struct UserMaps {
    pub(super) uid_map: Vec<u8>,
    pub(super) gid_map: Vec<u8>,
}

/// What `join` needs: the agent's namespaces and the command's directory
/// (entering a mount namespace moves the process to its root).
pub(super) struct JoinPlan {
    pub(super) user: Option<RawFd>,
    pub(super) mnt: RawFd,
    pub(super) pid: RawFd,
    /// The agent's network namespace, when it has one.
    pub(super) net: Option<RawFd>,
    pub(super) cwd: std::ffi::CString,
    pub(super) helper: Helper,
}

fn last_error() -> std::io::Error {
    std::io::Error::last_os_error()
}

fn errno() -> libc::c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// In the process the daemon forked: makes the namespaces and forks their
/// init, then becomes (or execs) the init's keeper. Never returns but with
/// an error.
#[allow(unsafe_code)]
pub(super) fn make(plan: &MakePlan) -> std::io::Result<()> {
    // SAFETY (this function): system calls on values prepared before the
    // fork; C strings are literals or were made before it.
    unsafe {
        if libc::unshare(plan.flags) != 0 {
            return Err(last_error());
        }
        if let Some(maps) = &plan.user_maps {
            write_file(c"/proc/self/setgroups", b"deny")?;
            write_file(c"/proc/self/uid_map", &maps.uid_map)?;
            write_file(c"/proc/self/gid_map", &maps.gid_map)?;
        }
        if let Some(net) = &plan.net {
            loopback_up()?;
            send_listener(net.send_fd)?;
            libc::close(net.send_fd);
        }
        // Mounts made from here on stay in this namespace (a shared root
        // would carry the new /proc onto the person's); if that cannot be
        // arranged, no /proc is mounted.
        let private = libc::mount(
            std::ptr::null(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_SLAVE,
            std::ptr::null(),
        ) == 0;
        if !plan.binds.is_empty() {
            // Fail closed: a bind in a namespace that is not private would
            // land in the person's.
            if !private {
                return Err(std::io::Error::from_raw_os_error(libc::EPERM));
            }
            super::binds::apply(&plan.binds)?;
        }
        let (life_r, life_w) = life_pipe()?;
        let init = libc::fork();
        if init < 0 {
            return Err(last_error());
        }
        if init == 0 {
            armed_or_exit(life_r, life_w);
            let own_proc = private
                && libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                ) == 0;
            let byte = if own_proc { b"1" } else { b"0" };
            libc::write(plan.ready_w, byte.as_ptr().cast(), 1);
            libc::close(plan.ready_w);
            libc::close(life_r);
            become_helper(plan.helper, c"__ns-init", -1);
            init_loop()
        }
        libc::close(life_r);
        libc::close(plan.ready_w);
        become_helper(plan.helper, c"__ns-keeper", life_w);
        keeper_loop()
    }
}

/// In the process the daemon forked for one command: enters the agent's
/// namespaces and forks the command. Returns in the command's process only;
/// the forking process becomes (or execs) its keeper.
#[allow(unsafe_code)]
pub(super) fn join(plan: &JoinPlan) -> std::io::Result<()> {
    // SAFETY: as in `make`.
    unsafe {
        if let Some(user) = plan.user
            && libc::setns(user, libc::CLONE_NEWUSER) != 0
        {
            return Err(last_error());
        }
        if let Some(net) = plan.net
            && libc::setns(net, libc::CLONE_NEWNET) != 0
        {
            return Err(last_error());
        }
        if libc::setns(plan.mnt, libc::CLONE_NEWNS) != 0 {
            return Err(last_error());
        }
        if libc::chdir(plan.cwd.as_ptr()) != 0 {
            return Err(last_error());
        }
        if libc::setns(plan.pid, libc::CLONE_NEWPID) != 0 {
            return Err(last_error());
        }
        let (life_r, life_w) = life_pipe()?;
        let command = libc::fork();
        if command < 0 {
            return Err(last_error());
        }
        if command == 0 {
            armed_or_exit(life_r, life_w);
            libc::close(life_r);
            // A session of its own inside the namespace: killed as one
            // group when its call times out or is cancelled.
            if libc::setsid() < 0 {
                return Err(last_error());
            }
            return Ok(());
        }
        libc::close(life_r);
        become_helper(plan.helper, c"__ns-keeper", life_w);
        keeper_loop()
    }
}

/// Brings up the new network namespace's loopback (it starts down).
#[allow(unsafe_code)]
unsafe fn loopback_up() -> std::io::Result<()> {
    // SAFETY: a socket, two ioctls on a zeroed ifreq naming "lo", close.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(last_error());
        }
        let mut ifr: libc::ifreq = std::mem::zeroed();
        ifr.ifr_name[0] = b'l' as libc::c_char;
        ifr.ifr_name[1] = b'o' as libc::c_char;
        let mut ok = libc::ioctl(s, libc::SIOCGIFFLAGS, &mut ifr) == 0;
        if ok {
            ifr.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
            ok = libc::ioctl(s, libc::SIOCSIFFLAGS, &ifr) == 0;
        }
        let err = last_error();
        libc::close(s);
        if ok { Ok(()) } else { Err(err) }
    }
}

/// Makes the proxy's listener on 127.0.0.1 (a port the kernel picks) in
/// this network namespace and sends it over `send_fd`.
#[allow(unsafe_code)]
unsafe fn send_listener(send_fd: RawFd) -> std::io::Result<()> {
    // SAFETY: socket calls on a stack address and message header that
    // live across the calls; the control buffer is aligned for cmsghdr.
    unsafe {
        let s = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        if s < 0 {
            return Err(last_error());
        }
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from_ne_bytes([127, 0, 0, 1]);
        let len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        if libc::bind(s, (&raw const addr).cast(), len) != 0 || libc::listen(s, 128) != 0 {
            let err = last_error();
            libc::close(s);
            return Err(err);
        }
        #[repr(C)]
        union Control {
            _align: libc::cmsghdr,
            buf: [u8; 64],
        }
        let mut control: Control = std::mem::zeroed();
        let mut byte = [b'L'];
        let mut iov = libc::iovec {
            iov_base: byte.as_mut_ptr().cast(),
            iov_len: 1,
        };
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = (&raw mut control.buf).cast();
        msg.msg_controllen = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as _;
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        (*cmsg).cmsg_level = libc::SOL_SOCKET;
        (*cmsg).cmsg_type = libc::SCM_RIGHTS;
        (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(cmsg).cast::<RawFd>(), s);
        let sent = libc::sendmsg(send_fd, &msg, libc::MSG_NOSIGNAL);
        let err = last_error();
        libc::close(s);
        if sent == 1 { Ok(()) } else { Err(err) }
    }
}

/// A pipe whose write end only the forking process keeps (not
/// close-on-exec: it must stay open across the keeper's exec).
#[allow(unsafe_code)]
unsafe fn life_pipe() -> std::io::Result<(RawFd, RawFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), 0) != 0 {
            return Err(last_error());
        }
    }
    Ok((fds[0], fds[1]))
}

/// In a child: arms the parent-death signal, then exits if the parent
/// already died (its end of the life pipe is closed).
#[allow(unsafe_code)]
unsafe fn armed_or_exit(life_r: RawFd, life_w: RawFd) {
    // SAFETY: prctl, close and poll on our own descriptors.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
        libc::close(life_w);
        let mut alive = libc::pollfd {
            fd: life_r,
            events: libc::POLLIN,
            revents: 0,
        };
        if libc::poll(&mut alive, 1, 0) != 0 {
            libc::_exit(1);
        }
    }
}

/// Sheds the daemon's memory: execs the helper in `mode` (the descriptors
/// the daemon opened are close-on-exec and go; `keep`, the life pipe's
/// write end, is not and stays). Where there is no helper or the exec
/// fails, closes every descriptor but `keep` and returns: the caller runs
/// the same loop in the fork. Either way stdin, stdout and stderr become
/// /dev/null: a keeper or an init must not hold the command's output pipes
/// (their reader waits for them to close).
#[allow(unsafe_code)]
unsafe fn become_helper(helper: Helper, mode: &CStr, keep: RawFd) {
    let argv = [c"agentd".as_ptr(), mode.as_ptr(), std::ptr::null()];
    let envp = [std::ptr::null::<libc::c_char>()];
    // SAFETY: null-terminated arrays of C strings that live until the
    // exec; descriptor calls on numbers.
    unsafe {
        detach_stdio();
        if let Some(fd) = helper {
            libc::syscall(
                libc::SYS_execveat,
                fd,
                c"".as_ptr(),
                argv.as_ptr(),
                envp.as_ptr(),
                libc::AT_EMPTY_PATH,
            );
        }
        detach_fds(keep);
    }
}

/// Writes `data` to the file `path` (the user namespace's maps).
#[allow(unsafe_code)]
unsafe fn write_file(path: &CStr, data: &[u8]) -> std::io::Result<()> {
    // SAFETY: open/write/close on a literal path and a live buffer.
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(last_error());
        }
        let n = libc::write(fd, data.as_ptr().cast(), data.len());
        let err = last_error();
        libc::close(fd);
        if n != data.len() as isize {
            return Err(err);
        }
        Ok(())
    }
}

/// Points stdin, stdout and stderr at /dev/null.
#[allow(unsafe_code)]
unsafe fn detach_stdio() {
    // SAFETY: open, dup2 and close on descriptor numbers.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
        if null >= 0 {
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
            if null > 2 {
                libc::close(null);
            }
        }
    }
}

/// Closes every descriptor from 3 on but `keep` (-1: none), the
/// spawner's exec-error pipe among them.
#[allow(unsafe_code)]
unsafe fn detach_fds(keep: RawFd) {
    // SAFETY: close_range on descriptor numbers.
    unsafe {
        if keep < 3 {
            libc::syscall(
                libc::SYS_close_range,
                3 as libc::c_uint,
                libc::c_uint::MAX,
                0,
            );
            return;
        }
        let keep = keep as libc::c_uint;
        if keep > 3 {
            libc::syscall(libc::SYS_close_range, 3 as libc::c_uint, keep - 1, 0);
        }
        libc::syscall(libc::SYS_close_range, keep + 1, libc::c_uint::MAX, 0);
    }
}

/// A keeper: waits for its one child, then exits as it did (the same exit
/// code, or the same signal), so whoever waits for the keeper learns how
/// the command ended.
#[allow(unsafe_code)]
pub(super) fn keeper_loop() -> ! {
    // SAFETY: wait, signal and exit calls only.
    unsafe {
        let mut status = 0;
        loop {
            let r = libc::waitpid(-1, &mut status, 0);
            if r > 0 {
                break;
            }
            if errno() != libc::EINTR {
                libc::_exit(1);
            }
        }
        if libc::WIFSIGNALED(status) {
            let signal = libc::WTERMSIG(status);
            // Dies the same way, without a core file.
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(libc::WEXITSTATUS(status))
    }
}

/// The namespace's init: reaps whatever ends in it, for as long as it
/// lives (it is killed, and the namespace with it, when its keeper dies).
#[allow(unsafe_code)]
pub(super) fn init_loop() -> ! {
    // SAFETY: signal-mask, wait and sigwait calls only.
    unsafe {
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        libc::sigprocmask(libc::SIG_BLOCK, &chld, std::ptr::null_mut());
        loop {
            let mut status = 0;
            while libc::waitpid(-1, &mut status, libc::WNOHANG) > 0 {}
            // A child that ends after the sweep leaves SIGCHLD pending
            // (it is blocked), so this returns at once: nothing is missed.
            libc::sigwaitinfo(&chld, std::ptr::null_mut());
        }
    }
}
