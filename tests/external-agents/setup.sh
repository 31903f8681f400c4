#!/bin/sh
# Prepares the external agents the end-to-end tests run as ACP agents:
# installs the packages pinned in package-lock.json into node_modules/ with
# `npm ci`, only when the lock file differs from the one last installed, so a
# second run takes well under a second. Install scripts are not run: none of
# these packages needs one. @zed-industries/claude-agent-acp runs Claude Code
# from @anthropic-ai/claude-agent-sdk's cli.js (plain JavaScript, with its
# ripgrep binaries inside the package), so nothing is downloaded at run time.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
stamp=$here/node_modules/.agentd-setup.sha256

if ! command -v npm >/dev/null 2>&1; then
    echo "setup.sh: npm is not installed: install Node.js 18 or newer with npm (on Debian and Ubuntu: apt-get install nodejs npm)" >&2
    exit 1
fi

wanted=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]; then
    (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$wanted" >"$stamp"
fi
