#!/usr/bin/env python3
"""Compare gpumemprof's summary.json with each real-GPU workload's ground truth (stdlib only).

  compare.py --work DIR [--out DIR] [--only a,b] [--no-bench]   print and write the table
  compare.py --self-test                                        check this file on tests/gpu/fixtures

The work directory is what scripts/gpu_check.py fills:
  plan.txt                      one "<name> <c|torch|train|layout|exit|hotpath|graph_c|torch_graphs|...>" line
                                per workload, in run order
  <name>/rc                     the workload's exit status (124: killed by timeout)
  <name>/gt.json                ground truth written by the workload
  <name>/base.{rc,stdout.txt}   graph_c, torch_graphs, capture_rules: the same workload run first without
                                the profiler (its ground truth in gt.base.json)
  <name>/runs/run.<pid>/        run directories (GPUMEMPROF_OUTPUT=<name>/runs/run.%p)
  <name>/{base,shim}.{json,rc}  hotpath workloads: ns per call without and with the shim
  bench/<mode>.<base|shim>.<round>.{json,rc}, bench/<mode>.shim.<round>.summary.json

Verdicts: MATCH (equal), OK (differs within a stated tolerance, reason given), INFO (shown, never
fails), SLOW (benchmark over target), MISMATCH (a figure that must match does not), FAIL (the
workload or the shim did not produce what it must), SKIP (gpu_check.py's deadline left no time
for the run). Exit status: 1 on any MISMATCH or FAIL, else 2 on any SLOW or SKIP, else 0.
"""
import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import statistics
import sys
import tempfile

MiB = 1 << 20
# PyTorch, default allocator: driver-level linear bytes that torch's counters do not see (cuBLAS,
# cuDNN handles allocating with their own cudaMalloc) are accepted up to this much, and only when
# the shim also saw allocations torch did not make.
OUTSIDE_TORCH_CAP = 256 * MiB
BENCH_TARGET = 1.05
NOSTACKS_TARGET = 1.03  # issue 13: the pool pair with GPUMEMPROF_STACKS=0
CUDA_ERROR_OUT_OF_MEMORY = 2
# An OOM bundle directory: <oom dir>/oom_dump_<YYYYmmddTHHMMSSZ>_<pid>_cuda_<seq>/.
BUNDLE_RE = re.compile(r"oom_dump_(\d{8}T\d{6}Z)_(\d+)_cuda_(\d+)")
BUNDLE_FILES = ("manifest.json", "metadata.json", "events.json", "environment.json",
                "allocations.json")


class Table:
    def __init__(self):
        self.rows = []

    def add(self, workload, metric, shim, truth, verdict, note=""):
        self.rows.append({"workload": workload, "metric": metric, "shim": shim, "truth": truth,
                          "verdict": verdict, "note": note})

    def exact(self, workload, metric, shim, truth, note=""):
        self.add(workload, metric, shim, truth, "MATCH" if shim == truth else "MISMATCH",
                 note if shim != truth else "")

    def exit_code(self):
        verdicts = {r["verdict"] for r in self.rows}
        if verdicts & {"MISMATCH", "FAIL"}:
            return 1
        return 2 if verdicts & {"SLOW", "SKIP"} else 0

    def text(self):
        def cell(v):
            if v is None:
                return "-"
            if isinstance(v, bool):
                return str(v).lower()
            return str(v)
        head = ("workload", "metric", "shim", "ground truth", "verdict")
        w = [max([len(head[i])] + [len(cell(r[k])) for r in self.rows])
             for i, k in enumerate(("workload", "metric", "shim", "truth"))]
        w = [min(x, 40) for x in w]
        line = lambda a, b, c, d, e: f"{a:<{w[0]}}  {b:<{w[1]}}  {c:>{w[2]}}  {d:>{w[3]}}  {e}"
        out = [line(*head), "-" * (sum(w) + 18)]
        for r in self.rows:
            verdict = r["verdict"] + (f" ({r['note']})" if r["note"] else "")
            out.append(line(cell(r["workload"]), cell(r["metric"]), cell(r["shim"]),
                            cell(r["truth"]), verdict))
        counts = {}
        for r in self.rows:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        out.append("-" * (sum(w) + 18))
        # Repeated at the end so that they survive when only the tail of the output is read.
        notable = [r for r in self.rows if r["verdict"] not in ("MATCH", "INFO")]
        if notable:
            out.append("not MATCH:")
            out += [f"  {r['verdict']:<8} {r['workload']} {r['metric']}: shim {cell(r['shim'])}, "
                    f"truth {cell(r['truth'])}" + (f" ({r['note']})" if r["note"] else "")
                    for r in notable]
        out.append("totals: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        return "\n".join(out) + "\n"


def read_text(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None



SKIPPED_RC = -1  # gpu_check.py's rc for a run its deadline left no time for


def add_unfinished_runs(t, name, runs):
    """The benchmark processes that gave no result, as (label, why), why an exit status or a text:
    those the deadline skipped are SKIP (nothing was measured, nothing failed); any other is a FAIL."""
    skipped = [label for label, why in runs if why == SKIPPED_RC]
    failed = [f"{label} " + (why if isinstance(why, str) else f"rc={why}") for label, why in runs if why != SKIPPED_RC]
    if skipped:
        t.add(name, "runs skipped by the deadline", len(skipped), 0, "SKIP", "; ".join(skipped))
    if failed:
        t.add(name, "failed runs", len(failed), 0, "FAIL", "; ".join(failed))

def read_rc(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def lookup(summary, metric):
    """'dev0.by_kind.pool.reserved.peak' -> the value, None when absent. devN picks the devices[]
    entry whose "device" is N, not the N-th entry."""
    node = summary
    for i, part in enumerate(metric.split(".")):
        m = re.fullmatch(r"dev(\d+)", part) if i == 0 else None
        if m:
            node = next((d for d in summary.get("devices", []) if d.get("device") == int(m[1])), None)
        elif isinstance(node, dict):
            node = node.get(part)
        else:
            return None
        if node is None:
            return None
    return node


def find_summary(workdir, pid):
    """The run directory of the workload's own process: under <workload>/runs/, the one named
    with its pid (run.<pid>, or run.<pid>.N from the shim's never-overwrite rule: the last wins),
    else the only one there is."""
    runs_dir = os.path.join(workdir, "runs")
    try:
        runs = sorted(n for n in os.listdir(runs_dir) if os.path.isdir(os.path.join(runs_dir, n)))
    except OSError:
        runs = []
    mine = [n for n in runs if pid is not None and str(pid) in re.split(r"[._]", n)]
    if mine:
        pick = max(mine, key=lambda n: [int(x) if x.isdigit() else -1 for x in n.split(".")])
    elif len(runs) == 1:
        pick = runs[0]
    else:
        stray = [n for n in os.listdir(workdir) if n.startswith("gpumemprof.")] if os.path.isdir(workdir) else []
        hint = f" (but {stray[0]} in its cwd: GPUMEMPROF_OUTPUT ignored?)" if stray else ""
        return None, (f"{len(runs)} run dirs, none for pid {pid}" if runs else "no run dir") + hint
    s = load_json(os.path.join(runs_dir, pick, "summary.json"))
    if s is None:
        return None, f"{pick} has no readable summary.json"
    return s, os.path.join(runs_dir, pick)


def run_dir_row(t, name, run_dir, s):
    """What else the run directory holds (docs/run-directory.md): shown, never judged here (the
    out-of-memory workloads judge their bundles in oom_rows)."""
    bundles, other = 0, 0
    for top, dirs, files in os.walk(run_dir):
        bundles += sum(1 for x in dirs if BUNDLE_RE.fullmatch(x))
        other += sum(os.path.getsize(os.path.join(top, f)) for f in files if not f.endswith(".json"))
    manifest = os.path.exists(os.path.join(run_dir, "manifest.json"))
    failed = lookup(s, "dev0.failed_alloc_count") or 0
    if isinstance(s.get("failed_allocations"), list):  # OOM bundles are for out-of-memory only
        failed = sum(1 for f in dev0_failures(s) if f.get("error") == CUDA_ERROR_OUT_OF_MEMORY)
    # One bundle per episode (a first failure, then failures until a retry succeeds), at most 5.
    most = min(failed, 5)
    want = "0" if most == 0 else "1" if most == 1 else f"1-{most}"
    t.add(name, "run dir: manifest, oom bundles, other bytes",
          f"{'yes' if manifest else 'NO'},{bundles},{other}", f"yes,{want},-", "INFO",
          "" if manifest and (bundles == 0 if most == 0 else 1 <= bundles <= most) else
          "expected manifest.json and, after out-of-memory failures, one bundle per episode "
          "(at most 5)")


def dev0_failures(s):
    """summary.json's failed_allocations (the first 100, process-wide) that count in
    dev0.failed_alloc_count: device 0, not pinned host memory."""
    return [f for f in s.get("failed_allocations") or []
            if f.get("device") == 0 and f.get("kind") != "host_pinned"]


def describe_failures(failures, limit=8):
    """'cuMemCreate error=1 size=2097152 x2, ...': the distinct (api, error, size), in order."""
    seen = {}
    for f in failures:
        key = (f.get("api"), f.get("error"), f.get("size"))
        seen[key] = seen.get(key, 0) + 1
    parts = [f"{api} error={err} size={size}" + (f" x{n}" if n > 1 else "")
             for (api, err, size), n in seen.items()]
    more = f", ... {len(parts) - limit} more" if len(parts) > limit else ""
    return ", ".join(parts[:limit]) + more


def failures_row(t, name, s):
    """C workloads: what failed, shown (their count is judged by the ground truth's checks)."""
    failures = s.get("failed_allocations") or []
    if failures:
        t.add(name, "failed_allocations (api error size)", len(failures), None, "INFO",
              describe_failures(failures))


def torch_failures_row(t, name, s, st):
    """dev0.failed_alloc_count for a torch workload. The shim counts every allocation call that
    returned an error; libraries probe (PyTorch asks cuMemCreate for handle types the driver may
    refuse), so failures other than CUDA_ERROR_OUT_OF_MEMORY are accepted when torch saw no OOM.
    Out-of-memory failures must be ones torch knows of: an OOM it raised (num_ooms) or a failed
    cudaMalloc it retried after freeing its cache (num_alloc_retries)."""
    metric = "dev0.failed_alloc_count"
    count = lookup(s, metric)
    ooms, retries = st.get("num_ooms", 0), st.get("num_alloc_retries", 0)
    listed = s.get("failed_allocations")
    if not isinstance(count, int):
        t.add(name, metric, count, ooms, "MISMATCH", "missing in summary.json")
        return
    if not isinstance(listed, list):
        t.add(name, metric, count, ooms, "MATCH" if count == ooms == 0 else "MISMATCH",
              "" if count == ooms == 0 else "summary.json has no failed_allocations list")
        return
    mine = dev0_failures(s)
    oom = [f for f in mine if f.get("error") == CUDA_ERROR_OUT_OF_MEMORY]
    other = [f for f in mine if f.get("error") != CUDA_ERROR_OUT_OF_MEMORY]
    listing = describe_failures(mine)
    truncated = len(listed) >= 100 and len(mine) < count  # only the first 100 are listed
    problems = []
    if len(mine) != count and not truncated:
        problems.append(f"failed_allocations lists {len(mine)} on device 0, count says {count}")
    if oom and not (ooms <= len(oom) <= ooms + retries):
        problems.append(f"{len(oom)} OOM failures, torch reported {ooms} OOMs and {retries} retries")
    elif not oom and ooms and not truncated:
        problems.append(f"torch reported {ooms} OOMs, the shim saw no OOM failure")
    if problems:
        t.add(name, metric, count, ooms, "MISMATCH", "; ".join(problems) + (f": {listing}" if listing else ""))
        return
    why = []
    if other:
        why.append(f"{len(other)} non-OOM failures: {describe_failures(other)}")
    if oom:
        why.append(f"{len(oom)} OOM failures, torch reported {ooms} OOMs and {retries} retries: "
                   f"{describe_failures(oom)}")
    if truncated:
        why.append(f"only the first {len(listed)} failures are listed")
    t.add(name, metric, count, ooms, "MATCH" if count == ooms and not other and not truncated else "OK",
          "; ".join(why))


def delta(metric, got, want):
    """'+N B' for byte figures, '+N' for counts."""
    counts = ("count", "allocs", "frees", "lost", "unknown_frees", "failures", "recovered", "written")
    return f"{got - want:+d}" + ("" if metric.split(".")[-1].endswith(counts) else " B")


def common_rows(t, name, s):
    t.exact(name, "events.lost", lookup(s, "events.lost"), 0)
    got = [lookup(s, "schema_version"), lookup(s, "clean_exit"), lookup(s, "unknown_frees")]
    t.exact(name, "schema,clean_exit,unknown_frees", ",".join(map(str, got)).lower(), "1,true,0")


def start(t, work, name):
    """The run row. Returns (ground truth, summary, run dir), the first two None when unusable.
    The exit status must be the ground truth's "expect_exit" (default 0)."""
    d = os.path.join(work, name)
    rc = read_rc(os.path.join(d, "rc"))
    gt = load_json(os.path.join(d, "gt.json"))
    s, which = find_summary(d, gt.get("pid") if gt else None)
    want_rc = gt.get("expect_exit", 0) if isinstance(gt, dict) else 0
    problems = []
    if rc != want_rc:
        problems.append({None: "no rc file", -2: "not built", 124: "timed out", 137: "killed after timeout",
                         -1: "skipped: time budget spent"}.get(rc, f"exit {rc}"))
    if gt is None:
        problems.append("no gt.json")
    elif gt.get("errors"):
        problems.append("; ".join(e.strip().splitlines()[-1] for e in gt["errors"])[:300])
    if s is None:
        problems.append(which)
    t.add(name, "run", f"rc={rc}", f"rc={want_rc}", "FAIL" if problems else "MATCH", "; ".join(problems))
    if s is not None:
        run_dir_row(t, name, which, s)
        exit_status_row(t, name, s, rc)
    return gt, s, (which if s is not None else None)


def exit_status_row(t, name, s, status, label=""):
    """summary.json's exit_status against the status the process really ended with, for a process
    that ended by exit (a signal or exec leaves none)."""
    if s.get("ended_by") not in ("exit", "exit_call") or not isinstance(status, int) or status < 0:
        return
    metric = f"{label}exit_status == the process's exit status"
    if "exit_status" not in s:
        t.add(name, metric, None, status, "INFO", "not recorded (a build from before exit_status)")
    else:
        t.exact(name, metric, s.get("exit_status"), status)


def manifest_names(manifest):
    """File names a bundle's manifest.json lists under "files": a list of names, a list of
    {"name"|"file"|"path": ...} objects, or an object keyed by name."""
    files = manifest.get("files") if isinstance(manifest, dict) else None
    if isinstance(files, dict):
        return {os.path.basename(k) for k in files}
    names = set()
    for f in files if isinstance(files, list) else []:
        if isinstance(f, str):
            names.add(os.path.basename(f))
        elif isinstance(f, dict):
            n = f.get("name") or f.get("file") or f.get("path")
            if isinstance(n, str):
                names.add(os.path.basename(n))
    return names


def allocation_list(doc):
    """allocations.json's entries: the document itself when a list, else its "allocations" (or
    "live") member."""
    if isinstance(doc, dict):
        doc = doc.get("allocations", doc.get("live"))
    return [a for a in doc if isinstance(a, dict)] if isinstance(doc, list) else None


def load_bundles(oom_dir):
    """(bundles sorted by sequence number, other entries of the oom directory). A bundle:
    {"name", "path", "pid", "seq", "docs": {file: parsed JSON or None}, "missing": [...]}."""
    bundles, stray = [], []
    try:
        entries = sorted(os.listdir(oom_dir))
    except OSError:
        return None, []
    for n in entries:
        p = os.path.join(oom_dir, n)
        m = BUNDLE_RE.fullmatch(n)
        if not m or not os.path.isdir(p) or os.path.islink(p):
            stray.append(n)
            continue
        docs, missing = {}, []
        for f in BUNDLE_FILES:
            fp = os.path.join(p, f)
            if os.path.isfile(fp):
                docs[f] = load_json(fp)
            else:
                missing.append(f)
        bundles.append({"name": n, "path": p, "pid": int(m[2]), "seq": int(m[3]), "docs": docs,
                        "missing": missing})
    bundles.sort(key=lambda b: (b["seq"], b["name"]))
    return bundles, stray


def mode_problems(oom_dir, bundles):
    """Directories (the oom directory and each bundle) must be 0700, files 0600."""
    bad = []

    def want(path, mode, label):
        try:
            got = os.lstat(path).st_mode & 0o777
        except OSError:
            return
        if got != mode:
            bad.append(f"{label} {got:04o}")
    want(oom_dir, 0o700, "oom/")
    for b in bundles:
        want(b["path"], 0o700, b["name"] + "/")
        for f in sorted(os.listdir(b["path"])):
            want(os.path.join(b["path"], f), 0o600, f"{b['name']}/{f}")
    return bad


def oom_rows(t, name, gt, s, run_dir):
    """Out-of-memory workloads: the bundles in <run dir>/oom/ against the ground truth's "oom"
    object {bundles, request_size, request_size_max, api, device, error, live_bytes, live_exact,
    failures (a number, or "summary": the OOM failures summary.json lists), recovered}, and
    summary.json's "oom" figures against the bundles."""
    want = gt["oom"]
    oom_dir = os.path.join(run_dir, "oom")
    bundles, stray = load_bundles(oom_dir)
    n_want = want.get("bundles", 1)
    # With the framework bridge, each OutOfMemoryError PyTorch raised adds its own bundle, with
    # PyTorch's figures (docs/oom-bundles.md), beside the driver-level ones.
    if (s.get("framework") or {}).get("state") == "attached":
        n_want += gt.get("stats", {}).get("num_ooms", 0)
    n = len(bundles) if bundles is not None else 0
    note = "no oom/ directory in the run directory" if bundles is None else ""
    if stray:
        note += ("; " if note else "") + "other entries: " + ", ".join(stray[:4])
    if bundles and n != n_want:
        note += ("; " if note else "") + ", ".join(b["name"] for b in bundles[:4])
    t.add(name, "oom bundle dirs", n, n_want, "MATCH" if n == n_want else "MISMATCH", note)
    bundles = bundles or []

    # Summary figures, whatever the bundles hold.
    so = s.get("oom") if isinstance(s.get("oom"), dict) else None
    listed = s.get("failed_allocations")
    oom_listed = [f for f in listed if f.get("error") == CUDA_ERROR_OUT_OF_MEMORY] \
        if isinstance(listed, list) else None
    if so is None:
        t.add(name, "oom.bundles_written vs bundle dirs", None, n, "MISMATCH",
              "no \"oom\" in summary.json")
    else:
        t.exact(name, "oom.bundles_written vs bundle dirs", so.get("bundles_written"), n)
        t.exact(name, "oom.failures vs bundles' failures", so.get("failures"),
                sum(b["docs"]["metadata.json"].get("failures", 0) or 0 for b in bundles
                    if isinstance(b["docs"].get("metadata.json"), dict)
                    and not isinstance(b["docs"]["metadata.json"].get("framework"), dict)))
        if oom_listed is not None and len(listed) < 100:
            t.exact(name, "oom.failures vs failed_allocs error=2", so.get("failures"),
                    len(oom_listed))
        recovered = sum(1 for b in bundles if isinstance(b["docs"].get("metadata.json"), dict)
                        and b["docs"]["metadata.json"].get("recovered") is True)
        t.exact(name, "oom.recovered vs recovered bundles", so.get("recovered"), recovered)
    if not bundles:
        return

    # Every bundle: its name, files, manifest and modes.
    pid = gt.get("pid")
    bad_names = [b["name"] for b in bundles if pid is not None and b["pid"] != pid]
    t.add(name, "oom bundle name pid", ",".join(sorted({str(b["pid"]) for b in bundles})), pid,
          "MISMATCH" if bad_names else "MATCH", ", ".join(bad_names[:3]))
    problems = []
    for b in bundles:
        for f in b["missing"]:
            problems.append(f"{b['name']}: no {f}")
        for f, doc in b["docs"].items():
            if doc is None:
                problems.append(f"{b['name']}: {f} is not JSON")
        if "manifest.json" in b["docs"]:
            absent = [f for f in BUNDLE_FILES if f != "manifest.json"
                      and f not in manifest_names(b["docs"]["manifest.json"])]
            if absent:
                problems.append(f"{b['name']}: manifest.files lacks " + ", ".join(absent))
    t.add(name, "oom bundle files (5, in manifest.files)",
          "ok" if not problems else f"{len(problems)} problems",
          "ok", "MISMATCH" if problems else "MATCH", "; ".join(problems[:4]))
    bad = mode_problems(oom_dir, bundles)
    t.add(name, "oom modes (dirs 0700, files 0600)", "ok" if not bad else f"{len(bad)} wrong", "ok",
          "MISMATCH" if bad else "MATCH", ", ".join(bad[:4]))

    # The first bundle (the first episode): the failing request and what was live.
    first = bundles[0]
    meta = first["docs"].get("metadata.json")
    if not isinstance(meta, dict):
        t.add(name, "oom metadata.json", None, "readable", "MISMATCH", f"{first['name']}: unusable")
        return
    req = meta.get("request") if isinstance(meta.get("request"), dict) else {}
    size, lo = req.get("size"), want.get("request_size")
    hi = want.get("request_size_max", lo)
    metric = "oom request.size"
    if size == lo:
        t.add(name, metric, size, lo, "MATCH")
    elif isinstance(size, int) and lo is not None and lo <= size <= hi:
        t.add(name, metric, size, lo, "OK", f"+{size - lo} B: the allocator rounds up (at most +{hi - lo})")
    else:
        t.add(name, metric, size, lo, "MISMATCH",
              "missing in metadata.json" if not isinstance(size, int) else
              f"{size - lo:+d} B" + (f", allowed up to +{hi - lo}" if hi != lo else ""))
    keys = [k for k in ("api", "error", "device") if k in want]
    t.exact(name, f"oom request {','.join(keys)}", ",".join(str(req.get(k)) for k in keys),
            ",".join(str(want[k]) for k in keys))

    failures = want.get("failures", 1)
    why = ""
    if failures == "summary":  # as many as the driver-level OOM failures summary.json lists
        failures = len([f for f in dev0_failures(s) if f.get("error") == CUDA_ERROR_OUT_OF_MEMORY])
        st = gt.get("stats") or gt.get("at_oom") or {}
        why = (f"summary lists {failures} OOM failures on device 0; torch: {st.get('num_ooms')} OOMs, "
               f"{st.get('num_alloc_retries')} retries")
    got = meta.get("failures")
    t.add(name, "oom failures (one episode)", got, failures,
          "MATCH" if got == failures and failures >= 1 else "MISMATCH",
          "" if got == failures and failures >= 1 else why or "expected at least one failure")
    got = f"{str(meta.get('recovered')).lower()},{meta.get('episode')}"
    t.exact(name, "oom recovered,episode", got, f"{str(want.get('recovered', False)).lower()},1")

    allocs = allocation_list(first["docs"].get("allocations.json"))
    live = want.get("live_bytes", 0)
    metric = "oom allocations.json live bytes"
    if allocs is None:
        t.add(name, metric, None, live, "MISMATCH", "allocations.json has no list of allocations")
    else:
        dev = want.get("device", 0)
        sizes = [a.get("size") for a in allocs if isinstance(a.get("size"), int)
                 and a.get("device", dev) == dev]
        total = sum(sizes)
        if want.get("live_exact"):
            if live in sizes:
                extra = total - live
                t.add(name, metric, total, live, "MATCH" if extra == 0 else "OK",
                      "" if extra == 0 else f"{len(sizes) - 1} other allocations, +{extra} B")
            else:
                t.add(name, metric, total, live, "MISMATCH",
                      f"no allocation of exactly {live} B among {len(sizes)}")
        elif total == live:
            t.add(name, metric, total, live, "MATCH")
        elif total > live:
            t.add(name, metric, total, live, "OK", f"+{total - live} B: segments beyond the live tensors")
        else:
            t.add(name, metric, total, live, "MISMATCH", f"{total - live:+d} B: live tensors not all listed")
    dm = meta.get("driver_memory") if isinstance(meta.get("driver_memory"), dict) else {}
    ll = meta.get("largest_live") if isinstance(meta.get("largest_live"), list) else []
    biggest = max((a.get("size", 0) for a in ll if isinstance(a, dict)), default=0)
    t.add(name, "oom driver free/total, largest_live", f"{dm.get('free')}/{dm.get('total')}", None,
          "INFO", f"{len(ll)} largest live, biggest {biggest} B; {len(bundles)} bundle(s), first "
          f"{first['name']}")


def compare_c(t, work, name):
    gt, s, run_dir = start(t, work, name)
    if gt is None or s is None:
        return
    common_rows(t, name, s)
    failures_row(t, name, s)
    if isinstance(gt.get("oom"), dict):
        oom_rows(t, name, gt, s, run_dir)
    check_rows(t, name, gt, s)


def check_rows(t, name, gt, s):
    """The ground truth's "checks" (truth.h): each summary.json figure exactly, or inside a stated range."""
    for c in gt.get("checks", []):
        metric, want = c["metric"], c["expect"]
        got = lookup(s, metric)
        if got == want:
            t.add(name, metric, got, want, "MATCH")
        elif "min" in c and isinstance(got, int) and c["min"] <= got <= c["max"]:
            t.add(name, metric, got, want, "OK", f"{delta(metric, got, want)}: {c['why']}")
        else:
            t.add(name, metric, got, want, "MISMATCH",
                  "missing in summary.json" if not isinstance(got, int) else delta(metric, got, want))


def torch_mode(gt):
    if gt.get("backend") == "cudaMallocAsync":
        return "async"
    return "expandable" if "expandable_segments:true" in gt.get("alloc_conf", "").lower() else "native"


def compare_torch(t, work, name):
    gt, s, run_dir = start(t, work, name)
    if gt is None or s is None or not gt.get("ok"):
        return
    common_rows(t, name, s)
    if isinstance(gt.get("oom"), dict):
        oom_rows(t, name, gt, s, run_dir)
    d = lookup(s, "dev0") or {}
    k = d.get("by_kind", {})
    mode = torch_mode(gt)
    st = gt.get("stats", {})
    t.exact(name, "dev0.total_bytes", d.get("total_bytes"), gt["total_memory"])
    torch_failures_row(t, name, s, st)

    def kv(kind, field, sub=None):
        node = k.get(kind, {})
        node = node.get(sub, {}) if sub else node
        return node.get(field) or 0

    # Where torch's reserved memory shows at driver level, per allocator.
    torch_kind = {"native": ("linear", None), "expandable": ("vmm", "physical"),
                  "async": ("pool", "reserved")}[mode]
    # Graph memory (by_kind.graph.reserved: the driver's graph pool) is driver-level memory that
    # PyTorch's counters never include, captured cuBLAS workspaces or cudaMallocAsync-backend graphs.
    reserved = {"linear": ("linear", None), "pool": ("pool", "reserved"),
                "vmm": ("vmm", "physical"), "array": ("array", None), "graph": ("graph", "reserved")}
    truth_peak, truth_cur = gt["max_memory_reserved"], gt["memory_reserved"]
    pool = gt.get("pool", {})
    if mode == "async" and "reserved_high" in pool:
        # The driver's own figures for the pool (torch reports the same attributes).
        truth_peak, truth_cur = pool["reserved_high"], pool["reserved_current"]
        t.exact(name, "torch peak == pool RESERVED_MEM_HIGH", gt["max_memory_reserved"], truth_peak)

    # Allocations made outside torch's allocator (native mode only: they share the linear kind).
    extra_allocs = extra_live = 0
    if mode == "native":
        n_alloc = st.get("num_device_alloc", st.get("segment.all.allocated", 0))
        n_free = st.get("num_device_free", st.get("segment.all.freed", 0))
        extra_allocs = kv("linear", "allocs") - n_alloc
        extra_live = extra_allocs - (kv("linear", "frees") - n_free)
        got = kv("linear", "allocs")
        if extra_allocs == 0:
            t.add(name, "linear.allocs vs torch cudaMalloc calls", got, n_alloc, "MATCH")
        elif extra_allocs > 0:
            t.add(name, "linear.allocs vs torch cudaMalloc calls", got, n_alloc, "OK",
                  f"{extra_allocs} allocations by others in the process")
        else:
            t.add(name, "linear.allocs vs torch cudaMalloc calls", got, n_alloc, "MISMATCH",
                  f"shim saw {-extra_allocs} fewer than torch made")

    def judge(metric, got, want, others, evidence):
        """others: driver-level bytes of kinds torch does not use here; evidence: count of
        allocations not made by torch (native mode)."""
        diff = got - want
        if diff == 0:
            t.add(name, metric, got, want, "MATCH")
        elif 0 < diff <= others + (OUTSIDE_TORCH_CAP if evidence > 0 else 0):
            why = []
            if evidence > 0:
                why.append(f"{evidence} linear allocs outside torch's allocator, e.g. cuBLAS/cuDNN")
            if others:
                why.append(f"{others} B of kinds torch's allocator does not use here")
            t.add(name, metric, got, want, "OK", f"+{diff} B outside torch: " + "; ".join(why))
        else:
            t.add(name, metric, got, want, "MISMATCH", f"{diff:+d} B, not explained")

    for field, want, evidence in (("peak", truth_peak, extra_allocs), ("current", truth_cur, extra_live)):
        kind, sub = torch_kind
        label = f"dev0.by_kind.{kind}.{sub + '.' if sub else ''}{field}"
        got = kv(kind, field, sub)
        if mode == "native":
            judge(label, got, want, 0, evidence)
        else:  # only torch uses VMM / the default pool in this workload: exact
            t.exact(name, label, got, want, f"{got - want:+d} B")
        others = sum(kv(kk, field, ss) for kk, ss in reserved.values() if kk != kind)
        judge(f"dev0.reserved_bytes.{field}", d.get("reserved_bytes", {}).get(field, 0), want,
              others, evidence)

    framework_rows(t, name, gt, s, mode)

    if mode == "async":
        # Torch's cudaMallocAsync backend reports the pool's USED_MEM (rounded by the driver);
        # the shim counts requested bytes. Shown for reference.
        got = kv("pool", "peak")
        t.add(name, "dev0.by_kind.pool.peak (allocated)", got, gt["max_memory_allocated"], "INFO",
              "" if got == gt["max_memory_allocated"] else
              f"{got - gt['max_memory_allocated']:+d} B; torch reports driver USED_MEM_HIGH")


def framework_rows(t, name, gt, s, mode):
    """The framework bridge (docs/framework-bridge.md): with the native allocator (plain or
    expandable segments) the tensor level equals torch's requested_bytes and the framework's
    reserved its reserved_bytes, exactly; with cudaMallocAsync the bridge stays out on purpose."""
    if not gt.get("bridge_expected"):
        return
    fw = s.get("framework") if isinstance(s.get("framework"), dict) else {}
    st = gt.get("stats", {})
    if mode == "async":
        t.exact(name, "framework bridge (cudaMallocAsync: stays out)", f"{fw.get('state')}/{fw.get('refusal')}",
                "refused/other_backend")
        return
    t.exact(name, "framework bridge", fw.get("state"), "attached", fw.get("refusal", ""))
    framework_peak_rows(t, name, s, 0, st)


def framework_peak_rows(t, name, s, device, st, prefix=""):
    """The tensor level of one device exactly: the bridge's allocated and reserved peaks against
    PyTorch's memory_stats for that device (`st`)."""
    for metric, key in (("allocated_bytes.peak", "requested_bytes.all.peak"),
                        ("reserved_bytes.peak", "reserved_bytes.all.peak")):
        t.exact(name, f"{prefix}dev{device}.framework.{metric} == torch {key}",
                lookup(s, f"dev{device}.framework.{metric}"), st.get(key))


def compare_hotpath(t, work, name):
    """ns per call of each hot-path ingredient, with and without the shim: INFO rows. The run row
    fails when either process failed or printed no JSON."""
    d = os.path.join(work, name)
    res, problems = {}, []
    for variant in ("shim", "base"):
        rc = read_rc(os.path.join(d, f"{variant}.rc"))
        res[variant] = load_json(os.path.join(d, f"{variant}.json"))
        label = "with shim" if variant == "shim" else "without"
        if rc != 0:
            problems.append(f"{label}: " + {None: "no rc file", -2: "not built", 124: "timed out",
                                            137: "killed after timeout",
                                            -1: "skipped: time budget spent"}.get(rc, f"exit {rc}"))
        elif not isinstance(res[variant], dict):
            problems.append(f"{label}: no JSON on stdout")
    shim, base = res["shim"] or {}, res["base"] or {}
    t.add(name, "run (with shim, without)", f"rc={read_rc(os.path.join(d, 'shim.rc'))}",
          f"rc={read_rc(os.path.join(d, 'base.rc'))}", "FAIL" if problems else "MATCH", "; ".join(problems))
    keys = list(shim) + [k for k in base if k not in shim]
    for k in keys:
        a, b = shim.get(k), base.get(k)
        note = ""
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and a >= 0 and b > 0:
            note = f"{a - b:+.1f} ns, ratio {a / b:.2f}"
        t.add(name, k, a, b, "INFO", note)


def compare_bench(t, work, target):
    d = os.path.join(work, "bench")
    if not os.path.isdir(d):
        return
    runs = {}
    for f in sorted(os.listdir(d)):
        m = re.fullmatch(r"(\w+)\.(base|shim|nostk)\.(\d+)\.rc", f)
        if m:
            runs.setdefault(m[1], []).append((m[2], m[3]))
    for mode in sorted(runs):
        if mode in ("train", "pairs", "inference", "categories"):
            continue  # compare_train_bench, compare_pairs_bench, compare_inference_bench, compare_categories_bench
        med = {"base": [], "shim": [], "nostk": []}
        unfinished, counts_bad, lost, waits = [], [], 0, 0
        sums = [0, 0, 0]  # allocs, frees, pairs over the shim runs
        kind = "pool" if mode == "async" else "linear"
        for variant, rnd in runs[mode]:
            stem = os.path.join(d, f"{mode}.{variant}.{rnd}")
            rc, res = read_rc(stem + ".rc"), load_json(stem + ".json")
            if rc != 0 or res is None:
                unfinished.append((f"{variant}#{rnd}", rc))
                continue
            med[variant].append(res["median_ns"])
            if variant in ("shim", "nostk"):
                s = load_json(stem + ".summary.json")
                if s is None:
                    unfinished.append((f"{variant}#{rnd}", "no summary.json"))
                    continue
                n = res["pairs_total"]
                allocs = lookup(s, f"dev0.by_kind.{kind}.allocs")
                frees = lookup(s, f"dev0.by_kind.{kind}.frees")
                if allocs != n or frees != n:
                    counts_bad.append(f"#{rnd}: {allocs}/{frees} of {n}")
                sums = [sums[0] + (allocs or 0), sums[1] + (frees or 0), sums[2] + n]
                lost += lookup(s, "events.lost") or 0
                waits += lookup(s, "events.producer_waits") or 0
        name = f"bench_{mode}"
        add_unfinished_runs(t, name, unfinished)
        if med["shim"]:
            t.add(name, f"{kind}.allocs/frees == pairs", f"{sums[0]}/{sums[1]}", f"{sums[2]}/{sums[2]}",
                  "MISMATCH" if counts_bad else "MATCH", "; ".join(counts_bad))
            t.exact(name, "events.lost (all shim runs)", lost, 0)
            t.add(name, "events.producer_waits", waits, None, "INFO")
        for variant, what, goal in (("shim", "with/without shim", target),
                                    ("nostk", "stacks off/without", NOSTACKS_TARGET)):
            if not (med["base"] and med[variant]):
                continue
            b, s_ = statistics.median(med["base"]), statistics.median(med[variant])
            ratio = s_ / b
            t.add(name, f"ns/pair {what}, {len(med[variant])}/{len(med['base'])} runs", round(s_, 1), round(b, 1),
                  "OK" if ratio < goal else "SLOW", f"ratio {ratio:.3f}, target < {goal}, {s_ - b:+.1f} ns")
            if variant == "shim":
                t.add(name, "added ns per pair (with - without)", round(s_ - b, 1), None, "INFO",
                      f"ratio {ratio:.3f}")


TRAIN_TARGET = 1.02  # issue 5: a training step under 2% slower with default settings


def compare_train_bench(t, work):
    """Median training step (train.py --bench) without the shim, at default settings, without
    Python frames and with stacks off, each the median over its rounds; ratios against the run without the shim."""
    d = os.path.join(work, "bench")
    med, unfinished = {"base": [], "shim": [], "bridgeoff": [], "history": []}, []
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        m = re.fullmatch(r"train\.(base|shim|bridgeoff|history)\.(\d+)\.rc", f)
        if not m:
            continue
        stem = os.path.join(d, f"train.{m[1]}.{m[2]}")
        rc, res = read_rc(stem + ".rc"), load_json(stem + ".json")
        if rc != 0 or not isinstance(res, dict) or "median_step_ms" not in res:
            unfinished.append((f"{m[1]}#{m[2]}", rc))
            continue
        med[m[1]].append(res["median_step_ms"])
    add_unfinished_runs(t, "bench_train", unfinished)
    if not med["base"]:
        return
    base = statistics.median(med["base"])
    for variant, label, target in (("shim", "with shim, bridge on", BRIDGE_STEP_TARGET),
                                   ("bridgeoff", "with shim, bridge off", TRAIN_TARGET),
                                   ("history", "no shim, torch _record_memory_history(stacks=python)", None)):
        if not med[variant]:
            continue
        got = statistics.median(med[variant])
        ratio = got / base
        verdict = "INFO" if target is None else "OK" if ratio <= target else "SLOW"
        spread = f"{min(med[variant]):.3f}-{max(med[variant]):.3f}"
        t.add("bench_train", f"ms/step {label} vs without, {len(med[variant])}/{len(med['base'])} runs",
              round(got, 3), round(base, 3), verdict,
              f"ratio {ratio:.4f}, spread {spread}" + (f", target <= {target}" if target else ""))


BRIDGE_STEP_TARGET = 1.01  # issue 12: the bridge on, a training step at most 1% slower
PAIRS_TARGET = 3.0  # issue 12: per tensor pair, at least 3x cheaper than torch's history (python stacks)


def compare_pairs_bench(t, work):
    """ns per torch.empty alloc/free pair: what the profiler adds (bridge on, bridge off) and what
    torch's own history with Python stacks adds, each over no profiler, medians over the rounds."""
    d = os.path.join(work, "bench")
    med, unfinished = {"base": [], "shim": [], "bridgeoff": [], "history": []}, []
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        m = re.fullmatch(r"pairs\.(base|shim|bridgeoff|history)\.(\d+)\.rc", f)
        if not m:
            continue
        rc, res = read_rc(os.path.join(d, f)), load_json(os.path.join(d, f"pairs.{m[1]}.{m[2]}.json"))
        if rc == 0 and isinstance(res, dict) and "ns_per_pair" in res:
            med[m[1]].append(res["ns_per_pair"])
        else:
            unfinished.append((f"{m[1]}#{m[2]}", rc))
    add_unfinished_runs(t, "bench_pairs", unfinished)
    if not med["base"]:
        return
    base = statistics.median(med["base"])
    added = {v: statistics.median(med[v]) - base for v in ("shim", "bridgeoff", "history") if med[v]}
    for v, label in (("shim", "bridge on"), ("bridgeoff", "bridge off"), ("history", "torch history, python stacks")):
        if v in added:
            t.add("bench_pairs", f"ns/pair {label} vs none ({len(med[v])} runs)", round(base + added[v], 1),
                  round(base, 1), "INFO", f"+{added[v]:.1f} ns, spread {min(med[v]):.0f}-{max(med[v]):.0f}")
    if "shim" in added and "history" in added:
        ratio = added["history"] / added["shim"] if added["shim"] > 0 else float("inf")
        t.add("bench_pairs", "torch history's added cost / the bridge's", round(ratio, 2), f">= {PAIRS_TARGET}",
              "OK" if ratio >= PAIRS_TARGET else "SLOW")


# issue 29: generate within 3% and a training step within 1%.
INFERENCE_TARGETS = {"generate": 1.03, "train_step": 1.01}


def spread_text(values, fmt="{:.3f}"):
    return f"median {fmt.format(statistics.median(values))}, spread {fmt.format(min(values))}-{fmt.format(max(values))}"


def quartiles(values):
    q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
    return q[0], q[1], q[2]


def compare_inference_bench(t, work):
    """tests/gpu/inference_bench.py. The verdicts are on the in-process ratio: each unit of work
    (a token, a training step, a block of tensor pairs) recording against the paused unit beside
    it, the median over every such pair of every process with its quartiles; pausing still records
    releases, so "paused vs without" (across processes, where the host's variance between processes
    shows) says what it leaves. For the pairs, the recording unit less the paused one is the
    allocation's event and Python frames, in ns. "before" is an earlier build timed in the same call
    (GPU_CHECK_BEFORE_LIB), reported the same way, INFO only."""
    d = os.path.join(work, "bench")
    runs, unfinished = {"base": [], "shim": [], "before": []}, []
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        m = re.fullmatch(r"inference\.(base|shim|before)\.(\d+)\.rc", f)
        if not m:
            continue
        res = load_json(os.path.join(d, f"inference.{m[1]}.{m[2]}.json"))
        if read_rc(os.path.join(d, f)) == 0 and isinstance(res, dict) and res.get("profiled") == (m[1] != "base"):
            runs[m[1]].append(res)
        else:
            unfinished.append((f"{m[1]}#{m[2]}", read_rc(os.path.join(d, f))))
    add_unfinished_runs(t, "bench_inference", unfinished)
    for name in ("generate", "train_step", "pairs"):
        def values(variant, kind):
            return [v for res in runs[kind] if isinstance(res.get(name), dict) for v in res[name].get(variant, [])]
        bare = values("bare", "base")
        for kind in ("shim", "before"):
            ratios, paused = values("ratios", kind), values("paused", kind)
            if not ratios:
                continue
            label = "" if kind == "shim" else " [before]"
            unit = next(res[name]["unit"] for res in runs[kind] if isinstance(res.get(name), dict))
            lo, med, hi = quartiles(ratios)
            goal = INFERENCE_TARGETS.get(name) if kind == "shim" else None
            verdict = "INFO" if goal is None else "OK" if med <= goal else "SLOW"
            t.add("bench_inference", f"{name}: recording / paused, neighbouring units{label} ({len(ratios)} pairs)",
                  round(med, 4), f"<= {goal}" if goal else None, verdict, f"quartiles {lo:.4f}-{hi:.4f}")
            if name == "pairs":
                lo, med, hi = quartiles(values("diffs", kind))
                t.add("bench_inference", f"pairs: ns per pair recording - paused (the allocation's event and Python "
                      f"frames){label}", round(med, 1), None, "INFO", f"quartiles {lo:.1f}-{hi:.1f}")
            if bare and paused:
                t.add("bench_inference", f"{name} {unit}: paused vs without, across processes{label}",
                      round(statistics.median(paused), 3), round(statistics.median(bare), 3), "INFO",
                      f"ratio {statistics.median(paused) / statistics.median(bare):.4f}; paused {spread_text(paused)}; "
                      f"without {spread_text(bare)}")


def compare_categories_bench(t, work):
    """The category hooks' cost (scripts/gpu_check.py bench_categories): inference_bench.py
    --alternate hooks, recording throughout, the hooks switched on and off between neighbouring
    units of one process (a token of a generate, a training step): the ratio of each unit with the
    hooks to the unit after it without, the median over every round with its quartiles, and the
    difference in the unit. INFO: what the hooks' labels and phase events cost."""
    d = os.path.join(work, "bench")
    runs, unfinished = [], []
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        m = re.fullmatch(r"categories\.hooks\.(\d+)\.rc", f)
        if not m:
            continue
        res = load_json(os.path.join(d, f"categories.hooks.{m[1]}.json"))
        rc = read_rc(os.path.join(d, f))
        if rc == 0 and isinstance(res, dict) and res.get("profiled") and res.get("alternate") == "hooks":
            runs.append(res)
        else:
            unfinished.append((f"hooks#{m[1]}", rc if rc != 0 else "no JSON of a profiled run alternating the hooks"))
    add_unfinished_runs(t, "bench_categories", unfinished)
    for name in ("generate", "train_step"):
        ratios, diffs, on, off, unit = [], [], [], [], None
        for res in runs:
            w = res.get(name)
            if not isinstance(w, dict) or not w.get("ratios"):
                continue
            unit = w.get("unit")
            ratios += w["ratios"]
            diffs += w.get("diffs") or []
            on += w.get("hooks_on") or []
            off += w.get("hooks_off") or []
        if not ratios:
            continue
        lo, med, hi = quartiles(ratios)
        t.add("bench_categories", f"{name}: hooks on / off, neighbouring units of one process ({len(ratios)} pairs, "
              f"{len(runs)} rounds)", round(med, 4), None, "INFO", f"quartiles {lo:.4f}-{hi:.4f}")
        dlo, dmed, dhi = quartiles(diffs) if diffs else (0, 0, 0)
        t.add("bench_categories", f"{name} {unit}: hooks on vs off, medians; the pairs' difference",
              round(statistics.median(on), 3) if on else None, round(statistics.median(off), 3) if off else None,
              "INFO", f"difference median {dmed:+.3f} {unit} (quartiles {dlo:+.3f} to {dhi:+.3f}); on {spread_text(on)}; "
              f"off {spread_text(off)}")


def compare_llama(t, work, name):
    """A HF Llama through the launcher: the torch and framework rows, then what a user reads: the
    report names model lines among the call sites of the tensors live at the tensor peak, no growth
    alert and no tensor leak on this healthy run, and the memory-viz export loads in PyTorch's own
    reader (torch.cuda._memory_viz)."""
    compare_torch(t, work, name)
    d = os.path.join(work, name)
    gt = load_json(os.path.join(d, "gt.json")) or {}
    s, _ = find_summary(d, gt.get("pid"))
    s = s or {}
    report = read_text(os.path.join(d, "report.txt"))
    # The section the report prints for the tensors live at PyTorch's allocated peak, up to the next
    # section of the device (its lines are indented by at least four spaces).
    peak = re.search(r"tensors live at PyTorch's allocated peak.*?\n((?: {4,}.*\n)+)", report)
    model_lines = sorted(set(re.findall(r"(?:modeling_llama|llama_train)\.py:\d+", peak[1] if peak else "")))
    t.add(name, "report: the model's lines among the call sites of the tensors at the tensor peak",
          len(model_lines), ">= 1", "MATCH" if model_lines else "MISMATCH", ", ".join(model_lines[:4]))
    alerts = s.get("alerts") if isinstance(s.get("alerts"), dict) else {}
    t.exact(name, "growth alerts on a healthy run", alerts.get("growth"), 0)
    fw = s.get("framework") if isinstance(s.get("framework"), dict) else {}
    tensors = (fw.get("tensors_at_exit") or {}).get("bytes")
    leak_limit = 100 << 20  # GPUMEMPROF_LEAK_BYTES's default
    t.add(name, "tensors live at exit (leaks) < 100 MiB", tensors, "< 104857600",
          "MATCH" if isinstance(tensors, int) and tensors < leak_limit else "MISMATCH",
          f"cached at exit {(fw.get('cached_at_exit') or {}).get('bytes')} B (the cache, not a leak)")
    viz = read_text(os.path.join(d, "memory_viz.txt"))
    t.add(name, "memory-viz export loads in torch.cuda._memory_viz", viz.strip()[:80] or None, "memory-viz OK",
          "MATCH" if viz.startswith("memory-viz OK") else "FAIL")


# The categories of report --json's categories_at_peak / categories_at_exit, in their order (issue 33).
CATEGORY_NAMES = ("parameters", "gradients", "optimizer_state", "activations", "temporaries", "kv_cache", "other",
                  "unknown")


def report_categories(rep, device, key):
    """`report RUN --json`'s categories object (key: categories_at_peak or categories_at_exit) of one
    device: under analysis.devices[].framework, else under devices[].framework; None when absent."""
    analysis = rep.get("analysis") if isinstance(rep.get("analysis"), dict) else {}
    for devices in (analysis.get("devices"), rep.get("devices")):
        for dev in devices if isinstance(devices, list) else []:
            if isinstance(dev, dict) and dev.get("device") == device:
                node = (dev.get("framework") or {}).get(key)
                if isinstance(node, dict):
                    return node
    return None


def category_entries(node):
    """{category: its entry} of a categories object."""
    return {c.get("category"): c for c in node.get("categories") or [] if isinstance(c, dict)}


def split_text(node):
    """'parameters 209.5 MiB 31%, gradients ...': the non-empty categories of a categories object."""
    parts = []
    for c in node.get("categories") or []:
        if isinstance(c, dict) and c.get("bytes"):
            share = c.get("share")
            parts.append(f"{c.get('category')} {c['bytes'] / MiB:.1f} MiB" +
                         (f" {100 * share:.0f}%" if isinstance(share, (int, float)) else ""))
    return ", ".join(parts) or "all empty"


def phase_text(phase):
    if not isinstance(phase, dict):
        return None if phase is None else str(phase)
    text = f"{phase.get('kind')} step {phase.get('step')}"
    return text + (f" micro-batch {phase['micro_batch']}" if "micro_batch" in phase else "")


def strip_wrapper(name):
    """A parameter's name without DistributedDataParallel's (or DataParallel's) "module." prefix."""
    return name[len("module."):] if isinstance(name, str) and name.startswith("module.") else name


def compare_categories(t, work, name):
    """Tensor memory categories (tests/gpu/categories.py, issue 33): `report RUN --json`'s
    categories_at_peak and categories_at_exit of the scenario's device against its ground truth.
    At exit, parameters, gradients, optimizer state and the KV cache equal the unique storages
    PyTorch holds for them, to the byte, and the categories add up to the tensors live at exit; at
    the peak they add up to the bridge's allocated peak and PyTorch's requested-bytes peak. With
    GPUMEMPROF_CATEGORIES=off (gt categories_setting "off") every tensor is unknown, and the
    program's output and exit status are those of the run with the hooks on (<name> less "_off")."""
    gt, s, _ = start(t, work, name)
    if gt is None or s is None or not gt.get("ok"):
        return
    d = os.path.join(work, name)
    device = gt.get("device", 0)
    fw = lookup(s, f"dev{device}.framework") or {}
    t.exact(name, "framework bridge", (s.get("framework") or {}).get("state"), "attached")
    rep = load_json(os.path.join(d, "report.json"))
    if not isinstance(rep, dict):
        t.add(name, "report RUN --json", None, "JSON", "FAIL",
              read_text(os.path.join(d, "report.stderr")).strip()[-200:] or "no readable report.json")
        return
    nodes = {when: report_categories(rep, device, f"categories_at_{when}") for when in ("peak", "exit")}
    missing = [f"categories_at_{when}" for when, node in nodes.items() if node is None]
    if missing:
        t.add(name, f"report --json: dev{device}.framework categories", None, "categories_at_peak,_exit", "FAIL",
              "missing: " + ", ".join(missing))
        return
    peak, end = nodes["peak"], nodes["exit"]
    cats = {when: category_entries(node) for when, node in nodes.items()}
    for when, node in nodes.items():
        order = [c.get("category") for c in node.get("categories") or [] if isinstance(c, dict)]
        same = tuple(order) == CATEGORY_NAMES
        t.add(name, f"at {when}: the categories, in order", len(order), len(CATEGORY_NAMES),
              "MATCH" if same else "MISMATCH", "" if same else f"{','.join(map(str, order))}, want {','.join(CATEGORY_NAMES)}")

    def size(when, category):
        return (cats[when].get(category) or {}).get("bytes")

    def total_rows(when, node, want, want_label):
        """The categories add up to the object's total, which is `want` (the tensors' figure)."""
        listed = [c.get("bytes") for c in node.get("categories") or [] if isinstance(c, dict)]
        added = sum(listed) if listed and all(isinstance(b, int) for b in listed) else None
        t.exact(name, f"at {when}: sum of the categories == total", added, node.get("total"))
        t.exact(name, f"at {when}: total == {want_label}", node.get("total"), want)

    st = gt.get("stats", {})
    fw_peak = (fw.get("allocated_bytes") or fw.get("allocated") or {}).get("peak")
    total_rows("peak", peak, fw_peak, f"dev{device}.framework.allocated_bytes.peak")
    t.exact(name, "at peak: total == torch requested_bytes.all.peak", peak.get("total"),
            st.get("requested_bytes.all.peak"))
    at_exit = ((s.get("framework") or {}).get("tensors_at_exit") or {}).get("bytes")
    total_rows("exit", end, at_exit, "framework.tensors_at_exit.bytes")
    got = end.get("total")
    want = gt.get("requested_current")
    t.add(name, "at exit: total vs torch requested_bytes.all.current at the truth", got, want, "INFO",
          "" if got == want or not isinstance(got, int) or not isinstance(want, int) else
          f"{got - want:+d} B: freed or allocated between the truth and the interpreter's end")

    if gt.get("categories_setting") == "off":
        categories_off_rows(t, work, name, nodes)
        return

    # The categories with a truth, at exit (to the byte) and the parameters at the peak too: the
    # model's weights are allocated once, before any step, and never freed.
    for category in ("parameters", "gradients", "optimizer_state", "kv_cache"):
        truth = gt.get(category) or {}
        t.exact(name, f"at exit: {category} == truth (unique storages)", size("exit", category), truth.get("bytes"),
                f"count {(cats['exit'].get(category) or {}).get('count')}, truth {truth.get('count')} storages")
    t.exact(name, "at peak: parameters == truth (unique storages)", size("peak", "parameters"),
            (gt.get("parameters") or {}).get("bytes"))
    t.add(name, "storages at exit: parameters/gradients/optimizer_state/kv_cache",
          "/".join(str((cats["exit"].get(c) or {}).get("count")) for c in
                   ("parameters", "gradients", "optimizer_state", "kv_cache")),
          "/".join(str((gt.get(c) or {}).get("count")) for c in ("parameters", "gradients", "optimizer_state", "kv_cache")),
          "INFO", f"{gt.get('parameter_tensors')} parameter tensors")
    if "gradient_as_bucket_view" in gt:
        t.add(name, "DDP gradient_as_bucket_view: gradient storages / parameter tensors",
              f"{(gt.get('gradients') or {}).get('count')}/{gt.get('parameter_tensors')}", None, "INFO",
              "the gradients are views into DDP's buckets" if gt["gradient_as_bucket_view"] else
              "the buckets are separate: they show in other categories than gradients")
    if "cache" in gt:
        c = gt["cache"]
        t.add(name, "KV cache of the truth", c.get("class"), None, "INFO",
              f"read through {c.get('api')}, {c.get('tensors')} tensors")

    live_rows(t, name, gt, cats, peak)
    t.add(name, "peak phase; the split at the peak", phase_text(peak.get("phase")), phase_text(gt.get("peak_phase")),
          "INFO", split_text(peak))
    t.add(name, "phase at exit; the split at exit", phase_text(end.get("phase")), None, "INFO", split_text(end))

    # The names: the report's largest parameter is one of the truth's largest (Llama's MLP weights
    # tie: gate, up and down projections of every layer are the same size).
    truth_largest = gt.get("largest_parameters") or []
    top = truth_largest[0]["bytes"] if truth_largest else None
    tied = sorted(r["name"] for r in truth_largest if r["bytes"] == top)
    listed = (cats["exit"].get("parameters") or {}).get("largest") or []
    first = listed[0] if listed and isinstance(listed[0], dict) else {}
    got_name = strip_wrapper(first.get("name"))
    ok = got_name in tied and first.get("bytes") == top
    t.add(name, "at exit: largest parameter's name is one of the truth's largest", first.get("name"),
          tied[0] if len(tied) == 1 else f"one of {len(tied)}, e.g. {tied[0]}" if tied else None,
          "MATCH" if ok else "MISMATCH",
          "" if ok else f"{first.get('bytes')} B; truth's largest {top} B: {', '.join(tied[:3])}")
    names = [strip_wrapper(e.get("name")) for e in listed if isinstance(e, dict)]
    layered = [n for n in names if re.match(r"model\.layers\.\d+\.", str(n))]
    t.add(name, "at exit: parameters' largest entries named model.layers.N...", f"{len(layered)}/{len(names)}", None,
          "INFO", "; ".join(f"{e.get('name')} {e.get('bytes')} B" for e in listed[:3] if isinstance(e, dict)))


def live_rows(t, name, gt, cats, peak):
    """The collector's live categories through the Python package (categories.py profiled()): the
    training loop's peak, split by what each tensor held then turned out to be, equals the report's
    hindsight split at the tensor peak (the loop holds the run's peak); at the loop's end the
    labelled categories equal the truth."""
    live = gt.get("live")
    if not isinstance(live, dict):
        return
    got = live.get("peak_by_category") or {}
    want = {c: (cats["peak"].get(c) or {}).get("bytes", 0) for c in CATEGORY_NAMES}
    differ = [f"{c} {got.get(c)} vs {want[c]}" for c in CATEGORY_NAMES if got.get(c) != want[c]]
    t.add(name, "live: GPUMemoryProfiler's peak by category == report's categories_at_peak",
          live.get("peak"), peak.get("total"), "MATCH" if not differ and live.get("peak") == peak.get("total")
          else "MISMATCH", "; ".join(differ) or split_text(peak))
    after = live.get("after_by_category") or {}
    for category in ("parameters", "gradients", "optimizer_state"):
        t.exact(name, f"live: at the loop's end, {category} == truth", after.get(category),
                (gt.get(category) or {}).get("bytes"))
    t.add(name, "live: at the loop's end, not decided yet (unknown)", after.get("unknown"), None, "INFO",
          f"of {live.get('after')} B")


def categories_off_rows(t, work, name, nodes):
    """GPUMEMPROF_CATEGORIES=off: every tensor unknown at the peak and at exit, what the report
    says about it, and the program unchanged: the exit status and stdout of the run with the hooks on."""
    for when, node in nodes.items():
        entries = category_entries(node)
        labelled = sum((entries.get(c) or {}).get("bytes") or 0 for c in CATEGORY_NAMES if c != "unknown")
        t.add(name, f"at {when}: unknown == total, nothing labelled", (entries.get("unknown") or {}).get("bytes"),
              node.get("total"), "MATCH" if labelled == 0 and (entries.get("unknown") or {}).get("bytes") ==
              node.get("total") else "MISMATCH", f"{labelled} B in labelled categories" if labelled else "")
        why = {k: v for k, v in node.items() if k not in ("phase", "total", "categories")}
        t.add(name, f"at {when}: why (the report's words)", json.dumps(why)[:120] if why else None, None, "INFO")
    on = name[:-len("_off")] if name.endswith("_off") else None
    d, d_on = os.path.join(work, name), os.path.join(work, on or "")
    if on is None or read_rc(os.path.join(d_on, "rc")) is None:
        t.add(name, "same exit status and output as with the hooks on", None, None, "FAIL",
              f"no run with the hooks on ({on})")
        return
    t.exact(name, f"same exit status as {os.path.basename(on)} (hooks on)", read_rc(os.path.join(d, "rc")),
            read_rc(os.path.join(d_on, "rc")))
    got, want = read_text(os.path.join(d, "stdout.txt")), read_text(os.path.join(d_on, "stdout.txt"))
    metric = f"same output as {os.path.basename(on)} (hooks on)"
    if not want.strip():
        t.add(name, metric, output_digest(got), None, "FAIL", "no output with the hooks on")
    else:
        t.add(name, metric, output_digest(got), output_digest(want), "MATCH" if got == want else "MISMATCH")


def torch_size(text):
    """PyTorch's format_size text ("25.00 MiB", "512 bytes") in bytes, for reading its OOM message."""
    m = re.fullmatch(r"([0-9.]+) (bytes|KiB|MiB|GiB)", text.strip())
    return None if not m else float(m[1]) * {"bytes": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[m[2]]


def compare_llama_oom(t, work, name):
    """An uncaught OutOfMemoryError after a few training steps: the OOM bundle's explanation
    (`gpumemprof oom`) must state PyTorch's own figures: every size in PyTorch's message appears,
    as PyTorch formats it, in our explanation."""
    d = os.path.join(work, name)
    rc = read_rc(os.path.join(d, "rc"))
    err = read_text(os.path.join(d, "stderr.txt"))
    m = re.search(r"Tried to allocate ([0-9.]+ \w+)\. GPU \d+ has a total capacity of ([0-9.]+ \w+) of which "
                  r"([0-9.]+ \w+) is free\..*?Of the allocated memory ([0-9.]+ \w+) is allocated by PyTorch, "
                  r"and ([0-9.]+ \w+) is reserved by PyTorch but unallocated", err, re.S)
    t.add(name, "run", f"rc={rc}", "rc=1", "MATCH" if rc == 1 and m else "FAIL",
          "" if m else "no PyTorch OOM message on stderr")
    if not m:
        return
    s, run_dir = find_summary(d, None)
    oom = (s or {}).get("oom") if isinstance((s or {}).get("oom"), dict) else {}
    t.add(name, "oom bundles written", oom.get("bundles_written"), ">= 1",
          "MATCH" if (oom.get("bundles_written") or 0) >= 1 else "MISMATCH")
    explanation = read_text(os.path.join(d, "oom.txt"))
    for label, text in zip(("tried to allocate", "total capacity", "free", "allocated by PyTorch",
                            "reserved by PyTorch but unallocated"), m.groups()):
        t.add(name, f"oom explanation states '{label}'", text if text in explanation else None, text,
              "MATCH" if text in explanation else "MISMATCH")


def compare_exit(t, work, name):
    """PyTorch ending without exit handlers (tests/gpu/exit_paths.py): summary.json says how the
    process ended, every recorded event reached the trace, the 1 GiB tensor is still live."""
    gt, s, run_dir = start(t, work, name)
    if gt is None or s is None:
        return
    t.exact(name, "ended_by", s.get("ended_by"), gt.get("expect_ended_by"))
    ev = s.get("events") if isinstance(s.get("events"), dict) else {}
    recorded, unwritten = ev.get("recorded"), ev.get("unwritten", 0)
    written = s.get("trace_events_written")
    complete = isinstance(recorded, int) and written == recorded and unwritten == 0
    t.add(name, "events in the trace of recorded", f"{written} (+{unwritten} unwritten)", recorded,
          "MATCH" if complete else "MISMATCH", "" if complete else "the trace is missing events")
    live = lookup(s, "dev0.by_kind.linear.current")
    tensor = gt.get("tensor_bytes")
    if live == tensor:
        t.add(name, "linear bytes live at the end", live, tensor, "MATCH")
    elif isinstance(live, int) and isinstance(tensor, int) and live > tensor:
        t.add(name, "linear bytes live at the end", live, tensor, "OK",
              f"+{live - tensor} B: the caching allocator's other segments (the retry's tensor, cuBLAS)")
    else:
        t.add(name, "linear bytes live at the end", live, tensor, "MISMATCH", "the tensor is not live")
    if "expect_oom_bundles" in gt:
        oom = s.get("oom") if isinstance(s.get("oom"), dict) else {}
        # Bridged: PyTorch's own bundle for the OutOfMemoryError it raised, beside the driver-level one.
        bridged = (s.get("framework") or {}).get("state") == "attached"
        t.exact(name, "oom bundles written", oom.get("bundles_written"), gt["expect_oom_bundles"] * (2 if bridged else 1))
    t.add(name, "clean_exit", s.get("clean_exit"), None, "INFO")


def compare_layout(t, work, name):
    """check_python_layout built against the GPU machine's Python: every offset must agree."""
    d = os.path.join(work, name)
    rc = read_rc(os.path.join(d, "rc"))
    out = open(os.path.join(d, "stdout.txt"), errors="replace").read() if os.path.exists(os.path.join(d, "stdout.txt")) else ""
    version = out.splitlines()[0] if out else "?"
    bad = [ln for ln in out.splitlines() if "MISMATCH" in ln]
    if rc == -3:
        t.add(name, "shim/python_layouts.h vs this Python's headers", None, 0, "INFO", "no Python.h: nothing to check against")
        return
    t.add(name, f"shim/python_layouts.h vs {version} headers", rc, 0, "MATCH" if rc == 0 else "FAIL",
          "; ".join(bad)[:300] if bad else ("not built" if rc == -2 else ""))


def compare_torch_layout(t, work, name):
    """shim/torch_layouts.h against scripts/torch_layout_probe.cpp compiled against this PyTorch's
    headers: the row for this release must exist, be marked checked, and agree on the slot; the
    TraceEntry offsets the tracker reads must agree."""
    d = os.path.join(work, name)
    rc = read_rc(os.path.join(d, "rc"))
    got = load_json(os.path.join(d, "stdout.txt"))
    version = read_text(os.path.join(d, "version.txt")).strip()
    if rc != 0 or not isinstance(got, dict):
        t.add(name, "torch_layout_probe", f"rc={rc}", "rc=0", "FAIL", "not built" if rc == -2 else "")
        return
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    table = read_text(os.path.join(root, "shim", "torch_layouts.h"))
    m = re.match(r"(\d+)\.(\d+)", version)
    row = re.search(r"\{%s, %s, (\d+), (true|false)," % (m[1], m[2]), table) if m else None
    t.add(name, f"table row for torch {version}: slot, checked", f"{row[1]},{row[2]}" if row else None,
          f"{got['attach_slot']},true", "MATCH" if row and int(row[1]) == got["attach_slot"] and row[2] == "true"
          else "MISMATCH")
    layout = re.search(r"struct TraceEntryLayout \{(.*?)\};", table, re.S)
    offsets = dict(re.findall(r"size_t (\w+) = (\d+);", layout[1])) if layout else {}
    for field in ("action", "device", "addr", "stream", "size", "mempool"):
        t.exact(name, f"TraceEntry {field} offset", int(offsets[field]) if field in offsets else None, got.get(field))
    t.exact(name, "TraceEntry mempool_ size (a pair of 64-bit ids)", got.get("mempool_size"), 16)


def compare_train(t, work, name):
    """The training job through the launcher: the torch comparison of its summary, then the
    post-mortem commands' output: report peaks against PyTorch's, the attribution tables."""
    compare_torch(t, work, name)
    d = os.path.join(work, name)
    gt = load_json(os.path.join(d, "gt.json")) or {}
    rep = load_json(os.path.join(d, "report.json"))
    if rep is None:
        t.add(name, "report --json", None, "JSON", "FAIL", "no readable report.json")
        return
    a = rep.get("analysis", {})
    devs = a.get("devices") or [{}]
    dev0 = devs[0]
    peak_reserved = dev0.get("reserved_peak", {}).get("bytes")
    t.add(name, "report reserved peak vs torch.cuda.max_memory_reserved()", peak_reserved,
          gt.get("max_memory_reserved"),
          "MATCH" if peak_reserved == gt.get("max_memory_reserved") else "OK" if peak_reserved and gt.get("max_memory_reserved") and 0 < peak_reserved - gt["max_memory_reserved"] <= OUTSIDE_TORCH_CAP else "MISMATCH",
          "" if peak_reserved == gt.get("max_memory_reserved") else f"{(peak_reserved or 0) - (gt.get('max_memory_reserved') or 0):+d} B (allocations outside torch's allocator)")
    t.exact(name, "report reserved peak == summary reserved peak", peak_reserved,
            lookup(rep, "dev0.reserved_bytes.peak") if lookup(rep, "dev0") else None)
    ranges = {r.get("name"): r for r in a.get("ranges", []) if isinstance(r, dict)}
    for rname in ("forward", "backward", "optimizer"):
        r = ranges.get(rname, {})
        t.exact(name, f"range '{rname}' calls", r.get("calls"), 30)
    for rname in ("forward", "backward"):
        r = ranges.get(rname, {})
        t.add(name, f"range '{rname}' peak above entry", r.get("peak_above_entry"), None, "INFO")
    # The tensor level of a range: the forward passes' tensors (all on the main thread) against
    # PyTorch's requested_bytes.all.allocated across them.
    tensors = ranges.get("forward", {}).get("tensors") or {}
    t.exact(name, "range 'forward' tensors bytes allocated vs torch requested_bytes delta",
            tensors.get("bytes_allocated"), gt.get("forward_requested_bytes"))
    marks = [m.get("name") for m in a.get("marks", []) if isinstance(m, dict)]
    t.exact(name, "marks", marks, ["epoch 0", "epoch 1", "epoch 2"])
    # The model's own lines must be the top sites of what was live at the peak: the weights
    # (model.cuda() in build_model), Adam's state and the activations all come from train.py.
    sites = [s for s in dev0.get("sites_at_peak", []) if isinstance(s, dict)]
    top = str(sites[0].get("site", "")) if sites else ""
    t.add(name, "top call site at the peak is a train.py line", top or None, "train.py:<line>",
          "MATCH" if "train.py:" in top else "MISMATCH", "" if sites else "no sites_at_peak in report.json")
    t.add(name, "call sites at the peak, top 5", len(sites), None, "INFO",
          "; ".join(f"{s.get('site')} {s.get('bytes')} B" for s in sites[:5])[:400])
    share = sum(s.get("bytes", 0) for s in sites if "train.py:" in str(s.get("site", "")))
    live = sum(s.get("bytes", 0) for s in sites)
    t.add(name, "bytes live at the peak under train.py sites", share, live, "INFO",
          f"{100.0 * share / live:.1f}% of the sites' bytes" if live else "")
    for f, what in (("perfetto.json", "perfetto export"), ("report.html", "html report"), ("folded.txt", "folded export")):
        path = os.path.join(d, f)
        size = os.path.getsize(path) if os.path.exists(path) else 0
        t.add(name, what, size, ">0 bytes", "MATCH" if size > 0 else "FAIL")


def workload_checks(t, d, name):
    """A workload that wrote its own checks (gt.json: {"checks": [{"metric", "shim", "truth"}]}): a
    row of each, and gt.json for what else it holds; None (one FAIL row) when it failed or wrote none."""
    rc = read_rc(os.path.join(d, "rc"))
    gt = load_json(os.path.join(d, "gt.json"))
    if rc != 0 or gt is None:
        t.add(name, "workload", rc, 0, "FAIL", "exit status or no gt.json (see stderr.txt)")
        return None
    for c in gt.get("checks", []):
        t.exact(name, c["metric"], c["shim"], c["truth"])
    return gt


def compare_python_api(t, work, name):
    """The Python package's figures (tests/gpu/python_api.py) next to torch.cuda's and the driver's,
    as the workload wrote them, and the report's view: profiled calls are ranges, cleanups listed."""
    d = os.path.join(work, name)
    gt = workload_checks(t, d, name)
    if gt is None:
        return
    try:
        with open(os.path.join(d, "report.txt"), errors="replace") as f:
            report = f.read()
    except OSError:
        report = ""
    if "watchdog" in name:
        t.exact(name, "report lists the cleanups", report.count("watchdog trimmed"), 2)
    else:
        # The rows of the "ranges:" table only (call sites further down start with the same names).
        lines = report.splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith("ranges:")), len(lines))
        table = []
        for line in lines[start + 1:]:
            if not line.startswith("    "):
                break
            table.append(line)
        ranges = [line.split()[0] for line in table
                  if line.split()[0] in ("seed_examples.<locals>.train_step", "data_loading")]
        t.exact(name, "report ranges", sorted(ranges), ["data_loading", "seed_examples.<locals>.train_step"])


def compare_live(t, work, name):
    """gpumemprof top against PyTorch (tests/gpu/live_top.py): each step's figures, how long the
    live view took to show them, and the run's state once the program ended."""
    d = os.path.join(work, name)
    gt = workload_checks(t, d, name)
    if gt is None:
        return
    t.exact(name, "program", gt.get("program"), "live_top.py")
    worst = max((s["ms"] for s in gt.get("latency_ms", [])), default=None)
    t.add(name, "slowest step to show in top --json (ms, includes starting the command)", worst, None, "INFO",
          " ".join(f"{s['step']}: {s['ms']}" for s in gt.get("latency_ms", [])))
    after = load_json(os.path.join(d, "top_after.json")) or {}
    states = [p.get("state") for p in after.get("processes", [])]
    t.exact(name, "state once ended (top --all --root)", states, ["exited"])


def compare_device_limit(t, work, name):
    """tests/gpu/device_limit.py: the rehearsal limit against PyTorch's own counters and messages."""
    d = os.path.join(work, name)
    gt = load_json(os.path.join(d, "gt.json")) or {}
    truth = gt.get("truth", {})
    t.exact(name, "truth run rc", truth.get("rc"), 0, truth.get("stderr", "")[-200:])
    t.add(name, "peak with context (reserved + context), limits below/above", gt.get("peak_with_context"), None,
          "INFO", f"context {gt.get('context')} B, below {gt.get('limit_below')} B, above {gt.get('limit_above')} B")
    below = gt.get("below", {})
    oom = below.get("oom") or {}
    t.exact(name, "below: OutOfMemoryError raised at (step, phase)", oom.get("at"), gt.get("expected_oom_at"))
    limit = gt.get("limit_below") or 0
    capacity = f"total capacity of {limit / (1 << 30):.2f} GiB"
    message = oom.get("message", "")
    t.add(name, "below: PyTorch's message names the limit as the capacity", capacity in message, True,
          "MATCH" if "CUDA out of memory" in message and capacity in message else "MISMATCH", message[:300])
    limits = []
    for meta in glob.glob(os.path.join(d, "runs", "below.*", "oom", "*", "metadata.json")):
        dl = (load_json(meta) or {}).get("device_limit") or {}
        limits.append(dl.get("limit"))
    t.exact(name, "below: a bundle's device_limit.limit", limit if limit in limits else limits[:3], limit)
    above = gt.get("above", {})
    t.exact(name, "above: completes without OOM", [above.get("rc"), above.get("oom")], [0, None])
    t.exact(name, "above: losses identical to the truth run", above.get("losses"), truth.get("losses"))
    t.exact(name, "above: max_memory_reserved identical", above.get("max_memory_reserved"),
            truth.get("max_memory_reserved"))
    frac = gt.get("fraction", {})
    t.add(name, "set_per_process_memory_fraction at the same cap: OOM at", (frac.get("oom") or {}).get("at"),
          gt.get("expected_oom_at"), "INFO",
          "the fraction caps PyTorch's cache only: the context and memory outside the cache are not counted")
    t.add(name, "fraction run: max_memory_reserved", frac.get("max_memory_reserved"), limit, "INFO",
          ((frac.get("oom") or {}).get("message") or "")[:300])
    jax = gt.get("jax", {})
    t.exact(name, "jax: bytes_limit is 75% of the limit", jax.get("bytes_limit"), int(0.75 * (16 << 30)),
            jax.get("stderr", "")[-200:])


def job_report(t, name, d):
    """`report ROOT --json` of a job workload (job_json.txt): (the report, its processes); a FAIL
    row and no processes when it is unusable."""
    rep = load_json(os.path.join(d, "job_json.txt"))
    procs = rep.get("processes") if isinstance(rep, dict) else None
    if not procs:
        t.add(name, "report ROOT --json", read_rc(os.path.join(d, "job_json.rc")), "a job", "FAIL",
              read_text(os.path.join(d, "job_json.stderr")).strip()[:200])
    return rep, procs


def perfetto_track_groups(d):
    """The process track groups' names of a job's perfetto export (job.perfetto.json), sorted."""
    perfetto = load_json(os.path.join(d, "job.perfetto.json"))
    events = perfetto.get("traceEvents", []) if isinstance(perfetto, dict) else perfetto or []
    return sorted({e.get("args", {}).get("name", "") for e in events
                   if isinstance(e, dict) and e.get("ph") == "M" and e.get("name") == "process_name"})


def compare_job(t, work, name):
    """The torchrun job: the rank's run directory judged as every PyTorch workload is, then what
    `gpumemprof run -o ROOT` made of the job: one rank-named directory, the job view's figures
    against PyTorch's and the launcher's, a CI gate that must break, and the job's exports."""
    compare_torch(t, work, name)
    d = os.path.join(work, name)
    gt = load_json(os.path.join(d, "gt.json")) or {}
    env = gt.get("launcher_env") or {}
    root = os.path.join(d, "runs")
    dirs = sorted(n for n in os.listdir(root) if os.path.isdir(os.path.join(root, n))) if os.path.isdir(root) else []
    t.add(name, "run directories under ROOT", ",".join(dirs) or None, "rank0.<exe>.<pid>",
          "MATCH" if len(dirs) == 1 and dirs[0].startswith("rank0.") else "MISMATCH")
    _, procs = job_report(t, name, d)
    if not procs:
        return
    p = procs[0]
    t.exact(name, "job: processes", len(procs), 1)
    t.exact(name, "job: rank, world size", [p.get("rank"), p.get("world_size")],
            [int(env.get("RANK") or -1), int(env.get("WORLD_SIZE") or -1)])
    t.exact(name, "job: launcher", p.get("launcher"), "torchrun")
    t.add(name, "job: job id (TORCHELASTIC_RUN_ID)", p.get("job_id"), env.get("TORCHELASTIC_RUN_ID"), "INFO")
    dev = (p.get("devices") or [{}])[0]
    fw = dev.get("framework") or {}
    st = gt.get("stats", {})
    t.exact(name, "job: tensors peak vs torch requested_bytes.all.peak",
            (fw.get("tensors_peak") or {}).get("bytes"), st.get("requested_bytes.all.peak"))
    t.exact(name, "job: PyTorch reserved peak vs torch.cuda.max_memory_reserved()",
            (fw.get("reserved_peak") or {}).get("bytes"), gt.get("max_memory_reserved"))
    t.add(name, "job: driver-level reserved peak", (dev.get("reserved_peak") or {}).get("bytes"), None, "INFO")
    gate = read_text(os.path.join(d, "gate.stderr")) + read_text(os.path.join(d, "gate.txt"))
    t.add(name, "check ROOT --max-peak 1MiB: exit, a broken-limit line", read_rc(os.path.join(d, "gate.rc")), 1,
          "MATCH" if read_rc(os.path.join(d, "gate.rc")) == 1 and "--max-peak" in gate else "MISMATCH",
          gate.strip().splitlines()[0][:160] if gate.strip() else "no output")
    groups = perfetto_track_groups(d)
    t.add(name, "job perfetto export: track groups", ";".join(groups) or None, "rank 0 (HOST pid PID)",
          "MATCH" if len(groups) == 1 and groups[0].startswith("rank 0 (") else "MISMATCH")
    size = os.path.getsize(os.path.join(d, "job.html")) if os.path.exists(os.path.join(d, "job.html")) else 0
    t.add(name, "job html", size, ">0 bytes", "MATCH" if size > 0 else "FAIL")
    # The Prometheus textfile (docs/metrics.md) of the rank: final figures, marked exited.
    mdir = os.path.join(d, "metrics")
    proms = sorted(f for f in os.listdir(mdir) if f.endswith(".prom")) if os.path.isdir(mdir) else []
    t.add(name, "metrics: .prom files", len(proms), 1, "MATCH" if len(proms) == 1 else "MISMATCH", ",".join(proms))
    samples = {}
    for line in read_text(os.path.join(mdir, proms[0])).splitlines() if proms else []:
        m = re.fullmatch(r'(\w+)\{([^}]*)\} (\S+)', line) or re.fullmatch(r'(\w+)() (\S+)', line)
        if m:
            samples.setdefault(m[1], (dict(re.findall(r'(\w+)="([^"]*)"', m[2])), float(m[3])))
    exited = samples.get("gpumemprof_exited", ({}, None))
    t.exact(name, "metrics: gpumemprof_exited, its rank label", [exited[1], exited[0].get("rank")],
            [1.0, env.get("RANK")])
    fw_peak = samples.get("gpumemprof_framework_allocated_peak_bytes", ({}, None))[1]
    t.exact(name, "metrics: framework allocated peak vs torch requested_bytes.all.peak",
            int(fw_peak) if fw_peak is not None else None, st.get("requested_bytes.all.peak"))
    peak = samples.get("gpumemprof_reserved_peak_bytes", ({}, None))[1]
    t.exact(name, "metrics: reserved peak == job view's driver-level reserved peak",
            int(peak) if peak is not None else None, (dev.get("reserved_peak") or {}).get("bytes"))


def rank_dirs(root):
    """{rank: run directory} of a job root's rank<R>.* directories (the last of a rank's, if several)."""
    found = {}
    for n in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        m = re.match(r"rank(\d+)\.", n)
        if m and os.path.isdir(os.path.join(root, n)):
            found[int(m[1])] = os.path.join(root, n)
    return found


def device_rows(t, name, label, s, device, truth):
    """One device of one process against PyTorch's figures for it: the tensor level exactly, the
    driver level at least PyTorch's reserved peak (what is more is other libraries' memory)."""
    dev = f"dev{device}"
    framework_peak_rows(t, name, s, device, truth.get("stats", {}), f"{label} ")
    got, want = lookup(s, f"{dev}.reserved_bytes.peak"), truth.get("max_memory_reserved")
    if got is None or want is None or got < want:
        t.add(name, f"{label} {dev}.reserved_bytes.peak >= torch max_memory_reserved", got, want, "MISMATCH")
    else:
        t.add(name, f"{label} {dev}.reserved_bytes.peak >= torch max_memory_reserved", got, want,
              "MATCH" if got == want else "OK", f"+{got - want} B outside torch's allocator" if got != want else "")


def compare_ddp(t, work, name):
    """The two-rank DDP job (tests/gpu/ddp_rank.py): each rank's own figures, then the job view,
    its perfetto export, the CI gate and, for torch_ddp_oom, rank 1's failure."""
    d = os.path.join(work, name)
    oom = name.endswith("_oom")
    rc, want_rc = read_rc(os.path.join(d, "rc")), 1 if oom else 0
    truths = {r: load_json(os.path.join(d, f"gt.rank{r}.json")) for r in (0, 1)}
    problems = [f"rank {r}: " + ("no ground truth" if gt is None else "; ".join(
        e.strip().splitlines()[-1] for e in gt.get("errors", []))[:200])
                for r, gt in truths.items() if gt is None or not gt.get("ok")]
    if rc != want_rc:
        problems.insert(0, f"exit {rc}")
    t.add(name, "run", f"rc={rc}", f"rc={want_rc}", "FAIL" if problems else "MATCH", "; ".join(problems))
    if any(gt is None or not gt.get("ok") for gt in truths.values()):
        return
    backend = truths[0].get("backend")
    t.add(name, "backend, devices of rank 0 and 1", f"{backend}, {truths[0].get('device')}/{truths[1].get('device')}",
          None, "INFO", "one GPU: both ranks share it over gloo" if backend == "gloo" else "")
    dirs = rank_dirs(os.path.join(d, "runs"))
    t.exact(name, "run directories under ROOT: ranks", sorted(dirs), [0, 1])
    for r, gt in truths.items():
        s = load_json(os.path.join(dirs.get(r, ""), "summary.json")) or {}
        device_rows(t, name, f"rank {r}", s, gt["device"], gt)
        # An uncaught OutOfMemoryError ends the interpreter with status 1.
        exit_status_row(t, name, s, 1 if r == gt.get("oom_rank") else 0, f"rank {r} ")
        report = read_text(os.path.join(d, f"rank{r}.report.txt"))
        named = "nccl" in report.lower()
        if backend == "nccl":
            t.add(name, f"rank {r} report names NCCL's memory", named, True, "MATCH" if named else "MISMATCH")
        ooms = [f for f in s.get("failed_allocations") or [] if f.get("error") == CUDA_ERROR_OUT_OF_MEMORY]
        request = gt.get("oom_request")
        if request:
            # PyTorch rounds the request up (to 2 MiB for large blocks) and retries once after
            # freeing its cache.
            fits = [f for f in ooms if request <= (f.get("size") or 0) <= request + 2 * MiB]
            t.add(name, f"rank {r}: out-of-memory failures of the request", len(fits), ">= 1",
                  "MATCH" if fits and len(fits) == len(ooms) else "MISMATCH", describe_failures(ooms))
            # The driver-level bundle of the call and its retry, and PyTorch's own through the bridge
            # (docs/oom-bundles.md).
            t.exact(name, f"rank {r}: OOM bundles written (driver level, PyTorch's)",
                    (s.get("oom") or {}).get("bundles_written"), 2)
            t.add(name, f"rank {r}: `gpumemprof oom` explains it", read_rc(os.path.join(d, f"rank{r}.oom.rc")), 0,
                  "MATCH" if read_rc(os.path.join(d, f"rank{r}.oom.rc")) == 0 else "FAIL",
                  read_text(os.path.join(d, f"rank{r}.oom.txt")).strip().splitlines()[0][:160]
                  if read_text(os.path.join(d, f"rank{r}.oom.txt")).strip() else "no output")
        else:
            t.exact(name, f"rank {r}: out-of-memory failures", len(ooms), 0)
    rep, procs = job_report(t, name, d)
    if not procs:
        return
    t.exact(name, "job: ranks, world sizes", sorted((p.get("rank"), p.get("world_size")) for p in procs),
            [(0, 2), (1, 2)])
    for p in procs:
        gt = truths.get(p.get("rank")) or {}
        row = next((x for x in p.get("devices") or [] if x.get("device") == gt.get("device")), {})
        fw = row.get("framework") or {}
        t.exact(name, f"job: rank {p.get('rank')} tensors peak vs torch requested_bytes.all.peak",
                (fw.get("tensors_peak") or {}).get("bytes"), gt.get("stats", {}).get("requested_bytes.all.peak"))
        t.exact(name, f"job: rank {p.get('rank')} PyTorch reserved peak vs torch max_memory_reserved",
                (fw.get("reserved_peak") or {}).get("bytes"), gt.get("max_memory_reserved"))
    first = rep.get("failed_first") or {}
    t.exact(name, "job: first to fail", first.get("label"), "rank 1" if oom else None)
    gate_rc = read_rc(os.path.join(d, "gate.rc"))
    gate = (read_text(os.path.join(d, "gate.txt")) + read_text(os.path.join(d, "gate.stderr"))).strip()
    gate_ok = gate_rc == 1 and "rank 1" in gate and "rank 0" not in gate if oom else gate_rc == 0
    t.add(name, "check ROOT --no-oom", gate_rc, 1 if oom else 0, "MATCH" if gate_ok else "MISMATCH",
          gate.splitlines()[0][:160] if gate else "no output")
    t.exact(name, "job perfetto export: track groups", [g.split(" (")[0] for g in perfetto_track_groups(d)],
            ["rank 0", "rank 1"])


def compare_split(t, work, name):
    """One process on two GPUs (tests/gpu/model_split.py): each device's figures against PyTorch's
    for it, so that nothing is charged to the wrong device. Not run with one GPU (rc -3)."""
    d = os.path.join(work, name)
    if read_rc(os.path.join(d, "rc")) == -3:
        t.add(name, "run", "not run", "two GPUs", "INFO", "this machine has one GPU")
        return
    gt, s, _ = start(t, work, name)
    if gt is None or s is None or not gt.get("ok"):
        return
    for device, truth in sorted((gt.get("devices") or {}).items()):
        device_rows(t, name, "process", s, int(device), truth)


# -- CUDA graphs ----------------------------------------------------------------------------------

# The fields of a summary.json "graphs" entry a ground truth may expect, in the order rows show them.
GRAPH_FIELDS = ("alloc_nodes", "free_nodes", "bytes_per_launch", "outliving_bytes", "launches", "uploads",
                "instantiations", "streams")


def output_digest(text):
    """A cell for a program's stdout: the line itself when it is one, else its line count and a hash."""
    lines = text.splitlines()
    if not lines:
        return None
    if len(lines) == 1:
        return lines[0][:60]
    return f"{len(lines)} lines, sha1 {hashlib.sha1(text.encode()).hexdigest()[:12]}"


def paired_rows(t, work, name):
    """A workload run without the profiler and then under it (scripts/gpu_check.py paired_workload):
    the same exit status, and the same stdout (a checksum line, losses printed with repr): the profiler
    must change nothing the program computes."""
    d = os.path.join(work, name)
    rc, base = read_rc(os.path.join(d, "rc")), read_rc(os.path.join(d, "base.rc"))
    if base is None:
        t.add(name, "same exit status with and without the profiler", rc, None, "FAIL",
              "no run without the profiler (base.rc)")
        return
    t.exact(name, "same exit status with and without the profiler", rc, base)
    got, want = read_text(os.path.join(d, "stdout.txt")), read_text(os.path.join(d, "base.stdout.txt"))
    metric = "same output with and without the profiler"
    if not want.strip():
        t.add(name, metric, output_digest(got), None, "FAIL", "no output without the profiler")
    elif got == want:
        t.add(name, metric, output_digest(got), output_digest(want), "MATCH")
    else:
        a, b = got.splitlines(), want.splitlines()
        i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        t.add(name, metric, output_digest(got), output_digest(want), "MISMATCH",
              f"line {i + 1}: {(a[i] if i < len(a) else '<end>')[:80]!r} with, "
              f"{(b[i] if i < len(b) else '<end>')[:80]!r} without")


def kind_figure(dev, kind, field, sub=None):
    node = (dev.get("by_kind") or {}).get(kind) or {}
    node = (node.get(sub) or {}) if sub else node
    return node.get(field) or 0


def graph_rows(t, name, gt, s):
    """Graph memory (docs: by_kind.graph, the top-level "graphs"): the driver's graph pool attributes
    against the program's own reading of them at its end (gt "graph_mem"), the device totals including
    graph memory, and each graph's memory nodes and launches (gt "graphs": {"match", "expect"})."""
    dev = lookup(s, "dev0") or {}
    g = (dev.get("by_kind") or {}).get("graph")
    mem = gt.get("graph_mem") if isinstance(gt.get("graph_mem"), dict) else {}
    if not isinstance(g, dict):
        t.add(name, "dev0.by_kind.graph", None, "present", "MISMATCH", "no by_kind.graph in summary.json")
    else:
        for sub, attr in (("reserved", "RESERVED"), ("used", "USED")):
            t.exact(name, f"dev0.by_kind.graph.{sub}.peak == driver {attr}_MEM_HIGH",
                    (g.get(sub) or {}).get("peak"), mem.get(f"{sub}_high"))
            cur, want = (g.get(sub) or {}).get("current"), mem.get(f"{sub}_current")
            t.add(name, f"dev0.by_kind.graph.{sub}.current (as last read)", cur, want, "INFO",
                  "" if cur == want else "the profiler's last reading; the program read it at its very end")
    # The device totals include graph memory: allocated the graph allocations live outside their graph,
    # reserved the graph pool's reserved bytes.
    kinds_alloc = sum(kind_figure(dev, k, "current") for k in ("linear", "pool", "vmm", "array", "graph"))
    kinds_res = (kind_figure(dev, "linear", "current") + kind_figure(dev, "pool", "current", "reserved")
                 + kind_figure(dev, "vmm", "current", "physical") + kind_figure(dev, "array", "current")
                 + kind_figure(dev, "graph", "current", "reserved"))
    t.exact(name, "dev0.allocated_bytes.current == its kinds' (graph included)",
            (dev.get("allocated_bytes") or {}).get("current"), kinds_alloc)
    t.exact(name, "dev0.reserved_bytes.current == its kinds' (graph.reserved included)",
            (dev.get("reserved_bytes") or {}).get("current"), kinds_res)

    listed = s.get("graphs")
    entries = [e for e in listed if isinstance(e, dict) and e.get("device", 0) == 0] \
        if isinstance(listed, list) else []
    launches = sum(e.get("launches") or 0 for e in entries)
    failed = sum(e.get("failed_launches") or 0 for e in entries)
    t.add(name, "graphs in summary.json (device 0): entries, launches", f"{len(entries)},{launches}", None, "INFO",
          f"graphs_total {s.get('graphs_total')}, failed launches {failed}; "
          + "; ".join(sorted({f"{e.get('origin')}/{e.get('capture_mode') or '-'}" for e in entries})))
    want = gt.get("graphs")
    if not isinstance(want, list):
        return
    if not isinstance(listed, list):
        t.add(name, "graphs", None, f"{len(want)} graphs", "MISMATCH", "no \"graphs\" list in summary.json")
        return
    groups = {}
    for w in want:
        groups.setdefault(json.dumps(w["match"], sort_keys=True), []).append(w)
    matched = set()
    for ws in groups.values():
        match = ws[0]["match"]
        fields = [f for f in GRAPH_FIELDS if any(f in w["expect"] for w in ws)]
        mine = [i for i, e in enumerate(entries) if all(e.get(k) == v for k, v in match.items())]
        matched.update(mine)
        got = sorted(",".join(str(entries[i].get(f)) for f in fields) for i in mine)
        truth = sorted(",".join(str(w["expect"].get(f)) for f in fields) for w in ws)
        label = "/".join("-" if match[k] is None else str(match[k]) + (" B" if k == "bytes_per_launch" else "")
                         for k in match)
        t.add(name, f"graph {label}: {','.join(fields)}", "; ".join(got) or None, "; ".join(truth),
              "MATCH" if got == truth else "MISMATCH",
              "" if got == truth else f"{len(mine)} entries match, {len(ws)} expected")
    if gt.get("graphs_complete"):
        others = [e for i, e in enumerate(entries) if i not in matched]
        t.add(name, "graphs in summary.json the program did not make", len(others), 0,
              "MATCH" if not others else "MISMATCH",
              "; ".join(f"{e.get('origin')}/{e.get('capture_mode')}/{e.get('bytes_per_launch')} B "
                        f"launches {e.get('launches')}" for e in others[:4]))


def private_pool_rows(t, name, gt, s):
    """PyTorch's private pools (graphs', cudagraph trees'), native allocator: the framework level's
    dev0.framework.private_pools against memory_snapshot's segments grouped by segment_pool_id at the
    end (the process then ends by os._exit, so nothing is freed after). Reserved is the segments'
    total_size; allocated is what the bridge counts for tensors everywhere (PyTorch's requested sizes,
    as requested_bytes), the segments' requested_size. INFO while summary.json has no private_pools."""
    if not isinstance(gt.get("private_pools"), dict):
        return
    truth = {k: v for k, v in gt["private_pools"].items() if k != "0,0"}
    t.add(name, "private pools in memory_snapshot (not 0,0)", len(truth), None, "INFO",
          "; ".join(f"{k}: {v['segments']} segments, {v['reserved']} B reserved, {v['requested']} B requested, "
                    f"{v['allocated']} B in blocks" for k, v in sorted(truth.items()))[:300])
    pools = lookup(s, "dev0.framework.private_pools")
    if not isinstance(pools, list):
        for k, v in sorted(truth.items()):
            t.add(name, f"framework.private_pools[{k}] reserved,allocated current", None,
                  f"{v['reserved']},{v['requested']}", "INFO", "no framework.private_pools in summary.json")
        return
    by = {p.get("pool"): p for p in pools if isinstance(p, dict)}
    for k, v in sorted(truth.items()):
        p = by.get(k) or {}
        t.exact(name, f"framework.private_pools[{k}].reserved.current == snapshot total_size",
                (p.get("reserved") or {}).get("current"), v["reserved"], "" if p else "pool not listed")
        got = (p.get("allocated") or {}).get("current")
        t.exact(name, f"framework.private_pools[{k}].allocated.current == snapshot requested_size", got,
                v["requested"], f"snapshot allocated_size (whole blocks) {v['allocated']}" if p else "pool not listed")
        t.add(name, f"framework.private_pools[{k}] peaks reserved,allocated",
              f"{(p.get('reserved') or {}).get('peak')},{(p.get('allocated') or {}).get('peak')}", None, "INFO",
              "the snapshot has no peaks")
    extra = sorted(k for k, p in by.items() if k not in truth and k != "0,0"
                   and ((p.get("reserved") or {}).get("current") or 0) > 0)
    t.add(name, "framework.private_pools holding memory the snapshot does not list", len(extra), 0,
          "MATCH" if not extra else "MISMATCH", ", ".join(map(str, extra[:4])))


def compare_graph_c(t, work, name):
    """graph_capture, graph_cublas (tests/gpu/graph_*.cu): the run without the profiler, then the
    ground truth's checks (truth.h) and the graph rows."""
    paired_rows(t, work, name)
    gt, s, _ = start(t, work, name)
    if gt is None or s is None:
        return
    common_rows(t, name, s)
    failures_row(t, name, s)
    check_rows(t, name, gt, s)
    graph_rows(t, name, gt, s)


def compare_torch_graphs(t, work, name):
    """torch_graphs, torch_graphs_async, torch_compile_graphs: the run without the profiler, every
    PyTorch workload's rows (compare_torch), then graph memory and the private pools."""
    paired_rows(t, work, name)
    compare_torch(t, work, name)
    d = os.path.join(work, name)
    gt = load_json(os.path.join(d, "gt.json"))
    if not isinstance(gt, dict) or not gt.get("ok"):
        return
    s, _ = find_summary(d, gt.get("pid"))
    if s is None:
        return
    graph_rows(t, name, gt, s)
    private_pool_rows(t, name, gt, s)


def compare_capture_rules(t, work, name):
    """tests/gpu/capture_rules.cu: facts of the driver about stream capture, recorded (INFO only).
    Per rule, the captures a call broke without the profiler (the fact) and with it."""
    d = os.path.join(work, name)

    def lines(path):
        out = []
        for line in read_text(path).splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
        return out
    shim, base = lines(os.path.join(d, "stdout.txt")), lines(os.path.join(d, "base.stdout.txt"))
    fatal = [x for x in shim + base if "fatal" in x]
    t.add(name, "run (with, without the profiler)", f"rc={read_rc(os.path.join(d, 'rc'))}",
          f"rc={read_rc(os.path.join(d, 'base.rc'))}", "INFO",
          "; ".join(f"{x['fatal']} -> {x.get('result')}" for x in fatal)[:200])
    version = next((x["driver_version"] for x in base + shim if "driver_version" in x), None)
    t.add(name, "driver version", version, None, "INFO")

    def broken(rows):
        out = {}
        for x in rows:
            if "rule" in x:
                combo = f"{x['capture_mode']}/{'same' if x['caller'] == 'capturing_thread' else 'other'}/{x['caller_mode']}"
                out.setdefault(x["rule"], {})[combo] = x.get("end_capture")
        return out
    rb, rs = broken(base), broken(shim)
    for rule in list(rb) + [r for r in rs if r not in rb]:
        b = sorted(c for c, e in rb.get(rule, {}).items() if e != 0)
        a = sorted(c for c, e in rs.get(rule, {}).items() if e != 0)
        note = "breaks: " + (", ".join(b) or "none")
        if a != b:
            note += f"; with the profiler: {', '.join(a) or 'none'}"
        t.add(name, f"rule {rule}: captures broken", len(a) if rule in rs else None,
              len(b) if rule in rb else None, "INFO", note)
    mb = {x["graph_mem"]: x for x in base if "graph_mem" in x}
    ms = {x["graph_mem"]: x for x in shim if "graph_mem" in x}
    cell = lambda x: None if x is None else f"{x['used']}/{x['used_high']}/{x['reserved']}/{x['reserved_high']}"
    for when in list(mb) + [w for w in ms if w not in mb]:
        t.add(name, f"graph memory used/high/reserved/high: {when}", cell(ms.get(when)), cell(mb.get(when)), "INFO")
    cb = {x["cost"]: x["ns"] for x in base if "cost" in x}
    cs = {x["cost"]: x["ns"] for x in shim if "cost" in x}
    for what in list(cb) + [w for w in cs if w not in cb]:
        t.add(name, f"ns per call: {what}", cs.get(what), cb.get(what), "INFO")


def run(work, out=None, only=None, bench=True, target=BENCH_TARGET, quiet=False):
    t = Table()
    plan = []
    try:
        with open(os.path.join(work, "plan.txt")) as f:
            plan = [line.split() for line in f if line.strip()]
    except OSError:
        pass
    for name, kind in plan:
        if only and name not in only:
            continue
        {"torch": compare_torch, "hotpath": compare_hotpath, "train": compare_train,
         "layout": compare_layout, "exit": compare_exit, "torch_llama": compare_llama,
         "torch_llama_oom": compare_llama_oom, "torch_layout": compare_torch_layout, "job": compare_job,
         "python_api": compare_python_api, "live": compare_live, "device_limit": compare_device_limit, "ddp": compare_ddp,
         "split": compare_split, "graph_c": compare_graph_c, "torch_graphs": compare_torch_graphs,
         "capture_rules": compare_capture_rules, "categories": compare_categories}.get(kind, compare_c)(t, work, name)
    if bench:
        compare_bench(t, work, target)
        compare_train_bench(t, work)
        compare_pairs_bench(t, work)
        compare_inference_bench(t, work)
        compare_categories_bench(t, work)
    text = t.text()
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "table.txt"), "w") as f:
            f.write(text)
        with open(os.path.join(out, "table.json"), "w") as f:
            json.dump({"exit": t.exit_code(), "rows": t.rows}, f, indent=1)
    if not quiet:
        sys.stdout.write(text)
    return t


def self_test():
    """Runs the comparison on hand-made fixtures and checks the verdicts it must reach."""
    here = os.path.dirname(os.path.abspath(__file__))
    fx = os.path.join(here, "fixtures")
    expected = load_json(os.path.join(fx, "expected.json"))
    failures = 0
    with tempfile.TemporaryDirectory() as top:
        # Git keeps no file modes but the executable bit: the fixtures are copied and every
        # oom/ tree gets the modes the shim gives it (directories 0700, files 0600), then the
        # exceptions of expected.json "modes" {path under work/: octal mode}.
        work = os.path.join(top, "work")
        shutil.copytree(os.path.join(fx, "work"), work)
        for root, dirs, files in os.walk(work):
            if "oom" in os.path.relpath(root, work).split(os.sep):
                os.chmod(root, 0o700)
                for f in files:
                    os.chmod(os.path.join(root, f), 0o600)
        for rel, mode in expected.get("modes", {}).items():
            os.chmod(os.path.join(work, rel), int(mode, 8))
        for case in expected["cases"]:
            failures += self_test_case(case, work)
    return 1 if failures else 0


def self_test_case(case, work):
    """One case of expected.json; returns 1 when it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        t = run(work, out=tmp, only=case.get("only"),
                bench=case.get("bench", True), quiet=True)
        rows = {f"{r['workload']}|{r['metric']}": r for r in t.rows}
        problems = []
        if t.exit_code() != case["exit"]:
            problems.append(f"exit {t.exit_code()} != {case['exit']}")
        for key, want in case.get("verdicts", {}).items():
            got = rows.get(key, {}).get("verdict")
            if got != want:
                problems.append(f"{key}: {got} != {want}")
        for key, fragment in case.get("notes", {}).items():
            if fragment not in rows.get(key, {}).get("note", ""):
                problems.append(f"{key}: note lacks {fragment!r}")
        allowed = set(case.get("others", ["MATCH", "OK", "INFO", "SLOW", "MISMATCH", "FAIL"]))
        for key, r in rows.items():
            if key not in case.get("verdicts", {}) and r["verdict"] not in allowed:
                problems.append(f"{key}: unexpected {r['verdict']} {r['note']}")
        if not os.path.exists(os.path.join(tmp, "table.json")):
            problems.append("table.json not written")
        print(f"self-test {case['name']}: {'ok' if not problems else 'FAILED'} "
              f"({len(t.rows)} rows, exit {t.exit_code()})")
        for p in problems:
            print("   ", p)
        if problems:
            sys.stdout.write(t.text())
        return 1 if problems else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work")
    ap.add_argument("--out")
    ap.add_argument("--only", help="comma-separated workload names")
    ap.add_argument("--no-bench", action="store_true")
    ap.add_argument("--bench-target", type=float, default=BENCH_TARGET)
    ap.add_argument("--self-test", action="store_true")
    a = ap.parse_args()
    if a.self_test:
        return self_test()
    if not a.work:
        ap.error("--work is required")
    only = set(a.only.split(",")) if a.only else None
    return run(a.work, a.out, only, not a.no_bench, a.bench_target).exit_code()


if __name__ == "__main__":
    sys.exit(main())
