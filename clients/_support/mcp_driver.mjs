/**
 * The driver shared by the TypeScript MCP SDK adapters (ES module, no dependencies: the SDK
 * stays in the adapter, which hands the driver a few functions over its classes).
 *
 * Contract: an adapter holds only what is specific to its SDK and ends with
 * `runAdapter({ name, package, adapterUrl, options, sdk })`, where
 *  - `name` is the adapter's name (for its messages on stderr), `package` the npm package whose
 *    installed version is recorded (from `node_modules` next to the adapter), `adapterUrl` the
 *    adapter's `import.meta.url`;
 *  - `options` maps each variant option the adapter understands to its type
 *    (observe.mjs `checkOptions`); `list_tools` and `max_buffer_bytes` mean what docs/adapters.md says;
 *  - `sdk` is an {@link Sdk}.
 *
 * The driver checks the cell (transport `stdio`, `http-json` or `http-sse`; a bad option or
 * argument exits 2 before anything runs), then runs the steps of docs/adapters.md on one session:
 * `connect` (initialize), `listTools()` when the variant asks for it, every call of the cell, the
 * follow-up, `close()`. Every request carries `{ timeout: call_timeout_ms }`. A call with
 * `cancel_after_ms` also carries the `signal` of an `AbortController` that is aborted that many
 * milliseconds after the call started (the SDKs' own cancellation: they then send
 * `notifications/cancelled` and reject the call); its record gets `cancelled_after_ms`. What a
 * step returns or raises, and every error the SDK reports through `transport.onerror` /
 * `client.onerror` (or lets escape as an uncaughtException / unhandledRejection), is recorded by
 * {@link createRun}, whose watchdog writes the observation and exits 0 if the client never
 * settles. `close()` is awaited at most {@link CLOSE_WAIT_MS} (within the budget); if it does not
 * settle, the server child is killed.
 *
 * @module mcp_driver
 */

import {
  adapterArgs, adapterDirectory, cancelAfter, checkCancelAfter, closeStep, createRun, errorRecord,
  installedVersion, startMain,
} from './observe.mjs';

/** How long `close()` may take: the SDKs' own close waits up to 2 s + 2 s before SIGKILL. */
const CLOSE_WAIT_MS = 6000;

/** The `clientInfo` every adapter's client announces in `initialize`. */
const CLIENT_INFO = { name: 'mcp-client-matrix', version: '0.1.0' };

/**
 * The SDK-specific part of an adapter.
 * @typedef {object} Sdk
 * @property {(clientInfo: {name: string, version: string}, cell: object) => object} makeClient the
 *   SDK's `Client`, not connected, set up to reach a server of the cell's `protocol` revision
 * @property {(cell: object, options: Record<string, unknown>) => object} makeTransport the SDK's
 *   client transport for the cell's server, not started: for `stdio` its stdio transport
 *   ({@link stdioParameters} gives the usual constructor argument), for `http-*` its Streamable
 *   HTTP transport to `new URL(cell.server.url)` ({@link isHttp}). A stdio transport's `pid` is
 *   read as soon as `client.connect(transport)` has returned its promise (the SDKs spawn the
 *   server synchronously there), to kill the server child when the adapter stops waiting
 * @property {(client: object, params: {name: string, arguments: object|undefined},
 *   requestOptions: {timeout: number, signal?: AbortSignal}) => Promise<object>} callTool one
 *   `tools/call`, resolving to the result as the client exposes it to its caller
 * @property {(client: object) => string|null|undefined} protocolVersion the protocol version the
 *   client agreed on, or `null` / `undefined` when it does not expose one; also asked after a
 *   failed initialize
 */

/** The transports an adapter built on this driver supports. */
export const TRANSPORTS = ['stdio', 'http-json', 'http-sse'];

/**
 * Whether the cell's transport is Streamable HTTP (`server.url` names a running server).
 * @param {object} cell
 * @returns {boolean}
 */
export function isHttp(cell) {
  return cell.transport === 'http-json' || cell.transport === 'http-sse';
}

/**
 * The stdio server parameters (`StdioServerParameters`) for the cell's server: `command`, `args`,
 * `env` and, when the variant sets `max_buffer_bytes`, `maxBufferSize`.
 * @param {object} cell
 * @param {Record<string, unknown>} options the cell's checked options
 * @returns {{command: string, args: string[], env: Record<string, string>, maxBufferSize?: number}}
 */
export function stdioParameters(cell, options) {
  const server = cell.server;
  const params = { command: server.command, args: server.args ?? [], env: server.env ?? {} };
  if ('max_buffer_bytes' in options) params.maxBufferSize = options.max_buffer_bytes;
  return params;
}

/**
 * Run one cell (`process.argv`: the cell file and the observation file) and exit; see the module
 * documentation for the contract; from a startup snapshot, when the process starts
 * (observe.mjs `startMain`).
 * @param {{name: string, package: string, adapterUrl: string,
 *          options: Record<string, 'boolean'|'integer'|'number'|'string'>, sdk: Sdk}} adapter
 */
export function runAdapter(adapter) {
  startMain(() => runCell(adapter));
}

function runCell({ name, package: pkg, adapterUrl, options: known, sdk }) {
  const { cell, options, obsPath, fail } = adapterArgs(name, known);
  if (!TRANSPORTS.includes(cell.transport)) {
    fail(`transport ${JSON.stringify(cell.transport)} is not supported (${TRANSPORTS.join(', ')})`);
  }
  if (isHttp(cell) && typeof cell.server?.url !== 'string') fail(`transport ${cell.transport} needs server.url`);
  checkCancelAfter(cell.calls, fail);
  if ('max_buffer_bytes' in options && !(options.max_buffer_bytes > 0)) {
    fail(`option max_buffer_bytes: expected a positive integer, got ${options.max_buffer_bytes}`);
  }

  const child = { pid: null, kill: () => killProcess(child.pid) };
  const run = createRun({
    obsPath,
    budgetMs: cell.budget_ms,
    cell,
    packageVersion: installedVersion(adapterDirectory(adapterUrl), pkg),
    onAbort: child.kill,
  });

  drive(cell, options, sdk, run, child).catch((err) => {
    process.stderr.write(`${name} adapter: internal error: ${err?.stack ?? err}\n`);
    child.kill();
    process.exit(1); // the exit hook still writes what was gathered
  });
}

/** SIGKILL `pid` if it is still there (`null`: nothing spawned yet). */
function killProcess(pid) {
  if (pid === null) return;
  try {
    process.kill(pid, 0);
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * One `callTool`; `place` puts the (pending) record into the observation before it is awaited.
 * With `call.cancel_after_ms`, the request options carry an `AbortController`'s signal, aborted
 * (`controller.abort()`, no reason: what an application's cancel button does) that many ms after
 * the call started; `cancelled_after_ms` is when the abort was issued (`null` if the call settled
 * first).
 */
async function callStep(run, sdk, client, call, requestOptions, place) {
  const step = run.begin('call', { tool: call.name });
  place(step.record);
  const cancel = cancelAfter(step, call.cancel_after_ms);
  const options = cancel.signal ? { ...requestOptions, signal: cancel.signal } : requestOptions;
  try {
    const result = await sdk.callTool(client, { name: call.name, arguments: call.arguments }, options);
    cancel.stop();
    run.settle(step, { status: 'returned', result, error: null, ...cancel.fields() });
  } catch (err) {
    cancel.stop();
    run.settle(step, { status: 'raised', result: null, error: errorRecord(err), ...cancel.fields() });
  }
}

/**
 * The steps of one session; `child.pid` is set to the server's pid once connect() spawned it,
 * `child.kill()` kills it.
 */
async function drive(cell, options, sdk, run, child) {
  const { obs } = run;
  const transport = sdk.makeTransport(cell, options);
  const client = sdk.makeClient(CLIENT_INFO, cell);
  run.captureOnerror(transport);
  run.captureOnerror(client);
  const requestOptions = { timeout: cell.call_timeout_ms };

  const init = run.begin('initialize');
  obs.initialize = init.record;
  let connected = false;
  try {
    const connecting = client.connect(transport, requestOptions);
    child.pid = transport.pid ?? null; // stdio: spawned synchronously inside connect(); HTTP: none
    await connecting;
    run.settle(init, { status: 'ok', error: null, protocol_version: sdk.protocolVersion(client) ?? null });
    connected = true;
  } catch (err) {
    run.settle(init, { status: 'raised', error: errorRecord(err), protocol_version: sdk.protocolVersion(client) ?? null });
  }

  if (connected) {
    if (options.list_tools) {
      const step = run.begin('list_tools');
      obs.list_tools = step.record;
      try {
        const listed = await client.listTools(undefined, requestOptions);
        run.settle(step, { status: 'ok', error: null, tools: listed.tools.map((t) => t.name) });
      } catch (err) {
        run.settle(step, { status: 'raised', error: errorRecord(err), tools: null });
      }
    }
    for (const call of cell.calls) {
      await callStep(run, sdk, client, call, requestOptions, (record) => obs.calls.push(record));
    }
    if (cell.followup) {
      await callStep(run, sdk, client, cell.followup, requestOptions, (record) => { obs.followup = record; });
    }
  }

  const { settled, reason } = await closeStep(run, () => client.close(), CLOSE_WAIT_MS);
  if (!settled) child.kill();
  run.finish(reason);
}
