/* kflame viewer, part 6: boots the viewer on the profile embedded in this page (the
 * self-contained page; served.js is the same for a page that fetches its data). */
import { start } from './viewer.js';

const t0 = performance.now();
start(
  document.getElementById('kflame'),
  JSON.parse(document.getElementById('kflame-profile').textContent),
  document.getElementById('kflame-nodes').textContent,
  t0,
);
