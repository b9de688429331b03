// The scenario every mainstream MCP client library runs against the stack (issue 19, item 6):
// for the admin, pm and developer keys, the library lists exactly the tools the key has (the
// official SDK's tools/list is the reference), calls chorus_checkin, creates something and
// reads it back, and gets a readable refusal for a bad argument and for a tool the key does not
// have. No model is involved: each library's own tool objects are called directly, with the
// arguments a model would produce. Both sides select every toolset (the libraries through the
// URL form /api/mcp/x/all, the reference through the X-Chorus-Toolsets header), so the tools
// compared are all those the key's permissions grant.
//
// A library is an adapter (see mainstreamSuite); each *.test.mjs file next to this one wires
// one library in and adds the checks peculiar to it.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';

import { allToolsetsUrl, closeAll, connectAll, stack } from './lib.mjs';

export const PRESET_KEYS = ['admin', 'pm', 'developer'];

/**
 * @typedef {{isError: boolean | undefined, text: string, structured?: any}} Outcome
 *   isError is undefined when the library does not say (it hands the model the text only).
 * @typedef {object} Library
 * @property {string} name
 * @property {(url: string, key: string, keyName: string) => Promise<any>} connect
 * @property {(conn: any) => Promise<string[]>} toolNames names as the server calls them
 * @property {(conn: any, tool: string, args: object) => Promise<Outcome>} call through the
 *   library's tool object for a listed tool
 * @property {(conn: any, tool: string, args: object) => Promise<Outcome>} callUnlisted the
 *   library's way to call a tool it did not list
 * @property {(conn: any) => Promise<void>} close
 */

/** outcome reads an MCP CallToolResult as the suite compares results. */
export function outcome(res) {
  const text = (res?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  return { isError: res?.isError === true, text, structured: res?.structuredContent };
}

/** thrown is the outcome of a library that throws a tool error. */
export function thrown(err) {
  return { isError: true, text: String(err?.message ?? err) };
}

/** structuredOf is the result object of a successful call, from structuredContent or the JSON text. */
function structuredOf(o, what) {
  assert.notEqual(o.isError, true, `${what}: expected success, got an error: ${o.text}`);
  if (o.structured !== undefined && o.structured !== null) return o.structured;
  try {
    return JSON.parse(o.text);
  } catch (err) {
    assert.fail(`${what}: the result is neither structured nor JSON text (${err.message}): ${o.text.slice(0, 300)}`);
  }
}

/** The tool each key calls that it does not have: a withheld tool where there is one. */
const UNLISTED = {
  admin: 'chorus_no_such_tool',
  pm: 'chorus_admin_approve_proposal',
  developer: 'chorus_admin_create_project',
};

/**
 * mainstreamSuite runs the common scenario for lib, once per preset key.
 * @param {Library} lib
 * @param {(ctx: {s: object, lib: Library, project: () => string}) => void} [extra] more tests
 *   inside the same describe block
 */
export function mainstreamSuite(lib, extra) {
  const s = stack();
  describe(lib.name, () => {
    let reference; // the official SDK client per key: what tools/list gives
    let project;
    before(async () => {
      reference = await connectAll(s, PRESET_KEYS);
      for (const a of Object.values(reference)) await a.listTools();
      project = (await reference.admin.call('chorus_admin_create_project', { name: `${lib.name} client` })).uuid;
    });
    after(() => closeAll(reference));

    for (const key of PRESET_KEYS) {
      test(`${key} key: tools, check-in, a create and a read, readable refusals`, async () => {
        const conn = await lib.connect(allToolsetsUrl(s), s.key[key].key, key);
        try {
          const want = [...reference[key].tools.keys()].sort();
          const got = (await lib.toolNames(conn)).sort();
          assert.deepEqual(got, want, `${lib.name} lists other tools than tools/list gives the ${key} key`);

          const checkin = structuredOf(await lib.call(conn, 'chorus_checkin', {}), `${key}: chorus_checkin`);
          assert.equal(typeof checkin.agent?.uuid, 'string', `${key}: chorus_checkin names no agent: ${JSON.stringify(checkin).slice(0, 300)}`);

          await createAndRead(lib, conn, key, project);

          const bad = await lib.call(conn, 'chorus_add_comment', { targetType: 'task', targetUuid: randomUUID(), content: '   ' });
          assert.notEqual(bad.isError, false, `${key}: a blank comment was accepted: ${bad.text}`);
          assert.match(bad.text, /Input validation error: content must not be blank/,
            `${key}: a blank comment should be refused in words, got ${JSON.stringify(bad.text)}`);

          const name = UNLISTED[key];
          assert.ok(!want.includes(name), `${key} key lists ${name}; pick another unlisted tool`);
          const hidden = await lib.callUnlisted(conn, name, {});
          assert.notEqual(hidden.isError, false, `${key}: ${name} answered as a success: ${hidden.text}`);
          assert.match(hidden.text, new RegExp(`^Tool ${name} not found|toolset`),
            `${key}: calling ${name} should be refused in one sentence, got ${JSON.stringify(hidden.text)}`);
        } finally {
          await lib.close(conn);
        }
      });
    }
    extra?.({ s, lib, project: () => project });
  });
}

/** createAndRead makes one entity the key may make, through the library, and reads it back. */
async function createAndRead(lib, conn, key, project) {
  const get = async (tool, args) => structuredOf(await lib.call(conn, tool, args), `${key}: ${tool}`);
  switch (key) {
    case 'admin': {
      const p = await get('chorus_admin_create_project', { name: `${lib.name} admin project` });
      const read = await get('chorus_get_project', { projectUuid: p.uuid });
      assert.equal(read.name, `${lib.name} admin project`);
      break;
    }
    case 'pm': {
      const idea = await get('chorus_pm_create_idea', { projectUuid: project, title: `${lib.name} idea` });
      const read = await get('chorus_get_idea', { ideaUuid: idea.uuid });
      assert.equal(read.title, `${lib.name} idea`);
      break;
    }
    case 'developer': {
      const created = await get('chorus_create_tasks', { projectUuid: project, tasks: [
        { title: `${lib.name} task`, acceptanceCriteriaItems: [{ description: 'it works' }] }] });
      const uuid = created.tasks?.[0]?.uuid;
      assert.ok(uuid, `developer: chorus_create_tasks returned no task: ${JSON.stringify(created).slice(0, 300)}`);
      const read = await get('chorus_get_task', { taskUuid: uuid });
      assert.equal(read.title, `${lib.name} task`);
      break;
    }
  }
}
