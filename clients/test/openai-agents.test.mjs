// The OpenAI Agents SDK (@openai/agents) with convertSchemasToStrict: every tool must convert to
// OpenAI's strict mode, and what strict mode sends (every key, null when unused) must change
// only what the call meant to change (case 08).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { MCPServerStreamableHttp, RunContext, getAllMcpTools } from '@openai/agents';

import { mainstreamSuite, outcome } from './mainstream.mjs';
import { closeAll, connectAll } from './lib.mjs';

/** text is what a function tool hands the model: one content item or several. */
function textOf(out) {
  const items = Array.isArray(out) ? out : [out];
  return items.map((c) => (typeof c === 'string' ? c : c?.text ?? '')).join('\n');
}

/** strictArgs fills every key of a strict schema the call leaves out with null, as the model must. */
function strictArgs(schema, args) {
  const out = {};
  for (const [k, p] of Object.entries(schema.properties ?? {})) {
    out[k] = k in args ? args[k] : null;
    const object = p.type === 'object' || p.anyOf?.some((b) => b.type === 'object');
    if (object && args[k] && typeof args[k] === 'object' && !Array.isArray(args[k])) {
      out[k] = strictArgs(p.anyOf?.find((b) => b.type === 'object') ?? p, args[k]);
    }
    const items = p.items ?? p.anyOf?.find((b) => b.type === 'array')?.items;
    if (Array.isArray(args[k]) && items?.type === 'object') out[k] = args[k].map((v) => strictArgs(items, v));
  }
  return out;
}

async function invoke(conn, name, args) {
  const t = conn.tools.get(name);
  assert.ok(t, `${name} is not among the converted tools`);
  const text = textOf(await t.invoke(new RunContext({}), JSON.stringify(strictArgs(t.parameters, args))));
  let structured;
  try {
    structured = JSON.parse(text);
  } catch {
    // an error sentence, or a tool whose result is text
  }
  return { isError: undefined, text, structured };
}

mainstreamSuite({
  name: '@openai/agents 0.20 (strict)',
  async connect(url, key) {
    const server = new MCPServerStreamableHttp({ url, name: 'chorus', requestInit: { headers: { Authorization: 'Bearer ' + key } } });
    await server.connect();
    const tools = await getAllMcpTools({ mcpServers: [server], convertSchemasToStrict: true, runContext: new RunContext({}) });
    const loose = tools.filter((t) => t.strict !== true).map((t) => t.name);
    assert.deepEqual(loose, [], 'every tool must convert to OpenAI strict mode; these fell back to non-strict');
    return { server, tools: new Map(tools.map((t) => [t.name, t])) };
  },
  toolNames: async (conn) => [...conn.tools.keys()],
  call: invoke,
  callUnlisted: async (conn, name, args) => {
    const content = await conn.server.callTool(name, args);
    return { isError: undefined, text: textOf(content) };
  },
  close: (conn) => conn.server.close(),
}, ({ s, project }) => {
  test('a rename in strict mode sends every other key as null and changes only the title (case 08)', async () => {
    const ref = await connectAll(s, ['pm']);
    const server = new MCPServerStreamableHttp({ url: s.url, name: 'chorus', requestInit: { headers: { Authorization: 'Bearer ' + s.key.pm.key } } });
    try {
      await server.connect();
      const tools = await getAllMcpTools({ mcpServers: [server], convertSchemasToStrict: true, runContext: new RunContext({}) });
      const conn = { server, tools: new Map(tools.map((t) => [t.name, t])) };
      const pm = ref.pm;
      await pm.listTools();
      const theme = (await pm.call('chorus_pm_create_idea', { projectUuid: project(), title: 'Theme', isContainer: true })).uuid;
      const child = (await pm.call('chorus_pm_create_idea', { projectUuid: project(), title: 'Child', parentUuid: theme, content: 'kept' })).uuid;
      const renamed = await invoke(conn, 'chorus_edit_idea', { ideaUuid: child, title: 'Child, renamed' });
      assert.equal(renamed.structured?.title, 'Child, renamed', renamed.text);
      const after = await pm.call('chorus_get_idea', { ideaUuid: child });
      assert.equal(after.parentUuid, theme, 'the rename detached the idea from its parent');
      assert.equal(after.content, 'kept', 'the rename changed the content');
      await invoke(conn, 'chorus_edit_idea', { ideaUuid: child, detachParent: true });
      assert.equal((await pm.call('chorus_get_idea', { ideaUuid: child })).parentUuid, null, 'detachParent: true detaches');
    } finally {
      await server.close();
      await closeAll(ref);
    }
  });
});
