/**
 * Helpers shared by the Node adapters (ES module, no dependencies).
 *
 * The adapter contract (docs/adapters.md): `node adapter.mjs <cell.json> <observation.json>`
 * reads one cell file, drives one real MCP client against the reference server and writes
 * one observation, a JSON object of facts (what each call returned or raised, what the client
 * reported out of band), atomically, then exits 0 whatever the client did. It never classifies:
 * the harness does.
 *
 * This module holds the contract-shaped pieces that are not specific to one SDK:
 *  - {@link readCell} ({@link cellProblem}) / {@link checkOptions} ({@link optionProblems}): the cell
 *    file and its variant options;
 *    {@link adapterArgs}: both from an adapter's command line; {@link checkCancelAfter}: the
 *    calls' `cancel_after_ms`;
 *  - {@link errorRecord}: anything thrown -> the contract's Error object;
 *  - {@link startTimer}: a millisecond stopwatch;
 *  - {@link writeObservation}: temp file in the same directory, then rename into place;
 *  - {@link installedVersion}: a package's version as installed in `node_modules`;
 *    {@link adapterDirectory}: where the adapter is, in a bundle too;
 *  - {@link startMain}: run the cell now, or when a process starts from a startup snapshot;
 *  - {@link createRun}: the observation skeleton with "pending" steps, a budget watchdog and
 *    process-level guards, so that an observation is written whatever happens;
 *    {@link deadlineError} / {@link truncatedError}: the reserved `AdapterTimeout` and
 *    `AdapterTruncated` errors it records;
 *  - {@link cancelAfter}: the application's cancellation of one call (an `AbortController`);
 *  - {@link closeStep}: the close step, awaited within a bound.
 *
 * observe.py is the same contract for the Python adapters; tests/test_support_contract.py holds
 * the two to the same fixtures (docs/adapters.md, "Support libraries: one contract, two runtimes").
 *
 * @module observe
 */

import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';

export const CONTRACT = 1;

/** How many causes / group members an Error's `chain` holds at most. */
export const MAX_CHAIN = 10;

/** How many out-of-band errors an observation keeps (a flood must not exhaust memory). */
export const MAX_TRANSPORT_ERRORS = 1000;

/** The keys a cell file must have (both runtimes check the same ones). */
export const CELL_KEYS = ['cell_id', 'options', 'server', 'calls', 'followup', 'call_timeout_ms', 'budget_ms'];

/** `value` as JSON text for messages (`null` for `undefined`, as a missing key reads in Python). */
function jsonText(value) {
  try {
    return JSON.stringify(value === undefined ? null : value);
  } catch {
    return String(value);
  }
}

/**
 * Why `cell` (the parsed cell file at `file`) is not a contract-1 cell.
 * @param {unknown} cell
 * @param {string} file
 * @returns {string|null} the problem, or `null` for a good cell
 */
export function cellProblem(cell, file) {
  if (cell === null || typeof cell !== 'object' || Array.isArray(cell)) return `${file}: the cell is not a JSON object`;
  if (cell.contract !== CONTRACT) {
    return `${file}: contract ${jsonText(cell.contract)} is not supported (expected ${CONTRACT})`;
  }
  const missing = CELL_KEYS.filter((key) => !(key in cell));
  return missing.length ? `${file}: missing key(s): ${missing.join(', ')}` : null;
}

/**
 * Read and minimally check a cell file ({@link cellProblem}).
 * @param {string} file path of the cell JSON
 * @returns {object} the cell
 * @throws {Error} when the file is unreadable, not JSON, or not a contract-1 cell
 */
export function readCell(file) {
  let cell;
  try {
    cell = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read cell file ${file}: ${err.message}`);
  }
  const problem = cellProblem(cell, file);
  if (problem) throw new Error(problem);
  return cell;
}

/**
 * What is wrong with the cell's `options` for an adapter that understands `known`, in the options'
 * order: an unknown option, a value of the wrong type (`number` takes any number, `integer` an
 * integral one).
 * @param {unknown} options the cell's `options`
 * @param {Record<string, 'boolean'|'integer'|'number'|'string'>} known option name -> type
 * @returns {string[]}
 */
export function optionProblems(options, known) {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    return [`options: expected an object, got ${jsonText(options)}`];
  }
  const problems = [];
  for (const [key, value] of Object.entries(options)) {
    const want = Object.hasOwn(known, key) ? known[key] : undefined;
    if (want === undefined) {
      problems.push(`unknown option ${jsonText(key)} (this adapter understands: ${Object.keys(known).sort().join(', ') || 'none'})`);
      continue;
    }
    const ok = want === 'integer' ? Number.isInteger(value) : typeof value === want;
    if (!ok) problems.push(`option ${jsonText(key)}: expected ${want}, got ${jsonText(value)}`);
  }
  return problems;
}

/**
 * Check variant options against what an adapter understands ({@link optionProblems}).
 * @param {unknown} options the cell's `options`
 * @param {Record<string, 'boolean'|'integer'|'number'|'string'>} known option name -> type
 * @returns {Record<string, unknown>} the options (unchanged)
 * @throws {Error} naming every problem, joined by `; `
 */
export function checkOptions(options, known) {
  const problems = optionProblems(options, known);
  if (problems.length) throw new Error(problems.join('; '));
  return options;
}

function jsonSafe(value) {
  if (value === undefined) return undefined;
  try {
    const text = JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v));
    return text === undefined ? String(value) : JSON.parse(text);
  } catch {
    return String(value);
  }
}

function typeName(err) {
  if (err === null) return 'null';
  if (typeof err !== 'object' && typeof err !== 'function') return typeof err;
  const ctor = err.constructor;
  if (ctor && typeof ctor.name === 'string' && ctor.name) return ctor.name;
  return typeof err.name === 'string' && err.name ? err.name : 'Object';
}

function messageOf(err) {
  if (err !== null && typeof err === 'object' && 'message' in err) return String(err.message);
  if (typeof err === 'string') return err;
  try {
    const text = JSON.stringify(err);
    return text === undefined ? String(err) : text;
  } catch {
    return String(err);
  }
}

function flatRecord(err) {
  const record = { type: typeName(err), code: null, message: messageOf(err) };
  if (err !== null && typeof err === 'object') {
    if (typeof err.code === 'number' && Number.isInteger(err.code)) record.code = err.code;
    else if (typeof err.code === 'string') record.sdk_code = err.code;
    if (err.data !== undefined && err.data !== null) record.data = jsonSafe(err.data);
  }
  return record;
}

/**
 * Turn anything thrown (or passed to an error callback) into the contract's Error object:
 * `{type, code, message}` plus `data` when the error carries one and `chain` when it has causes.
 *
 * - `type`: the constructor name (`McpError`, `SdkError`, `ZodError`, ...), or `typeof` for a
 *   thrown non-object;
 * - `code`: the numeric (JSON-RPC) code when `err.code` is an integer, else `null`; a string
 *   code (`'EPIPE'`, the v2 SDK's `'REQUEST_TIMEOUT'`) goes to `sdk_code` instead;
 * - `chain`: `err.cause` links and `AggregateError.errors` members, depth first, innermost last,
 *   at most {@link MAX_CHAIN} entries, each flat (no nested chain);
 * - `data`: `err.data` when it is there and not `null`.
 * @param {unknown} err
 * @returns {{type: string, code: number|null, sdk_code?: string, message: string, data?: unknown, chain?: object[]}}
 */
export function errorRecord(err) {
  const record = flatRecord(err);
  const chain = [];
  const seen = new Set([err]);
  const visit = (e) => {
    if (e === null || typeof e !== 'object') return;
    const next = [];
    if (Array.isArray(e.errors) && (e instanceof AggregateError || typeTag(e) === 'AggregateError')) next.push(...e.errors);
    if ('cause' in e && e.cause !== undefined) next.push(e.cause);
    for (const member of next) {
      if (chain.length >= MAX_CHAIN) return;
      if (member !== null && typeof member === 'object') {
        if (seen.has(member)) continue;
        seen.add(member);
      }
      chain.push(flatRecord(member));
      visit(member);
    }
  };
  visit(err);
  if (chain.length) record.chain = chain;
  return record;
}

function typeTag(e) {
  try {
    return e.name;
  } catch {
    return undefined;
  }
}

/**
 * An adapter's command line (`node adapter.mjs <cell.json> <observation.json>`): the cell, its
 * options checked against `known` ({@link checkOptions}) and the observation path. A wrong command
 * line, cell or option ends the process with status 2 and a line on stderr prefixed
 * `<name> adapter: `; the returned `fail` does the same for the caller's own checks, `log` writes
 * such a line and goes on.
 * @param {string} name the adapter's name
 * @param {Record<string, 'boolean'|'integer'|'number'|'string'>} known option name -> type
 * @returns {{cell: object, options: Record<string, unknown>, obsPath: string,
 *            log: (message: string) => void, fail: (message: string) => never}}
 */
export function adapterArgs(name, known) {
  const log = (message) => process.stderr.write(`${name} adapter: ${message}\n`);
  const fail = (message) => {
    log(message);
    process.exit(2);
  };

  const [cellPath, obsPath] = process.argv.slice(2);
  if (!cellPath || !obsPath) fail('usage: node adapter.mjs <cell.json> <observation.json>');
  let cell;
  let options;
  try {
    cell = readCell(cellPath);
    options = checkOptions(cell.options, known);
  } catch (err) {
    fail(err.message);
  }
  return { cell, options, obsPath, log, fail };
}

/**
 * Stop (`fail`) on a call whose `cancel_after_ms` is set but not a non-negative integer.
 * @param {object[]} calls
 * @param {(message: string) => never} fail
 */
export function checkCancelAfter(calls, fail) {
  for (const call of calls) {
    const after = call.cancel_after_ms;
    if (after !== undefined && after !== null && !(Number.isInteger(after) && after >= 0)) {
      fail(`cancel_after_ms: expected a non-negative integer, got ${jsonText(after)}`);
    }
  }
}

/**
 * Start a stopwatch.
 * @returns {() => number} a function giving the milliseconds elapsed (0.1 ms resolution)
 */
export function startTimer() {
  const t0 = performance.now();
  return () => Math.round((performance.now() - t0) * 10) / 10;
}

/**
 * Write `obj` as JSON (UTF-8) to `file` atomically: a temporary file in the same directory,
 * fsync, then `fs.renameSync` into place, so a killed adapter never leaves half an observation.
 * Synchronous on purpose: usable from `process.on('exit')`.
 * @param {string} file
 * @param {object} obj
 */
export function writeObservation(file, obj) {
  const dir = path.dirname(path.resolve(file));
  const tmp = path.join(dir, `.observation-${process.pid}.tmp`);
  const fd = fs.openSync(tmp, 'w', 0o644);
  try {
    fs.writeSync(fd, JSON.stringify(obj));
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}

/**
 * The Error recorded for a step that the adapter's own deadline ended (`elapsedMs`) or never let
 * start (`null`); `reason`: what stopped the adapter. observe.py `deadline_error`.
 * @param {string} what the step, e.g. `call get_account_balance`
 * @param {number|null} elapsedMs
 * @param {string|null} [reason]
 * @returns {{type: string, code: null, message: string}}
 */
export function deadlineError(what, elapsedMs, reason = null) {
  let message = elapsedMs === null
    ? `adapter deadline: ${what} not started, the adapter's deadline had passed`
    : `adapter deadline: ${what} ended by the adapter after ${elapsedMs} ms`;
  if (reason) message = `${message} (${reason})`;
  return { type: 'AdapterTimeout', code: null, message };
}

/**
 * The `AdapterTruncated` entry that ends `transport_errors` when `dropped` reports were not kept.
 * @param {number} dropped
 */
export function truncatedError(dropped) {
  return { type: 'AdapterTruncated', code: null, message: `${dropped} further out-of-band error reports were not recorded` };
}

/**
 * The version of `pkg` as installed in `<adapterDir>/node_modules` (read at run time).
 * @param {string} adapterDir
 * @param {string} pkg e.g. `@modelcontextprotocol/sdk`
 * @returns {string|null}
 */
export function installedVersion(adapterDir, pkg) {
  try {
    const manifest = path.join(adapterDir, 'node_modules', ...pkg.split('/'), 'package.json');
    return JSON.parse(fs.readFileSync(manifest, 'utf8')).version ?? null;
  } catch {
    return null;
  }
}

/**
 * The adapter's directory: from its `import.meta.url`, or, where that is empty (the adapter bundled
 * for a startup snapshot, harness/prepare/snapshots.py), from `process.argv[1]`, the entry the process was
 * started with in both cases.
 * @param {string|undefined} adapterUrl
 */
export function adapterDirectory(adapterUrl) {
  return path.dirname(adapterUrl ? fileURLToPath(adapterUrl) : path.resolve(process.argv[1]));
}

/**
 * Run `main` now; or, while `node --build-snapshot` loads the bundled adapter (harness/prepare/snapshots.py),
 * make it the main function of every process started from the snapshot, which then starts with the
 * adapter's imports already loaded. Nothing of a cell runs while the snapshot is built.
 * @param {() => void} main
 */
export function startMain(main) {
  if (v8.startupSnapshot?.isBuildingSnapshot()) v8.startupSnapshot.setDeserializeMainFunction(main);
  else main();
}

/**
 * The skeleton of one adapter run. The observation is schema-complete at every moment: a step
 * is entered as "pending" (recorded as raised with an `AdapterTimeout` error) before it is
 * awaited and overwritten when it settles, so whatever stops the run (the budget watchdog, a
 * signal, an unexpected exit) writes the facts gathered so far and names the step that had not
 * settled.
 *
 * Installs: a watchdog at `budget_ms - margin` (margin 5 % of the budget, 0.5..2 s, measured from
 * process start) that writes and exits 0; SIGTERM/SIGINT handlers that do the same;
 * `uncaughtException` / `unhandledRejection` handlers that record the error in
 * `transport_errors` and let the run go on; an `exit` hook that writes if nothing was written.
 *
 * What is written is complete, as observe.py `Observation.snapshot` writes it: a step still pending
 * is raised with an `AdapterTimeout` naming the reason; after a successful initialize, the cell's
 * calls and follow-up that were never started are raised `AdapterTimeout` ("not started");
 * out-of-band errors are kept once per error object, at most {@link MAX_TRANSPORT_ERRORS}, then one
 * `AdapterTruncated` entry counts the further reports.
 *
 * @param {{obsPath: string, budgetMs: number, packageVersion: string|null, cell: object,
 *          onAbort?: () => void}} params `cell`: the cell file; `onAbort` runs (synchronously)
 *          before an early write, e.g. to kill the server child
 */
export function createRun({ obsPath, budgetMs, packageVersion, cell, onAbort }) {
  const obs = {
    contract: CONTRACT,
    package_version: packageVersion,
    runtime_version: process.version,
    initialize: null,
    list_tools: null,
    calls: [],
    followup: null,
    transport_errors: [],
    close: null,
  };
  const pending = new Map(); // record -> {what, elapsed}
  let written = false;
  let droppedErrors = 0;
  const seenErrors = new WeakSet();

  const margin = Math.min(2000, Math.max(500, budgetMs * 0.05));
  const deadline = budgetMs - margin;

  /** Enter a pending step; `fields` is merged into the record (e.g. `{tool}`). */
  function begin(what, fields = {}) {
    const elapsed = startTimer();
    const record = { ...fields, status: 'raised' };
    if ('tool' in fields) record.result = null;
    record.error = null;
    if (what === 'initialize') record.protocol_version = null;
    if (what === 'list_tools') record.tools = null;
    record.duration_ms = 0;
    pending.set(record, { what, elapsed });
    return { record, elapsed };
  }

  /** Settle a pending step with `patch` (status, result/error, ...) and its duration. */
  function settle(step, patch) {
    pending.delete(step.record);
    Object.assign(step.record, patch, { duration_ms: step.elapsed() });
    return step.record;
  }

  /**
   * Record an out-of-band error once (the same object may reach several handlers); beyond
   * {@link MAX_TRANSPORT_ERRORS} recorded ones, further reports are only counted. `source` marks
   * errors nothing in the client handled (`uncaughtException`, `unhandledRejection`): they would
   * have ended an application with Node's default handlers.
   */
  function reportError(err, source) {
    const isObject = err !== null && (typeof err === 'object' || typeof err === 'function');
    if (isObject && seenErrors.has(err)) return;
    if (obs.transport_errors.length >= MAX_TRANSPORT_ERRORS) {
      droppedErrors += 1;
      return;
    }
    if (isObject) seenErrors.add(err);
    obs.transport_errors.push(source ? { ...errorRecord(err), source } : errorRecord(err));
  }

  /** Wrap `target.onerror`, keeping whatever handler is already there. */
  function captureOnerror(target) {
    const previous = target.onerror;
    target.onerror = function capturedOnerror(error) {
      reportError(error);
      if (typeof previous === 'function') return previous.call(this, error);
      return undefined;
    };
  }

  function finalizePending(reason) {
    for (const [record, info] of pending) {
      record.status = 'raised';
      record.duration_ms = info.elapsed();
      const what = 'tool' in record ? `${info.what} ${record.tool}` : info.what;
      record.error = deadlineError(what, record.duration_ms, reason);
    }
    pending.clear();
  }

  /** A never-started call of the cell, as observe.py records it. */
  function notStarted(kind, tool) {
    return { tool, status: 'raised', result: null, error: deadlineError(`${kind} ${tool}`, null), duration_ms: 0 };
  }

  /** The steps the contract requires that were never started (observe.py `Observation.snapshot`). */
  function completeSteps() {
    if (obs.initialize === null) {
      obs.initialize = { status: 'raised', error: deadlineError('initialize', null), protocol_version: null, duration_ms: 0 };
    }
    if (obs.initialize.status !== 'ok') {
      obs.calls = [];
      obs.followup = null;
      return;
    }
    for (const call of cell.calls.slice(obs.calls.length)) obs.calls.push(notStarted('call', call.name));
    if (obs.followup === null) obs.followup = notStarted('followup', cell.followup.name);
  }

  function write(reason) {
    if (written) return;
    written = true;
    finalizePending(reason);
    completeSteps();
    if (droppedErrors) obs.transport_errors.push(truncatedError(droppedErrors));
    try {
      writeObservation(obsPath, obs);
    } catch (err) {
      // A result that cannot be serialized must not cost the whole observation.
      const fallback = JSON.parse(JSON.stringify(obs, (_k, v) => (typeof v === 'bigint' ? String(v) : v)));
      writeObservation(obsPath, fallback);
      process.stderr.write(`adapter: observation needed a fallback serialization: ${err}\n`);
    }
  }

  /** Write the observation and exit 0 (the normal end). */
  function finish(reason = 'finished') {
    clearTimeout(watchdog);
    write(reason);
    process.exit(0);
  }

  function abort(reason) {
    try {
      onAbort?.();
    } catch {
      // best effort
    }
    finish(reason);
  }

  const watchdog = setTimeout(() => abort(`budget watchdog at ${Math.round(deadline)} ms of ${budgetMs} ms`),
    Math.max(0, deadline - performance.now()));

  process.on('uncaughtException', (err) => reportError(err, 'uncaughtException'));
  process.on('unhandledRejection', (reason) => reportError(reason, 'unhandledRejection'));
  for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => abort(`received ${signal}`));
  process.on('exit', (code) => {
    if (!written) {
      try {
        onAbort?.();
      } catch {
        // best effort
      }
      write(`process exiting with code ${code}`);
    }
  });

  return { obs, begin, settle, reportError, captureOnerror, finish, deadline };
}

/**
 * The application's cancellation of one call: with `afterMs` (the call's `cancel_after_ms`), an
 * `AbortController` aborted (`controller.abort()`, no reason: what an application's cancel button
 * does) `afterMs` after now. `signal` goes with the request (`undefined` without `afterMs`),
 * `stop()` once the call settled, and `fields()` into its record: `cancelled_after_ms`, the step's
 * elapsed time when the abort was issued (`null` if the call settled first; nothing without
 * `afterMs`).
 * @param {{elapsed: () => number}} step the call's step ({@link createRun} `begin`)
 * @param {number|null|undefined} afterMs
 * @returns {{signal: AbortSignal|undefined, stop: () => void, fields: () => object}}
 */
export function cancelAfter(step, afterMs) {
  if (afterMs === undefined || afterMs === null) return { signal: undefined, stop: () => {}, fields: () => ({}) };
  const controller = new AbortController();
  let issuedAt = null;
  const timer = setTimeout(() => {
    issuedAt = step.elapsed();
    controller.abort();
  }, afterMs);
  return {
    signal: controller.signal,
    stop: () => clearTimeout(timer),
    fields: () => ({ cancelled_after_ms: issuedAt }),
  };
}

/**
 * The close step of `run`: `close()` (the client's close, returning a promise) recorded as
 * `obs.close` and awaited at most `maxWaitMs`, and no later than 200 ms before the run's
 * watchdog. Resolves to whether it settled and the reason to `finish` the run with.
 * @param {ReturnType<typeof createRun>} run
 * @param {() => Promise<unknown>} close
 * @param {number} maxWaitMs
 * @returns {Promise<{settled: boolean, reason: string}>}
 */
export async function closeStep(run, close, maxWaitMs) {
  const step = run.begin('close');
  run.obs.close = step.record;
  const waitMs = Math.max(0, Math.min(maxWaitMs, run.deadline - performance.now() - 200));
  let closing;
  try {
    closing = Promise.resolve(close());
  } catch (err) {
    closing = Promise.reject(err);
  }
  let timer;
  const settled = await Promise.race([
    closing.then(
      () => run.settle(step, { status: 'ok', error: null }),
      (err) => run.settle(step, { status: 'raised', error: errorRecord(err) }),
    ).then(() => true),
    new Promise((resolve) => { timer = setTimeout(() => resolve(false), waitMs); }),
  ]);
  clearTimeout(timer);
  return { settled, reason: settled ? 'finished' : `close wait bound of ${Math.round(waitMs)} ms` };
}
