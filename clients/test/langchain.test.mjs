// LangChain's MCP adapters (@langchain/mcp-adapters): every tool keeps the type of every input
// property (the adapter used to erase the type of anyOf-with-null properties).
import assert from 'node:assert/strict';

import { MultiServerMCPClient } from '@langchain/mcp-adapters';

import { mainstreamSuite, outcome, thrown } from './mainstream.mjs';

/** untyped lists the properties of schema, at any depth, that have no type. */
function untyped(schema, path, out = []) {
  for (const [k, p] of Object.entries(schema?.properties ?? {})) {
    const at = `${path}.${k}`;
    if (typeof p?.type !== 'string') out.push(at);
    if (p?.type === 'object') untyped(p, at, out);
    if (p?.type === 'array' && p.items?.type === 'object') untyped(p.items, at + '[]', out);
  }
  return out;
}

mainstreamSuite({
  name: '@langchain/mcp-adapters 1.1',
  async connect(url, key) {
    const client = new MultiServerMCPClient({ throwOnLoadError: true, prefixToolNameWithServerName: false,
      mcpServers: { chorus: { transport: 'http', url, headers: { Authorization: 'Bearer ' + key } } } });
    const tools = await client.getTools();
    const lost = tools.flatMap((t) => untyped(t.schema, t.name));
    assert.deepEqual(lost, [], 'LangChain lost the type of these input properties');
    return { client, tools: new Map(tools.map((t) => [t.name, t])) };
  },
  toolNames: async (conn) => [...conn.tools.keys()],
  async call(conn, name, args) {
    const t = conn.tools.get(name);
    assert.ok(t, `${name} is not among the LangChain tools`);
    let out;
    try {
      out = await t.invoke(args);
    } catch (err) {
      return thrown(err); // a tool error is a ToolException carrying the server's text
    }
    const items = Array.isArray(out) ? out : [out];
    const text = items.map((c) => (typeof c === 'string' ? c : c?.text ?? '')).join('\n');
    return { isError: false, text };
  },
  async callUnlisted(conn, name, args) {
    const sdk = await conn.client.getClient('chorus');
    return outcome(await sdk.callTool({ name, arguments: args }));
  },
  close: (conn) => conn.client.close(),
});
