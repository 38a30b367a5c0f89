/* kflame latency scatter, self-contained page: boots the scatter view on the data embedded
 * in this page (a JSON meta object and one base64 element per column). */
import { startScatter } from './scatter.js';

const t0 = performance.now();
const meta = JSON.parse(document.getElementById('kflame-scatter-meta').textContent);
const columns = {};
for (const name of Object.keys(meta.types)) columns[name] = document.getElementById('kflame-scatter-' + name).textContent;
startScatter(document.getElementById('kflame-scatter'), meta, columns, t0);
