// Mastra's MCP client (@mastra/mcp 2), which speaks protocol 2026-07-28. Its tools are named
// <server>_<tool>.
import assert from 'node:assert/strict';

import { MCPClient } from '@mastra/mcp';

import { mainstreamSuite, thrown } from './mainstream.mjs';

const PREFIX = 'chorus_';
let clients = 0;

async function run(tool, args) {
  try {
    const out = await tool.execute(args, {});
    return { isError: false, text: JSON.stringify(out), structured: out };
  } catch (err) {
    return thrown(err); // a tool error is a MastraError with the server's text
  }
}

mainstreamSuite({
  name: '@mastra/mcp 2',
  async connect(url, key, keyName) {
    const mcp = new MCPClient({ id: `chorus-mastra-${keyName}-${++clients}`,
      servers: { chorus: { url: new URL(url), requestInit: { headers: { Authorization: 'Bearer ' + key } }, logger: () => {} } } });
    const tools = await mcp.listTools();
    assert.equal(mcp.getServerProtocolVersions().chorus, '2026-07-28', 'Mastra should negotiate 2026-07-28');
    const definitions = await mcp.listToolDefinitions();
    return { mcp, tools, definitions };
  },
  toolNames: async (conn) => Object.keys(conn.tools).map((n) => {
    assert.ok(n.startsWith(PREFIX), `Mastra tool ${n} lacks the server prefix`);
    return n.slice(PREFIX.length);
  }),
  async call(conn, name, args) {
    const t = conn.tools[PREFIX + name];
    assert.ok(t, `${name} is not among the Mastra tools`);
    return run(t, args);
  },
  async callUnlisted(conn, name, args) {
    // A tool definition the client did not list (as from a stale cached catalog): the checkin's
    // definition under the unlisted name.
    const base = conn.definitions.chorus?.chorus_checkin;
    assert.ok(base, `no chorus_checkin in Mastra's catalog: ${JSON.stringify(conn.definitions).slice(0, 300)}`);
    const tool = await conn.mcp.toolFromDefinition({ serverName: 'chorus', definition: { ...base, name } });
    return run(tool, args);
  },
  close: (conn) => conn.mcp.disconnect(),
});
