//! `agentctl config`: the configuration the daemon has in force, key by
//! key, with where each value came from (default, file, environment).
//! API keys are shown only as set / not set.

use agentd_shared::proto as pb;
use serde_json::json;

use crate::autostart::Target;
use crate::exit::{Failure, SUCCESS};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

fn source(e: &pb::ConfigEntry) -> String {
    match pb::ConfigSource::try_from(e.source) {
        Ok(pb::ConfigSource::Default) => "default".to_string(),
        Ok(pb::ConfigSource::File) => "file".to_string(),
        Ok(pb::ConfigSource::Environment) => format!("env {}", e.env_var),
        _ => "unknown".to_string(),
    }
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    let mut client = target.client().await?;
    let r = client
        .get_config(pb::GetConfigRequest {})
        .await?
        .into_inner();
    if args.json {
        let entries: Vec<_> = r
            .entries
            .iter()
            .map(|e| {
                json!({
                    "key": e.key,
                    "value": e.value,
                    "source": source(e),
                    "reloadable": e.reloadable,
                })
            })
            .collect();
        crate::view::render::print_json(
            &json!({"path": r.path, "file_exists": r.file_exists, "entries": entries}),
        );
        return Ok(SUCCESS);
    }
    say!(
        "# {} ({})",
        r.path,
        if r.file_exists {
            "read"
        } else {
            "absent: defaults"
        }
    );
    let width = r.entries.iter().map(|e| e.key.len()).max().unwrap_or(0);
    let vwidth = r
        .entries
        .iter()
        .map(|e| e.value.chars().count())
        .max()
        .unwrap_or(0)
        .min(40);
    for e in &r.entries {
        say!(
            "{:width$}  {:vwidth$}  {}{}",
            e.key,
            e.value,
            source(e),
            if e.reloadable {
                ""
            } else {
                " (restart to change)"
            }
        );
    }
    Ok(SUCCESS)
}
