// Toolsets and read-only mode through the official TypeScript SDK (docs/rules.md §3.3): a
// developer key without a selection lists its preset's default toolsets (core, develop); the URL
// form selects others; a tool outside the selection answers which toolset holds it; read-only
// mode lists only tools annotated read-only and refuses a write in one sentence.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { anyResult, newClient, stack } from './lib.mjs';

const s = stack();

describe('toolsets and read-only mode', () => {
  const clients = [];
  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
  });
  const connect = async (url, key, headers = {}) => {
    const c = await newClient(url, key, 'chorus-ts-toolsets', headers);
    clients.push(c);
    return c;
  };
  const names = async (c) => (await c.listTools()).tools.map((t) => t.name);
  const base = s.url.replace(/\/+$/, '');

  test('a developer key without a selection gets core and develop', async () => {
    const c = await connect(s.url, s.key.developer.key);
    const listed = await names(c);
    assert.ok(listed.includes('chorus_checkin') && listed.includes('chorus_claim_next_task'), listed.join(', '));
    assert.ok(!listed.includes('chorus_add_comment'), 'collab is not selected by default for a developer');
    assert.ok(listed.length <= 15, `${listed.length} tools: the developer default is at most 15`);
    const res = await c.request({ method: 'tools/call', params: { name: 'chorus_add_comment', arguments: {} } }, anyResult);
    assert.equal(res.isError, true);
    assert.match(res.content[0].text, /chorus_add_comment is in the collab toolset, which this connection has not selected/);
    const me = await c.callTool({ name: 'chorus_checkin', arguments: {} });
    const on = me.structuredContent.toolsets.filter((t) => t.enabled).map((t) => t.name);
    assert.deepEqual(on, ['core', 'develop']);
  });

  test('the URL form selects toolsets', async () => {
    const c = await connect(`${base}/x/develop,collab`, s.key.developer.key);
    const listed = await names(c);
    assert.ok(listed.includes('chorus_add_comment') && listed.includes('chorus_claim_task'), listed.join(', '));
  });

  test('read-only mode lists only read-only tools and refuses writes', async () => {
    const c = await connect(`${base}/readonly/x/all`, s.key.admin.key);
    const { tools } = await c.listTools();
    assert.ok(tools.length > 10);
    for (const t of tools) assert.equal(t.annotations?.readOnlyHint, true, `${t.name} is listed read-only without readOnlyHint`);
    assert.ok(!tools.some((t) => t.name === 'chorus_admin_create_project'));
    const res = await c.request({ method: 'tools/call', params: { name: 'chorus_admin_create_project', arguments: { name: 'x' } } }, anyResult);
    assert.equal(res.isError, true);
    assert.match(res.content[0].text, /changes data, and this connection cannot/);
  });

  test('an unknown toolset is refused with the list of known ones', async () => {
    await assert.rejects(connect(s.url, s.key.developer.key, { 'X-Chorus-Toolsets': 'develop,bogus' }),
      (err) => /unknown toolset \\?"bogus\\?"; the toolsets are core, ideas/.test(String(err?.message)));
  });
});
