/**
 * mastra adapter: Mastra, MCP tools from `@mastra/mcp` `MCPClient` in a `@mastra/core` `Agent`.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * `MCPClient` (its MCP client is `@modelcontextprotocol/client`, TypeScript SDK v2) with one stdio
 * server, `timeout` = `call_timeout_ms` (initialize, tools/list and every tools/call). No
 * `protocolVersion` is set, so Mastra keeps the SDK's `versionNegotiation: {mode: "auto"}`: it
 * spawns the server once to probe `server/discover`, ends that process when the server answers
 * that the method is not found, and connects to a second one with `initialize` (2025-11-25). The
 * `initialize` step is `getConnectedClientForServer()`, the connect that `listTools()` makes first
 * (TypeScript-private, no public connect exists); `listTools()` (Mastra 1.x's name for
 * `getTools()`) then lists and wraps the tools, namespaced `<server>_<tool>`, so the scripted
 * model asks for `reference_<tool>`. Each cell call and the follow-up is one
 * `agent.generate(prompt, {maxSteps: 3})` of an `Agent` whose model is a scripted AI SDK
 * `LanguageModelV2` (`@mastra/core` 1.x drives v2, v3 and v4 models, each with the prompt of its
 * AI SDK major, a v2 model the AI SDK v5 one; written here because no AI SDK test package is
 * installed and Mastra's own `test-utils/llm-mock` emits text only): its first call streams one
 * `tool-call` part (id `call-1`), its second records the prompt and streams text (`doGenerate`
 * answers the same script). The model view is the `tool-result` part of the last
 * (`role: "tool"`) message of that second prompt. Mastra's telemetry and AI tracing are not
 * configured (no `Mastra` instance), so nothing is exported.
 *
 * Conversion (read in the installed source):
 *  - `node_modules/@mastra/mcp/dist/index.js` `InternalMastraMCPClient.buildToolFromListEntry`
 *    (called by `tools()`), the `execute` closure of each `createTool`: `client.callTool` (the
 *    SDK v2 client checks structuredContent against the listed outputSchema and raises);
 *    **an `isError` result is thrown** as a `MastraError` (`MCP_CLIENT_TOOL_EXECUTION_FAILED`)
 *    whose text is the result's text blocks (the default `onToolError: "throw"`); **if
 *    `structuredContent !== undefined` it returns the structuredContent alone** (checked against
 *    the outputSchema first when one was listed; a failure is returned as the validation error),
 *    with the result's `content` attached on a non-enumerable symbol; otherwise the whole
 *    CallToolResult. A tool listed with an outputSchema has the `toModelOutput` of
 *    `createStructuredToolToModelOutput()`: the model reads the text of those text blocks
 *    (`{type: "text"}`, joined by newlines) and the structured value (`{type: "json"}`) only when
 *    there is none;
 *  - `node_modules/@mastra/core/dist/utils-*.js` `CoreToolBuilder.createExecute` (the wrapper the
 *    agent loop calls): an error the tool throws is rethrown as a `MastraError`
 *    (`TOOL_EXECUTION_FAILED`); the agent loop records a tool error, which the message list
 *    (`dist/message-list-*.js` `createToolModelOutput`) hands the model as a `tool-result` part
 *    whose `output` is `{type: "error-text", value: <message>}`, the error marker read into
 *    `error_flag` (with `error-json`);
 *  - any other returned value reaches the model as `{type: "json", value}` (the value serialized
 *    as `JSON.stringify` would).
 *
 * Options: none.
 */

import { Agent } from '@mastra/core/agent';
import { MCPClient } from '@mastra/mcp';

import { FINAL_TEXT, PROMPT, TOOL_CALL_ID, captureOnerror, modelView, runFramework } from '../_support/framework_driver.mjs';

process.env.MASTRA_TELEMETRY_DISABLED = 'true';

const SERVER = 'reference';
const USAGE = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };

async function connect({ cell, reportError }) {
  const mcp = new MCPClient({
    id: `matrix-${process.pid}`,
    servers: {
      [SERVER]: {
        command: cell.server.command,
        args: cell.server.args ?? [],
        env: cell.server.env ?? {},
        timeout: cell.call_timeout_ms,
      },
    },
    timeout: cell.call_timeout_ms,
  });
  const internal = await mcp.getConnectedClientForServer(SERVER);
  captureOnerror(internal?.client, reportError);
  captureOnerror(internal?.transport, reportError);
  return { mcp, tools: null };
}

async function listTools(handle) {
  handle.tools = await handle.mcp.listTools();
  return Object.keys(handle.tools);
}

/** A ReadableStream of `parts` (what `convertArrayToReadableStream` of the AI SDK test utils does). */
function readableOf(parts) {
  return new ReadableStream({
    start(controller) {
      for (const part of parts) controller.enqueue(part);
      controller.close();
    },
  });
}

/**
 * A scripted AI SDK `LanguageModelV2`, the shape of `ai-v5/test`'s `MockLanguageModelV2`: every
 * call's options (`prompt`, `tools`, ...) are recorded in `doStreamCalls` / `doGenerateCalls`.
 */
class ScriptedLanguageModelV2 {
  constructor({ doStream, doGenerate }) {
    this.specificationVersion = 'v2';
    this.provider = 'scripted';
    this.modelId = 'scripted-model';
    this.supportedUrls = {};
    this.doStreamCalls = [];
    this.doGenerateCalls = [];
    this.doStream = async (options) => {
      this.doStreamCalls.push(options);
      return doStream(options);
    };
    this.doGenerate = async (options) => {
      this.doGenerateCalls.push(options);
      return doGenerate(options);
    };
  }
}

function scriptedModel(toolName, args) {
  const turn = (n) => (n === 1
    ? [
      { type: 'stream-start', warnings: [] },
      { type: 'tool-call', toolCallId: TOOL_CALL_ID, toolName, input: JSON.stringify(args) },
      { type: 'finish', finishReason: 'tool-calls', usage: USAGE },
    ]
    : [
      { type: 'stream-start', warnings: [] },
      { type: 'text-start', id: 'text-1' },
      { type: 'text-delta', id: 'text-1', delta: FINAL_TEXT },
      { type: 'text-end', id: 'text-1' },
      { type: 'finish', finishReason: 'stop', usage: USAGE },
    ]);
  const model = new ScriptedLanguageModelV2({
    doStream: async () => ({ stream: readableOf(turn(model.doStreamCalls.length)) }),
    doGenerate: async () => {
      const parts = turn(model.doGenerateCalls.length);
      return {
        content: parts.filter((p) => p.type === 'tool-call').concat(
          parts.some((p) => p.type === 'text-delta') ? [{ type: 'text', text: FINAL_TEXT }] : [],
        ),
        finishReason: parts.at(-1).finishReason,
        usage: USAGE,
        warnings: [],
      };
    },
  });
  return model;
}

async function runCall(handle, call, _ctx, signal) {
  const toolName = `${SERVER}_${call.name}`;
  const model = scriptedModel(toolName, call.arguments);
  const agent = new Agent({ name: 'matrix', instructions: 'Call the tool as scripted.', model, tools: handle.tools });
  const output = await agent.generate(PROMPT, { maxSteps: 3, ...(signal ? { abortSignal: signal } : {}) });
  const calls = [...model.doStreamCalls, ...model.doGenerateCalls];
  const second = calls[1];
  if (!second) {
    throw new Error(`the scripted model was not called a second time (finishReason ${JSON.stringify(output?.finishReason)}, error ${output?.error})`);
  }
  const toolMessage = second.prompt.at(-1);
  const part = toolMessage?.role === 'tool'
    ? toolMessage.content.find((p) => p.type === 'tool-result' && p.toolCallId === TOOL_CALL_ID)
    : undefined;
  const executed = (output?.toolResults ?? []).find((r) => (r.payload?.toolCallId ?? r.toolCallId) === TOOL_CALL_ID);
  const outputType = part?.output?.type;
  return {
    result: executed ? (executed.payload?.result ?? executed.result ?? executed.output) : null,
    model_view: modelView({
      value: part ? part.output : null,
      errorFlag: part ? outputType === 'error-text' || outputType === 'error-json' : null,
      errorFlagField: 'tool-result.output.type',
      message: toolMessage ?? null,
    }),
  };
}

runFramework({
  name: 'mastra',
  package: '@mastra/mcp',
  adapterUrl: import.meta.url,
  options: {},
  framework: {
    connect,
    listTools,
    runCall,
    close: ({ mcp }) => mcp.disconnect(),
  },
});
