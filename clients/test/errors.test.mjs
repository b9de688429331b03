// Errors as the official TypeScript SDK sees them. Tool errors are results with isError: true and
// a text content (Agent.fail); protocol errors are JSON-RPC errors the SDK throws as McpError; a
// bad key is refused with HTTP 401 before any MCP exchange.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { anyResult, closeAll, connectAll, newClient, stack } from './lib.mjs';

const s = stack();

describe('errors', () => {
  let agents;
  let admin, dev;

  before(async () => {
    agents = await connectAll(s, ['admin', 'developer']);
    ({ admin, developer: dev } = agents);
    for (const a of Object.values(agents)) await a.listTools();
  });
  after(() => closeAll(agents));

  test('a missing required argument is an input validation error', async () => {
    const text = await admin.fail('chorus_get_task', {});
    assert.match(text, /^Input validation error/, `chorus_get_task without taskUuid: expected "Input validation error ...", got ${JSON.stringify(text)}`);
    assert.match(text, /taskUuid/, `the error should name the missing field taskUuid, got ${JSON.stringify(text)}`);
  });

  test('an illegal transition is refused with the current state', async () => {
    const project = await admin.call('chorus_admin_create_project', { name: 'TS client errors' });
    const created = await admin.call('chorus_create_tasks', {
      projectUuid: project.uuid,
      tasks: [{ title: 'Not started', acceptanceCriteriaItems: [{ description: 'works' }] }],
    });
    const task = created.tasks?.[0]?.uuid;
    assert.ok(task, `chorus_create_tasks: expected tasks[0].uuid, got ${JSON.stringify(created)}`);
    const text = await admin.fail('chorus_admin_verify_task', { taskUuid: task });
    assert.match(text, /open/, `verifying an open task: the refusal should name the current status "open", got ${JSON.stringify(text)}`);
    const after = await admin.call('chorus_get_task', { taskUuid: task });
    assert.equal(after.status, 'open', 'the refused verify changed the task');
  });

  test('a tool the key does not hold answers like an unknown tool', async () => {
    assert.ok(!dev.tools.has('chorus_admin_create_project'), 'the developer key must not list chorus_admin_create_project');
    const text = await dev.fail('chorus_admin_create_project', { name: 'not allowed' });
    assert.equal(text, 'Tool chorus_admin_create_project not found');
  });

  test('an unknown tool is a tool error', async () => {
    const text = await admin.fail('chorus_no_such_tool', {});
    assert.equal(text, 'Tool chorus_no_such_tool not found');
  });

  test('an unknown method is a JSON-RPC error -32601', async () => {
    let res;
    try {
      res = await admin.client.request({ method: 'no/such/method', params: {} }, anyResult);
    } catch (err) {
      if (err instanceof StreamableHTTPError) {
        assert.fail(`unknown method: expected a JSON-RPC error response with code -32601, but the server answered ` +
          `HTTP ${err.code} without a JSON-RPC body (${err.message.trim()})`);
      }
      assert.ok(err instanceof McpError, `unknown method: expected an McpError, got ${err?.constructor?.name}: ${err?.message}`);
      assert.equal(typeof err.code, 'number', `McpError.code should be numeric, got ${JSON.stringify(err.code)}`);
      assert.equal(err.code, -32601, `unknown method: expected code -32601 (method not found), got ${err.code}: ${err.message}`);
      return;
    }
    assert.fail(`unknown method: expected a JSON-RPC error, got the result ${JSON.stringify(res)}`);
  });

  test('a bad key cannot connect: HTTP 401', async () => {
    const bad = 'cho_' + 'A'.repeat(43);
    let client;
    try {
      client = await newClient(s.url, bad, 'chorus-ts-conformance-bad-key');
    } catch (err) {
      const said = `${err?.code ?? ''} ${err?.message ?? err}`;
      assert.ok(err.code === 401 || /\b401\b/.test(err.message), `expected an error with HTTP 401, got ${said}`);
      assert.match(err.message, /Invalid API key/, `the 401 body should say why, got ${said}`);
      return;
    }
    await client.close();
    assert.fail('a client with an unknown key connected');
  });
});
