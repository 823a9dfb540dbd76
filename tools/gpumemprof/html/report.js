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
    return ns >= 1e9 ? (ns / 1e9).toFixed(3) + " s" : (ns / 1e6).toFixed(1) + " ms";
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
      case "oom_recovered": return "OOM recovered by a retry";
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

  // X axis in seconds since the profiler started.
  function secondsAxis(endNs) {
    var step = niceStep(endNs / 1e9 / 8), dec = decimalsFor(step), ticks = [];
    for (var v = 0; v * 1e9 <= endNs * (1 + 1e-9); v += step) ticks.push({ ns: v * 1e9, label: v.toFixed(dec) + " s" });
    return ticks;
  }

  // ---- one device's timeline ----

  // The framework's name as the tables write it (summary.json's "framework" object).
  function frameworkName() {
    var f = data.summary && data.summary.framework;
    return !f || !f.name || f.name === "pytorch" ? "PyTorch" : f.name;
  }

  function drawTimeline(box, dev, markers) {
    var tl = dev.timeline, n = tl && tl.t_ns ? tl.t_ns.length : 0;
    if (n === 0) {
      box.textContent = "No timeline for this device.";
      return;
    }
    var W = Math.max(520, Math.round(box.clientWidth || 960)), H = 330;
    var M = { l: 78, r: 18, t: 40, b: 40 }, pw = W - M.l - M.r, ph = H - M.t - M.b;
    var slice = n > 1 ? tl.t_ns[1] - tl.t_ns[0] : 1;
    var endNs = tl.t_ns[n - 1] + slice;
    var hasNvml = false, max = 1;
    // Where the framework bridge attached, its two levels too: tensors and the framework's cache.
    var fw = tl.tensors_max ? frameworkName() : null;
    for (var i = 0; i < n; i++) {
      max = Math.max(max, tl.allocated_max[i], tl.reserved_max[i], tl.nvml_process_max[i]);
      if (fw) max = Math.max(max, tl.tensors_max[i], tl.framework_reserved_max[i]);
      if (tl.nvml_process_max[i] > 0) hasNvml = true;
    }
    var yAxis = bytesAxis(max);
    function x(ns) { return r1(M.l + Math.min(ns, endNs) / endNs * pw); }
    function y(b) { return r1(M.t + ph - b / yAxis.top * ph); }

    var svg = svgEl("svg", {
      viewBox: "0 0 " + W + " " + H, "class": "timeline", role: "img",
      "aria-label": "Device " + dev.device + " memory over time"
    });

    // Grid and axes.
    yAxis.ticks.forEach(function (t) {
      svgEl("line", { "class": "grid", x1: M.l, x2: M.l + pw, y1: y(t.bytes), y2: y(t.bytes) }, svg);
      svgText(svg, M.l - 6, y(t.bytes) + 4, t.label, { "class": "tick-label", "text-anchor": "end" });
    });
    secondsAxis(endNs).forEach(function (t) {
      svgEl("line", { "class": "axis", x1: x(t.ns), x2: x(t.ns), y1: M.t + ph, y2: M.t + ph + 4 }, svg);
      svgText(svg, x(t.ns), M.t + ph + 16, t.label, { "class": "tick-label", "text-anchor": "middle" });
    });
    svgText(svg, M.l + pw, H - 4, "seconds since the profiler started", { "class": "tick-label", "text-anchor": "end" });
    svgEl("line", { "class": "axis", x1: M.l, x2: M.l + pw, y1: M.t + ph, y2: M.t + ph }, svg);
    svgEl("line", { "class": "axis", x1: M.l, x2: M.l, y1: M.t, y2: M.t + ph }, svg);

    // Allocated and reserved: a step line through each time slice's maximum (so a peak shorter
    // than a slice still shows at its full height), over a lightly filled area.
    function stepPath(values) {
      var d = "M" + x(0) + "," + y(values[0]);
      for (var i = 1; i < n; i++) {
        if (values[i] !== values[i - 1]) d += "H" + x(tl.t_ns[i]) + "V" + y(values[i]);
      }
      return d + "H" + x(endNs);
    }
    [["reserved", tl.reserved_max], ["allocated", tl.allocated_max]].forEach(function (s) {
      var line = stepPath(s[1]);
      svgEl("path", { "class": "area area-" + s[0], d: line + "V" + y(0) + "H" + x(0) + "Z" }, svg);
      svgEl("path", { "class": "series series-" + s[0], d: line, "data-series": s[0] }, svg);
    });
    // The framework level: lines only (its areas would hide the driver level's under them).
    if (fw) {
      [["framework-reserved", tl.framework_reserved_max], ["tensors", tl.tensors_max]].forEach(function (s) {
        svgEl("path", { "class": "series series-" + s[0], d: stepPath(s[1]), "data-series": s[0] }, svg);
      });
    }

    // NVML's view of the process: dashed, through the slices that had a sample.
    if (hasNvml) {
      var d = "", pts = 0;
      for (var j = 0; j < n; j++) {
        if (tl.nvml_process_max[j] <= 0) continue;
        d += (pts++ ? "L" : "M") + x(tl.t_ns[j] + slice / 2) + "," + y(tl.nvml_process_max[j]);
      }
      if (pts === 1) d += "h2";
      svgEl("path", { "class": "series series-nvml", d: d, "data-series": "nvml" }, svg);
    }

    // Markers: a vertical line each, labelled when there is room (two label rows).
    var rowEnd = [-1e9, -1e9];
    markers.forEach(function (m) {
      var mx = x(m.at_ns);
      var g = svgEl("g", { "class": "marker marker-" + m.type, "data-type": m.type, "data-at-ns": m.at_ns }, svg);
      svgEl("line", { x1: mx, x2: mx, y1: M.t - 2, y2: M.t + ph }, g);
      svgEl("title", {}, g).textContent = humanTime(m.at_ns) + ": " + markerText(m);
      var label = markerLabel(m), width = label.length * 6.2 + 8;
      for (var row = 0; row < 2; row++) {
        if (rowEnd[row] > mx - 2) continue;
        var anchorEnd = mx + width > W;
        svgText(g, anchorEnd ? mx - 3 : mx + 3, M.t - 8 - row * 14, label, { "text-anchor": anchorEnd ? "end" : "start" });
        rowEnd[row] = anchorEnd ? mx : mx + width;
        break;
      }
    });

    // Hover: a vertical line and a tooltip with the slice's figures and its markers.
    var hover = svgEl("line", { "class": "hover-line", x1: 0, x2: 0, y1: M.t, y2: M.t + ph, visibility: "hidden" }, svg);
    var tip = document.createElement("div");
    tip.className = "tooltip";
    box.appendChild(svg);
    box.appendChild(tip);

    function tipLine(text, cls) {
      var div = document.createElement("div");
      if (cls) div.className = cls;
      div.textContent = text;
      tip.appendChild(div);
    }

    svg.addEventListener("mousemove", function (ev) {
      var rect = svg.getBoundingClientRect();
      var sx = (ev.clientX - rect.left) * W / rect.width;
      if (sx < M.l || sx > M.l + pw) {
        tip.style.display = "none";
        hover.setAttribute("visibility", "hidden");
        return;
      }
      var i = Math.min(n - 1, Math.max(0, Math.floor((sx - M.l) / pw * endNs / slice)));
      var from = tl.t_ns[i], to = from + slice;
      tip.textContent = "";
      tipLine(humanTime(from) + " to " + humanTime(to), "tip-time");
      tipLine("allocated: max " + humanBytes(tl.allocated_max[i]) + ", at the end " + humanBytes(tl.allocated_last[i]));
      tipLine("reserved: max " + humanBytes(tl.reserved_max[i]) + ", at the end " + humanBytes(tl.reserved_last[i]));
      if (fw) {
        tipLine(fw + " tensors: max " + humanBytes(tl.tensors_max[i]) + ", at the end " +
          humanBytes(tl.tensors_last[i]));
        tipLine(fw + " reserved: max " + humanBytes(tl.framework_reserved_max[i]) + ", at the end " +
          humanBytes(tl.framework_reserved_last[i]));
      }
      if (tl.nvml_process_max[i] > 0) tipLine("NVML process usage: " + humanBytes(tl.nvml_process_max[i]));
      var near = 4 / pw * endNs;  // markers within 4 px count as in this slice
      markers.forEach(function (m) {
        if (m.at_ns >= from - near && m.at_ns < to + near) tipLine(humanTime(m.at_ns) + ": " + markerText(m), "tip-marker");
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

  // The placeholder frames of site_label (tools/analysis/call_sites.cpp), only ever under the root.
  var FLAME_PLACEHOLDER = /^\((no stack captured|stack \d+ not in attribution\.jsonl|only profiler frames)\)$/;

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

  // One device's graph: a toolbar (reset, what is zoomed) over the SVG, redrawn on each zoom.
  function drawFlameGraph(container, dev) {
    var root = flameTree(dev.flame, null, 0);
    var peak = dev.allocated_peak && dev.allocated_peak.bytes > 0 ? dev.allocated_peak.bytes : root.value;
    var toolbar = htmlEl("div", "flame-toolbar", container);
    var reset = htmlEl("button", "flame-reset", toolbar, "Reset zoom");
    reset.type = "button";
    var status = htmlEl("span", "flame-status muted", toolbar);
    var chart = htmlEl("div", "flame", container);
    chart.dataset.device = dev.device;
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
        viewBox: "0 0 " + W + " " + H, "class": "flame-graph", role: "img", "data-device": dev.device,
        "aria-label": "Device " + dev.device + " flame graph of the memory live at its allocated peak"
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
      drawFlameGraph(section, dev);
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

  data.analysis.devices.forEach(function (dev) {
    var box = document.querySelector('.chart[data-device="' + dev.device + '"]');
    if (!box) return;
    var markers = data.analysis.markers.filter(function (m) { return m.device === dev.device || m.device < 0; });
    drawTimeline(box, dev, markers);
  });

  // Shown by the script only (hidden without JavaScript): a graph, or why there is none.
  var flameSection = document.getElementById("flame-graph");
  if (flameSection) {
    flameSection.hidden = false;
    renderFlameGraph(data, flameSection.querySelector(".flame-graph-body"));
  }

  document.body.dataset.rendered = "ok";
})();
