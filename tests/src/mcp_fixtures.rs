//! Real MCP servers for the end-to-end tests of agentd's MCP support, from
//! tests/mcp/ (its README.md says what each tool is for):
//!
//! - `server.py`, a small server on the official Python SDK (pinned in
//!   tests/mcp/requirements.txt), with tools made for the tests: `echo`,
//!   `write_file`, `crash`, `sleep`, `image`, `env`, `link`, `structured`;
//! - `@modelcontextprotocol/server-everything`, the reference server
//!   (pinned in tests/mcp/package-lock.json).
//!
//! [`setup`] installs both on first use (tests/mcp/setup.sh: a venv and
//! node_modules, each redone only when its pins change) and gives their
//! paths; the helpers give the commands that start each over stdio, and start
//! each over streamable HTTP on a port of the test's choosing.

use std::io::{BufRead, BufReader, Read};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long an HTTP server may take to accept connections.
const HTTP_READY_LIMIT: Duration = Duration::from_secs(30);
/// How much of a server's output a failure message shows.
const OUTPUT_TAIL: usize = 16 * 1024;

/// Where the installed servers are.
#[derive(Clone, Debug)]
pub struct McpFixtures {
    /// The venv's Python, which has the `mcp` SDK.
    pub python: PathBuf,
    /// tests/mcp/server.py.
    pub server_py: PathBuf,
    /// server-everything's launcher (node_modules/.bin/mcp-server-everything,
    /// a Node script run through `#!/usr/bin/env node`). Its first argument
    /// is the transport: `stdio` or `streamableHttp`.
    pub everything_bin: PathBuf,
}

/// tests/mcp/.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp")
}

/// Installs the servers (tests/mcp/setup.sh, once per process, under a lock
/// on tests/mcp/ so that two test runs never install into it at once) and
/// says where they are. Err says what failed, with setup.sh's output.
pub fn setup() -> Result<McpFixtures, String> {
    static DONE: OnceLock<Result<McpFixtures, String>> = OnceLock::new();
    DONE.get_or_init(run_setup).clone()
}

fn run_setup() -> Result<McpFixtures, String> {
    let dir = dir();
    let said = crate::setup_sh::run(&dir, "python3 with venv, npm")
        .map_err(|e| format!("the MCP servers the tests use are not installed: {e}"))?;
    let script = dir.join("setup.sh");
    let fixtures = McpFixtures {
        python: dir.join(".venv/bin/python"),
        server_py: dir.join("server.py"),
        everything_bin: dir.join("node_modules/.bin/mcp-server-everything"),
    };
    for path in [
        &fixtures.python,
        &fixtures.server_py,
        &fixtures.everything_bin,
    ] {
        if !path.is_file() {
            return Err(format!(
                "{} succeeded but {} is missing\n{said}",
                script.display(),
                path.display()
            ));
        }
    }
    Ok(fixtures)
}

impl McpFixtures {
    /// The command and arguments that run server.py over stdio.
    pub fn python_stdio_command(&self) -> (String, Vec<String>) {
        (
            path_string(&self.python),
            vec![path_string(&self.server_py), "stdio".into()],
        )
    }

    /// The command and arguments that run server-everything over stdio.
    pub fn everything_stdio_command(&self) -> (String, Vec<String>) {
        (path_string(&self.everything_bin), vec!["stdio".into()])
    }

    /// server.py over streamable HTTP at [`mcp_url`]`(port)`, not yet
    /// started (for a test that sets its environment, e.g. MCP_FIXTURE_LOG;
    /// start it with [`spawn_http`]).
    pub fn python_http_command(&self, port: u16) -> Command {
        let mut cmd = Command::new(&self.python);
        cmd.arg(&self.server_py)
            .args(["http", "--port", &port.to_string()]);
        cmd
    }

    /// server-everything over streamable HTTP at [`mcp_url`]`(port)`, not
    /// yet started. It reads its port from `PORT` and listens on every
    /// address, not only the loopback one.
    pub fn everything_http_command(&self, port: u16) -> Command {
        let mut cmd = Command::new(&self.everything_bin);
        cmd.arg("streamableHttp").env("PORT", port.to_string());
        cmd
    }

    /// Starts server.py over streamable HTTP and waits until `port` accepts
    /// connections. The caller kills the child (see [`KillOnDrop`]).
    pub fn spawn_python_http(&self, port: u16) -> Child {
        spawn_http(self.python_http_command(port), port, "server.py http")
    }

    /// Starts server-everything over streamable HTTP and waits until `port`
    /// accepts connections. The caller kills the child (see [`KillOnDrop`]).
    pub fn spawn_everything_http(&self, port: u16) -> Child {
        spawn_http(
            self.everything_http_command(port),
            port,
            "server-everything streamableHttp",
        )
    }
}

/// The streamable HTTP endpoint of a server started on `port`.
pub fn mcp_url(port: u16) -> String {
    format!("http://127.0.0.1:{port}/mcp")
}

/// A port on 127.0.0.1 that nothing listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .expect("bind 127.0.0.1:0 for a free port")
        .port()
}

/// Starts `cmd` (stdin null; its output goes to the test's stderr, which the
/// harness shows when the test fails) and waits, at most 30 s, until `port`
/// on 127.0.0.1 accepts connections. Panics, saying why and with the
/// server's last output, when the server exits first or is not ready in time.
pub fn spawn_http(mut cmd: Command, port: u16, what: &str) -> Child {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what} ({cmd:?}): {e}"));
    let output = OutputTail::default();
    let label = format!("{what} :{port}");
    if let Some(out) = child.stdout.take() {
        output.forward(out, label.clone());
    }
    if let Some(err) = child.stderr.take() {
        output.forward(err, label);
    }
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
    let deadline = Instant::now() + HTTP_READY_LIMIT;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            // Let the forwarders read what the server said last.
            std::thread::sleep(Duration::from_millis(100));
            panic!(
                "{what} exited with {status} before it accepted connections on port {port}\n\
                 its output (tail):\n{}",
                output.text()
            );
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return child;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{what} did not accept connections on port {port} within {} s\n\
                 its output (tail):\n{}",
                HTTP_READY_LIMIT.as_secs(),
                output.text()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A child process that is killed (SIGKILL) and reaped when dropped, so a
/// failing test leaves no server behind.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The last [`OUTPUT_TAIL`] bytes a child printed, gathered by threads that
/// also copy each line to the test's stderr, labelled.
#[derive(Clone, Default)]
pub struct OutputTail(Arc<Mutex<Vec<u8>>>);

impl OutputTail {
    /// Reads `from` to its end on a thread of its own.
    pub fn forward(&self, from: impl Read + Send + 'static, label: String) {
        let tail = self.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(from).lines() {
                let Ok(line) = line else { break };
                eprintln!("[{label}] {line}");
                let mut buf = tail.0.lock().expect("output tail");
                buf.extend_from_slice(line.as_bytes());
                buf.push(b'\n');
                let excess = buf.len().saturating_sub(OUTPUT_TAIL);
                buf.drain(..excess);
            }
        });
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().expect("output tail")).into_owned()
    }
}

fn path_string(path: &Path) -> String {
    path.to_str()
        .unwrap_or_else(|| panic!("{} is not UTF-8", path.display()))
        .to_string()
}

#[cfg(test)]
mod tests;
