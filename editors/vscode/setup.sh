#!/bin/sh
# Builds the extension for the tests and for packaging: installs the
# packages pinned in package-lock.json into node_modules/ (`npm ci`, only
# when the lock file changed since the last install; install scripts are not
# run: none of these packages needs one), copies the project's proto into
# proto/ (the extension reads it at run time) and compiles src/ and test/
# into out/ with the pinned TypeScript.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
stamp=$here/node_modules/.agentd-setup.sha256

if ! command -v npm >/dev/null 2>&1; then
    echo "setup.sh: npm is not installed: install Node.js 20 or newer with npm (on Debian and Ubuntu: apt-get install nodejs npm)" >&2
    exit 1
fi

wanted=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]; then
    (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$wanted" >"$stamp"
fi
mkdir -p "$here/proto/agentd/v1"
cp "$here/../../proto/agentd/v1/agentd.proto" "$here/proto/agentd/v1/agentd.proto"
rm -rf "$here/out"
(cd "$here" && node_modules/.bin/tsc -p .)
