#!/usr/bin/env bash
# `npm run demo`: the quick start on a real engine. Installs the toolchain if missing,
# provisions the private engine unless AGENTCELL_TEST_ENGINE names one, prepares the
# busybox guest image if absent, then runs examples/quickstart.ts under Node.
# `npm run demo:acp` (`scripts/demo.sh acp`): the same with the node guest and
# examples/acp-session.ts. AGENTCELL_DEMO_RUNTIME=deno|bun runs the example there instead.
# Stops the engine afterwards if this run started it.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/toolchain.sh || exit 1
export PATH="$PWD/node_modules/.bin:$PATH"
started=""
if [ -z "${AGENTCELL_TEST_ENGINE:-}" ]; then
  bash scripts/test-engine.sh status 2>/dev/null || started=yes
  AGENTCELL_TEST_ENGINE=$(bash scripts/test-engine.sh start | tail -n 1) || exit 1
  export AGENTCELL_TEST_ENGINE
fi
[ -n "$started" ] && trap 'env -u AGENTCELL_TEST_ENGINE bash scripts/test-engine.sh stop' EXIT
case "${1:-quickstart}" in
  quickstart) guest=busybox example=examples/quickstart.ts ;;
  acp) guest=node example=examples/acp-session.ts ;;
  *) echo "usage: $0 [quickstart|acp]" >&2; exit 1 ;;
esac
case "${AGENTCELL_DEMO_RUNTIME:-node}" in
  node) run=(node) ;;
  deno) run=(deno run -A) ;;
  bun) run=(bun) ;;
  *) echo "AGENTCELL_DEMO_RUNTIME must be node, deno or bun" >&2; exit 1 ;;
esac
AGENTCELL_IMAGE=$(bash scripts/guest-images.sh "$guest") || exit 1
AGENTCELL_ENGINE=$AGENTCELL_TEST_ENGINE AGENTCELL_IMAGE=$AGENTCELL_IMAGE "${run[@]}" "$example"
