// sdk-client.mjs - gpumod mcp driven by an independent client: the official
// MCP TypeScript SDK (@modelcontextprotocol/sdk, the version pinned in
// tests/mcp/package.json), never gpumod's own code.  Run by
// tests/e2e/t95-mcp-sdk.sh against a daemon with fakellm services:
//
//   node tests/mcp/sdk-client.mjs SECTION...
//
// SECTION: tools, errors, resources, subscribe, mutate, switch, readonly
// (each in a session of its own: a fresh `gpumod mcp` spawned by the SDK's
// StdioClientTransport).  The scenario comes from the environment:
//
//   MCP_SDK_DIR     where install-deps put the SDK (node_modules inside)
//   GPUMOD_BIN      the gpumod to spawn as `gpumod mcp` (and for the
//                   outside change of "subscribe")
//   MCP_T_SERVICES  the configured service ids, comma-separated; the first
//                   is running when a section starts, MCP_T_SPARE is down
//   MCP_T_SPARE     a service that is down (started and stopped here)
//   MCP_T_MODES     two modes, "A,B": A is the current one, B differs
//   MCP_T_GGUF      a GGUF path for model_info (with MCP_T_GGUF_CTX, its
//                   n_ctx_train)
//   MCP_T_GPU_NAME  the (fake) GPU's name gpu_status must show
//
// The rest of the environment (GPUMOD_SOCKET, GPUMOD_CONFIG_DIR, ...) is
// handed to the server as it is: the SDK's default would keep only HOME,
// PATH and a few more.  Output: "  ok - CHECK" for each check; the first
// failure prints "  not ok - CHECK", the reason and the server's stderr
// tail, and exits 1.  The lines are indented so that tests/run does not
// count them: t95 reports one case per section.
import { pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';
import { execFile } from 'node:child_process';
import path from 'node:path';

// --- the SDK, resolved through its own package.json "exports" -------------
// ESM ignores NODE_PATH, and this file does not live under the SDK's
// node_modules: the subpath is looked up in the package's exports map
// ("import" condition) and imported by absolute URL; the SDK's own
// dependencies then resolve from where it lies.
const SDK_DIR = process.env.MCP_SDK_DIR ||
    path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../build/cache/mcp-sdk');
const PKG_DIR = path.join(SDK_DIR, 'node_modules/@modelcontextprotocol/sdk');
let PKG;
try {
    PKG = JSON.parse(readFileSync(path.join(PKG_DIR, 'package.json'), 'utf8'));
} catch (e) {
    console.log(`Bail out! no MCP SDK in ${SDK_DIR} (scripts/install-deps --test-cache build/cache): ${e.message}`);
    process.exit(1);
}
async function sdk(sub) {
    let target = PKG.exports[`./${sub}`];
    if (!target) target = { import: PKG.exports['./*'].import.replace('*', sub) };
    return import(pathToFileURL(path.join(PKG_DIR, target.import)).href);
}
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { McpError, ResourceUpdatedNotificationSchema, LATEST_PROTOCOL_VERSION } = await sdk('types.js');

// --- the scenario ----------------------------------------------------------
const env = (k, d) => {
    const v = process.env[k] ?? d;
    if (v === undefined) { console.log(`Bail out! ${k} is not set`); process.exit(1); }
    return v;
};
const GPUMOD = env('GPUMOD_BIN');
const SERVICES = env('MCP_T_SERVICES').split(',');
const SPARE = env('MCP_T_SPARE');
const [MODE_A, MODE_B] = env('MCP_T_MODES').split(',');
const GGUF = env('MCP_T_GGUF');
const GGUF_CTX = Number(env('MCP_T_GGUF_CTX'));
const GPU_NAME = env('MCP_T_GPU_NAME');
const RUNNING = SERVICES[0];

const READ_ONLY_TOOLS = ['gpu_status', 'list_services', 'list_modes', 'service_info', 'model_info',
    'simulate_mode', 'preflight', 'events', 'bench_results', 'eval_results', 'service_logs',
    'switch_status', 'search_hf_models', 'list_gguf_files', 'fetch_model_config', 'generate_preset'];
const MUTATING_TOOLS = ['switch_mode', 'start_service', 'stop_service'];
// the arguments the contract marks required (preflight takes service_id
// or mode_id: neither is required by the schema)
const REQUIRED = {
    service_info: ['service_id'], model_info: ['model_id'], simulate_mode: ['mode_id'],
    service_logs: ['service_id'], switch_status: ['switch_id'],
    switch_mode: ['mode_id'], start_service: ['service_id'], stop_service: ['service_id'],
    list_gguf_files: ['repo_id'], fetch_model_config: ['repo_id'], generate_preset: ['repo_id', 'gguf_file'],
};
const PROTOCOL = '2025-06-18';   // the newest the server speaks
const STATIC_URIS = ['gpumod://status', 'gpumod://modes', 'gpumod://services', 'gpumod://events'];
const TEMPLATES = ['gpumod://modes/{id}', 'gpumod://services/{id}'];

// --- reporting -------------------------------------------------------------
let nchecks = 0;
let current = null;   // the open session, for its stderr on a failure
class CheckFailed extends Error {}

function ok(cond, what, why) {
    if (cond) { nchecks++; console.log(`  ok - ${what}`); return; }
    console.log(`  not ok - ${what}`);
    if (why !== undefined) {
        for (const l of String(typeof why === 'string' ? why : JSON.stringify(why)).split('\n').slice(0, 30))
            console.log(`  #   ${l}`);
    }
    throw new CheckFailed(what);
}
const show = (v) => { const s = JSON.stringify(v); return s && s.length > 1500 ? s.slice(0, 1500) + '...' : s; };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// deep: some value inside V (any depth) satisfies PRED
function deep(v, pred) {
    if (pred(v)) return true;
    if (v && typeof v === 'object') return Object.values(v).some((x) => deep(x, pred));
    return false;
}
const holds = (v, x) => deep(v, (y) => y === x);

// --- sessions --------------------------------------------------------------
// open(args): a Client connected to `gpumod mcp ARGS` over stdio; every
// JSON-RPC message the server sends is kept in s.wire (the SDK hides the
// initialize result's protocolVersion)
async function open(args = []) {
    const transport = new StdioClientTransport({
        command: GPUMOD, args: ['mcp', ...args], env: { ...process.env }, stderr: 'pipe',
    });
    const s = { transport, wire: [], stderr: '', updates: [], errors: [] };
    transport.stderr.on('data', (d) => { s.stderr += d; });
    let inner;
    Object.defineProperty(transport, 'onmessage', {
        get: () => inner,
        set: (fn) => { inner = (m, extra) => { s.wire.push(m); fn(m, extra); }; },
        configurable: true,
    });
    s.client = new Client({ name: 'gpumod-sdk-check', version: PKG.version }, { capabilities: {} });
    s.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => { s.updates.push(n.params.uri); });
    s.client.onerror = (e) => { s.errors.push(e.message); };
    current = s;
    await s.client.connect(transport);
    return s;
}
async function close(s) {
    await s.client.close();
    current = null;
}

// call(s, name, args): the tool's result, checked for the contract's shape:
// a text content that is the JSON of structuredContent (not for errors)
async function call(s, name, args = {}, opts = {}) {
    const r = await s.client.callTool({ name, arguments: args }, undefined, opts);
    if (r.isError) return r;
    ok(Array.isArray(r.content) && r.content.length >= 1 && r.content[0].type === 'text',
        `${name}: a text content`, show(r));
    ok(r.structuredContent !== undefined && typeof r.structuredContent === 'object',
        `${name}: structuredContent (an object)`, show(r));
    let parsed;
    try { parsed = JSON.parse(r.content[0].text); } catch (e) { ok(false, `${name}: the text is JSON`, e.message); }
    ok(JSON.stringify(parsed) === JSON.stringify(r.structuredContent),
        `${name}: the text is the JSON of structuredContent`, `${show(parsed)}\n${show(r.structuredContent)}`);
    return r;
}
const sc = (r) => r.structuredContent;

// callErr(s, name, args): a tool that must fail; returns {code, message}
// of a JSON-RPC error, or {isError, message} of a tool error
async function callErr(s, name, args) {
    try {
        const r = await s.client.callTool({ name, arguments: args });
        ok(r.isError === true, `${name} ${show(args)}: fails`, show(r));
        const text = (r.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
        return { isError: true, message: text };
    } catch (e) {
        if (!(e instanceof McpError)) throw e;
        return { code: e.code, message: e.message };
    }
}

// --- sections --------------------------------------------------------------
async function tools() {
    const s = await open();
    const init = s.wire.find((m) => m.result && m.result.protocolVersion);
    ok(init && init.result.protocolVersion === PROTOCOL,
        `initialize: asked ${LATEST_PROTOCOL_VERSION}, the server answers its newest, ${PROTOCOL}`, show(init));
    const info = s.client.getServerVersion();
    ok(info && info.name === 'gpumod' && typeof info.version === 'string' && info.version.length > 0,
        'initialize: serverInfo name "gpumod" with a version', show(info));
    const caps = s.client.getServerCapabilities();
    ok(caps && caps.tools && caps.resources && caps.resources.subscribe === true,
        'initialize: tools and resources (subscribe) capabilities', show(caps));
    await s.client.ping();
    ok(true, 'ping');

    const { tools: list } = await s.client.listTools();
    const names = list.map((t) => t.name).sort();
    const want = [...READ_ONLY_TOOLS, ...MUTATING_TOOLS].sort();
    ok(JSON.stringify(names) === JSON.stringify(want), `tools/list: the ${want.length} tools of the contract`,
        `got ${names.join(',')}`);
    for (const t of list) {
        ok(t.inputSchema && t.inputSchema.type === 'object' && typeof t.description === 'string' && t.description &&
           typeof t.title === 'string' && t.title, `tools/list: ${t.name} has a title, a description and an object inputSchema`,
           show(t));
        const req = (t.inputSchema.required || []).slice().sort();
        ok(JSON.stringify(req) === JSON.stringify((REQUIRED[t.name] || []).slice().sort()),
            `tools/list: ${t.name} requires ${(REQUIRED[t.name] || []).join(', ') || 'nothing'}`, show(t.inputSchema));
        for (const r of req)
            ok(t.inputSchema.properties && t.inputSchema.properties[r], `tools/list: ${t.name}.${r} is described`,
                show(t.inputSchema));
        const a = t.annotations || {};
        if (READ_ONLY_TOOLS.includes(t.name)) {
            ok(a.readOnlyHint === true, `tools/list: ${t.name} is readOnlyHint`, show(a));
        } else {
            ok(a.readOnlyHint === false && typeof a.destructiveHint === 'boolean' &&
               typeof a.idempotentHint === 'boolean', `tools/list: ${t.name} says readOnly false, destructive, idempotent`,
               show(a));
        }
    }
    const ann = Object.fromEntries(list.map((t) => [t.name, t.annotations || {}]));
    ok(ann.stop_service.destructiveHint === true && ann.switch_mode.destructiveHint === true,
        'tools/list: stop_service and switch_mode are destructive (they stop engines)', show(ann));
    ok(ann.start_service.destructiveHint === false, 'tools/list: start_service is not destructive', show(ann));
    const pf = list.find((t) => t.name === 'preflight').inputSchema.properties;
    ok(pf.service_id && pf.mode_id && pf.overrides, 'tools/list: preflight takes service_id or mode_id, overrides', show(pf));

    // every read-only tool with valid arguments
    let r = await call(s, 'gpu_status');
    ok(holds(sc(r), GPU_NAME), `gpu_status: the GPU '${GPU_NAME}'`, show(sc(r)));
    ok(holds(sc(r), RUNNING), `gpu_status: the running service '${RUNNING}'`, show(sc(r)));

    r = await call(s, 'list_services');
    for (const id of SERVICES) ok(holds(sc(r), id), `list_services: '${id}'`, show(sc(r)));
    ok(holds(sc(r), 'ready') && holds(sc(r), 'down'), 'list_services: the states (ready, down)', show(sc(r)));

    r = await call(s, 'list_modes');
    ok(holds(sc(r), MODE_A) && holds(sc(r), MODE_B), `list_modes: '${MODE_A}' and '${MODE_B}'`, show(sc(r)));

    r = await call(s, 'service_info', { service_id: RUNNING });
    ok(holds(sc(r), RUNNING) && holds(sc(r), 'ready'), `service_info ${RUNNING}: its id, ready`, show(sc(r)));

    r = await call(s, 'model_info', { model_id: RUNNING });
    ok(holds(sc(r), 'llama'), `model_info ${RUNNING} (a service's model): the architecture`, show(sc(r)));
    r = await call(s, 'model_info', { model_id: GGUF, ctx: 64 });
    ok(holds(sc(r), 'llama') && holds(sc(r), GGUF_CTX), `model_info on a GGUF path: llama, n_ctx_train ${GGUF_CTX}`,
        show(sc(r)));
    ok(holds(sc(r), 64), 'model_info ctx 64: the estimate at that context', show(sc(r)));

    r = await call(s, 'simulate_mode', { mode_id: MODE_B });
    ok(holds(sc(r), MODE_B) || holds(sc(r), true), `simulate_mode ${MODE_B}: a plan`, show(sc(r)));
    r = await call(s, 'simulate_mode', {
        mode_id: MODE_B, add_services: [SPARE], context_overrides: { [SPARE]: 64 },
    });
    ok(deep(sc(r), (v) => v && typeof v === 'object' && v.simulated &&
            JSON.stringify(v.simulated.add_services) === JSON.stringify([SPARE]) &&
            v.simulated.context_overrides && v.simulated.context_overrides[SPARE] === 64),
       `simulate_mode ${MODE_B} + ${SPARE} at ctx 64: "simulated" echoes both`, show(sc(r)));

    r = await call(s, 'preflight', { service_id: SPARE });
    ok(deep(sc(r), (v) => v && typeof v === 'object' && typeof v.ok === 'boolean'), `preflight ${SPARE}: a verdict`,
        show(sc(r)));
    r = await call(s, 'preflight', { service_id: SPARE, overrides: { context_size: 64 } });
    ok(deep(sc(r), (v) => v && typeof v === 'object' && typeof v.ok === 'boolean'),
        `preflight ${SPARE} with overrides: a verdict`, show(sc(r)));

    r = await call(s, 'preflight', { mode_id: MODE_B });
    ok(deep(sc(r), (v) => v && typeof v === 'object' && typeof v.ok === 'boolean'), `preflight mode ${MODE_B}: a verdict`,
        show(sc(r)));

    r = await call(s, 'events', { limit: 3 });
    const evs = Object.values(sc(r)).find(Array.isArray) || [];
    ok(evs.length >= 1 && evs.length <= 3, 'events limit 3: 1 to 3 events', show(sc(r)));
    r = await call(s, 'events', { service_id: RUNNING, limit: 50 });
    const mine = Object.values(sc(r)).find(Array.isArray) || [];
    ok(mine.length >= 1 && mine.every((e) => e.service === RUNNING), `events service_id ${RUNNING}: only its events`,
        show(sc(r)));

    // t95 stored one load result (out_tput median 310.5) and one eval
    // result (accuracy 0.7143) for RUNNING through POST /results
    r = await call(s, 'bench_results', {});
    ok(holds(sc(r), 310.5), 'bench_results: the stored load result (median 310.5)', show(sc(r)));
    ok(!holds(sc(r), 0.7143), 'bench_results: not the eval result', show(sc(r)));
    r = await call(s, 'bench_results', { service_id: RUNNING, limit: 5 });
    ok(holds(sc(r), 310.5), `bench_results ${RUNNING} limit 5: the same`, show(sc(r)));
    r = await call(s, 'bench_results', { service_id: SPARE });
    ok(!holds(sc(r), 310.5), `bench_results ${SPARE}: not ${RUNNING}'s`, show(sc(r)));
    r = await call(s, 'eval_results', { service_id: RUNNING, limit: 5 });
    ok(holds(sc(r), 0.7143), `eval_results ${RUNNING} limit 5: the stored eval result (accuracy 0.7143)`, show(sc(r)));
    ok(!holds(sc(r), 310.5), 'eval_results: not the load result', show(sc(r)));

    r = await call(s, 'service_logs', { service_id: RUNNING, lines: 5 });
    ok(deep(sc(r), (v) => typeof v === 'string' && /\S/.test(v)), `service_logs ${RUNNING} lines 5: some text`,
        show(sc(r)));

    await close(s);
}

async function errors() {
    const s = await open();
    // the spec: an unknown tool is a protocol error, -32602
    let e = await callErr(s, 'no_such_tool', {});
    ok(e.code === -32602 && /no_such_tool/.test(e.message), 'an unknown tool: JSON-RPC error -32602 naming it', show(e));

    // arguments the schema refuses
    e = await callErr(s, 'service_info', {});
    ok((e.code === -32602 || e.isError) && /service_id/.test(e.message),
        'service_info without service_id: refused, naming service_id', show(e));
    e = await callErr(s, 'service_info', { service_id: 5 });
    ok((e.code === -32602 || e.isError) && /service_id/.test(e.message),
        'service_info with a number for service_id: refused, naming service_id', show(e));
    e = await callErr(s, 'service_logs', { service_id: RUNNING, lines: 0 });
    ok((e.code === -32602 || e.isError) && /lines/.test(e.message), 'service_logs lines 0: refused, naming lines', show(e));
    e = await callErr(s, 'events', { limit: 1001 });
    ok((e.code === -32602 || e.isError) && /limit/.test(e.message), 'events limit 1001: refused, naming limit', show(e));
    e = await callErr(s, 'preflight', {});
    ok((e.code === -32602 || e.isError) && /service_id/.test(e.message) && /mode_id/.test(e.message),
        'preflight with neither service_id nor mode_id: refused, naming both', show(e));
    e = await callErr(s, 'switch_status', { switch_id: 'x' });
    ok((e.code === -32602 || e.isError) && /switch_id/.test(e.message), 'switch_status switch_id "x": refused', show(e));

    // valid arguments, a refusal from the daemon: a tool error (isError)
    e = await callErr(s, 'service_info', { service_id: 'nope' });
    ok(e.isError && /nope/.test(e.message), "service_info 'nope': isError naming it", show(e));
    e = await callErr(s, 'simulate_mode', { mode_id: 'nope' });
    ok(e.isError && /nope/.test(e.message), "simulate_mode 'nope': isError naming it", show(e));
    e = await callErr(s, 'simulate_mode', { mode_id: MODE_B, add_services: ['ghost'] });
    ok(e.isError && /ghost/.test(e.message), "simulate_mode adding 'ghost': isError naming it", show(e));
    e = await callErr(s, 'model_info', { model_id: '/nonexistent/x.gguf' });
    ok(e.isError && /nonexistent/.test(e.message), 'model_info on a missing file: isError naming it', show(e));
    e = await callErr(s, 'switch_status', { switch_id: 999999 });
    ok(e.isError && /999999/.test(e.message), 'switch_status 999999: isError naming it', show(e));

    // the session still works after all of that
    await s.client.ping();
    ok(true, 'ping after the errors');
    await close(s);
}

function checkContents(uri, res) {
    const cs = res.contents || [];
    ok(cs.length === 2, `resources/read ${uri}: two contents`, show(res));
    const j = cs.find((c) => c.mimeType === 'application/json');
    const m = cs.find((c) => c.mimeType === 'text/markdown');
    ok(j && m && j.uri === uri && m.uri === uri, `resources/read ${uri}: application/json and text/markdown, same uri`,
        show(cs.map((c) => ({ uri: c.uri, mimeType: c.mimeType }))));
    let parsed;
    try { parsed = JSON.parse(j.text); } catch (err) { ok(false, `resources/read ${uri}: the JSON parses`, err.message); }
    ok(typeof m.text === 'string' && m.text.trim().length > 0, `resources/read ${uri}: Markdown text`, show(m));
    return { json: parsed, md: m.text };
}

async function resources() {
    const s = await open();
    const { resources: list } = await s.client.listResources();
    const uris = list.map((r) => r.uri);
    for (const u of STATIC_URIS) ok(uris.includes(u), `resources/list: ${u}`, show(uris));
    for (const r of list) ok(typeof r.name === 'string' && r.name, `resources/list: ${r.uri} has a name`, show(r));
    const { resourceTemplates: tpl } = await s.client.listResourceTemplates();
    const tu = tpl.map((t) => t.uriTemplate);
    for (const u of TEMPLATES) ok(tu.includes(u), `resources/templates/list: ${u}`, show(tu));

    const read = async (uri) => checkContents(uri, await s.client.readResource({ uri }));
    let c = await read('gpumod://status');
    ok(holds(c.json, GPU_NAME) && c.md.includes(RUNNING), 'gpumod://status: the GPU, the running service', c.md);
    c = await read('gpumod://modes');
    ok(holds(c.json, MODE_A) && c.md.includes(MODE_B), 'gpumod://modes: both modes', c.md);
    c = await read(`gpumod://modes/${MODE_B}`);
    ok(holds(c.json, MODE_B) && c.md.includes(MODE_B), `gpumod://modes/${MODE_B}`, c.md);
    c = await read('gpumod://services');
    ok(SERVICES.every((id) => holds(c.json, id) && c.md.includes(id)), 'gpumod://services: every service', c.md);
    c = await read(`gpumod://services/${RUNNING}`);
    ok(holds(c.json, RUNNING) && holds(c.json, 'ready') && c.md.includes(RUNNING), `gpumod://services/${RUNNING}`, c.md);
    c = await read('gpumod://events');
    ok(deep(c.json, (v) => Array.isArray(v) && v.length > 0), 'gpumod://events: some events', show(c.json));
    // every listed resource reads, not only those named by the contract
    for (const u of uris.filter((x) => !STATIC_URIS.includes(x))) await read(u);

    for (const bad of ['gpumod://nope', 'gpumod://services/nope']) {
        let e;
        try { await s.client.readResource({ uri: bad }); } catch (err) { e = err; }
        ok(e instanceof McpError && (e.code === -32002 || e.code === -32602) && /nope/.test(e.message),
            `resources/read ${bad}: error -32002 (or -32602) naming it`, e ? `${e.code} ${e.message}` : 'no error');
    }
    await close(s);
}

// run gpumod ARGS outside the MCP session (another client changing things)
function gpumod(args) {
    return new Promise((resolve, reject) => {
        execFile(GPUMOD, args, { env: process.env, timeout: 30000 }, (err, stdout, stderr) =>
            err ? reject(new Error(`gpumod ${args.join(' ')}: ${err.message}\n${stderr}`)) : resolve(stdout));
    });
}
async function until(what, ms, pred) {
    const end = Date.now() + ms * Number(process.env.GPUMOD_TEST_TIME_SCALE || 1);
    while (Date.now() < end) { if (await pred()) return true; await sleep(25); }
    return false;
}

async function subscribe() {
    const s = await open();
    const uri = `gpumod://services/${SPARE}`;
    await s.client.subscribeResource({ uri });
    await s.client.subscribeResource({ uri: 'gpumod://status' });
    ok(true, `resources/subscribe ${uri} and gpumod://status`);
    await sleep(200);
    ok(!s.updates.includes(uri), `no update for ${uri} while nothing changes`, show(s.updates));
    await gpumod(['service', 'start', SPARE]);
    ok(await until('update', 10000, () => s.updates.includes(uri)),
        `gpumod service start ${SPARE} (outside): notifications/resources/updated ${uri}`, show(s.updates));
    ok(s.updates.includes('gpumod://status'), 'and for gpumod://status', show(s.updates));
    const c = checkContents(uri, await s.client.readResource({ uri }));
    ok(holds(c.json, 'ready'), `${uri} reads ready after the update`, show(c.json));

    await s.client.unsubscribeResource({ uri });
    await s.client.unsubscribeResource({ uri: 'gpumod://status' });
    s.updates.length = 0;
    await gpumod(['service', 'stop', SPARE]);
    await sleep(500);
    ok(!s.updates.includes(uri), `after unsubscribe: no update for ${uri}`, show(s.updates));
    await close(s);
}

const stateOf = async (s, id) => {
    const r = await call(s, 'service_info', { service_id: id });
    let st;
    deep(sc(r), (v) => { if (v && typeof v === 'object' && v.id === id && typeof v.state === 'string') st = v.state; return false; });
    return st;
};

async function mutate() {
    const s = await open();
    ok(await stateOf(s, SPARE) === 'down', `${SPARE} is down to begin with`);
    let r = await call(s, 'start_service', { service_id: SPARE });
    ok(holds(sc(r), SPARE), `start_service ${SPARE} (wait default true): answers`, show(sc(r)));
    ok(await stateOf(s, SPARE) === 'ready', `${SPARE} is ready when start_service answers`);
    r = await call(s, 'start_service', { service_id: SPARE });
    ok(await stateOf(s, SPARE) === 'ready', `start_service ${SPARE} again: still ready (idempotent)`, show(sc(r)));
    r = await call(s, 'stop_service', { service_id: SPARE });
    ok(await stateOf(s, SPARE) === 'down', `stop_service ${SPARE}: down`, show(sc(r)));
    r = await call(s, 'start_service', { service_id: SPARE, wait: false });
    ok(await until('ready', 10000, async () => (await stateOf(s, SPARE)) === 'ready'),
        `start_service ${SPARE} wait false: answers at once, ready soon after`, show(sc(r)));
    await call(s, 'stop_service', { service_id: SPARE });
    ok(await stateOf(s, SPARE) === 'down', `stop_service ${SPARE}: down again`);
    const e = await callErr(s, 'start_service', { service_id: 'nope' });
    ok(e.isError && /nope/.test(e.message), "start_service 'nope': isError naming it", show(e));
    await close(s);
}

const switchIdOf = (v) => {
    let id;
    deep(v, (x) => {
        if (x && typeof x === 'object' && Number.isInteger(x.switch_id)) id ??= x.switch_id;
        return false;
    });
    if (id === undefined && Number.isInteger(v.id)) id = v.id;
    return id;
};

async function switchSection() {
    const s = await open();
    const progress = [];
    const w0 = s.wire.length;
    let r = await call(s, 'switch_mode', { mode_id: MODE_B }, {
        onprogress: (p) => progress.push(p), timeout: 60000,
    });
    ok(holds(sc(r), 'committed'), `switch_mode ${MODE_B}: committed`, show(sc(r)));
    // what the server sent (the wire) ...
    const sent = s.wire.slice(w0);
    const reply = sent.findIndex((m) => m.id !== undefined && m.result);
    const notes = sent.filter((m) => m.method === 'notifications/progress').map((m) => m.params);
    const after = sent.slice(reply + 1).filter((m) => m.method === 'notifications/progress');
    // A -> B runs plan, start (400 ms), verify-healthy and commit: a note
    // per phase gives at least two
    ok(notes.length >= 2, `switch_mode with a progress token: ${notes.length} notifications/progress sent (want one a phase)`,
        show(sent));
    ok(after.length === 0, 'none after the result', show(after));
    ok(notes.every((p) => p.progressToken === notes[0].progressToken && typeof p.progressToken === 'number'),
        'each echoes the token as given (the SDK sends a number)', show(notes));
    ok(notes.every((p, i) => typeof p.progress === 'number' && (i === 0 || p.progress > notes[i - 1].progress)),
        'the progress values increase', show(notes));
    ok(notes.every((p) => typeof p.message === 'string' && p.message.length > 0), 'each with a message', show(notes));
    // ... and what the SDK handed to onprogress: those that arrived in the
    // same read as the result are dropped by the SDK (it deletes the
    // handler on the result first: typescript-sdk issue 2580), so at least
    // the ones sent while the slow start ran
    ok(progress.length >= 1, `the SDK's onprogress got ${progress.length} of them`, show(progress));
    const lost = s.errors.filter((m) => /progress notification for an unknown token/.test(m)).length;
    if (lost) console.log(`  # the SDK dropped ${lost} progress notification(s) that came with the result`);
    ok(s.errors.length === lost, 'no other client-side protocol error', show(s.errors));
    const sid1 = switchIdOf(sc(r));
    ok(Number.isInteger(sid1), 'switch_mode: the switch id', show(sc(r)));
    r = await call(s, 'switch_status', { switch_id: sid1 });
    ok(holds(sc(r), 'committed') && holds(sc(r), MODE_B), `switch_status ${sid1}: committed to ${MODE_B}`, show(sc(r)));

    r = await call(s, 'switch_mode', { mode_id: MODE_A, wait: false });
    const sid2 = switchIdOf(sc(r));
    ok(Number.isInteger(sid2) && sid2 > sid1, `switch_mode ${MODE_A} wait false: a new switch id at once`, show(sc(r)));
    let last;
    ok(await until('committed', 15000, async () => {
        last = sc(await call(s, 'switch_status', { switch_id: sid2 }));
        return holds(last, 'committed');
    }), `switch_status ${sid2}: committed within 15 s`, show(last));
    r = await call(s, 'list_modes');
    ok(deep(sc(r), (v) => v && typeof v === 'object' && v.id === MODE_A && v.current === true) ||
       deep(sc(r), (v) => v && typeof v === 'object' && v.current === MODE_A),
       `list_modes: ${MODE_A} is current again`, show(sc(r)));
    await close(s);
}

async function readonly() {
    const s = await open(['--read-only']);
    const { tools: list } = await s.client.listTools();
    const names = list.map((t) => t.name).sort();
    ok(JSON.stringify(names) === JSON.stringify(READ_ONLY_TOOLS.slice().sort()),
        '--read-only: tools/list has the read-only tools only', names.join(','));
    ok(list.every((t) => t.annotations && t.annotations.readOnlyHint === true), '--read-only: each is readOnlyHint');
    for (const [name, args] of [['switch_mode', { mode_id: MODE_B }], ['start_service', { service_id: SPARE }],
        ['stop_service', { service_id: RUNNING }]]) {
        const e = await callErr(s, name, args);
        ok(e.code === -32602 || e.isError, `--read-only: ${name} fails`, show(e));
        ok(new RegExp(`${name}|read.only`).test(e.message), `--read-only: the error names ${name} or read-only`, show(e));
    }
    ok(await stateOf(s, SPARE) === 'down' && await stateOf(s, RUNNING) === 'ready',
        '--read-only: nothing changed');
    await call(s, 'gpu_status');
    await close(s);
}

const SECTIONS = { tools, errors, resources, subscribe, mutate, switch: switchSection, readonly };
const want = process.argv.slice(2);
if (want.length === 0 || want.some((w) => !SECTIONS[w])) {
    console.log(`usage: node sdk-client.mjs SECTION... (${Object.keys(SECTIONS).join(', ')})`);
    process.exit(2);
}
console.log(`  # @modelcontextprotocol/sdk ${PKG.version}, node ${process.version}`);
try {
    for (const w of want) {
        console.log(`  # ${w}`);
        await SECTIONS[w]();
    }
} catch (e) {
    if (!(e instanceof CheckFailed)) console.log(`  not ok - ${e instanceof McpError ? e.message : e.stack || e}`);
    if (current) {
        const tail = current.stderr.trimEnd().split('\n').slice(-15).join('\n');
        if (tail.trim()) console.log(tail.replace(/^/gm, '  #   server: '));
        await current.client.close().catch(() => {});
    }
    process.exit(1);
}
console.log(`  ${nchecks} checks passed`);
process.exit(0);
