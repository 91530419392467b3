/**
 * ai-sdk adapter: the Vercel AI SDK (`ai` `generateText`) with MCP tools from `@ai-sdk/mcp`.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * `@ai-sdk/mcp` ships its own MCP client (not `@modelcontextprotocol/sdk`): `createMCPClient`
 * with its stdio transport `Experimental_StdioMCPTransport` (`@ai-sdk/mcp/mcp-stdio`) spawns the
 * reference server and connects (`initializationOptions.timeout` = `call_timeout_ms`) with its
 * default `protocolVersionDiscovery: true`: it sends `server/discover` (2026-07-28) first and, when
 * the server answers that the method is not found, falls back to `initialize` (2025-11-25);
 * `client.tools()` lists the tools and wraps each as an AI SDK tool. Each cell call and the
 * follow-up is one `generateText` run (`stopWhen: stepCountIs(3)`, `timeout` = `call_timeout_ms`:
 * the MCP client has no per-request timeout for `tools/call`, the AI SDK's call timeout aborts the
 * tool's `abortSignal`) with `MockLanguageModelV4` from `ai/test` (the model specification `ai` 7
 * speaks; it would hand a V3 model a prompt converted back to V3): its first `doGenerate` answers
 * with a `tool-call` part (id `call-1`), its second records the prompt it was given and answers
 * with text. The model view is the `tool-result` part of the last (`role: "tool"`) message of
 * that second prompt.
 *
 * Conversion (read in the installed source):
 *  - `node_modules/@ai-sdk/mcp/dist/index.js` `CallToolResultSchema`: a result without `content`
 *    but with `structuredContent` is given one text block, `JSON.stringify(structuredContent)`;
 *  - `node_modules/@ai-sdk/mcp/dist/index.js` `DefaultMCPClient.toolsFromDefinitions`: the
 *    tool's `execute` returns the whole `CallToolResult` (isError included) unless the tool was
 *    declared with an `outputSchema`, in which case a non-error result goes through
 *    `extractStructuredContent` (structuredContent, validated by the schema's validator, else the
 *    JSON-parsed first text block); its `toModelOutput` is `mcpToModelOutput`: a result with a
 *    `content` array becomes `{type: "content", value: [...]}` (text blocks -> `{type: "text"}`,
 *    images -> `{type: "file", mediaType, data: {type: "data"}}`, any other block -> a text part
 *    holding `JSON.stringify(block)`; structuredContent and isError are dropped), anything else
 *    `{type: "json", value}`;
 *  - `node_modules/ai/dist/index.js` `createToolModelOutput`: calls `toModelOutput` for a tool
 *    result; a tool that threw becomes `{type: "error-text", value: <message>}`, the only error
 *    marker the model gets (`error_flag`: the output type is `error-text` / `error-json`).
 *
 * Options:
 *   output_schema  (bool) build the tools with `client.tools({schemas})`, declaring for each
 *                  listed tool `inputSchema: jsonSchema(<its inputSchema>)` and, where
 *                  `tools/list` advertised one, `outputSchema: jsonSchema(<its outputSchema>)`
 *                  (the typed-results opt-in: execute then returns the structured content). The
 *                  AI SDK's `jsonSchema()` without a `validate` function accepts any value.
 */

import { generateText, jsonSchema, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';

import { FINAL_TEXT, PROMPT, TOOL_CALL_ID, errorRecord, modelView, runFramework } from '../_support/framework_driver.mjs';

const USAGE = {
  inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 1, text: 1, reasoning: 0 },
};

async function connect({ cell }) {
  const transport = new Experimental_StdioMCPTransport({
    command: cell.server.command,
    args: cell.server.args ?? [],
    env: cell.server.env ?? {}, // added to the transport's default inherited variables
    stderr: 'inherit',
  });
  const client = await createMCPClient({
    transport,
    clientName: 'mcp-client-matrix',
    version: '0.1.0',
    initializationOptions: { timeout: cell.call_timeout_ms },
    onUncaughtError: (err) => handleRef.reportError?.(err),
  });
  return { client, transport, tools: null };
}

// onUncaughtError is configured before the context exists: route it through a holder.
const handleRef = { reportError: null };

async function listTools(handle, { options }) {
  if (options.output_schema) {
    const definitions = await handle.client.listTools();
    const schemas = {};
    for (const def of definitions.tools) {
      schemas[def.name] = {
        inputSchema: jsonSchema(def.inputSchema),
        ...(def.outputSchema ? { outputSchema: jsonSchema(def.outputSchema) } : {}),
      };
    }
    handle.tools = await handle.client.tools({ schemas });
  } else {
    handle.tools = await handle.client.tools();
  }
  return Object.keys(handle.tools);
}

async function runCall(handle, call, { cell }, signal) {
  const model = new MockLanguageModelV4({
    doGenerate: async () => (model.doGenerateCalls.length === 1
      ? {
        content: [{ type: 'tool-call', toolCallId: TOOL_CALL_ID, toolName: call.name, input: JSON.stringify(call.arguments) }],
        finishReason: { unified: 'tool-calls', raw: undefined },
        usage: USAGE,
        warnings: [],
      }
      : {
        content: [{ type: 'text', text: FINAL_TEXT }],
        finishReason: { unified: 'stop', raw: undefined },
        usage: USAGE,
        warnings: [],
      }),
  });
  const result = await generateText({
    model,
    tools: handle.tools,
    prompt: PROMPT,
    stopWhen: stepCountIs(3),
    timeout: cell.call_timeout_ms,
    ...(signal ? { abortSignal: signal } : {}),
  });
  const second = model.doGenerateCalls[1];
  if (!second) {
    throw new Error(`the scripted model was not called a second time (finishReason ${JSON.stringify(result.finishReason)})`);
  }
  const toolMessage = second.prompt.at(-1);
  const part = toolMessage?.role === 'tool'
    ? toolMessage.content.find((p) => p.type === 'tool-result' && p.toolCallId === TOOL_CALL_ID)
    : undefined;
  // The value the tool execution produced: step one's tool-result output, or its tool-error.
  const executed = result.steps[0]?.content.find(
    (p) => (p.type === 'tool-result' || p.type === 'tool-error') && p.toolCallId === TOOL_CALL_ID,
  );
  const outputType = part?.output?.type;
  return {
    result: executed?.type === 'tool-result' ? executed.output : null,
    model_view: modelView({
      value: part ? part.output : null,
      errorFlag: part ? outputType === 'error-text' || outputType === 'error-json' : null,
      errorFlagField: 'tool-result.output.type',
      message: toolMessage ?? null,
    }),
    extra: executed?.type === 'tool-error' ? { tool_error: errorRecord(executed.error) } : undefined,
  };
}

runFramework({
  name: 'ai-sdk',
  package: 'ai',
  adapterUrl: import.meta.url,
  options: { output_schema: 'boolean' },
  framework: {
    connect: async (ctx) => {
      handleRef.reportError = ctx.reportError;
      return connect(ctx);
    },
    listTools,
    runCall,
    close: (handle) => handle.client.close(),
    // the client stores the agreed version on a transport without setProtocolVersion()
    protocolVersion: (handle) => handle.transport.protocolVersion ?? null,
  },
});
