// tools/list through the official TypeScript SDK, once per agent key: the SDK must accept every
// page, and the tool names must be exactly those the permission table (docs/rules.md §6.2) grants the key.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { Agent, KEY_NAMES, stack } from './lib.mjs';
import { expectedToolNames } from './permissions.mjs';

const s = stack();

describe('tools/list per key', () => {
  const agents = [];
  after(async () => {
    for (const a of agents) await a.close().catch(() => {});
  });

  for (const name of KEY_NAMES) {
    test(`${name} key sees exactly the tools its permissions grant`, async () => {
      const entry = s.key[name];
      const agent = await Agent.connect(s, name);
      agents.push(agent);
      const got = (await agent.listTools()).map((t) => t.name).sort();
      const want = expectedToolNames(entry.presets, entry.permissions);
      const extra = got.filter((n) => !want.includes(n));
      const missing = want.filter((n) => !got.includes(n));
      assert.deepEqual(got, want,
        `tools/list for presets ${JSON.stringify(entry.presets)} + bits ${JSON.stringify(entry.permissions)}:\n` +
        `  listed but not granted by docs/rules.md §6.2: ${extra.join(', ') || '(none)'}\n` +
        `  granted by docs/rules.md §6.2 but not listed: ${missing.join(', ') || '(none)'}`);
    });
  }

  test('the custom key gets task:admin tools without the task:write ones (no bit implies another)', async () => {
    const agent = await Agent.connect(s, 'custom');
    agents.push(agent);
    const names = (await agent.listTools()).map((t) => t.name);
    const perms = s.key.custom.permissions;
    assert.ok(perms.includes('task:admin') && !perms.includes('task:write') && s.key.custom.presets.length === 0,
      `the driver must give the custom key task:admin without task:write and no preset, got ${JSON.stringify(s.key.custom)}`);
    assert.ok(names.includes('chorus_admin_verify_task'), `custom key: chorus_admin_verify_task missing from ${names.join(', ')}`);
    assert.ok(!names.includes('chorus_claim_task'), 'custom key: chorus_claim_task is listed although task:write is not held');
  });
});
