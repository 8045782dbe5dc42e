// A headless terminal emulator (@xterm/headless) fed by a process's terminal output, so
// tests assert the screen a person would see rather than bytes.
import xterm from "@xterm/headless";
import { eventually } from "./_engine.ts";

/** A screen of `columns` × `rows` cells that renders everything written to it. */
export class Screen {
  readonly terminal: InstanceType<typeof xterm.Terminal>;
  /** Bytes fed so far. */
  bytes = 0;
  /** Resolves when the fed stream ended, rejects with its error. */
  ended: Promise<void> = Promise.resolve();
  #parsed: Promise<void> = Promise.resolve();

  constructor(columns: number, rows: number) {
    this.terminal = new xterm.Terminal({ cols: columns, rows, allowProposedApi: true, scrollback: 100 });
  }

  /** Render `stream` as it arrives, in the background (see `ended`). */
  feed(stream: ReadableStream<Uint8Array>): this {
    this.ended = (async () => {
      for await (const chunk of stream) {
        this.bytes += chunk.byteLength;
        this.#parsed = new Promise<void>((resolve) => this.terminal.write(chunk, resolve));
      }
    })();
    this.ended.catch(() => {});
    return this;
  }

  /** The visible lines, right-trimmed, once what arrived was parsed. */
  async lines(): Promise<string[]> {
    await this.#parsed;
    const buffer = this.terminal.buffer.active;
    const lines: string[] = [];
    for (let row = 0; row < this.terminal.rows; row++) lines.push(buffer.getLine(buffer.viewportY + row)?.translateToString(true).trimEnd() ?? "");
    return lines;
  }

  /** Wait until the screen satisfies `ready`; the error names `what` and shows the screen. */
  async waitFor(what: string, ready: (lines: string[]) => boolean, deadlineMs = 30_000): Promise<string[]> {
    let last: string[] = [];
    try {
      return await eventually(what, async () => {
        last = await this.lines();
        return ready(last) ? last : undefined;
      }, { deadlineMs });
    } catch (error) {
      throw new Error(`${(error as Error).message}; the screen:\n${last.join("\n")}`);
    }
  }

  /** Wait until a visible line contains `text`. */
  async waitForText(text: string, deadlineMs?: number): Promise<string[]> {
    return await this.waitFor(`the screen showing ${JSON.stringify(text)}`, (lines) => lines.some((line) => line.includes(text)), deadlineMs);
  }

  /** Resize the emulator too (as a terminal window would be). */
  resize(columns: number, rows: number): void {
    this.terminal.resize(columns, rows);
  }
}
