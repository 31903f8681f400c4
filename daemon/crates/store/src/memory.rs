//! Giving freed memory back to the system.
//!
//! glibc's malloc keeps what a program frees in its arenas for reuse, and
//! with one arena per thread that has allocated (up to eight per core) the
//! daemon's tokio workers each kept their own: after 2,000 short agents had
//! finished and their handles were swept, 190 MiB stayed resident of which
//! less than half was in use. Two things bound it: the arenas are limited
//! to a few at start, and after a sweep or a stream's end freed something,
//! the next housekeeping tick trims the heap (`malloc_trim`), returning
//! whole free pages to the kernel. Other allocators return memory on their
//! own; there both calls do nothing.

use std::sync::atomic::{AtomicBool, Ordering};

/// At most this many malloc arenas: enough that the runtime's worker
/// threads rarely wait for one another, few enough that freed memory is
/// not spread over many heaps that each keep their own.
const ARENAS: i32 = 4;

/// Set when something large was freed since the last trim.
static FREED: AtomicBool = AtomicBool::new(false);

/// Limits malloc's arenas; called from `main` before any thread exists.
#[allow(unsafe_code)]
pub fn limit_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a malloc parameter; called before any
    // other thread allocates.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
    }
}

/// Notes that a run's state or a stream's buffers were just dropped, so
/// that the next [`give_back_if_freed`] trims the heap.
pub fn note_freed() {
    FREED.store(true, Ordering::Relaxed);
}

/// Calls [`note_freed`] when dropped: held by a task whose end frees what
/// it buffered (a `Watch` stream's).
pub struct FreedOnDrop;

impl Drop for FreedOnDrop {
    fn drop(&mut self) {
        note_freed();
    }
}

/// Returns free heap pages to the kernel if anything was freed since the
/// last call. It walks the heap (milliseconds for a few hundred MiB):
/// call it from a blocking thread, on a timer, never per request.
pub fn give_back_if_freed() -> bool {
    if !FREED.swap(false, Ordering::Relaxed) {
        return false;
    }
    trim();
    true
}

#[allow(unsafe_code)]
fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim is thread-safe (it takes each arena's lock) and
    // only releases memory malloc itself owns and has free.
    unsafe {
        libc::malloc_trim(0);
    }
}
