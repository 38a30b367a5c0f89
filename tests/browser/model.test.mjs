// Unit tests of the viewer's data model (assets/model.js) in Node, without a browser:
// recursion, sandwich and hide/focus semantics on small hand-made profiles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './lib.mjs';

// The viewer's modules, imported as the served page imports them.
const asset = (f) => pathToFileURL(join(ROOT, 'crates/kflame/src/render/html/assets', f)).href;
const K = { ...(await import(asset('model.js'))), ...(await import(asset('palette.js'))) };

/** A tree of folded lines `a;b;c N`, built with the model's own builder. */
function treeOf(lines) {
  const names = [], ids = new Map();
  const id = (s) => { if (!ids.has(s)) { ids.set(s, names.length); names.push(s); } return ids.get(s); };
  const parsed = lines.map((l) => { const at = l.lastIndexOf(' '); return [l.slice(0, at).split(';').map(id), Number(l.slice(at + 1))]; });
  const b = new K.TreeBuilder(names, false);
  for (const [frames, w] of parsed) b.add(frames.reduce((at, nm) => b.child(at, nm), 0), w);
  return b.build(K.nameRank(names));
}

/** Every root-to-node path with its total, as `a;b=N`. */
function paths(tree) {
  const out = [];
  for (let i = 1; i < tree.n; i++) out.push(tree.pathTo(i).slice(1).map((k) => tree.label(k)).join(';') + '=' + tree.total[i]);
  return out.sort();
}

const RECURSIVE = ['a;b;a;c 2', 'a;d 1', 'e;a 4', 'a 3'];
const nameIndex = (tree, s) => tree.names.indexOf(s);

test('top functions count a recursive function once per stack', () => {
  const t = treeOf(RECURSIVE), top = K.topFunctions(t);
  assert.equal(top.total[nameIndex(t, 'a')], 10);
  assert.equal(top.self[nameIndex(t, 'a')], 7); // `e;a 4` and `a 3` end in a
  assert.equal(top.self[nameIndex(t, 'c')], 2);
  assert.equal(top.total[nameIndex(t, 'e')], 4);
});

test('callees and callers merge every outermost occurrence', () => {
  const t = treeOf(RECURSIVE), a = nameIndex(t, 'a');
  const callees = K.callees(t, a);
  assert.equal(callees.total[0], 10);
  assert.equal(callees.self[0], 7);
  assert.deepEqual(paths(callees), ['b;a;c=2', 'b;a=2', 'b=2', 'd=1']);
  const callers = K.callers(t, a);
  assert.equal(callers.total[0], 10);
  assert.deepEqual(paths(callers), ['e=4']);
});

test('hide moves weight to the caller, focus re-roots, matched counts nested matches once', () => {
  const t = treeOf(RECURSIVE), mask = (s) => { const m = new Uint8Array(t.names.length); m[nameIndex(t, s)] = 1; return m; };
  const hidden = K.hide(t, mask('b'));
  assert.equal(hidden.total[0], t.total[0]);
  assert.deepEqual(paths(hidden), ['a;a;c=2', 'a;a=2', 'a;d=1', 'a=6', 'e;a=4', 'e=4']);
  const focused = K.focus(t, mask('b'));
  assert.deepEqual(paths(focused), ['b;a;c=2', 'b;a=2', 'b=2']);
  assert.equal(K.matchedWeight(t, mask('a'), 0), 10);
  assert.equal(K.matchedWeight(t, K.matchNames(t.names, /^[bd]$/), 0), 3);
});

test('weights are shown in their unit', () => {
  assert.equal(K.formatWeight(1234, 'samples', 'samples'), '1,234 samples');
  assert.equal(K.formatWeight(512, 'bytes', 'bytes'), '512 B');
  assert.equal(K.formatWeight(1536, 'bytes', 'bytes'), '1.50 KiB (1,536 bytes)');
  assert.equal(K.formatWeight(3 * 1048576, 'bytes', 'bytes'), '3.00 MiB (3,145,728 bytes)');
  assert.equal(K.formatWeight(2500000, 'ns', 'ns'), '2.50 ms (2,500,000 ns)');
  assert.equal(K.formatWeight(12000, 'ns', 'ns'), '12.0 us (12,000 ns)');
  assert.equal(K.formatWeight(7, 'period', 'period'), '7 period');
  assert.equal(K.formatPercent(1, 3), '33.33%');
});

test('the kernel palette tells kernel, user, interrupt, unreliable and synthetic frames apart', () => {
  const t = treeOf([
    'D;sh;entry_SYSCALL_64_after_hwframe;do_syscall_64;path_openat 1',
    'swapper;secondary_startup_64;do_idle;asm_sysvec_apic_timer_interrupt;sysvec_apic_timer_interrupt;handle_softirqs;run_timer_softirq 1',
    'bash;[unknown];? flush_tlb;yyparse 1',
    'python3;clock_nanosleep;-;schedule 1',
    'java;Interpreter;vfs_read_[k] 1',
    'cpu-3;bash;[libc.so.6] 1',
    '[state=D];kworker/0:1;ret_from_fork 1',
  ]);
  const cat = K.kernelCategories(t), C = K.KERNEL_CATEGORY, names = Object.fromEntries(Object.entries(C).map(([k, v]) => [v, k]));
  const of = (path) => names[cat[t.find(path.split(';'))]];
  assert.equal(of('D'), 'synthetic');
  assert.equal(of('D;sh'), 'user');
  assert.equal(of('D;sh;entry_SYSCALL_64_after_hwframe;do_syscall_64;path_openat'), 'kernel');
  assert.equal(of('swapper;secondary_startup_64;do_idle'), 'kernel');
  assert.equal(of('swapper;secondary_startup_64;do_idle;asm_sysvec_apic_timer_interrupt'), 'irq');
  assert.equal(of('swapper;secondary_startup_64;do_idle;asm_sysvec_apic_timer_interrupt;sysvec_apic_timer_interrupt;handle_softirqs;run_timer_softirq'), 'irq');
  assert.equal(of('bash;[unknown]'), 'unreliable');
  assert.equal(of('bash;[unknown];? flush_tlb'), 'unreliable');
  assert.equal(of('bash;[unknown];? flush_tlb;yyparse'), 'user');
  assert.equal(of('python3;clock_nanosleep;-'), 'synthetic');
  assert.equal(of('python3;clock_nanosleep;-;schedule'), 'kernel');
  assert.equal(of('java;Interpreter'), 'user');
  assert.equal(of('java;Interpreter;vfs_read_[k]'), 'kernel');
  assert.equal(of('cpu-3'), 'synthetic');
  assert.equal(of('cpu-3;bash;[libc.so.6]'), 'unreliable');
  assert.equal(of('[state=D]'), 'synthetic');
  assert.equal(of('[state=D];kworker/0:1;ret_from_fork'), 'kernel');
  const color = K.makeColorer('kernel', t);
  assert.notEqual(color(t.find(['D', 'sh'])), color(t.find(['D'])));
  assert.equal(color(t.find(['D', 'sh'])), K.makeColorer('kernel', t)(t.find(['D', 'sh'])), 'colors are stable');
});
