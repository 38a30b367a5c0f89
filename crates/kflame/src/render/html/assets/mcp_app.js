/* kflame viewer, MCP Apps view: the page an AI assistant's host shows in a sandboxed iframe
 * for `kflame mcp`'s profile tools (resource ui://kflame/flamegraph). The data comes from
 * the host, not the page: the View side of the MCP Apps protocol (JSON-RPC 2.0 over
 * postMessage with window.parent, protocol 2026-01-26) is spoken here in a few lines:
 * `ui/initialize`, then `ui/notifications/initialized`; each
 * `ui/notifications/tool-result` carries a CallToolResult whose `_meta["kflame/view"]` is
 * {profile, nodes} (what `kflame::render::html::encode` writes) and is drawn with the same
 * viewer as the offline and served pages. */
import { start } from './viewer.js';

const PROTOCOL = '2026-01-26';
const root = document.getElementById('kflame');
const host = window.parent;
let nextId = 1;
let viewer = null;
const pending = new Map();

function send(msg) {
  host.postMessage(Object.assign({ jsonrpc: '2.0' }, msg), '*');
}

function request(method, params) {
  const id = nextId++;
  send({ id, method, params });
  return new Promise((resolve, reject) => pending.set(id, { resolve, reject }));
}

function show(result) {
  const data = result && result._meta && result._meta['kflame/view'];
  if (!data || !data.profile || typeof data.nodes !== 'string') {
    const text = result && Array.isArray(result.content) && result.content.find((c) => c.type === 'text');
    root.textContent = text ? text.text : 'This tool result holds no flame graph.';
    return;
  }
  if (viewer) viewer.destroy();
  root.textContent = '';
  viewer = start(root, data.profile, data.nodes);
  send({
    method: 'ui/notifications/size-changed',
    params: { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight },
  });
}

window.addEventListener('message', (event) => {
  if (event.source !== host) return;
  const msg = event.data;
  if (!msg || msg.jsonrpc !== '2.0') return;
  if (msg.id !== undefined && !msg.method) {
    const p = pending.get(msg.id);
    if (!p) return;
    pending.delete(msg.id);
    if (msg.error) p.reject(new Error(msg.error.message));
    else p.resolve(msg.result);
    return;
  }
  switch (msg.method) {
    case 'ui/notifications/tool-result':
      show(msg.params);
      break;
    case 'ui/notifications/tool-cancelled':
      root.textContent = 'The tool call was cancelled.';
      break;
    case 'ui/resource-teardown':
      if (viewer) viewer.destroy();
      viewer = null;
      send({ id: msg.id, result: {} });
      break;
    case 'ping':
      send({ id: msg.id, result: {} });
      break;
    default:
      if (msg.id !== undefined) send({ id: msg.id, error: { code: -32601, message: 'Method not found: ' + msg.method } });
  }
});

root.textContent = 'Waiting for the host...';
request('ui/initialize', {
  appInfo: { name: 'kflame', version: '1' },
  appCapabilities: {},
  protocolVersion: PROTOCOL,
})
  .then(() => {
    send({ method: 'ui/notifications/initialized', params: {} });
    if (!viewer) root.textContent = 'Waiting for the tool result...';
  })
  .catch((e) => {
    root.textContent = 'The host refused the view: ' + e.message;
  });
