//! `agentctl rules list|approve|revoke`: the permission rules (Claude
//! Code's syntax, DESIGN §24) an agent started here is put to, each with
//! the file it came from and whether it applies; a repository's allow
//! rules apply only once approved, each as written now.

use std::path::PathBuf;

use agentd_shared::proto as pb;
use serde::Serialize;

use crate::autostart::Target;
use crate::client_dir::given_or_current;
use crate::exit::{Failure, SUCCESS};
use agentd_shared::visible;

use crate::view::render;

#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// The rules in force for an agent started in this directory.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// A directory [default: the current directory].
        #[arg(long)]
        cwd: Option<PathBuf>,
    },
    /// Approve allow rules of the repository's .claude/settings.json and
    /// .claude/settings.local.json, as written now, for agents started from
    /// now on; a changed rule needs approving again.
    Approve(Selection),
    /// Forget approvals of the repository's allow rules.
    Revoke(Selection),
}

#[derive(Debug, clap::Args)]
struct Selection {
    /// Rules as written (quote them: 'Bash(npm test:*)'), or fingerprints
    /// (8 or more hex digits, from `rules list`).
    #[arg(required_unless_present = "all", conflicts_with = "all")]
    rules: Vec<String>,
    /// Every allow rule of the files (revoke: every approval).
    #[arg(long)]
    all: bool,
    /// A directory in the repository [default: the current directory].
    #[arg(long)]
    cwd: Option<PathBuf>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct RuleJson<'a> {
    kind: &'a str,
    rule: &'a str,
    source: &'a str,
    applies: bool,
    /// A repository's allow rule's; null otherwise.
    fingerprint: Option<&'a str>,
}

impl<'a> RuleJson<'a> {
    fn of(r: &'a pb::PermissionRule) -> Self {
        RuleJson {
            kind: &r.kind,
            rule: &r.rule,
            source: &r.source,
            applies: r.applies,
            fingerprint: (!r.fingerprint.is_empty()).then_some(r.fingerprint.as_str()),
        }
    }
}

#[derive(Serialize)]
struct ApprovedJson<'a> {
    repository: &'a str,
    rules: Vec<ApprovedRuleJson<'a>>,
}

#[derive(Serialize)]
struct ApprovedRuleJson<'a> {
    #[serde(flatten)]
    rule: RuleJson<'a>,
    already: bool,
}

#[derive(Serialize)]
struct RevokedJson<'a> {
    repository: &'a str,
    rules: Vec<RuleJson<'a>>,
}

pub async fn run(target: &Target, args: Args) -> Result<u8, Failure> {
    match args.action {
        Action::List { json, cwd } => list(target, json, cwd).await,
        Action::Approve(s) => approve(target, s).await,
        Action::Revoke(s) => revoke(target, s).await,
    }
}

async fn list(target: &Target, json: bool, cwd: Option<PathBuf>) -> Result<u8, Failure> {
    let cwd = given_or_current(cwd)?;
    let mut client = target.client().await?;
    let resp = client
        .list_rules(pb::ListRulesRequest { cwd })
        .await?
        .into_inner();
    if json {
        let rows: Vec<RuleJson<'_>> = resp.rules.iter().map(RuleJson::of).collect();
        render::print_json(&rows);
        return Ok(SUCCESS);
    }
    if resp.default_mode != pb::PermissionMode::Unspecified as i32 {
        let mode = render::permission_mode_name(resp.default_mode);
        say!(
            "default mode: {mode} (permissions.defaultMode in {}; --permission-mode overrides it)",
            visible::line(&resp.default_mode_source)
        );
    }
    if resp.rules.is_empty() {
        say!("no permission rules: the permission mode decides every call");
        return Ok(SUCCESS);
    }
    say!("{:<5} {:<40} FROM", "KIND", "RULE");
    let mut unapproved = false;
    for r in &resp.rules {
        let note = if r.applies {
            String::new()
        } else {
            unapproved = true;
            format!("  (not approved: {})", render::clip(&r.fingerprint, 12))
        };
        say!(
            "{:<5} {:<40} {}{note}",
            r.kind,
            render::cell(&r.rule, 40),
            visible::line(&r.source)
        );
    }
    if unapproved {
        say!(
            "A repository's allow rules apply once approved: agentctl rules approve RULE|FINGERPRINT (or --all)"
        );
    }
    Ok(SUCCESS)
}

async fn approve(target: &Target, s: Selection) -> Result<u8, Failure> {
    let cwd = given_or_current(s.cwd)?;
    let mut client = target.client().await?;
    let resp = client
        .approve_rules(pb::ApproveRulesRequest {
            cwd,
            rules: s.rules,
            all: s.all,
        })
        .await?
        .into_inner();
    let rules: Vec<(&pb::PermissionRule, bool)> = resp
        .rules
        .iter()
        .filter_map(|a| a.rule.as_ref().map(|r| (r, a.already)))
        .collect();
    if s.json {
        render::print_json(&ApprovedJson {
            repository: &resp.repository,
            rules: rules
                .iter()
                .map(|(r, already)| ApprovedRuleJson {
                    rule: RuleJson::of(r),
                    already: *already,
                })
                .collect(),
        });
        return Ok(SUCCESS);
    }
    for (r, already) in &rules {
        let what = if *already {
            "approved already"
        } else {
            "approved"
        };
        say!(
            "{} ({}): {what}",
            visible::line(&r.rule),
            visible::line(&r.source)
        );
    }
    say!(
        "New agents in {} are put to these rules; a changed rule needs approving again.",
        visible::line(&resp.repository)
    );
    Ok(SUCCESS)
}

async fn revoke(target: &Target, s: Selection) -> Result<u8, Failure> {
    let cwd = given_or_current(s.cwd)?;
    let mut client = target.client().await?;
    let resp = client
        .revoke_rules(pb::RevokeRulesRequest {
            cwd,
            rules: s.rules,
            all: s.all,
        })
        .await?
        .into_inner();
    if s.json {
        render::print_json(&RevokedJson {
            repository: &resp.repository,
            rules: resp.rules.iter().map(RuleJson::of).collect(),
        });
        return Ok(SUCCESS);
    }
    if resp.rules.is_empty() {
        say!(
            "no allow rule is approved for {}",
            visible::line(&resp.repository)
        );
    }
    for r in &resp.rules {
        say!(
            "revoked: {} ({})",
            visible::line(&r.rule),
            visible::line(&r.source)
        );
    }
    Ok(SUCCESS)
}
