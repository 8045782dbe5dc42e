// A corpus of hostile archives: each must fail with a TarError of one exact code, whole
// and fed one byte at a time.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { TarErrorCode } from "../../../lib/tar/error.ts";
import { concat, dir, end, file, header, padded, pax, readAll, record, rejectsWith, streamOf } from "./_build.ts";

const utf8 = new TextEncoder();

function signedChecksumHeader(): Uint8Array {
  const block = header({ name: new Uint8Array([0x61, 0xe9, 0x80]) });
  block.fill(0x20, 148, 156);
  let signed = 0;
  for (const byte of block) signed += byte >= 0x80 ? byte - 256 : byte;
  const digits = signed.toString(8).padStart(6, "0");
  block.set(utf8.encode(digits), 148);
  block[154] = 0;
  return block;
}

const base256Size = new Uint8Array(12);
base256Size[0] = 0x80;
base256Size[11] = 0x10;

const cases: [string, Uint8Array, TarErrorCode][] = [
  ["a bad header checksum", concat(header({ checksumDelta: 1 }), end()), "checksum"],
  ["a non-octal checksum field", concat(header({ checksum: "12345x\0 " }), end()), "checksum"],
  ["a historic signed checksum", concat(signedChecksumHeader(), end()), "checksum"],
  ["a base-256 size", concat(header({ size: base256Size }), padded(new Uint8Array(16)), end()), "numeric_field"],
  ["non-octal size digits", concat(header({ size: "00000000009\0" }), padded("123456789"), end()), "numeric_field"],
  ["an empty mode field", concat(header({ mode: "" }), end()), "numeric_field"],
  ["a space inside the uid digits", concat(header({ uid: "00 1750\0" }), end()), "numeric_field"],
  ["an 8 GiB size field", concat(header({ size: 0o100000000000 }), end()), "size_limit"],
  ["GNU magic", concat(header({ magic: "ustar ", version: " \0" }), end()), "magic"],
  ["a v7 header without magic", concat(header({ magic: "", version: "" }), end()), "magic"],
  ["ustar version 01", concat(header({ version: "01" }), end()), "magic"],
  ["a PAX size override", concat(pax({ size: "3" }), file("f", "abc"), end()), "pax_size_override"],
  ["a PAX global header", concat(pax({ comment: "x" }, { typeflag: "g" }), file("f"), end()), "pax_global"],
  ["a PAX length prefix one too long", concat(pax("13 path=abc\n"), file("f"), end()), "pax_record"],
  ["a PAX length prefix one too short", concat(pax("11 path=abc\n"), file("f"), end()), "pax_record"],
  ["a PAX length prefix with a leading zero", concat(pax("012 path=abc\n"), file("f"), end()), "pax_record"],
  ["a PAX record without '='", concat(pax("9 pathab\n"), file("f"), end()), "pax_record"],
  ["a PAX record with invalid UTF-8", concat(pax(`${record("path", "ab")}`.replace("ab", "a\udcff")), file("f"), end()), "pax_record"],
  ["a repeated PAX key", concat(pax(record("path", "a") + record("path", "b")), file("f"), end()), "pax_record"],
  ["bytes after the last PAX record", concat(pax(record("path", "a") + "\0"), file("f"), end()), "pax_record"],
  ["an unknown PAX key", concat(pax({ comment: "hello" }), file("f"), end()), "pax_unsupported_key"],
  ["a PAX linkpath", concat(pax({ linkpath: "/etc/passwd" }), file("f"), end()), "pax_unsupported_key"],
  ["a SCHILY.xattr PAX key", concat(pax({ "SCHILY.xattr.user.x": "1" }), file("f"), end()), "pax_unsupported_key"],
  ["a LIBARCHIVE.xattr PAX key", concat(pax({ "LIBARCHIVE.xattr.user.x": "MQ" }), file("f"), end()), "pax_unsupported_key"],
  ["a non-decimal PAX uid", concat(pax({ uid: "0x10" }), file("f"), end()), "pax_value"],
  ["an empty PAX path", concat(pax({ path: "" }), file("f"), end()), "pax_value"],
  ["a PAX block above 64 KiB", concat(pax({ path: "a".repeat(65_536) }), file("f"), end()), "pax_limit"],
  ["a PAX header followed by a PAX header", concat(pax({ mtime: "1" }), pax({ mtime: "2" }), file("f"), end()), "pax_orphan"],
  ["a PAX header followed by the end", concat(pax({ mtime: "1" }), end()), "pax_orphan"],
  ["a truncated header", concat(file("a", "x"), header().subarray(0, 300)), "truncated"],
  ["a truncated body", concat(header({ name: "a", size: 1000 }), new Uint8Array(600)), "truncated"],
  ["missing padding", concat(header({ name: "a", size: 3 }), utf8.encode("abc")), "truncated"],
  ["a truncated PAX block", concat(pax({ path: "abcdef" }).subarray(0, 520)), "truncated"],
  ["non-zero body padding", concat(header({ name: "a", size: 3 }), padded("abc").fill(1, 3, 4), end()), "padding"],
  ["non-zero PAX padding", concat(pax({ path: "abc" }).fill(7, 1023, 1024), file("f"), end()), "padding"],
  ["an empty source", new Uint8Array(0), "termination"],
  ["missing end blocks", file("a", "x"), "termination"],
  ["one end block only", concat(file("a", "x"), new Uint8Array(512)), "termination"],
  ["a partial second end block", concat(file("a", "x"), new Uint8Array(700)), "termination"],
  ["a header after one zero block", concat(new Uint8Array(512), file("a", "x"), end()), "termination"],
  ["trailing garbage after the end", concat(file("a", "x"), end(), utf8.encode("x")), "trailing_data"],
  ["garbage inside record padding", concat(file("a", "x"), end(), new Uint8Array(9000), utf8.encode("\x01")), "trailing_data"],
  ["a hardlink", concat(header({ name: "l", typeflag: "1", linkname: "a" }), end()), "unsupported_type"],
  ["a symlink", concat(header({ name: "l", typeflag: "2", linkname: "/etc" }), end()), "unsupported_type"],
  ["a character device", concat(header({ name: "c", typeflag: "3" }), end()), "unsupported_type"],
  ["a block device", concat(header({ name: "b", typeflag: "4" }), end()), "unsupported_type"],
  ["a FIFO", concat(header({ name: "p", typeflag: "6" }), end()), "unsupported_type"],
  ["a contiguous file", concat(header({ name: "c", typeflag: "7" }), end()), "unsupported_type"],
  ["a sparse file", concat(header({ name: "s", typeflag: "S" }), end()), "unsupported_type"],
  ["a GNU long name", concat(header({ name: "././@LongLink", typeflag: "L", size: 5 }), padded("long\0"), file("f"), end()), "unsupported_type"],
  ["a GNU long link", concat(header({ name: "././@LongLink", typeflag: "K", size: 5 }), padded("long\0"), file("f"), end()), "unsupported_type"],
  ["a GNU volume header", concat(header({ name: "vol", typeflag: "V" }), end()), "unsupported_type"],
  ["a GNU multi-volume entry", concat(header({ name: "m", typeflag: "M" }), end()), "unsupported_type"],
  ["a GNU old long name", concat(header({ name: "n", typeflag: "N" }), end()), "unsupported_type"],
  ["a symlink after a PAX header", concat(pax({ path: "l" }), header({ name: "l", typeflag: "2" }), end()), "unsupported_type"],
  ["'../x'", concat(file("../x"), end()), "path_invalid"],
  ["'a/../b'", concat(file("a/../b"), end()), "path_invalid"],
  ["'..' as a directory", concat(dir("../"), end()), "path_invalid"],
  ["an absolute path", concat(file("/etc/x"), end()), "path_invalid"],
  ["an absolute PAX path", concat(pax({ path: "/etc/passwd" }), file("f"), end()), "path_invalid"],
  ["'a//b'", concat(file("a//b"), end()), "path_invalid"],
  ["'./a'", concat(file("./a"), end()), "path_invalid"],
  ["'.' as a directory", concat(dir("./"), end()), "path_invalid"],
  ["a NUL inside the name", concat(file("a\0b"), end()), "path_invalid"],
  ["a NUL inside a PAX path", concat(pax({ path: "a\0b" }), file("f"), end()), "path_invalid"],
  ["a backslash", concat(file("a\\b"), end()), "path_invalid"],
  ["an invalid UTF-8 name", concat(header({ name: new Uint8Array([0x61, 0xff]) }), end()), "path_invalid"],
  ["an invalid UTF-8 prefix", concat(header({ name: "a", prefix: new Uint8Array([0xc3]) }), end()), "path_invalid"],
  ["a trailing '/' on a file", concat(file("a/"), end()), "path_invalid"],
  ["an empty name", concat(file(""), end()), "path_invalid"],
  ["'..' in the prefix", concat(file("x", "", { prefix: ".." }), end()), "path_invalid"],
  ["a path over 4096 bytes", concat(pax({ path: "a/".repeat(2048) + "b" }), file("f"), end()), "path_length"],
  ["a name over 255 bytes", concat(pax({ path: `d/${"n".repeat(256)}` }), file("f"), end()), "path_length"],
  ["a newline in the name", concat(file("a\nb"), end()), "path_invalid"],
  ["a terminal escape in a PAX path", concat(pax({ path: "a\u001b[31mred" }), file("f"), end()), "path_invalid"],
  ["a C1 control (U+0085) in a PAX path", concat(pax({ path: "a\u0085b" }), file("f"), end()), "path_invalid"],
  ["a DEL in the name", concat(file("a\u007fb"), end()), "path_invalid"],
  ["a directory with a size", concat(dir("d/", { size: 512 }), new Uint8Array(512), end()), "directory_size"],
  ["a duplicate file", concat(file("a", "1"), file("a", "2"), end()), "duplicate_path"],
  ["a duplicate directory", concat(dir("d/"), dir("d"), end()), "duplicate_path"],
  ["a file then a file below it", concat(file("a"), file("a/b"), end()), "path_conflict"],
  ["a file then a directory below it", concat(file("a"), dir("a/b/"), end()), "path_conflict"],
  ["a directory then a file at its path", concat(dir("a/"), file("a"), end()), "path_conflict"],
  ["a file then a directory at its path", concat(file("a"), dir("a/"), end()), "path_conflict"],
  ["a file below then a file at an implied directory", concat(file("a/b/c"), file("a"), end()), "path_conflict"],
];

describe("readTar hostile corpus", () => {
  for (const [name, bytes, code] of cases) {
    test(`readTar rejects ${name} with ${code}`, async () => {
      await rejectsWith(readAll(streamOf(bytes, 4096)), code);
      await rejectsWith(readAll(streamOf(bytes, 1)), code);
    });
  }

  test("readTar escapes an unsupported PAX key in its message", async () => {
    const error = await rejectsWith(readAll(concat(pax({ "x\u0000\u001b[31m": "v" }), file("f"), end())), "pax_unsupported_key");
    assert.equal(error.message, "Cannot read archive: unsupported PAX key 'x\\x00\\x1b[31m' at offset 0");
    // deno-lint-ignore no-control-regex
    assert.doesNotMatch(error.message, /[\u0000-\u001f]/);
  });

  test("readTar cuts a 4 KiB path in a path_length message to its ends and length", async () => {
    const long = `${"a/".repeat(2048)}b`;
    const error = await rejectsWith(readAll(concat(pax({ path: long }), file("f"), end())), "path_length");
    assert.ok(error.message.length < 400, `message of ${error.message.length} characters: ${error.message.slice(0, 80)}…`);
    assert.match(error.message, /^Cannot read archive: path longer than 4096 bytes at offset \d+ \(entry '(a\/){60}…(\/a){29}\/b' \(4097 characters\)\)$/);
  });

  test("readTar reports the offset and path of a duplicate", async () => {
    const error = await rejectsWith(readAll(concat(file("x", "1"), dir("d/"), file("x", "2"), end())), "duplicate_path");
    assert.equal(error.offset, 1536);
    assert.equal(error.path, "x");
    assert.match(error.message, /^Cannot read archive: duplicate path at offset 1536 \(entry 'x'\)$/);
  });

  test("readTar reports the offset of a non-zero padding byte", async () => {
    const bytes = concat(header({ name: "a", size: 3 }), padded("abc").fill(9, 100, 101), end());
    const error = await rejectsWith(readAll(bytes), "padding");
    assert.equal(error.offset, 612);
    assert.equal(error.path, "a");
  });

  test("readTar reports the offset of trailing data", async () => {
    const bytes = concat(end(), new Uint8Array(10), utf8.encode("z"));
    const error = await rejectsWith(readAll(bytes), "trailing_data");
    assert.equal(error.offset, 1034);
  });
});

test("readTar hostile corpus has at least 30 archives", () => {
  assert.ok(cases.length >= 30);
});
