"""Attaches to an agent with stock grpcio as a script would: every request
up front, then the request stream closed (`stub.Attach(iter([start]))`,
what `grpcurl -d` does too), and prints what the stream carried as JSON
lines for tests/tests/e2e/attach_half_close.rs, ending with how it ended.

Runs in the venv of examples/clients/python (its setup.sh installs grpcio
and generates agentd's stubs into its gen/).

    python attach_half_close.py <socket> <agent id> [<message>]
"""

import json
import os
import sys
import time

import grpc

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "../../examples/clients/python/gen"))
from agentd.v1 import agentd_pb2, agentd_pb2_grpc  # noqa: E402


def emit(**fields):
    print(json.dumps(fields), flush=True)


def main():
    socket, agent_id = sys.argv[1], sys.argv[2]
    requests = [agentd_pb2.AttachRequest(start=agentd_pb2.AttachStart(id=agent_id, from_seq=0))]
    if len(sys.argv) > 3:
        requests.append(agentd_pb2.AttachRequest(message=sys.argv[3]))
    began = time.monotonic()
    with grpc.insecure_channel("unix:" + socket) as channel:
        stub = agentd_pb2_grpc.AgentServiceStub(channel)
        # A list's iterator runs out: grpcio half-closes after the last one.
        events = stub.Attach(iter(requests), timeout=60)
        try:
            for event in events:
                kind = event.WhichOneof("event")
                line = {"event": kind, "at": round(time.monotonic() - began, 3)}
                if kind == "entry":
                    blocks = json.loads(event.entry.content_json)
                    line["seq"] = event.entry.seq
                    line["text"] = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
                elif kind == "status":
                    line["status"] = agentd_pb2.AgentStatus.Name(event.status.status)
                emit(**line)
        except grpc.RpcError as e:
            emit(end=e.code().name, details=e.details(), at=round(time.monotonic() - began, 3))
            return
    emit(end="OK", at=round(time.monotonic() - began, 3))


if __name__ == "__main__":
    main()
