//! What clients ask for, parsed into the supervisor's requests. Every
//! field is checked here, once: absent strings become `None`, numbers that
//! mean "the default" become `None`, names and models are parsed, and
//! combinations that cannot be are refused before the supervisor sees them.

use std::num::NonZeroU32;
use std::path::PathBuf;

use agentd_shared::proto as pb;

use super::{isolation_from_wire, permission_mode_from_wire, sandbox_from_wire};
use crate::domain::text::{non_blank, quote};
use crate::domain::{AgentName, ExternalAgentName, ForkTools, ForkTurns, Isolation, NetworkMode};
use crate::error::AgentdError;
use crate::model::ModelSpec;
use crate::supervisor::{ForkRequest, NewAgent};

/// `CreateAgent`'s request.
pub fn new_agent(r: pb::CreateAgentRequest) -> Result<NewAgent, AgentdError> {
    let permission_mode = permission_mode_from_wire(r.permission_mode)?;
    let isolation = isolation_from_wire(r.isolation)?;
    let sandbox = sandbox_from_wire(r.sandbox)?;
    if r.idle {
        if !r.prompt.is_empty() {
            return Err(AgentdError::invalid(
                "an idle agent has no prompt: its first message comes with SendMessage",
            ));
        }
        if isolation == Isolation::Worktree {
            return Err(AgentdError::not_yet("idle agents in a worktree"));
        }
    }
    let name = agent_name(&r.name)?;
    if !r.subagent_type.is_empty() {
        return Err(AgentdError::not_yet("subagent types for top-level agents"));
    }
    let mcp_servers = super::mcp::requested_servers(r.mcp_servers)?;
    let executor = executor(&r.executor)?;
    let network = super::network::network_from_wire(r.network, r.no_network)?;
    let allow_hosts = super::network::allow_hosts(&r.allow_hosts)?;
    if !allow_hosts.is_empty() && !matches!(network, None | Some(NetworkMode::Proxy)) {
        return Err(AgentdError::invalid(
            "allow_hosts is for network proxy: with full or none there is no proxy to allow them",
        ));
    }
    if executor.is_some() {
        if !r.model.is_empty() {
            return Err(AgentdError::invalid(
                "an external agent picks its own model: leave model empty with executor",
            ));
        }
        if network == Some(NetworkMode::None) {
            return Err(AgentdError::invalid(
                "an external agent reaches its own model over the network: network none cannot be combined with executor (its proxy lets its API through)",
            ));
        }
    }
    Ok(NewAgent {
        cwd: cwd(&r.cwd)?,
        base: base(&r.base, isolation)?,
        model: model(&r.model)?,
        prompt: r.prompt,
        name,
        description: non_blank(&r.description),
        background: r.background,
        permission_mode,
        max_turns: NonZeroU32::new(r.max_turns),
        isolation,
        working_dir: None,
        parent_tool_use_id: String::new(),
        sandbox,
        network,
        allow_hosts,
        idle: r.idle,
        no_instructions: r.no_instructions,
        mcp_servers,
        executor,
        budget: budget_from_wire(r.budget_usd, r.budget_tokens)?,
    })
}

/// The external agent asked for: empty is none.
fn executor(name: &str) -> Result<Option<ExternalAgentName>, AgentdError> {
    if name.is_empty() {
        return Ok(None);
    }
    ExternalAgentName::parse(name)
        .map(Some)
        .map_err(AgentdError::invalid)
}

/// `ForkAgent`'s request: who to fork (as the client named it) and how.
pub fn fork_request(r: pb::ForkAgentRequest) -> Result<(String, ForkRequest), AgentdError> {
    let isolation = isolation_from_wire(r.isolation)?;
    let name = agent_name(&r.name)?;
    let fork = ForkRequest {
        base: base(&r.base, isolation)?,
        fork_turns: ForkTurns::parse(&r.fork_turns).map_err(AgentdError::invalid)?,
        tools: ForkTools::parse(
            r.fork_tools.as_ref().map(|t| t.names.as_slice()),
            &r.fork_profile,
        )
        .map_err(AgentdError::invalid)?,
        directive: r.directive,
        name,
        description: non_blank(&r.description),
        isolation,
        background: r.background,
        at_turn: (r.at_turn > 0).then_some(r.at_turn),
        budget: budget_from_wire(r.budget_usd, r.budget_tokens)?,
    };
    Ok((r.parent_id, fork))
}

fn agent_name(name: &str) -> Result<Option<AgentName>, AgentdError> {
    AgentName::parse_optional(name).map_err(AgentdError::invalid)
}

/// The agent's directory: required, and absolute (whether it exists is
/// the supervisor's to find out).
fn cwd(cwd: &str) -> Result<PathBuf, AgentdError> {
    if cwd.is_empty() {
        return Err(AgentdError::invalid(
            "cwd is required (an absolute directory)",
        ));
    }
    let path = PathBuf::from(cwd);
    if !path.is_absolute() {
        return Err(AgentdError::invalid(format!(
            "cwd '{}' is not an absolute path",
            quote(cwd)
        )));
    }
    Ok(path)
}

/// What a worktree branches from: only with worktree isolation.
fn base(base: &str, isolation: Isolation) -> Result<Option<String>, AgentdError> {
    if base.trim().is_empty() {
        return Ok(None);
    }
    if isolation != Isolation::Worktree {
        return Err(AgentdError::invalid(
            "a base applies only to worktree isolation (--worktree)",
        ));
    }
    // A revision is a name, shown with the worktree: printable only.
    if agentd_shared::visible::has_control(base) {
        return Err(AgentdError::invalid(format!(
            "base '{}' holds a control character; a base is a branch, tag or commit",
            quote(base)
        )));
    }
    Ok(Some(base.to_string()))
}

/// A model spec; blank means the configured default.
fn model(model: &str) -> Result<Option<ModelSpec>, AgentdError> {
    match model.trim() {
        "" => Ok(None),
        spec => Ok(Some(ModelSpec::parse(spec)?)),
    }
}

/// A budget as the wire gives it: both amounts 0 is none.
pub fn budget_from_wire(
    usd: f64,
    tokens: u64,
) -> Result<Option<crate::domain::Budget>, AgentdError> {
    if usd == 0.0 && tokens == 0 {
        return Ok(None);
    }
    if !usd.is_finite() || usd < 0.0 {
        return Err(AgentdError::invalid(format!(
            "budget_usd must be a positive number of dollars (or 0 for none), not {usd}"
        )));
    }
    crate::domain::Budget::new((usd > 0.0).then_some(usd), (tokens > 0).then_some(tokens))
        .map(Some)
        .map_err(AgentdError::invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn create(f: impl FnOnce(&mut pb::CreateAgentRequest)) -> Result<NewAgent, AgentdError> {
        let mut r = pb::CreateAgentRequest {
            prompt: "hello".into(),
            cwd: "/".into(),
            ..Default::default()
        };
        f(&mut r);
        new_agent(r)
    }

    #[test]
    fn absent_strings_and_zeroes_are_none() {
        let req = create(|_| {}).unwrap();
        assert_eq!(req.model, None);
        assert_eq!(req.name, None);
        assert_eq!(req.description, None);
        assert_eq!(req.base, None);
        assert_eq!(req.max_turns, None);
        assert_eq!(req.cwd, PathBuf::from("/"));
        let req = create(|r| {
            r.model = " scripted:x.json ".into();
            r.description = "  two words ".into();
            r.max_turns = 7;
        })
        .unwrap();
        assert_eq!(req.model.unwrap().to_string(), "scripted:x.json");
        assert_eq!(req.description.as_deref(), Some("two words"));
        assert_eq!(req.max_turns.map(NonZeroU32::get), Some(7));
    }

    #[test]
    fn bad_fields_are_refused_at_the_edge() {
        let invalid = |r: Result<NewAgent, AgentdError>| matches!(r, Err(AgentdError::Invalid(_)));
        assert!(invalid(create(|r| r.cwd.clear())));
        assert!(invalid(create(|r| r.cwd = "rel/dir".into())));
        assert!(invalid(create(|r| r.name = "cafe".into())));
        assert!(invalid(create(|r| r.model = "nope".into())));
        assert!(invalid(create(|r| r.model = "anthropic:x\u{1b}[2J".into())));
        assert!(invalid(create(|r| {
            r.isolation = pb::Isolation::Worktree as i32;
            r.base = "main\u{1b}]0;x\u{7}".into();
        })));
        assert!(invalid(create(|r| r.base = "main".into())));
        assert!(invalid(create(|r| r.idle = true)));
        assert!(matches!(
            create(|r| r.subagent_type = "explore".into()),
            Err(AgentdError::NotYet(_))
        ));
        let long = format!("/{}", "a".repeat(100_000));
        let err = create(|r| r.model = long.clone())
            .err()
            .unwrap()
            .to_string();
        assert!(err.len() < 400, "quotes only a prefix: {} bytes", err.len());
    }

    #[test]
    fn fork_tools_and_profile_exclude_each_other() {
        let fork = |tools: Option<Vec<&str>>, profile: &str| {
            fork_request(pb::ForkAgentRequest {
                directive: "go".into(),
                fork_tools: tools.map(|t| pb::ToolList {
                    names: t.into_iter().map(String::from).collect(),
                }),
                fork_profile: profile.into(),
                ..Default::default()
            })
            .map(|(_, f)| f.tools)
        };
        assert_eq!(fork(None, "").unwrap(), ForkTools::Parent);
        assert_eq!(
            fork(None, "review").unwrap(),
            ForkTools::Profile("review".into())
        );
        assert!(matches!(
            fork(Some(vec!["Read"]), "").unwrap(),
            ForkTools::Only(_)
        ));
        assert!(fork(Some(vec!["Read"]), "review").is_err());
        assert!(fork(Some(vec!["*"]), "").is_err());
    }

    #[test]
    fn a_budget_from_the_wire_is_positive_or_none() {
        assert_eq!(budget_from_wire(0.0, 0).unwrap(), None);
        for usd in [-1.0, f64::NAN, f64::INFINITY, 2e6] {
            assert!(budget_from_wire(usd, 0).is_err(), "{usd}");
        }
        let b = budget_from_wire(0.5, 0).unwrap().unwrap();
        assert_eq!((b.usd_micros, b.tokens), (Some(500_000), None));
        let b = budget_from_wire(0.0, 7).unwrap().unwrap();
        assert_eq!((b.usd_micros, b.tokens), (None, Some(7)));
    }
}
