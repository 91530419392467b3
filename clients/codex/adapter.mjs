/**
 * codex adapter: Codex CLI, the agent host, run headless (`codex exec`) against the scripted model.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * clients/_support/host_driver.mjs runs the cell (docs/hosts.md); this file says how to run Codex:
 * the platform package's native binary
 * (`node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex`, what the
 * `@openai/codex` Node shim execs) with `exec --skip-git-repo-check --strict-config --color never`,
 * `CODEX_HOME` and `HOME` inside the cell directory, and a `config.toml` there:
 *  - a custom provider `scripted` (`wire_api = "responses"`, `base_url` the scripted model's
 *    `/v1`, `env_key` a variable holding a dummy key) as the model provider;
 *  - `[mcp_servers.ref]`, the reference server, with `default_tools_approval_mode = "approve"`
 *    (without it every call is refused: "MCP tool call requires approval, but approval policy is
 *    never") and `tool_timeout_sec` = the cell's call timeout;
 *  - `approval_policy = "never"`, `sandbox_mode = "read-only"`;
 *  - `[features] plugins = false` and `[analytics] enabled = false`: without them Codex 0.171.0
 *    looks up github.com, api.github.com, chatgpt.com and ab.chatgpt.com (which fail inside the
 *    cell's namespace), `check_for_update_on_startup = false`.
 * Codex offers the server's tools as one Responses `namespace` tool `mcp__ref` (the scripted model
 * calls `get_account_balance` in it) and hands the model a `function_call_output` whose `output`
 * begins with its own `Wall time: N seconds\nOutput:` header; that header (it varies from run to
 * run) is taken out of the model view and kept under `host_added`.
 *
 * Options: none.
 */

import fs from 'node:fs';
import path from 'node:path';

import { PROMPT, SERVER, runHost } from '../_support/host_driver.mjs';

const BINARY = ['node_modules', '@openai', 'codex-linux-x64', 'vendor', 'x86_64-unknown-linux-musl', 'bin', 'codex'];
const HEADER = /^Wall time: [0-9.]+ seconds\nOutput:\n?/;

/** A TOML basic string (JSON's escapes are TOML's). */
const toml = (value) => JSON.stringify(String(value));

function launch({ cell, cellDir, url, adapterDir, serverUrl }) {
  const home = path.join(cellDir, 'home');
  const codexHome = path.join(cellDir, 'codex-home');
  const work = path.join(cellDir, 'work');
  for (const dir of [home, codexHome, work]) fs.mkdirSync(dir, { recursive: true });
  const env = Object.entries(cell.server.env ?? {}).map(([k, v]) => `${k} = ${toml(v)}`).join(', ');
  fs.writeFileSync(path.join(codexHome, 'config.toml'), [
    'model = "scripted"',
    'model_provider = "scripted"',
    'approval_policy = "never"',
    'sandbox_mode = "read-only"',
    'check_for_update_on_startup = false',
    '',
    '[model_providers.scripted]',
    'name = "scripted"',
    `base_url = ${toml(`${url}/v1`)}`,
    'wire_api = "responses"',
    'env_key = "MCPCM_SCRIPTED_MODEL_KEY"',
    '',
    '[analytics]',
    'enabled = false',
    '',
    '[features]',
    'plugins = false',
    '',
    `[mcp_servers.${SERVER}]`,
    ...(serverUrl
      ? [`url = ${toml(serverUrl)}`]
      : [`command = ${toml(cell.server.command)}`, `args = [${(cell.server.args ?? []).map(toml).join(', ')}]`, `env = { ${env} }`]),
    'default_tools_approval_mode = "approve"',
    `tool_timeout_sec = ${cell.call_timeout_ms / 1000}`,
    '',
  ].join('\n'));
  return {
    command: path.join(adapterDir, ...BINARY),
    args: ['exec', '--skip-git-repo-check', '--strict-config', '--color', 'never', PROMPT],
    env: { PATH: process.env.PATH, TERM: 'dumb', HOME: home, CODEX_HOME: codexHome, MCPCM_SCRIPTED_MODEL_KEY: 'dummy' },
    cwd: work,
  };
}

/** The output without Codex's wall-time header (a string, or the first `input_text` of a list). */
function ownWords(content) {
  if (typeof content === 'string') {
    const match = HEADER.exec(content);
    return match ? { value: content.slice(match[0].length), added: [match[0]] } : { value: content, added: [] };
  }
  if (Array.isArray(content) && content[0]?.type === 'input_text' && HEADER.test(`${content[0].text}\n`)) {
    return { value: content.slice(1), added: [content[0].text] };
  }
  return { value: content, added: [] };
}

runHost({
  name: 'codex',
  package: '@openai/codex',
  adapterUrl: import.meta.url,
  host: { launch, ownWords, errorFlagField: null },
});
