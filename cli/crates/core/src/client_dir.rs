//! What the client tells the daemon of where it runs.

use std::path::PathBuf;

use crate::exit::Failure;

/// This process's working directory, for the daemon to look for a checkout
/// that moved (empty when it cannot be read).
pub fn client_dir() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

/// `dir` (else the current directory), absolute.
pub fn given_or_current(dir: Option<PathBuf>) -> Result<String, Failure> {
    let dir = match dir {
        Some(dir) => dir,
        None => std::env::current_dir()
            .map_err(|e| Failure::failed(format!("cannot read the current directory: {e}")))?,
    };
    let dir = std::path::absolute(&dir)
        .map_err(|e| Failure::failed(format!("cannot resolve {}: {e}", dir.display())))?;
    Ok(dir.display().to_string())
}
