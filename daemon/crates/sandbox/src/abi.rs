//! Which Landlock ABI this kernel offers.

/// Tests set this to force an ABI (0: no Landlock) and see agents refused.
pub const ABI_OVERRIDE_VAR: &str = "AGENTD_LANDLOCK_ABI";

/// The kernel's Landlock ABI version, 0 when it has none (or it is
/// disabled), or the value of `AGENTD_LANDLOCK_ABI` when that is set.
pub fn kernel_abi() -> i32 {
    // Only in debug builds (the tests'): a release daemon reports and
    // enforces what the kernel offers.
    #[cfg(debug_assertions)]
    if let Ok(forced) = std::env::var(ABI_OVERRIDE_VAR)
        && let Ok(n) = forced.trim().parse::<i32>()
    {
        return n.max(0);
    }
    query()
}

/// `landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION)`.
#[allow(unsafe_code)]
fn query() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute pointer, size 0 and the VERSION flag
    // the call reads and writes no memory; it returns the ABI or -1.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    i32::try_from(v).unwrap_or(0).max(0)
}
