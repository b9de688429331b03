// The MCP Inspector's CLI mode (node_modules/.bin/mcp-inspector --cli) against the stack:
// tools/list with --strict must exit 0 with no schema-portability finding at all (neither an
// error nor a warning), and a tools/call of chorus_checkin must answer for the key's agent.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { stack } from './lib.mjs';

const s = stack();
const BIN = join(dirname(fileURLToPath(import.meta.url)), '..', 'node_modules', '.bin', 'mcp-inspector');
const TIMEOUT_MS = 60_000;

/**
 * inspect runs the inspector CLI against the stack with the admin key and resolves to
 * {code, stdout, stderr} whatever the exit code; it rejects only when the process cannot run or
 * times out. The inspector keeps its state under MCP_STORAGE_DIR and the home directory: both
 * point at storageDir, a temporary directory, so a run leaves nothing behind.
 * @param {string[]} args arguments after the URL and the transport flags
 * @param {string} storageDir
 */
function inspect(args, storageDir) {
  const argv = ['--cli', s.url, '--transport', 'http', '--header', `Authorization: Bearer ${s.key.admin.key}`,
    '--header', 'X-Chorus-Toolsets: all', ...args];
  return new Promise((resolve, reject) => {
    execFile(BIN, argv, {
      timeout: TIMEOUT_MS, maxBuffer: 64 << 20,
      env: { ...process.env, MCP_STORAGE_DIR: storageDir, HOME: storageDir, USERPROFILE: storageDir, NO_COLOR: '1' },
    }, (err, stdout, stderr) => {
      if (err && typeof err.code !== 'number') {
        reject(new Error(`mcp-inspector ${args.join(' ')} did not run${err.killed ? ` (killed after ${TIMEOUT_MS} ms)` : ''}: ${err.message}\n${stderr}`));
        return;
      }
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

/**
 * findings parses the --strict report on stderr: blocks of
 *   Error: tool "<name>"  |  Warning: tool "<name>"
 *     Path: <inputSchema|outputSchema>.<path>
 *     Issue: <what is wrong>
 * @returns {{severity: string, tool: string, path: string, kind: string}[]}
 */
function findings(stderr) {
  const out = [];
  const re = /^(Error|Warning): tool "([^"]+)"\n\s+Path: (\S+)\n\s+Issue: (.*)$/gm;
  for (const m of stderr.matchAll(re)) out.push({ severity: m[1], tool: m[2], path: m[3], kind: kindOf(m[4]) });
  return out;
}

/** kindOf names the lint rule behind an inspector "Issue:" line. */
function kindOf(issue) {
  if (issue.startsWith('`type` is an array')) return 'type array';
  if (issue.startsWith('Bare `')) return 'boolean schema';
  if (issue.includes('no validation keyword')) return 'untyped schema';
  if (issue.includes('`$ref`')) return 'remote $ref';
  return issue.slice(0, 60);
}

/** summarize counts the findings by severity and rule, with a few examples and the inspector's totals. */
function summarize(list, stderr) {
  const total = stderr.match(/^\d+ errors?, \d+ warnings? across \d+ tools?\.$/m)?.[0] ?? '(no summary line)';
  const lines = [`inspector says: ${total}`];
  for (const sev of ['Error', 'Warning']) {
    const of = list.filter((f) => f.severity === sev);
    const kinds = {};
    for (const f of of) kinds[f.kind] = (kinds[f.kind] ?? 0) + 1;
    lines.push(`  ${sev.toLowerCase()}s: ${of.length}${of.length ? ' (' + Object.entries(kinds).map(([k, n]) => `${k}: ${n}`).join(', ') + ')' : ''}`);
    for (const f of of.slice(0, 6)) lines.push(`    ${f.tool}: ${f.path} (${f.kind})`);
  }
  return lines.join('\n');
}

describe('MCP Inspector CLI', () => {
  let storage;
  before(async () => {
    storage = await mkdtemp(join(tmpdir(), 'chorus-inspector-'));
  });
  after(() => rm(storage, { recursive: true, force: true }));

  test('tools/list --strict: exit 0, no schema-portability errors or warnings', async () => {
    const r = await inspect(['--method', 'tools/list', '--strict'], storage);
    const list = findings(r.stderr);
    const portability = /Schema portability|tool schema portability/.test(r.stderr);
    assert.ok(r.code === 0 && list.length === 0 && !portability,
      `mcp-inspector tools/list --strict: expected exit 0 and no schema-portability findings, got exit ${r.code} and ${list.length} findings\n` +
      (list.length > 0 ? summarize(list, r.stderr) : `stderr:\n${r.stderr.slice(-1500)}`));
    let result;
    try {
      result = JSON.parse(r.stdout);
    } catch (err) {
      assert.fail(`the inspector's stdout is not the tools/list JSON (${err.message}): ${r.stdout.slice(0, 300)}`);
    }
    assert.ok(Array.isArray(result.tools) && result.tools.some((t) => t.name === 'chorus_checkin'),
      `tools/list via the inspector: expected chorus_checkin among ${result.tools?.length} tools`);
  });

  test('tools/call chorus_checkin: exit 0 and the agent', async () => {
    const r = await inspect(['--method', 'tools/call', '--tool-name', 'chorus_checkin',
      '--tool-arg', `requestId=inspector-${process.pid}-${Date.now()}`], storage);
    assert.equal(r.code, 0, `mcp-inspector tools/call chorus_checkin: expected exit 0, got ${r.code}\nstdout: ${r.stdout.slice(0, 600)}\nstderr: ${r.stderr.slice(-600)}`);
    let result;
    try {
      result = JSON.parse(r.stdout);
    } catch (err) {
      assert.fail(`the inspector's stdout is not the tools/call result JSON (${err.message}): ${r.stdout.slice(0, 300)}`);
    }
    assert.notEqual(result.isError, true, `chorus_checkin returned isError: ${r.stdout.slice(0, 600)}`);
    const agent = result.structuredContent?.agent;
    assert.ok(agent?.uuid && agent.name, `chorus_checkin via the inspector: expected structuredContent.agent with uuid and name, got ${r.stdout.slice(0, 600)}`);
    assert.deepEqual(agent.roles, s.key.admin.presets, 'the admin key checks in as the admin agent');
    assert.match(result.content?.[0]?.text ?? '', new RegExp(agent.uuid), 'the text content names the same agent');
  });
});
