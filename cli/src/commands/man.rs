//! `agentctl man [--dir DIR]`: manual pages in roff. Without `--dir`,
//! agentctl(1) on stdout (`agentctl man | man -l -`); with it, one page per
//! command and subcommand (agentctl-run.1, agentctl-service-install.1, …)
//! written to DIR, ready for `~/.local/share/man/man1`.

use std::path::{Path, PathBuf};

use crate::exit::{Failure, SUCCESS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Write every page into this directory instead.
    #[arg(long)]
    dir: Option<PathBuf>,
}

fn render(cmd: &clap::Command) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut out)
        .map_err(|e| Failure::failed(format!("cannot render the manual: {e}")))?;
    Ok(out)
}

/// Writes `cmd`'s page as `<name>.1`, then its subcommands' pages.
fn write_all(
    cmd: &clap::Command,
    name: &str,
    dir: &Path,
    count: &mut usize,
) -> Result<(), Failure> {
    let cmd = cmd.clone().name(name.to_string());
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, render(&cmd)?)
        .map_err(|e| Failure::failed(format!("cannot write {}: {e}", path.display())))?;
    *count += 1;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        write_all(sub, &format!("{name}-{}", sub.get_name()), dir, count)?;
    }
    Ok(())
}

/// Renders the pages of `cmd`, the whole command line (`Cli`'s).
pub fn run(args: Args, mut cmd: clap::Command) -> Result<u8, Failure> {
    cmd.build();
    match args.dir {
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(&render(&cmd)?)
                .map_err(|e| Failure::failed(e.to_string()))?;
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir)
                .map_err(|e| Failure::failed(format!("cannot create {}: {e}", dir.display())))?;
            let mut count = 0;
            write_all(&cmd, "agentctl", &dir, &mut count)?;
            println!("wrote {count} pages to {}", dir.display());
        }
    }
    Ok(SUCCESS)
}
