#!/usr/bin/env bash
# The real browser of the engine lane (tests/engine/ports_browser.test.ts): Debian's headless
# Chromium. Installs `chromium-headless-shell` from the configured apt sources when it is
# missing (falling back to `chromium` where the sources lack it), system-wide like the test
# engine's host tools (scripts/test-engine.sh), and prints the browser's absolute path.
# Idempotent: a browser already installed is only located.
set -euo pipefail

find_browser() {
  command -v chromium-headless-shell 2>/dev/null && return 0
  [ -x /usr/lib/chromium/chromium-headless-shell ] && { echo /usr/lib/chromium/chromium-headless-shell; return 0; }
  command -v chromium 2>/dev/null && return 0
  return 1
}

if ! find_browser >/dev/null; then
  printf 'test-browser: installing Debian'"'"'s headless Chromium\n' >&2
  apt-get -q update >/dev/null
  if apt-cache show chromium-headless-shell >/dev/null 2>&1; then package=chromium-headless-shell; else package=chromium; fi
  DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "$package" >/dev/null
fi
find_browser || { printf 'test-browser: cannot find a headless Chromium after installing it\n' >&2; exit 1; }
