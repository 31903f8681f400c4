//! What every agentd client in `agentctl` shares: finding and starting the
//! daemon and checking its socket (`autostart`), the exit codes and
//! failures (`exit`), how anything is shown (`view`), the permission
//! prompt, the terminal follower of `run` and `attach` (`follow`, with the
//! `keyboard`), the reconnection pauses (`backoff`), and the systemd units
//! (`systemd_units`, `systemctl`). The commands (`agentctl`), the ACP
//! bridge (`agentctl-acp`) and the dashboard (`agentctl-ui`) build on it.

pub mod autostart;
pub mod backoff;
pub mod client_dir;
pub mod exit;
pub mod follow;
pub mod keyboard;
pub mod permission_prompt;
pub mod systemctl;
pub mod systemd_units;
pub mod view;
