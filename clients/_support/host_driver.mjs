/**
 * The driver shared by the **agent host** adapters (ES module, no dependencies): one host run per
 * cell against the scripted model (servers/model), its model view read from the model's journal.
 *
 * Contract: docs/hosts.md. An adapter holds only what is specific to its host and ends with
 * `runHost({ name, package, adapterUrl, host })`, where `host` is a {@link Host}. The harness runs
 * the adapter in a network namespace with loopback only (harness/system/loopback.py) and hands it
 * `cell.model` (how to start the scripted model and where it journals).
 *
 * On framework_driver.mjs's steps:
 *  - `initialize` is the whole host run: the driver writes the script (the cell's calls, then the
 *    follow-up, then a plain answer), starts the scripted model on 127.0.0.1, has the adapter
 *    write the host's configuration and command ({@link Host.launch}), runs the host to its end
 *    (the cell's budget bounds it: the driver's watchdog kills every child), stops the model and
 *    reads its journal; it raises when the host did not connect to the server (the reference
 *    server's journal has no request from it, or {@link Host.connected} says so);
 *  - `list_tools`: the names the host exposed the script's tools under, in any turn (the journal's
 *    `exposed`: the scripted model found them, servers/model/script.py `exposed_name`);
 *  - each call and the follow-up (the script's step of the same number): the tool result the model
 *    received for it, in the first request after the turn in which the model made that step (the
 *    journal's `action.step`), as the model server's dialect read it (`results`: the content
 *    exactly, the dialect's error field); `raised` when the model never made the step (with what
 *    the model was told) or never received its result. Two facts the harness cannot derive from
 *    what it keeps join the model view: `reach`, for a result carrying a payload longer than the
 *    harness keeps whole (a content block's text or data over 4,096 characters), how
 *    much of it reached the model and what the host said instead, measured against the result the
 *    reference server sent (it writes each one whole into the cell's `sent/` directory, which the
 *    driver removes once read); and `output_schema_shown`, whether the request in which the model
 *    made the call showed it the tool's advertised outputSchema (both: host_measure.mjs).
 *
 * @module host_driver
 */

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

import { PROMPT, modelView, runFramework } from './framework_driver.mjs';
import { reach, schemaShown } from './host_measure.mjs';
import { adapterDirectory } from './observe.mjs';

export { PROMPT };

/** How long the scripted model may take to listen. */
const READY_MS = 10000;

/** The final answer of every script. */
export const ANSWER = 'Done.';

/** The name of the reference server in every host's configuration. */
export const SERVER = 'ref';

/**
 * The host-specific part of an adapter.
 * @typedef {object} Host
 * @property {(ctx: LaunchContext) => {command: string, args: string[], env: Record<string, string>,
 *   cwd: string}} launch write the host's configuration into the cell directory and say how to run it
 * @property {(ctx: LaunchContext, exit: number|string) => string|null} [connected] why the host did
 *   not connect to the reference server (from its own output), or null when it did
 * @property {(value: unknown) => {value: unknown, added: string[]}} [ownWords] what the host added
 *   to a tool result that is not the server's (a reminder, a header), taken out of `value` and kept
 *   under `host_added`
 * @property {string} errorFlagField where the dialect's error marker sits (`tool_result.is_error`)
 */

/**
 * @typedef {object} LaunchContext
 * @property {object} cell the cell file
 * @property {string} cellDir the cell's directory (the model journal's)
 * @property {string} url the scripted model's base URL (`http://127.0.0.1:PORT`)
 * @property {string[]} tools the script's tool names, in order, each once
 * @property {string} adapterDir the adapter's directory
 * @property {string|null} serverUrl over Streamable HTTP, the reference server's URL (the driver
 *   started it inside the cell's namespace); null over stdio, where the host starts
 *   `cell.server.command` itself
 */

/** The JSON objects of a JSON-lines file (`{unparsed: line}` for a line that is not JSON); none when it is absent. */
export function readJsonLines(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((line) => {
    try {
      return JSON.parse(line);
    } catch {
      return { unparsed: line };
    }
  });
}

/**
 * Start a service that prints `{"url": ...}` as its first stdout line when it listens (the scripted
 * model, the HTTP reference server) and wait for that line; `what` names it in errors.
 * @returns {Promise<{child: import('node:child_process').ChildProcess, url: string}>}
 */
function startListening(what, command, args, stderr) {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', stderr] });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not listen in ${READY_MS} ms`)), READY_MS);
    child.on('error', reject);
    child.on('exit', (code) => reject(new Error(`${what} exited ${code} before listening`)));
    readline.createInterface({ input: child.stdout }).once('line', (line) => {
      clearTimeout(timer);
      resolve({ child, url: JSON.parse(line).url });
    });
  });
}

function startModel(cell, scriptPath) {
  const args = [...cell.model.args, '--script', scriptPath, '--port', '0'];
  return startListening('the scripted model', cell.model.command, args, 'inherit');
}

/**
 * Over Streamable HTTP, start the reference server the cell file describes (the harness leaves it to
 * a host adapter, which runs in the cell's network namespace: harness/matrix/cells.py `starts_server`) and
 * wait for its URL line; its stderr goes to the cell's `server-stderr.txt`.
 */
async function startServer(cell, cellDir) {
  const stderr = fs.openSync(path.join(cellDir, 'server-stderr.txt'), 'w');
  try {
    return await startListening('the reference server', cell.server.command, cell.server.args, stderr);
  } finally {
    fs.closeSync(stderr);
  }
}

/** Stop a child with SIGTERM and wait until it has exited (the reference server journals its exit first). */
function stop(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

function runToEnd({ command, args, env, cwd }, stdoutPath) {
  const out = fs.openSync(stdoutPath, 'w');
  const child = spawn(command, args, { cwd, env, stdio: ['ignore', out, 'inherit'] });
  return new Promise((resolve, reject) => {
    child.on('error', (err) => {
      fs.closeSync(out);
      reject(err);
    });
    child.on('exit', (code, signal) => {
      fs.closeSync(out);
      resolve(code ?? signal);
    });
  });
}

/** Why the reference server's journal shows no request from the host (it never started or spoke to it), or null. */
function serverNotStarted(journal) {
  if (journal.length === 0) return 'the host never started the reference server';
  return journal.some((e) => e.event === 'recv' && e.kind === 'request') ? null : 'the host sent the server no request';
}

/**
 * The `tools/call` results the reference server sent, whole, in the order it sent them, each with the
 * tool it answered (`sent/result-N.json`, named by the journal's `send` events); the directory is
 * removed once read.
 * @returns {Array<{tool: string, result: object}>}
 */
function sentResults(cellDir, journal) {
  const dir = path.join(cellDir, 'sent');
  const tools = new Map(journal.filter((e) => e.event === 'recv' && e.method === 'tools/call').map((e) => [e.id, e.params?.name]));
  const files = journal.filter((e) => e.event === 'send' && e.result_file && tools.has(e.id));
  const sent = files.filter((e) => fs.existsSync(path.join(dir, e.result_file))).map((e) => ({
    tool: tools.get(e.id),
    result: JSON.parse(fs.readFileSync(path.join(dir, e.result_file), 'utf8')),
  }));
  fs.rmSync(dir, { recursive: true, force: true });
  return sent;
}

/** The host did not connect to the reference server (the observation's error `type` names the case). */
class HostMcpNotConnected extends Error {}

/** The model never made a step of the script (its tool was not offered, or the run ended first). */
class HostNeverCalled extends Error {}

/** The model made the step, but no later request carried its tool result. */
class HostNoToolResult extends Error {}

/**
 * Run one cell with `host` and exit (framework_driver.mjs `runFramework` underneath).
 * @param {{name: string, package: string, adapterUrl: string, host: Host}} adapter
 */
export function runHost({ name, package: pkg, adapterUrl, host }) {
  const adapterDir = adapterDirectory(adapterUrl);

  async function connect({ cell }) {
    if (!cell.model?.journal) throw new Error('the cell file has no "model" (an agent host cell needs the scripted model)');
    const cellDir = path.dirname(cell.model.journal);
    const steps = [...cell.calls, cell.followup].map((c) => ({ tool: c.name, arguments: c.arguments ?? {} }));
    const scriptPath = path.join(cellDir, 'model-script.json');
    fs.writeFileSync(scriptPath, JSON.stringify({ steps, answer: ANSWER }));
    const server = cell.transport === 'stdio' ? null : await startServer(cell, cellDir);
    const tools = [...new Set(steps.map((s) => s.tool))];
    let model;
    let ctx;
    let exit;
    try {
      model = await startModel(cell, scriptPath);
      ctx = { cell, cellDir, url: model.url, tools, adapterDir, serverUrl: server?.url ?? null };
      exit = await runToEnd(host.launch(ctx), path.join(cellDir, 'host-stdout.txt'));
    } finally {
      model?.child.kill('SIGTERM');
      if (server) await stop(server.child);
    }
    const journal = readJsonLines(path.join(cellDir, 'journal.jsonl'));
    const why = host.connected?.(ctx, exit) ?? serverNotStarted(journal);
    if (why !== null) throw new HostMcpNotConnected(`${name} did not connect to the server: ${why} (exit ${exit})`);
    const turns = readJsonLines(cell.model.journal).filter((e) => e.event === 'turn');
    return {
      turns, journal, sent: sentResults(cellDir, journal), steps, exit, next: 0, netns: fs.readlinkSync('/proc/self/ns/net'),
    };
  }

  async function listTools(handle) {
    const exposed = handle.turns.flatMap((t) => Object.values(t.exposed ?? {}));
    return [...new Set(exposed.filter((n) => typeof n === 'string'))];
  }

  async function runCall(handle, call) {
    const step = handle.next++;
    const asked = handle.turns.find((t) => t.action?.step === step);
    if (!asked) {
      const last = handle.turns.at(-1);
      const why = last?.action?.reason ?? 'the host made no model request';
      throw new HostNeverCalled(`the model never called ${call.name} (${why}; the host exited ${handle.exit})`);
    }
    const callId = asked.action.call_id;
    const answered = handle.turns.find((t) => t.number > asked.number && (t.results ?? []).some((r) => r.call_id === callId));
    if (!answered) {
      throw new HostNoToolResult(`the host never handed the model a result for ${asked.action.call} (exit ${handle.exit})`);
    }
    const found = answered.results.find((r) => r.call_id === callId);
    const { value, added } = host.ownWords ? host.ownWords(found.content) : { value: found.content, added: [] };
    const occurrence = handle.steps.slice(0, step).filter((s) => s.tool === call.name).length;
    return {
      result: value,
      model_view: {
        ...modelView({
          value,
          errorFlag: found.is_error ?? null,
          errorFlagField: found.is_error === null || found.is_error === undefined ? null : host.errorFlagField,
          message: found.block,
        }),
        reach: reach(value, handle.sent.filter((s) => s.tool === call.name)[occurrence]?.result ?? null),
        output_schema_shown: schemaShown(asked.body, handle.journal, call.name),
      },
      extra: { host_added: added, model_turn: answered.number, exposed_as: asked.action.call, net_namespace: handle.netns },
    };
  }

  runFramework({
    name,
    package: pkg,
    adapterUrl,
    options: {},
    transports: ['stdio', 'http-json', 'http-sse'],
    framework: { connect, listTools, runCall, close: async () => {} },
  });
}
