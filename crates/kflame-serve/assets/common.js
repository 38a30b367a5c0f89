/* kflame serve: what its pages share (the main page and the scatter tab): the API call, the
 * element builder (the viewer's own, /viewer/ui.js) and a button. Every piece of data reaches
 * the DOM as text. */
import { el } from '/viewer/ui.js';

/** The JSON answer of an `/api/` path (the token travels in the page's cookie); an error
 * carries the server's message. */
async function api(path) {
  const r = await fetch(path, { credentials: 'same-origin' });
  const body = await r.json().catch(() => ({ error: 'HTTP ' + r.status + ' ' + r.statusText }));
  if (!r.ok) throw new Error(body.error || 'HTTP ' + r.status);
  return body;
}

/** A button labelled `text` (its tooltip `title`, else the text) calling `onClick`. */
function button(text, title, onClick, attrs = {}) {
  const b = el('button', { type: 'button', title: title || text, text, ...attrs });
  b.addEventListener('click', onClick);
  return b;
}

export { api, button, el };
