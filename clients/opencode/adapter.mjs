/**
 * opencode adapter: opencode, the agent host, run headless (`opencode run`) against the scripted model.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * clients/_support/host_driver.mjs runs the cell (docs/hosts.md); this file says how to run
 * opencode: the platform package's native binary (`node_modules/opencode-linux-x64/bin/opencode`;
 * npm may skip `opencode-ai`'s postinstall, which only links it) with `run`; `HOME`, the XDG
 * directories and the working directory inside the cell directory; `OPENCODE_CONFIG` a config
 * with a custom `@ai-sdk/openai-compatible` provider (bundled in the binary) on the scripted
 * model's `/v1` as `model` and `small_model` (opencode's first request is a title turn without
 * tools), the reference server as the `local` MCP server `ref`, `permission` allowing `ref_*`
 * (its tools, exposed as `ref_<tool>`), `autoupdate` false, sharing disabled;
 * `OPENCODE_DISABLE_MODELS_FETCH` (else it fetches models.opencode.ai/api.json) and
 * `OPENCODE_DISABLE_AUTOUPDATE`; and its config directory holding a `package.json`,
 * `package-lock.json` and `node_modules/` that already list `@opencode-ai/plugin` (else it runs
 * an install from registry.npmjs.org in the background, which `--pure` does not stop).
 *
 * Options: none.
 */

import fs from 'node:fs';
import path from 'node:path';

import { PROMPT, SERVER, runHost } from '../_support/host_driver.mjs';

const BINARY = ['node_modules', 'opencode-linux-x64', 'bin', 'opencode'];
const PLUGIN = { dependencies: { '@opencode-ai/plugin': '*' } };

function launch({ cell, cellDir, url, adapterDir, serverUrl }) {
  const home = path.join(cellDir, 'home');
  const work = path.join(cellDir, 'work');
  const config = path.join(home, '.config', 'opencode');
  for (const dir of [path.join(config, 'node_modules'), work]) fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(config, 'package.json'), JSON.stringify(PLUGIN));
  fs.writeFileSync(path.join(config, 'package-lock.json'),
    JSON.stringify({ lockfileVersion: 3, packages: { '': PLUGIN } }));
  const configFile = path.join(cellDir, 'opencode.json');
  fs.writeFileSync(configFile, JSON.stringify({
    provider: {
      scripted: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Scripted model',
        options: { baseURL: `${url}/v1`, apiKey: 'sk-mcp-client-matrix-offline' },
        models: { scripted: { name: 'scripted', tool_call: true } },
      },
    },
    model: 'scripted/scripted',
    small_model: 'scripted/scripted',
    mcp: {
      [SERVER]: {
        ...(serverUrl
          ? { type: 'remote', url: serverUrl, oauth: false }
          : { type: 'local', command: [cell.server.command, ...(cell.server.args ?? [])], environment: cell.server.env ?? {} }),
        enabled: true,
        timeout: cell.call_timeout_ms,
      },
    },
    permission: { [`${SERVER}_*`]: 'allow' },
    autoupdate: false,
    share: 'disabled',
  }, null, 2));
  return {
    command: path.join(adapterDir, ...BINARY),
    args: ['run', PROMPT],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      XDG_CONFIG_HOME: path.join(home, '.config'),
      XDG_DATA_HOME: path.join(home, '.local', 'share'),
      XDG_CACHE_HOME: path.join(home, '.cache'),
      XDG_STATE_HOME: path.join(home, '.local', 'state'),
      NO_PROXY: '127.0.0.1,localhost',
      OPENCODE_CONFIG: configFile,
      OPENCODE_DISABLE_MODELS_FETCH: '1',
      OPENCODE_DISABLE_AUTOUPDATE: '1',
    },
    cwd: work,
  };
}

runHost({
  name: 'opencode',
  package: 'opencode-ai',
  adapterUrl: import.meta.url,
  host: { launch, errorFlagField: null },
});
