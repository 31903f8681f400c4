//! The agent's plan as its turn loop keeps it (DESIGN §17). A `TodoWrite`
//! call's list is set on the record, the record is written durably, and
//! only then is the change published and the call answered: whoever sees
//! the plan (an attacher, `show`, an editor) sees durable state.
//!
//! A crash can only fall between the record's write and the round's
//! results: the record already has the new plan and the assistant message
//! with the call is on disk without its result. On resume the call is run
//! again (`round::answer_interrupted_calls`): the same list, so the plan is
//! unchanged and the model gets the answer it would have got. Nothing is
//! rebuilt from the transcript.

use serde_json::Value;

use super::ModelDriver;
use crate::agent::run::Halt;
use crate::tools::ToolOutput;
use crate::tools::todo_write;

impl ModelDriver {
    /// Runs a `TodoWrite` call: an invalid list is a tool error and changes
    /// nothing; a valid one becomes the plan, durably, then is published.
    pub(super) async fn write_plan(&mut self, input: &Value) -> Result<ToolOutput, Halt> {
        let plan = match todo_write::parse(input) {
            Ok(plan) => plan,
            Err(refusal) => return Ok(refusal),
        };
        // The same list again (a call run again after a crash, or a model
        // repeating itself): nothing to write or tell anyone.
        if plan != self.core.record.plan {
            let before = std::mem::replace(&mut self.core.record.plan, plan);
            if let Err(halt) = self.core.write_record().await {
                // Not written: the plan stays what is on disk.
                self.core.record.plan = before;
                return Err(halt);
            }
            self.core.hub.publish_plan(self.core.record.plan.clone());
        }
        Ok(todo_write::done())
    }
}
