// The HTML report's inline style sheet and script. Hand-written, no libraries, nothing fetched: the
// page must open from a file on a machine with no network. The script reads the embedded JSON
// (#gmp-data, see html_report.h), draws one SVG timeline per device with a hover tooltip, and
// finally sets <body data-rendered="ok"> (a script error sets data-error instead; tests check both).
#include "html_report.h"

namespace gmp::tool {

const char* const kHtmlReportCss = R"GMPCSS(
:root {
  --fg: #1f2328; --muted: #656d76; --bg: #ffffff; --panel: #f6f8fa; --border: #d0d7de;
  --allocated: #1f6feb; --reserved: #8250df; --nvml: #1a7f37; --bad: #cf222e; --warn: #9a6700;
}
body {
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", Arial, sans-serif;
  color: var(--fg); background: var(--bg); margin: 0 auto; max-width: 1200px; padding: 12px 24px 48px;
}
h1 { font-size: 22px; margin: 8px 0 12px; }
h1 .exe { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-weight: normal; color: var(--muted); }
h2 { font-size: 18px; border-bottom: 1px solid var(--border); padding-bottom: 4px; margin: 32px 0 8px; }
h2 small, .device-name { font-weight: normal; color: var(--muted); }
h3 { font-size: 15px; margin: 20px 0 6px; }
h4 { font-size: 13px; margin: 12px 0 4px; color: var(--muted); }
code {
  font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: 12.5px; background: var(--panel);
  padding: 1px 4px; border-radius: 4px; overflow-wrap: anywhere;
}
.muted { color: var(--muted); }
.bad { color: var(--bad); }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 16px; margin: 0 0 12px; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.note { padding: 8px 12px; border-left: 4px solid var(--border); background: var(--panel); margin: 8px 0; }
.note.warn { border-color: #d4a72c; background: #fff8c5; }
.note.bad { border-color: var(--bad); background: #ffebe9; }
.hint { padding: 8px 12px; border-left: 4px solid var(--allocated); background: #ddf4ff; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 12px 0; }
.card { flex: 1 1 180px; border: 1px solid var(--border); border-radius: 6px; padding: 8px 12px; background: var(--panel); }
.card-label { font-size: 11.5px; color: var(--muted); text-transform: uppercase; letter-spacing: .03em; }
.card-value { font-size: 22px; font-weight: 600; font-variant-numeric: tabular-nums; }
.card-sub { font-size: 12px; color: var(--muted); }
.card.warn .card-value { color: var(--warn); }
.card.bad .card-value { color: var(--bad); }
nav { position: sticky; top: 0; z-index: 2; background: var(--bg); border-bottom: 1px solid var(--border); padding: 6px 0; }
nav a { margin-right: 14px; color: var(--allocated); text-decoration: none; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--border); text-align: left; }
th { background: var(--panel); font-weight: 600; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.legend { font-size: 12.5px; margin: 10px 0 2px; }
.key { display: inline-block; width: 14px; height: 10px; margin: 0 4px 0 10px; vertical-align: middle; border-radius: 2px; }
.key:first-child { margin-left: 0; }
.key-allocated { background: var(--allocated); }
.key-reserved { background: var(--reserved); opacity: .55; }
.key-nvml { height: 0; border-top: 2px dashed var(--nvml); border-radius: 0; }
.chart { position: relative; }
.chart svg { display: block; width: 100%; height: auto; font-size: 11px; }
.chart .grid { stroke: #eaeef2; }
.chart .axis { stroke: #8c959f; }
.chart .tick-label { fill: var(--muted); }
.chart .area { stroke: none; }
.chart .area-allocated { fill: var(--allocated); fill-opacity: .16; }
.chart .area-reserved { fill: var(--reserved); fill-opacity: .10; }
.chart .series { fill: none; stroke-width: 1.6; stroke-linejoin: round; }
.chart .series-allocated { stroke: var(--allocated); }
.chart .series-reserved { stroke: var(--reserved); stroke-width: 3; stroke-opacity: .5; }  /* a halo where it equals allocated */
.chart .series-nvml { stroke: var(--nvml); stroke-dasharray: 6 4; }
.chart .marker line { stroke-width: 1.2; stroke-dasharray: 4 3; stroke: var(--warn); }
.chart .marker text { fill: var(--warn); font-weight: 600; }
.chart .marker-alloc_failed line, .chart .marker-oom_bundle line { stroke: var(--bad); }
.chart .marker-alloc_failed text, .chart .marker-oom_bundle text { fill: var(--bad); }
.chart .marker-oom_recovered line, .chart .marker-alert_cleared line { stroke: var(--nvml); }
.chart .marker-oom_recovered text, .chart .marker-alert_cleared text { fill: var(--nvml); }
.chart .hover-line { stroke: #57606a; stroke-width: 1; }
.tooltip {
  position: absolute; display: none; z-index: 3; pointer-events: none; white-space: nowrap;
  background: rgba(255, 255, 255, .97); border: 1px solid var(--border); border-radius: 6px;
  padding: 6px 9px; font-size: 12px; box-shadow: 0 2px 8px rgba(0, 0, 0, .12);
}
.tooltip .tip-time { font-weight: 600; margin-bottom: 2px; }
.tooltip .tip-marker { color: var(--bad); }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
[hidden] { display: none !important; }
)GMPCSS";

const char* const kHtmlReportScript = R"GMPJS(
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
    for (var i = 0; i < n; i++) {
      max = Math.max(max, tl.allocated_max[i], tl.reserved_max[i], tl.nvml_process_max[i]);
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

  // ---- FLAME GRAPH HOOK ----
  // Draw a flame graph of the allocations live at the allocated peak into `body` (the
  // <div class="flame-graph-body"> of the #flame-graph section, which is hidden unless this is
  // called, and holds a placeholder line until then). Called only when some allocation carries a
  // stack id (hasStackData). Left empty on purpose, for the flame graph to come: the data is in
  // data.analysis.devices[i] (live_at_peak.by_stack, and where the analysis provides them,
  // "flame" {name, value, children} and "sites_at_peak").
  function renderFlameGraph(data, body) {
    void data;
    void body;
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

  if (hasStackData(data)) {
    var section = document.getElementById("flame-graph");
    section.hidden = false;
    renderFlameGraph(data, section.querySelector(".flame-graph-body"));
  }

  document.body.dataset.rendered = "ok";
})();
)GMPJS";

}  // namespace gmp::tool
