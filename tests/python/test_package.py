"""The Python package (python/gpumemprof, docs/python.md) against the fake driver through the shim:
exact figures of known allocations, the tracker's events, callbacks, exports, the native watchdog,
the fake PyTorch's tensor level, and the package without the shim. Run by ctest (python_package)."""

import csv
import json
import os
import subprocess
import sys

import pytest

MiB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
SHIM, FAKE_DIR, TOOL = os.environ["GMP_SHIM"], os.environ["GMP_FAKE_DIR"], os.environ["GMP_TOOL"]
PACKAGE, FAKE_TORCH = os.environ["GMP_PYTHON_PACKAGE"], os.environ["GMP_FAKE_TORCH"]


def run(scenario, tmp_path, preload=True, **env):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GPUMEMPROF_", "FAKE_CUDA_"))}
    e.pop("LD_PRELOAD", None)
    e.update(PYTHONPATH=PACKAGE, LD_LIBRARY_PATH=FAKE_DIR, FAKE_CUDA_CAPACITY="1G", GPUMEMPROF_SAMPLE_MS="1",
             GPUMEMPROF_OUTPUT=str(tmp_path / "run"), PATH=os.path.dirname(TOOL) + ":" + os.environ["PATH"])
    if preload:
        e["LD_PRELOAD"] = SHIM
    e.update(env)
    p = subprocess.run([sys.executable, os.path.join(HERE, "workload.py"), scenario, str(tmp_path)], env=e,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1]), p.stderr


def fields(allocated, freed, peak, before, after, created, deleted, name, kinds):
    return dict(name=name, allocated=allocated, freed=freed, diff=after - before, peak=peak, before=before,
                after=after, reserved_after=after, created=created, deleted=deleted, kinds=kinds, timed=True)


def test_profile_function_and_context_exact(tmp_path):
    out, _ = run("profile", tmp_path)
    step = "profile.<locals>.train_step"
    # The 8 MiB spike lives between two calls: no sampling would see it; the peak does.
    assert out["first"] == fields(12 * MiB, 11 * MiB, 11 * MiB, 2 * MiB, 3 * MiB, 3, 2, step, {"linear": 3 * MiB})
    assert out["inner"] == fields(13 * MiB, 11 * MiB, 18 * MiB, 8 * MiB, 10 * MiB, 3, 2, step, {"linear": 10 * MiB})
    # The context holds the nested call: its peak and bytes include the inner window's.
    assert out["outer"] == fields(18 * MiB, 16 * MiB, 18 * MiB, 3 * MiB, 5 * MiB, 4, 3, "data_loading",
                                  {"linear": 5 * MiB})
    assert out["failed"] == fields(4 * MiB, 0, 9 * MiB, 5 * MiB, 9 * MiB, 1, 0, "profile.<locals>.<lambda>",
                                   {"linear": 9 * MiB})
    assert out["recording"] is True
    assert out["summary"] == {"total_functions_profiled": 3, "total_function_calls": 4,
                              "peak_memory_usage": 18 * MiB, "net_memory_change": 7 * MiB}
    assert out["functions"] == {
        step: {"call_count": 2, "avg_memory_allocated": 12.5 * MiB, "peak_memory": 18 * MiB},
        "data_loading": {"call_count": 1, "avg_memory_allocated": 18 * MiB, "peak_memory": 18 * MiB},
        "profile.<locals>.<lambda>": {"call_count": 1, "avg_memory_allocated": 4 * MiB, "peak_memory": 9 * MiB}}


def test_profiled_calls_are_ranges_in_the_report(tmp_path):
    run("profile", tmp_path)
    # A wide terminal: at 80 columns the table's heading wraps (report fits the terminal).
    report = subprocess.run([TOOL, "report", str(tmp_path / "run")], capture_output=True, text=True, timeout=30,
                            env={**os.environ, "COLUMNS": "1000"})
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("ranges: 3 names, 4 calls"))
    # name, calls, allocated and the peak above entry: the same bytes as the ProfileResults'.
    rows = [(t[0], t[1], " ".join(t[6:8]), " ".join(t[8:10]))
            for t in (line.split() for line in lines[start + 3:start + 6])]  # after the two header rows
    assert rows == [("profile.<locals>.train_step", "2", "25.00 MiB", "10.00 MiB"),
                    ("data_loading", "1", "18.00 MiB", "15.00 MiB"),
                    ("profile.<locals>.<lambda>", "1", "4.00 MiB", "4.00 MiB")]


def test_query_api_limits(tmp_path):
    out, _ = run("query_limits", tmp_path)
    assert out["synced"] == [1] * 20  # UINT64_MAX waits as long as it takes, never "already past"
    assert out["after_max"] == 0  # nothing comes after the highest seq (it used to wrap to the oldest)
    assert out["after_zero"] == 40


def test_windows_of_concurrent_threads_hold_their_own_allocations(tmp_path):
    out, _ = run("threads", tmp_path)
    assert out["results"] == 200
    # Every one of a thread's 100 results counts its own allocation, freeing and peak.
    assert out["short"] == {"a": 0, "b": 0}


def test_a_forked_child_uses_the_package_whatever_locks_were_held(tmp_path):
    out, _ = run("fork_child", tmp_path)
    assert out["child"] == 0


@pytest.mark.parametrize("value, expected", [("200MiB", 200 * MiB), ("1.5G", 3 << 29), ("512", 512),
                                             ("0.5", 100 * MiB), ("1 G", 100 * MiB), ("16777216T", 100 * MiB)])
def test_thresholds_read_sizes_as_the_profiler_does(tmp_path, value, expected):
    out, _ = run("thresholds", tmp_path, GPUMEMPROF_LEAK_BYTES=value, GPUMEMPROF_WARN_PERCENT="90",
                 GPUMEMPROF_CRITICAL_PERCENT="85")
    # A critical threshold below the warning one: the profiler takes both defaults.
    assert out == {"memory_warning_percent": 80.0, "memory_critical_percent": 95.0,
                   "memory_leak_threshold": expected, "fragmentation_threshold": 0.3}


@pytest.mark.parametrize("preload", [True, False])
def test_a_context_name_is_taken_as_str_with_or_without_the_profiler(tmp_path, preload):
    out, _ = run("odd_name", tmp_path, preload=preload)
    assert out == {"name": "123", "allocated": MiB if preload else 0}


def test_a_context_left_open_says_nothing_at_exit(tmp_path):
    out, err = run("left_open", tmp_path)
    assert out == {"results": 0}
    assert err == ""


def test_tracker_events_callbacks_and_exports(tmp_path):
    out, err = run("tracker", tmp_path, GPUMEMPROF_WARN_PERCENT="50", GPUMEMPROF_CRITICAL_PERCENT="75")
    assert "memory_warning_percent" not in err  # the same value as the profiler's: nothing to say
    # Once per alert (the warning does not fire again while it holds), on the tracker's thread.
    assert out["calls"] == [["warning", 600 * MiB, "gpumemprof-tracker"], ["critical", 800 * MiB, "gpumemprof-tracker"]]
    assert out["types"] == ["start", "allocation", "peak", "warning", "allocation", "peak", "deallocation",
                            "allocation", "peak", "critical", "deallocation", "deallocation", "stop"]
    assert out["allocations"] == [[600 * MiB, 600 * MiB, "linear"], [610 * MiB, 10 * MiB, "linear"],
                                  [800 * MiB, 200 * MiB, "linear"]]
    assert out["last2"] == ["deallocation", "stop"]
    assert out["since"] == 12 and out["since_future"] == 0
    assert out["stats"] == {"peak_memory": 800 * MiB, "total_allocations": 3, "total_deallocations": 3,
                            "alert_count": 2, "current_memory_allocated": 0, "total_memory": 1024 * MiB,
                            "records_missed": 0}
    assert out["timeline"] == {"allocated": [0], "peak": [800 * MiB]}
    with open(tmp_path / "events.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["event_type"] for r in rows] == out["types"]
    assert [int(r["memory_change"]) for r in rows if r["event_type"] == "deallocation"] == [-10 * MiB, -200 * MiB,
                                                                                          -600 * MiB]
    with open(tmp_path / "events.json") as f:
        doc = json.load(f)
    assert [e["event_type"] for e in doc["events"]] == out["types"]
    assert [e["memory_allocated"] for e in doc["events"] if e["event_type"] == "critical"] == [800 * MiB]
    assert doc["telemetry"]["recording"] is True


@pytest.mark.parametrize("interval, trims", [(None, 1), ("0", 2)])
def test_native_watchdog_trims_once_per_interval(tmp_path, interval, trims):
    env = dict(GPUMEMPROF_WATCHDOG="trim", GPUMEMPROF_WARN_PERCENT="40", GPUMEMPROF_CRITICAL_PERCENT="50")
    if interval is not None:
        env["GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS"] = interval
    out, _ = run("watchdog", tmp_path, **env)
    assert out["cleanups"] == [[-256 * MiB, 1]] * trims
    assert out["counts"] == [trims, trims * 256 * MiB]
    assert out["pool_reserved"] == (256 * MiB if trims == 1 else 0)  # the untrimmed second episode's
    report = subprocess.run([TOOL, "report", str(tmp_path / "run")], capture_output=True, text=True, timeout=30)
    lines = [line.strip() for line in report.stdout.splitlines() if "watchdog trimmed" in line]
    assert len(lines) == trims and all(line.endswith("device 0  watchdog trimmed 1 pool: 256.00 MiB given back")
                                       for line in lines), report.stdout


def test_cleanups_in_the_exports_and_html(tmp_path):
    run("watchdog", tmp_path, GPUMEMPROF_WATCHDOG="trim", GPUMEMPROF_WARN_PERCENT="40",
        GPUMEMPROF_CRITICAL_PERCENT="50", GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS="0")
    run_dir = str(tmp_path / "run")

    def tool(*args):
        r = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        return r.stdout

    markers = json.loads(tool("report", "--json", run_dir))["analysis"]["markers"]
    assert [(m["bytes_released"], m["pools_trimmed"]) for m in markers
            if m["type"] == "cleanup"] == [(256 * MiB, 1)] * 2
    tool("export", run_dir, "--format", "perfetto", "-o", str(tmp_path / "p.json"))
    with open(tmp_path / "p.json") as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    assert [e["args"]["bytes_released"] for e in events
            if e.get("name") == "watchdog cleanup: 256.00 MiB given back"] == [256 * MiB] * 2
    tool("export", run_dir, "--format", "telemetry-v2", "-o", str(tmp_path / "t.json"))
    with open(tmp_path / "t.json") as f:
        cleanups = [e for e in json.load(f) if e["event_type"] == "cleanup"]
    assert [(e["context"], e["metadata"]["bytes_released"]) for e in cleanups] == [
        ("watchdog trimmed 1 pool: 268435456 bytes given back", 256 * MiB)] * 2
    tool("html", run_dir, "-o", str(tmp_path / "r.html"))
    with open(tmp_path / "r.html") as f:
        assert f.read().count("watchdog trimmed 1 pool: 256.00 MiB given back") == 2


def test_watchdog_off_by_default(tmp_path):
    out, _ = run("watchdog", tmp_path, GPUMEMPROF_WARN_PERCENT="40", GPUMEMPROF_CRITICAL_PERCENT="50")
    assert out["cleanups"] == [] and out["counts"] == [0, 0] and out["pool_reserved"] == 256 * MiB


def test_without_the_shim_says_so_and_run_starts_one(tmp_path):
    out, err = run("no_profiler", tmp_path, preload=False)
    assert err.count("gpumemprof: the profiler is not loaded in this process, so nothing is recorded") == 1
    child = out.pop("child")
    assert out == {"loaded": False, "recording": False, "allocated": 0, "peak": 0,
                   "types": ["start", "stop", "cleanup"],
                   "cleanups": 1, "child_status": 0}
    # gpumemprof.run([...]) put the child under the profiler, with this package on its path.
    assert child["recording"] is True
    assert child["first"]["peak"] == 11 * MiB
    assert len([d for d in os.listdir(tmp_path) if d.startswith("workload.py.")]) == 1  # named by its script


def test_results_by_category(tmp_path):
    bootstrap = os.path.join(os.path.dirname(SHIM), "gpumemprof", "python")
    out, _ = run("categories", tmp_path, PYTHONPATH=":".join((bootstrap, FAKE_TORCH, PACKAGE)))
    truth = out["truth"]
    # The call's peak (step 3's backward), each tensor held then by what it turned out to be.
    assert out["peak"] == truth["peak"]["bytes"]
    assert out["peak_categories"] == dict(truth["peak"]["by_category"], unknown=0)
    assert truth["peak"]["by_category"]["activations"] > 0 and truth["peak"]["by_category"]["gradients"] > 0
    # Its end: parameters, the last step's gradients, AdamW's state, the kept input and loss.
    assert out["after"] == sum(truth["at_exit"].values())
    assert out["after_categories"] == dict(truth["at_exit"], unknown=0)
    assert sum(out["before_categories"].values()) == 0  # the model was made inside the call


def test_tensor_level_with_the_bridge(tmp_path):
    bootstrap = os.path.join(os.path.dirname(SHIM), "gpumemprof", "python")
    out, _ = run("torch_level", tmp_path, PYTHONPATH=":".join((bootstrap, FAKE_TORCH, PACKAGE)))
    assert out["attached"] is True
    tensors = 3000 + MiB + 7  # the bytes asked for, not the blocks' rounded sizes
    assert out["result"] == dict(name="torch_level.<locals>.step", allocated=tensors, freed=tensors, diff=0,
                                 peak=tensors, before=0, after=0, reserved_after=22 * MiB, created=2, deleted=2,
                                 kinds={"linear": 22 * MiB}, timed=True)
    # The driver level inside the call: y's 20 MiB segment (x fits in the 2 MiB one of the bridge's probe).
    assert out["driver_allocated"] == 20 * MiB
    assert out["torch_requested_current"] == 0
