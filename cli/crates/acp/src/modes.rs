//! The agent's permission mode as ACP session modes (and a `mode` config
//! option kept in step), and its model as a `model` config option.

use agentd_shared::proto as pb;
use serde_json::{Value, json};

use super::peer::RpcError;

pub const MODEL_OPTION: &str = "model";
pub const MODE_OPTION: &str = "mode";

/// id, name, description of each mode.
const MODES: [(pb::PermissionMode, &str, &str, &str); 4] = [
    (
        pb::PermissionMode::Default,
        "default",
        "Ask",
        "Bash, Write and Edit ask first",
    ),
    (
        pb::PermissionMode::AcceptEdits,
        "accept-edits",
        "Accept edits",
        "Only Bash asks first",
    ),
    (
        pb::PermissionMode::Plan,
        "plan",
        "Plan",
        "Read-only: Bash, Write and Edit are refused",
    ),
    (
        pb::PermissionMode::Bypass,
        "bypass",
        "Bypass",
        "Nothing asks (the sandbox still confines tools)",
    ),
];

pub fn parse(id: &str) -> Result<pb::PermissionMode, RpcError> {
    MODES
        .iter()
        .find(|(_, m, _, _)| *m == id)
        .map(|(mode, ..)| *mode)
        .ok_or_else(|| {
            RpcError::invalid_params(format!(
                "no mode {:?} (default, accept-edits, plan, bypass)",
                id.chars().take(32).collect::<String>()
            ))
        })
}

fn current(agent: &pb::Agent) -> &'static str {
    MODES
        .iter()
        .find(|(mode, ..)| *mode as i32 == agent.permission_mode)
        .map_or("default", |(_, id, _, _)| *id)
}

pub fn config_options(agent: &pb::Agent) -> Value {
    json!([
        {
            "id": MODE_OPTION, "name": "Permission mode", "category": "mode", "type": "select",
            "currentValue": current(agent),
            "options": MODES.iter().map(|(_, id, name, d)| json!({"value": id, "name": name, "description": d})).collect::<Vec<_>>(),
        },
        {
            "id": MODEL_OPTION, "name": "Model", "category": "model", "type": "select",
            "currentValue": agent.model,
            "options": [{"value": agent.model, "name": agent.model}],
        },
    ])
}

/// `modes` and `configOptions` for a session's responses.
pub fn state(agent: &pb::Agent) -> Value {
    json!({
        "modes": {
            "currentModeId": current(agent),
            "availableModes": MODES.iter().map(|(_, id, name, d)| json!({"id": id, "name": name, "description": d})).collect::<Vec<_>>(),
        },
        "configOptions": config_options(agent),
    })
}
