//! Families of agents for `agentctl list --tree`: each agent under its
//! parent, children in the order they were created.

use std::collections::{HashMap, HashSet};

use agentd_shared::proto as pb;

/// One line of the tree: the drawing before the agent's id, and the agent.
pub struct Line<'a> {
    pub prefix: String,
    pub agent: &'a pb::Agent,
    /// Its parent is not among the listed agents (ended long ago, removed).
    pub orphan: bool,
}

/// Orders `agents` (oldest first, as listed) depth first under their
/// parents. An agent whose parent is not listed is a root.
pub fn lines(agents: &[pb::Agent]) -> Vec<Line<'_>> {
    let listed: HashSet<&str> = agents.iter().map(|a| a.id.as_str()).collect();
    let mut children: HashMap<&str, Vec<&pb::Agent>> = HashMap::new();
    let mut roots = Vec::new();
    for a in agents {
        if !a.parent_id.is_empty() && listed.contains(a.parent_id.as_str()) {
            children.entry(a.parent_id.as_str()).or_default().push(a);
        } else {
            roots.push(a);
        }
    }
    let mut out = Vec::with_capacity(agents.len());
    for root in roots {
        out.push(Line {
            prefix: String::new(),
            agent: root,
            orphan: !root.parent_id.is_empty(),
        });
        descend(root, "", &children, &mut out);
    }
    out
}

fn descend<'a>(
    parent: &pb::Agent,
    indent: &str,
    children: &HashMap<&str, Vec<&'a pb::Agent>>,
    out: &mut Vec<Line<'a>>,
) {
    let Some(kids) = children.get(parent.id.as_str()) else {
        return;
    };
    for (i, kid) in kids.iter().enumerate() {
        let last = i + 1 == kids.len();
        out.push(Line {
            prefix: format!("{indent}{}", if last { "└─ " } else { "├─ " }),
            agent: kid,
            orphan: false,
        });
        let deeper = format!("{indent}{}", if last { "   " } else { "│  " });
        descend(kid, &deeper, children, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(id: &str, parent: &str) -> pb::Agent {
        pb::Agent {
            id: id.into(),
            parent_id: parent.into(),
            ..Default::default()
        }
    }

    #[test]
    fn children_go_under_their_parents_in_order() {
        let agents = vec![
            agent("a", ""),
            agent("b", "a"),
            agent("c", ""),
            agent("d", "b"),
            agent("e", "a"),
            agent("f", "gone"),
        ];
        let drawn: Vec<(String, &str, bool)> = lines(&agents)
            .iter()
            .map(|l| (l.prefix.clone(), l.agent.id.as_str(), l.orphan))
            .collect();
        assert_eq!(
            drawn,
            vec![
                ("".into(), "a", false),
                ("├─ ".into(), "b", false),
                ("│  └─ ".into(), "d", false),
                ("└─ ".into(), "e", false),
                ("".into(), "c", false),
                ("".into(), "f", true),
            ]
        );
    }
}
