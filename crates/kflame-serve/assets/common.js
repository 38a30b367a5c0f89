/* kflame serve: what its pages share (the main page and the scatter tab): the API call and
 * the element builder (the viewer's own, /viewer/ui.js). Every piece of data reaches the DOM
 * as text. */
import { el } from '/viewer/ui.js';

/** The JSON answer of an `/api/` path (the token travels in the page's cookie); an error
 * carries the server's message. */
async function api(path) {
  const r = await fetch(path, { credentials: 'same-origin' });
  const body = await r.json().catch(() => ({ error: 'HTTP ' + r.status + ' ' + r.statusText }));
  if (!r.ok) throw new Error(body.error || 'HTTP ' + r.status);
  return body;
}

export { api, el };
