#!/usr/bin/env python3
"""Renders `gpumemprof html` reports in headless Chromium and checks what the browser made of them.

A deterministic run of prog_ops on the fake driver (1 GiB device, fake NVML): 100, 200 and 250 MiB
allocated (peak 550.00 MiB), a 2 GiB request that fails (an OOM bundle), a warning alert at 50%.
The report is loaded in Chromium twice, once for the DOM after its script ran (--dump-dom) and once
for a screenshot, and the test checks:

  * the script finished (<body data-rendered="ok">) without an error (window.onerror sets data-error);
  * one SVG timeline with allocated, reserved and NVML series of more than a few points, and
    vertical markers for the failed allocation, the OOM bundle and the alert;
  * the peak figure "550.00 MiB", the embedded JSON's exact peak bytes, the `gpumemprof oom` hint;
  * the hover tooltip (a copy of the page sweeps the pointer across the chart) shows the peak,
    the failed allocation and NVML's figure;
  * the flame graph of the peak (the run has stacks, GPUMEMPROF_STACKS defaults to 16): boxes are
    drawn, the root box is "GPU 0" with a tooltip of 550.00 MiB, 100.0% of the peak, and clicking a
    box zooms into it and "Reset zoom" back out (in the copy of the page that sweeps the tooltip);
  * nothing that would reach the network (src=, external href, url(), @import, <link>);
  * the screenshot is a real page: many distinct colours, not a blank canvas.

A second run from an executable whose path holds "</script><b>&\"'" checks that nothing it
inserts escapes into the markup, flame graph frame names included (the copy is stripped, so its
frames are named after the file). A run with GPUMEMPROF_STACKS=0 checks the flame graph's empty
state (says why and how to enable stacks, draws no box); a copy of the first run without
attribution.jsonl, its grey placeholder boxes and note. A Python run (tests/programs/py_alloc.py
through ctypes) checks that Python frames are coloured as Python and native frames as native; its
colour checks are skipped when this CPython records no Python frames. With --framework-run-writer, a
PyTorch run under the framework bridge (written without a GPU): the tensors and PyTorch-reserved
series, their legend and tooltip lines, and the two-level table; and its categories run (labels and
phases): the tensors stacked by category with their legend, and the table of the categories at the
tensor peak, names escaped.
Exit status 0 pass, 1 fail, 77 skipped (no Chromium).

Usage: render_check.py --tool GPUMEMPROF --shim LIBGPUMEMPROF --fake-dir DIR --fake-nvml-dir DIR
                       --prog-ops PROG_OPS [--keep DIR] [--screenshot-out FILE.png]
                       [--py-alloc tests/programs/py_alloc.py (the default)] [--framework-run-writer PROG]
"""
import argparse
import glob
import html
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

MiB = 1 << 20
SKIP = 77

OPS = ["push:train", "alloc:100M", "mark:warmup done", "sleep:50", "alloc:200M", "sleep:50", "alloc:250M", "sleep:30",
       "free:1", "sleep:50", "pop", "expect_fail:2G", "sleep:30", "free:0", "sleep:50"]

failures = []

# Appended to a copy of the page: moves the pointer across the first chart in 400 steps and keeps
# every distinct tooltip text in <body data-tooltips>.
HOVER_SWEEP = """<script>
(function () {
  var svg = document.querySelector("svg.timeline"), tip = document.querySelector(".chart .tooltip");
  var r = svg.getBoundingClientRect(), seen = {};
  for (var i = 0; i <= 400; i++) {
    svg.dispatchEvent(new MouseEvent("mousemove", { clientX: r.left + r.width * i / 400, clientY: r.top + r.height / 2, bubbles: true }));
    if (tip.style.display === "block") seen[tip.textContent] = 1;
  }
  document.body.dataset.tooltips = Object.keys(seen).join(" | ");
})();
</script>
"""


# Appended to the same copy, first: the drawn labels of markers and marks, as the browser laid them out,
# and how many pairs of them overlap, in <body data-labels>.
LABELS = """<script>
(function () {
  var boxes = Array.prototype.map.call(document.querySelectorAll("svg.timeline g.marker text, svg.timeline g.mark text"),
    function (t) { var b = t.getBBox(); return { text: t.textContent, x0: b.x, x1: b.x + b.width, y0: b.y, y1: b.y + b.height }; });
  var overlaps = [];
  for (var i = 0; i < boxes.length; i++) for (var j = i + 1; j < boxes.length; j++) {
    var a = boxes[i], b = boxes[j];
    if (a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1) overlaps.push(a.text + " / " + b.text);
  }
  document.body.dataset.labels = JSON.stringify({ labels: boxes.map(function (b) { return b.text; }), overlaps: overlaps });
})();
</script>
"""


# Appended to the same copy: clicks the widest frame below the root, then "Reset zoom", and keeps what
# the first flame graph looked like at each step in <body data-flame-zoom> as JSON.
FLAME_ZOOM = """<script>
(function () {
  function graph() {
    var svg = document.querySelector("#flame-graph svg.flame-graph");
    var focus = svg.querySelector(".flame-focus"), rect = focus.querySelector("rect");
    return { focus: focus.querySelector("title").textContent.split("\\n")[0], depth: focus.getAttribute("data-depth"),
             focusWidth: rect.getAttribute("width"), width: svg.viewBox.baseVal.width,
             ancestors: svg.querySelectorAll(".flame-ancestor").length,
             boxes: svg.querySelectorAll(".flame-box").length,
             resetDisabled: document.querySelector("#flame-graph .flame-reset").disabled };
  }
  var steps = [graph()];
  var child = document.querySelector('#flame-graph svg.flame-graph .flame-box[data-depth="1"]');
  steps.push({ clicked: child.querySelector("title").textContent.split("\\n")[0] });
  child.dispatchEvent(new MouseEvent("click", { bubbles: true }));
  steps.push(graph());
  document.querySelector("#flame-graph .flame-reset").click();
  steps.push(graph());
  document.body.dataset.flameZoom = JSON.stringify(steps);
})();
</script>
"""


# Appended to the same copy: drives the timeline as a user would (times from the embedded data, the
# 100, 200 and 250 MiB allocations at A, B and C): drags across a window inside [A, B], presses
# the right arrow (pan), double-clicks (reset), clicks a time inside [B, C]. After each step it keeps
# the view, the selection panel's figures and what it drew in <body data-explore> as JSON.
EXPLORE = """<script>
(function () {
  var data = JSON.parse(document.getElementById("gmp-data").textContent);
  var at = data.explore.allocations.map(function (a) { return a[3]; }).sort(function (p, q) { return p - q; });
  var svg = document.querySelector("svg.timeline"), chart = document.querySelector(".chart");
  function clientX(t) {
    var r = svg.getBoundingClientRect(), from = +svg.dataset.viewFrom, to = +svg.dataset.viewTo;
    var sx = +svg.dataset.plotLeft + (t - from) / (to - from) * +svg.dataset.plotWidth;
    return r.left + sx * r.width / svg.viewBox.baseVal.width;
  }
  function mouse(type, t, target) {
    var r = svg.getBoundingClientRect();
    (target || svg).dispatchEvent(new MouseEvent(type, { clientX: clientX(t), clientY: r.top + r.height / 3, bubbles: true, button: 0 }));
  }
  function state(step) {
    var panel = document.querySelector(".selection-panel"), summary = panel.querySelector(".selection-summary");
    var root = panel.querySelector("svg.flame-graph .flame-root title");
    var first = panel.querySelector("table.allocations tbody tr td");
    return { step: step, from: +svg.dataset.viewFrom, to: +svg.dataset.viewTo,
             bytes: summary ? +summary.dataset.bytes : -1, count: summary ? +summary.dataset.count : -1,
             title: panel.querySelector(".selection-title").textContent,
             largest: first ? first.textContent : "", flameRoot: root ? root.textContent.split("\\n").slice(0, 2).join(" | ") : "",
             selection: svg.querySelectorAll("rect.selection").length,
             resetDisabled: document.querySelector(".timeline-reset").disabled,
             bands: Array.prototype.map.call(svg.querySelectorAll(".range-band"), function (g) { return g.dataset.name; }),
             marks: Array.prototype.map.call(svg.querySelectorAll("g.mark"), function (g) { return g.dataset.name; }),
             total: svg.querySelectorAll(".device-total line").length };
  }
  var steps = [state("load")], a = at[0] + (at[1] - at[0]) * 0.2, b = at[0] + (at[1] - at[0]) * 0.8;
  steps[0].window = [a, b];
  mouse("mousedown", a);
  mouse("mousemove", (a + b) / 2, window);
  mouse("mouseup", b, window);
  steps.push(state("drag"));
  chart.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
  steps.push(state("pan"));
  mouse("dblclick", a);
  steps.push(state("reset"));
  var t = (at[1] + at[2]) / 2;
  mouse("mousedown", t);
  mouse("mouseup", t, window);
  steps.push(state("click"));
  document.body.dataset.explore = JSON.stringify(steps);
})();
</script>
"""


def check(ok, what):
    print(("  ok    " if ok else "  FAIL  ") + what)
    if not ok:
        failures.append(what)
    return ok


def find_chromium():
    explicit = os.environ.get("CHROMIUM")
    if explicit:
        return explicit if shutil.which(explicit) else None
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def profile(args, workdir, exe, ops, extra_env=None):
    """Runs `exe OPS` under the shim on the fake driver; returns its run directory."""
    runs = tempfile.mkdtemp(prefix="runs.", dir=workdir)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMPROF_", "FAKE_CUDA_", "FAKE_NVML_"))}
    env.update({
        "LD_PRELOAD": args.shim,
        "LD_LIBRARY_PATH": args.fake_dir + ":" + args.fake_nvml_dir,
        "GPUMEMPROF_OUTPUT": runs + "/run.%p",
        "GPUMEMPROF_SAMPLE_MS": "10",
        "GPUMEMPROF_WARN_PERCENT": "50",
        "FAKE_CUDA_CAPACITY": "1G",
        "FAKE_NVML_USED": str(700 * MiB),
        "FAKE_NVML_PROCESS_USED": str(600 * MiB),
    })
    env.update(extra_env or {})
    r = subprocess.run([exe] + ops, env=env, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit("render_check: %s failed (%d): %s" % (exe, r.returncode, r.stderr.strip()))
    dirs = glob.glob(runs + "/run.*")
    if len(dirs) != 1:
        sys.exit("render_check: expected one run directory under %s, found %s" % (runs, dirs))
    return dirs[0]


def html_report(args, run_dir, out):
    r = subprocess.run([args.tool, "html", run_dir, "-o", out], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit("render_check: gpumemprof html failed (%d): %s" % (r.returncode, r.stderr.strip()))
    with open(out, encoding="utf-8") as f:
        return f.read()


def chromium(browser, workdir, page, *extra):
    profile_dir = tempfile.mkdtemp(prefix="chromium.", dir=workdir)
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--user-data-dir=" + profile_dir, "--window-size=1280,2000", "--hide-scrollbars"] + list(extra) + \
          ["file://" + os.path.abspath(page)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if r.returncode != 0:
        sys.exit("render_check: chromium failed (%d): %s" % (r.returncode, r.stderr.strip()[-2000:]))
    return r.stdout


def dom_with_script(browser, workdir, page, name, script):
    """The DOM of a copy of `page` (the report's text), written to workdir/name with `script` run at
    the end of its body."""
    path = os.path.join(workdir, name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page.replace("</body>", script + "</body>"))
    return chromium(browser, workdir, path, "--dump-dom")


def rendered_without_error(dom):
    """The page's script finished (<body data-rendered="ok">) and said no error on the body."""
    body = re.search(r"<body[^>]*>", dom)
    return body is not None and 'data-rendered="ok"' in body.group(0) and "data-error" not in body.group(0)


def framework_report(args, browser, workdir, name, *variant):
    """A PyTorch run written by framework_run_writer (`variant`: its optional second argument) into
    workdir/name-run, its report workdir/name.html: (the page's text, its DOM)."""
    run_dir = os.path.join(workdir, name + "-run")
    os.makedirs(run_dir, exist_ok=True)
    subprocess.run([args.framework_run_writer, run_dir, *variant], check=True, timeout=60)
    report = os.path.join(workdir, name + ".html")
    page = html_report(args, run_dir, report)
    return page, chromium(browser, workdir, report, "--dump-dom")


def embedded_json(page):
    m = re.search(r'<script type="application/json" id="gmp-data">(.*?)</script>', page, re.S)
    return json.loads(m.group(1)) if m else None


def png_pixels(path):
    """Decodes an 8-bit RGB or RGBA non-interlaced PNG (what Chromium writes); yields rows of bytes."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, width = 8, [], 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or color not in (2, 6) or interlace:
                raise ValueError("unsupported PNG: depth %d colour type %d interlace %d" % (depth, color, interlace))
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    prev = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        ftype, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF
        yield bytes(line), bpp
        prev = line


def png_colours(path):
    """(distinct colours, fraction of pixels that are not white) over the whole image."""
    colours, pixels, non_white = set(), 0, 0
    for line, bpp in png_pixels(path):
        for i in range(0, len(line), bpp):
            rgb = line[i:i + 3]
            colours.add(rgb)
            pixels += 1
            non_white += rgb != b"\xff\xff\xff"
    return len(colours), non_white / max(1, pixels)


def path_edges(d):
    """The horizontal edges (x0, x1, y) of an SVG path made of M, H, V and Z, read as a browser reads
    it: a command repeats while numbers follow ("H 10,20" is two horizontal moves)."""
    edges, x, y, start, cmd = [], 0.0, 0.0, (0.0, 0.0), None
    tokens = re.findall(r"[MHVZmhvz]|-?[\d.]+(?:e-?\d+)?", d)
    i = 0
    while i < len(tokens):
        if tokens[i] in "MHVZ":
            cmd, i = tokens[i], i + 1
            if cmd == "Z":
                if y == start[1] and x != start[0]:
                    edges.append((min(x, start[0]), max(x, start[0]), y))
                x, y = start
            continue
        if cmd == "M":
            x, y = float(tokens[i]), float(tokens[i + 1])
            start, i, cmd = (x, y), i + 2, "L"
        elif cmd == "L":  # after M, pairs are line-tos; a band has none
            nx, ny = float(tokens[i]), float(tokens[i + 1])
            if ny == y and nx != x:
                edges.append((min(x, nx), max(x, nx), y))
            x, y, i = nx, ny, i + 2
        elif cmd == "H":
            nx = float(tokens[i])
            edges.append((min(x, nx), max(x, nx), y))
            x, i = nx, i + 1
        elif cmd == "V":
            y, i = float(tokens[i]), i + 1
        else:
            i += 1
    return edges


def band_geometry(dom):
    """Each shaded band's outline against its columns: at each column's middle the outline must cross
    exactly twice, at the column's highest value (top) and at its lowest (bottom). Returns
    (series, columns checked, problems)."""
    out = []
    for m in re.finditer(r'<path[^>]*class="band band-(\w+)"[^>]*>', dom):
        tag = m.group(0)
        d = re.search(r'\bd="([^"]*)"', tag)
        cols = re.search(r'data-cols="([^"]*)"', tag)
        if not d or not cols:
            out.append((m.group(1), 0, ["no d or data-cols"]))
            continue
        edges, problems, n = path_edges(d.group(1)), [], 0
        for col in cols.group(1).split():
            x0, x1, y_lo, y_hi = (float(v) for v in col.split(","))
            if x1 - x0 < 0.02:
                continue  # narrower than the rounding of the columns' pixels
            mid = (x0 + x1) / 2
            ys = sorted(y for a, b, y in edges if a < mid < b)
            n += 1
            if len(ys) != 2 or abs(ys[0] - y_hi) > 0.02 or abs(ys[1] - y_lo) > 0.02:
                problems.append("column %.2f-%.2f: outline at %s, column from %.2f to %.2f" % (x0, x1, ys, y_hi, y_lo))
        out.append((m.group(1), n, problems))
    return out


def flame_boxes(dom):
    """(classes, full name from the tooltip's first line, label) of every flame graph box in a DOM dump."""
    boxes = []
    for m in re.finditer(r'<g class="(flame-box[^"]*)"[^>]*>(.*?)</g>', dom, re.S):
        title = re.search(r"<title>(.*?)</title>", m.group(2), re.S)
        label = re.search(r"<text[^>]*>(.*?)</text>", m.group(2), re.S)
        boxes.append((m.group(1).split(), html.unescape(title.group(1)).split("\n")[0] if title else "",
                      html.unescape(label.group(1)) if label else ""))
    return boxes


def flame_section(dom):
    m = re.search(r'<section id="flame-graph"[^>]*>.*?</section>', dom, re.S)
    return m.group(0) if m else ""


def has_stacks(data):
    sets = [d["live_at_peak"] for d in data["analysis"]["devices"]] + [data["analysis"]["leaks"]]
    return any(site["stack_id"] != 0 for s in sets for site in s.get("by_stack", []))


def no_network(page):
    bad = []
    for pattern, what in [(r"<(?:script|img|iframe|embed|object|audio|video|source)\b[^>]*\bsrc\s*=", "an element with src="),
                          (r"\bhref\s*=\s*(?![\"']?#)", "a link that is not to an anchor in the page"),
                          (r"<link\b", "a <link> element"), (r"url\s*\(", "a CSS url()"), (r"@import", "a CSS @import"),
                          (r"\bfetch\s*\(|XMLHttpRequest|WebSocket|EventSource", "a network API in the script")]:
        if re.search(pattern, page, re.I):
            bad.append(what)
    return bad


def explore_checks(dom, data):
    """The timeline driven by EXPLORE: a drag zooms into the window and shows what was live at its highest
    point (the 100 MiB allocation alone), the right arrow pans, a double-click resets to the whole run
    and its peak (550 MiB, 3 allocations), a click shows the slice under it (300 MiB, 2 allocations)."""
    m = re.search(r'data-explore="([^"]*)"', dom)
    try:
        steps = json.loads(html.unescape(m.group(1))) if m else []
    except ValueError:
        steps = []
    if not check(len(steps) == 5, "the timeline exploration script ran (%d steps)" % len(steps)):
        return
    load, drag, pan, reset, click = steps
    full = (load["from"], load["to"])
    check(load["bytes"] == 550 * MiB and load["count"] == 3 and load["title"] == "Live at the highest point of the whole timeline",
          "at load the panel shows the whole timeline's highest point: 550 MiB in 3 allocations (%s)" % load)
    check(load["resetDisabled"] and load["selection"] == 0, "at load nothing is selected and reset is disabled")
    check(load["bands"] == ["train"] and load["marks"] == ["warmup done"] and load["total"] == 1,
          "the range 'train' is a band, the mark 'warmup done' a line, the device's total a line")
    window = load["window"]
    pixel = (full[1] - full[0]) / 1000  # about a pixel of the chart at full view: mouse events land on whole pixels
    check(abs(drag["from"] - window[0]) <= 2 * pixel and abs(drag["to"] - window[1]) <= 2 * pixel,
          "a drag zooms the view into the window it spans (%s, window %s)" % ((drag["from"], drag["to"]), window))
    check(drag["bytes"] == 100 * MiB and drag["count"] == 1 and drag["largest"] == "100.00 MiB",
          "the dragged window shows what was live at its highest point: the 100 MiB allocation alone (%s)" % drag)
    check(drag["flameRoot"] == "GPU 0 | 100.00 MiB, 100.0% of the peak",
          "the window's flame graph has the root 'GPU 0' of 100.00 MiB (%r)" % drag["flameRoot"])
    check(drag["selection"] == 1 and not drag["resetDisabled"] and drag["title"].startswith("Live at the highest point of "),
          "the window is shaded, titled and reset is enabled")
    width = drag["to"] - drag["from"]
    check(abs(pan["from"] - (drag["from"] + width / 4)) < 2 and abs(pan["to"] - pan["from"] - width) < 2,
          "the right arrow pans the view by a quarter of its width")
    check((reset["from"], reset["to"]) == full and reset["bytes"] == 550 * MiB and reset["resetDisabled"],
          "a double-click resets the view and the selection to the whole run (%s)" % reset)
    check(click["bytes"] == 300 * MiB and click["count"] == 2 and click["largest"] == "200.00 MiB",
          "a click between the 200 and the 250 MiB allocations shows 300 MiB in 2 allocations (%s)" % click)
    check((click["from"], click["to"]) == full, "a click does not zoom")


def framework_checks(args, browser, workdir):
    """A PyTorch run under the framework bridge (tests/integration/framework_run.cpp): tensors peak at
    110 MiB, PyTorch's segments at 120 MiB. The chart draws both beside the driver level, the tooltip
    names them, the two-level table is on the page."""
    page, dom = framework_report(args, browser, workdir, "framework")
    check(rendered_without_error(dom), "the PyTorch run's report renders without a script error")
    # Tensors: 4, 10, 110, 104, 106, 6 and 4 MiB; PyTorch's segments: 20, 120 and 20 MiB.
    for series, levels in (("tensors", 6), ("framework-reserved", 2)):
        m = re.search(r'<path[^>]*class="series series-%s"[^>]*\bd="([^"]*)"' % series, dom)
        ys = set(re.findall(r"V([-\d.]+)", m.group(1))) if m else set()
        check(len(ys) >= levels,
              "the %s series is drawn with %d distinct levels (at least %d)" % (series, len(ys), levels))
    check('class="key key-tensors"' in dom and 'class="key key-framework-reserved"' in dom,
          "the legend names PyTorch's tensors and reserved")
    check(re.search(r'<tr data-figure="allocated"><td>allocated</td><td class="num">110\.00 MiB</td>', dom) is not None,
          "the PyTorch level table has the tensors' peak, 110.00 MiB")
    hover = dom_with_script(browser, workdir, page, "framework.hover.html", HOVER_SWEEP)
    tips = re.search(r'data-tooltips="([^"]*)"', hover)
    tips = tips.group(1) if tips else ""
    check("PyTorch tensors: max 110.00 MiB" in tips, "hovering the peak shows 'PyTorch tensors: max 110.00 MiB'")
    check("PyTorch reserved: max 120.00 MiB" in tips, "hovering the peak shows 'PyTorch reserved: max 120.00 MiB'")


def categories_checks(args, browser, workdir):
    """framework_run.h's categories run: one training step with the bootstrap's labels and phases.
    Tensors peak at 160 MiB in the optimizer phase of step 1: 40 MiB parameters (a name that would
    break the markup), 40 MiB gradients, 80 MiB optimizer state; 30 MiB activations and a 10 MiB
    temporary on the way. The chart stacks the categories (a legend key each), the table of the
    categories at the tensor peak has their bytes, shares, largest items and the phase."""
    page, dom = framework_report(args, browser, workdir, "categories", "categories")
    check(rendered_without_error(dom), "the categories run's report renders without a script error")
    drawn = re.findall(r'<path[^>]*class="stack stack-([a-z_]+)"[^>]*>', dom)
    expected = ["parameters", "gradients", "optimizer_state", "activations", "temporaries"]
    check(drawn == expected, "the tensors are stacked by category, in order: %s (drawn: %s)" % (expected, drawn))
    keys = re.findall(r'<span class="key key-category key-category-[a-z_]+" data-category="([a-z_]+)"></span>([^<]*)', dom)
    check([k[1].strip() for k in keys] == ["parameters", "gradients", "optimizer state", "activations", "temporaries"],
          "the legend names the categories that were ever non-zero, as the text report does (%s)" % keys)
    rows = re.findall(r'<tr data-category="([a-z_]+)">(.*?)</tr>', dom)
    got = {k: re.findall(r'<td[^>]*>(.*?)</td>', v) for k, v in rows}
    check([k for k, _ in rows] == ["parameters", "gradients", "optimizer_state"],
          "the table of the categories at the peak lists parameters, gradients, optimizer state (%s)" % rows)
    for cat, mib, share in (("parameters", "40.00 MiB", "25.0%"), ("gradients", "40.00 MiB", "25.0%"),
                            ("optimizer_state", "80.00 MiB", "50.0%")):
        cells = got.get(cat, [])
        check(len(cells) == 5 and cells[1] == mib and cells[2] == share,
              "%s at the peak: %s, %s (%s)" % (cat, mib, share, cells))
    escaped = html.escape("model.</script><b>&\"'.weight", quote=False)
    check("<code>%s</code> (40.00 MiB)" % escaped in dom,
          "the parameter's name is the largest item, escaped (%s)" % got.get("parameters"))
    check("<b>&" not in page.split("<script")[0], "no name escapes into the markup")
    check(re.search(r'class="categories-phase">\(optimizer of step 1[^)]*\)', dom) is not None,
          "the peak's phase is named: optimizer of step 1")
    hover = dom_with_script(browser, workdir, page, "categories.hover.html", HOVER_SWEEP)
    tips = re.search(r'data-tooltips="([^"]*)"', hover)
    tips = html.unescape(tips.group(1)) if tips else ""
    check("optimizer state: 80.00 MiB" in tips, "hovering the peak shows 'optimizer state: 80.00 MiB'")
    found = re.search(r'data-categories-zoom="([^"]*)"',
                      dom_with_script(browser, workdir, page, "categories.zoom.html", CATEGORIES_ZOOM))
    zoomed = json.loads(html.unescape(found.group(1))) if found else {}
    if check(zoomed.get("to", 0) - zoomed.get("from", 0) < zoomed.get("slice", 0),
             "zoomed onto the 3 us temporary, narrower than one of the 2048 slices: %s" % zoomed):
        check(zoomed["with"] > 0 and zoomed["without"] > 0,
              "zoomed in, the categories are the finer level's: some columns hold the temporary and some do not "
              "(%d with, %d without; the coarse slice holds it throughout)" % (zoomed["with"], zoomed["without"]))
        check(zoomed["stack_tops_match"], "zoomed in, the stacked categories reach each column's tensors exactly")


# The zoom scripts' pointer: the chart's client x of a time `t` in its current view, and a mouse
# event of `type` there (on `target`, the chart by default); `svg` is the timeline's chart.
POINTER_AT_TIME = """
  function clientX(t) {
    var r = svg.getBoundingClientRect(), from = +svg.dataset.viewFrom, to = +svg.dataset.viewTo;
    return r.left + (+svg.dataset.plotLeft + (t - from) / (to - from) * +svg.dataset.plotWidth) * r.width / svg.viewBox.baseVal.width;
  }
  function mouse(type, t, target) {
    var r = svg.getBoundingClientRect();
    (target || svg).dispatchEvent(new MouseEvent(type, { clientX: clientX(t), clientY: r.top + r.height / 3, bubbles: true, button: 0 }));
  }
"""


# Appended to a copy of the categories run's page: zooms in three drags onto the 3 us temporary (found
# in the finer level: the first slice whose tensors reach 80 MiB), then sweeps the pointer across the
# chart and counts the tooltips that list the temporary and those that do not; checks that every
# column's categories add up to its tensors. Keeps it all in <body data-categories-zoom> as JSON.
CATEGORIES_ZOOM = """<script>
(function () {
  var data = JSON.parse(document.getElementById("gmp-data").textContent);
  var tl = data.analysis.devices[0].timeline, fine = tl.fine, svg = document.querySelector("svg.timeline");
  var k = 0;
  while (fine.tensors_max[k] < 80 * 1048576) k++;
  var at = fine.origin_ns + fine.index[k] * fine.width_ns;
""" + POINTER_AT_TIME + """
  function zoom(half) {
    mouse("mousedown", at - half);
    mouse("mousemove", at, window);
    mouse("mouseup", at + half, window);
  }
  zoom(5e6);
  zoom(200e3);
  zoom(10e3);
  var tip = document.querySelector(".chart .tooltip"), r = svg.getBoundingClientRect(), out = { with: 0, without: 0 };
  for (var i = 0; i <= 600; i++) {
    svg.dispatchEvent(new MouseEvent("mousemove", { clientX: r.left + r.width * i / 600, clientY: r.top + r.height / 2, bubbles: true }));
    if (tip.style.display !== "block") continue;
    if (tip.textContent.indexOf("temporaries: 10.00 MiB") >= 0) out.with++; else out.without++;
  }
  // Each column's stacked top against the tensors' series: the stack paths' upper edges end at
  // the same heights as the tensors' step line, column by column.
  function tops(d) {
    var ys = [], m, re = /[MV][^HVZ]*?(-?[\d.]+)(?=H)/g;
    while ((m = re.exec(d)) !== null) ys.push(+m[1]);
    return ys;
  }
  // The topmost stack's upper edge gives one height per column, then its lower edge follows.
  var stacks = document.querySelectorAll("path.stack"), tensors = document.querySelector('path[data-series="tensors"]');
  var line = tops(tensors.getAttribute("d")), stackTop = tops(stacks[stacks.length - 1].getAttribute("d")).slice(0, line.length);
  out.columns = line.length;
  out.stack_tops_match = line.length > 0 && stackTop.length === line.length &&
    stackTop.every(function (y, i) { return Math.abs(y - line[i]) < 0.01; });
  out.from = +svg.dataset.viewFrom; out.to = +svg.dataset.viewTo; out.slice = tl.t_ns[1] - tl.t_ns[0];
  document.body.dataset.categoriesZoom = JSON.stringify(out);
})();
</script>
"""


# Appended to a copy of the zoom run's page: zooms in three drags onto the 90 MiB spike (times from
# the embedded finer level), then sweeps the pointer across the chart; keeps the view, the column
# width the toolbar names and every distinct tooltip in <body data-fine-zoom> as JSON.
FINE_ZOOM = """<script>
(function () {
  var data = JSON.parse(document.getElementById("gmp-data").textContent);
  var fine = data.analysis.devices[0].timeline.fine, svg = document.querySelector("svg.timeline");
  // The spike: from the slice that first rose above 10 MiB to the one it came back down in; the
  // view is centred on it and wide enough to hold it with some of the level either side.
  function at(k) { return fine.origin_ns + fine.index[k] * fine.width_ns; }
  var up = 0, down;
  while (fine.allocated_max[up] <= 10 * 1048576) up++;
  for (down = up; fine.allocated_last[down] !== 10 * 1048576; down++) {}
  var spike = (at(up) + at(down)) / 2, half = Math.max(20e3, (at(down) - at(up)) / 2 + 5e3);
  // The whole run's column (of the 2048) a time falls in.
  function column(t) {
    var starts = data.analysis.devices[0].timeline.t_ns, k = 0;
    while (k + 1 < starts.length && starts[k + 1] <= t) k++;
    return k;
  }
""" + POINTER_AT_TIME + """
  function sweep() {
    var tip = document.querySelector(".chart .tooltip"), r = svg.getBoundingClientRect(), seen = {};
    for (var i = 0; i <= 600; i++) {
      svg.dispatchEvent(new MouseEvent("mousemove", { clientX: r.left + r.width * i / 600, clientY: r.top + r.height / 2, bubbles: true }));
      if (tip.style.display === "block") seen[tip.textContent.replace(/^.*?(allocated:[^a-z]*max [^,]*).*$/, "$1")] = 1;
    }
    return Object.keys(seen);
  }
  function zoom(half) {
    mouse("mousedown", spike - half);
    mouse("mousemove", spike, window);
    mouse("mouseup", spike + half, window);
  }
  var steps = [{ tips: sweep(), view: document.querySelector(".timeline-view").textContent }];
  zoom(Math.max(20e6, 400 * half));
  zoom(Math.max(500e3, 20 * half));
  zoom(half);
  steps.push({ tips: sweep(), view: document.querySelector(".timeline-view").textContent,
               from: +svg.dataset.viewFrom, to: +svg.dataset.viewTo, slice: data.analysis.devices[0].timeline.t_ns[1],
               spike: at(down) - at(up), sameSlice: column(at(up)) === column(at(down)) });
  document.body.dataset.fineZoom = JSON.stringify(steps);
})();
</script>
"""


def fine_zoom_checks(args, browser, workdir):
    """A 0.8 s run whose 10 -> 60 -> 90 -> 60 -> 10 MiB spike takes microseconds, inside one of the
    2048 slices: zoomed onto it, the chart is re-sliced from the finer level and shows each level."""
    run = profile(args, workdir, args.prog_ops, ["alloc:10M", "sleep:400", "alloc:50M", "alloc:30M", "free_last",
                                                 "free_last", "sleep:400"])
    report = os.path.join(workdir, "zoom.html")
    page = html_report(args, run, report)
    data = embedded_json(page)
    fine = data["analysis"]["devices"][0]["timeline"].get("fine") if data else None
    check(fine is not None and fine["width_ns"] == 1 and max(fine["allocated_max"]) == 90 * MiB,
          "the page embeds the finer level, 1 ns slices for a run of few events, its highest 90 MiB")
    dom = dom_with_script(browser, workdir, page, "zoom.explore.html", FINE_ZOOM)
    found = re.search(r'data-fine-zoom="([^"]*)"', dom)
    try:
        steps = json.loads(html.unescape(found.group(1))) if found else []
    except ValueError:
        steps = []
    if not check(len(steps) == 2, "the fine zoom script ran (%d steps)" % len(steps)):
        return
    whole, zoomed = steps
    # Only when the spike fell inside one column: a short spike still straddles a column boundary
    # now and then (and a loaded machine may stretch it), and then the column before shows 60 MiB.
    if zoomed["sameSlice"]:
        check(not any("max 60.00 MiB" in t for t in whole["tips"]),
              "the whole run's columns hide the 60 MiB level inside one slice: %s" % whole["tips"])
    check(zoomed["to"] - zoomed["from"] < zoomed["slice"],
          "zoomed to %d ns, narrower than one of the 2048 slices (%d ns)" % (zoomed["to"] - zoomed["from"], zoomed["slice"]))
    levels = [l for l in ("10.00", "60.00", "90.00") if any(t.endswith("max %s MiB" % l) for t in zoomed["tips"])]
    check(levels == ["10.00", "60.00", "90.00"],
          "zoomed in, columns of their own show 10, 60 and 90 MiB: %s (%s)" % (levels, zoomed["view"]))
    check(re.search(r"[\d.]+ ns a column\.$", zoomed["view"]) is not None,
          "the toolbar names the finer columns' width: %r" % zoomed["view"])
    legend_total = re.search(r'<span class="legend-total"( hidden(?:="")?)?>', dom)
    check(legend_total is not None and legend_total.group(1) is not None and 'class="device-total"' not in dom,
          "90 MiB on a 1 GiB device: the total is not drawn, and the legend does not name it")
    bands = band_geometry(re.sub(r"<script.*?</script>", "", dom, flags=re.S))
    check(all(n > 10 and not problems for _, n, problems in bands),
          "zoomed in, each band's outline spans its columns' lowest to highest value: %s" %
          [(series, n, problems[:2]) for series, n, problems in bands])


def main():
    ap = argparse.ArgumentParser()
    for name in ("--tool", "--shim", "--fake-dir", "--fake-nvml-dir", "--prog-ops"):
        ap.add_argument(name, required=True)
    ap.add_argument("--py-alloc", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs", "py_alloc.py"),
                    help="the Python program for the Python frame colour check")
    ap.add_argument("--framework-run-writer",
                    help="write_framework_run: a PyTorch run under the framework bridge, for the two-level checks")
    ap.add_argument("--keep", help="keep the run directories, reports, DOM dumps and screenshots here")
    ap.add_argument("--screenshot-out", help="copy the main report's screenshot to this file")
    args = ap.parse_args()

    browser = find_chromium()
    if browser is None:
        print("SKIP: no chromium on PATH (set CHROMIUM=...); scripts/setup.sh installs the Debian package "
              "'chromium' so CI runs this test")
        return SKIP

    workdir = args.keep or tempfile.mkdtemp(prefix="gmp-html-")
    os.makedirs(workdir, exist_ok=True)
    print("render_check: %s, working in %s" % (browser, workdir))

    # --- the deterministic run ---
    run_dir = profile(args, workdir, args.prog_ops, OPS)
    report = os.path.join(workdir, "report.html")
    page = html_report(args, run_dir, report)
    data = embedded_json(page)
    print("report " + report)
    check(data is not None, "the page embeds the data as <script type=\"application/json\" id=\"gmp-data\">")
    if data:
        dev = data["analysis"]["devices"][0]
        check(dev["allocated_peak"]["bytes"] == 550 * MiB, "embedded allocated peak is exactly 550 MiB")
        check(len(dev["timeline"]["t_ns"]) > 100, "embedded timeline has its buckets")
        types = [m["type"] for m in data["analysis"]["markers"]]
        check("alloc_failed" in types and "oom_bundle" in types and "alert" in types,
              "embedded markers include the failed allocation, the OOM bundle and the alert")
    check(no_network(page) == [], "nothing in the page reaches the network " + str(no_network(page)))
    check("gpumemprof oom " + run_dir in page, "the page gives the `gpumemprof oom DIR` hint")

    dom = chromium(browser, workdir, report, "--dump-dom")
    with open(os.path.join(workdir, "report.dom.html"), "w", encoding="utf-8") as f:
        f.write(dom)
    body = re.search(r"<body[^>]*>", dom)
    body = body.group(0) if body else ""
    check('data-rendered="ok"' in body, "the script finished: <body data-rendered=\"ok\">")
    err = re.search(r'data-error="([^"]*)"', body)
    check(err is None, "no script error" + (": " + err.group(1) if err else ""))
    check(len(re.findall(r'<svg[^>]*class="timeline"', dom)) == 1, "one timeline chart (one device)")
    for series, min_points in (("allocated", 5), ("reserved", 5), ("nvml", 5)):
        m = re.search(r'<path[^>]*class="series series-%s"[^>]*\bd="([^"]*)"' % series, dom)
        points = len(re.findall(r"[MLHV]", m.group(1))) if m else 0
        ys = set(re.findall(r"V([-\d.]+)", m.group(1))) if m else set()
        check(points >= min_points, "%s series drawn with %d path commands (at least %d)" % (series, points, min_points))
        if series != "nvml":
            check(len(ys) >= 3, "%s series has %d distinct levels (at least 3)" % (series, len(ys)))
    # The shaded bands, read back from the drawn outline: at every column the shade spans exactly the
    # column's lowest to highest value.
    bands = band_geometry(dom)
    check(sorted(b[0] for b in bands) == ["allocated", "reserved"], "a shaded band per series: %s" % [b[0] for b in bands])
    for series, n, problems in bands:
        check(n > 100 and not problems, "the %s band's outline spans each of its %d columns' lowest to highest value%s"
              % (series, n, (": " + "; ".join(problems[:3])) if problems else ""))
    # Under the axis: the range bands above the axis caption, never over it; the legend names the
    # device total exactly when it is drawn (here it is: 550 MiB of 1 GiB), and the peak's circle.
    caption = re.search(r'<text[^>]*class="tick-label axis-caption"[^>]*\by="([\d.]+)"', dom)
    band_bottoms = [float(y) + float(h) for y, h in
                    re.findall(r'<g class="range-band"[^>]*><rect[^>]*\by="([\d.]+)"[^>]*\bheight="([\d.]+)"', dom)]
    check(caption is not None and band_bottoms and max(band_bottoms) + 2 <= float(caption.group(1)),
          "the range bands (bottom %s) end above the axis caption (%s)" % (band_bottoms, caption and caption.group(1)))
    legend_total = re.search(r'<span class="legend-total"( hidden(?:="")?)?>', dom)
    check(legend_total is not None and legend_total.group(1) is None and "device-total" in dom,
          "the legend names the device total, which is drawn")
    check("the selection's highest point" in dom and 'class="key key-peak"' in dom, "the legend names the peak's circle")
    for marker in ("alloc_failed", "oom_bundle", "alert"):
        check(re.search(r'<g[^>]*class="marker marker-%s"' % marker, dom) is not None, "the chart marks the %s event" % marker)
    check(re.search(r'<g class="marker marker-alloc_failed"[^>]*>.*?failed 2\.00 GiB', dom, re.S) is not None,
          "the failed allocation's marker is labelled 'failed 2.00 GiB'")
    check("550.00 MiB" in dom, "the peak figure 550.00 MiB is on the page")
    # The flame graph of the peak: stacks are on by default, so it is drawn.
    check(data is not None and has_stacks(data), "the run has stack ids (GPUMEMPROF_STACKS defaults to 16)")
    section = flame_section(dom)
    check(section != "" and re.search(r'<section id="flame-graph"[^>]*\bhidden', dom) is None, "the flame graph section is shown")
    boxes = flame_boxes(section)
    check(len(re.findall(r'<svg[^>]*class="flame-graph"', section)) == 1, "one flame graph (one device)")
    check(len(boxes) > 1, "the flame graph has %d boxes (more than the root)" % len(boxes))
    roots = [b for b in boxes if "flame-root" in b[0]]
    check(len(roots) == 1 and roots[0][1] == "GPU 0" and roots[0][2] == "GPU 0", "the root box is labelled 'GPU 0'")
    check(re.search(r"<title>GPU 0\n550\.00 MiB, 100\.0% of the peak\n", section) is not None,
          "the root's tooltip says 550.00 MiB, 100.0% of the peak")
    check(any("flame-native" in b[0] for b in boxes), "native frames are drawn as native frames")
    check(all(len(b[2]) <= len(b[1]) for b in boxes), "no label is longer than its frame's name")
    check("flame-empty" not in section, "no empty-state text when there are stacks")
    check(re.search(r"<[^>]*\bclass=\"tick-label\"[^>]*>1\.0 GiB<", dom) is not None,
          "the y axis reaches the device's 1 GiB (its total is drawn: the peak is more than a quarter of it)")
    # The run is 260 ms long: ticks in ms, whole numbers at a 50 ms step, never "0.0500 s".
    times = re.findall(r"<[^>]*\bclass=\"tick-label\"[^>]*>([\d.]+ (?:s|ms|\u00b5s))<", dom)
    check(len(times) >= 3 and all(re.fullmatch(r"\d+ ms", t) for t in times),
          "the x axis is labelled in milliseconds, whole numbers: %s" % times)

    # The hover tooltip: sweep the pointer across the chart and collect what the tooltip said.
    hover = dom_with_script(browser, workdir, page, "report.hover.html", LABELS + HOVER_SWEEP + FLAME_ZOOM + EXPLORE)
    found = re.search(r'data-labels="([^"]*)"', hover)
    labels = json.loads(html.unescape(found.group(1))) if found else {"labels": [], "overlaps": ["no data-labels"]}
    check(len(labels["labels"]) >= 3 and not labels["overlaps"],
          "the markers' and marks' labels do not overlap: %d drawn %s, overlapping %s"
          % (len(labels["labels"]), labels["labels"], labels["overlaps"]))
    tips = re.search(r'data-tooltips="([^"]*)"', hover)
    tips = tips.group(1) if tips else ""
    check("allocated: max 550.00 MiB" in tips, "hovering the peak shows 'allocated: max 550.00 MiB' in the tooltip")
    check("2.00 GiB failed (CUDA_ERROR_OUT_OF_MEMORY)" in tips, "hovering the failed allocation's time shows it in the tooltip")
    check("NVML process usage: 600.00 MiB" in tips, "the tooltip shows NVML's figure")
    zoom = re.search(r'data-flame-zoom="([^"]*)"', hover)
    try:
        steps = json.loads(html.unescape(zoom.group(1))) if zoom else []
    except ValueError:
        steps = []
    if check(len(steps) == 4, "the flame graph zoom script ran (%d steps)" % len(steps)):
        before, clicked, zoomed, after = steps
        check(before["focus"] == "GPU 0" and before["resetDisabled"], "before zooming the root is the focus, reset disabled")
        check(zoomed["focus"] == clicked["clicked"] and zoomed["depth"] == "1" and zoomed["ancestors"] == 1 and
              not zoomed["resetDisabled"], "clicking a frame zooms into it (%s)" % zoomed)
        check(abs(float(zoomed["focusWidth"]) - zoomed["width"]) < 0.5, "the zoomed frame spans the whole width")
        check(after == before, "'Reset zoom' goes back to the whole graph")

    explore_checks(hover, data)

    shot = os.path.join(workdir, "report.png")
    chromium(browser, workdir, report, "--screenshot=" + shot)
    check(os.path.exists(shot), "chromium wrote a screenshot")
    if os.path.exists(shot):
        size = os.path.getsize(shot)
        check(size > 20 * 1024, "the screenshot is %d KiB (more than 20 KiB)" % (size // 1024))
        colours, non_white = png_colours(shot)
        check(colours >= 16, "the screenshot has %d distinct colours (at least 16)" % colours)
        check(non_white > 0.03, "%.1f%% of the screenshot is not white (more than 3%%)" % (100 * non_white))
        if args.screenshot_out:
            shutil.copyfile(shot, args.screenshot_out)

    # --- an executable whose path would break the markup if anything were inserted unescaped ---
    hostile_dir = os.path.join(workdir, "x<")
    os.makedirs(hostile_dir, exist_ok=True)
    hostile = os.path.join(hostile_dir, "script><b id=\"injected\">&'y")
    shutil.copy(args.prog_ops, hostile)
    # Stripped, its frames are named after the file ("script><b ...+0x1a2b"): markup in flame graph names.
    strip = shutil.which("strip")
    if strip:
        subprocess.run([strip, hostile], check=True)
    hostile_run = profile(args, workdir, hostile, ["alloc:1M", "expect_fail:2G"])
    report2 = os.path.join(workdir, "hostile.html")
    page2 = html_report(args, hostile_run, report2)
    check("</script><b" not in page2 and "<b " not in page2, "the hostile path is escaped in the markup")
    data2 = embedded_json(page2)
    check(data2 is not None and data2["run"]["exe"] == hostile, "the hostile path survives the JSON embedding unchanged")
    dom2 = chromium(browser, workdir, report2, "--dump-dom")
    check(rendered_without_error(dom2), "the hostile report renders without a script error")
    check('<b id="injected"' not in dom2, "no element was injected into the DOM")
    names2 = [b[1] for b in flame_boxes(flame_section(dom2))]
    check(len(names2) > 1, "the hostile run's flame graph is drawn")
    if strip:
        check(any(n.startswith(os.path.basename(hostile) + "+0x") for n in names2),
              "flame graph frames named after the hostile file hold its name as text")

    # --- no stacks: the flame graph says why there is none and how to get one ---
    bare_run = profile(args, workdir, args.prog_ops, ["alloc:1M", "alloc:2M"], {"GPUMEMPROF_STACKS": "0"})
    report3 = os.path.join(workdir, "nostacks.html")
    data3 = embedded_json(html_report(args, bare_run, report3))
    check(data3 is not None and not has_stacks(data3), "a run with GPUMEMPROF_STACKS=0 has no stack ids")
    dom3 = chromium(browser, workdir, report3, "--dump-dom")
    check(rendered_without_error(dom3), "the report without stacks renders without a script error")
    section3 = flame_section(dom3)
    text3 = re.sub(r"<[^>]+>", "", section3)
    check(re.search(r'<section id="flame-graph"[^>]*\bhidden', dom3) is None and "flame-empty" in section3,
          "without stacks the flame graph section is shown with its empty-state text")
    check("No call stacks were recorded" in text3 and "GPUMEMPROF_STACKS=0" in text3 and "GPUMEMPROF_STACKS=16" in text3,
          "the empty state says no stacks were recorded (GPUMEMPROF_STACKS=0) and how to enable them")
    check(flame_boxes(section3) == [] and "<svg" not in section3, "without stacks no flame graph is drawn")

    # --- stacks that cannot be named (attribution.jsonl gone): placeholder boxes and a note ---
    unnamed_run = os.path.join(workdir, "unnamed-run")
    shutil.copytree(run_dir, unnamed_run)
    os.remove(os.path.join(unnamed_run, "attribution.jsonl"))
    report5 = os.path.join(workdir, "unnamed.html")
    html_report(args, unnamed_run, report5)
    dom5 = chromium(browser, workdir, report5, "--dump-dom")
    section5 = flame_section(dom5)
    boxes5 = flame_boxes(section5)
    check(re.search(r'<body[^>]*data-rendered="ok"', dom5) is not None and "data-error" not in dom5,
          "the report without attribution.jsonl renders without a script error")
    check(len(boxes5) > 1 and all("flame-none" in b[0] and re.match(r"\(stack \d+ not in attribution\.jsonl\)$", b[1])
                                  for b in boxes5 if "flame-root" not in b[0]),
          "stacks that cannot be named are grey placeholder boxes under the root")
    check("attribution.jsonl</code>, so the stacks cannot be named" in section5, "a note says attribution.jsonl is missing")

    # --- Python frames: coloured apart from native ones ---
    py_run = profile(args, workdir, sys.executable, [args.py_alloc])
    report4 = os.path.join(workdir, "python.html")
    html_report(args, py_run, report4)
    dom4 = chromium(browser, workdir, report4, "--dump-dom")
    check(rendered_without_error(dom4), "the Python run's report renders without a script error")
    boxes4 = flame_boxes(flame_section(dom4))
    py_named = [b for b in boxes4 if re.search(r" \(py_alloc\.py:\d+\)$", b[1])]
    if py_named:
        check(all("flame-python" in b[0] for b in py_named), "%d py_alloc.py frames are coloured as Python" % len(py_named))
        check(any("flame-native" in b[0] for b in boxes4) and
              all("flame-python" not in b[0] for b in boxes4 if b[1].startswith(("cuMemAlloc", "ffi_call"))),
              "native frames (ctypes, the driver) are coloured as native")
        check(all(b[0].count("flame-python") + b[0].count("flame-native") + b[0].count("flame-root") +
                  b[0].count("flame-none") == 1 for b in boxes4), "every box has exactly one frame type")
    else:
        print("  skip  Python frame colours: this python3 (%s) recorded no Python frames" % sys.version.split()[0])

    fine_zoom_checks(args, browser, workdir)

    if args.framework_run_writer:
        framework_checks(args, browser, workdir)
        categories_checks(args, browser, workdir)

    if failures:
        print("render_check: %d checks failed (artifacts in %s)" % (len(failures), workdir))
        return 1
    print("render_check: all checks passed")
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
