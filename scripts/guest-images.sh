#!/usr/bin/env bash
# Make the local guest images the tests and the demo use. No registry exists here, so
# images are imported from root filesystems built on this machine with the Engine's
# `POST /images/create?fromSrc=-` (what `docker import` does).
#
#   scripts/guest-images.sh busybox   print the busybox guest's sha256: image ID
#   scripts/guest-images.sh node      print the node guest's sha256: image ID
#   scripts/guest-images.sh dataset   print the dataset image's sha256: image ID
#   scripts/guest-images.sh dataset-foreign   print the foreign dataset image's sha256: ID
#
# The endpoint comes from AGENTCELL_TEST_ENGINE (unix:///abs/path.sock), else the private
# engine's default socket. Images are tagged agentcell-test/<name>:<version> so a second
# call reuses them; the library itself never uses tags (callers pass exact image IDs).
#
# busybox guest: Debian's busybox-static at /bin/busybox with every applet linked in /bin,
#   /home/sandbox, /tmp (1777), /workspace; Env only the fixed HOME/TMPDIR/PATH values; no
#   volumes, no entrypoint.
# node guest: the busybox guest plus the Linux x64 `node` from this project's node_modules
#   at /usr/local/bin/node with the shared libraries it links against.
# dataset image (data only, no shell): /corpus/README.txt "reference corpus\n",
#   /corpus/docs/a.txt "alpha\n", /corpus/docs/b.txt "bravo\n", an empty /corpus/empty
#   directory, /notes.txt "top-level notes\n"; root-owned, files 0644, directories 0755.
# dataset-foreign image: a data image a workload could not run as: linux/arm64, Env
#   DATASET=foreign, a declared volume /data; /foreign.txt "foreign\n". Datasets need not
#   match the workload's architecture or fixed Env, so it must still attach.
set -euo pipefail

ENDPOINT=${AGENTCELL_TEST_ENGINE:-unix:///run/agentcell-test-engine/docker.sock}
SOCK=${ENDPOINT#unix://}
HERE=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${AGENTCELL_ENGINE_HOME:-/var/lib/agentcell-test-engine}/guest
VERSION=1
FIXED_ENV=(
  "HOME=/home/sandbox"
  "TMPDIR=/tmp"
  "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

say() { printf 'guest-images: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
api() { curl -fsS --unix-socket "$SOCK" "$@"; }

image_id() { # tag -> sha256:… or nothing
  { api "http://docker/images/$1/json" 2>/dev/null || true; } | jq -r '.Id // empty'
}

busybox_binary() {
  local deb dir="$CACHE/debs"
  mkdir -p "$dir"
  if ! compgen -G "$dir/busybox-static_*.deb" >/dev/null; then
    (cd "$dir" && apt-get -q -o APT::Sandbox::User=root download busybox-static >/dev/null 2>&1) || {
      apt-get -q update >/dev/null
      (cd "$dir" && apt-get -q -o APT::Sandbox::User=root download busybox-static >/dev/null)
    } || die "cannot download Debian's busybox-static"
  fi
  deb=$(compgen -G "$dir/busybox-static_*.deb" | head -n 1)
  rm -rf "$CACHE/busybox-x" && mkdir -p "$CACHE/busybox-x"
  dpkg -x "$deb" "$CACHE/busybox-x"
  echo "$CACHE/busybox-x/bin/busybox"
}

busybox_rootfs() { # dir
  local root=$1 bb applet
  bb=$(busybox_binary)
  mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,home/sandbox,workspace,proc,sys,dev,tmp}
  chmod 1777 "$root/tmp"
  cp "$bb" "$root/bin/busybox"
  for applet in $("$bb" --list); do
    [ "$applet" = busybox ] || ln -sf busybox "$root/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:65534:65534:sandbox:/home/sandbox:/bin/sh\n' >"$root/etc/passwd"
  printf 'root:x:0:\nsandbox:x:65534:\n' >"$root/etc/group"
}

node_rootfs() { # dir
  local root=$1 node lib
  node=$(readlink -f "$HERE/node_modules/.bin/node" 2>/dev/null || true)
  [ -x "$node" ] || die "cannot find node in node_modules (run npm install first)"
  busybox_rootfs "$root"
  cp "$node" "$root/usr/local/bin/node"
  for lib in $(ldd "$node" | grep -oE '/[^ ]+\.so[^ ]*'); do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
}

dataset_rootfs() { # dir
  local root=$1
  mkdir -p "$root/corpus/docs" "$root/corpus/empty"
  printf 'reference corpus\n' >"$root/corpus/README.txt"
  printf 'alpha\n' >"$root/corpus/docs/a.txt"
  printf 'bravo\n' >"$root/corpus/docs/b.txt"
  printf 'top-level notes\n' >"$root/notes.txt"
  find "$root" -type d -exec chmod 0755 {} + && find "$root" -type f -exec chmod 0644 {} +
}

foreign_rootfs() { # dir
  mkdir -p "$1" && printf 'foreign\n' >"$1/foreign.txt" && chmod 0644 "$1/foreign.txt" && chmod 0755 "$1"
}

import_image() { # name rootfs-builder [query: extra create parameters, say &platform=…] [changes...]
  local name=$1 builder=$2 query=${3:-} tag="agentcell-test/$1:$VERSION" id work changes="" e
  shift 2; [ $# -gt 0 ] && shift
  local env=("${FIXED_ENV[@]/#/ENV }")
  [ $# -gt 0 ] && env=("$@")
  id=$(image_id "$tag")
  if [ -n "$id" ]; then echo "$id"; return 0; fi
  say "building the $name guest image"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' RETURN
  "$builder" "$work/rootfs"
  tar --numeric-owner --owner=0 --group=0 -C "$work/rootfs" -cf "$work/rootfs.tar" .
  for e in "${env[@]}"; do changes+="&changes=$(jq -rn --arg v "$e" '$v|@uri')"; done
  api -X POST -H 'Content-Type: application/x-tar' --data-binary "@$work/rootfs.tar" \
    "http://docker/images/create?fromSrc=-&repo=agentcell-test/$name&tag=$VERSION$query$changes" >"$work/out.json" ||
    die "cannot import the $name guest image"
  id=$(image_id "$tag")
  [ -n "$id" ] || die "cannot find the $name guest image after import: $(cat "$work/out.json")"
  echo "$id"
}

case "${1:-}" in
  busybox) import_image busybox busybox_rootfs ;;
  node) import_image node node_rootfs ;;
  dataset) import_image dataset dataset_rootfs ;;
  dataset-foreign) import_image dataset-foreign foreign_rootfs "&platform=linux/arm64" "ENV DATASET=foreign" "VOLUME /data" ;;
  *) die "usage: $0 busybox|node|dataset|dataset-foreign" ;;
esac
