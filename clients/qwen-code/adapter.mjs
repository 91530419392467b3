/**
 * qwen-code adapter: Qwen Code, the agent host, run headless (`qwen -p`) against the scripted model.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * clients/_support/host_driver.mjs runs the cell (docs/hosts.md); this file says how to run the
 * CLI: `node_modules/@qwen-code/qwen-code/cli-entry.js` on this adapter's Node with `-p`; `HOME` and
 * the working directory inside the cell directory; `OPENAI_BASE_URL` (the scripted model's `/v1`),
 * `OPENAI_API_KEY` (a dummy) and `OPENAI_MODEL` (all three are needed); no proxy variables and
 * `NO_PROXY` covering loopback (Qwen Code sends even loopback traffic through `HTTPS_PROXY` when one
 * is set); `~/.qwen/settings.json` with the reference server (`mcpServers.ref`, `"trust": true`:
 * its tools, and only its, run without approval; `timeout` the cell's call timeout), usage
 * statistics (else it looks up an aliyuncs.com collector), telemetry and auto-update off.
 * Qwen Code 0.24.4 declares only `tool_search` and `tool_call` for MCP tools: the scripted model
 * searches, then calls the server's tool through `tool_call` (servers/model/openai_chat.py); the
 * tool message's content is what the model reads.
 *
 * Options: none.
 */

import fs from 'node:fs';
import path from 'node:path';

import { PROMPT, SERVER, runHost } from '../_support/host_driver.mjs';

const ENTRY = ['node_modules', '@qwen-code', 'qwen-code', 'cli-entry.js'];

function launch({ cell, cellDir, url, adapterDir, serverUrl }) {
  const home = path.join(cellDir, 'home');
  const work = path.join(cellDir, 'work');
  for (const dir of [path.join(home, '.qwen'), work]) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(home, '.qwen', 'settings.json'), JSON.stringify({
    mcpServers: {
      [SERVER]: {
        ...(serverUrl
          ? { httpUrl: serverUrl }
          : { command: cell.server.command, args: cell.server.args ?? [], env: cell.server.env ?? {} }),
        trust: true,
        timeout: cell.call_timeout_ms,
      },
    },
    privacy: { usageStatisticsEnabled: false },
    telemetry: { enabled: false },
    general: { enableAutoUpdate: false },
  }, null, 2));
  return {
    command: process.execPath,
    args: [path.join(adapterDir, ...ENTRY), '-p', PROMPT],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      NO_PROXY: '127.0.0.1,localhost',
      no_proxy: '127.0.0.1,localhost',
      OPENAI_BASE_URL: `${url}/v1`,
      OPENAI_API_KEY: 'sk-mcp-client-matrix-offline',
      OPENAI_MODEL: 'scripted',
    },
    cwd: work,
  };
}

runHost({
  name: 'qwen-code',
  package: '@qwen-code/qwen-code',
  adapterUrl: import.meta.url,
  host: { launch, errorFlagField: null },
});
