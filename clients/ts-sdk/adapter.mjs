/**
 * ts-sdk adapter: the TypeScript SDK v1 (`@modelcontextprotocol/sdk`) as an MCP client.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * Spawns the reference server through the SDK's own `StdioClientTransport`, runs
 * `Client.connect` (initialize), optionally `listTools()`, every call of the cell and the
 * follow-up through `Client.callTool`, then `Client.close()`; writes what each step returned or
 * raised and every error the SDK reported out of band (`transport.onerror`, `client.onerror`).
 * Facts only: see docs/adapters.md. The steps, the watchdog and the observation are
 * `_support/mcp_driver.mjs`'s.
 *
 * Options:
 *   list_tools        (bool) call `listTools()` after initialize
 *   max_buffer_bytes  (int)  `StdioServerParameters.maxBufferSize`, the stdio ReadBuffer limit
 *                            (SDK default 10 MiB)
 */

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { runAdapter, stdioParameters } from '../_support/mcp_driver.mjs';

runAdapter({
  name: 'ts-sdk',
  package: '@modelcontextprotocol/sdk',
  adapterUrl: import.meta.url,
  options: { list_tools: 'boolean', max_buffer_bytes: 'integer' },
  sdk: {
    makeClient: (clientInfo) => new Client(clientInfo),
    makeTransport: (cell, options) => new StdioClientTransport(stdioParameters(cell, options)),
    // resultSchema undefined -> the SDK's default CallToolResultSchema
    callTool: (client, params, requestOptions) => client.callTool(params, undefined, requestOptions),
    // v1 keeps the negotiated protocol version to itself (no getter): not exposed -> null.
    protocolVersion: () => null,
  },
});
