/* kflame viewer, part 6: boots the viewer on the profile embedded in this page. */
(function (K) {
  'use strict';
  const t0 = performance.now();
  const meta = JSON.parse(document.getElementById('kflame-profile').textContent);
  const tree = K.decodeTree(meta, document.getElementById('kflame-nodes').textContent);
  const t1 = performance.now();
  const viewer = new K.FlameViewer(document.getElementById('kflame'), tree, meta);
  viewer.timings.decode = t1 - t0;
  viewer.timings.firstDraw = performance.now() - t0;
  globalThis.kflameViewer = viewer;
})(globalThis.KFlame);
