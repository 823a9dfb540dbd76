(function () {
  "use strict";

  var SVG_NS = "http://www.w3.org/2000/svg";  // the SVG namespace, an identifier: nothing is fetched
  var UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];
  var data = JSON.parse(document.getElementById("gmp-data").textContent);

  // ---- formatting: the same as the tables the C++ side wrote ----

  function humanBytes(b) {
    var v = b, u = 0;
    while (v >= 1024 && u < 4) { v /= 1024; u++; }
    return u === 0 ? b + " B" : v.toFixed(2) + " " + UNITS[u];
  }

  function humanTime(ns) {
    if (ns < 1e3 && ns !== 0) return Math.round(ns) + " ns";
    if (ns >= 1e9) return (ns / 1e9).toFixed(3) + " s";
    return ns >= 1e6 ? (ns / 1e6).toFixed(3) + " ms" : (ns / 1e3).toFixed(1) + " \u00b5s";
  }

  function decimalsFor(step) {
    return step >= 1 ? 0 : Math.ceil(-Math.log10(step) - 1e-9);
  }

  // The smallest of 1, 2, 5 times a power of ten that is at least `raw`.
  function niceStep(raw) {
    if (!(raw > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(raw)));
    var f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
  }

  function markerLabel(m) {
    switch (m.type) {
      case "alert": return m.alert.toUpperCase();
      case "alert_cleared": return m.alert + " cleared";
      case "alloc_failed": return "failed " + humanBytes(m.size);
      case "oom_bundle": return "OOM bundle";
      case "oom_recovered": return "OOM recovered";
      default: return m.type;
    }
  }

  function markerText(m) {
    switch (m.type) {
      case "alert": return m.alert.toUpperCase() + " alert: allocated " + humanBytes(m.allocated) + ", threshold " + humanBytes(m.threshold);
      case "alert_cleared": return m.alert + " alert cleared: allocated " + humanBytes(m.allocated);
      case "alloc_failed": return m.api + " of " + humanBytes(m.size) + " failed (" + m.error + ")";
      case "oom_bundle": return "OOM bundle written (gpumemprof oom DIR explains it)";
      case "oom_recovered": return "OOM recovered: the failed size allocated";
      default: return m.type;
    }
  }

  // ---- SVG helpers ----

  function svgEl(name, attrs, parent) {
    var e = document.createElementNS(SVG_NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function svgText(parent, x, y, text, attrs) {
    var t = svgEl("text", attrs || {}, parent);
    t.setAttribute("x", x);
    t.setAttribute("y", y);
    t.textContent = text;
    return t;
  }

  function r1(v) { return Math.round(v * 10) / 10; }

  // Y axis in binary units: ticks at 1, 2 or 5 times a power of ten of the unit that fits `max`.
  function bytesAxis(max) {
    var u = 0;
    while (u < 4 && max >= Math.pow(1024, u + 1)) u++;
    var unit = Math.pow(1024, u);
    var step = niceStep(max / unit / 5);
    if (u === 0) step = Math.max(1, step);
    var top = Math.max(step, Math.ceil(max / unit / step - 1e-9) * step);
    var ticks = [], dec = decimalsFor(step);
    for (var v = 0; v <= top + step / 2; v += step) ticks.push({ bytes: v * unit, label: v.toFixed(dec) + " " + UNITS[u] });
    return { top: top * unit, ticks: ticks };
  }

  // X axis in time since the profiler started: ticks between `from` and `to` (ns).
  // Ticks in the unit of their step: "9 ms", not "0.0090 s"; "250 µs" when zoomed into a step.
  function secondsAxis(from, to) {
    var step = niceStep((to - from) / 1e9 / 8), ticks = [];
    var unit = step >= 1 ? { per_s: 1, name: " s" } : step >= 1e-3 ? { per_s: 1e3, name: " ms" } : { per_s: 1e6, name: " \u00b5s" };
    var dec = decimalsFor(step * unit.per_s);
    for (var i = Math.ceil(from / 1e9 / step - 1e-9); i * step * 1e9 <= to * (1 + 1e-12); i++) {
      ticks.push({ ns: i * step * 1e9, label: (i * step * unit.per_s).toFixed(dec) + unit.name });
    }
    return ticks;
  }

  // ---- one device's timeline ----

  // The framework's name as the tables write it (summary.json's "framework" object).
  function frameworkName() {
    var f = data.summary && data.summary.framework;
    return !f || !f.name || f.name === "pytorch" ? "PyTorch" : f.name;
  }

  var LANE_H = 15;     // px per row of range bands
  var MAX_LANES = 8;   // rows of range bands drawn; the tooltip names the rest
  var KIND_NAMES = ["none", "linear", "pool", "vmm", "array", "managed", "host pinned", "graph", "runtime"];

  // The range bands of analysis.explore, as objects, and their rows: one per thread and depth, the
  // threads in order of their first range.
  function rangeBands() {
    var ex = data.explore, flat = ex ? ex.bands : [], bands = [], rows = {}, order = [];
    for (var i = 0; i + 6 < flat.length; i += 7) {
      var b = { name: ex.range_names[flat[i]], thread: flat[i + 1], depth: flat[i + 2], from: flat[i + 3],
                to: flat[i + 4], calls: flat[i + 5], open: flat[i + 6] === 1 };
      var key = b.thread + "/" + b.depth;
      if (!(key in rows)) { rows[key] = order.length; order.push({ thread: b.thread, depth: b.depth }); }
      bands.push(b);
    }
    order.sort(function (a, c) { return a.thread === c.thread ? a.depth - c.depth : 0; });
    var threads = [];
    order.forEach(function (r) { if (threads.indexOf(r.thread) < 0) threads.push(r.thread); });
    order.sort(function (a, c) { return threads.indexOf(a.thread) - threads.indexOf(c.thread) || a.depth - c.depth; });
    order.forEach(function (r, j) { rows[r.thread + "/" + r.depth] = j; });
    bands.forEach(function (b) { b.row = rows[b.thread + "/" + b.depth]; });
    return { bands: bands, rows: order.length, threads: threads.length };
  }

  function rangeText(b) {
    return b.name + (b.calls > 1 ? " (" + b.calls + " calls, back to back)" : "") + ": " + humanTime(b.from) +
      " to " + humanTime(b.to) + (b.open ? " (still open at the end)" : "") + ", thread " + b.thread;
  }

  // The chart of one device, the toolbar over it and the panel of the selected window under it.
  // Everything is drawn from the embedded buckets (analysis.devices[i].timeline) and the sets of
  // analysis.explore: nothing is computed from events, so it stays quick for runs of any length.
  function drawTimeline(box, dev, markers, marks, ranges) {
    var tl = dev.timeline, n = tl && tl.t_ns ? tl.t_ns.length : 0;
    if (n === 0) {
      box.textContent = "No timeline for this device.";
      return;
    }
    var sets = null;
    (data.explore ? data.explore.devices : []).forEach(function (d) { if (d.device === dev.device) sets = d; });
    var slice = n > 1 ? tl.t_ns[1] - tl.t_ns[0] : 1, t0 = tl.t_ns[0];
    var fine = tl.fine && tl.fine.index.length ? tl.fine : null;
    // The narrowest view: a few of the finest slices the page holds, and no less than a microsecond.
    var minSpan = fine ? Math.max(8 * fine.width_ns, 1000) : slice;
    var full = [t0, Math.max(t0 + 1, Math.min(tl.t_ns[n - 1] + slice, data.analysis.duration_ns))];
    var lanes = Math.min(ranges.rows, MAX_LANES);
    var W = Math.max(520, Math.round(box.clientWidth || 960));
    var M = { l: 78, r: 18, t: 40, b: 40 }, pw = W - M.l - M.r, ph = 290 - M.t - M.b;
    // Under the axis: the tick labels, the range bands (a row each), then the axis caption, and a
    // note when rows of bands were left out.
    var bandTop = M.t + ph + 24, more = ranges.rows > lanes;
    var captionY = lanes ? bandTop + lanes * LANE_H + 10 : M.t + ph + 30, H = captionY + (more ? 20 : 10);
    var legendTotal = box.previousElementSibling ? box.previousElementSibling.querySelector(".legend-total") : null;
    var fw = tl.tensors_max ? frameworkName() : null, total = dev.total_bytes || 0;
    var view = full.slice(), selection = full.slice(), chosen = -1;

    var toolbar = htmlEl("div", "timeline-toolbar", null);
    box.parentNode.insertBefore(toolbar, box);
    function button(text, cls, title, act) {
      var b = htmlEl("button", cls, toolbar, text);
      b.type = "button";
      b.title = title;
      b.addEventListener("click", act);
      return b;
    }
    var resetButton = button("Reset zoom", "timeline-reset", "The whole run, and the peak selected (or double-click the chart)",
      function () { reset(); });
    button("Zoom out", "timeline-zoom-out", "Twice the time (or press -)", function () { zoomBy(2); });
    button("\u25c0", "timeline-pan-left", "Earlier (or press \u2190)", function () { pan(-0.25); });
    button("\u25b6", "timeline-pan-right", "Later (or press \u2192)", function () { pan(0.25); });
    var viewText = htmlEl("span", "timeline-view muted", toolbar);
    htmlEl("span", "muted", toolbar, "Drag across the chart to zoom into a window and see what was live at its highest " +
      "point; click a time for the slice under it; shift-drag to pan; double-click to reset.");

    var svg = svgEl("svg", {
      viewBox: "0 0 " + W + " " + H, "class": "timeline", role: "img",
      "aria-label": "Device " + dev.device + " memory over time"
    });
    var layer = svgEl("g", {}, svg);
    var hover = svgEl("line", { "class": "hover-line", x1: 0, x2: 0, y1: M.t, y2: M.t + ph, visibility: "hidden" }, svg);
    var drag = svgEl("rect", { "class": "drag-rect", x: 0, y: M.t, width: 0, height: ph, visibility: "hidden" }, svg);
    var tip = document.createElement("div");
    tip.className = "tooltip";
    box.appendChild(svg);
    box.appendChild(tip);
    var panel = htmlEl("div", "selection-panel", null);
    panel.dataset.device = dev.device;
    box.parentNode.insertBefore(panel, box.nextSibling);

    function bucketAt(ns) { return Math.min(n - 1, Math.max(0, Math.floor((ns - t0) / slice))); }
    function x(ns) { return r1(M.l + (Math.min(Math.max(ns, view[0]), view[1]) - view[0]) / (view[1] - view[0]) * pw); }
    function timeAt(sx) { return view[0] + (Math.min(Math.max(sx, M.l), M.l + pw) - M.l) / pw * (view[1] - view[0]); }

    // The buckets in view, gathered into columns at most a pixel wide: each the lowest and highest
    // of its buckets and the value at its end. Zoomed in until a bucket is wider than a pixel, the
    // columns come from the finer level instead (fineColumns).
    function columns() {
      var b0 = bucketAt(view[0]), b1 = Math.max(b0, bucketAt(view[1] - 1)), count = b1 - b0 + 1;
      if (fine && count < pw && fine.width_ns < slice) return fineColumns();
      var per = Math.max(1, Math.ceil(count / pw)), cols = [];
      colNs = per * slice;
      for (var i = b0; i <= b1; i += per) {
        var j1 = Math.min(b1, i + per - 1), c = { from: Math.max(tl.t_ns[i], view[0]),
          to: Math.min(tl.t_ns[j1] + slice, view[1]), amin: Infinity, amax: 0, rmin: Infinity, rmax: 0, nvml: 0, tmax: 0, fmax: 0 };
        var top = i;  // the bucket of the most tensors: its categories are the column's
        for (var j = i; j <= j1; j++) {
          c.amin = Math.min(c.amin, tl.allocated_min[j]); c.amax = Math.max(c.amax, tl.allocated_max[j]);
          c.rmin = Math.min(c.rmin, tl.reserved_min[j]); c.rmax = Math.max(c.rmax, tl.reserved_max[j]);
          c.nvml = Math.max(c.nvml, tl.nvml_process_max[j]);
          if (fw) { c.tmax = Math.max(c.tmax, tl.tensors_max[j]); c.fmax = Math.max(c.fmax, tl.framework_reserved_max[j]); }
          if (fw && tl.tensors_max[j] > tl.tensors_max[top]) top = j;
        }
        c.cats = categoriesAt(tl.tensor_categories, top);
        c.alast = tl.allocated_last[j1]; c.rlast = tl.reserved_last[j1];
        if (fw) { c.tlast = tl.tensors_last[j1]; c.flast = tl.framework_reserved_last[j1]; }
        cols.push(c);
      }
      return cols;
    }

    // The finer level (fine_timeline.h): only the slices where something happened are kept, by
    // index; between two kept slices the level stayed where the earlier one ended. Columns of whole
    // fine slices, at most a pixel wide; a column's figures start at the level it was entered at.
    function fineColumns() {
      var w = fine.width_ns, o = fine.origin_ns, kept = fine.index.length, cols = [];
      var per = Math.max(1, Math.ceil((view[1] - view[0]) / pw / w));
      colNs = per * w;
      var g0 = Math.floor(Math.max(0, view[0] - o) / w / per), g1 = Math.floor(Math.max(0, view[1] - 1 - o) / w / per);
      var k = 0, hi = kept;  // k: the first kept slice at or after the view's first column
      while (k < hi) { var mid = (k + hi) >> 1; if (fine.index[mid] < g0 * per) k = mid + 1; else hi = mid; }
      function level(i) {
        return i < 0 ? { a: 0, r: 0, t: 0, f: 0, c: categoriesAt(null, 0) } : { a: fine.allocated_last[i],
          r: fine.reserved_last[i], t: fw ? fine.tensors_last[i] : 0, f: fw ? fine.framework_reserved_last[i] : 0,
          c: categoriesAt(fine.tensor_categories_last, i) };
      }
      var now = level(k - 1);
      for (var g = g0; g <= g1; g++) {
        var end = (g + 1) * per, c = { from: Math.max(o + g * per * w, view[0]), to: Math.min(o + end * w, view[1]),
          amin: now.a, amax: now.a, rmin: now.r, rmax: now.r, tmax: now.t, fmax: now.f, nvml: 0, cats: now.c };
        for (; k < kept && fine.index[k] < end; k++) {
          c.amin = Math.min(c.amin, fine.allocated_min[k]); c.amax = Math.max(c.amax, fine.allocated_max[k]);
          c.rmin = Math.min(c.rmin, fine.reserved_min[k]); c.rmax = Math.max(c.rmax, fine.reserved_max[k]);
          c.nvml = Math.max(c.nvml, fine.nvml_process_max[k]);
          if (fw && fine.tensors_max[k] > c.tmax) { c.tmax = fine.tensors_max[k]; c.cats = categoriesAt(fine.tensor_categories_at_max, k); }
          if (fw) c.fmax = Math.max(c.fmax, fine.framework_reserved_max[k]);
          now = level(k);
        }
        c.alast = now.a; c.rlast = now.r; c.tlast = now.t; c.flast = now.f;
        cols.push(c);
      }
      return cols;
    }

    // The tensors by category: the timeline's tensor_categories per bucket and, zoomed in, the finer
    // level's per slice (tensor_categories_at_max, _last), each adding up to the tensors at the
    // column's highest; every column carries them (cats), so they are drawn stacked from the columns.
    // Only the categories that are ever non-zero, in the legend's order.
    var CATEGORY_ORDER = ["parameters", "gradients", "optimizer_state", "activations", "temporaries", "kv_cache",
                          "other", "unknown"];
    var cats = !fw || !tl.tensor_categories ? [] : CATEGORY_ORDER.filter(function (k) {
      var v = tl.tensor_categories[k];
      return (v && v.some(function (b) { return b > 0; })) || (fine && fine.tensor_categories_at_max &&
        (fine.tensor_categories_at_max[k] || fine.tensor_categories_last[k]));
    });
    // {category: bytes} of entry i of `arrays` (absent arrays: 0).
    function categoriesAt(arrays, i) {
      var out = {};
      cats.forEach(function (k) { out[k] = arrays && arrays[k] ? arrays[k][i] : 0; });
      return out;
    }
    function drawCategories(parent, y) {
      var g = svgEl("g", { "class": "categories" }, parent), base = cols.map(function () { return 0; });
      cats.forEach(function (k) {
        var upper = "", lower = "";
        cols.forEach(function (c, i) {
          var hi = base[i] + c.cats[k];
          upper += (i ? "H" + x(c.from) + "V" : "M" + x(c.from) + ",") + y(hi) + "H" + x(c.to);
          lower = "V" + y(base[i]) + "H" + x(c.from) + lower;
          base[i] = hi;
        });
        svgEl("path", { "class": "stack stack-" + k, d: upper + lower + "Z", "data-category": k }, g);
      });
    }

    var cols = [], colNs = slice, y = null;
    function draw() {
      cols = columns();
      var max = 1;
      cols.forEach(function (c) { max = Math.max(max, c.amax, c.rmax, c.nvml, c.tmax, c.fmax); });
      // The device's size is on the scale when it is no more than 4 times what the view holds.
      var totalShown = total > 0 && total <= 4 * max;
      var yAxis = bytesAxis(totalShown ? Math.max(max, total) : max);
      y = function (b) { return r1(M.t + ph - b / yAxis.top * ph); };
      layer.textContent = "";
      yAxis.ticks.forEach(function (t) {
        svgEl("line", { "class": "grid", x1: M.l, x2: M.l + pw, y1: y(t.bytes), y2: y(t.bytes) }, layer);
        svgText(layer, M.l - 6, y(t.bytes) + 4, t.label, { "class": "tick-label", "text-anchor": "end" });
      });
      secondsAxis(view[0], view[1]).forEach(function (t) {
        svgEl("line", { "class": "axis", x1: x(t.ns), x2: x(t.ns), y1: M.t + ph, y2: M.t + ph + 4 }, layer);
        svgText(layer, x(t.ns), M.t + ph + 16, t.label, { "class": "tick-label", "text-anchor": "middle" });
      });
      svgText(layer, M.l + pw, captionY, "time since the profiler started", { "class": "tick-label axis-caption", "text-anchor": "end" });
      svgEl("line", { "class": "axis", x1: M.l, x2: M.l + pw, y1: M.t + ph, y2: M.t + ph }, layer);
      svgEl("line", { "class": "axis", x1: M.l, x2: M.l, y1: M.t, y2: M.t + ph }, layer);

      // Each series: a shade from each column's lowest to its highest value (a peak shorter than a
      // slice keeps its full height), and a step line through the value at each column's end, so the
      // line ends at the true last value. The shade's outline runs along the columns' highs left to
      // right and back along their lows, one vertical and one horizontal move per column each way
      // (SVG's H takes one coordinate: "H x,y" would be two horizontal moves). Each column's pixels
      // are kept on the path as data-cols, so a test can hold the outline to the columns.
      function band(lo, hi) {
        var top = "", bottom = "";
        cols.forEach(function (c, i) {
          top += (i ? "H" + x(c.from) + "V" : "M" + x(c.from) + ",") + y(c[hi]) + "H" + x(c.to);
          bottom = "V" + y(c[lo]) + "H" + x(c.from) + bottom;
        });
        return top + bottom + "Z";
      }
      function bandColumns(lo, hi) {
        return cols.map(function (c) {
          return [x(c.from), x(c.to), y(c[lo]), y(c[hi])].map(function (v) { return Math.round(v * 100) / 100; }).join(",");
        }).join(" ");
      }
      function steps(key) {
        var d = "";
        cols.forEach(function (c, i) { d += i ? "H" + x(c.from) + "V" + y(c[key]) : "M" + x(c.from) + "," + y(c[key]); });
        return d + "H" + x(cols[cols.length - 1].to);
      }
      [["reserved", "rmin", "rmax", "rlast"], ["allocated", "amin", "amax", "alast"]].forEach(function (s) {
        svgEl("path", { "class": "band band-" + s[0], d: band(s[1], s[2]), "data-cols": bandColumns(s[1], s[2]) }, layer);
        svgEl("path", { "class": "series series-" + s[0], d: steps(s[3]), "data-series": s[0] }, layer);
      });
      // The tensors stacked by category, under the framework's lines.
      if (fw && cats.length) drawCategories(layer, y);
      // The framework level: its highest per column, then its last value (lines only).
      if (fw) {
        [["framework-reserved", "fmax", "flast"], ["tensors", "tmax", "tlast"]].forEach(function (s) {
          svgEl("path", { "class": "series series-" + s[0], d: steps(s[1]) + "V" + y(cols[cols.length - 1][s[2]]),
            "data-series": s[0] }, layer);
        });
      }
      // NVML's view of the process: dashed, through the columns that had a sample.
      var d = "", pts = 0;
      cols.forEach(function (c) {
        if (c.nvml > 0) d += (pts++ ? "L" : "M") + r1((x(c.from) + x(c.to)) / 2) + "," + y(c.nvml);
      });
      if (pts) svgEl("path", { "class": "series series-nvml", d: pts === 1 ? d + "h2" : d, "data-series": "nvml" }, layer);
      if (legendTotal) legendTotal.hidden = !totalShown;
      if (totalShown) {
        var g = svgEl("g", { "class": "device-total" }, layer);
        svgEl("line", { x1: M.l, x2: M.l + pw, y1: y(total), y2: y(total) }, g);
        svgText(g, M.l + 4, y(total) - 4, "device total " + humanBytes(total));
      }

      // Markers and marks: a vertical line each, labelled where there is room (two label rows).
      var rowEnd = [-1e9, -1e9];
      function vertical(at, attrs, label, text) {
        if (at < view[0] || at > view[1]) return;
        var mx = x(at), g = svgEl("g", attrs, layer);
        svgEl("line", { x1: mx, x2: mx, y1: M.t - 2, y2: M.t + ph }, g);
        svgEl("title", {}, g).textContent = humanTime(at) + ": " + text;
        var width = label.length * 6.2 + 8;
        for (var row = 0; row < 2; row++) {
          if (rowEnd[row] > mx - 2) continue;
          var anchorEnd = mx + width > W;
          svgText(g, anchorEnd ? mx - 3 : mx + 3, M.t - 8 - row * 14, label, { "text-anchor": anchorEnd ? "end" : "start" });
          rowEnd[row] = anchorEnd ? mx : mx + width;
          break;
        }
      }
      markers.forEach(function (m) {
        vertical(m.at_ns, { "class": "marker marker-" + m.type, "data-type": m.type, "data-at-ns": m.at_ns }, markerLabel(m),
          markerText(m));
      });
      marks.forEach(function (m) {
        vertical(m.at_ns, { "class": "mark", "data-name": m.name, "data-at-ns": m.at_ns }, m.name,
          "mark \u201c" + m.name + "\u201d: " + humanBytes(m.allocated) + " allocated in the process");
      });

      // Ranges: a band per call (or run of short calls) under the axis, a row per thread and depth.
      ranges.bands.forEach(function (b) {
        if (b.row >= lanes || b.to < view[0] || b.from > view[1]) return;
        var bx = x(b.from), bw = Math.max(1, x(b.to) - bx), by = bandTop + b.row * LANE_H;
        var g = svgEl("g", { "class": "range-band", "data-name": b.name, "data-from-ns": b.from, "data-to-ns": b.to }, layer);
        svgEl("rect", { x: bx, y: by, width: r1(bw), height: LANE_H - 2, rx: 2, fill: flameFill({ name: b.name }) }, g);
        svgEl("title", {}, g).textContent = rangeText(b);
        var label = bw >= FLAME_LABEL_MIN ? fitLabel(b.name + (b.calls > 1 ? " \u00d7" + b.calls : ""), bw - 6) : "";
        if (label) svgText(g, r1(bx + 3), by + 10.5, label);
      });
      if (more) {
        svgText(layer, M.l, H - 2, (ranges.rows - lanes) + " more rows of ranges are not drawn (the tooltip names them)",
          { "class": "tick-label" });
      }

      // The selected window, shaded, and the slice of its highest point.
      if (selection[0] > full[0] || selection[1] < full[1]) {
        svgEl("rect", { "class": "selection", x: x(selection[0]), y: M.t, width: Math.max(1, x(selection[1]) - x(selection[0])), height: ph }, layer);
      }
      // (Not when the view is inside that slice: where in it the highest point lies is not known.)
      if (chosen >= 0 && tl.t_ns[chosen] + slice >= view[0] && tl.t_ns[chosen] <= view[1] &&
          (tl.t_ns[chosen] >= view[0] || tl.t_ns[chosen] + slice <= view[1])) {
        svgEl("circle", { "class": "selection-peak", cx: r1((x(tl.t_ns[chosen]) + x(tl.t_ns[chosen] + slice)) / 2),
          cy: y(tl.allocated_max[chosen]), r: 4 }, layer);
      }
      svg.dataset.viewFrom = view[0];  // for tests: the view and where the plot lies in the viewBox
      svg.dataset.viewTo = view[1];
      svg.dataset.plotLeft = M.l;
      svg.dataset.plotWidth = pw;
      resetButton.disabled = view[0] === full[0] && view[1] === full[1] && selection[0] === full[0] && selection[1] === full[1];
      viewText.textContent = "Showing " + humanTime(view[0]) + " to " + humanTime(view[1]) + ", " +
        humanTime(colNs) + " a column.";
    }

    // ---- zoom, pan, selection ----
    function setView(a, b) {
      var span = Math.min(full[1] - full[0], Math.max(b - a, Math.min(minSpan, full[1] - full[0])));
      a = Math.max(full[0], Math.min(a, full[1] - span));
      view = [a, a + span];
      draw();
    }
    function zoomBy(f) {
      var mid = (view[0] + view[1]) / 2, half = (view[1] - view[0]) * f / 2;
      setView(mid - half, mid + half);
    }
    function pan(f) {
      var d = (view[1] - view[0]) * f;
      setView(view[0] + d, view[1] + d);
    }
    function reset() {
      view = full.slice();
      select(full[0], full[1]);
    }
    function select(a, b) {
      selection = [a, b];
      var i0 = bucketAt(a), i1 = Math.max(i0, bucketAt(b - 1));
      chosen = i0;
      for (var i = i0 + 1; i <= i1; i++) if (tl.allocated_max[i] > tl.allocated_max[chosen]) chosen = i;
      draw();
      showSelection(panel, dev, sets, selection, chosen, slice, selection[0] === full[0] && selection[1] === full[1]);
    }

    var down = null;
    svg.addEventListener("mousedown", function (ev) {
      var sx = svgX(ev);
      if (ev.button !== 0 || sx < M.l || sx > M.l + pw) return;
      ev.preventDefault();
      down = { sx: sx, pan: ev.shiftKey, view: view.slice() };
    });
    window.addEventListener("mousemove", function (ev) {
      if (!down) return;
      var sx = svgX(ev);
      if (down.pan) {
        var d = (down.sx - sx) / pw * (down.view[1] - down.view[0]);
        setView(down.view[0] + d, down.view[1] + d);
        return;
      }
      var a = Math.max(M.l, Math.min(down.sx, sx)), b = Math.min(M.l + pw, Math.max(down.sx, sx));
      drag.setAttribute("x", r1(a));
      drag.setAttribute("width", r1(b - a));
      drag.setAttribute("visibility", "visible");
    });
    window.addEventListener("mouseup", function (ev) {
      if (!down) return;
      var start = down;
      down = null;
      drag.setAttribute("visibility", "hidden");
      if (start.pan) return;
      var sx = svgX(ev);
      if (Math.abs(sx - start.sx) >= 4) {  // a drag: zoom into the window and select it
        var a = timeAt(Math.min(start.sx, sx)), b = timeAt(Math.max(start.sx, sx));
        setView(a, b);
        select(a, b);
        return;
      }
      var c = columnAt(sx);  // a click: the column under the pointer
      if (c) select(c.from, c.to);
    });
    svg.addEventListener("dblclick", function (ev) {
      ev.preventDefault();
      reset();
    });
    box.addEventListener("keydown", function (ev) {
      var keys = { ArrowLeft: function () { pan(-0.25); }, ArrowRight: function () { pan(0.25); },
                   "-": function () { zoomBy(2); }, "+": function () { zoomBy(0.5); }, "=": function () { zoomBy(0.5); },
                   "0": reset, Escape: reset };
      if (keys[ev.key]) { ev.preventDefault(); keys[ev.key](); }
    });

    function svgX(ev) {
      var rect = svg.getBoundingClientRect();
      return (ev.clientX - rect.left) * W / rect.width;
    }
    function columnAt(sx) {
      if (sx < M.l || sx > M.l + pw) return null;
      var t = timeAt(sx);
      for (var i = 0; i < cols.length; i++) if (t < cols[i].to || i === cols.length - 1) return cols[i];
      return null;
    }

    // Hover: a vertical line and a tooltip with the column's figures, its markers, marks and ranges.
    function tipLine(text, cls) {
      htmlEl("div", cls || "", tip, text);
    }
    svg.addEventListener("mousemove", function (ev) {
      var sx = svgX(ev), c = columnAt(sx);
      if (!c || down) {
        tip.style.display = "none";
        hover.setAttribute("visibility", "hidden");
        return;
      }
      tip.textContent = "";
      tipLine(humanTime(c.from) + " to " + humanTime(c.to), "tip-time");
      tipLine("allocated: max " + humanBytes(c.amax) + ", min " + humanBytes(c.amin) + ", at the end " + humanBytes(c.alast));
      tipLine("reserved: max " + humanBytes(c.rmax) + ", min " + humanBytes(c.rmin) + ", at the end " + humanBytes(c.rlast));
      if (fw) {
        tipLine(fw + " tensors: max " + humanBytes(c.tmax) + ", at the end " + humanBytes(c.tlast));
        cats.forEach(function (k) {  // the column's categories at its most tensors
          if (c.cats[k] > 0) tipLine("  " + k.replace(/_/g, " ") + ": " + humanBytes(c.cats[k]), "tip-category");
        });
        tipLine(fw + " reserved: max " + humanBytes(c.fmax) + ", at the end " + humanBytes(c.flast));
      }
      if (c.nvml > 0) tipLine("NVML process usage: " + humanBytes(c.nvml));
      var near = 4 / pw * (view[1] - view[0]);  // markers within 4 px count as in this column
      markers.forEach(function (m) {
        if (m.at_ns >= c.from - near && m.at_ns < c.to + near) tipLine(humanTime(m.at_ns) + ": " + markerText(m), "tip-marker");
      });
      marks.forEach(function (m) {
        if (m.at_ns >= c.from - near && m.at_ns < c.to + near) tipLine(humanTime(m.at_ns) + ": mark \u201c" + m.name + "\u201d", "tip-mark");
      });
      ranges.bands.forEach(function (b) {
        if (b.from < c.to && b.to >= c.from) tipLine("range " + rangeText(b), "tip-range");
      });
      hover.setAttribute("x1", sx);
      hover.setAttribute("x2", sx);
      hover.setAttribute("visibility", "visible");
      var boxRect = box.getBoundingClientRect();
      tip.style.display = "block";
      var left = ev.clientX - boxRect.left + 14;
      if (left + tip.offsetWidth > boxRect.width) left = ev.clientX - boxRect.left - tip.offsetWidth - 14;
      tip.style.left = Math.max(0, left) + "px";
      tip.style.top = (ev.clientY - boxRect.top + 14) + "px";
    });
    svg.addEventListener("mouseleave", function () {
      tip.style.display = "none";
      hover.setAttribute("visibility", "hidden");
    });

    reset();
  }

  // ---- what was live at the highest point of the selected window ----

  function bytesCell(tr, b) { htmlEl("td", "num", tr, humanBytes(b)); }

  function table(parent, cls, heads) {
    var t = htmlEl("table", cls, parent), tr = htmlEl("tr", "", htmlEl("thead", "", t));
    heads.forEach(function (h) { htmlEl("th", h.charAt(0) === "#" ? "num" : "", tr, h.replace(/^#/, "")); });
    return htmlEl("tbody", "", t);
  }

  function siteOf(id) {
    var s = data.explore.stacks[id];
    return s ? s.site : "(stack " + id + ")";
  }

  // The panel under the chart: the selection's highest slice and what was live there (a set of
  // analysis.explore: totals, by kind, the stacks holding most, the largest allocations), by kind,
  // the largest, by call site and as a flame graph, the way the peak's section shows the peak.
  function showSelection(panel, dev, sets, sel, chosen, slice, whole) {
    panel.textContent = "";
    var tl = dev.timeline, at = tl.t_ns[chosen];
    var set = sets ? sets.sets[sets.of_bucket[chosen]] : null;
    var h = htmlEl("h3", "selection-title", panel, whole ? "Live at the highest point of the whole timeline"
      : "Live at the highest point of " + humanTime(sel[0]) + " to " + humanTime(sel[1]));
    h.dataset.from = sel[0];
    h.dataset.to = sel[1];
    if (!set) {
      para(panel, "muted", ["The page holds no live sets for this device."]);
      return;
    }
    var p = para(panel, "selection-summary", ["Allocated memory was highest, ", ["strong", humanBytes(tl.allocated_max[chosen])],
      ", in the slice from " + humanTime(at) + " to " + humanTime(at + slice) + ". Live then: " + set[1] + " allocation" +
      (set[1] === 1 ? "" : "s") + ", " + humanBytes(set[0]) + "."]);
    p.dataset.bytes = set[0];
    p.dataset.count = set[1];
    p.dataset.slice = chosen;
    if (set[1] === 0) return;

    htmlEl("h4", "", panel, "By kind");
    var body = table(panel, "by-kind", ["kind", "#bytes", "#allocations"]);
    for (var k = 1; k < set[2].length / 2; k++) {
      if (set[2][2 * k + 1] === 0) continue;
      var tr = htmlEl("tr", "", body);
      htmlEl("td", "", tr, KIND_NAMES[k] || "kind " + k);
      bytesCell(tr, set[2][2 * k]);
      htmlEl("td", "num", tr, String(set[2][2 * k + 1]));
    }

    htmlEl("h4", "", panel, "Largest");
    body = table(panel, "allocations", ["#size", "kind", "API", "#allocated at", "#thread", "call site"]);
    set[5].forEach(function (i) {
      var a = data.explore.allocations[i], tr = htmlEl("tr", "", body);
      bytesCell(tr, a[0]);
      htmlEl("td", "", tr, a[1]);
      htmlEl("code", "", htmlEl("td", "", tr), a[2]);
      htmlEl("td", "num", tr, humanTime(a[3]));
      htmlEl("td", "num", tr, String(a[4]));
      var td = htmlEl("td", "site", tr);
      if (a[5] === 0) htmlEl("span", "muted", td, "no stack");
      else htmlEl("code", "", td, siteOf(a[5]));
    });

    // By call site: the stacks the set holds most in, grouped by their site as the peak's table is.
    var sites = {}, order = [], tree = { name: "GPU " + dev.device, value: set[0], children: [] };
    for (var s = 0; s + 2 < set[3].length; s += 3) {
      var id = set[3][s], label = id === 0 ? "(no stack captured)" : siteOf(id);
      if (!(label in sites)) { sites[label] = { bytes: 0, count: 0, stacks: 0 }; order.push(label); }
      sites[label].bytes += set[3][s + 1];
      sites[label].count += set[3][s + 2];
      sites[label].stacks++;
      addPath(tree, id, set[3][s + 1]);
    }
    if (set[4][1] > 0) {
      tree.children.push({ name: "(" + set[4][1] + " allocations of other stacks)", value: set[4][0], children: [] });
    }
    sortTree(tree);
    if (order.length > 1 || (order.length === 1 && order[0] !== "(no stack captured)")) {
      htmlEl("h4", "", panel, "By call site");
      body = table(panel, "sites", ["call site", "#bytes", "#allocations", "#stacks"]);
      order.sort(function (a, b) { return sites[b].bytes - sites[a].bytes; });
      order.forEach(function (label) {
        var tr = htmlEl("tr", "", body);
        htmlEl("code", "", htmlEl("td", "site", tr), label);
        bytesCell(tr, sites[label].bytes);
        htmlEl("td", "num", tr, String(sites[label].count));
        htmlEl("td", "num", tr, String(sites[label].stacks));
      });
      if (set[4][1] > 0) {
        para(panel, "muted", [humanBytes(set[4][0]) + " in " + set[4][1] + " allocations from further stacks are counted " +
          "in the totals and the flame graph's \u201cother stacks\u201d box only."]);
      }
      htmlEl("h4", "", panel, "Flame graph");
      drawFlameGraph(htmlEl("div", "selection-flame", panel), tree, tl.allocated_max[chosen], dev.device,
        "of the memory live at the highest point of the selection");
    }
  }

  // Adds `bytes` under `tree` along stack `id`'s frames (outermost first), as build_flame
  // (tools/analysis/flame.cpp) folds the peak: a stack without frames is one box named by its site.
  function addPath(tree, id, bytes) {
    var st = id === 0 ? null : data.explore.stacks[id], path = st ? st.frames : [];
    var node = tree;
    if (path.length === 0) path = [null];
    path.forEach(function (f) {
      var name = f === null ? (id === 0 ? "(no stack captured)" : siteOf(id)) : data.explore.frames[f][0];
      var python = f !== null && data.explore.frames[f][1];
      var child = null;
      node.children.forEach(function (c) { if (c.name === name) child = c; });
      if (!child) { child = { name: name, value: 0, children: [], python: python }; node.children.push(child); }
      child.value += bytes;
      node = child;
    });
  }

  function sortTree(n) {
    n.children.sort(function (a, b) { return b.value - a.value; });
    n.children.forEach(sortTree);
  }

  // ---- the flame graph of the peak ----
  // One icicle per device (root at the top) of analysis.devices[i].flame: the allocations live at
  // the device's allocated peak, folded by call stack (tools/analysis/flame.cpp). The root is
  // "GPU N", then each stack's frames outermost first; a node's value is the bytes allocated from
  // it and from everything it called, so a box's width is its share of the peak and its children
  // are drawn below it. Stacks without a named record hang from the root as one placeholder frame
  // ("(no stack captured)", "(stack N not in attribution.jsonl)", "(only profiler frames)").

  var FLAME_ROW = 18;         // px per frame row
  var FLAME_MIN_WIDTH = 0.5;  // px: a narrower box (and what it called) is not drawn
  var FLAME_LABEL_MIN = 22;   // px a box needs before it gets a label: room for "ab…"
  var FLAME_TYPE_TEXT = {
    root: "the device: everything live at its allocated peak",
    python: "Python frame", native: "native frame",
    none: "allocations whose stack has no named frames"
  };

  // The placeholder frames of site_label (tools/analysis/call_sites.cpp), and the box of the stacks a
  // selection's set does not name (showSelection), only ever under the root.
  var FLAME_PLACEHOLDER = /^\((no stack captured|stack \d+ not in attribution\.jsonl|only profiler frames|\d+ allocations? of other stacks)\)$/;

  // The tree with parents, depths and frame types (the analysis marks Python frames "python").
  function flameTree(node, parent, depth) {
    var n = { name: node.name, value: node.value, parent: parent, depth: depth };
    if (depth === 0) n.type = "root";
    else if (depth === 1 && FLAME_PLACEHOLDER.test(node.name)) n.type = "none";
    else n.type = node.python ? "python" : "native";
    n.children = (node.children || []).map(function (c) { return flameTree(c, n, depth + 1); });
    return n;
  }

  // A stable shade per name, so a frame keeps its colour across zooms and adjacent boxes differ.
  function nameHash(s) {
    var h = 2166136261;  // FNV-1a
    for (var i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return h >>> 0;
  }

  function flameFill(n) {
    var h = nameHash(n.name), a = (h & 0xffff) / 0xffff, b = (h >>> 16) / 0xffff;
    if (n.type === "python") return "hsl(" + Math.round(176 + 30 * a) + ", 55%, " + Math.round(58 + 14 * b) + "%)";
    return "hsl(" + Math.round(18 + 30 * a) + ", 88%, " + Math.round(60 + 12 * b) + "%)";
  }

  function percentOf(part, whole) {
    if (!(whole > 0)) return "";
    var p = 100 * part / whole;
    return (p > 0 && p < 0.1 ? "<0.1" : p.toFixed(1)) + "%";
  }

  // Label width: measured with the page's own font on a canvas (nothing is drawn there), or
  // estimated where a canvas is not available.
  var measureCtx;
  function textWidth(s) {
    if (measureCtx === undefined) {
      measureCtx = document.createElement("canvas").getContext("2d");
      if (measureCtx) measureCtx.font = "11px " + getComputedStyle(document.body).fontFamily;
    }
    return measureCtx ? measureCtx.measureText(s).width : s.length * 6.2;
  }

  // The name, or its longest prefix that fits `room` with an ellipsis ("" when not 2 characters).
  function fitLabel(name, room) {
    if (textWidth(name) <= room) return name;
    var chars = Array.from(name), lo = 0, hi = chars.length - 1;  // code points: no split surrogates
    while (lo < hi) {
      var mid = (lo + hi + 1) >> 1;
      if (textWidth(chars.slice(0, mid).join("") + "\u2026") <= room) lo = mid;
      else hi = mid - 1;
    }
    return lo >= 2 ? chars.slice(0, lo).join("") + "\u2026" : "";
  }

  function htmlEl(name, cls, parent, text) {
    var e = document.createElement(name);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // A paragraph from pieces: strings are text, ["code", s] a <code> element. Text only, no markup.
  function para(parent, cls, pieces) {
    var p = htmlEl("p", cls, parent);
    pieces.forEach(function (x) {
      if (typeof x === "string") p.appendChild(document.createTextNode(x));
      else htmlEl(x[0], "", p, x[1]);
    });
    return p;
  }

  // Rows below `n` that have a box wide enough to draw at `scale` px per byte.
  function rowsBelow(n, scale) {
    var most = 0;
    n.children.forEach(function (c) {
      if (c.value * scale >= FLAME_MIN_WIDTH) most = Math.max(most, 1 + rowsBelow(c, scale));
    });
    return most;
  }

  // One graph of `tree` ({name, value, children, python}) for device `device`: a toolbar (reset,
  // what is zoomed) over the SVG, redrawn on each zoom; percentages are of `peak`, `what` ends its
  // accessible name.
  function drawFlameGraph(container, tree, peak, device, what) {
    var root = flameTree(tree, null, 0);
    if (!(peak > 0)) peak = root.value;
    var toolbar = htmlEl("div", "flame-toolbar", container);
    var reset = htmlEl("button", "flame-reset", toolbar, "Reset zoom");
    reset.type = "button";
    var status = htmlEl("span", "flame-status muted", toolbar);
    var chart = htmlEl("div", "flame", container);
    chart.dataset.device = device;
    // Drawn for the width at load, like the timeline; the SVG scales with the window afterwards.
    var W = Math.max(520, Math.round(chart.clientWidth || 960));

    function tip(n, focus) {
      var lines = [n.name, humanBytes(n.value) + ", " + percentOf(n.value, peak) + " of the peak"];
      var below = 0;
      n.children.forEach(function (c) { below += c.value; });
      if (n.children.length > 0 && n.value > below) lines.push(humanBytes(n.value - below) + " allocated in this frame itself");
      lines.push(FLAME_TYPE_TEXT[n.type]);
      if (n !== focus) lines.push(n.depth < focus.depth ? "Click to zoom out to here" : "Click to zoom in");
      return lines.join("\n");
    }

    function zoom(focus) {
      var scale = W / focus.value;
      var rows = focus.depth + 1 + rowsBelow(focus, scale);
      var H = rows * FLAME_ROW;
      var svg = svgEl("svg", {
        viewBox: "0 0 " + W + " " + H, "class": "flame-graph", role: "img", "data-device": device,
        "aria-label": "Device " + device + " flame graph " + what
      });

      function box(n, x, w, extraClass) {
        var g = svgEl("g", {
          "class": "flame-box flame-" + n.type + extraClass, "data-depth": n.depth, tabindex: n === focus ? -1 : 0
        }, svg);
        var rect = svgEl("rect", { x: r1(x), y: n.depth * FLAME_ROW, width: r1(Math.max(w, FLAME_MIN_WIDTH)), height: FLAME_ROW, rx: 2 }, g);
        if (n.type === "python" || n.type === "native") rect.setAttribute("fill", flameFill(n));
        svgEl("title", {}, g).textContent = tip(n, focus);
        if (w >= FLAME_LABEL_MIN) {
          var label = fitLabel(n.name, w - 8);
          if (label) svgText(g, r1(x + 4), n.depth * FLAME_ROW + 12.5, label);
        }
        if (n === focus) return;
        g.addEventListener("click", function () { zoom(n); });
        g.addEventListener("keydown", function (ev) {
          if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); zoom(n); }
        });
      }

      // The frames above the zoomed one span the whole width, faded: the way back out.
      for (var a = focus.parent; a; a = a.parent) box(a, 0, W, " flame-ancestor");
      (function layout(n, x) {
        box(n, x, n.value * scale, n === focus ? " flame-focus" : "");
        var cx = x;
        n.children.forEach(function (c) {
          if (c.value * scale >= FLAME_MIN_WIDTH) layout(c, cx);
          cx += c.value * scale;  // skipped boxes keep their place: widths stay proportional
        });
      })(focus, 0);

      chart.textContent = "";
      chart.appendChild(svg);
      reset.disabled = focus === root;
      status.textContent = focus === root
        ? "Click a box to zoom into it; hover for its full name and size."
        : "Zoomed into " + focus.name + ": " + humanBytes(focus.value) + ", " + percentOf(focus.value, peak) + " of the peak.";
    }

    reset.addEventListener("click", function () { zoom(root); });
    zoom(root);
  }

  // Draws into `body` (the <div class="flame-graph-body"> of the #flame-graph section): a graph
  // per device that had memory live at its peak, or says why there is none.
  function renderFlameGraph(data, body) {
    body.textContent = "";
    if (!hasStackData(data)) {
      para(body, "note flame-empty", [
        "No call stacks were recorded for this run, so there is no flame graph: no allocation carries a stack id. " +
        "Stacks are captured by default (16 frames), so the run was most likely recorded with ", ["code", "GPUMEMPROF_STACKS=0"],
        ". To see it, profile again with ", ["code", "GPUMEMPROF_STACKS"], " unset or set to a depth from 1 to 128 (e.g. ",
        ["code", "GPUMEMPROF_STACKS=16"], "); ", ["code", "GPUMEMPROF_PYTHON_STACKS=1"],
        ", the default, adds the Python frames. See docs/attribution.md."]);
      return;
    }
    var devices = data.analysis.devices.filter(function (d) { return d.flame && d.flame.value > 0; });
    if (devices.length === 0) {
      para(body, "muted flame-empty", ["No device memory was live at any allocated peak."]);
      return;
    }

    var legend = htmlEl("div", "legend", body);
    [["root", "device"], ["python", "Python frame"], ["native", "native frame"], ["none", "no stack"]].forEach(function (k) {
      htmlEl("span", "key key-flame-" + k[0], legend);
      legend.appendChild(document.createTextNode(k[1] + " "));
    });
    htmlEl("span", "muted", legend, "(each box is a frame of the stacks live at the allocated peak, its width the bytes " +
      "allocated from it and the frames it called, which are drawn below it; click a box to zoom in, \u201cReset zoom\u201d to go back)");
    if (data.analysis.attribution && data.analysis.attribution.file_present === false) {
      para(body, "note warn", ["The run directory has no ", ["code", "attribution.jsonl"],
        ", so the stacks cannot be named: each stack shows as one box with its id."]);
    }

    devices.forEach(function (dev) {
      var section = htmlEl("div", "flame-device", body);
      section.dataset.device = dev.device;
      var h = htmlEl("h3", "", section, "Device " + dev.device + " ");
      htmlEl("small", "", h, humanBytes(dev.flame.value) + " live at the allocated peak, at " +
        humanTime(dev.allocated_peak ? dev.allocated_peak.at_ns : 0));
      drawFlameGraph(section, dev.flame, dev.allocated_peak ? dev.allocated_peak.bytes : 0, dev.device,
        "of the memory live at its allocated peak");
    });
  }

  function hasStackData(data) {
    var sets = data.analysis.devices.map(function (d) { return d.live_at_peak; });
    sets.push(data.analysis.leaks);
    return sets.some(function (s) {
      return s && s.by_stack && s.by_stack.some(function (site) { return site.stack_id !== 0; });
    });
  }

  // ---- the page ----

  var ranges = rangeBands();
  data.analysis.devices.forEach(function (dev) {
    var box = document.querySelector('.chart[data-device="' + dev.device + '"]');
    if (!box) return;
    var markers = data.analysis.markers.filter(function (m) { return m.device === dev.device || m.device < 0; });
    drawTimeline(box, dev, markers, data.analysis.marks || [], ranges);
  });

  // Shown by the script only (hidden without JavaScript): a graph, or why there is none.
  var flameSection = document.getElementById("flame-graph");
  if (flameSection) {
    flameSection.hidden = false;
    renderFlameGraph(data, flameSection.querySelector(".flame-graph-body"));
  }

  document.body.dataset.rendered = "ok";
})();
