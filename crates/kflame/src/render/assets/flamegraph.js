// kflame flame graph interaction: zoom, search, tooltips, URL state.
// Plain ES5-compatible script, no network. Configuration comes from `kflameConfig`,
// written by the renderer just before this file.
(function () {
  "use strict";
  var cfg = kflameConfig;
  var NS = "urn:kflame:flamegraph";
  var SEARCH_COLOR = "rgb(230,0,230)";
  var svg = document.documentElement;
  var el = {};
  var frames = [];
  var root = null;
  var zoomed = null;
  var searchRe = null;
  var searchText = "";
  var ignoreCase = false;
  var hovered = null;

  function init() {
    ["details", "unzoom", "search", "ignorecase", "matched", "frames", "tooltip"].forEach(function (id) {
      el[id] = document.getElementById(id);
    });
    collect();
    el.frames.addEventListener("click", onClick);
    el.frames.addEventListener("mouseover", onOver);
    el.frames.addEventListener("mousemove", onMove);
    el.frames.addEventListener("mouseout", onOut);
    el.unzoom.addEventListener("click", function () { unzoom(true); });
    el.search.addEventListener("click", searchPrompt);
    el.ignorecase.addEventListener("click", toggleIgnoreCase);
    window.addEventListener("keydown", onKey);
    window.addEventListener("hashchange", restore);
    restore();
  }

  // One record per frame, read once from the DOM.
  function collect() {
    var groups = el.frames.getElementsByTagName("g");
    var maxY = -Infinity, minY = Infinity;
    for (var i = 0; i < groups.length; i++) {
      var g = groups[i];
      var rect = g.getElementsByTagName("rect")[0];
      if (!rect) continue;
      var title = g.getElementsByTagName("title")[0];
      var t = title ? title.textContent : "";
      var cut = t.lastIndexOf(" (");
      var y = parseFloat(rect.getAttribute("y"));
      maxY = Math.max(maxY, y);
      minY = Math.min(minY, y);
      frames.push({
        g: g, rect: rect, text: g.getElementsByTagName("text")[0], title: title,
        name: cut > 0 ? t.substring(0, cut) : t,
        xs: rect.getAttributeNS(NS, "x"),
        x: parseFloat(rect.getAttributeNS(NS, "x")),
        w: parseFloat(rect.getAttributeNS(NS, "w")),
        d: parseFloat(rect.getAttributeNS(NS, "d") || "0"),
        y: y, fill: rect.getAttribute("fill")
      });
    }
    frames.forEach(function (f) {
      var off = cfg.inverted ? f.y - minY : maxY - f.y;
      f.depth = Math.round(off / cfg.frameheight);
      if (f.depth === 0) root = f;
      f.g.__kf = f;
    });
  }

  function frameOf(target) {
    while (target && target !== el.frames) {
      if (target.tagName === "g" && target.parentNode === el.frames) return target.__kf;
      target = target.parentNode;
    }
    return null;
  }

  // ---- weights and percentages ----
  function commas(n) {
    var parts = String(n).split(".");
    parts[0] = parts[0].replace(/\B(?=(\d{3})+(?!\d))/g, ",");
    return parts.join(".");
  }

  function formatWeight(w) {
    var v = w * cfg.factor;
    if (cfg.unit === "bytes") {
      if (v < 1024) return v.toFixed(0) + " B";
      var units = ["KiB", "MiB", "GiB", "TiB", "PiB"], i = 0;
      v /= 1024;
      while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
      return v.toFixed(2) + " " + units[i];
    }
    if (cfg.unit === "ns") {
      if (v < 1e3) return v.toFixed(0) + " ns";
      if (v < 1e6) return (v / 1e3).toFixed(2) + " us";
      if (v < 1e9) return (v / 1e6).toFixed(2) + " ms";
      return (v / 1e9).toFixed(2) + " s";
    }
    var n = cfg.factor === 1 ? Math.round(v * 1e9) / 1e9 : Math.round(v);
    return commas(n) + " " + cfg.countname;
  }

  function pct(part, whole) {
    return whole > 0 ? (100 * part / whole).toFixed(2) : "0.00";
  }

  function describe(f) {
    var parts = [formatWeight(f.w), pct(f.w, cfg.total) + "% of total"];
    if (zoomed && zoomed !== root && f.depth >= zoomed.depth) parts.push(pct(f.w, zoomed.w) + "% of zoomed");
    if (cfg.differential) {
      var d = cfg.negate ? -f.d : f.d;
      var p = 100 * d / cfg.total;
      parts.push((p > 0 ? "+" : "") + p.toFixed(2) + "% change");
    }
    return f.name + " (" + parts.join(", ") + ")";
  }

  // ---- tooltips ----
  function onOver(e) {
    var f = frameOf(e.target);
    if (!f) return;
    hovered = f;
    showInfo(f);
    onMove(e);
  }

  // Details line and tooltip box for frame f (again after a zoom: percentages change).
  function showInfo(f) {
    el.details.textContent = cfg.nametype + " " + describe(f);
    var lines = [f.name].concat(describe(f).substring(f.name.length + 2).replace(/\)$/, "").split(", "));
    var text = el.tooltip.getElementsByTagName("text")[0];
    while (text.firstChild) text.removeChild(text.firstChild);
    lines.forEach(function (line, i) {
      var span = document.createElementNS("http://www.w3.org/2000/svg", "tspan");
      span.setAttribute("x", "6");
      span.setAttribute("dy", i === 0 ? "1.1em" : "1.25em");
      span.textContent = line;
      text.appendChild(span);
    });
    el.tooltip.classList.remove("hide");
    var box = text.getBBox();
    var rect = el.tooltip.getElementsByTagName("rect")[0];
    rect.setAttribute("width", Math.min(box.width + 12, svg.viewBox.baseVal.width - 20));
    rect.setAttribute("height", box.height + 10);
  }

  function onMove(e) {
    if (el.tooltip.classList.contains("hide")) return;
    var ctm = svg.getScreenCTM();
    if (!ctm) return;
    var pt = svg.createSVGPoint();
    pt.x = e.clientX;
    pt.y = e.clientY;
    var p = pt.matrixTransform(ctm.inverse());
    var rect = el.tooltip.getElementsByTagName("rect")[0];
    var w = parseFloat(rect.getAttribute("width")), h = parseFloat(rect.getAttribute("height"));
    var vb = svg.viewBox.baseVal;
    var x = Math.min(p.x + 12, vb.width - w - 2), y = p.y + 16;
    if (y + h > vb.height) y = p.y - h - 8;
    el.tooltip.setAttribute("transform", "translate(" + Math.max(2, x) + "," + Math.max(2, y) + ")");
  }

  function onOut(e) {
    if (frameOf(e.relatedTarget)) return;
    hovered = null;
    el.details.textContent = " ";
    el.tooltip.classList.add("hide");
  }

  // ---- zoom ----
  function onClick(e) {
    var f = frameOf(e.target);
    if (!f) return;
    if (f === root) unzoom(true);
    else zoom(f, true);
  }

  function zoom(z, save) {
    zoomed = z;
    var eps = z.w * 1e-9;
    frames.forEach(function (f) {
      var inside = f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps;
      var above = f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps;
      var show = f.depth >= z.depth ? inside : above;
      f.g.classList.toggle("hide", !show);
      f.g.classList.toggle("parent", show && f.depth < z.depth);
      if (!show) return;
      if (f.depth < z.depth) place(f, 0, 100);
      else place(f, 100 * (f.x - z.x) / z.w, 100 * f.w / z.w);
    });
    el.unzoom.classList.remove("hide");
    refreshSearch();
    if (hovered) showInfo(hovered);
    if (save) saveState();
  }

  function unzoom(save) {
    zoomed = null;
    frames.forEach(function (f) {
      f.g.classList.remove("hide", "parent");
      place(f, 100 * f.x / cfg.total, 100 * f.w / cfg.total);
    });
    el.unzoom.classList.add("hide");
    refreshSearch();
    if (hovered) showInfo(hovered);
    if (save) saveState();
  }

  function place(f, xPct, wPct) {
    var area = el.frames.width.baseVal.value;
    f.rect.setAttribute("x", xPct.toFixed(4) + "%");
    f.rect.setAttribute("width", wPct.toFixed(4) + "%");
    var text = label(f.name, wPct * area / 100);
    if (!f.text) {
      if (!text) return;
      // Narrow frames are written without a label; add one now that there is room.
      f.text = document.createElementNS("http://www.w3.org/2000/svg", "text");
      var h = cfg.frameheight - 1;
      f.text.setAttribute("y", (f.y + h / 2 + cfg.fontsize / 3).toFixed(2));
      f.rect.parentNode.appendChild(f.text);
    }
    f.text.setAttribute("x", (xPct + 300 / area).toFixed(4) + "%");
    f.text.textContent = text;
  }

  function label(name, px) {
    var chars = Math.floor(px / (cfg.fontsize * cfg.fontwidth));
    if (chars < 3) return "";
    name = name.replace(/_\[[kjiw]\]$/, "");
    if (name.length <= chars) return name;
    return name.substring(0, chars - 2) + "..";
  }

  // ---- search ----
  function searchPrompt() {
    if (searchRe) {
      clearSearch();
      saveState();
      return;
    }
    var term = window.prompt("Enter a search term (regexp allowed, eg: ^ext4_)" +
      (ignoreCase ? ", ignoring case" : "") + "\nPress Ctrl-i to toggle case sensitivity", "");
    if (term) {
      search(term);
      saveState();
    }
  }

  function toggleIgnoreCase() {
    ignoreCase = !ignoreCase;
    el.ignorecase.classList.toggle("show", ignoreCase);
    if (searchText) search(searchText);
    saveState();
  }

  function search(term) {
    var re;
    try {
      re = new RegExp(term, ignoreCase ? "i" : "");
    } catch (err) {
      el.matched.textContent = "Invalid regex: " + err.message;
      return;
    }
    searchText = term;
    searchRe = re;
    refreshSearch();
  }

  function clearSearch() {
    searchRe = null;
    searchText = "";
    frames.forEach(function (f) { f.rect.setAttribute("fill", f.fill); });
    el.search.classList.remove("show");
    el.search.textContent = "Search";
    el.matched.textContent = " ";
  }

  // Colours matching frames and reports the share of the (zoomed) width they cover,
  // counting nested matches once.
  function refreshSearch() {
    if (!searchRe) return;
    var spans = [];
    frames.forEach(function (f) {
      var hit = searchRe.test(f.name);
      f.rect.setAttribute("fill", hit ? SEARCH_COLOR : f.fill);
      if (hit) spans.push([f.x, f.x + f.w]);
    });
    var lo = zoomed ? zoomed.x : 0, hi = zoomed ? zoomed.x + zoomed.w : cfg.total;
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var covered = 0, end = lo;
    spans.forEach(function (s) {
      var a = Math.max(s[0], end), b = Math.min(s[1], hi);
      if (b > a) { covered += b - a; end = b; }
    });
    el.search.classList.add("show");
    el.search.textContent = "Reset Search";
    el.matched.textContent = "Matched: " + pct(covered, hi - lo) + "%";
  }

  function onKey(e) {
    if ((e.ctrlKey || e.metaKey) && e.key === "f") {
      e.preventDefault();
      searchPrompt();
    } else if (e.ctrlKey && e.key === "i") {
      e.preventDefault();
      toggleIgnoreCase();
    } else if (e.key === "Escape") {
      clearSearch();
      unzoom(true);
    }
  }

  // ---- URL state: #zoom=X:DEPTH&s=REGEX&i=1 ----
  function saveState() {
    var p = [];
    if (zoomed && zoomed !== root) p.push("zoom=" + encodeURIComponent(zoomed.xs + ":" + zoomed.depth));
    if (searchText) p.push("s=" + encodeURIComponent(searchText));
    if (ignoreCase) p.push("i=1");
    var hash = p.length ? "#" + p.join("&") : "";
    try {
      history.replaceState(null, "", location.pathname + location.search + hash);
    } catch (err) {
      location.hash = hash;
    }
  }

  // Applies the URL state; on first load with no state the SVG is drawn as written.
  function restore(e) {
    var state = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i > 0) state[kv.substring(0, i)] = decodeURIComponent(kv.substring(i + 1));
    });
    if (!e && !state.zoom && !state.s && !state.i) return;
    ignoreCase = state.i === "1";
    el.ignorecase.classList.toggle("show", ignoreCase);
    var target = null;
    if (state.zoom) {
      var cut = state.zoom.lastIndexOf(":");
      var xs = state.zoom.substring(0, cut), depth = +state.zoom.substring(cut + 1);
      frames.forEach(function (f) { if (f.xs === xs && f.depth === depth) target = f; });
    }
    if (state.s) search(state.s); else if (searchRe) clearSearch();
    if (target) zoom(target, false); else if (zoomed) unzoom(false);
  }

  init();
})();
