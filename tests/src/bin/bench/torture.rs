//! `bench torture`: the SIGKILL torture run (`agentd_e2e::torture`), long.
//! Exits 1 when any invariant was violated.

use agentd_e2e::torture::{Options, run};

use super::arg;

pub fn bench_torture(args: &[String]) {
    let defaults = Options::default();
    let seed = arg(args, "--seed", &defaults.seed.to_string());
    let opts = Options {
        seed: if seed == "random" {
            rand::random()
        } else {
            seed.parse().unwrap()
        },
        kills: arg(args, "--kills", "1000").parse().unwrap(),
        fault_rate: arg(args, "--faults", "0").parse().unwrap(),
        disk_full: args.iter().any(|a| a == "--disk-full"),
        max_live: arg(args, "--live", &defaults.max_live.to_string())
            .parse()
            .unwrap(),
        verbose: args.iter().any(|a| a == "--verbose"),
    };
    println!("{opts:?}");
    let report = run(&opts);
    println!("{report}");
    if !report.violations.is_empty() {
        std::process::exit(1);
    }
}
