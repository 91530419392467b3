/**
 * claude-code adapter: Claude Code, the agent host, run headless against the scripted model.
 *
 *   node adapter.mjs <cell.json> <observation.json>      (cwd = this directory)
 *
 * clients/_support/host_driver.mjs runs the cell (docs/hosts.md); this file says how to run
 * Claude Code: one `claude -p` run of the package's native binary
 * (`node_modules/@anthropic-ai/claude-code-linux-x64/claude`; npm may skip the wrapper's
 * postinstall, which only copies that binary), with
 *  - the scripted model (`cell.model`: servers/model) on 127.0.0.1 as `ANTHROPIC_BASE_URL`, a
 *    dummy `ANTHROPIC_API_KEY`, `--model claude-sonnet-4-5` (a name the host knows; the script
 *    answers whatever the name);
 *  - the reference server as the one MCP server `ref` (`--mcp-config`, `--strict-mcp-config`: no
 *    other configuration is read), and `--allowedTools` granting exactly the cell's tools
 *    (`mcp__ref__<tool>`), so no permission prompt is needed and nothing else is allowed;
 *  - `HOME` (where Claude Code keeps `.claude.json`, `.claude/`, its MCP logs) and the working
 *    directory inside the cell directory, `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`,
 *    `DISABLE_AUTOUPDATER`, `DISABLE_TELEMETRY`, `DISABLE_ERROR_REPORTING` set;
 *  - `MCP_TOOL_TIMEOUT` = the cell's `call_timeout_ms`;
 *  - `--output-format stream-json --verbose`: the host's own events (`host-stdout.txt` in the
 *    cell directory), of which the `system/init` event says whether `ref` connected.
 *
 * Claude Code 2.1.332 defers MCP tools behind its `ToolSearch` tool (`defer_loading` in the
 * request), so the scripted model's first turn loads them
 * (`select:mcp__ref__get_account_balance,mcp__ref__echo`). It appends a `<system-reminder>` (a
 * token count) to the newest user message, inside a tool result's text when that comes last; the
 * reminder is taken out of the model view and kept under `host_added`. `error_flag` is the
 * `tool_result`'s `is_error`.
 *
 * Options: none.
 */

import fs from 'node:fs';
import path from 'node:path';

import { PROMPT, SERVER, readJsonLines, runHost } from '../_support/host_driver.mjs';

const BINARY = ['node_modules', '@anthropic-ai', 'claude-code-linux-x64', 'claude'];
const MODEL = 'claude-sonnet-4-5';
const REMINDER = /\s*<system-reminder>[\s\S]*?<\/system-reminder>\s*$/;

function launch({ cell, cellDir, url, tools, adapterDir, serverUrl }) {
  const home = path.join(cellDir, 'home');
  const work = path.join(cellDir, 'work');
  for (const dir of [home, work]) fs.mkdirSync(dir, { recursive: true });
  const mcpConfig = path.join(cellDir, 'mcp-config.json');
  fs.writeFileSync(mcpConfig, JSON.stringify({
    mcpServers: {
      [SERVER]: serverUrl
        ? { type: 'http', url: serverUrl }
        : { command: cell.server.command, args: cell.server.args ?? [], env: cell.server.env ?? {} },
    },
  }));
  return {
    command: path.join(adapterDir, ...BINARY),
    args: [
      '-p', PROMPT, '--mcp-config', mcpConfig, '--strict-mcp-config',
      '--allowedTools', tools.map((t) => `mcp__${SERVER}__${t}`).join(','),
      '--output-format', 'stream-json', '--verbose', '--model', MODEL,
    ],
    env: {
      PATH: process.env.PATH,
      HOME: home,
      ANTHROPIC_BASE_URL: url,
      ANTHROPIC_API_KEY: 'sk-mcp-client-matrix-offline',
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      MCP_TOOL_TIMEOUT: String(cell.call_timeout_ms),
    },
    cwd: work,
  };
}

/** Why the `system/init` event of the host's own output says `ref` is not connected, or null. */
function connected({ cellDir }) {
  const init = readJsonLines(path.join(cellDir, 'host-stdout.txt')).find((e) => e.type === 'system' && e.subtype === 'init');
  const server = init?.mcp_servers?.find((s) => s.name === SERVER);
  if (server?.status === 'connected') return null;
  return server ? `MCP server status ${JSON.stringify(server.status)}` : 'no MCP server status in its init event';
}

/** The content without the reminder Claude Code appends to the newest user message. */
function ownWords(content) {
  if (typeof content === 'string') {
    const match = REMINDER.exec(content);
    return match ? { value: content.slice(0, match.index), added: [match[0]] } : { value: content, added: [] };
  }
  if (!Array.isArray(content)) return { value: content, added: [] };
  const added = content.filter((b) => b?.type === 'text' && /^\s*<system-reminder>/.test(b.text ?? ''));
  return { value: content.filter((b) => !added.includes(b)), added: added.map((b) => b.text) };
}

runHost({
  name: 'claude-code',
  package: '@anthropic-ai/claude-code',
  adapterUrl: import.meta.url,
  host: { launch, connected, ownWords, errorFlagField: 'tool_result.is_error' },
});
