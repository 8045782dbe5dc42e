#!/usr/bin/env bash
# Make sure the pinned toolchain (Deno, Bun, Node from package.json) and the npm
# dependencies are in node_modules; runs `npm ci` when any of them is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
ok=yes
for tool in deno bun node; do
  [ -x "node_modules/.bin/$tool" ] && "node_modules/.bin/$tool" --version >/dev/null 2>&1 || ok=""
done
[ -f node_modules/.package-lock.json ] || ok=""
# package-lock.json changed since the last install
[ -n "$ok" ] && [ package-lock.json -nt node_modules/.package-lock.json ] && ok=""
if [ -z "$ok" ]; then
  echo "toolchain: installing Deno, Bun, Node and dependencies into node_modules (npm ci)" >&2
  npm ci --no-audit --no-fund >&2
fi
