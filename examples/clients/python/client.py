"""A minimal agentd client on the stock Python gRPC packages.

It walks through what an editor plugin does: checks the daemon's health,
lists its services by reflection, starts an agent, follows it to the end of
its run over Attach, finds it in ListAgents, and shows what an error looks
like. Each step prints one JSON line; any failure ends the program with
status 1 and a message on stderr.

    ./setup.sh
    .venv/bin/python client.py --socket "$AGENTD_SOCKET" --model "scripted:$(pwd)/../hello.json"

The channel is grpcio's default, as a plugin would open it: no options, no
authority override.
"""

import argparse
import functools
import json
import os
import queue
import sys
import uuid

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

# setup.sh generates agentd's stubs into gen/ from proto/agentd/v1/agentd.proto.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen"))
try:
    from agentd.v1 import agentd_pb2, agentd_pb2_grpc
except ImportError as e:
    sys.exit(f"client.py: agentd's stubs are missing ({e}): run ./setup.sh first")

SERVICE = "agentd.v1.AgentService"
TIMEOUT_SECS = 10
# Attach follows a whole run; a real plugin would keep it open indefinitely.
ATTACH_TIMEOUT_SECS = 120
# Statuses in which the agent's run is over (WaitAgent returns on the same).
RUN_OVER = {
    agentd_pb2.AGENT_STATUS_COMPLETED,
    agentd_pb2.AGENT_STATUS_FAILED,
    agentd_pb2.AGENT_STATUS_CANCELLED,
    agentd_pb2.AGENT_STATUS_PAUSED,
    agentd_pb2.AGENT_STATUS_INTERRUPTED,
}


class StepFailed(Exception):
    """A step did not get what it expected; the message says what."""


def step(name):
    """Names the step in its failures, gRPC errors included."""

    def wrap(f):
        @functools.wraps(f)
        def run(*args):
            try:
                return f(*args)
            except grpc.RpcError as e:
                details = e.details() or "(the server gave no details)"
                raise StepFailed(f"{name}: {e.code().name}: {details}") from e
            except StepFailed as e:
                raise StepFailed(f"{name}: {e}") from e

        return run

    return wrap


def emit(step_name, **fields):
    print(json.dumps({"step": step_name, **fields}, separators=(",", ":")), flush=True)


def status_name(status):
    return agentd_pb2.AgentStatus.Name(status)


@step("health")
def check_health(channel):
    health = health_pb2_grpc.HealthStub(channel)
    # "" is the server as a whole.
    for service in ("", SERVICE):
        reply = health.Check(
            health_pb2.HealthCheckRequest(service=service), timeout=TIMEOUT_SECS
        )
        status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
        emit("health", service=service, status=status)
        if status != "SERVING":
            raise StepFailed(f"{service or 'the server'} is {status}")


@step("reflection")
def list_services(channel):
    services = sorted(ProtoReflectionDescriptorDatabase(channel).get_services())
    emit("reflection", services=services)
    if SERVICE not in services:
        raise StepFailed(f"{SERVICE} is not among the services listed")


@step("create")
def create_agent(agents, model, prompt):
    agent = agents.CreateAgent(
        agentd_pb2.CreateAgentRequest(
            prompt=prompt,
            model=model,  # empty: the daemon's default model
            cwd=os.getcwd(),
            # Nobody blocks on the run: we follow it with Attach instead.
            background=True,
        ),
        timeout=TIMEOUT_SECS,
    )
    emit("create", id=agent.id, short_id=agent.short_id, status=status_name(agent.status))
    return agent.id


@step("attach")
def follow_agent(agents, agent_id):
    # Attach is a two-way stream, and closing our side ends it: the requests
    # come from a queue that stays open until we put None in it.
    outbox = queue.SimpleQueue()
    outbox.put(
        agentd_pb2.AttachRequest(
            start=agentd_pb2.AttachStart(id=agent_id, from_seq=0)
        )
    )

    def requests():
        while (request := outbox.get()) is not None:
            yield request

    events = agents.Attach(requests(), timeout=ATTACH_TIMEOUT_SECS)
    texts, final = [], None
    try:
        for event in events:
            kind = event.WhichOneof("event")
            if kind == "entry":
                blocks = json.loads(event.entry.content_json)
                text = "".join(b["text"] for b in blocks if b.get("type") == "text")
                role = agentd_pb2.Role.Name(event.entry.role)
                emit("entry", seq=event.entry.seq, role=role, text=text)
                if event.entry.role == agentd_pb2.ROLE_ASSISTANT and text:
                    texts.append(text)
            elif kind == "status" and final is None and event.status.status in RUN_OVER:
                # The run is over; the stream is not until we detach.
                final = event.status
                outbox.put(agentd_pb2.AttachRequest(detach=agentd_pb2.Detach()))
                outbox.put(None)
    finally:
        outbox.put(None)
    if final is None:
        raise StepFailed("the stream ended before the agent's run did")
    emit(
        "attach",
        id=agent_id,
        status=status_name(final.status),
        result=final.result,
        error=final.error,
        text=texts,
    )
    if final.status != agentd_pb2.AGENT_STATUS_COMPLETED:
        raise StepFailed(
            f"the agent ended {status_name(final.status)}: {final.error or '(no error given)'}"
        )


@step("list")
def list_agents(agents, agent_id):
    listed = agents.ListAgents(agentd_pb2.ListAgentsRequest(), timeout=TIMEOUT_SECS)
    ids = [a.id for a in listed.agents]
    emit("list", ids=ids)
    if agent_id not in ids:
        raise StepFailed(f"agent {agent_id} is not listed")


@step("get_unknown")
def get_unknown_agent(agents):
    unknown = str(uuid.uuid4())
    try:
        agents.GetAgent(agentd_pb2.GetAgentRequest(id=unknown), timeout=TIMEOUT_SECS)
    except grpc.RpcError as e:
        emit("get_unknown", id=unknown, code=e.code().name, message=e.details())
        if e.code() != grpc.StatusCode.NOT_FOUND:
            raise StepFailed(f"expected NOT_FOUND, got {e.code().name}") from e
        return
    raise StepFailed(f"GetAgent found an agent with the made-up id {unknown}")


def default_socket():
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime:
        return os.path.join(runtime, "agentd", "agentd.sock")
    return f"/tmp/agentd-{os.getuid()}/agentd.sock"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--socket",
        default=os.environ.get("AGENTD_SOCKET") or default_socket(),
        help="the daemon's socket (default: $AGENTD_SOCKET, else agentd's own default)",
    )
    parser.add_argument(
        "--model",
        default=os.environ.get("AGENTD_MODEL", ""),
        help="<scheme>:<model> (default: $AGENTD_MODEL, else the daemon's default)",
    )
    parser.add_argument("--prompt", default="Say hello to the plugin author.")
    args = parser.parse_args()

    try:
        with grpc.insecure_channel("unix:" + args.socket) as channel:
            agents = agentd_pb2_grpc.AgentServiceStub(channel)
            check_health(channel)
            list_services(channel)
            agent_id = create_agent(agents, args.model, args.prompt)
            follow_agent(agents, agent_id)
            list_agents(agents, agent_id)
            get_unknown_agent(agents)
    except StepFailed as e:
        sys.exit(f"client.py: {e}")
    emit("done")


if __name__ == "__main__":
    main()
