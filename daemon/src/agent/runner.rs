//! Who answers for an agent: a model agentd calls (DESIGN §10), or
//! another coding agent agentd runs over ACP (DESIGN §19).

use super::external::ExternalSetup;
use crate::model::{ModelError, ModelRequest, ModelResponse, Provider};

/// Who answers for an agent.
pub enum Runner {
    /// A model agentd calls (DESIGN §10).
    Model(Provider),
    /// Another coding agent over ACP (DESIGN §19).
    External(Box<ExternalSetup>),
}

/// One model call; an agent without a provider (an external one) has no
/// model of agentd's to call.
pub(super) async fn complete(
    provider: Option<&Provider>,
    request: &ModelRequest,
    on_event: &(dyn Fn(crate::model::ModelEvent) + Send + Sync),
) -> Result<ModelResponse, ModelError> {
    match provider {
        Some(p) => p.complete(request, on_event).await,
        None => Err(ModelError::Fatal(
            "this agent is run by an external agent: agentd calls no model for it".into(),
        )),
    }
}
