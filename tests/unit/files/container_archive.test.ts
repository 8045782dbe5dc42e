// The Engine's path stat: Go os.FileMode classification and header decoding.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DockerEngineError } from "../../../lib/engine/errors.ts";
import { containerPathKind, decodePathStat } from "../../../lib/docker/files/_container_archive.ts";

test("containerPathKind classifies Go os.FileMode values measured on Engine 28.5", () => {
  assert.equal(containerPathKind(2147484141), "directory"); // drwxr-xr-x
  assert.equal(containerPathKind(420), "file"); // -rw-r--r--
  assert.equal(containerPathKind(134218239), "symlink"); // lrwxrwxrwx
  assert.equal(containerPathKind(0x00800000 | 0o755), "file"); // setuid regular file
  assert.equal(containerPathKind(0x80000000 | 0x00100000 | 0o777), "directory"); // sticky directory
  assert.equal(containerPathKind(0x02000000 | 0o644), "other"); // named pipe
  assert.equal(containerPathKind(0x04000000 | 0o660), "other"); // block device
  assert.equal(containerPathKind(0x04000000 | 0x00200000 | 0o666), "other"); // char device
  assert.equal(containerPathKind(0x01000000 | 0o777), "other"); // socket
  assert.equal(containerPathKind(0x80000000 | 0x08000000), "other"); // two type bits
});

test("decodePathStat reads base64 JSON and rejects anything else", () => {
  const header = btoa(JSON.stringify({ name: "work", size: 4096, mode: 2147484141, mtime: "2026-11-30T11:54:39Z", linkTarget: "" }));
  assert.deepEqual(decodePathStat(header), { name: "work", size: 4096, mode: 2147484141, mtime: "2026-11-30T11:54:39Z", linkTarget: "" });
  for (const bad of ["***", btoa("not json"), btoa(JSON.stringify({ name: "x" })), btoa(JSON.stringify({ name: "x", size: 1, mode: -1, mtime: "", linkTarget: "" }))]) {
    assert.throws(() => decodePathStat(bad), (error) => error instanceof DockerEngineError && error.code === "invalid_body");
  }
});
