//! Who answers for an agent's run — a model agentd calls (DESIGN §10),
//! driven by `turn`, or another coding agent over ACP (DESIGN §19), driven
//! by `external` — and the one place that picks the driver.

use super::external::{ExternalDriver, ExternalSetup};
use super::run::{CoreSetup, Finished, RunCore};
use super::turn::{ModelDriver, ModelSetup, load_conversation};
use crate::store::StoreError;

/// Who answers for an agent, with what only that driver needs.
pub enum Runner {
    /// A model agentd calls (DESIGN §10).
    Model(Box<ModelSetup>),
    /// Another coding agent over ACP (DESIGN §19).
    External(Box<ExternalSetup>),
}

/// Everything a run is made of.
pub struct RunSetup {
    pub core: CoreSetup,
    pub runner: Runner,
}

/// Runs the agent until it ends, stops or pauses, loading its transcript
/// first (on the run's own task, never under a lock). The final state is
/// returned for the supervisor to record (with any notification); Err
/// when the transcript cannot be read, before anything ran.
pub async fn run(setup: RunSetup) -> Result<Finished, StoreError> {
    let (messages, next_seq) = load_conversation(&setup.core.store, &setup.core.record)?;
    let core = RunCore::new(setup.core, next_seq);
    Ok(match setup.runner {
        Runner::Model(model) => ModelDriver::new(core, *model, messages).run().await,
        Runner::External(external) => ExternalDriver::new(core).run(*external).await,
    })
}
