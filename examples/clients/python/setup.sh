#!/bin/sh
# Prepares the Python example client: a virtualenv in .venv with the pinned
# packages of requirements.txt, and agentd's stubs generated into gen/ from
# the repository's proto. Each part is redone only when its input changed,
# so a second run takes well under a second.
#
# PYTHON=python3.12 ./setup.sh picks another interpreter for the venv.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
proto_root=$(cd "$here/../../../proto" && pwd)
proto=$proto_root/agentd/v1/agentd.proto
venv=$here/.venv
gen=$here/gen
python=${PYTHON:-python3}

# The venv. A half-made one (a venv module without ensurepip leaves no pip)
# is removed, so the next run starts clean.
if [ ! -x "$venv/bin/pip" ]; then
    rm -rf "$venv"
    if ! "$python" -m venv "$venv"; then
        rm -rf "$venv"
        echo "setup.sh: '$python -m venv' failed: install Python 3 with its venv module (on Debian and Ubuntu: apt-get install python3-venv)" >&2
        exit 1
    fi
fi

# The packages, when requirements.txt is not the one last installed.
# Wheels only: building grpcio from source takes the better part of an hour.
wanted=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
stamp=$venv/.requirements.sha256
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
        -r "$here/requirements.txt"
    echo "$wanted" >"$stamp"
fi

# The stubs, when the proto or the packages are newer than them. Written
# beside gen/ and moved into place, so an interrupted run leaves no half.
stub=$gen/agentd/v1/agentd_pb2_grpc.py
if [ ! -f "$stub" ] || [ "$proto" -nt "$stub" ] || [ "$stamp" -nt "$stub" ]; then
    rm -rf "$gen.new"
    mkdir -p "$gen.new"
    "$venv/bin/python" -m grpc_tools.protoc -I "$proto_root" \
        --python_out="$gen.new" --grpc_python_out="$gen.new" "$proto"
    rm -rf "$gen"
    mv "$gen.new" "$gen"
fi
