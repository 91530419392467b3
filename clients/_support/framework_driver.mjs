/**
 * The driver shared by the Node **framework** adapters (ES module, no dependencies: the
 * framework stays in the adapter, which hands the driver a few functions over its classes).
 *
 * Contract: docs/adapters.md, "Framework adapters: the model view". An adapter holds only what is
 * specific to its framework and ends with
 * `runFramework({ name, package, adapterUrl, options, framework })`, where
 *  - `name` is the adapter's name (for its messages on stderr), `package` the npm package whose
 *    installed version is recorded (from `node_modules` next to the adapter), `adapterUrl` the
 *    adapter's `import.meta.url`;
 *  - `options` maps each variant option the adapter understands to its type
 *    (observe.mjs `checkOptions`: an unknown or mistyped option exits 2 before anything runs);
 *  - `framework` is a {@link Framework}.
 *
 * The driver checks the cell (transport `stdio` only), then runs on one MCP session:
 * `connect` (the framework spawns the server and initializes: the `initialize` step), `listTools`
 * (the framework loading its tool set: the `list_tools` step, always, since every framework lists
 * tools to build the model's tool definitions), one `runCall` per cell call and one for the
 * follow-up (each one run of the framework's own agent loop with a scripted model; made even when
 * `listTools` rejected, with the handle as `connect` and `listTools` left it), then `close`
 * (bounded by {@link CLOSE_WAIT_MS}). A call that reached the model's second turn is `returned`
 * with the value the framework's tool execution produced (`result`) and the `model_view`; a run
 * that raised before is `raised`. Whatever stops the run (budget watchdog, signal, internal error),
 * observe.mjs `createRun` writes the facts gathered so far; every child process still alive at the
 * end (the stdio server the framework spawned) is SIGKILLed ({@link killChildren}).
 *
 * @module framework_driver
 */

import fs from 'node:fs';

import {
  adapterArgs, adapterDirectory, cancelAfter, checkCancelAfter, closeStep, createRun, errorRecord,
  installedVersion, startMain,
} from './observe.mjs';

export { errorRecord };

/** How long a framework's close may take before its server child is killed. */
const CLOSE_WAIT_MS = 5000;

/** The fixed tool-call id every scripted model uses in its first turn. */
export const TOOL_CALL_ID = 'call-1';

/** The user prompt of every scripted run (the model is scripted: the words do not matter). */
export const PROMPT = 'Call the tool as scripted.';

/** The final text the scripted model ends every run with (turn two). */
export const FINAL_TEXT = 'done';

/**
 * The framework-specific part of an adapter.
 * @typedef {object} Framework
 * @property {(ctx: Context) => Promise<object>} connect connect the framework to the cell's server
 *   over stdio (spawning it through the framework's own stdio client) and initialize; resolves to
 *   a handle passed to the other functions
 * @property {(handle: object, ctx: Context) => Promise<string[]>} listTools load the framework's
 *   tool set from the server; resolves to the tool names the framework exposes to the model
 * @property {(handle: object, call: {name: string, arguments: object}, ctx: Context,
 *   signal: AbortSignal|undefined) => Promise<CallOutcome>} runCall one agent run: the scripted
 *   model asks for `call` in turn one, the framework executes it, turn two is captured; rejects
 *   when the agent run raised before turn two
 * @property {(handle: object) => Promise<void>} close the framework's normal close
 * @property {(handle: object) => string|null|undefined} [protocolVersion] the negotiated protocol
 *   version, when the framework exposes it
 */

/**
 * @typedef {object} Context
 * @property {object} cell the cell file
 * @property {Record<string, unknown>} options the variant's checked options
 * @property {(err: unknown) => void} reportError record an out-of-band error (`transport_errors`)
 * @property {(message: string) => void} log a line on stderr, prefixed with the adapter name
 */

/**
 * @typedef {object} CallOutcome
 * @property {unknown} result the value the framework's tool execution produced (made JSON-safe by
 *   {@link toJson} here)
 * @property {{value: unknown, error_flag: boolean|null, error_flag_field: string|null,
 *   message: unknown}} model_view see docs/adapters.md
 * @property {Record<string, unknown>} [extra] adapter-specific fields added to the call entry
 */

/**
 * SIGKILL every live child process of this process (Linux `/proc`), group leaders with their
 * group; returns their pids. The frameworks spawn the stdio server as our child; this is the
 * last-resort reaping when the adapter stops waiting or exits.
 * @returns {number[]}
 */
export function killChildren() {
  const killed = [];
  let entries;
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return killed;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let fields;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    } catch {
      continue;
    }
    // fields[0] = state, fields[1] = ppid, fields[2] = pgrp
    if (fields.length > 2 && fields[0] !== 'Z' && Number(fields[1]) === process.pid) {
      const pid = Number(entry);
      try {
        if (Number(fields[2]) === pid) process.kill(-pid, 'SIGKILL');
        else process.kill(pid, 'SIGKILL');
        killed.push(pid);
      } catch {
        // already gone
      }
    }
  }
  return killed;
}

/**
 * A JSON-safe deep copy of `value` with `JSON.stringify`'s semantics, so that it is what a model
 * provider would serialize: `toJSON()` is honoured, class instances (Errors included) keep their
 * own enumerable fields, `undefined` members are dropped; beyond `JSON.stringify`, bigints become
 * strings, functions and symbols their `String()`, cycles `"[Circular]"`, Maps/Sets
 * objects/arrays, typed arrays a `"[<Type> of N bytes]"` marker. Convert an error meant as an
 * Error record with observe.mjs `errorRecord` first.
 * @param {unknown} value
 * @returns {unknown}
 */
export function toJson(value) {
  const stack = new Set();
  const visit = (v) => {
    if (v === null) return null;
    switch (typeof v) {
      case 'string':
      case 'boolean':
        return v;
      case 'number':
        return Number.isFinite(v) ? v : String(v);
      case 'bigint':
      case 'function':
      case 'symbol':
        return String(v);
      case 'undefined':
        return undefined;
      default:
        break;
    }
    if (stack.has(v)) return '[Circular]';
    if (typeof v.toJSON === 'function' && !(v instanceof Date)) {
      let inner;
      try {
        inner = v.toJSON();
      } catch (err) {
        return `[toJSON raised: ${err}]`;
      }
      if (inner !== v) {
        stack.add(v);
        const out = visit(inner);
        stack.delete(v);
        return out;
      }
    }
    if (v instanceof Date) return v.toISOString();
    stack.add(v);
    let out;
    if (Array.isArray(v) || v instanceof Set) {
      out = Array.from(v, (item) => {
        const j = visit(item);
        return j === undefined ? null : j;
      });
    } else if (v instanceof Map) {
      out = {};
      for (const [k, item] of v) {
        const j = visit(item);
        if (j !== undefined) out[String(k)] = j;
      }
    } else if (ArrayBuffer.isView(v)) {
      out = `[${v.constructor?.name ?? 'TypedArray'} of ${v.byteLength} bytes]`;
    } else {
      out = {};
      for (const k of Object.keys(v)) {
        let item;
        try {
          item = v[k];
        } catch (err) {
          item = `[getter raised: ${err}]`;
        }
        const j = visit(item);
        if (j !== undefined) out[k] = j;
      }
    }
    stack.delete(v);
    return out;
  };
  const out = visit(value);
  return out === undefined ? null : out;
}

/**
 * The `model_view` of a call (docs/adapters.md): `value` as the model receives it, the
 * framework's own error marker (`null` when its tool-result message has none) and where it was
 * read, and the whole tool-result message (JSON-safe).
 */
export function modelView({ value, errorFlag = null, errorFlagField = null, message = null }) {
  return {
    value: toJson(value),
    error_flag: errorFlag === null || errorFlag === undefined ? null : Boolean(errorFlag),
    error_flag_field: errorFlagField,
    message: toJson(message),
  };
}

/** A random id: a UUID, optionally prefixed `lc_`, `run-` or `lc_run-` (framework_driver.py `_RANDOM_ID`). */
const RANDOM_ID = /^(lc_|run-|lc_run-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * `value` with every string that is a random id ({@link RANDOM_ID}: LangChain's content-block ids
 * and run ids) replaced by `<prefix>id-0`, `<prefix>id-1`, ... in order of appearance (the same
 * id, the same replacement), so that two runs of one cell compare equal. Only whole strings are
 * replaced, never text inside a string: what the server sent stays as it was. Works on JSON-safe
 * values; framework_driver.py `normalize_ids` does the same.
 * @param {unknown} value
 * @returns {unknown}
 */
export function normalizeIds(value) {
  const seen = new Map();
  const visit = (v) => {
    if (typeof v === 'string') {
      const match = RANDOM_ID.exec(v);
      if (!match) return v;
      if (!seen.has(v)) seen.set(v, `${match[1] ?? ''}id-${seen.size}`);
      return seen.get(v);
    }
    if (Array.isArray(v)) return v.map(visit);
    if (v !== null && typeof v === 'object') {
      const out = {};
      for (const [k, item] of Object.entries(v)) out[k] = visit(item);
      return out;
    }
    return v;
  };
  return visit(value);
}

/**
 * Run one cell (`process.argv`: the cell file and the observation file) and exit; see the module
 * documentation for the contract; from a startup snapshot, when the process starts
 * (observe.mjs `startMain`).
 * `transports`: the transports the adapter supports (a framework adapter: stdio; an agent host's
 * driver starts an HTTP reference server itself from `server.command`).
 * @param {{name: string, package: string, adapterUrl: string,
 *          options: Record<string, 'boolean'|'integer'|'number'|'string'>,
 *          framework: Framework, transports?: string[]}} adapter
 */
export function runFramework(adapter) {
  startMain(() => runCell(adapter));
}

function runCell({ name, package: pkg, adapterUrl, options: known, framework, transports = ['stdio'] }) {
  const { cell, options, obsPath, log, fail } = adapterArgs(name, known);
  if (!transports.includes(cell.transport)) {
    fail(`transport ${JSON.stringify(cell.transport)} is not supported (${transports.join(', ')} only)`);
  }
  const needs = cell.transport === 'stdio' ? ['command'] : ['command', 'url'];
  if (!needs.some((key) => typeof cell.server?.[key] === 'string')) {
    fail(`transport ${cell.transport} needs ${needs.map((key) => `server.${key}`).join(' or ')}`);
  }
  checkCancelAfter([...cell.calls, ...(cell.followup ? [cell.followup] : [])], fail);

  const run = createRun({
    obsPath,
    budgetMs: cell.budget_ms,
    cell,
    packageVersion: installedVersion(adapterDirectory(adapterUrl), pkg),
    onAbort: killChildren,
  });
  const ctx = { cell, options, reportError: (err) => run.reportError(err), log };

  drive(framework, ctx, run).catch((err) => {
    log(`internal error: ${err?.stack ?? err}`);
    killChildren();
    process.exit(1); // the exit hook still writes what was gathered
  });
}

/** One agent run for `call`; `place` puts the (pending) record into the observation first. */
async function callStep(framework, handle, ctx, run, call, place) {
  const step = run.begin('call', { tool: call.name });
  place(step.record);
  const cancel = cancelAfter(step, call.cancel_after_ms);
  try {
    const outcome = await framework.runCall(handle, { name: call.name, arguments: call.arguments ?? {} }, ctx,
      cancel.signal);
    cancel.stop();
    run.settle(step, {
      status: 'returned',
      result: toJson(outcome.result),
      error: null,
      model_view: outcome.model_view,
      ...(outcome.extra ? toJson(outcome.extra) : {}),
      ...cancel.fields(),
    });
  } catch (err) {
    cancel.stop();
    run.settle(step, { status: 'raised', result: null, error: errorRecord(err), ...cancel.fields() });
  }
}

async function drive(framework, ctx, run) {
  const { obs } = run;
  const { cell } = ctx;

  const init = run.begin('initialize');
  obs.initialize = init.record;
  let handle = null;
  try {
    handle = await framework.connect(ctx);
    run.settle(init, { status: 'ok', error: null, protocol_version: framework.protocolVersion?.(handle) ?? null });
  } catch (err) {
    run.settle(init, { status: 'raised', error: errorRecord(err), protocol_version: null });
  }

  if (handle !== null) {
    const list = run.begin('list_tools');
    obs.list_tools = list.record;
    try {
      const tools = await framework.listTools(handle, ctx);
      run.settle(list, { status: 'ok', error: null, tools });
    } catch (err) {
      run.settle(list, { status: 'raised', error: errorRecord(err), tools: null });
    }
    // Every call is made even when the listing raised (as framework_driver.py does): what the
    // framework's agent run then does is the fact to record, not the listing's error again.
    for (const call of cell.calls) await callStep(framework, handle, ctx, run, call, (r) => obs.calls.push(r));
    await callStep(framework, handle, ctx, run, cell.followup, (r) => { obs.followup = r; });

    const { reason } = await closeStep(run, () => framework.close(handle), CLOSE_WAIT_MS);
    killChildren();
    run.finish(reason);
  }
  killChildren();
  run.finish('finished');
}

/** Record what the MCP client reports out of band (`onerror`), keeping the handler in place. */
export function captureOnerror(target, reportError) {
  if (!target) return;
  const previous = target.onerror;
  target.onerror = function capturedOnerror(error) {
    reportError(error);
    if (typeof previous === 'function') return previous.call(this, error);
    return undefined;
  };
}

/** A LangChain `ToolMessage` as plain JSON, its own fields, ids normalized (langchain-js, mcp-use). */
export function toolMessageJson(message) {
  return normalizeIds({
    type: message.type ?? message._getType?.(),
    content: message.content,
    status: message.status,
    tool_call_id: message.tool_call_id,
    name: message.name,
    artifact: message.artifact,
    id: message.id,
    additional_kwargs: message.additional_kwargs,
    response_metadata: message.response_metadata,
    metadata: message.metadata,
  });
}

/**
 * The turn-two view of a scripted LangChain chat model (langchain-js, mcp-use): the `ToolMessage`
 * for `TOOL_CALL_ID` among the messages the model received in its second call, and its model view
 * (the error marker is `ToolMessage.status`). `ToolMessage` is the adapter's own class (this file
 * imports no packages).
 */
export function langchainToolTurn(model, ToolMessage) {
  const second = model.calls[1];
  if (!second) throw new Error('the scripted model was not called a second time');
  const toolMessage = second.messages.find((m) => ToolMessage.isInstance(m) && m.tool_call_id === TOOL_CALL_ID);
  return {
    toolMessage,
    view: modelView({
      value: toolMessage ? toolMessage.content : null,
      errorFlag: toolMessage ? toolMessage.status === 'error' : null,
      errorFlagField: 'ToolMessage.status',
      message: toolMessage ? toolMessageJson(toolMessage) : null,
    }),
  };
}
