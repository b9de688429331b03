// The v2 TypeScript client (@modelcontextprotocol/client), on protocol 2026-07-28 (negotiated
// with server/discover) and on the 2025 handshake.
import assert from 'node:assert/strict';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { mainstreamSuite, outcome } from './mainstream.mjs';

for (const [era, mode, version] of [['modern', 'auto', '2026-07-28'], ['legacy', 'legacy', '2025-11-25']]) {
  mainstreamSuite({
    name: `@modelcontextprotocol/client 2 (${era})`,
    async connect(url, key) {
      const client = new Client({ name: 'chorus-v2-client', version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), {
        requestInit: { headers: { Authorization: 'Bearer ' + key } } }));
      assert.equal(client.getNegotiatedProtocolVersion(), version, `the ${era} client negotiated another protocol`);
      return client;
    },
    async toolNames(client) {
      const names = [];
      let cursor;
      do {
        const page = await client.listTools(cursor === undefined ? undefined : { cursor });
        names.push(...page.tools.map((t) => t.name));
        cursor = page.nextCursor;
      } while (cursor);
      return names;
    },
    call: async (client, name, args) => outcome(await client.callTool({ name, arguments: args })),
    callUnlisted: async (client, name, args) => outcome(await client.callTool({ name, arguments: args })),
    close: (client) => client.close(),
  });
}
