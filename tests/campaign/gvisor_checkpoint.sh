#!/usr/bin/env bash
# Reproduce the gVisor checkpoint finding of docs/profiles.md ("Checkpoints (memory state)")
# on demand. Not part of the default suite: it needs root, runsc and an Engine with
# `"experimental": true`, which it starts itself BESIDE any other engine (own data root,
# exec root and socket; never the shared test engine), and stops again if it started it.
#
#   bash tests/campaign/gvisor_checkpoint.sh
#
# Most cases make a fresh keeper container shaped like the `linux-x64-gvisor` keeper (the
# create body of lib/docker/keeper/spec.ts as a library-made keeper reads back: runsc,
# read-only root, tmpfs /tmp, /home/sandbox and /dev/shm, a volume at /workspace, CapDrop
# ALL, no-new-privileges, the keeper uid 65533, PidsLimit 256, 256 MiB, 1 CPU, LogConfig
# none, private IPC and cgroup namespaces, NetworkMode none), starts the agent's memory
# holder as an exec (the agent uid 65534: a shell that draws 8 random bytes once, keeps them
# in a variable and counts in memory, writing "<token> <count>" to /tmp/state every 0.2 s),
# then drives the Engine's checkpoint endpoints with curl:
#   POST /containers/{id}/checkpoints {CheckpointID, Exit[, CheckpointDir]},
#   POST /containers/{id}/start?checkpoint=…[&checkpoint-dir=…]
# A restore counts as keeping memory when the holder is running again with the same
# token and a count at least the one read just before the checkpoint (a restart would draw
# a new token and count from 1). A restore that fails with moby's known race "failed to
# upload checkpoint to containerd: commit failed: content sha256:…: already exists"
# (moby/moby#42900) is retried up to 5 times, 1 s apart, and the retries are printed.
#
# Prints one line per case (`ok` or `FAILED`, with the Engine's error verbatim) and the
# versions. Exits 0 when every case behaved as docs/profiles.md records (the expected
# outcome is part of each line), 1 otherwise: a change of outcome (say a newer runsc or
# Engine) is what this script is for.
#
# Environment (optional): AGENTCELL_CHECKPOINT_ENGINE_HOME (default
# /var/lib/agentcell-gvisor-exp), AGENTCELL_CHECKPOINT_ENGINE_RUN (default
# /run/agentcell-gvisor-exp), AGENTCELL_ENGINE_INSTALL (where the Engine's Debian packages
# are unpacked; default the shared test engine's /var/lib/agentcell-test-engine, read only).
set -euo pipefail
cd "$(dirname "$0")/../.."

HOME_DIR=${AGENTCELL_CHECKPOINT_ENGINE_HOME:-/var/lib/agentcell-gvisor-exp}
RUN_DIR=${AGENTCELL_CHECKPOINT_ENGINE_RUN:-/run/agentcell-gvisor-exp}
SOCK="$RUN_DIR/docker.sock"
ENDPOINT="unix://$SOCK"
RUNSC_ROOT="$RUN_DIR/exec/runtime-runc/moby"
PREFIX="agentcell-ckpt-$$"
started=""; made=(); volumes=(); mismatches=0

engine() { # test-engine.sh against our own experimental engine
  env -u AGENTCELL_TEST_ENGINE AGENTCELL_ENGINE_HOME="$HOME_DIR" AGENTCELL_ENGINE_RUN="$RUN_DIR" \
    AGENTCELL_ENGINE_INSTALL="${AGENTCELL_ENGINE_INSTALL:-/var/lib/agentcell-test-engine}" \
    AGENTCELL_ENGINE_BESIDE=1 AGENTCELL_ENGINE_EXPERIMENTAL=1 bash scripts/test-engine.sh "$@"
}

# api METHOD PATH [BODY]: sets STATUS and BODY (the reply)
api() {
  local out
  out=$(curl -sS --max-time 60 --unix-socket "$SOCK" -X "$1" -H 'Content-Type: application/json' \
    ${3:+-d "$3"} -w '\n%{http_code}' "http://docker/v1.51$2")
  STATUS=${out##*$'\n'}; BODY=${out%$'\n'*}
}
message() { printf '%s' "$BODY" | jq -r '.message // "" | split("\n")[0]' 2>/dev/null || true; }

cleanup() {
  local id
  for id in "${made[@]}"; do
    api DELETE "/containers/$id?force=true"
    # A sandbox checkpointed twice leaves runsc state "paused" behind in this engine's
    # runtime root, which the container's removal does not clear; `runsc delete -force`
    # removes it while panicking ("invalid state transition: paused => stopped", exit 2).
    if [ -e "$RUNSC_ROOT/${id}_sandbox:${id}.state" ]; then runsc --root "$RUNSC_ROOT" delete -force "$id" >/dev/null 2>&1 || true; fi
    # Its containerd shim keeps running too, past the removal and past dockerd's stop: end
    # the shim of exactly this container on this engine, by its PID.
    local shim
    for shim in $(pgrep -f -x ".*/containerd-shim-runc-v2 -namespace moby -id $id -address $RUN_DIR/exec/containerd/containerd.sock" || true); do
      kill -TERM "$shim" 2>/dev/null || true
    done
  done
  for id in "${volumes[@]}"; do api DELETE "/volumes/$id?force=true"; done
  rm -rf "$HOME_DIR/checkpoints-$PREFIX"
  if [ -n "$started" ]; then engine stop || true; fi
}
trap cleanup EXIT

engine status 2>/dev/null || started=yes
engine start >/dev/null
IMAGE=$(AGENTCELL_TEST_ENGINE=$ENDPOINT AGENTCELL_ENGINE_HOME=$HOME_DIR bash scripts/guest-images.sh busybox)

# keeper NAME NETWORKMODE: a keeper-shaped container and its volume; sets ID
keeper() {
  local volume="$PREFIX-$1-volume"
  api POST /volumes/create "$(jq -nc --arg n "$volume" '{Name: $n}')"
  volumes+=("$volume")
  local body
  body=$(jq -nc --arg image "$IMAGE" --arg volume "$volume" --arg network "$2" '{
    Image: $image, User: "65533:65533", Entrypoint: ["/bin/sh"],
    Cmd: ["-c", "trap '\''exit 0'\'' TERM INT; while :; do sleep 2147483647 & wait $!; done"],
    Env: ["HOME=/home/sandbox", "TMPDIR=/tmp", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    WorkingDir: "/workspace",
    HostConfig: {
      Runtime: "runsc", NetworkMode: $network, LogConfig: {Type: "none"},
      ReadonlyRootfs: true, CapDrop: ["ALL"], SecurityOpt: ["no-new-privileges"],
      IpcMode: "private", CgroupnsMode: "private", RestartPolicy: {Name: "no"},
      Memory: 268435456, MemorySwap: 268435456, NanoCpus: 1000000000, PidsLimit: 256, ShmSize: 8388608,
      Tmpfs: {
        "/dev/shm": "rw,nosuid,nodev,noexec,size=8388608,nr_inodes=8192,mode=1777",
        "/home/sandbox": "rw,nosuid,nodev,size=33554432,nr_inodes=8192,uid=65534,gid=65534,mode=0700",
        "/tmp": "rw,nosuid,nodev,size=33554432,nr_inodes=8192,uid=65534,gid=65534,mode=1777"
      },
      Ulimits: [{Name: "core", Soft: 0, Hard: 0}, {Name: "nofile", Soft: 4096, Hard: 4096},
        {Name: "nproc", Soft: 65536, Hard: 65536}, {Name: "msgqueue", Soft: 819200, Hard: 819200},
        {Name: "memlock", Soft: 65536, Hard: 65536}, {Name: "sigpending", Soft: 1024, Hard: 1024}],
      Mounts: [{Type: "volume", Source: $volume, Target: "/workspace", VolumeOptions: {NoCopy: true}}]
    }}')
  api POST "/containers/create?name=$PREFIX-$1" "$body"
  [ "$STATUS" = 201 ] || { echo "cannot create the $1 keeper: $(message)"; exit 1; }
  ID=$(printf '%s' "$BODY" | jq -r .Id); made+=("$ID")
  api POST "/containers/$ID/start"
  [ "$STATUS" = 204 ] || { echo "cannot start the $1 keeper: $(message)"; exit 1; }
}

# exec_in ID USER CMD...: an exec started detached (as `docker exec -d` does: its stdio stays
# on the Engine's pipes); with ATTACH=1 attached instead, printing its output to the end.
exec_in() {
  local id=$1 user=$2; shift 2
  local cmd; cmd=$(printf '%s\n' "$@" | jq -R . | jq -sc .)
  api POST "/containers/$id/exec" "$(jq -nc --arg u "$user" --argjson c "$cmd" --argjson a "${ATTACH:-0}" \
    '{User: $u, Cmd: $c, AttachStdout: ($a == 1), AttachStderr: ($a == 1), Tty: ($a == 1)}')"
  [ "$STATUS" = 201 ] || { printf 'exec refused: %s' "$(message)"; return 1; }
  local exec; exec=$(printf '%s' "$BODY" | jq -r .Id)
  if [ "${ATTACH:-0}" = 1 ]; then
    # Tty: true, so the reply is the raw output (no stream framing).
    curl -sS --max-time 20 --unix-socket "$SOCK" -X POST -H 'Content-Type: application/json' \
      -d '{"Detach": false, "Tty": true}' "http://docker/v1.51/exec/$exec/start"
  else
    api POST "/exec/$exec/start" '{"Detach": true}'
  fi
}
state_of() { { ATTACH=1 exec_in "$1" 65534:65534 /bin/sh -c 'cat /tmp/state 2>&1' || true; } | tr -d '\r'; }
running() { api GET "/containers/$1/json"; printf '%s' "$BODY" | jq -r '.State.Status'; }

# The agent's memory holder. STDIO=engine leaves its stdio on the Engine's exec pipes;
# STDIO=null moves them to /dev/null first.
HOLDER='r=$(head -c 8 /dev/urandom | od -An -tx1 | tr -d " \n"); i=0; while :; do i=$((i+1)); echo "$r $i" > /tmp/state; sleep 0.2; done'
holder() { # ID STDIO
  local prefix=""
  [ "$2" = null ] && prefix='exec </dev/null >/dev/null 2>&1; '
  exec_in "$1" 65534:65534 /bin/sh -c "$prefix$HOLDER"
  sleep 1.5
}

# plain NAME NETWORKMODE: a runsc container with none of the hardening whose main process
# is the memory holder (as root); sets ID
plain() {
  api POST "/containers/create?name=$PREFIX-$1" "$(jq -nc --arg image "$IMAGE" --arg network "$2" --arg holder "$HOLDER" \
    '{Image: $image, Cmd: ["/bin/sh", "-c", $holder], HostConfig: {Runtime: "runsc", NetworkMode: $network}}')"
  [ "$STATUS" = 201 ] || { echo "cannot create the $1 container: $(message)"; exit 1; }
  ID=$(printf '%s' "$BODY" | jq -r .Id); made+=("$ID")
  api POST "/containers/$ID/start"
  [ "$STATUS" = 204 ] || { echo "cannot start the $1 container: $(message)"; exit 1; }
  sleep 1.5
}

checkpoint() { # ID NAME EXIT [DIR]
  api POST "/containers/$1/checkpoints" "$(jq -nc --arg n "$2" --argjson e "$3" --arg d "${4:-}" \
    '{CheckpointID: $n, Exit: $e} + (if $d == "" then {} else {CheckpointDir: $d} end)')"
}

RETRIES=0
restore() { # ID NAME [DIR]
  local try
  RETRIES=0
  for try in 1 2 3 4 5 6; do
    api POST "/containers/$1/start?checkpoint=$2${3:+&checkpoint-dir=$3}"
    [ "$STATUS" = 204 ] && return 0
    case "$(message)" in
      *"failed to upload checkpoint to containerd: commit failed: content sha256:"*": already exists"*) RETRIES=$try; sleep 1 ;;
      *) return 1 ;;
    esac
  done
  return 1
}

# kept ID BEFORE: the holder runs again with its token and a count ≥ BEFORE's
kept() {
  sleep 1
  local after; after=$(state_of "$1")
  local t0=${2% *} c0=${2#* } t1=${after% *} c1=${after#* }
  if [ "$t0" = "$t1" ] && [ "$c1" -ge "$c0" ] 2>/dev/null; then
    KEPT="memory kept: before checkpoint '$2', after restore '$after'"; return 0
  fi
  KEPT="memory NOT kept: before checkpoint '$2', after restore '$after'"; return 1
}

report() { # CASE EXPECTED ACTUAL DETAIL
  local verdict=ok
  [ "$2" = "$3" ] || { verdict=UNEXPECTED; mismatches=$((mismatches + 1)); }
  printf '%-20s %-10s expected %-7s got %-7s %s\n' "$1" "$verdict" "$2" "$3" "$4"
}
retried() { [ "$RETRIES" -gt 0 ] && printf ' (after %d "already exists" retries, moby/moby#42900)' "$RETRIES" || true; }

printf 'versions: %s; runsc %s; kernel %s; daemon.json %s\n' \
  "$(curl -sS --unix-socket "$SOCK" http://docker/version | jq -r '"Engine \(.Version) (API \(.ApiVersion)), containerd \(.Components[] | select(.Name == "containerd") | .Version), experimental \(.Experimental)"')" \
  "$(runsc --version | head -n 1 | sed 's/runsc version //')" "$(uname -r)" "$(cat "$HOME_DIR/daemon.json")"

# cycle ID NAME [BETWEEN]: checkpoint ID (Exit true), wait until the Engine reads the keeper
# as not running (its 201 can come first: a start then answers 304) or, if named, run the
# function BETWEEN instead (it may add to DETAIL), restore, check the memory against BEFORE
# (default: the holder's state read now). Sets GOT (ok or FAILED) and DETAIL.
cycle() {
  local id=$1 name=$2 between=${3:-} before=${BEFORE:-}
  [ -n "$before" ] || before=$(state_of "$id")
  DETAIL=""
  checkpoint "$id" "$name" true
  if [ "$STATUS" != 201 ]; then GOT=FAILED; DETAIL="checkpoint: HTTP $STATUS $(message)"; return; fi
  if [ -n "$between" ]; then "$between" "$id"; else api POST "/containers/$id/wait?condition=not-running"; fi
  if restore "$id" "$name"; then
    if kept "$id" "$before"; then GOT=ok; else GOT=FAILED; fi
    DETAIL="$DETAIL$KEPT$(retried)"
  else GOT=FAILED; DETAIL="${DETAIL}restore: HTTP $STATUS $(message)"; fi
}

# 1. The keeper exactly as the library makes it (NetworkMode none).
keeper none none; holder "$ID" null
cycle "$ID" c1; report none-network FAILED "$GOT" "$DETAIL"

# 2. The same with NetworkMode bridge on this engine, which has no bridge (test-engine.sh
#    starts dockerd with --bridge none): the keeper's `bridge` entry has an empty NetworkID,
#    nothing is attached. Not what the library sends. Also checks the files written to the
#    three tmpfs mounts before the checkpoint.
keeper bridge bridge; holder "$ID" null; bridge_id=$ID
ATTACH=1 exec_in "$ID" 65534:65534 /bin/sh -c 'echo h > $HOME/h; echo s > /dev/shm/s; echo t > /tmp/t' >/dev/null
cycle "$ID" c1
if [ "$GOT" = ok ]; then
  files=$(ATTACH=1 exec_in "$ID" 65534:65534 /bin/sh -c 'cat $HOME/h /dev/shm/s /tmp/t | tr -d "\n"' | tr -d '\r')
  if [ "$files" = hst ]; then DETAIL="$DETAIL; tmpfs files kept"; else GOT=FAILED; DETAIL="$DETAIL; tmpfs files read '$files'"; fi
fi
report bridge-noop ok "$GOT" "$DETAIL"

# 3. A second checkpoint of the sandbox restored in case 2, then a plain start.
cycle "$bridge_id" c2
if [ "$GOT" = FAILED ]; then api POST "/containers/$bridge_id/start"; DETAIL="$DETAIL; a plain start then: HTTP $STATUS $(message)"; fi
report second-checkpoint FAILED "$GOT" "$DETAIL"

# 4. The holder's stdio left on the Engine's exec pipes (as every process the library runs).
keeper stdio bridge; holder "$ID" engine
cycle "$ID" c1; report exec-stdio FAILED "$GOT" "$DETAIL"

# 4b. Without any of the hardening: a plain runsc container, NetworkMode none and the
#     engine's default (bridge, attaching nothing here). The network mode decides.
plain plain-none none; cycle "$ID" c1; report plain-none FAILED "$GOT" "$DETAIL"
plain plain-default default; cycle "$ID" c1; report plain-default ok "$GOT" "$DETAIL"

# 5. A checkpoint that leaves the sandbox running (Exit false).
keeper leave bridge; holder "$ID" null
checkpoint "$ID" c1 false
if [ "$STATUS" = 201 ]; then report leave-running FAILED ok "the keeper is $(running "$ID") after the checkpoint"
else detail="checkpoint: HTTP $STATUS $(message)"; report leave-running FAILED FAILED "$detail; the keeper is $(running "$ID") after it"; fi

# 6. Restore into a new container: the checkpoint written to a directory of ours, the new
#    keeper started from it.
keeper source bridge; holder "$ID" null
mkdir -p "$HOME_DIR/checkpoints-$PREFIX"
checkpoint "$ID" c1 true "$HOME_DIR/checkpoints-$PREFIX"
if [ "$STATUS" != 201 ]; then report new-container FAILED FAILED "checkpoint: $(message)"
else
  keeper target bridge; api POST "/containers/$ID/stop?t=1"
  if restore "$ID" c1 "$HOME_DIR/checkpoints-$PREFIX"; then report new-container FAILED ok "restored"
  else report new-container FAILED FAILED "restore: HTTP $STATUS $(message)"; fi
fi

# 7. A checkpoint of a keeper paused by the Engine (what sandbox.pause() does). The Engine
#    keeps reporting the checkpointed keeper as paused (State.Status "paused", the old Pid)
#    and refuses its start ("cannot start a paused container, try unpause instead", 409);
#    after an unpause it reads "exited", sometimes "running" for a moment first, so the
#    restore waits for not-running.
unpause_first() {
  api GET "/containers/$1/json"; DETAIL="state after checkpoint $(printf '%s' "$BODY" | jq -c '.State | {Status, Paused}')"
  api POST "/containers/$1/start?checkpoint=c1"; DETAIL="$DETAIL; start before unpause: HTTP $STATUS $(message)"
  api POST "/containers/$1/unpause"; DETAIL="$DETAIL; unpause: HTTP $STATUS; "
  api POST "/containers/$1/wait?condition=not-running"
}
keeper paused bridge; holder "$ID" null; before=$(state_of "$ID"); api POST "/containers/$ID/pause"
BEFORE=$before cycle "$ID" c1 unpause_first; report paused ok "$GOT" "$DETAIL"

[ "$mismatches" -eq 0 ] && echo "every case as docs/profiles.md records" || echo "$mismatches case(s) differ from docs/profiles.md"
[ "$mismatches" -eq 0 ]
