//! `bench rpc`: a unary RPC round trip (`GetStatus`, warm client) against
//! the floor under it on this machine, a raw Unix-socket echo round trip
//! (64 bytes, a thread echoing) measured by the same binary, alternating.

use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::time::{Duration, Instant};

use agentd_e2e::Env;
use agentd_shared::proto as pb;

use super::{arg, ms, percentile};

pub fn bench_rpc(args: &[String]) {
    let runs: usize = arg(args, "--runs", "5000").parse().unwrap();
    let env = Env::new();
    let _daemon = env.start_daemon();

    let echo_path = env.root.path().join("echo.sock");
    let listener = UnixListener::bind(&echo_path).unwrap();
    std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut buf = [0u8; 64];
        while conn.read_exact(&mut buf).is_ok() {
            if conn.write_all(&buf).is_err() {
                break;
            }
        }
    });
    let mut echo = UnixStream::connect(&echo_path).unwrap();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut client = rt
        .block_on(agentd_shared::client::agent_client(&env.socket()))
        .unwrap();
    let (mut raw, mut rpc) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
    let mut buf = [7u8; 64];
    for _ in 0..runs {
        let t = Instant::now();
        echo.write_all(&buf).unwrap();
        echo.read_exact(&mut buf).unwrap();
        raw.push(t.elapsed());
        let t = Instant::now();
        rt.block_on(client.get_status(pb::GetStatusRequest {}))
            .unwrap();
        rpc.push(t.elapsed());
    }
    let report = |name: &str, mut v: Vec<Duration>| {
        v.sort();
        let p50 = percentile(&v, 0.5);
        println!(
            "{name:<36} p50 {:>8.4} ms   p99 {:>8.4} ms   (n={})",
            ms(p50),
            ms(percentile(&v, 0.99)),
            v.len()
        );
        p50
    };
    let r = report("raw Unix-socket echo (64 B)", raw);
    let g = report("GetStatus, warm client", rpc);
    println!("  ratio GetStatus / echo: {:.1}", ms(g) / ms(r));
}
