#!/usr/bin/env bash
# The real third-party ACP agent of the engine lane (tests/engine/acp_real_agent.test.ts):
# `@zed-industries/claude-agent-acp`, pinned by tests/fixtures/acp-agent/package-lock.json,
# installed with `npm ci` into its own directory outside the project's node_modules
# (${AGENTCELL_ENGINE_HOME:-/var/lib/agentcell-test-engine}/acp-agent), so the test imports
# exactly the agent's tree into a sandbox. Idempotent: an install of the same lock file is
# kept. Prints the directory (AGENTCELL_TEST_ACP_AGENT_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/node_modules/.bin:$PATH"
fixture=tests/fixtures/acp-agent
dir="${AGENTCELL_ENGINE_HOME:-/var/lib/agentcell-test-engine}/acp-agent"
if ! cmp -s "$fixture/package-lock.json" "$dir/package-lock.json" 2>/dev/null || [ ! -f "$dir/node_modules/@zed-industries/claude-agent-acp/package.json" ]; then
  printf 'acp-agent: installing the pinned ACP agent into %s\n' "$dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "$fixture/package.json" "$fixture/package-lock.json" "$dir/"
  (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >&2)
fi
printf '%s\n' "$dir"
