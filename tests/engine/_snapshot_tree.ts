// The tree the portable-snapshot tests carry (tests/engine/sandbox_snapshot.test.ts on one
// engine, tests/compat/snapshot_transfer.test.ts across two) and how a guest describes it.

/**
 * A shell line (run in `/workspace/work`) that makes `t/`: binary bytes, an executable, a
 * 300 KiB random file, an empty file, empty directories (one of them sticky and
 * world-writable), a private directory and a set-group-ID one.
 */
export const PORTABLE_TREE: string = [
  "mkdir -p t/empty t/deep/er/est t/private t/nested/empty/too",
  "printf 'a\\001\\377\\000z' > t/bin && chmod 600 t/bin",
  "printf '#!/bin/sh\\necho run\\n' > t/deep/run.sh && chmod 755 t/deep/run.sh",
  "dd if=/dev/urandom of=t/deep/er/big bs=1024 count=300 2>/dev/null && chmod 640 t/deep/er/big",
  ": > t/zero && chmod 444 t/zero",
  "chmod 700 t/private && chmod 2755 t/deep/er/est && chmod 1777 t/nested/empty",
].join(" && ");

/** A shell line that prints each path of `t/` with its mode, owner, size, mtime and type, then every file's MD5. */
export const DESCRIBE_TREE = "find t | sort | while read -r p; do stat -c '%n %a %u %s %Y %F' \"$p\"; done; find t -type f | sort | xargs md5sum";
