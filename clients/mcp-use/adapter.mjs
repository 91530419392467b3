/**
 * mcp-use adapter: mcp-use's `MCPAgent` (a LangChain.js `createAgent` loop over MCP tools).
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * `MCPClient` (its MCP client is `@modelcontextprotocol/sdk` v1, pinned by mcp-use) with one
 * stdio server; `createAllSessions()` spawns the reference server and initializes (the
 * `initialize` step); the tool set is the session connector's `tools` (listed at initialize).
 * mcp-use gives tools/call no request timeout of its own (its LangChain tools call
 * `connector.callTool(name, input)` without options: the SDK's 60 s default), so
 * `call_timeout_ms` cannot be applied. Each cell call and the follow-up is one
 * `MCPAgent({llm, client, memoryEnabled: false}).run({prompt, maxSteps: 3, manageConnector:
 * false})` on the same `MCPClient` (a new agent per run, `initialize()`d first: it reuses the
 * client's open session and converts the tools with `LangChainAdapter`); `llm` is `fakeModel()`
 * from `@langchain/core/testing`, the scripted chat model LangChain ships: turn one
 * `respondWithTools([{name, args, id: "call-1"}])`, turn two `respond(AIMessage("done"))`. The
 * model view is the `ToolMessage` among the messages of the model's second call
 * (`model.calls[1].messages`). mcp-use's anonymized telemetry is switched off
 * (`MCP_USE_ANONYMIZED_TELEMETRY=false`), and so are observability callbacks (`observe: false`)
 * and LangSmith tracing.
 *
 * Conversion (read in the installed source):
 *  - `node_modules/mcp-use/dist/chunk-27JERD25.js` `LangChainAdapter.convertTool` (exported by
 *    `mcp-use/adapters`), the `func` of its `DynamicStructuredTool`: the tool output is
 *    **`JSON.stringify(result)` of the whole CallToolResult** as the SDK returned it (content,
 *    structuredContent, isError, _meta: both channels and the error flag as raw JSON); an
 *    error the call raised becomes the string `"Error executing MCP tool: <error>"`
 *    (returned, not thrown);
 *  - the ToolMessage is built by `langchain`'s `ToolNode`; its `status` is `"error"` only for a
 *    tool that threw (`error_flag`: `ToolMessage.status == "error"`).
 *
 * Options: none.
 */

import { AIMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';

import { FINAL_TEXT, PROMPT, TOOL_CALL_ID, captureOnerror, langchainToolTurn, runFramework } from '../_support/framework_driver.mjs';

process.env.MCP_USE_ANONYMIZED_TELEMETRY = 'false';
for (const key of ['LANGSMITH_TRACING', 'LANGCHAIN_TRACING_V2', 'LANGCHAIN_TRACING']) process.env[key] = 'false';
// Imported after the environment is set: mcp-use reads its telemetry switch when it starts.
const { MCPAgent, MCPClient } = await import('mcp-use');

const SERVER = 'reference';

async function connect({ cell, reportError }) {
  const client = new MCPClient({
    mcpServers: {
      [SERVER]: { command: cell.server.command, args: cell.server.args ?? [], env: cell.server.env ?? {} },
    },
  });
  const sessions = await client.createAllSessions();
  const connector = sessions[SERVER]?.connector;
  captureOnerror(connector?.client, reportError);
  captureOnerror(connector?.client?.transport, reportError);
  return { client, connector };
}

async function listTools({ connector }) {
  return (connector.tools ?? []).map((t) => t.name);
}

async function runCall(handle, call, _ctx, signal) {
  const model = fakeModel()
    .respondWithTools([{ name: call.name, args: call.arguments, id: TOOL_CALL_ID }])
    .respond(new AIMessage({ content: FINAL_TEXT, id: 'scripted-2' }));
  const agent = new MCPAgent({ llm: model, client: handle.client, maxSteps: 3, memoryEnabled: false, observe: false });
  await agent.initialize();
  await agent.run({ prompt: PROMPT, maxSteps: 3, manageConnector: false, ...(signal ? { signal } : {}) });
  const { toolMessage, view } = langchainToolTurn(model, ToolMessage);
  // The tool's output is exactly the ToolMessage content (the JSON string of the result).
  return { result: toolMessage ? toolMessage.content : null, model_view: view };
}

runFramework({
  name: 'mcp-use',
  package: 'mcp-use',
  adapterUrl: import.meta.url,
  options: {},
  framework: {
    connect,
    listTools,
    runCall,
    close: ({ client }) => client.closeAllSessions(),
  },
});
