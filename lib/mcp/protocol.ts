/**
 * The MCP SDK types this API uses, as `@modelcontextprotocol/sdk` defines them. They are
 * aliases, so values from the SDK and from this module are interchangeable.
 *
 * @module
 */
// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";

/**
 * An MCP transport of the SDK (`StdioServerTransport`, `StreamableHTTPServerTransport`, an
 * in-memory pair in tests): `start()`, `send()`, `close()` and the `onmessage`/`onclose`/
 * `onerror` callbacks the server sets.
 */
export type McpTransport = Transport;
