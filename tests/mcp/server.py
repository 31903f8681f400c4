"""A small MCP server for agentd's end-to-end tests, on the official Python SDK.

    python server.py stdio                 newline-delimited JSON-RPC on stdin/stdout
    python server.py http --port N         streamable HTTP at http://127.0.0.1:N/mcp

Each tool exists to check one thing the daemon must get right (see README.md).
When MCP_FIXTURE_LOG names a file, the server appends `started pid=<pid>` to it
at start-up, so a test can count how many times the daemon started it, and
`cancelled request=<id> reason=<reason>` for each `notifications/cancelled` it
receives, so a test can see that a call cut short was cancelled on the wire;
and `ended instance=<id>` when it ends on its own (not when killed).
"""

import argparse
import base64
import os
import socket
import struct
import sys
import uuid
import zlib

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ContentBlock, ImageContent, ResourceLink, TextContent, ToolAnnotations
from pydantic import BaseModel

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, open_world_hint=False)
WRITES = ToolAnnotations(read_only_hint=False, destructive_hint=True, open_world_hint=False)



def log(line: str) -> None:
    """Appends `line` to the file MCP_FIXTURE_LOG names, if any."""
    path = os.environ.get("MCP_FIXTURE_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(line + "\n")


async def log_cancellations(ctx, call_next):
    """Middleware: records each `notifications/cancelled` (the SDK itself
    cancels the request's handler), then lets it through."""
    if ctx.method == "notifications/cancelled":
        params = ctx.params or {}
        log(f"cancelled request={params.get('requestId')} reason={params.get('reason')}")
    return await call_next(ctx)


# Tells this process from any other started from the same command, even in
# another PID namespace, where pids repeat.
INSTANCE = uuid.uuid4().hex

server = MCPServer(name="agentd-mcp-fixture", version="1.0.0", middleware=[log_cancellations])


def tiny_png() -> bytes:
    """A valid 1x1 PNG (one opaque red pixel), built here so it is checkable."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 6, 0, 0, 0)  # 1x1, 8-bit RGBA
    pixels = zlib.compress(b"\x00\xff\x00\x00\xff")  # filter 0, then R G B A
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


class Answer(BaseModel):
    answer: int


@server.tool(annotations=READ_ONLY, structured_output=False)
def echo(text: str) -> str:
    """Returns `text` unchanged."""
    return text


@server.tool(annotations=WRITES, structured_output=False)
def write_file(path: str, content: str) -> str:
    """Writes `content` to the file `path`, replacing it."""
    try:
        with open(path, "w", encoding="utf-8") as f:
            f.write(content)
    except OSError as e:
        raise ToolError(f"cannot write {path}: {e.strerror} (errno {e.errno})") from e
    return f"wrote {len(content.encode('utf-8'))} bytes to {path}"


@server.tool(annotations=READ_ONLY, structured_output=False)
def read_file(path: str) -> str:
    """Returns what the file `path` holds."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError as e:
        raise ToolError(f"cannot read {path}: {e.strerror} (errno {e.errno})") from e


@server.tool(annotations=WRITES, structured_output=False)
def crash() -> str:
    """Kills this server process in the middle of the call (exit status 3)."""
    sys.stderr.write("crash: exiting with status 3\n")
    sys.stderr.flush()
    os._exit(3)


@server.tool(
    annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
    structured_output=False,
)
async def sleep(seconds: float) -> str:
    """Sleeps `seconds`, then returns "slept"."""
    await anyio.sleep(seconds)
    return "slept"


@server.tool(annotations=READ_ONLY, structured_output=False)
def image() -> list[ContentBlock]:
    """Returns a tiny PNG image and a text block describing it."""
    data = base64.b64encode(tiny_png()).decode("ascii")
    return [
        ImageContent(type="image", data=data, mime_type="image/png"),
        TextContent(type="text", text="a 1x1 red PNG"),
    ]


@server.tool(annotations=READ_ONLY, structured_output=False)
def env(name: str) -> str:
    """Returns the value of the environment variable `name`, or "<unset>"."""
    return os.environ.get(name, "<unset>")


@server.tool(annotations=READ_ONLY, structured_output=False)
def link() -> list[ContentBlock]:
    """Returns a resource link to file:///tmp/x.txt."""
    return [ResourceLink(type="resource_link", uri="file:///tmp/x.txt", name="x.txt", mime_type="text/plain")]


@server.tool(annotations=READ_ONLY, structured_output=True)
def structured() -> Answer:
    """Returns the structured content {"answer": 42}, with an output schema."""
    return Answer(answer=42)


@server.tool(annotations=READ_ONLY, structured_output=False)
def connect(host: str, port: int) -> str:
    """Opens a TCP connection to `host`:`port` and closes it: "connected", or why not."""
    try:
        with socket.create_connection((host, port), timeout=5):
            return "connected"
    except OSError as e:
        raise ToolError(f"cannot connect to {host}:{port}: {e.strerror or e} (errno {e.errno})") from e


@server.tool(annotations=READ_ONLY, structured_output=False)
def instance() -> str:
    """Returns this server process's own random id (the same for every call to one process)."""
    return INSTANCE


def log_start() -> None:
    log(f"started pid={os.getpid()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    transports = parser.add_subparsers(dest="transport", required=True)
    transports.add_parser("stdio", help="serve on stdin/stdout")
    http = transports.add_parser("http", help="serve streamable HTTP at /mcp")
    http.add_argument("--port", type=int, required=True)
    http.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args()

    log_start()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=args.host, port=args.port, streamable_http_path="/mcp")
    log(f"ended instance={INSTANCE}")


if __name__ == "__main__":
    main()
