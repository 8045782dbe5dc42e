#!/usr/bin/env bash
# `npm run demo`: the quick start on a real engine. Installs the toolchain if missing,
# provisions the private engine unless AGENTCELL_TEST_ENGINE names one, prepares the
# busybox guest image if absent, then runs examples/quickstart.ts under Node.
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
AGENTCELL_IMAGE=$(bash scripts/guest-images.sh busybox) || exit 1
AGENTCELL_ENGINE=$AGENTCELL_TEST_ENGINE AGENTCELL_IMAGE=$AGENTCELL_IMAGE node examples/quickstart.ts
