//! Tests that need root (a tmpfs to fill, files and listeners of another
//! uid): as root they run; elsewhere they print `skipped: …` and pass, so
//! that a person's `cargo test` works without sudo. CI runs as root and sets
//! `AGENTD_REQUIRE_ROOT_TESTS=1` (see `.ci/run`): there a skip fails the
//! test instead, so that losing root can never turn them into silent passes.

/// Set to `1` to fail, rather than skip, a test that cannot run its root
/// part.
pub const REQUIRE_VAR: &str = "AGENTD_REQUIRE_ROOT_TESTS";

pub fn is_root() -> bool {
    nix::unistd::getuid().is_root()
}

/// Whether root tests must run here (`AGENTD_REQUIRE_ROOT_TESTS=1`).
pub fn required() -> bool {
    std::env::var_os(REQUIRE_VAR).is_some_and(|v| v == "1")
}

/// True when the test must stop here because it is not root and `what`
/// needs root; says so. Panics instead when root tests are required.
#[track_caller]
pub fn skip_unless_root(what: &str) -> bool {
    if is_root() {
        return false;
    }
    skip(&format!(
        "{what} needs root, and this test runs as uid {}",
        nix::unistd::getuid()
    ));
    true
}

/// Reports that a root test cannot run here and why: a printed line, or a
/// panic when root tests are required.
#[track_caller]
pub fn skip(why: &str) {
    assert!(
        !required(),
        "{why} ({REQUIRE_VAR}=1: this test must run, not be skipped)"
    );
    println!("skipped: {why}");
}
