/**
 * ts-client-v2 adapter: the TypeScript SDK v2 client package (`@modelcontextprotocol/client`).
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * Spawns the reference server through the package's own `StdioClientTransport`
 * (`@modelcontextprotocol/client/stdio`), runs `Client.connect` with the default version
 * negotiation (legacy `initialize`), optionally `listTools()`, every call of the cell and the
 * follow-up through `Client.callTool`, then `Client.close()`; writes what each step returned or
 * raised and every error the SDK reported out of band (`transport.onerror`, `client.onerror`).
 * The protocol version is `Client.getNegotiatedProtocolVersion()`. Facts only: see
 * docs/adapters.md. The steps, the watchdog and the observation are `_support/mcp_driver.mjs`'s.
 *
 * Options:
 *   list_tools        (bool) call `listTools()` after initialize
 *   max_buffer_bytes  (int)  `StdioServerParameters.maxBufferSize`, the stdio ReadBuffer limit
 *                            (SDK default 10 MiB)
 */

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

import { runAdapter, stdioParameters } from '../_support/mcp_driver.mjs';

runAdapter({
  name: 'ts-client-v2',
  package: '@modelcontextprotocol/client',
  adapterUrl: import.meta.url,
  options: { list_tools: 'boolean', max_buffer_bytes: 'integer' },
  sdk: {
    makeClient: (clientInfo) => new Client(clientInfo),
    makeTransport: (cell, options) => new StdioClientTransport(stdioParameters(cell, options)),
    callTool: (client, params, requestOptions) => client.callTool(params, requestOptions),
    protocolVersion: (client) => client.getNegotiatedProtocolVersion(),
  },
});
