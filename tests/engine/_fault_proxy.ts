/**
 * A fault-injecting Unix-socket proxy between the library and a real Docker Engine, for
 * the faults a real Engine will not produce on demand: a reply lost after the Engine
 * performed the request, a slow reply, a connection cut in the middle of a body, a
 * keep-alive proxy that never closes. Everything not matched by a rule passes through
 * byte for byte, both ways, with half-close (FIN) passed on, `101` upgrades (exec attach)
 * included.
 *
 * Test code on `node:net`, which Deno, Bun and Node all implement: one file serves every
 * runtime. The proxy reads only what it needs to: the request head of each connection (to
 * match rules) and the response head (to record the status). Every connection of our
 * client carries one request (`Connection: close`), so a rule decides for the whole
 * connection.
 *
 * @example A lost reply to a volume create
 * ```ts ignore
 * await using proxy = await startFaultProxy({ upstream: endpoint });
 * const lost = proxy.inject({ method: "POST", path: "/volumes/create", fault: { kind: "drop", then: "stall" } });
 * const engine = new DockerEngine(proxy.endpoint);
 * await assert.rejects(createVolume(engine, name, labels, { timeoutMs: 5_000 }), isDeadline);
 * assert.equal((await lost.applied).status, 201); // the Engine created it
 * ```
 *
 * @module
 */
import { mkdtempSync, rmSync } from "node:fs";
import { connect, createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { concatBytes } from "../../lib/streams/concat_bytes.ts";

/**
 * What happens to a matched request and its reply:
 *
 * - `swallow`: the request never reaches the Engine (no connection to it is made); the
 *   client's connection `stall`s or is `close`d as for `drop`. Applied once the request
 *   head was read.
 * - `drop`: the Engine's whole reply is read and discarded (it performed the request);
 *   then the client's connection `stall`s (stays open, silent, until the client gives up)
 *   or is `close`d (FIN without a byte, as a crashed proxy would).
 * - `delay`: the reply is held back for `ms` milliseconds and/or until `until` settles,
 *   then passes through whole. Meanwhile the proxy reads it (so its status is recorded and
 *   `answered()` resolves) and keeps up to 1 MiB of it, then stops reading.
 * - `cut`: the response head and the first `afterBodyBytes` bytes after it (as on the
 *   wire, chunk framing included) pass, then the client's connection is closed and the
 *   Engine's destroyed. A reply whose body is shorter passes whole and is then cut the
 *   same way (which, for a complete reply, the client does not notice). With
 *   `afterRequestBytes` the same cut comes from the other direction: the request head and
 *   the first `afterRequestBytes` bytes the client sends after it reach the Engine (say,
 *   exec stdin after a `101`), and the next byte cuts both connections instead of passing.
 * - `rewrite`: the Engine's whole reply (at most 1 MiB) is read, its body (chunked coding
 *   decoded) passed through `body`, and the result sent with the same status line and
 *   headers, a fresh `Content-Length` and no `Transfer-Encoding`: a reply a real Engine
 *   would not send for this request (say, extra `Warnings` in a create reply).
 */
export type ProxyFault =
  | { readonly kind: "swallow"; readonly then: "stall" | "close" }
  | { readonly kind: "drop"; readonly then: "stall" | "close" }
  | { readonly kind: "delay"; readonly ms?: number; readonly until?: Promise<unknown> }
  | { readonly kind: "cut"; readonly afterBodyBytes?: number; readonly afterRequestBytes?: number }
  | { readonly kind: "rewrite"; readonly body: (text: string) => string };

/** Which requests a rule or a query selects. */
export interface RequestMatch {
  /**
   * Request method, e.g. `POST`.
   *
   * @default undefined (any method)
   */
  readonly method?: string;
  /**
   * The request path without the API version prefix and without the query, e.g.
   * `/volumes/create`: a string matches exactly, a RegExp by `test`, e.g.
   * `/^\/containers\/[0-9a-f]{64}$/` for `DELETE /containers/{id}`.
   */
  readonly path: string | RegExp;
}

/** A fault for some requests. */
export interface FaultRule extends RequestMatch {
  /**
   * Which matching request (counted from 1, from the moment the rule is injected) gets the
   * fault, or `"every"` one.
   *
   * @default 1
   */
  readonly occurrence?: number | "every";
  /** What happens to its reply. */
  readonly fault: ProxyFault;
}

/** One request the proxy saw; fields fill in as the exchange goes on. */
export interface ProxiedRequest {
  /** Number of the client connection, from 1. */
  readonly connection: number;
  /** Request method. */
  readonly method: string;
  /** The request target as sent, e.g. `/v1.51/volumes/create`. */
  readonly target: string;
  /** `target` without the `/vX.Y` prefix and the query: what rules match. */
  readonly path: string;
  /** Status of the Engine's reply once its head arrived (also when the client never saw it). */
  status: number | undefined;
  /** The fault applied to this request's reply, if any. */
  fault: ProxyFault["kind"] | undefined;
  /** Whether the Engine switched protocols (`101`) and bytes are spliced both ways. */
  upgraded: boolean;
  /** Whether the client's connection of this request has closed. */
  closed: boolean;
}

/** An injected rule and what it did. */
export interface FaultHandle {
  /** The rule as injected. */
  readonly rule: FaultRule;
  /** Requests the fault was applied to so far. */
  readonly hits: readonly ProxiedRequest[];
  /**
   * Resolves with the first request the fault was applied to, once applied: `swallow` when
   * its head was read, `drop` when the Engine's reply ended (it performed the request),
   * `delay` when the held reply was released, `cut` when the connections were cut.
   */
  readonly applied: Promise<ProxiedRequest>;
  /** Stops applying the rule to later requests (one in progress keeps its fault). */
  remove(): void;
}

/** Options of {@linkcode startFaultProxy}. */
export interface FaultProxyOptions {
  /** The Engine to forward to: `unix:///abs/path.sock` or an absolute socket path. */
  readonly upstream: string;
  /**
   * Behave as a keep-alive proxy: the Engine's close after a reply is not passed on, so
   * the client's connection stays open until the client closes it (an upgraded
   * connection still passes FIN both ways).
   *
   * @default false
   */
  readonly keepAlive?: boolean;
}

/** A running proxy; `close()` it (or `await using` it). */
export interface FaultProxy extends AsyncDisposable {
  /** Absolute path of the proxy's socket, in a temporary directory the proxy owns. */
  readonly socketPath: string;
  /** `unix://` endpoint of the proxy, for `DockerEngine` and the backend. */
  readonly endpoint: string;
  /** Every request seen, in arrival order. */
  readonly requests: readonly ProxiedRequest[];
  /** Client connections accepted so far (also those that never sent a whole head). */
  readonly connections: () => number;
  /** Client connections still open. */
  readonly openConnections: () => number;
  /** Adds a rule; rules are tried in injection order, the first that fires applies. */
  inject(rule: FaultRule): FaultHandle;
  /** Requests seen so far that `match` selects. */
  matching(match: RequestMatch): ProxiedRequest[];
  /** Resolves with the `count`-th (from 1) request `match` selects once its reply head arrived. */
  answered(match: RequestMatch, count?: number): Promise<ProxiedRequest>;
  /** Destroys live connections, stops listening, removes the socket's directory. */
  close(): Promise<void>;
}

const HEAD_END = Uint8Array.from([13, 10, 13, 10]);
/** Most bytes of a request or response head the proxy buffers to parse it. */
const MAX_HEAD_BYTES = 64 * 1024;
/** Most reply bytes read and kept while a delayed reply is held; past them the proxy stops reading. */
const MAX_HELD_BYTES = 1024 * 1024;
const latin1 = new TextDecoder("latin1");

/** The body of a whole HTTP/1.1 reply (`head` without its blank line), chunked coding decoded. */
function replyBody(head: string, rest: Uint8Array): Uint8Array {
  if (!/^transfer-encoding:\s*chunked\s*$/imu.test(head)) return rest;
  const parts: Uint8Array[] = [];
  let at = 0;
  for (;;) {
    const lineEnd = rest.indexOf(13, at);
    const size = parseInt(latin1.decode(rest.subarray(at, lineEnd)), 16);
    if (!(size > 0)) return concatBytes(parts);
    parts.push(rest.subarray(lineEnd + 2, lineEnd + 2 + size));
    at = lineEnd + 2 + size + 2;
  }
}

interface Rule {
  readonly handle: FaultHandle;
  readonly hits: ProxiedRequest[];
  seen: number;
  resolveApplied: (request: ProxiedRequest) => void;
}

/** Where `HEAD_END` starts in `bytes`, or -1. */
function headEnd(bytes: Uint8Array): number {
  for (let at = bytes.indexOf(13); at !== -1 && at + 3 < bytes.byteLength; at = bytes.indexOf(13, at + 1)) {
    if (HEAD_END.every((byte, offset) => bytes[at + offset] === byte)) return at;
  }
  return -1;
}

/** Whether `match` selects a request with `method` and `path`. */
function selects(match: RequestMatch, method: string, path: string): boolean {
  if (match.method !== undefined && match.method !== method) return false;
  return typeof match.path === "string" ? match.path === path : match.path.test(path);
}

/**
 * Starts a proxy on a fresh socket in a temporary directory, forwarding to `upstream`.
 *
 * @param options The Engine to forward to and the keep-alive mode.
 * @returns The running proxy.
 */
export async function startFaultProxy(options: FaultProxyOptions): Promise<FaultProxy> {
  const upstreamPath = options.upstream.startsWith("unix://") ? options.upstream.slice("unix://".length) : options.upstream;
  const directory = mkdtempSync(join(tmpdir(), "agentcell-proxy-"));
  const socketPath = join(directory, "engine.sock");
  const requests: ProxiedRequest[] = [];
  const rules: Rule[] = [];
  const sockets = new Set<Socket>();
  const open = new Set<Socket>();
  const answerWaiters: Array<() => void> = [];
  let connections = 0;

  const track = (socket: Socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  };
  const answeredHead = () => {
    for (const wake of answerWaiters.splice(0)) wake();
  };
  const ruleFor = (request: ProxiedRequest): Rule | undefined => {
    let chosen: Rule | undefined;
    for (const rule of rules) {
      if (!selects(rule.handle.rule, request.method, request.path)) continue;
      rule.seen++;
      const occurrence = rule.handle.rule.occurrence ?? 1;
      if (chosen === undefined && (occurrence === "every" || occurrence === rule.seen)) chosen = rule;
    }
    return chosen;
  };

  const server = createServer({ allowHalfOpen: true }, (client) => {
    const number = ++connections;
    track(client);
    open.add(client);
    client.on("close", () => open.delete(client));
    client.on("error", () => {});
    let head: Uint8Array = new Uint8Array(0);
    const onHeadData = (data: Uint8Array) => {
      head = concatBytes([head, data]);
      const end = headEnd(head);
      if (end === -1) {
        if (head.byteLength > MAX_HEAD_BYTES) client.destroy();
        return;
      }
      client.off("data", onHeadData);
      client.off("end", onEarlyEnd);
      const [method = "", target = ""] = latin1.decode(head.subarray(0, head.indexOf(13))).split(" ");
      const path = target.replace(/\?.*$/su, "").replace(/^\/v[0-9]+\.[0-9]+(?=\/)/u, "");
      const request: ProxiedRequest = { connection: number, method, target, path, status: undefined, fault: undefined, upgraded: false, closed: false };
      client.on("close", () => request.closed = true);
      requests.push(request);
      proxyConnection(client, head, request, ruleFor(request));
    };
    const onEarlyEnd = () => client.destroy();
    client.on("data", onHeadData);
    client.on("end", onEarlyEnd);
  });

  /** Forwards one connection whose request head (and maybe more) is in `first`. */
  function proxyConnection(client: Socket, first: Uint8Array, request: ProxiedRequest, rule: Rule | undefined): void {
    const fault = rule?.handle.rule.fault;
    const apply = () => {
      if (rule === undefined || request.fault !== undefined) return;
      request.fault = fault!.kind;
      rule.hits.push(request);
      rule.resolveApplied(request);
    };
    if (fault?.kind === "swallow") {
      // The rest of the request is read and discarded; the Engine never hears of it.
      client.on("data", () => {});
      client.on("end", () => client.end());
      apply();
      if (fault.then === "close") client.end();
      return;
    }
    client.pause();
    const upstream = connect({ path: upstreamPath, allowHalfOpen: true });
    track(upstream);
    const destroyBoth = () => {
      client.destroy();
      upstream.destroy();
    };
    upstream.on("error", destroyBoth);
    client.on("error", destroyBoth);
    client.on("close", () => upstream.destroy());
    let clientEnded = false;
    let upstreamEnded = false;
    const endClient = () => {
      if (!client.destroyed) client.end();
    };

    // Client to Engine: whole (up to a request cut), with backpressure and FIN passed on. A
    // client that closes while the proxy holds its connection open (keep-alive, stall) is
    // closed too.
    let requestBudget = fault?.kind === "cut" ? fault.afterRequestBytes ?? Infinity : Infinity;
    let requestCut = false;
    const toUpstream = (data: Uint8Array): boolean => {
      if (requestCut) return true;
      if (data.byteLength <= requestBudget) {
        requestBudget -= data.byteLength;
        return upstream.write(data);
      }
      requestCut = true;
      upstream.write(data.subarray(0, requestBudget), () => cut());
      return true;
    };
    pipe(client, upstream, toUpstream, () => {
      clientEnded = true;
      upstream.end();
      if (upstreamEnded) endClient();
    });
    upstream.once("connect", () => {
      const bodyAt = headEnd(first) + 4;
      upstream.write(first.subarray(0, bodyAt));
      if (bodyAt < first.byteLength) toUpstream(first.subarray(bodyAt));
      client.resume();
    });

    // Engine to client: the response head is parsed for its status, then the fault decides.
    let responseHead: Uint8Array | undefined = new Uint8Array(0);
    let bodyBudget = fault?.kind === "cut" ? fault.afterBodyBytes ?? Infinity : Infinity;
    let waitingForDrain = false;
    // While a delayed reply is held, what would reach the client waits here, in order; the
    // Engine's reply is still read (its status recorded) up to MAX_HELD_BYTES.
    let held: Array<() => void> | undefined;
    let heldBytes = 0;
    const toClient = (data: Uint8Array) => {
      if (held !== undefined) {
        held.push(() => toClient(data));
        heldBytes += data.byteLength;
        if (heldBytes > MAX_HELD_BYTES) upstream.pause();
        return;
      }
      if (client.destroyed) return;
      if (!client.write(data)) {
        waitingForDrain = true;
        upstream.pause();
        client.once("drain", () => {
          waitingForDrain = false;
          upstream.resume();
        });
      }
    };
    const atClient = (action: () => void) => {
      if (held !== undefined) held.push(action);
      else action();
    };
    if (fault?.kind === "delay") {
      held = [];
      const waits: Promise<unknown>[] = [];
      if (fault.ms !== undefined) waits.push(new Promise((resolve) => setTimeout(resolve, fault.ms)));
      if (fault.until !== undefined) waits.push(fault.until);
      Promise.allSettled(waits).then(() => {
        const actions = held!;
        held = undefined;
        apply();
        for (const action of actions) action();
        if (!waitingForDrain) upstream.resume();
      });
    }
    // The bytes written so far reach the client, then its connection closes; the Engine's
    // connection is destroyed at once.
    const cut = () => {
      apply();
      upstream.destroy();
      if (!client.destroyed) client.end(() => client.destroy());
    };
    if (fault?.kind === "rewrite") {
      let whole: Uint8Array = new Uint8Array(0);
      upstream.on("data", (data: Uint8Array) => {
        whole = concatBytes([whole, data]);
        if (whole.byteLength > MAX_HELD_BYTES) destroyBoth();
        const end = request.status === undefined ? headEnd(whole) : -1;
        if (end !== -1) {
          request.status = Number(/^HTTP\/1\.[01] ([0-9]{3})/u.exec(latin1.decode(whole.subarray(0, whole.indexOf(13))))?.[1]) || undefined;
          answeredHead();
        }
      });
      upstream.on("end", () => {
        const end = headEnd(whole);
        if (end === -1) return destroyBoth();
        const head = latin1.decode(whole.subarray(0, end));
        const text = fault.body(new TextDecoder().decode(replyBody(head, whole.subarray(end + 4))));
        const bytes = new TextEncoder().encode(text);
        const fields = head.split("\r\n").filter((line) => !/^(content-length|transfer-encoding):/iu.test(line));
        client.write(new TextEncoder().encode(`${[...fields, `Content-Length: ${bytes.byteLength}`].join("\r\n")}\r\n\r\n`));
        client.write(bytes);
        apply();
        endClient();
      });
      return;
    }
    upstream.on("data", (data: Uint8Array) => {
      let body = data;
      if (responseHead !== undefined) {
        responseHead = concatBytes([responseHead, data]);
        const end = headEnd(responseHead);
        if (end === -1) {
          if (responseHead.byteLength > MAX_HEAD_BYTES) destroyBoth();
          return;
        }
        const statusLine = latin1.decode(responseHead.subarray(0, responseHead.indexOf(13)));
        request.status = Number(/^HTTP\/1\.[01] ([0-9]{3})/u.exec(statusLine)?.[1]) || undefined;
        request.upgraded = request.status === 101;
        answeredHead();
        if (fault?.kind !== "drop") toClient(responseHead.subarray(0, end + 4));
        body = responseHead.subarray(end + 4);
        responseHead = undefined;
      }
      if (fault?.kind === "drop" || body.byteLength === 0) return;
      if (body.byteLength < bodyBudget) {
        bodyBudget -= body.byteLength;
        toClient(body);
        return;
      }
      toClient(body.subarray(0, bodyBudget));
      cut();
    });
    upstream.on("end", () => {
      upstreamEnded = true;
      atClient(() => {
        if (fault?.kind === "cut") return cut();
        if (fault?.kind === "drop") {
          apply();
          if (fault.then === "close" || clientEnded) endClient();
          return;
        }
        if (options.keepAlive && !request.upgraded && !clientEnded) return;
        endClient();
      });
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(socketPath, () => resolve());
  });

  const close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    rmSync(directory, { recursive: true, force: true });
  };
  return {
    socketPath,
    endpoint: `unix://${socketPath}`,
    requests,
    connections: () => connections,
    openConnections: () => open.size,
    inject(rule) {
      let resolveApplied!: (request: ProxiedRequest) => void;
      const applied = new Promise<ProxiedRequest>((resolve) => resolveApplied = resolve);
      const hits: ProxiedRequest[] = [];
      const remove = () => {
        const at = rules.findIndex((entry) => entry.handle === handle);
        if (at !== -1) rules.splice(at, 1);
      };
      const handle: FaultHandle = { rule, hits, applied, remove };
      rules.push({ handle, hits, seen: 0, resolveApplied });
      return handle;
    },
    matching: (match) => requests.filter((request) => selects(match, request.method, request.path)),
    async answered(match, count = 1) {
      for (;;) {
        const found = requests.filter((request) => selects(match, request.method, request.path) && request.status !== undefined);
        if (found.length >= count) return found[count - 1];
        await new Promise<void>((wake) => answerWaiters.push(wake));
      }
    },
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * Passes `from`'s bytes to `to` through `write` (which returns `false` when `to` wants no
 * more for now) with backpressure; `onEnd` runs at `from`'s FIN.
 */
function pipe(from: Socket, to: Socket, write: (data: Uint8Array) => boolean, onEnd: () => void): void {
  from.on("data", (data: Uint8Array) => {
    if (to.destroyed) return;
    if (!write(data)) {
      from.pause();
      to.once("drain", () => from.resume());
    }
  });
  from.on("end", onEnd);
}
