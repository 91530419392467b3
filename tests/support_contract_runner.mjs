/**
 * The Node half of tests/test_support_contract.py: runs the clients/_support/*.mjs helpers on the
 * contract fixtures (tests/fixtures/contract/*.json) and reports what they did, in the same shape
 * the Python half reports it, for the test to compare with the fixtures' expectations. Imports
 * nothing but the support modules and Node built-ins.
 *
 *   node support_contract_runner.mjs helpers <fixture.json>...     {fixture name: [result per case]} on stdout
 *   node support_contract_runner.mjs observation <fixture.json> <case index> <observation.json>
 *   node support_contract_runner.mjs framework <fixture.json> <observation.json>
 *
 * The last two end the way an adapter does (observe.mjs createRun writes the observation and exits 0).
 */

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  checkCancelAfter, checkOptions, createRun, deadlineError, errorRecord, readCell, writeObservation,
} from '../clients/_support/observe.mjs';
import { modelView, normalizeIds, runFramework } from '../clients/_support/framework_driver.mjs';

/** An Error built from a fixture's error spec, in JavaScript's idiom (see error_record.json). */
function buildError(spec, root = null) {
  const Base = spec.members ? AggregateError : Error;
  const Named = { [spec.type]: class extends Base {} }[spec.type];
  const err = spec.members ? new Named([], spec.message) : new Named(spec.message);
  const top = root ?? err;
  if (spec.members) err.errors = spec.members.map((member) => buildError(member, top));
  if (spec.code !== undefined) err.code = spec.code;
  if (spec.sdk_code !== undefined) err.code = spec.sdk_code;
  if ('data' in spec) err.data = spec.data;
  if (spec.cause === '$root') err.cause = top;
  else if (spec.cause) err.cause = buildError(spec.cause, top);
  return err;
}

/** `{ok: true, ...extra}` when `fn()` returns, `{error: message}` when it throws. */
function outcome(fn) {
  try {
    return { ok: true, ...fn() };
  } catch (err) {
    return { error: err.message };
  }
}

function readCellCase(testCase, dir) {
  const file = path.join(dir, 'cell.json');
  fs.writeFileSync(file, testCase.raw ?? JSON.stringify(testCase.content));
  const result = outcome(() => ({ cell: readCell(file) }));
  if (result.error) result.error = result.error.split(file).join('{path}');
  return result;
}

function writeObservationCase(testCase, dir) {
  const file = path.join(dir, 'observation.json');
  writeObservation(file, testCase.value);
  return { raw: fs.readFileSync(file, 'utf8'), leftovers: fs.readdirSync(dir).filter((name) => name !== 'observation.json') };
}

const HELPERS = {
  'read_cell.json': readCellCase,
  'check_options.json': (c) => outcome(() => { checkOptions(c.options, c.known); return {}; }),
  'check_cancel_after.json': (c) => outcome(() => {
    checkCancelAfter(c.calls, (message) => { throw new Error(message); });
    return {};
  }),
  'normalize_ids.json': (c) => normalizeIds(c.input),
  'error_record.json': (c) => errorRecord(buildError(c.error)),
  'deadline_error.json': (c) => deadlineError(c.what, c.elapsed_ms, c.reason),
  'write_observation.json': writeObservationCase,
};

function helpers(...fixturePaths) {
  const results = {};
  for (const fixturePath of fixturePaths) {
    const fixture = JSON.parse(fs.readFileSync(fixturePath, 'utf8'));
    const run = HELPERS[path.basename(fixturePath)];
    results[path.basename(fixturePath)] = fixture.cases.map((testCase) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'support-contract-'));
      try {
        return run(testCase, dir);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }
  process.stdout.write(JSON.stringify(results));
}

/** Play one observation.json case on createRun and stop as the case says (writes, exits 0). */
function observation(fixturePath, index, obsPath) {
  const fixture = JSON.parse(fs.readFileSync(fixturePath, 'utf8'));
  const testCase = fixture.cases[Number(index)];
  const run = createRun({ obsPath, budgetMs: 600000, packageVersion: null, cell: fixture.cell });
  const open = new Map();
  for (const op of testCase.ops) {
    if (op.op === 'begin') {
      const step = run.begin(op.step, op.tool === undefined ? {} : { tool: op.tool });
      if (op.step === 'call') run.obs.calls.push(step.record);
      else run.obs[op.step] = step.record;
      open.set(op.step, step);
    } else if (op.op === 'end') {
      const isCall = op.tool !== undefined;
      const failed = op.error !== undefined;
      const patch = { status: failed ? 'raised' : (isCall ? 'returned' : 'ok'), error: failed ? errorRecord(buildError(op.error)) : null };
      if (isCall) patch.result = failed ? null : op.result;
      if (op.step === 'initialize') patch.protocol_version = failed ? null : op.protocol_version;
      if (op.step === 'list_tools') patch.tools = failed ? null : op.tools;
      run.settle(open.get(op.step), patch);
      open.delete(op.step);
    } else if (op.op === 'transport_error') {
      if (op.distinct) {
        for (let i = 0; i < op.distinct; i += 1) run.reportError(buildError({ ...op.error, message: `${op.error.message} ${i}` }));
      } else {
        const err = buildError(op.error);
        for (let i = 0; i < op.times; i += 1) run.reportError(err);
      }
    }
  }
  run.finish(testCase.reason);
}

/** runFramework with a fake framework whose tool listing raises (framework_listing_failed.json). */
function framework(fixturePath, obsPath) {
  const fixture = JSON.parse(fs.readFileSync(fixturePath, 'utf8'));
  const cellPath = path.join(path.dirname(obsPath), 'cell.json');
  fs.writeFileSync(cellPath, JSON.stringify(fixture.cell));
  process.argv = [process.argv[0], process.argv[1], cellPath, obsPath];
  runFramework({
    name: 'fake',
    package: '',
    adapterUrl: import.meta.url,
    options: {},
    framework: {
      connect: async () => ({}),
      protocolVersion: () => '2025-11-25',
      listTools: async () => { throw buildError(fixture.list_error); },
      runCall: async (_handle, call) => ({
        result: { tool: call.name, arguments: call.arguments },
        model_view: modelView({ value: `${call.name} ran` }),
      }),
      close: async () => {},
    },
  });
}

const [mode, ...args] = process.argv.slice(2);
if (mode === 'helpers') helpers(...args);
else if (mode === 'observation') observation(...args);
else if (mode === 'framework') framework(...args);
else {
  process.stderr.write(`unknown mode ${mode}\n`);
  process.exit(2);
}
