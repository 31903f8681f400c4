#!/bin/sh
# Prepares the Python ACP test client (client.py): a virtualenv in .venv
# with the packages pinned in requirements.txt (the Python ACP SDK), wheels
# only. Redone only when requirements.txt changed (a stamp holds its
# sha256), so a second run takes well under a second. The tests run this
# under a lock on this directory (tests/tests/e2e/acp.rs).
#
# PYTHON=python3.12 ./setup.sh picks another interpreter for the venv.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
venv=$here/.venv
python=${PYTHON:-python3}

# The pins of requirements.txt have wheels for Python 3.11 and newer only.
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "setup.sh: the Python ACP client needs Python 3.11 or newer; '$python' is $("$python" -V 2>/dev/null || echo 'not found') (PYTHON=python3.x picks another)" >&2
    exit 1
fi

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
wanted=$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)
stamp=$venv/.requirements.sha256
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]; then
    "$venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=:all: \
        -r "$here/requirements.txt"
    echo "$wanted" >"$stamp"
fi
