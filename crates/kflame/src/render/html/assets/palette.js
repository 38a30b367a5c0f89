/* kflame viewer, part 2: colors.
 *
 * Every color is derived from a hash of the frame name, so a frame keeps its color across
 * reloads, zooms and pages. The kernel-aware palette also looks at where a frame sits: what
 * a kernel entry point calls is kernel code, what an interrupt entry calls is interrupt work.
 * Off-wake stacks: the `--` separator is grey and the waker's frames above it (tree.waker)
 * are drawn in a hue of their own (wakerHue), apart from the blocked task's frames below.
 * Differential trees are colored red (grew) and blue (shrank) instead.
 * Exports {PALETTES, SEPARATOR_COLOR, makeColorer, kernelCategories, KERNEL_LEGEND,
 * DIFF_LEGEND}.
 */
/** Three independent values in [0, 1) from a name (FNV-1a with different seeds). */
function hash3(s) {
  let a = 0x811c9dc5, b = 0x01000193 ^ s.length, c = 0x9e3779b9;
  for (let i = 0; i < s.length; i++) {
    const ch = s.charCodeAt(i);
    a = Math.imul(a ^ ch, 16777619);
    b = Math.imul(b ^ ch, 2246822519);
    c = Math.imul(c + ch, 3266489917) ^ (c >>> 15);
  }
  return [(a >>> 0) / 4294967296, (b >>> 0) / 4294967296, (c >>> 0) / 4294967296];
}

const rgb = (r, g, b) => 'rgb(' + Math.round(r) + ',' + Math.round(g) + ',' + Math.round(b) + ')';

/** Base hues: each maps the name's hash values to a color. */
const HUES = {
  hot: (v) => rgb(205 + 50 * v[2], 230 * v[0], 55 * v[1]),
  mem: (v) => rgb(0, 190 + 50 * v[1], 210 * v[0]),
  io: (v) => rgb(80 + 60 * v[0], 80 + 60 * v[0], 190 + 55 * v[1]),
  red: (v) => rgb(200 + 55 * v[0], 50 + 80 * v[0], 50 + 80 * v[0]),
  green: (v) => rgb(50 + 60 * v[0], 200 + 55 * v[0], 50 + 60 * v[0]),
  blue: (v) => rgb(80 + 60 * v[0], 80 + 60 * v[0], 205 + 50 * v[0]),
  aqua: (v) => rgb(50 + 60 * v[0], 165 + 55 * v[0], 165 + 55 * v[0]),
  yellow: (v) => rgb(175 + 55 * v[0], 175 + 55 * v[0], 50 + 20 * v[0]),
  purple: (v) => rgb(190 + 65 * v[0], 80 + 60 * v[0], 190 + 65 * v[0]),
  orange: (v) => rgb(190 + 65 * v[0], 90 + 65 * v[0], 0),
  gray: (v) => rgb(175 + 35 * v[0], 175 + 35 * v[0], 175 + 35 * v[0]),
  lavender: (v) => rgb(165 + 40 * v[0], 150 + 40 * v[0], 225 + 30 * v[0]),
  pink: (v) => rgb(225 + 30 * v[0], 85 + 50 * v[0], 120 + 40 * v[0]),
};

/** Language palettes: which hue a name gets, from its annotations and shape. */
const byName = {
  java(s) {
    if (s.endsWith('_[j]')) return 'green';
    if (s.endsWith('_[i]')) return 'aqua';
    if (s.endsWith('_[k]')) return 'orange';
    if (s.includes('::')) return 'yellow';
    if (/^L?(java|javax|jdk|net|org|com|io|sun)[/.]/.test(s)) return 'green';
    return 'red';
  },
  js(s) {
    if (s.endsWith('_[j]')) return 'green';
    if (s.endsWith('_[k]')) return 'orange';
    if (s.includes('::')) return 'yellow';
    if (/\.js\b|^[~*]|\//.test(s)) return 'green';
    if (/^(Builtin|Builtins?:|Stub:|RegExp:)/.test(s)) return 'aqua';
    return 'red';
  },
  perl(s) {
    if (s.endsWith('_[k]')) return 'orange';
    if (/perl|\.pl\b|\.pm\b/.test(s)) return 'green';
    if (s.includes('::')) return 'yellow';
    return 'red';
  },
  chain(s) {
    return s.endsWith('_[w]') ? 'aqua' : 'blue';
  },
};

const PALETTES = ['hot', 'mem', 'io', 'red', 'green', 'blue', 'aqua', 'yellow', 'purple', 'orange',
  'java', 'js', 'perl', 'wakeup', 'chain', 'kernel'];

// Kernel-aware classification.
const CAT = { user: 0, kernel: 1, irq: 2, unreliable: 3, synthetic: 4 };
const CAT_HUE = ['green', 'orange', 'pink', 'gray', 'lavender'];
const KERNEL_LEGEND = [['user', 'green'], ['kernel', 'orange'], ['interrupt', 'pink'],
  ['unreliable', 'gray'], ['synthetic', 'lavender']].map(([label, hue]) => [label, HUES[hue]([0.5, 0.5, 0.5])]);
const IRQ = /^(asm_)?(__)?(sysvec_|common_interrupt|irq_|handle_irq|handle_(edge|level|fasteoi)_irq|do_softirq|handle_softirqs|__do_softirq|hrtimer_interrupt|__hrtimer_run_queues|run_timer_softirq|net_rx_action|tasklet_action|smp_apic_timer_interrupt|apic_timer_interrupt)/;
const ENTRY = /^(entry_SYSCALL|entry_INT80|entry_SYSENTER|asm_|ret_from_fork|do_syscall_64|x64_sys_call|__x64_sys_|__ia32_sys_|__arm64_sys_|__se_sys_|el0t?_|el1h?_|secondary_startup_64|common_startup_64|start_kernel|x86_64_start_|cpu_startup_entry|kthread$|worker_thread$|do_idle$|rest_init$)/;
// `? sym` (unreliable unwind), `[unknown]`, bare addresses, and perf's `[dso]` placeholders
// for symbols it could not resolve (`[libc.so.6]`, `[bash]`, `[kernel.kallsyms]`).
const UNRELIABLE = /^(\?|0x[0-9a-fA-F]+$|\[[^\]\s=]*\]$)/;
// Frames a collector adds to group stacks: `-`/`--` separators, task states (`D`),
// `key=value` and bracketed labels with a space or `=` (`[state=D]`, `[hung task]`), `cpu-3`.
const SYNTHETIC = /^(-{1,2}|[A-Z]|[A-Za-z_]+=.*|\[[^\]]*[\s=][^\]]*\]|cpu-\d+)$/;

/** What each kind of name says by itself: 0 nothing, else the category it forces. */
function nameKind(s) {
  if (UNRELIABLE.test(s)) return 10 + CAT.unreliable;
  if (s === '-' || s === '--') return 20;
  if (SYNTHETIC.test(s)) return 10 + CAT.synthetic;
  const k = s.endsWith('_[k]');
  const bare = k ? s.slice(0, -4) : s;
  if (IRQ.test(bare)) return 10 + CAT.irq;
  if (k || ENTRY.test(bare)) return 10 + CAT.kernel;
  return 0;
}

/** Category of every node of a tree, for the kernel palette. Context flows down: below a
 * kernel entry everything is kernel, below an interrupt entry everything is interrupt;
 * unreliable and synthetic frames keep the context of their caller for their callees. */
function kernelCategories(tree) {
  const kinds = new Int8Array(tree.names.length).fill(-1);
  const cat = new Uint8Array(tree.n), ctx = new Uint8Array(tree.n);
  for (let i = 1; i < tree.n; i++) {
    const nm = tree.name[i];
    if (kinds[nm] < 0) kinds[nm] = nameKind(tree.names[nm]);
    const kind = kinds[nm], up = ctx[tree.parent[i]];
    let c = up, next = up;
    if (kind === 20) { c = CAT.synthetic; next = CAT.kernel; }
    else if (kind === 10 + CAT.unreliable || kind === 10 + CAT.synthetic) c = kind - 10;
    else if (kind === 10 + CAT.irq) { c = CAT.irq; next = CAT.irq; }
    else if (kind === 10 + CAT.kernel) { c = up === CAT.irq ? CAT.irq : CAT.kernel; next = c; }
    cat[i] = c;
    ctx[i] = next;
  }
  return cat;
}

/** The color of the `--` separator of off-wake stacks (and of bcc's `-` user/kernel
 * delimiter): flamegraph.pl's dark grey, as the SVG draws it. */
const SEPARATOR_COLOR = 'rgb(160,160,160)';

/** The hue of a waker's frames (above `--`) in each palette: aqua, as flamegraph.pl's chain
 * palette draws waker frames, unless the palette's own frames are aqua or close to it. */
function wakerHue(palette) {
  return { aqua: 'blue', mem: 'orange', kernel: 'blue' }[palette] || 'aqua';
}

/** The red/blue scale of differential graphs, as the SVG and flamegraph.pl draw it: each
 * frame by the change of its own weight (self AFTER - self BEFORE), red where it grew,
 * blue where it shrank, white when unchanged, full intensity for the largest change of the
 * tree. `negate` swaps red and blue. */
function differentialColorer(tree, negate) {
  const delta = new Float64Array(tree.n);
  let max = 0;
  for (let i = 1; i < tree.n; i++) {
    const d = (tree.self[i] - tree.before[i]) * (negate ? -1 : 1);
    delta[i] = d;
    if (Math.abs(d) > max) max = Math.abs(d);
  }
  const fn = (i) => {
    if (i === 0) return 'rgb(220,220,225)';
    const d = delta[i];
    if (max === 0 || d === 0) return 'rgb(255,255,255)';
    const fade = Math.floor(210 * (1 - Math.abs(d) / max));
    return d > 0 ? 'rgb(255,' + fade + ',' + fade + ')' : 'rgb(' + fade + ',' + fade + ',255)';
  };
  fn.delta = delta;
  return fn;
}

/** Colors of the differential legend. */
const DIFF_LEGEND = [['grew', 'rgb(255,0,0)'], ['shrank', 'rgb(0,0,255)'], ['unchanged', 'rgb(255,255,255)']];

/** A function node -> CSS color for `palette` on `tree`, cached per name and category.
 * A differential tree (with BEFORE weights, when meta.differential) is colored by change
 * whatever the palette, as in the SVG. */
function makeColorer(palette, tree, meta) {
  if (tree.before && meta && meta.differential) return differentialColorer(tree, !!meta.negate);
  const cache = new Map();
  let hueOf;
  if (palette === 'kernel') {
    const cat = kernelCategories(tree);
    hueOf = (i) => [CAT_HUE[cat[i]], cat[i]];
  } else if (palette === 'wakeup') {
    hueOf = () => ['blue', 0];
  } else if (byName[palette]) {
    hueOf = (i) => [byName[palette](tree.names[tree.name[i]]), 0];
  } else {
    const hue = HUES[palette] ? palette : 'hot';
    hueOf = () => [hue, 0];
  }
  const waker = tree.waker, wakerHueName = wakerHue(palette);
  const separators = new Uint8Array(tree.names.length);
  tree.names.forEach((s, nm) => { if (s === '--' || s === '-') separators[nm] = 1; });
  return (i) => {
    if (i === 0) return 'rgb(220,220,225)';
    if (separators[tree.name[i]]) return SEPARATOR_COLOR;
    const [hue, c] = waker[i] ? [wakerHueName, 7] : hueOf(i), key = tree.name[i] * 8 + c;
    let color = cache.get(key);
    if (color === undefined) {
      color = HUES[hue](hash3(tree.names[tree.name[i]]));
      cache.set(key, color);
    }
    return color;
  };
}

export {
  PALETTES, SEPARATOR_COLOR, makeColorer, kernelCategories, KERNEL_LEGEND, CAT as KERNEL_CATEGORY, DIFF_LEGEND,
};
