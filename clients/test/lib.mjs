// Shared helpers of the TypeScript-client conformance suite: where the stack is, one connected
// official-SDK client per agent key, and a tools/call wrapper that checks every result the way a
// strict MCP client would.
import assert from 'node:assert/strict';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const HOW_TO_RUN =
  'run this suite through `go test ./cmd/chorus -run TestTypeScriptClients` (or `make test`), ' +
  'which starts a chorus dev stack, creates the agents and sets CHORUS_URL and CHORUS_CLIENT_KEYS';

export const KEY_NAMES = ['admin', 'pm', 'developer', 'custom'];

/**
 * @typedef {{name: string, key: string, presets: string[], permissions: string[]}} KeyEntry
 * @typedef {{url: string, keys: KeyEntry[], key: Record<string, KeyEntry>}} Stack
 */

/**
 * stack reads the endpoint and the agent keys the Go driver passes in CHORUS_URL and
 * CHORUS_CLIENT_KEYS (a JSON array of {name, key, presets, permissions}, one per name in
 * KEY_NAMES). It throws, saying how to run the suite, when they are missing or malformed.
 * @returns {Stack}
 */
export function stack() {
  const url = process.env.CHORUS_URL;
  const raw = process.env.CHORUS_CLIENT_KEYS;
  if (!url || !raw) {
    throw new Error(`CHORUS_URL and CHORUS_CLIENT_KEYS are not set: ${HOW_TO_RUN}`);
  }
  let keys;
  try {
    keys = JSON.parse(raw);
  } catch (err) {
    throw new Error(`CHORUS_CLIENT_KEYS is not JSON (${err.message}): ${HOW_TO_RUN}`);
  }
  if (!Array.isArray(keys)) throw new Error(`CHORUS_CLIENT_KEYS must be a JSON array: ${HOW_TO_RUN}`);
  const key = {};
  for (const k of keys) {
    if (typeof k?.name !== 'string' || typeof k.key !== 'string' || !k.key.startsWith('cho_') ||
      !Array.isArray(k.presets) || !Array.isArray(k.permissions)) {
      throw new Error(`CHORUS_CLIENT_KEYS entry ${JSON.stringify(k)} is not {name, key: "cho_...", presets: [], permissions: []}`);
    }
    key[k.name] = k;
  }
  const missing = KEY_NAMES.filter((n) => !key[n]);
  if (missing.length > 0) throw new Error(`CHORUS_CLIENT_KEYS has no entry named ${missing.join(', ')}: ${HOW_TO_RUN}`);
  return { url, keys, key };
}

/**
 * anyResult is a result schema for Client.request that accepts whatever the server answers. The
 * SDK parses results with a Zod schema; an object with a Zod-3-style safeParse is all it needs.
 */
export const anyResult = { safeParse: (data) => ({ success: true, data }) };

/**
 * newClient connects the official SDK client to url with a bearer key (initialize included). It
 * selects every toolset unless headers says otherwise (docs/rules.md §3.3), so the suites reach
 * every tool the key's permissions grant.
 * @param {string} url
 * @param {string} key
 * @param {string} [clientName]
 * @param {Record<string, string>} [headers] more request headers, e.g. {'X-Chorus-Readonly': 'true'}
 * @returns {Promise<Client>}
 */
export async function newClient(url, key, clientName = 'chorus-ts-conformance', headers = { 'X-Chorus-Toolsets': 'all' }) {
  const client = new Client({ name: clientName, version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: 'Bearer ' + key, ...headers } },
  });
  await client.connect(transport);
  return client;
}

/**
 * allToolsetsUrl is the stack's endpoint in the URL form that selects every toolset
 * (`/api/mcp/x/all`, docs/rules.md §3.3): for clients whose headers a suite does not set.
 * @param {Stack} s
 */
export function allToolsetsUrl(s) {
  return `${s.url.replace(/\/+$/, '')}/x/all`;
}

const validator = new AjvJsonSchemaValidator();

/**
 * Agent is one agent key's connection: the SDK client plus the tools tools/list gave it, so
 * that every call can be checked against that tool's outputSchema.
 */
export class Agent {
  /** @param {string} name @param {Client} client */
  constructor(name, client) {
    this.name = name;
    this.client = client;
    /** @type {Map<string, object>} tool name -> tool as listed */
    this.tools = new Map();
    /** @type {Set<string>} tools called successfully through call() */
    this.called = new Set();
    this.validators = new Map();
  }

  /**
   * connect opens a client for one key of the stack.
   * @param {Stack} s
   * @param {string} name one of KEY_NAMES
   */
  static async connect(s, name) {
    return new Agent(name, await newClient(s.url, s.key[name].key, `chorus-ts-conformance-${name}`));
  }

  async close() {
    await this.client.close();
  }

  /**
   * listTools pages through tools/list with the SDK's listTools(), following nextCursor, and
   * returns every tool. When the SDK rejects a page (its Zod schema for tools/list), the error
   * names each offending tool and schema path, read from the raw page.
   * @returns {Promise<object[]>}
   */
  async listTools() {
    const tools = [];
    const cursors = new Set();
    let cursor;
    for (let page = 1; ; page++) {
      let res;
      try {
        res = await this.client.listTools(cursor === undefined ? undefined : { cursor });
      } catch (err) {
        throw new Error(`tools/list page ${page} for the ${this.name} key: the TypeScript SDK refused the result:\n` +
          await this.#explainListFailure(err, cursor), { cause: err });
      }
      tools.push(...res.tools);
      if (!res.nextCursor) break;
      assert.ok(!cursors.has(res.nextCursor), `tools/list returned the cursor ${JSON.stringify(res.nextCursor)} twice (a paging loop)`);
      assert.ok(page < 100, 'tools/list gave more than 100 pages');
      cursors.add(res.nextCursor);
      cursor = res.nextCursor;
    }
    // The SDK caches output-schema validators per listTools() page, replacing the previous
    // page's; cache them for the whole list so callTool() validates every tool.
    this.client.cacheToolMetadata(tools);
    this.tools = new Map(tools.map((t) => [t.name, t]));
    assert.equal(this.tools.size, tools.length, `tools/list for the ${this.name} key lists a tool twice`);
    return tools;
  }

  async #explainListFailure(err, cursor) {
    const issues = Array.isArray(err?.issues) ? err.issues : null;
    if (!issues) return String(err?.stack ?? err);
    let raw;
    try {
      raw = await this.client.request({ method: 'tools/list', params: cursor === undefined ? {} : { cursor } }, anyResult);
    } catch (e) {
      return `${err.message}\n(and fetching the raw page to explain it failed: ${e})`;
    }
    const lines = issues.map((issue) => {
      const [top, index, ...rest] = issue.path;
      let where = issue.path.join('.');
      let value;
      if (top === 'tools' && Number.isInteger(index) && raw?.tools?.[index]) {
        where = `tool ${raw.tools[index].name}: ${rest.join('.')}`;
        value = rest.reduce((v, k) => (v == null ? v : v[k]), raw.tools[index]);
      }
      const shown = value === undefined ? '' : ` (the server sent ${JSON.stringify(value).slice(0, 120)})`;
      const hint = typeof value === 'boolean'
        ? '; the SDK accepts only schema objects here, so a bare boolean schema makes the whole tools/list fail'
        : '';
      return `  - ${where}: ${issue.message}${shown}${hint}`;
    });
    return lines.join('\n');
  }

  /**
   * call runs a tool that must succeed and checks its result:
   *   - isError is not true;
   *   - if the tool lists an outputSchema, structuredContent is present and valid against it
   *     (the SDK's own AjvJsonSchemaValidator; callTool() also validates and throws);
   *   - the text content is JSON equal to structuredContent (chorus_pm_create_proposal may add
   *     a line starting with "\nNote:" after the JSON).
   * It returns structuredContent, or the text when the tool has no outputSchema.
   * @param {string} name
   * @param {object} [args]
   */
  async call(name, args = {}) {
    const what = `${name}(${JSON.stringify(args)}) by the ${this.name} key`;
    let res;
    try {
      res = await this.client.callTool({ name, arguments: args });
    } catch (err) {
      throw new Error(`${what}: the TypeScript SDK threw instead of returning a result: ${err.message}`, { cause: err });
    }
    const text = textOf(res);
    assert.notEqual(res.isError, true, `${what}: expected success, got isError: ${text}`);
    const tool = this.tools.get(name);
    assert.ok(tool, `${what}: the tool is not in this key's tools/list (call listTools() first)`);

    if (tool.outputSchema) {
      assert.ok(res.structuredContent !== undefined && res.structuredContent !== null,
        `${what}: the tool has an outputSchema but the result has no structuredContent`);
      let check = this.validators.get(name);
      if (!check) {
        check = validator.getValidator(tool.outputSchema);
        this.validators.set(name, check);
      }
      const v = check(res.structuredContent);
      assert.ok(v.valid, `${what}: structuredContent does not match the outputSchema: ${v.errorMessage}\n` +
        `structuredContent: ${JSON.stringify(res.structuredContent).slice(0, 600)}`);

      let body = text;
      if (name === 'chorus_pm_create_proposal') {
        const i = text.indexOf('\nNote:');
        if (i >= 0) body = text.slice(0, i);
      }
      let parsed;
      try {
        parsed = JSON.parse(body);
      } catch (err) {
        assert.fail(`${what}: the text content is not JSON (${err.message}): ${text.slice(0, 300)}`);
      }
      assert.deepEqual(parsed, res.structuredContent, `${what}: the text content and structuredContent differ`);
    }
    this.called.add(name);
    return tool.outputSchema ? res.structuredContent : text;
  }

  /**
   * fail runs a tool that must fail as a tool error and returns the error text: the result has
   * isError true and a text content (a thrown JSON-RPC error fails the assertion).
   * @param {string} name
   * @param {object} [args]
   * @returns {Promise<string>}
   */
  async fail(name, args = {}) {
    const what = `${name}(${JSON.stringify(args)}) by the ${this.name} key`;
    let res;
    try {
      res = await this.client.callTool({ name, arguments: args });
    } catch (err) {
      throw new Error(`${what}: expected a result with isError: true, the SDK threw: ${err.message}`, { cause: err });
    }
    const text = textOf(res);
    assert.equal(res.isError, true, `${what}: expected isError: true, got success: ${text.slice(0, 300)}`);
    assert.ok(text.length > 0, `${what}: the error result has no text content: ${JSON.stringify(res)}`);
    return text;
  }
}

/** textOf joins the text items of a tool result's content. */
export function textOf(res) {
  return (res?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

/**
 * connectAll connects one Agent per key of the stack and lists its tools.
 * @param {Stack} s
 * @param {string[]} names
 * @returns {Promise<Record<string, Agent>>}
 */
export async function connectAll(s, names = KEY_NAMES) {
  const out = {};
  for (const n of names) {
    out[n] = await Agent.connect(s, n);
  }
  return out;
}

/** closeAll closes the agents' clients, ignoring those that never connected. */
export async function closeAll(agents) {
  for (const a of Object.values(agents ?? {})) {
    await a?.close().catch(() => {});
  }
}

/** A document body long enough for proposal validation (drafts need 100+ characters). */
export const DOC = 'This document explains the feature, the users it serves, and what success looks like, ' +
  'in enough words to pass validation.';
