/**
 * langchain-js adapter: LangChain.js, MCP tools from `@langchain/mcp-adapters` in a `langchain`
 * `createAgent` agent.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * `MultiServerMCPClient` (its MCP client is `@modelcontextprotocol/sdk` v1) with one stdio server
 * spawns the reference server in `initializeConnections()` (the `initialize` step);
 * `getTools()` builds the LangChain tools (`defaultToolTimeout` = `call_timeout_ms`, the request
 * timeout of every tools/call). Each cell call and the follow-up is one
 * `createAgent({model, tools}).invoke({messages})` whose model is `fakeModel()` from
 * `@langchain/core/testing`, the scripted chat model LangChain ships: turn one
 * `respondWithTools([{name, args, id: "call-1"}])`, turn two `respond(AIMessage("done"))`. The
 * model view is the `ToolMessage` among the messages of the model's second call
 * (`model.calls[1].messages`). LangSmith tracing is switched off.
 *
 * Conversion (read in the installed source):
 *  - `node_modules/@langchain/mcp-adapters/dist/tools.js` `_convertCallToolResult` (called by
 *    `_callTool`, the `func` of the `DynamicStructuredTool` with `responseFormat:
 *    "content_and_artifact"`): `isError` (or a `content` that is not an array) throws a
 *    `ToolException` ("MCP tool '<name>' on server '<server>' returned an error: <texts>");
 *    otherwise content blocks are converted (text -> `{type: "text", text}`, plus
 *    `source_type: "text"` with `useStandardContentBlocks`); exactly one text block becomes the
 *    plain string, or, when the result also has structuredContent or `_meta`, the block object
 *    `{type, text, structuredContent, meta}` (which the ToolMessage holds as a one-element
 *    list); structuredContent and `_meta` also go to the artifact;
 *  - `node_modules/langchain/dist/agents/nodes/ToolNode.js` `defaultHandleToolErrors`: a tool
 *    that threw becomes `ToolMessage({content: "<error>\n Please fix your mistakes.", status:
 *    "error"})` (`error_flag`: `ToolMessage.status == "error"`).
 *
 * Options:
 *   use_standard_content_blocks  (bool) `MultiServerMCPClient({useStandardContentBlocks})`
 */

import { MultiServerMCPClient } from '@langchain/mcp-adapters';
import { AIMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { fakeModel } from '@langchain/core/testing';
import { createAgent } from 'langchain';

import { FINAL_TEXT, PROMPT, TOOL_CALL_ID, captureOnerror, langchainToolTurn, runFramework, toolMessageJson } from '../_support/framework_driver.mjs';

for (const key of ['LANGSMITH_TRACING', 'LANGCHAIN_TRACING_V2', 'LANGCHAIN_TRACING']) process.env[key] = 'false';

const SERVER = 'reference';

async function connect({ cell, options, reportError }) {
  const client = new MultiServerMCPClient({
    mcpServers: {
      [SERVER]: {
        transport: 'stdio',
        command: cell.server.command,
        args: cell.server.args ?? [],
        env: cell.server.env ?? {},
        stderr: 'inherit',
      },
    },
    throwOnLoadError: true,
    prefixToolNameWithServerName: false,
    useStandardContentBlocks: options.use_standard_content_blocks ?? false,
    defaultToolTimeout: cell.call_timeout_ms,
  });
  await client.initializeConnections();
  const sdkClient = await client.getClient(SERVER);
  captureOnerror(sdkClient, reportError);
  captureOnerror(sdkClient?.transport, reportError);
  return { client, tools: null };
}

async function listTools(handle) {
  handle.tools = await handle.client.getTools();
  return handle.tools.map((t) => t.name);
}

async function runCall(handle, call, _ctx, signal) {
  const model = fakeModel()
    .respondWithTools([{ name: call.name, args: call.arguments, id: TOOL_CALL_ID }])
    .respond(new AIMessage({ content: FINAL_TEXT, id: 'scripted-2' }));
  const agent = createAgent({ model, tools: handle.tools });
  const state = await agent.invoke(
    { messages: [new HumanMessage({ content: PROMPT, id: 'human-1' })] },
    { recursionLimit: 10, ...(signal ? { signal } : {}) },
  );
  const { view } = langchainToolTurn(model, ToolMessage);
  const produced = state.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === TOOL_CALL_ID);
  return { result: produced ? toolMessageJson(produced) : null, model_view: view };
}

runFramework({
  name: 'langchain-js',
  package: '@langchain/mcp-adapters',
  adapterUrl: import.meta.url,
  options: { use_standard_content_blocks: 'boolean' },
  framework: {
    connect,
    listTools,
    runCall,
    close: ({ client }) => client.close(),
  },
});
