// The reading state machine behind readTar: one header, PAX block or body chunk at a time,
// pulled from the source only when the entry stream or the current body asks for it.
import type { ByteReader } from "../streams/byte_reader.ts";
import { offerDirectReads } from "../streams/chunk_reader.ts";
import { readError } from "./_fail.ts";
import { type Header, isZeroBlock, parseHeader } from "./_header.ts";
import { BLOCK, MAX_CHUNK, MAX_PAX_BYTES, paddingOf } from "./limits.ts";
import { checkPath } from "./_path.ts";
import type { PathSet } from "./_path_set.ts";
import { type PaxOverrides, parsePax } from "./_pax.ts";
import { ustarPath } from "./_ustar_path.ts";
import type { TarEntry } from "./entry.ts";

/** The unread part of the current file body. */
interface Body {
  readonly path: string;
  controller?: ReadableStreamDefaultController<Uint8Array>;
  remaining: number;
  readonly padding: number;
  /** Closed or errored: nothing more to deliver. */
  finished: boolean;
  /** Cancelled by the consumer: the rest is skipped. */
  cancelled: boolean;
  /** The error the body stream was errored with, once it was (boxed: any value may be an error). */
  failure?: { readonly error: unknown };
}

/** Reads entries from `source` into `entries`, checking paths with `paths`. */
export class ArchiveReader {
  #source: ByteReader;
  #paths: PathSet;
  #entries!: ReadableStreamDefaultController<TarEntry>;
  #block = new Uint8Array(BLOCK);
  /** Archive offset of the next byte the source yields. */
  #offset = 0;
  #body: Body | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  /** The entry stream is closed, errored or cancelled. */
  #closed = false;

  constructor(source: ByteReader, paths: PathSet) {
    this.#source = source;
    this.#paths = paths;
  }

  /** Binds the entry stream's controller (from its `start`). */
  attach(controller: ReadableStreamDefaultController<TarEntry>): void {
    this.#entries = controller;
  }

  /** Runs `task` after every earlier one: the source has one reader at a time. */
  #serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(task);
    this.#queue = run.catch(() => {});
    return run;
  }

  /** The entry stream's `pull`: produces the next entry or closes the stream. */
  pull(): Promise<void> {
    return this.#serial(async () => {
      if (this.#closed) return;
      try {
        const entry = await this.#next();
        if (this.#closed) return;
        if (entry === undefined) {
          this.#closed = true;
          this.#entries.close();
        } else {
          this.#entries.enqueue(entry);
        }
      } catch (error) {
        await this.#fail(error);
      }
    });
  }

  /** The entry stream's `cancel`: stops reading, cancels the source, removes spill files. */
  async cancel(reason: unknown): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const sourceCancelled = this.#source.cancel(reason);
    this.#endBody(readError("cancelled", "archive stream cancelled", { path: this.#body?.path }));
    await this.#serial(() => sourceCancelled);
    await this.#paths.dispose();
  }

  /** Ends the archive with `error`: cancels the source, removes spill files, errors streams. */
  async #fail(error: unknown): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#source.cancel(error);
    await this.#paths.dispose().catch(() => {});
    this.#endBody(error);
    this.#entries.error(error);
  }

  /** Errors the current body stream unless it is finished or cancelled. */
  #endBody(error: unknown): void {
    const body = this.#body;
    if (body === undefined || body.finished) return;
    body.finished = true;
    body.failure = { error };
    if (!body.cancelled) body.controller?.error(error);
  }

  /** Fills the header buffer; returns the bytes read (less than 512 only at the end). */
  async #readBlock(): Promise<number> {
    const count = await this.#source.readInto(this.#block);
    this.#offset += count;
    return count;
  }

  /** Reads `count` (< 512) padding bytes, which must all be zero. */
  async #readPadding(count: number, path: string | undefined): Promise<void> {
    if (count === 0) return;
    const start = this.#offset;
    const padding = this.#block.subarray(0, count);
    const got = await this.#source.readInto(padding);
    this.#offset += got;
    if (got < count) throw readError("truncated", "archive ends inside padding", { offset: this.#offset, path });
    const bad = padding.findIndex((byte) => byte !== 0);
    if (bad !== -1) throw readError("padding", "non-zero padding byte", { offset: start + bad, path });
  }

  /** Discards `count` body bytes. */
  async #skip(count: number, path: string): Promise<void> {
    while (count > 0) {
      const chunk = await this.#source.read(Math.min(count, MAX_CHUNK));
      if (chunk === null) throw readError("truncated", "archive ends inside a body", { offset: this.#offset, path });
      count -= chunk.length;
      this.#offset += chunk.length;
    }
  }

  /** The current body's `pull`: delivers its next chunk; checks padding before closing. */
  pullBody(body: Body): Promise<void> {
    return this.#serial(() => this.#bodyStep(body, (chunk) => body.controller!.enqueue(chunk)));
  }

  /**
   * The current body's direct read (`lib/streams/chunk_reader.ts`): as `pullBody`, with the
   * chunk returned instead of enqueued; `null` once the body is complete or cancelled;
   * throws what the body stream was errored with.
   */
  readBody(body: Body): Promise<Uint8Array | null> {
    return this.#serial(async () => {
      let delivered: Uint8Array | null = null;
      await this.#bodyStep(body, (chunk) => delivered = chunk);
      if (delivered !== null) return delivered;
      if (body.failure !== undefined) throw body.failure.error;
      return null;
    });
  }

  /**
   * Reads the current body's next chunk and hands it to `deliver`; once the body is
   * complete, checks its padding and closes its stream. A failure fails the archive.
   */
  async #bodyStep(body: Body, deliver: (chunk: Uint8Array) => void): Promise<void> {
    if (this.#closed || body.finished || body.cancelled) return;
    try {
      if (body.remaining > 0) {
        const chunk = await this.#source.read(Math.min(body.remaining, MAX_CHUNK));
        if (chunk === null) {
          throw readError("truncated", "archive ends inside a body", { offset: this.#offset, path: body.path });
        }
        body.remaining -= chunk.length;
        this.#offset += chunk.length;
        if (this.#closed) return;
        if (!body.cancelled) deliver(chunk);
      }
      if (body.remaining === 0) {
        await this.#readPadding(body.padding, body.path);
        if (this.#closed) return;
        body.finished = true;
        this.#body = undefined;
        if (!body.cancelled) body.controller!.close();
      }
    } catch (error) {
      await this.#fail(error);
    }
  }

  /** Skips what is left of the current body; errors its stream unless it was cancelled. */
  async #skipBody(body: Body): Promise<void> {
    await this.#skip(body.remaining, body.path);
    body.remaining = 0;
    await this.#readPadding(body.padding, body.path);
    this.#endBody(readError("entry_skipped", "next entry requested before this body was read", { path: body.path }));
    this.#body = undefined;
  }

  /** The next entry, or undefined after a valid end of archive. */
  async #next(): Promise<TarEntry | undefined> {
    if (this.#body !== undefined) await this.#skipBody(this.#body);
    let pax: PaxOverrides | undefined;
    let entryOffset = this.#offset;
    for (;;) {
      const offset = this.#offset;
      const count = await this.#readBlock();
      if (count === 0 && pax === undefined) {
        throw readError("termination", "archive ends without end-of-archive blocks", { offset });
      }
      if (count < BLOCK) throw readError("truncated", "archive ends inside a header", { offset: this.#offset });
      if (isZeroBlock(this.#block)) {
        if (pax !== undefined) throw readError("pax_orphan", "PAX header followed by end of archive", { offset });
        await this.#finish();
        return undefined;
      }
      const header = parseHeader(this.#block, offset);
      if (header.kind !== "pax") return this.#entry(header, entryOffset, pax);
      if (pax !== undefined) throw readError("pax_orphan", "PAX header follows a PAX header", { offset });
      pax = await this.#readPax(header, offset);
      entryOffset = offset;
    }
  }

  /** Reads and parses the record block of the PAX header at `offset`. */
  async #readPax(header: Header, offset: number): Promise<PaxOverrides> {
    if (header.size > MAX_PAX_BYTES) {
      throw readError("pax_limit", `PAX record block of ${header.size} bytes above ${MAX_PAX_BYTES}`, { offset });
    }
    const records = new Uint8Array(header.size);
    const got = await this.#source.readInto(records);
    this.#offset += got;
    if (got < records.length) throw readError("truncated", "archive ends inside PAX records", { offset: this.#offset });
    await this.#readPadding(paddingOf(header.size), undefined);
    return parsePax(records, offset);
  }

  /** Builds the entry of a file or directory header (and its PAX overrides). */
  async #entry(header: Header, offset: number, pax: PaxOverrides | undefined): Promise<TarEntry> {
    const type = header.kind === "directory" ? "directory" : "file";
    const raw = pax?.path ?? ustarPath(header.name, header.prefix, offset);
    const path = checkPath(raw, type);
    if (typeof path !== "string") throw readError(path.code, path.reason, { offset, path: raw });
    await this.#paths.add(path, type, offset);
    let body: ReadableStream<Uint8Array>;
    if (type === "directory") {
      body = new ReadableStream({ start: (controller) => controller.close() });
    } else {
      const state: Body = {
        path,
        remaining: header.size,
        padding: paddingOf(header.size),
        finished: false,
        cancelled: false,
      };
      this.#body = state;
      body = new ReadableStream<Uint8Array>({
        start: (controller) => {
          state.controller = controller;
        },
        pull: () => this.pullBody(state),
        cancel: () => {
          state.cancelled = true;
        },
      }, { highWaterMark: 0 });
      offerDirectReads(body, {
        read: () => this.readBody(state),
        cancel: () => {
          state.cancelled = true;
          return Promise.resolve();
        },
      });
    }
    return {
      path,
      type,
      mode: header.mode,
      mtime: pax?.mtime ?? header.mtime,
      size: header.size,
      uid: pax?.uid ?? header.uid,
      gid: pax?.gid ?? header.gid,
      offset,
      body,
    };
  }

  /** After the first zero block: a second one, then only zeros, then the path check. */
  async #finish(): Promise<void> {
    const offset = this.#offset;
    const count = await this.#readBlock();
    if (count < BLOCK) throw readError("termination", "archive ends after one end-of-archive block", { offset });
    if (!isZeroBlock(this.#block)) {
      throw readError("termination", "end-of-archive block followed by a non-zero block", { offset });
    }
    for (;;) {
      const chunk = await this.#source.read(MAX_CHUNK);
      if (chunk === null) break;
      const bad = chunk.findIndex((byte) => byte !== 0);
      if (bad !== -1) {
        throw readError("trailing_data", "non-zero byte after end of archive", { offset: this.#offset + bad });
      }
      this.#offset += chunk.length;
    }
    await this.#paths.finish();
  }
}
