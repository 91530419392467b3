/**
 * ts-sdk adapter: the TypeScript SDK v1 (`@modelcontextprotocol/sdk`) as an MCP client.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * Spawns the reference server through the SDK's own `StdioClientTransport` or, for the `http-json`
 * / `http-sse` transports, connects to `server.url` through its `StreamableHTTPClientTransport`
 * (`@modelcontextprotocol/sdk/client/streamableHttp.js`), runs
 * `Client.connect` (initialize), optionally `listTools()`, every call of the cell and the
 * follow-up through `Client.callTool`, then `Client.close()`; writes what each step returned or
 * raised and every error the SDK reported out of band (`transport.onerror`, `client.onerror`).
 * Facts only: see docs/adapters.md. The steps, the watchdog and the observation are
 * `_support/mcp_driver.mjs`'s.
 *
 * Options:
 *   list_tools        (bool) call `listTools()` after initialize
 *   max_buffer_bytes  (int)  `StdioServerParameters.maxBufferSize`, the stdio ReadBuffer limit
 *                            (SDK default 10 MiB); the HTTP transport has no such limit, so
 *                            it does not apply there (noted on stderr)
 *
 * A call with `cancel_after_ms` passes an `AbortController`'s signal in its request options
 * (`_support/mcp_driver.mjs`); the SDK then sends `notifications/cancelled` and rejects the call.
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { isHttp, runAdapter, stdioParameters } from '../_support/mcp_driver.mjs';

function makeTransport(cell, options) {
  if (!isHttp(cell)) return new StdioClientTransport(stdioParameters(cell, options));
  if ('max_buffer_bytes' in options) {
    process.stderr.write(`ts-sdk adapter: max_buffer_bytes does not apply to ${cell.transport} (stdio only)\n`);
  }
  return new StreamableHTTPClientTransport(new URL(cell.server.url));
}

runAdapter({
  name: 'ts-sdk',
  package: '@modelcontextprotocol/sdk',
  adapterUrl: import.meta.url,
  options: { list_tools: 'boolean', max_buffer_bytes: 'integer' },
  sdk: {
    makeClient: (clientInfo) => new Client(clientInfo),
    makeTransport,
    // resultSchema undefined -> the SDK's default CallToolResultSchema
    callTool: (client, params, requestOptions) => client.callTool(params, undefined, requestOptions),
    // v1 keeps the negotiated protocol version to itself (no getter): not exposed -> null.
    protocolVersion: () => null,
  },
});
