// The Engine's path stat: Go os.FileMode classification and header decoding.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DockerEngineError } from "../../../lib/engine/errors.ts";
import { containerPathKind, decodePathStat } from "../../../lib/engine/container_archive.ts";

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
  assert.deepEqual(decodePathStat(header, "/workspace/work"), { name: "work", size: 4096, mode: 2147484141, mtime: "2026-11-30T11:54:39Z", linkTarget: "" });
  for (const bad of ["***", btoa("not json"), btoa(JSON.stringify({ name: "x" })), btoa(JSON.stringify({ name: "x", size: 1, mode: -1, mtime: "", linkTarget: "" }))]) {
    assert.throws(() => decodePathStat(bad, "/workspace/work"), (error) => error instanceof DockerEngineError && error.code === "invalid_body");
  }
});

test("decodePathStat accepts every Go os.FileMode bit and rejects Unix st_mode bits", () => {
  const header = (mode: number) => btoa(JSON.stringify({ name: "work", size: 0, mode, mtime: "2026-11-30T11:54:39Z", linkTarget: "" }));
  // ModeDir | ModeSetuid | ModeSetgid | ModeSticky | 0o777, and every type bit with the permissions.
  for (const mode of [(0x80000000 | 0x00800000 | 0x00400000 | 0x00100000 | 0o777) >>> 0, 0xfff801ff]) {
    assert.equal(decodePathStat(header(mode), "/workspace/work").mode, mode);
  }
  for (const [mode, stray] of [[0o40755, "0o40000"], [0o120777, "0o120000"], [0o1000, "0o1000"], [(0x80000000 | 0o40755) >>> 0, "0o40000"]] as const) {
    assert.throws(
      () => decodePathStat(header(mode), "/workspace/work"),
      (error) =>
        error instanceof DockerEngineError && error.code === "invalid_body" &&
        error.message.startsWith(`Cannot read path stat of '/workspace/work': the X-Docker-Container-Path-Stat header's mode 0o${mode.toString(8)} sets bits ${stray} `),
    );
  }
});
