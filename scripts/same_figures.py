#!/usr/bin/env python3
"""Same figures before and after a change that must not change them (a restructuring).

  scripts/same_figures.py BEFORE AFTER -- CMD [ARGS...]

BEFORE and AFTER are build-like trees, each with lib/libgpumemprof.so (and the framework bridge
in lib/gpumemprof/python) and bin/gpumemprof. CMD runs twice, once under each shim (LD_PRELOAD),
into two run directories. Then:
  - the two summary.json files must hold the same figures. What differs between any two runs of
    one program is left out: times, process and thread ids, paths, the event counts, NVML samples
    and the pools' reserved bytes, which the collector reads on a timer;
  - `gpumemprof report --json` of AFTER's run directory must be byte-identical from both commands.
Prints one line per check and exits 1 if any differs. Run directories go under a temporary
directory that is removed at the end."""
import json
import os
import subprocess
import sys
import tempfile

# Keys whose values differ between two runs of the same program, whatever the profiler.
VARYING_SUFFIXES = ("_ns", "_utc", "_at")
VARYING_KEYS = {"pid", "thread", "host", "exe", "argv", "run_directory", "events", "nvml", "trace", "duration_ns",
                "reserved", "released_by_pool_destroy", "pools", "trace_events_written"}


def figures(x):
    if isinstance(x, dict):
        return {k: figures(v) for k, v in x.items() if k not in VARYING_KEYS and not k.endswith(VARYING_SUFFIXES)}
    if isinstance(x, list):
        return [figures(v) for v in x]
    return x


def run(tree, cmd, out):
    env = dict(os.environ, LD_PRELOAD=os.path.join(tree, "lib", "libgpumemprof.so"), GPUMEMPROF_OUTPUT=out)
    # The framework bridge's route for LD_PRELOAD users (docs/framework-bridge.md), each tree its own.
    bridge = os.path.join(tree, "lib", "gpumemprof", "python")
    env["PYTHONPATH"] = bridge + (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=600)
    if r.returncode != 0:
        sys.stderr.write(r.stderr.decode(errors="replace")[-2000:])
    return r.returncode


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit(__doc__)
    before, after, cmd = sys.argv[1], sys.argv[2], sys.argv[4:]
    failed = False
    with tempfile.TemporaryDirectory(prefix="gmp-same-") as tmp:
        dirs = {}
        for name, tree in (("before", before), ("after", after)):
            out = os.path.join(tmp, name)
            rc = run(tree, cmd, out)
            dirs[name] = out
            print(f"{name}: exit {rc}")
        sums = {n: figures(json.load(open(os.path.join(d, "summary.json")))) for n, d in dirs.items()}
        same = sums["before"] == sums["after"]
        print(f"summary.json figures: {'SAME' if same else 'DIFFER'}")
        if not same:
            failed = True
            for key in sorted(set(sums["before"]) | set(sums["after"])):
                if sums["before"].get(key) != sums["after"].get(key):
                    print(f"  {key}: before {json.dumps(sums['before'].get(key))[:300]}")
                    print(f"  {key}: after  {json.dumps(sums['after'].get(key))[:300]}")
        reports = [subprocess.run([os.path.join(t, "bin", "gpumemprof"), "report", "--json", dirs["after"]],
                                  capture_output=True).stdout for t in (before, after)]
        same = reports[0] == reports[1] and len(reports[0]) > 0
        print(f"report --json of one run by both commands: {'SAME' if same else 'DIFFER'} ({len(reports[1])} bytes)")
        failed |= not same
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
