/**
 * gemini-cli adapter: Gemini CLI, the agent host, run headless (`gemini -p`) against the scripted model.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * clients/_support/host_driver.mjs runs the cell (docs/hosts.md); this file says how to run the
 * CLI: its bundle (`node_modules/@google/gemini-cli/bundle/gemini.js`) on this adapter's Node, with
 * `-m gemini-2.5-pro` (without a model the CLI routes a first non-streaming request to another
 * model and expects JSON from it), `--skip-trust` (an untrusted folder switches approvals back to
 * the default), `--allowed-mcp-server-names ref` and `--allowed-tools` naming exactly the cell's
 * tools as the CLI exposes them (`mcp_ref_<tool>`), `-p`; `HOME`, `TMPDIR` and the working
 * directory inside the cell directory, `GOOGLE_GEMINI_BASE_URL` the scripted model, a dummy
 * `GEMINI_API_KEY`, and `~/.gemini/settings.json` with the reference server (`mcpServers.ref`,
 * `timeout` the cell's call timeout), `security.auth.selectedType = "gemini-api-key"` (a base URL
 * alone makes the auth type `gateway`, which the non-interactive mode refuses), auto-update,
 * usage statistics (else it looks up play.googleapis.com) and telemetry off.
 * The CLI hands the model a `functionResponse` whose `response.output` wraps the text in
 * `<untrusted_context>` ... `</untrusted_context>`; the wrapper is taken out of the model view and
 * kept under `host_added`.
 *
 * Options: none.
 */

import fs from 'node:fs';
import path from 'node:path';

import { PROMPT, SERVER, runHost } from '../_support/host_driver.mjs';

const BUNDLE = ['node_modules', '@google', 'gemini-cli', 'bundle', 'gemini.js'];
const WRAPPER = /^<untrusted_context>\n([\s\S]*)\n<\/untrusted_context>$/;

function launch({ cell, cellDir, url, tools, adapterDir, serverUrl }) {
  const home = path.join(cellDir, 'home');
  const work = path.join(cellDir, 'work');
  const tmp = path.join(cellDir, 'tmp');
  for (const dir of [path.join(home, '.gemini'), work, tmp]) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(home, '.gemini', 'settings.json'), JSON.stringify({
    mcpServers: {
      [SERVER]: {
        ...(serverUrl
          ? { httpUrl: serverUrl }
          : { command: cell.server.command, args: cell.server.args ?? [], env: cell.server.env ?? {} }),
        timeout: cell.call_timeout_ms,
      },
    },
    general: { enableAutoUpdate: false, enableAutoUpdateNotification: false },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    security: { auth: { selectedType: 'gemini-api-key' } },
  }, null, 2));
  return {
    command: process.execPath,
    args: [
      path.join(adapterDir, ...BUNDLE), '-m', 'gemini-2.5-pro', '--skip-trust',
      '--allowed-mcp-server-names', SERVER, '--allowed-tools', tools.map((t) => `mcp_${SERVER}_${t}`).join(','),
      '-p', PROMPT,
    ],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      TMPDIR: tmp,
      GOOGLE_GEMINI_BASE_URL: url,
      GEMINI_API_KEY: 'dummy',
    },
    cwd: work,
  };
}

/** The response without the CLI's `<untrusted_context>` wrapper around `output`. */
function ownWords(content) {
  const output = content?.output;
  const match = typeof output === 'string' ? WRAPPER.exec(output) : null;
  if (!match) return { value: content, added: [] };
  return { value: { ...content, output: match[1] }, added: ['<untrusted_context>\n', '\n</untrusted_context>'] };
}

runHost({
  name: 'gemini-cli',
  package: '@google/gemini-cli',
  adapterUrl: import.meta.url,
  host: { launch, ownWords, errorFlagField: null },
});
