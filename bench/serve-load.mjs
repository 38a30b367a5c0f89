// Load on a kflame serve on loopback: CLIENTS concurrent clients, each sending a page's
// requests one after the other for SECONDS; prints the count, errors and latency
// percentiles. Usage: node serve-load.mjs BASE TOKEN FROM_NS TO_NS CLIENTS SECONDS
import { Agent, get } from 'node:http';

const [base, token, fromS, toS, clientsS, secondsS] = process.argv.slice(2);
if (!base.startsWith('http://127.') && !base.startsWith('http://localhost')) throw new Error('loopback only: ' + base);
const from = BigInt(fromS), to = BigInt(toS), clients = +clientsS, seconds = +secondsS;
const agent = new Agent({ keepAlive: true, maxSockets: clients });
const H = 3600n * 1000000000n, M5 = 300n * 1000000000n;
const cpu = 'cpu.usr,cpu.sys,cpu.iowait,cpu.irq,cpu.softirq,cpu.steal';

function request(path) {
  return new Promise((ok) => {
    const t0 = process.hrtime.bigint();
    get(base + path, { agent, headers: { Authorization: 'Bearer ' + token } }, (r) => {
      r.resume();
      r.on('end', () => ok({ ms: Number(process.hrtime.bigint() - t0) / 1e6, ok: r.statusCode === 200, status: r.statusCode }));
    }).on('error', (e) => ok({ ms: Number(process.hrtime.bigint() - t0) / 1e6, ok: false, status: e.code }));
  });
}

const lat = [], errors = {};
const end = Date.now() + seconds * 1000;
async function client(k) {
  let i = k;
  while (Date.now() < end) {
    const span = to - from - M5;
    const at = from + (span > 0n ? (BigInt(i * 7919) * 1000000000n) % span : 0n);
    const paths = [
      `/api/series?names=${cpu}&label=&from=${to - H}&to=${to + 1n}&points=1000`,
      `/api/profile?kind=cpu&from=${at}&to=${at + M5}`,
      `/api/events?from=${to - H}&to=${to + 1n}`,
    ];
    for (const p of paths) {
      const r = await request(p);
      lat.push(r.ms);
      if (!r.ok) errors[r.status] = (errors[r.status] || 0) + 1;
    }
    i += clients;
  }
}
const t0 = Date.now();
await Promise.all(Array.from({ length: clients }, (_, k) => client(k)));
agent.destroy();
lat.sort((a, b) => a - b);
const q = (f) => lat[Math.min(lat.length - 1, Math.floor(f * lat.length))].toFixed(1);
const nerr = Object.values(errors).reduce((a, b) => a + b, 0);
console.log(`${lat.length} requests in ${((Date.now() - t0) / 1000).toFixed(1)} s by ${clients} clients, ` +
  `${nerr} errors${nerr ? ' ' + JSON.stringify(errors) : ''}; latency p50 ${q(0.5)} ms, p99 ${q(0.99)} ms, max ${lat[lat.length - 1].toFixed(1)} ms`);
if (nerr) process.exitCode = 1;
