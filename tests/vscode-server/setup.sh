#!/bin/sh
# Installs a real VS Code for the extension's end-to-end test: code-server
# (VS Code served to a browser) and puppeteer-core (which drives Debian's
# chromium; it downloads no browser), pinned in package-lock.json, into
# node_modules/. Only when the lock file changed since the last install, so
# a second run takes well under a second.
#
# code-server 4.99.x is the last line that runs on Node 20. Its install
# script installs VS Code's own dependencies (from npm) and builds their
# native parts (node-pty and others, with node-gyp); one of them,
# @vscode/ripgrep, would download a ripgrep binary from a host the tests
# cannot reach, so Debian's rg is put in the cache it looks in first.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
stamp=$here/node_modules/.agentd-setup.sha256

fail() {
    echo "setup.sh: $*" >&2
    exit 1
}
command -v npm >/dev/null 2>&1 || fail "npm is not installed (apt-get install nodejs npm)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" = 20 ] || fail "code-server 4.99 needs Node.js 20, this is $(node -v)"
command -v rg >/dev/null 2>&1 || fail "rg is not installed (scripts/test-deps installs Debian's ripgrep)"
command -v chromium >/dev/null 2>&1 || fail "chromium is not installed (scripts/test-deps installs Debian's chromium)"

wanted=$(sha256sum "$here/package-lock.json" | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null || true)" = "$wanted" ]; then
    exit 0
fi
rm -f "$stamp"
(cd "$here" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin" "$scratch/tmp/vscode-ripgrep-cache-1.15.11"
cp "$(command -v rg)" "$scratch/bin/rg"
tar -czf "$scratch/tmp/vscode-ripgrep-cache-1.15.11/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$scratch/bin" rg

unsafe_perm=false
[ "$(id -u)" = 0 ] && unsafe_perm=true
(
    cd "$here/node_modules/code-server"
    TMPDIR=$scratch/tmp \
        npm_config_user_agent="npm/$(npm -v) node/$(node -v) linux x64" \
        npm_config_yes=true \
        npm_config_unsafe_perm=$unsafe_perm \
        sh postinstall.sh
)
(cd "$here" && npm rebuild argon2 --loglevel=error)
"$here/node_modules/.bin/code-server" --version >/dev/null || fail "code-server was installed but does not start"
echo "$wanted" >"$stamp"
