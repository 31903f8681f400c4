//! The hosts every confined agent's proxy allows without asking: the
//! package registries and source hosts of the usual toolchains, so that
//! building and testing work as they do outside the sandbox. Listed in
//! the README; `agentctl network defaults` prints them.

use crate::domain::{HostPattern, NetTarget};

/// Each entry's patterns and what it is for.
pub const BUILT_IN: &[(&str, &[&str])] = &[
    (
        "cargo",
        &[
            "crates.io",
            "index.crates.io",
            "static.crates.io",
            "static.rust-lang.org",
        ],
    ),
    ("pip", &["pypi.org", "files.pythonhosted.org"]),
    ("npm, yarn", &["registry.npmjs.org", "registry.yarnpkg.com"]),
    (
        "go",
        &[
            "proxy.golang.org",
            "sum.golang.org",
            "storage.googleapis.com",
        ],
    ),
    (
        "maven, gradle",
        &[
            "repo.maven.apache.org",
            "repo1.maven.org",
            "plugins.gradle.org",
            "services.gradle.org",
        ],
    ),
    (
        "apt",
        &[
            "deb.debian.org",
            "security.debian.org",
            "archive.ubuntu.com",
            "security.ubuntu.com",
        ],
    ),
    (
        "git over HTTPS",
        &[
            "github.com:443",
            "codeload.github.com:443",
            "objects.githubusercontent.com:443",
            "raw.githubusercontent.com:443",
            "gitlab.com:443",
            "bitbucket.org:443",
        ],
    ),
];

/// The built-in list, parsed.
pub fn patterns() -> Vec<(HostPattern, &'static str)> {
    BUILT_IN
        .iter()
        .flat_map(|(purpose, list)| {
            list.iter()
                .filter_map(move |p| HostPattern::parse(p).ok().map(|p| (p, *purpose)))
        })
        .collect()
}

/// What the built-in list allows `target` for, if it does.
pub fn allows(target: &NetTarget) -> Option<&'static str> {
    // Registries are reached over HTTPS (443) or plain HTTP (80, apt's).
    if !matches!(target.port(), 80 | 443) {
        return None;
    }
    patterns()
        .into_iter()
        .find(|(p, _)| p.matches(target))
        .map(|(_, purpose)| purpose)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_parses_and_matches_only_web_ports() {
        let count: usize = BUILT_IN.iter().map(|(_, l)| l.len()).sum();
        assert_eq!(patterns().len(), count, "an entry does not parse");
        let t = |h: &str, p: u16| NetTarget::new(h, p).unwrap();
        assert_eq!(allows(&t("index.crates.io", 443)), Some("cargo"));
        assert_eq!(allows(&t("deb.debian.org", 80)), Some("apt"));
        assert_eq!(allows(&t("github.com", 443)), Some("git over HTTPS"));
        assert_eq!(allows(&t("github.com", 80)), None);
        assert_eq!(allows(&t("crates.io", 22)), None);
        assert_eq!(allows(&t("example.org", 443)), None);
        assert_eq!(allows(&t("gist.github.com", 443)), None);
    }

    /// The README names every built-in host, and only those: a person
    /// reads there what a confined agent may reach without asking.
    #[test]
    fn the_readme_names_exactly_the_built_in_hosts() {
        let readme = include_str!("../../../../../README.md");
        let start = readme
            .find("the built-in registries and source hosts")
            .expect("the README's built-in host list");
        let end = start + readme[start..].find("`[network] allow").unwrap();
        let named: std::collections::BTreeSet<&str> = readme[start..end]
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|span| !span.starts_with("agentctl"))
            .collect();
        let built_in: std::collections::BTreeSet<&str> = BUILT_IN
            .iter()
            .flat_map(|(_, l)| l.iter().copied())
            .collect();
        assert_eq!(named, built_in);
    }
}
