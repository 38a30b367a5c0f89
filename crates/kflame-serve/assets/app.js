/* kflame serve: the page. Shows the flame graph of the whole history with the shared viewer
 * modules (/viewer/*.js, the same files the offline page inlines). */
import { FlameViewer } from '/viewer/viewer.js';
import { decodeTree } from '/viewer/model.js';

const root = document.getElementById('app');

async function api(path) {
  const r = await fetch(path, { credentials: 'same-origin' });
  const body = await r.json().catch(() => ({ error: 'HTTP ' + r.status }));
  if (!r.ok) throw new Error(body.error || 'HTTP ' + r.status);
  return body;
}

async function main() {
  const info = await api('/api/info');
  if (info.from === null) { root.textContent = 'The history is empty.'; return; }
  const data = await api(`/api/profile?kind=cpu&from=${info.from}&to=${info.to + 1}`);
  const box = document.createElement('div');
  root.replaceChildren(box);
  globalThis.kflameViewer = new FlameViewer(box, decodeTree(data.profile, data.nodes), data.profile);
}

main().catch((e) => { root.textContent = 'kflame serve: ' + e.message; });
