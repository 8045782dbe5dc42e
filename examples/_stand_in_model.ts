/**
 * A stand-in for the Anthropic Messages API (`POST /v1/messages`, streamed as server-sent
 * events), for examples that run a real agent without a model or a key. It answers every
 * request with one scripted assistant message: the first answer of a conversation is a
 * `tool_use` of the `Write` tool (one file), every later one plain text.
 *
 * The event sequence is the API's own: `message_start`, `content_block_start`,
 * `content_block_delta`, `content_block_stop`, `message_delta` (with `stop_reason`),
 * `message_stop`. Hand-written because it is a test double of an outside API, not a server
 * we ship: no library offers this stand-in.
 *
 * @module
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createTlsServer } from "node:https";

/** What the stand-in is asked to make the agent do. */
export interface StandInScript {
  /** Absolute guest path of the file the scripted `Write` creates. */
  readonly path: string;
  /** Its content. */
  readonly content: string;
  /** The text of the final answer. */
  readonly reply: string;
}

/** A running stand-in: its port (on 0.0.0.0), the requests it answered, and its close. */
export interface StandIn {
  readonly port: number;
  /** Each request: its path, whether it offered the `Write` tool or carried a tool result, and its `x-api-key` and `authorization` fields. */
  readonly requests: {
    readonly path: string;
    readonly tools: boolean;
    readonly toolResult: boolean;
    readonly apiKey: string | undefined;
    readonly authorization: string | undefined;
  }[];
  close(): Promise<void>;
}

/** How the stand-in listens: plain HTTP, or HTTPS with this key and certificate (PEM). */
export interface StandInOptions {
  readonly tls?: { readonly key: string; readonly cert: string };
}

function sse(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

function events(model: string, block: Record<string, unknown>, delta: Record<string, unknown>, stopReason: string): string {
  const id = `msg_standin_${crypto.randomUUID().slice(0, 8)}`;
  const usage = { input_tokens: 10, output_tokens: 5 };
  return [
    sse("message_start", { type: "message_start", message: { id, type: "message", role: "assistant", model, content: [], stop_reason: null, stop_sequence: null, usage } }),
    sse("content_block_start", { type: "content_block_start", index: 0, content_block: block }),
    sse("content_block_delta", { type: "content_block_delta", index: 0, delta }),
    sse("content_block_stop", { type: "content_block_stop", index: 0 }),
    sse("message_delta", { type: "message_delta", delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 } }),
    sse("message_stop", { type: "message_stop" }),
  ].join("");
}

/**
 * Start the stand-in on `0.0.0.0` (a random port).
 *
 * @param script What the agent is made to do.
 * @param options `tls` to listen with HTTPS.
 * @returns The running stand-in.
 */
export async function startStandIn(script: StandInScript, options: StandInOptions = {}): Promise<StandIn> {
  const requests: StandIn["requests"][number][] = [];
  const answer = async (request: IncomingMessage, response: ServerResponse) => {
    let body = "";
    for await (const chunk of request) body += chunk;
    let parsed: { model?: string; stream?: boolean; tools?: unknown[]; messages?: { content?: unknown }[] } = {};
    try {
      parsed = JSON.parse(body || "{}");
    } catch { /* not JSON: answered like any other request */ }
    const path = request.url ?? "";
    const toolResult = JSON.stringify(parsed.messages ?? []).includes('"tool_result"');
    const tools = Array.isArray(parsed.tools) && parsed.tools.some((tool) => (tool as { name?: string }).name === "Write");
    const field = (name: string) => {
      const value = request.headers[name];
      return Array.isArray(value) ? value.join(", ") : value;
    };
    requests.push({ path, tools, toolResult, apiKey: field("x-api-key"), authorization: field("authorization") });
    if (request.method !== "POST" || !path.startsWith("/v1/messages")) {
      response.writeHead(404, { "content-type": "application/json" }).end('{"type":"error","error":{"type":"not_found_error","message":"stand-in"}}');
      return;
    }
    if (path.startsWith("/v1/messages/count_tokens")) {
      response.writeHead(200, { "content-type": "application/json" }).end('{"input_tokens":10}');
      return;
    }
    const model = parsed.model ?? "claude-stand-in";
    const stream = tools && !toolResult
      ? events(model, { type: "tool_use", id: "toolu_standin_1", name: "Write", input: {} }, {
        type: "input_json_delta",
        partial_json: JSON.stringify({ file_path: script.path, content: script.content }),
      }, "tool_use")
      : events(model, { type: "text", text: "" }, { type: "text_delta", text: script.reply }, "end_turn");
    if (parsed.stream === false) {
      response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
        id: "msg_standin", type: "message", role: "assistant", model, stop_reason: "end_turn", stop_sequence: null,
        content: [{ type: "text", text: script.reply }], usage: { input_tokens: 10, output_tokens: 5 },
      }));
      return;
    }
    response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" }).end(stream);
  };
  const server: Server = options.tls === undefined ? createServer(answer) : createTlsServer(options.tls, answer);
  await new Promise<void>((resolve) => server.listen(0, "0.0.0.0", resolve));
  const address = server.address();
  const port = typeof address === "object" && address !== null ? address.port : 0;
  return {
    port,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
