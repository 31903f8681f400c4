//! `agentctl status`: the daemon itself.

use agentd_shared::proto as pb;
use serde_json::json;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};
use crate::view::status;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let s = client
        .get_status(pb::GetStatusRequest {})
        .await?
        .into_inner();
    let counts: serde_json::Map<String, serde_json::Value> = s
        .agents
        .iter()
        .map(|c| (status::name(c.status).to_string(), json!(c.count)))
        .collect();
    if args.json {
        crate::view::render::print_json(&json!({
            "version": s.version,
            "client_version": agentd_shared::VERSION,
            "socket": s.socket,
            "socket_activated": s.socket_activated,
            "config": s.config_path,
            "data_dir": s.data_dir,
            "pid": s.pid,
            "uptime_secs": s.uptime_secs,
            "agents": counts,
            "agents_total": s.agents_total,
            "corrupt_records": s.corrupt_records,
            "disk_full": s.disk_full,
            "landlock_abi": s.landlock_abi,
            "containment": (!s.containment.is_empty()).then_some(&s.containment),
            "containment_unavailable": (!s.containment_unavailable.is_empty())
                .then_some(&s.containment_unavailable),
            "default_sandbox": crate::view::sandbox::name(s.default_sandbox),
        }));
        return Ok(SUCCESS);
    }
    say!("agentd {} (pid {})", s.version, s.pid);
    say!(
        "socket:   {}{}",
        s.socket,
        if s.socket_activated {
            " (passed by the service manager)"
        } else {
            ""
        }
    );
    say!("config:   {}", s.config_path);
    say!("data dir: {}", s.data_dir);
    say!(
        "uptime:   {}",
        humantime::format_duration(std::time::Duration::from_secs(s.uptime_secs))
    );
    let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    say!(
        "agents:   {}{}",
        s.agents_total,
        if summary.is_empty() {
            String::new()
        } else {
            format!(" ({})", summary.join(", "))
        }
    );
    say!(
        "sandbox:  {} by default; Landlock {}; {}",
        crate::view::sandbox::name(s.default_sandbox),
        crate::view::sandbox::landlock_line(s.landlock_abi),
        crate::view::sandbox::containment_line(&s)
    );
    say!("reads:    {}", crate::view::sandbox::reads_line(&s));
    if s.disk_full {
        say!("disk:     FULL — writes wait until space is freed in the data directory");
    }
    if s.corrupt_records > 0 {
        say!(
            "store:    {} corrupt item(s) skipped (see the daemon's log)",
            s.corrupt_records
        );
    }
    Ok(SUCCESS)
}
