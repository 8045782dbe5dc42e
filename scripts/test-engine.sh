#!/usr/bin/env bash
# Provision a private Docker Engine for the test suite and the demo.
#
#   scripts/test-engine.sh start    install (once) and start; prints the endpoint last
#   scripts/test-engine.sh stop     stop the engine this script started
#   scripts/test-engine.sh status   exit 0 when the private engine answers /_ping
#   scripts/test-engine.sh endpoint print the endpoint (unix:///abs/path.sock)
#
# If AGENTCELL_TEST_ENGINE=unix:///abs/path.sock is set, that engine is used as is: nothing
# is installed or started, and `stop` leaves it alone.
#
# Otherwise Docker Engine comes from Debian packages, unpacked into a private prefix
# (never installed system-wide) and started on a private socket, data root and exec root.
# /var/run/docker.sock is never touched. Facts this relies on (measured on Debian 12 build
# machines): sid's docker.io + containerd run on Debian 12's glibc, sid's runc does not (it
# needs glibc 2.38), so Debian 12's runc is used; dockerd needs iptables for bridge
# networks. If sid's engine does not start, Debian 13's docker.io + containerd are used.
#
# gVisor: Debian 12's `runsc` package (apt-get install, system-wide: /usr/bin/runsc) is
# registered as the runtime `runsc` in the engine's daemon config ($HOME_DIR/daemon.json),
# with the runtime argument `--network=none`: runsc 2022-12 refuses to start a container
# otherwise ("cannot run with network enabled in root network namespace"). The gVisor lane
# of scripts/test.sh runs the `linux-x64-gvisor` profile against it.
#
# Environment (all optional):
#   AGENTCELL_ENGINE_HOME   prefix for packages, unpacked files, data root and log
#                           (default /var/lib/agentcell-test-engine)
#   AGENTCELL_ENGINE_RUN    runtime dir: socket, exec root, pid file
#                           (default /run/agentcell-test-engine)
#   AGENTCELL_ENGINE_SUITE  debian suite for docker.io/containerd: sid or trixie (default sid)
#   AGENTCELL_ENGINE_BESIDE set to 1 for a second engine beside another on this host (the
#                           compat lane's Debian 13 engine beside the main one): it then
#                           never programs iptables and allocates bridge subnets from
#                           10.213.0.0/16 only. Every dockerd that programs iptables flushes
#                           the Docker chains (DOCKER, DOCKER-ISOLATION-STAGE-1/2, and in 28
#                           DOCKER-FORWARD/-BRIDGE/-CT) when it starts (libnetwork's
#                           removeIPChains), which would cut the other engine's bridge
#                           networks off; and two daemons allocating from the same default
#                           pools would route one subnet to two bridges. Without iptables the
#                           second engine's `outbound` networks reach host listeners through
#                           their gateway, but not beyond the host (no NAT, FORWARD drops).
#                           Give such an engine its own AGENTCELL_ENGINE_HOME and _RUN.
#   AGENTCELL_ENGINE_INSTALL where the Debian packages are downloaded and unpacked (default
#                           $AGENTCELL_ENGINE_HOME): a second engine may share the first's
#   AGENTCELL_ENGINE_NETNS  run the engine inside the named network namespace (created when
#                           missing, with net.ipv4.ip_forward 0 there; deleted on stop): the
#                           state of a just-booted host, for the tests of the library's
#                           refusal. Needs AGENTCELL_ENGINE_BESIDE=1. The host's own
#                           forwarding is not touched then.
#   AGENTCELL_ENGINE_LIVE_RESTORE set to 1 for "live-restore": true in the daemon config
#                           (containers keep running across a dockerd restart)
#   AGENTCELL_ENGINE_EXPERIMENTAL set to 1 for "experimental": true in the daemon config:
#                           the Engine's checkpoint endpoints (POST/GET/DELETE
#                           /containers/{id}/checkpoints, start ?checkpoint=) answer only
#                           then. For the checkpoint investigation (docs/profiles.md,
#                           "Checkpoints (memory state)"); give it its own _HOME, _RUN and
#                           BESIDE=1, never the shared test engine
#
# What a start changes on the host (a just-booted machine has none of it), before dockerd
# starts: net.ipv4.ip_forward is set to 1 and, when this script turned it on, the iptables
# filter FORWARD policy to DROP — what dockerd does itself when it turns forwarding on. A
# dockerd started with forwarding off reports `IPv4Forwarding: false` for its whole life and
# warns on every create on a bridge network, which the library refuses (measured on 28.5.2,
# 2026-12-02: the sysctl is read once when the daemon starts). After start, `/info` is read:
# IPv4Forwarding false, or a warning other than the known harmless ones, fails the start with
# the fix named.
set -euo pipefail

HOME_DIR=${AGENTCELL_ENGINE_HOME:-/var/lib/agentcell-test-engine}
RUN_DIR=${AGENTCELL_ENGINE_RUN:-/run/agentcell-test-engine}
SUITE=${AGENTCELL_ENGINE_SUITE:-sid}
INSTALL_DIR=${AGENTCELL_ENGINE_INSTALL:-$HOME_DIR}
NETNS=${AGENTCELL_ENGINE_NETNS:-}
SOCK="$RUN_DIR/docker.sock"
PIDFILE="$RUN_DIR/dockerd.pid"
LOG="$HOME_DIR/dockerd-$SUITE.log"
ROOT="$INSTALL_DIR/root-$SUITE"
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
BESIDE_ARGS=()
if [ "${AGENTCELL_ENGINE_BESIDE:-}" = 1 ]; then
  BESIDE_ARGS=(--iptables=false --ip6tables=false --ip-forward=false --default-address-pool base=10.213.0.0/16,size=24)
fi
if [ -n "$NETNS" ] && [ "${AGENTCELL_ENGINE_BESIDE:-}" != 1 ]; then
  printf 'test-engine: AGENTCELL_ENGINE_NETNS needs AGENTCELL_ENGINE_BESIDE=1 (an engine in a namespace of its own must not program iptables)\n' >&2
  exit 1
fi

say() { printf 'test-engine: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

apt_private() { # suite, then apt-get args: apt-get against a private source list for one suite
  local suite=$1; shift
  local dir="$INSTALL_DIR/apt-$suite"
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  printf 'deb [signed-by=%s] http://deb.debian.org/debian %s main\n' "$KEYRING" "$suite" >"$dir/sources.list"
  apt-get -q -o APT::Sandbox::User=root -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" "$@"
}

fetch() { # suite, packages...: download .debs into $INSTALL_DIR/debs-<suite> unless present
  local suite=$1; shift
  local into="$INSTALL_DIR/debs-$suite"
  mkdir -p "$into"
  local missing=()
  for p in "$@"; do compgen -G "$into/${p}_*.deb" >/dev/null || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  [ -n "$(ls -A "$INSTALL_DIR/apt-$suite/lists" 2>/dev/null | grep -v partial)" ] ||
    apt_private "$suite" update >/dev/null
  (cd "$into" && apt_private "$suite" download "${missing[@]}" >/dev/null) ||
    die "cannot download ${missing[*]} from Debian $suite"
}

install_engine() {
  local stamp="$ROOT/.complete"
  [ -f "$stamp" ] && return 0
  command -v dpkg >/dev/null || die "cannot install: dpkg is missing (a Debian machine is expected)"
  case "$SUITE" in
    sid) fetch sid docker.io containerd ;;
    trixie) fetch trixie docker.io containerd ;;
    *) die "cannot install: unknown AGENTCELL_ENGINE_SUITE '$SUITE' (sid or trixie)" ;;
  esac
  fetch bookworm runc
  rm -rf "$ROOT" && mkdir -p "$ROOT"
  for deb in "$INSTALL_DIR/debs-$SUITE"/docker.io_*.deb "$INSTALL_DIR/debs-$SUITE"/containerd_*.deb \
    "$INSTALL_DIR/debs-bookworm"/runc_*.deb; do
    dpkg -x "$deb" "$ROOT"
  done
  [ -x "$ROOT/usr/sbin/dockerd" ] || die "cannot install: dockerd missing after unpacking"
  touch "$stamp"
}

install_host_tools() {
  # dockerd programs NAT/forwarding rules for bridge networks with iptables; curl and jq
  # talk to the engine from these scripts; runsc (gVisor) is the second runtime; openssl
  # makes the egress tests' self-signed certificates (tests/fixtures/tls_certificate.ts).
  local missing=() tool
  for tool in iptables curl jq runsc openssl; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "installing Debian's ${missing[*]}"
  apt-get -q update >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get -q install -y --no-install-recommends "${missing[@]}" >/dev/null
}

# The daemon config: the gVisor runtime (see the header), live-restore and experimental
# when asked. Rewritten on every start.
write_daemon_config() {
  local runsc; runsc=$(command -v runsc) || die "cannot register gVisor: runsc is missing (apt-get install -y runsc)"
  local live=false experimental=false
  [ "${AGENTCELL_ENGINE_LIVE_RESTORE:-}" = 1 ] && live=true
  [ "${AGENTCELL_ENGINE_EXPERIMENTAL:-}" = 1 ] && experimental=true
  printf '{"runtimes": {"runsc": {"path": "%s", "runtimeArgs": ["--network=none"]}}, "live-restore": %s, "experimental": %s}\n' \
    "$runsc" "$live" "$experimental" >"$HOME_DIR/daemon.json"
}

# The kernel state dockerd reads once when it starts (see the header). On the host:
# forwarding on (FORWARD policy DROP when this turned it on, as dockerd does). In a network
# namespace of the engine's own (AGENTCELL_ENGINE_NETNS): forwarding off, on purpose.
prepare_kernel() {
  if [ -n "$NETNS" ]; then
    [ -e "/run/netns/$NETNS" ] || ip netns add "$NETNS" || die "cannot create network namespace $NETNS (ip netns add)"
    ip netns exec "$NETNS" sysctl -qw net.ipv4.ip_forward=0 || die "cannot turn forwarding off in network namespace $NETNS"
    return 0
  fi
  if [ "$(sysctl -n net.ipv4.ip_forward)" != 1 ]; then
    say "turning on net.ipv4.ip_forward (was 0, as on a just-booted host); iptables FORWARD policy DROP"
    sysctl -qw net.ipv4.ip_forward=1 || die "cannot set net.ipv4.ip_forward=1 (sysctl -w net.ipv4.ip_forward=1 as root)"
    iptables -P FORWARD DROP || die "cannot set the iptables FORWARD policy to DROP"
  fi
}

# Fail loudly on daemon state the suite cannot live with: `/info` IPv4Forwarding false
# (outside the on-purpose namespace), or any warning but the known harmless ones.
check_info() {
  local info forwarding warnings
  info=$(curl -fsS --max-time 5 --unix-socket "$SOCK" http://docker/info) || die "cannot read /info from $SOCK"
  forwarding=$(printf '%s' "$info" | jq -r '.IPv4Forwarding')
  if [ -z "$NETNS" ] && [ "$forwarding" != true ]; then
    die "the engine started with IPv4 forwarding off (/info IPv4Forwarding: $forwarding), so every bridge network would be refused: sysctl -w net.ipv4.ip_forward=1, then bash $0 stop and start again"
  fi
  # Harmless here: the netns engine's own forwarding warning (on purpose).
  warnings=$(printf '%s' "$info" | jq -r --arg netns "$NETNS" '.Warnings // [] | .[] | select(($netns != "" and . == "WARNING: IPv4 forwarding is disabled") | not)')
  [ -z "$warnings" ] || die "the engine started with warnings the suite cannot live with: $warnings (see $LOG)"
}

ping_engine() { curl -fsS --max-time 2 --unix-socket "$SOCK" http://docker/_ping >/dev/null 2>&1; }

running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid; pid=$(cat "$PIDFILE")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

start_engine() {
  if running_pid >/dev/null && ping_engine; then say "reusing the running private engine"; return 0; fi
  mkdir -p "$RUN_DIR" "$HOME_DIR/data-$SUITE"
  rm -f "$SOCK" "$PIDFILE"
  write_daemon_config
  prepare_kernel
  say "starting dockerd ($SUITE) on $SOCK, log $LOG"
  # Detached from the caller's terminal and pipes: a daemon holding CI's stdout open
  # would keep the run from finishing.
  local enter=()
  [ -n "$NETNS" ] && enter=(nsenter "--net=/run/netns/$NETNS")
  PATH="$ROOT/usr/bin:$ROOT/usr/sbin:$ROOT/sbin:$PATH" setsid nohup "${enter[@]}" "$ROOT/usr/sbin/dockerd" \
    --host "unix://$SOCK" \
    --data-root "$HOME_DIR/data-$SUITE" \
    --exec-root "$RUN_DIR/exec" \
    --pidfile "$PIDFILE" \
    --config-file "$HOME_DIR/daemon.json" \
    --bridge none \
    --exec-opt native.cgroupdriver=cgroupfs \
    --storage-driver overlay2 \
    --log-level warn \
    "${BESIDE_ARGS[@]}" \
    </dev/null >"$LOG" 2>&1 &
  local i
  for i in $(seq 1 120); do
    ping_engine && return 0
    if [ "$i" -gt 3 ] && ! running_pid >/dev/null && ! pgrep -f "dockerd --host unix://$SOCK" >/dev/null; then
      break
    fi
    sleep 0.5
  done
  say "dockerd did not answer /_ping; last log lines:"
  tail -n 20 "$LOG" >&2 || true
  stop_engine || true
  return 1
}

stop_engine() {
  local pid
  if ! pid=$(running_pid); then
    say "no private engine is running"
    if [ -n "$NETNS" ] && [ -e "/run/netns/$NETNS" ]; then ip netns delete "$NETNS" || true; fi
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  local i
  for i in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
  rm -f "$SOCK" "$PIDFILE"
  say "stopped the private engine (pid $pid)"
  if [ -n "$NETNS" ] && [ -e "/run/netns/$NETNS" ]; then ip netns delete "$NETNS" || true; fi
}

print_version() {
  local v
  v=$(curl -fsS --max-time 5 --unix-socket "$SOCK" http://docker/version)
  say "engine $(printf '%s' "$v" | sed -E 's/.*"Version":"([^"]*)".*/\1/'), API $(printf '%s' "$v" | sed -E 's/.*"ApiVersion":"([^"]*)".*/\1/')"
}

main() {
  local cmd=${1:-start}
  if [ -n "${AGENTCELL_TEST_ENGINE:-}" ]; then
    case "$AGENTCELL_TEST_ENGINE" in
      unix:///*) ;;
      *) die "AGENTCELL_TEST_ENGINE must be unix:///absolute/path.sock, got '$AGENTCELL_TEST_ENGINE'" ;;
    esac
    SOCK=${AGENTCELL_TEST_ENGINE#unix://}
    case "$cmd" in
      start|status) ping_engine || die "the given engine $AGENTCELL_TEST_ENGINE does not answer /_ping"
        [ "$cmd" = start ] && print_version && echo "$AGENTCELL_TEST_ENGINE"; return 0 ;;
      stop) say "leaving the given engine alone"; return 0 ;;
      endpoint) echo "$AGENTCELL_TEST_ENGINE"; return 0 ;;
    esac
  fi
  case "$cmd" in
    start)
      [ "$(id -u)" = 0 ] || die "cannot start a private engine: root is required (or set AGENTCELL_TEST_ENGINE)"
      install_host_tools
      install_engine
      if ! start_engine; then
        if [ "$SUITE" = sid ] && [ -z "${AGENTCELL_ENGINE_SUITE:-}" ]; then
          say "sid's engine did not start; falling back to Debian 13 (trixie)"
          SUITE=trixie; LOG="$HOME_DIR/dockerd-$SUITE.log"; ROOT="$INSTALL_DIR/root-$SUITE"
          install_engine
          start_engine || die "cannot start dockerd from Debian $SUITE either"
        else
          die "cannot start dockerd from Debian $SUITE"
        fi
      fi
      check_info
      print_version
      echo "unix://$SOCK"
      ;;
    stop) stop_engine ;;
    status) ping_engine ;;
    endpoint) echo "unix://$SOCK" ;;
    *) die "usage: $0 start|stop|status|endpoint" ;;
  esac
}

main "$@"
