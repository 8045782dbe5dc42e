// writeTar: header layout, path placement, exact sizes, validation, pull-based streaming.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { TarWriterEntry } from "../../../lib/tar/write_tar.ts";
import { writeTar } from "../../../lib/tar/write_tar.ts";
import { concat, readAll, rejectsWith, streamOf, text } from "./_build.ts";

const utf8 = new TextEncoder();

async function bytesOf(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return concat(...chunks);
}

function fileEntry(path: string, content: string | Uint8Array, extra: Partial<TarWriterEntry> = {}): TarWriterEntry {
  const bytes = typeof content === "string" ? utf8.encode(content) : content;
  return { path, type: "file", mode: 0o644, mtime: 1_700_000_000, size: bytes.length, body: streamOf(bytes, 7), ...extra };
}

describe("writeTar", () => {
  test("writeTar writes a symlink as typeflag 2 with its target in linkname, a long one in a PAX linkpath", async () => {
    const short = await bytesOf(writeTar([{ path: "bin/cli", type: "symlink", target: "../pkg/cli.js", mode: 0o777, mtime: 0, size: 0 }]));
    assert.equal(short.length, 512 + 1024);
    assert.equal(text(short.subarray(0, 7)), "bin/cli");
    assert.equal(short[156], 0x32);
    assert.equal(text(short.subarray(157, 170)), "../pkg/cli.js");
    assert.equal(short[170], 0);
    const target = `../${"t".repeat(120)}/ü`;
    const long = await bytesOf(writeTar([{ path: "l", type: "symlink", target, mode: 0o777, mtime: 0, size: 0 }]));
    assert.equal(long[156], 0x78, "a PAX header first");
    const record = text(long.subarray(512, 1024)).replace(/\0+$/, "");
    assert.equal(record, `${utf8.encode(` linkpath=${target}\n`).length + 3} linkpath=${target}\n`);
    assert.equal(long[1024 + 156], 0x32);
    assert.match((await rejectsWith(bytesOf(writeTar([{ path: "l", type: "symlink", mode: 0o777, mtime: 0, size: 0 }])), "invalid_entry")).message, /symlink without a target/);
    assert.match((await rejectsWith(bytesOf(writeTar([{ path: "f", type: "file", target: "x", mode: 0o644, mtime: 0, size: 0 }])), "invalid_entry")).message, /file with a target/);
    assert.match((await rejectsWith(bytesOf(writeTar([{ path: "l", type: "symlink", target: "x", mode: 0o777, mtime: 0, size: 1, body: streamOf(utf8.encode("x"), 1) }])), "invalid_entry")).message, /symlink with a size or a body/);
  });

  test("writeTar writes a ustar header, the body, padding and two end blocks", async () => {
    const archive = await bytesOf(writeTar([fileEntry("hello.txt", "hello", { uid: 1000, gid: 100 })]));
    assert.equal(archive.length, 512 + 512 + 1024);
    assert.equal(text(archive.subarray(0, 9)), "hello.txt");
    assert.equal(text(archive.subarray(100, 108)), "0000644\0");
    assert.equal(text(archive.subarray(108, 116)), "0001750\0");
    assert.equal(text(archive.subarray(124, 136)), "00000000005\0");
    assert.equal(archive[156], 0x30);
    assert.equal(text(archive.subarray(257, 265)), "ustar\u000000");
    let sum = 0;
    archive.subarray(0, 512).forEach((byte, i) => (sum += i >= 148 && i < 156 ? 0x20 : byte));
    assert.equal(text(archive.subarray(148, 156)), `${sum.toString(8).padStart(6, "0")}\0 `);
    assert.equal(text(archive.subarray(512, 517)), "hello");
    assert.ok(archive.subarray(517).every((byte) => byte === 0));
  });

  test("writeTar writes directories with a trailing slash and type 5", async () => {
    const archive = await bytesOf(writeTar([{ path: "d", type: "directory", mode: 0o755, mtime: 0, size: 0 }]));
    assert.equal(text(archive.subarray(0, 2)), "d/");
    assert.equal(archive[156], 0x35);
    assert.deepEqual((await readAll(archive)).map((entry) => entry.path), ["d"]);
  });

  test("writeTar uses the ustar prefix for long ASCII paths and PAX beyond it", async () => {
    const prefixed = `${"p".repeat(150)}/${"n".repeat(90)}`;
    const archive = await bytesOf(writeTar([fileEntry(prefixed, "")]));
    assert.equal(archive[156], 0x30, "no PAX header");
    assert.equal(text(archive.subarray(345, 495)), "p".repeat(150));
    const long = `${"a".repeat(200)}/${"b".repeat(150)}`;
    const unicode = "naïve/файл";
    const paxed = await bytesOf(writeTar([fileEntry(long, "1"), fileEntry(unicode, "2")]));
    assert.equal(paxed[156], 0x78, "PAX header");
    assert.deepEqual((await readAll(paxed)).map((entry) => entry.path), [long, unicode]);
  });

  test("writeTar puts a harmless stand-in name beside a PAX path", async () => {
    const archive = await bytesOf(writeTar([fileEntry(`dir/${"x".repeat(120)}é`, "")]));
    const name = text(archive.subarray(1024, 1124)).replace(/\0+$/, "");
    assert.equal(name, `${"x".repeat(99)}`);
  });

  test("writeTar rejects a body shorter than its size with body_length", async () => {
    await rejectsWith(bytesOf(writeTar([fileEntry("a", "abc", { size: 4 })])), "body_length");
    await rejectsWith(bytesOf(writeTar([fileEntry("a", "", { size: 1, body: undefined })])), "body_length");
  });

  test("writeTar rejects a body longer than its size with body_length", async () => {
    const error = await rejectsWith(bytesOf(writeTar([fileEntry("x", "1"), fileEntry("a", "abcdef", { size: 3 })])), "body_length");
    assert.equal(error.offset, 1024);
    assert.equal(error.path, "a");
    assert.match(error.message, /^Cannot write archive: body longer than its size 3 at offset 1024 \(entry 'a'\)$/);
  });

  test("writeTar rejects invalid paths with the reader's codes", async () => {
    for (const path of ["../x", "/abs", "a//b", "./a", "a\\b", "a\0b", "", "f/"]) {
      await rejectsWith(bytesOf(writeTar([fileEntry(path, "")])), "path_invalid");
    }
    await rejectsWith(bytesOf(writeTar([fileEntry("a/".repeat(2048) + "b", "")])), "path_length");
    await rejectsWith(bytesOf(writeTar([fileEntry("\ud800", "")])), "path_invalid");
  });

  test("writeTar rejects a size above 8 GiB - 1 with size_limit", async () => {
    await rejectsWith(bytesOf(writeTar([fileEntry("a", "", { size: 8_589_934_592 })])), "size_limit");
  });

  test("writeTar rejects out-of-range fields and directory bodies with invalid_entry", async () => {
    const bad: Partial<TarWriterEntry>[] = [
      { mode: -1 },
      { mode: 0o10000 },
      { mtime: 1.5 },
      { mtime: -1 },
      { uid: 0o10000000 },
      { size: -1 },
      { type: "link" as never },
    ];
    for (const fields of bad) await rejectsWith(bytesOf(writeTar([fileEntry("a", "", fields)])), "invalid_entry");
    const withBody = { path: "d", type: "directory", mode: 0o755, mtime: 0, size: 0, body: streamOf(new Uint8Array(0)) } as const;
    await rejectsWith(bytesOf(writeTar([withBody])), "invalid_entry");
  });

  test("writeTar emits chunks of at most 64 KiB", async () => {
    const big = new Uint8Array(1 << 20).fill(3);
    const sizes: number[] = [];
    const entry = fileEntry("big", big, { body: streamOf(big, big.length) });
    for await (const chunk of writeTar([entry])) sizes.push(chunk.length);
    assert.ok(Math.max(...sizes) <= 65_536);
    assert.equal(sizes.reduce((a, b) => a + b, 0), 512 + (1 << 20) + 1024);
  });

  test("writeTar pulls entries only as the output is read", async () => {
    let produced = 0;
    async function* entries(): AsyncGenerator<TarWriterEntry> {
      for (let i = 0; i < 100; i++) {
        produced++;
        yield { path: `d${i}`, type: "directory", mode: 0o755, mtime: 0, size: 0 };
      }
    }
    const reader = writeTar(entries()).getReader();
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(produced, 0);
    await reader.read();
    await reader.read();
    assert.ok(produced <= 2, `produced ${produced}`);
    await reader.cancel();
  });

  test("writeTar cancels the current body and closes the entries when cancelled", async () => {
    let bodyCancelled = false;
    let returned = false;
    const body = new ReadableStream<Uint8Array>({
      pull: (controller) => controller.enqueue(new Uint8Array(1000)),
      cancel: () => {
        bodyCancelled = true;
      },
    });
    async function* entries(): AsyncGenerator<TarWriterEntry> {
      try {
        yield { path: "f", type: "file", mode: 0o644, mtime: 0, size: 1_000_000, body };
      } finally {
        returned = true;
      }
    }
    const reader = writeTar(entries()).getReader();
    await reader.read(); // header
    await reader.read(); // first body chunk
    await reader.cancel();
    assert.ok(bodyCancelled);
    assert.ok(returned);
  });

  test("writeTar cancels the body of a refused entry", async () => {
    let bodyCancelled = false;
    const body = new ReadableStream<Uint8Array>({ cancel: () => void (bodyCancelled = true) });
    await rejectsWith(bytesOf(writeTar([fileEntry("../x", "", { body, size: 5 })])), "path_invalid");
    assert.ok(bodyCancelled);
  });

  test("writeTar propagates an error of the entries iterator unchanged", async () => {
    const failure = new Error("listing failed");
    async function* entries(): AsyncGenerator<TarWriterEntry> {
      yield fileEntry("a", "1");
      throw failure;
    }
    await assert.rejects(bytesOf(writeTar(entries())), (error) => error === failure);
  });
});
