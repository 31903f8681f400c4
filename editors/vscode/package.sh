#!/bin/sh
# Packages the extension as agentd-vscode.vsix (beside this script), with
# the pinned @vscode/vsce, after setup.sh has built it. Install it with
# `code --install-extension editors/vscode/agentd-vscode.vsix`.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
sh "$here/setup.sh"
cd "$here"
node_modules/.bin/vsce package --allow-missing-repository --out agentd-vscode.vsix >/dev/null
echo "$here/agentd-vscode.vsix"
