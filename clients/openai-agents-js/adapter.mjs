/**
 * openai-agents-js adapter: the OpenAI Agents SDK for JavaScript (`@openai/agents`) with an MCP
 * server over stdio.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * `MCPServerStdio` (its MCP client is the TypeScript SDK v2, `@modelcontextprotocol/client`)
 * spawns the reference server on `connect()`, with `timeout` (tools/call) = `call_timeout_ms` and
 * `clientSessionTimeoutSeconds` (initialize, tools/list) = `call_timeout_ms / 1000`. The tool set
 * is `server.listTools()`; the agent lists the tools again on every run (`cacheToolsList` is
 * false by default). Each cell call and the follow-up is one `run(agent, prompt)` of an `Agent`
 * whose model is `ScriptedModel` from `@openai/agents/testing`: turn one is
 * `functionCall(name, args, {callId: "call-1"})`, turn two `assistantMessage("done")`; the
 * model view is the `function_call_result` item of the input the model received on its second
 * call (`model.calls[1].request.input`). Tracing is disabled (`setTracingDisabled(true)`).
 *
 * Conversion (read in the installed source):
 *  - `node_modules/@openai/agents-core/dist/mcp.mjs` `mcpToFunctionTool`, its `invoke()`: with
 *    `useStructuredContent: true`, a result that is not `isError` and has structuredContent
 *    becomes `JSON.stringify(structuredContent)`; otherwise the tool output is `content[0]` when
 *    there is one block, else the whole `content` array (isError and structuredContent dropped).
 *    A thrown error goes to the tool's `errorFunction` (`tool.mjs` `defaultToolErrorFunction`):
 *    a text for the model;
 *  - `node_modules/@openai/agents-core/dist/runner/toolExecution.mjs` `getToolCallOutputItem`:
 *    the output becomes a `function_call_result` item (`status: "completed"` always), its
 *    `output` `{type: "text", text}` or a list of `input_text` / `input_image` / `input_file`
 *    items (`runner/toolOutputNormalization.mjs`). The item has no error marker
 *    (`error_flag: null`).
 *
 * Options:
 *   use_structured_content  (bool) `MCPServerStdio({useStructuredContent})`
 */

import { Agent, MCPServerStdio, run, setTracingDisabled } from '@openai/agents';
import { ScriptedModel, assistantMessage, functionCall } from '@openai/agents/testing';

import { FINAL_TEXT, PROMPT, TOOL_CALL_ID, captureOnerror, errorRecord, modelView, runFramework } from '../_support/framework_driver.mjs';

setTracingDisabled(true);

async function connect({ cell, options, reportError }) {
  const server = new MCPServerStdio({
    name: 'reference',
    command: cell.server.command,
    args: cell.server.args ?? [],
    env: cell.server.env ?? {},
    timeout: cell.call_timeout_ms,
    clientSessionTimeoutSeconds: cell.call_timeout_ms / 1000,
    useStructuredContent: options.use_structured_content ?? false,
  });
  await server.connect();
  captureOnerror(server.underlying.session, reportError);
  captureOnerror(server.underlying.transport, reportError);
  // Evidence only: remember what the MCP call raised before the tool's errorFunction turned it
  // into text for the model (the rejection is passed on unchanged).
  const handle = { server, lastError: null };
  const underlying = server.underlying;
  const callToolResult = underlying.callToolResult.bind(underlying);
  underlying.callToolResult = async (...args) => {
    try {
      return await callToolResult(...args);
    } catch (err) {
      handle.lastError = err;
      throw err;
    }
  };
  return handle;
}

async function listTools({ server }) {
  const tools = await server.listTools();
  return tools.map((t) => t.name);
}

async function runCall(handle, call, { cell }, signal) {
  const { server } = handle;
  handle.lastError = null;
  const model = new ScriptedModel([
    [functionCall(call.name, call.arguments, { callId: TOOL_CALL_ID })],
    [assistantMessage(FINAL_TEXT)],
  ]);
  const agent = new Agent({ name: 'matrix', instructions: 'Call the tool as scripted.', model, mcpServers: [server] });
  const result = await run(agent, PROMPT, { maxTurns: 3, ...(signal ? { signal } : {}) });
  const second = model.calls[1];
  if (!second) throw new Error(`the scripted model was not called a second time (final output ${JSON.stringify(result.finalOutput)})`);
  const input = Array.isArray(second.request.input) ? second.request.input : [];
  const item = input.find((i) => i.type === 'function_call_result' && i.callId === TOOL_CALL_ID);
  const produced = result.newItems.find((i) => i.type === 'tool_call_output_item' && i.rawItem?.callId === TOOL_CALL_ID);
  void cell;
  return {
    extra: handle.lastError ? { tool_error: errorRecord(handle.lastError) } : undefined,
    result: produced ? produced.output : null,
    model_view: modelView({
      value: item ? item.output : null,
      errorFlag: null, // function_call_result has no error marker (status is "completed")
      errorFlagField: null,
      message: item ?? null,
    }),
  };
}

runFramework({
  name: 'openai-agents-js',
  package: '@openai/agents',
  adapterUrl: import.meta.url,
  options: { use_structured_content: 'boolean' },
  framework: {
    connect,
    listTools,
    runCall,
    close: ({ server }) => server.close(),
    protocolVersion: ({ server }) => server.underlying.session?.getNegotiatedProtocolVersion?.() ?? null,
  },
});
