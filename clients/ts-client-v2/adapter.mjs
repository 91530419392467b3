/**
 * ts-client-v2 adapter: the TypeScript SDK v2 client package (`@modelcontextprotocol/client`).
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * Spawns the reference server through the package's own `StdioClientTransport`
 * (`@modelcontextprotocol/client/stdio`) or, for the `http-json` / `http-sse` transports, connects
 * to `server.url` through its `StreamableHTTPClientTransport` (`@modelcontextprotocol/client`),
 * runs `Client.connect`, optionally
 * `listTools()`, every call of the cell and the follow-up through `Client.callTool`, then
 * `Client.close()`; writes what each step returned or raised and every error the SDK reported out
 * of band (`transport.onerror`, `client.onerror`). The protocol version is
 * `Client.getNegotiatedProtocolVersion()`. Facts only: see docs/adapters.md. The steps, the
 * watchdog and the observation are `_support/mcp_driver.mjs`'s.
 *
 * Options:
 *   list_tools        (bool) call `listTools()` after initialize
 *   max_buffer_bytes  (int)  `StdioServerParameters.maxBufferSize`, the stdio ReadBuffer limit
 *                            (SDK default 10 MiB); the HTTP transport has no such limit, so
 *                            it does not apply there (noted on stderr)
 *
 * Protocol revisions (the cell's `protocol`): for `2025-11-25` the client keeps its default version
 * negotiation (`'legacy'`: the plain `initialize` handshake); for `2026-07-28` it is built with
 * `versionNegotiation: { mode: 'auto' }`, the SDK's dual-era setting (probe `server/discover`, fall
 * back to `initialize` unless the answer is modern evidence), which its documentation names for
 * talking to a 2026-07-28 server. Which revision it then spoke is read from the server's journal.
 *
 * A call with `cancel_after_ms` passes an `AbortController`'s signal in its request options
 * (`_support/mcp_driver.mjs`); on a handshake-era connection the SDK then sends
 * `notifications/cancelled` and rejects the call.
 */

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { isHttp, runAdapter, stdioParameters } from '../_support/mcp_driver.mjs';

function makeTransport(cell, options) {
  if (!isHttp(cell)) return new StdioClientTransport(stdioParameters(cell, options));
  if ('max_buffer_bytes' in options) {
    process.stderr.write(`ts-client-v2 adapter: max_buffer_bytes does not apply to ${cell.transport} (stdio only)\n`);
  }
  return new StreamableHTTPClientTransport(new URL(cell.server.url));
}

runAdapter({
  name: 'ts-client-v2',
  package: '@modelcontextprotocol/client',
  adapterUrl: import.meta.url,
  options: { list_tools: 'boolean', max_buffer_bytes: 'integer' },
  sdk: {
    makeClient: (clientInfo, cell) =>
      cell.protocol === '2026-07-28' ? new Client(clientInfo, { versionNegotiation: { mode: 'auto' } }) : new Client(clientInfo),
    makeTransport,
    callTool: (client, params, requestOptions) => client.callTool(params, requestOptions),
    protocolVersion: (client) => client.getNegotiatedProtocolVersion(),
  },
});
