//! `agentctl completions bash|zsh|fish`: a completion script on stdout.
//!
//! bash: `agentctl completions bash > ~/.local/share/bash-completion/completions/agentctl`
//! zsh:  `agentctl completions zsh > ~/.zfunc/_agentctl` (with ~/.zfunc on $fpath)
//! fish: `agentctl completions fish > ~/.config/fish/completions/agentctl.fish`

use crate::exit::{Failure, SUCCESS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The shell to complete for.
    shell: Shell,
}

#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Shell {
    Bash,
    Zsh,
    Fish,
}

/// Writes the script completing `cmd`, the whole command line (`Cli`'s).
pub fn run(args: Args, mut cmd: clap::Command) -> Result<u8, Failure> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(shell, &mut cmd, "agentctl", &mut std::io::stdout());
    Ok(SUCCESS)
}
