//! `escape`: attacks a hostile tool makes on the sandbox, as a program the
//! end-to-end tests run in an agent's Bash (`tests/tests/e2e/sandbox.rs`).
//!
//! - `io-uring-connect SOCKET`: makes and connects a Unix-domain socket with
//!   io_uring (`IORING_OP_SOCKET`, `IORING_OP_CONNECT`), which a seccomp
//!   filter on `socket(2)` alone does not see. Prints `connected` and exits
//!   0 when it got through; prints the refusal and exits 1 otherwise.

#![allow(unsafe_code)] // io_uring's submission queue takes raw pointers.

use std::process::ExitCode;

use io_uring::{IoUring, opcode, types};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [cmd, path] if cmd == "io-uring-connect" => match io_uring_connect(path) {
            Ok(()) => {
                println!("connected to {path} through io_uring");
                ExitCode::SUCCESS
            }
            Err(e) => {
                println!("{e}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: escape io-uring-connect SOCKET");
            ExitCode::from(2)
        }
    }
}

/// Submits one entry and returns its result (a descriptor, 0, or -errno).
fn one(ring: &mut IoUring, entry: io_uring::squeue::Entry) -> Result<i32, String> {
    // SAFETY: every buffer the entry points at outlives the wait below.
    unsafe { ring.submission().push(&entry) }.map_err(|e| format!("queue full: {e}"))?;
    ring.submit_and_wait(1)
        .map_err(|e| format!("io_uring_enter: {e}"))?;
    let cqe = ring
        .completion()
        .next()
        .ok_or_else(|| "no completion".to_string())?;
    Ok(cqe.result())
}

fn io_uring_connect(path: &str) -> Result<(), String> {
    let mut ring = IoUring::new(4).map_err(|e| format!("io_uring_setup: {e}"))?;
    let fd = one(
        &mut ring,
        opcode::Socket::new(libc::AF_UNIX, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0).build(),
    )?;
    if fd < 0 {
        return Err(format!(
            "IORING_OP_SOCKET: {}",
            std::io::Error::from_raw_os_error(-fd)
        ));
    }
    // SAFETY: a zeroed sockaddr_un is a valid (empty) address.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err("socket path too long".into());
    }
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    let res = one(
        &mut ring,
        opcode::Connect::new(
            types::Fd(fd),
            (&raw const addr).cast::<libc::sockaddr>(),
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        )
        .build(),
    )?;
    if res < 0 {
        return Err(format!(
            "IORING_OP_CONNECT: {}",
            std::io::Error::from_raw_os_error(-res)
        ));
    }
    Ok(())
}
