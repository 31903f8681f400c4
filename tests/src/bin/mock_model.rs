//! A mock model provider (Anthropic Messages and OpenAI Chat Completions,
//! streaming) serving scripted replies, for manual demos and benchmarks.
//!
//! ```sh
//! cargo run -p agentd-e2e --bin mock-model -- --port 0 --script replies.json \
//!     [--api-key K] [--min-cacheable-tokens N] [--quiet]
//! ```
//!
//! Prints `listening on http://127.0.0.1:PORT` on stdout, then serves the
//! script's replies in order, one per request (whichever API is called).
//! Once the script is used up, every request gets a text reply "done".
//! Without `--script`, every request gets "done". One line per request goes
//! to stderr unless `--quiet`. Runs until killed.
//!
//! The script is a JSON list; see `agentd_e2e::mock::script` for the full
//! format. In short:
//!
//! ```json
//! [{"text": "hi"},
//!  {"tool_use": {"name": "Bash", "input": {"command": "ls"}}},
//!  {"status": 529, "message": "Overloaded"},
//!  {"text": "breaks", "cut_after": 4},
//!  {"reset": true}]
//! ```

use std::io::Write;

use agentd_e2e::mock::{MockConfig, MockServer, Reply, script::parse_script};

const USAGE: &str = "usage: mock-model [--port N] [--script FILE] [--api-key KEY] [--min-cacheable-tokens N] [--openai-min-cached-tokens N] [--no-validate] [--quiet]";

fn fail(message: &str) -> ! {
    eprintln!("mock-model: {message}\n{USAGE}");
    std::process::exit(2);
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut port: u16 = 0;
    let mut script: Option<String> = None;
    let mut config = MockConfig {
        log_requests: true,
        ..MockConfig::default()
    };
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| fail(&format!("{name} needs a value")))
        };
        match arg.as_str() {
            "--port" => {
                port = value("--port")
                    .parse()
                    .unwrap_or_else(|_| fail("bad --port"))
            }
            "--script" => script = Some(value("--script")),
            "--api-key" => config.api_key = Some(value("--api-key")),
            "--min-cacheable-tokens" => {
                config.min_cacheable_tokens = value("--min-cacheable-tokens")
                    .parse()
                    .unwrap_or_else(|_| fail("bad --min-cacheable-tokens"));
            }
            "--openai-min-cached-tokens" => {
                config.openai_min_cached_tokens = value("--openai-min-cached-tokens")
                    .parse()
                    .unwrap_or_else(|_| fail("bad --openai-min-cached-tokens"));
            }
            "--no-validate" => config.validate = false,
            "--quiet" => config.log_requests = false,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            other => fail(&format!("unknown argument {other}")),
        }
    }
    let replies = match &script {
        None => Vec::new(),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .unwrap_or_else(|e| fail(&format!("cannot read {path}: {e}")));
            parse_script(&text).unwrap_or_else(|e| fail(&format!("{path}: {e}")))
        }
    };
    let server = MockServer::start_on(config, port);
    server.enqueue_all(replies);
    server.set_fallback(Some(Reply::text("done")));
    println!("listening on {}", server.url());
    let _ = std::io::stdout().flush();
    loop {
        std::thread::park();
    }
}
