/**
 * An example MCP server written with the TypeScript SDK (`@modelcontextprotocol/sdk`, `McpServer`):
 * not the reference server, a server as its users write one, for `python -m harness record`.
 *
 * One tool, `stock_level({sku})`, registered with an outputSchema; it returns structuredContent
 * and its JSON text. `node server.mjs` serves stdio; `node server.mjs --http PORT` serves
 * Streamable HTTP (stateless, JSON answers) on 127.0.0.1:PORT/mcp.
 */

import http from 'node:http';

import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const STOCK = {
  'A-100': { sku: 'A-100', on_hand: 42, warehouse: 'Basel-2' },
  'B-200': { sku: 'B-200', on_hand: 0, warehouse: 'Lyon-1' },
};

function makeServer() {
  const server = new McpServer({ name: 'inventory-example-ts', version: '0.1.0' });
  server.registerTool(
    'stock_level',
    {
      description: 'Units on hand of one SKU.',
      inputSchema: { sku: z.string() },
      outputSchema: { sku: z.string(), on_hand: z.number().int(), warehouse: z.string() },
    },
    async ({ sku }) => {
      const stock = STOCK[sku];
      if (!stock) return { content: [{ type: 'text', text: `unknown SKU ${JSON.stringify(sku)}` }], isError: true };
      return { content: [{ type: 'text', text: JSON.stringify(stock) }], structuredContent: stock };
    },
  );
  return server;
}

const [flag, port] = process.argv.slice(2);
if (flag === '--http') {
  http
    .createServer(async (request, response) => {
      const chunks = [];
      for await (const chunk of request) chunks.push(chunk);
      const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
      const server = makeServer();
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      response.on('close', () => {
        transport.close();
        server.close();
      });
      await server.connect(transport);
      await transport.handleRequest(request, response, body);
    })
    .listen(Number(port), '127.0.0.1');
} else {
  await makeServer().connect(new StdioServerTransport());
}
