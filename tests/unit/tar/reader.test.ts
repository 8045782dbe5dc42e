// readTar on valid archives: fields, PAX overrides, chunking, body handling, cancellation.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { TarError } from "../../../lib/tar/error.ts";
import { readTar } from "../../../lib/tar/read_tar.ts";
import { concat, dir, end, file, header, padded, pax, readAll, rejectsWith, streamOf, text } from "./_build.ts";

describe("readTar", () => {
  test("readTar reads files and directories with their metadata", async () => {
    const bytes = concat(
      dir("top/", { mtime: 1234, uid: 7, gid: 8 }),
      file("top/a.txt", "hello", { mode: 0o640, mtime: 99, uid: 1001, gid: 1002 }),
      file("top/empty"),
      end(),
    );
    const entries = await readAll(bytes);
    assert.deepEqual(entries.map(({ data, ...rest }) => ({ ...rest, data: text(data) })), [
      { path: "top", type: "directory", mode: 0o755, mtime: 1234, size: 0, uid: 7, gid: 8, offset: 0, data: "" },
      { path: "top/a.txt", type: "file", mode: 0o640, mtime: 99, size: 5, uid: 1001, gid: 1002, offset: 512, data: "hello" },
      { path: "top/empty", type: "file", mode: 0o644, mtime: 1_700_000_000, size: 0, uid: 1000, gid: 1000, offset: 1536, data: "" },
    ]);
  });

  test("readTar gives the same entries for one-byte chunks", async () => {
    const bytes = concat(dir("d/"), file("d/x", "x".repeat(1000)), pax({ path: "d/é" }), file("ignored", "yz"), end());
    const whole = await readAll(streamOf(bytes, bytes.length));
    const bytewise = await readAll(streamOf(bytes, 1));
    assert.deepEqual(bytewise, whole);
    assert.deepEqual(whole.map((entry) => entry.path), ["d", "d/x", "d/é"]);
  });

  test("readTar joins the ustar prefix and name", async () => {
    const [entry] = await readAll(concat(file("name.txt", "", { prefix: "some/long/prefix" }), end()));
    assert.equal(entry.path, "some/long/prefix/name.txt");
  });

  test("readTar applies PAX path, mtime, uid and gid and accepts the other allowed keys", async () => {
    const records = {
      path: "ünïcode/" + "x".repeat(255) + "/" + "y".repeat(100),
      mtime: "1700000000.123456789",
      atime: "-5",
      ctime: "12",
      uid: "4294967295",
      gid: "0",
      uname: "agent",
      gname: "staff",
    };
    const [entry] = await readAll(concat(pax(records), file("stand-in", "abc", { uid: 1, gid: 2 }), end()));
    assert.equal(entry.path, records.path);
    assert.equal(entry.mtime, 1700000000.123456789);
    assert.equal(entry.uid, 4294967295);
    assert.equal(entry.gid, 0);
    assert.equal(entry.offset, 0);
    assert.equal(text(entry.data), "abc");
  });

  test("readTar accepts legacy type NUL, space-padded fields and full-width digits", async () => {
    const bytes = concat(
      file("legacy", "ab", { typeflag: "\0", mode: "   644 \0", uid: "  1750 ", size: "000000000002" }),
      end(),
    );
    const [entry] = await readAll(bytes);
    assert.deepEqual([entry.type, entry.mode, entry.uid, entry.size], ["file", 0o644, 0o1750, 2]);
  });

  test("readTar keeps permission bits and drops file-type bits of the mode", async () => {
    const [entry] = await readAll(concat(file("f", "", { mode: 0o104755 }), end()));
    assert.equal(entry.mode, 0o4755);
  });

  test("readTar accepts padding to a 10240-byte record", async () => {
    const bytes = concat(file("a", "x"), end());
    const record = concat(bytes, new Uint8Array(10240 - bytes.length));
    assert.equal((await readAll(record)).length, 1);
  });

  test("readTar accepts an empty archive", async () => {
    assert.deepEqual(await readAll(end()), []);
  });

  test("readTar accepts a size of 8 GiB - 1", async () => {
    const source = streamOf(concat(header({ name: "huge", size: 8_589_934_591 }), new Uint8Array(10)));
    const reader = readTar(source).getReader();
    const { value } = await reader.read();
    assert.equal(value?.size, 8_589_934_591);
    await reader.cancel();
  });

  test("readTar allows implicit parents and an explicit directory after them", async () => {
    const entries = await readAll(concat(file("a/b/c", "1"), dir("a/b/"), dir("a"), file("a/d"), end()));
    assert.deepEqual(entries.map((entry) => `${entry.type}:${entry.path}`), [
      "file:a/b/c",
      "directory:a/b",
      "directory:a",
      "file:a/d",
    ]);
  });

  test("readTar skips an unread body and errors it with entry_skipped", async () => {
    const bytes = concat(file("a", "x".repeat(2000)), file("b", "y"), end());
    const paths: string[] = [];
    const bodies: ReadableStream<Uint8Array>[] = [];
    for await (const entry of readTar(streamOf(bytes, 100))) {
      paths.push(entry.path);
      bodies.push(entry.body);
    }
    assert.deepEqual(paths, ["a", "b"]);
    await rejectsWith(new Response(bodies[0]).arrayBuffer(), "entry_skipped");
  });

  test("readTar continues after a partly read, cancelled body", async () => {
    const bytes = concat(file("a", "x".repeat(200_000)), file("b", "tail"), end());
    const seen: string[] = [];
    for await (const entry of readTar(streamOf(bytes, 1000))) {
      const reader = entry.body.getReader();
      if (entry.path === "a") {
        await reader.read();
        await reader.cancel();
      } else {
        seen.push(text((await reader.read()).value!));
      }
    }
    assert.deepEqual(seen, ["tail"]);
  });

  test("readTar splits large source chunks into body chunks of at most 64 KiB", async () => {
    const content = new Uint8Array(300_000).map((_, i) => i % 251);
    const [entry] = await readAll(streamOf(concat(file("big", content), end()), 1 << 20));
    assert.deepEqual(entry.data, content);
    const sizes: number[] = [];
    for await (const item of readTar(streamOf(concat(file("big", content), end()), 1 << 20))) {
      for await (const chunk of item.body) sizes.push(chunk.length);
    }
    assert.ok(Math.max(...sizes) <= 65_536);
  });

  test("readTar errors the body being read when the archive is truncated", async () => {
    const bytes = concat(header({ name: "a", size: 5000 }), new Uint8Array(3000));
    const reader = readTar(streamOf(bytes, 512)).getReader();
    const { value } = await reader.read();
    await rejectsWith(new Response(value!.body).arrayBuffer(), "truncated");
    await rejectsWith(reader.read(), "truncated");
  });

  test("readTar cancels the source when cancelled and errors the open body with cancelled", async () => {
    let cancelled: unknown = "no";
    const inner = streamOf(concat(file("a", "x".repeat(5000)), end()), 100).getReader();
    const source = new ReadableStream<Uint8Array>({
      async pull(controller) {
        const { done, value } = await inner.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel(reason) {
        cancelled = reason;
      },
    }, { highWaterMark: 0 });
    const entries = readTar(source);
    const reader = entries.getReader();
    const { value } = await reader.read();
    await reader.cancel("stop");
    assert.equal(cancelled, "stop");
    await rejectsWith(new Response(value!.body).arrayBuffer(), "cancelled");
  });

  test("readTar propagates a source error unchanged", async () => {
    const failure = new Error("connection reset");
    let sent = false;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent) return controller.error(failure);
        sent = true;
        controller.enqueue(file("a", "x".repeat(600)).subarray(0, 700));
      },
    });
    await assert.rejects(readAll(source), (error) => error === failure);
  });

  test("readTar errors with a TypeError on a source chunk that is not bytes", async () => {
    const source = new ReadableStream({ pull: (controller) => controller.enqueue("text") });
    await assert.rejects(readAll(source as ReadableStream<Uint8Array>), TypeError);
  });

  test("readTar rejects invalid options with invalid_options", () => {
    const source = streamOf(end());
    for (const options of [{ spillDirectory: "relative/dir" }, { maxInMemoryPaths: 0 }, { maxInMemoryPathBytes: 1.5 }]) {
      assert.throws(() => readTar(source, options), (error) => error instanceof TarError && error.code === "invalid_options");
    }
    assert.throws(
      () => readTar(source, { unknown: true } as never),
      (error) => error instanceof TarError && error.code === "invalid_options",
    );
  });

  test("readTar does not read the source before an entry is asked for", async () => {
    let pulls = 0;
    const source = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulls++;
        controller.enqueue(padded("x"));
      },
    }, { highWaterMark: 0 });
    const entries = readTar(source);
    await new Promise((resolve) => setTimeout(resolve, 10));
    assert.equal(pulls, 0);
    await entries.cancel();
  });
});
