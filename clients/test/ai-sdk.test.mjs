// The Vercel AI SDK's MCP client (@ai-sdk/mcp with ai 7), which speaks protocol 2026-07-28.
import assert from 'node:assert/strict';

import { createMCPClient } from '@ai-sdk/mcp';

import { mainstreamSuite, outcome } from './mainstream.mjs';

mainstreamSuite({
  name: '@ai-sdk/mcp 2 (ai 7)',
  async connect(url, key) {
    const client = await createMCPClient({ clientName: 'chorus-ai-sdk', transport: { type: 'http', url, headers: { Authorization: 'Bearer ' + key } } });
    assert.equal(client.initializeResult?.protocolVersion, '2026-07-28', 'the AI SDK client should negotiate 2026-07-28');
    return { client, tools: await client.tools() };
  },
  toolNames: async (conn) => Object.keys(conn.tools),
  async call(conn, name, args) {
    const t = conn.tools[name];
    assert.ok(t, `${name} is not among the AI SDK tools`);
    return outcome(await t.execute(args, { toolCallId: 'call-' + name, messages: [] }));
  },
  callUnlisted: async (conn, name, args) => outcome(await conn.client.callTool({ name, arguments: args })),
  close: (conn) => conn.client.close(),
});
