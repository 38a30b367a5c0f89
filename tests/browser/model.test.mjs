// Unit tests of the viewer's data model (assets/model.js) in Node, without a browser:
// recursion, sandwich and hide/focus semantics on small hand-made profiles.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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

// Off-wake stacks (`kflame record --off-cpu --wakers`, bcc offwaketime's layout): the blocked
// task's stack, `--`, then the waker's stack leaf first. A real capture of the workload.
const WAKERS = readFileSync(join(ROOT, 'crates/kflame/tests/data/render/wakers-kfwork.folded'), 'utf8')
  .split('\n').filter((l) => l && !l.startsWith('#'));

/** Weight of the stacks of `lines` whose frames satisfy `pred`. */
const weightOf = (lines, pred) => lines.reduce((a, l) => {
  const at = l.lastIndexOf(' ');
  return pred(l.slice(0, at).split(';')) ? a + Number(l.slice(at + 1)) : a;
}, 0);

test('frames above `--` are the waker\'s, in every tree derived from the profile', () => {
  const t = treeOf(WAKERS), sep = nameIndex(t, '--'), writer = nameIndex(t, 'kf_pipe_writer');
  for (let i = 1; i < t.n; i++) {
    const below = t.pathTo(i).slice(1, -1).map((k) => t.name[k]);
    assert.equal(t.waker[i], below.includes(sep) ? 1 : 0, t.pathTo(i).map((k) => t.label(k)).join(';'));
  }
  // kf_pipe_writer is both a blocked frame (the writer's own naps) and a waker's (the reader's).
  const sides = new Set();
  for (let i = 1; i < t.n; i++) if (t.name[i] === writer) sides.add(t.waker[i]);
  assert.deepEqual([...sides].sort(), [0, 1]);
  // `-` (bcc's user/kernel delimiter) is not a waker separator.
  assert.equal(treeOf(['a;-;b 1']).waker.reduce((x, y) => x + y, 0), 0);

  // Callers of the waker's wake-up call go down through `--` into the blocked stacks, whose
  // frames stay blocked frames; its callees are the waker's, leaf first.
  const ttwu = nameIndex(t, 'try_to_wake_up');
  const callers = K.callers(t, ttwu);
  assert.equal(callers.total[0], weightOf(WAKERS, (f) => f.includes('try_to_wake_up')));
  for (let i = 1; i < callers.n; i++) assert.equal(callers.waker[i], 0, callers.label(i));
  const firstCallers = [];
  for (let k = callers.kidOff[0]; k < callers.kidOff[1]; k++) firstCallers.push(callers.label(callers.kids[k]));
  assert.deepEqual(firstCallers, ['--']);
  const callees = K.callees(t, ttwu);
  for (let i = 1; i < callees.n; i++) assert.equal(callees.waker[i], 1, callees.label(i));
  // Hiding the separator keeps the waker's frames marked as the waker's.
  const m = new Uint8Array(t.names.length);
  m[sep] = 1;
  const hidden = K.hide(t, m);
  const hw = hidden.name.findIndex((nm, i) => i > 0 && nm === ttwu);
  assert.equal(hidden.waker[hw], 1);
});

test('the separator is grey and the waker\'s frames leave the blocked frames\' colours', () => {
  const t = treeOf(WAKERS), rgbOf = (c) => c.match(/\d+/g).map(Number);
  for (const palette of K.PALETTES) {
    const color = K.makeColorer(palette, t, {});
    const waker = new Set(), blocked = new Set();
    for (let i = 1; i < t.n; i++) {
      if (t.label(i) === '--') assert.equal(color(i), K.SEPARATOR_COLOR, palette);
      else (t.waker[i] ? waker : blocked).add(color(i));
    }
    assert.ok(waker.size > 0, palette);
    for (const c of waker) assert.ok(!blocked.has(c), palette + ': ' + c + ' is also a blocked frame\'s colour');
  }
  // The default palette: blocked frames red to yellow (blue channel under 60), the waker's
  // aqua (blue channel of 165 and more).
  const hot = K.makeColorer('hot', t, {});
  for (let i = 1; i < t.n; i++) {
    if (t.label(i) === '--') continue;
    const [, , b] = rgbOf(hot(i));
    assert.ok(t.waker[i] ? b >= 165 : b < 60, t.label(i) + ' ' + hot(i));
  }
});
