/* kflame viewer, served page: boots the viewer on profile data fetched from the URL in the
 * `data-src` attribute of #kflame: a JSON object {"profile": meta, "nodes": base64}, what
 * `kflame::render::html::encode` writes. The page with embedded data uses page.js instead. */
import { start } from './viewer.js';

const root = document.getElementById('kflame');
const src = root.dataset.src;
const t0 = performance.now();
fetch(src)
  .then((r) => {
    if (!r.ok) throw new Error('HTTP ' + r.status + ' ' + r.statusText);
    return r.json();
  })
  .then((data) => start(root, data.profile, data.nodes, t0))
  .catch((e) => {
    root.textContent = 'Cannot load the profile from ' + src + ': ' + e.message;
  });
