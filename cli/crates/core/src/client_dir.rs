//! What the client tells the daemon of where it runs.

/// This process's working directory, for the daemon to look for a checkout
/// that moved (empty when it cannot be read).
pub fn client_dir() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}
