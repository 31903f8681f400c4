"""Drives `agentctl acp` with the Python ACP SDK (`agent-client-protocol`,
pinned in requirements.txt), as an editor would, and prints what it sees as
JSON lines for tests/tests/e2e/acp*.rs: the same steps and the same lines as
tests/acp-client/client.mjs (the TypeScript SDK), so one test checks both.

    python client.py <agentctl> first  <cwd>          initialize, new, three prompts
    python client.py <agentctl> second <cwd> <id>     list, load (the replay)
    python client.py <agentctl> third  <cwd> <id>     resume, one more prompt
    python client.py <agentctl> titles <cwd> <n>      titles from first prompts, n more
                                                      sessions, list page by page, a bogus cursor
    python client.py <agentctl> errors <cwd> <root>   requests the person got wrong
                                                      (<root> holds agentd's data directory)
    python client.py <agentctl> restart <cwd>         a prompt during which the test restarts
                                                      agentd, one more prompt
    python client.py <agentctl> plan   <cwd>          new, one prompt, load
    python client.py <agentctl> mcp    <cwd> <json>   new with the mcpServers <json>, one prompt,
                                                      then sessions whose servers are refused
    python client.py <agentctl> files  <cwd> <mode>   the bridge in <mode>: new, one prompt
    python client.py <agentctl> subagent <cwd> <mode> new, one prompt whose subagent makes calls;
                                                      waits for its progress to be final

Updates are printed as the SDK parsed them (its pydantic models, dumped by
their wire names), so a field the SDK does not know is not shown.
"""

import asyncio
import json
import os
import sys

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    HttpMcpServer,
    Implementation,
    McpServerStdio,
    RequestPermissionResponse,
    SseMcpServer,
)


def out(kind, **fields):
    print(json.dumps({"kind": kind, **fields}), flush=True)


def wire(model):
    """A model from the SDK as it is on the wire (camelCase, no nulls)."""
    if model is None:
        return None
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


class Editor:
    """The client side: collects updates, answers permission asks."""

    def __init__(self):
        self.updates = []
        # The option kind chosen for the next asks.
        self.permission = "allow_once"
        # Called (and cleared) once the next ask is answered.
        self.on_allowed = None

    async def session_update(self, session_id, update, **kwargs):
        self.updates.append(wire(update))

    async def request_permission(self, session_id, tool_call, options, **kwargs):
        out(
            "permission",
            title=tool_call.title,
            toolCallId=tool_call.tool_call_id,
            options=[o.kind for o in options],
            meta=tool_call.field_meta,
        )
        option = next(o for o in options if o.kind == self.permission)
        if self.on_allowed is not None:
            hook, self.on_allowed = self.on_allowed, None
            hook()
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
        )


def text(t):
    return [acp.text_block(t)]


async def prompt(conn, editor, session_id, t):
    editor.updates = []
    r = await conn.prompt(session_id=session_id, prompt=text(t))
    out("prompt", text=t, stopReason=r.stop_reason, updates=editor.updates)


async def error_of(what, call):
    """Runs `call`, printing the JSON-RPC error it ends in (or that it did not)."""
    try:
        await call
    except acp.RequestError as e:
        out("error", what=what, code=e.code, message=str(e), data=e.data)
        return
    out("accepted", what=what)


async def initialize(conn):
    init = await conn.initialize(
        protocol_version=acp.PROTOCOL_VERSION,
        client_capabilities=ClientCapabilities(),
        client_info=Implementation(name="agentd-acp-test-python", version="1.0.0"),
    )
    out("initialize", init=wire(init))


async def first(conn, editor, cwd):
    created = await conn.new_session(cwd=cwd, mcp_servers=[])
    sid = created.session_id
    out(
        "new",
        sessionId=sid,
        modes=wire(created.modes),
        configOptions=[wire(o) for o in created.config_options or []],
    )
    editor.permission = "allow_once"
    await prompt(conn, editor, sid, "TASK-ONE: write one.txt")
    editor.permission = "reject_once"
    await prompt(conn, editor, sid, "TASK-TWO: write two.txt")
    editor.permission = "allow_once"

    # Cancel once the allowed tool has had time to start running.
    def cancel_soon():
        asyncio.get_running_loop().call_later(
            0.7, lambda: asyncio.ensure_future(conn.cancel(session_id=sid))
        )

    editor.on_allowed = cancel_soon
    await prompt(conn, editor, sid, "TASK-SLOW: take your time")
    # An unknown method (the SDK sends extension methods with a leading `_`).
    try:
        await conn.ext_method("bogus", {"sessionId": sid})
    except acp.RequestError as e:
        out("error", code=e.code)
    try:
        await conn.prompt(session_id="no-such-session", prompt=text("x"))
    except acp.RequestError as e:
        out("error", code=e.code, data=e.data)


async def second(conn, editor, cwd, sid):
    listed = await conn.list_sessions(cwd=cwd)
    out("list", list=wire(listed))
    editor.updates = []
    await conn.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
    out("load", updates=editor.updates)


async def third(conn, editor, cwd, sid):
    editor.updates = []
    resumed = await conn.resume_session(cwd=cwd, session_id=sid, mcp_servers=[])
    out("resume", updates=editor.updates, modes=wire(resumed.modes))
    await conn.set_session_mode(session_id=sid, mode_id="plan")
    changed = await conn.set_config_option(
        config_id="model", session_id=sid, value="anthropic:claude-other"
    )
    out("config", configOptions=[wire(o) for o in changed.config_options])
    await prompt(conn, editor, sid, "TASK-FOUR: once more")
    await conn.close_session(session_id=sid)
    out("closed")


async def titles(conn, editor, cwd, more):
    a = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    out("new", sessionId=a)
    await prompt(conn, editor, a, "TASK-TITLE-A: name the first session\nwith more below")
    await prompt(conn, editor, a, "TASK-TITLE-A2: a second prompt keeps the title")
    b = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    out("new", sessionId=b)
    await prompt(conn, editor, b, "TASK-TITLE-B: name the second session")
    out("list", list=wire(await conn.list_sessions(cwd=cwd)))
    for _ in range(more):
        await conn.new_session(cwd=cwd, mcp_servers=[])
    cursor = None
    while True:
        page = await conn.list_sessions(cwd=cwd, cursor=cursor)
        out("page", page=wire(page))
        cursor = page.next_cursor
        if cursor is None:
            break
    await error_of("bogus cursor", conn.list_sessions(cwd=cwd, cursor="bogus"))


async def errors(conn, editor, cwd, root):
    new = conn.new_session
    await error_of("missing cwd", new(cwd="/definitely/not/here-acp", mcp_servers=[]))
    await error_of("relative cwd", new(cwd="project", mcp_servers=[]))
    await error_of("cwd holds the data directory", new(cwd=root, mcp_servers=[]))
    sid = (await new(cwd=cwd, mcp_servers=[])).session_id
    out("new", sessionId=sid)
    set_model = conn.set_config_option
    await error_of(
        "model without a key",
        set_model(config_id="model", session_id=sid, value="openai:gpt-test"),
    )
    await error_of("not a model", set_model(config_id="model", session_id=sid, value="nonsense"))
    await error_of("unknown mode", conn.set_session_mode(session_id=sid, mode_id="yolo"))

    # While the allowed tool runs: the mode and the model wait for the turn.
    mid_turn = []

    def change_soon():
        async def change():
            await asyncio.sleep(0.5)
            await error_of("mode mid-turn", conn.set_session_mode(session_id=sid, mode_id="plan"))
            await error_of(
                "model mid-turn",
                set_model(config_id="model", session_id=sid, value="anthropic:claude-other"),
            )

        mid_turn.append(asyncio.ensure_future(change()))

    editor.on_allowed = change_soon
    await prompt(conn, editor, sid, "TASK-MIDTURN: take a moment")
    await asyncio.gather(*mid_turn)

    # A bridge whose sessions use a model with no key.
    async with bridge(["--model", "openai:gpt-test"]) as (other, _):
        await initialize(other)
        await error_of("default model without a key", other.new_session(cwd=cwd, mcp_servers=[]))


async def restart(conn, editor, cwd):
    """The test restarts agentd while the first prompt runs."""
    sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    out("new", sessionId=sid)
    for t in ["TASK-RESTART: take your time", "TASK-AFTER: once more"]:
        await error_of(t, prompt(conn, editor, sid, t))


async def plan(conn, editor, cwd):
    sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    out("new", sessionId=sid)
    await prompt(conn, editor, sid, "TASK-PLAN: plan the work")
    editor.updates = []
    await conn.load_session(cwd=cwd, session_id=sid, mcp_servers=[])
    out("load", updates=editor.updates)


def mcp_server(server):
    """An mcpServers entry as the SDK's model of its transport."""
    kinds = {"http": HttpMcpServer, "sse": SseMcpServer}
    return kinds.get(server.get("type"), McpServerStdio).model_validate(server)


async def mcp(conn, editor, cwd, servers):
    servers = [mcp_server(s) for s in json.loads(servers)]
    sid = (await conn.new_session(cwd=cwd, mcp_servers=servers)).session_id
    out("new", sessionId=sid)
    await prompt(conn, editor, sid, "TASK-MCP: call the editor's servers")

    def new_with(server):
        return lambda: conn.new_session(cwd=cwd, mcp_servers=[server])

    def raw_new_with(server):
        # The SDK's models cannot hold a stdio server without a command, so
        # this one goes out through the SDK's JSON-RPC connection as is.
        params = {"cwd": cwd, "mcpServers": [server]}
        return lambda: conn._conn.send_request("session/new", params)

    refused = [
        (
            "old",
            new_with(SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])),
        ),
        ("nocommand", raw_new_with({"name": "nocommand", "args": [], "env": []})),
        ("bad name", new_with(McpServerStdio(name="bad name", command="/bin/true", args=[], env=[]))),
    ]
    for name, call in refused:
        try:
            r = await call()
        except acp.RequestError as e:
            out("refused", server=name, code=e.code, message=str(e))
            continue
        created = r["sessionId"] if isinstance(r, dict) else r.session_id
        out("accepted", server=name, sessionId=created)


async def files(conn, editor, cwd):
    sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    out("new", sessionId=sid)
    await prompt(conn, editor, sid, "TASK-FILES: change the files")


def subagent_final(update):
    """Whether `update` shows every one of a subagent's calls ended."""
    progress = ((update.get("_meta") or {}).get("agentd") or {}).get("subagent") or {}
    calls = progress.get("toolCalls") or []
    return len(calls) >= 2 and all(c.get("status") in ("completed", "failed") for c in calls)


async def subagent(conn, editor, cwd):
    sid = (await conn.new_session(cwd=cwd, mcp_servers=[])).session_id
    out("new", sessionId=sid)
    editor.updates = []
    r = await conn.prompt(session_id=sid, prompt=text("TASK-SUB: delegate it"))
    at_answer = len(editor.updates)
    # The subagent's progress comes on a stream of its own: wait (bounded)
    # until an update shows every one of its calls ended.
    for _ in range(400):
        if any(subagent_final(u) for u in editor.updates):
            break
        await asyncio.sleep(0.05)
    out("prompt", stopReason=r.stop_reason, updates=editor.updates, atAnswer=at_answer)


def bridge(extra, editor=None, mode="default"):
    return acp.spawn_agent_process(
        editor or Editor(),
        AGENTCTL,
        "acp",
        "--permission-mode",
        mode,
        *extra,
        env=dict(os.environ),
        # The bridge's logs go to the test's stderr, not into a pipe.
        transport_kwargs={"stderr": None, "shutdown_timeout": 10.0},
    )


async def main(step, args):
    editor = Editor()
    # `files` and `subagent` start the bridge in the permission mode given.
    mode = args[1] if step in ("files", "subagent") else "default"
    async with bridge([], editor, mode) as (conn, _process):
        await initialize(conn)
        if step == "first":
            await first(conn, editor, args[0])
        elif step == "second":
            await second(conn, editor, args[0], args[1])
        elif step == "third":
            await third(conn, editor, args[0], args[1])
        elif step == "titles":
            await titles(conn, editor, args[0], int(args[1]))
        elif step == "errors":
            await errors(conn, editor, args[0], args[1])
        elif step == "restart":
            await restart(conn, editor, args[0])
        elif step == "plan":
            await plan(conn, editor, args[0])
        elif step == "mcp":
            await mcp(conn, editor, args[0], args[1])
        elif step == "files":
            await files(conn, editor, args[0])
        elif step == "subagent":
            await subagent(conn, editor, args[0])
        else:
            sys.exit(f"client.py: no step {step!r}")


if __name__ == "__main__":
    AGENTCTL = sys.argv[1]
    asyncio.run(main(sys.argv[2], sys.argv[3:]))
