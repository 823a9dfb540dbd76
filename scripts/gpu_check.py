#!/usr/bin/env python3
"""Real-GPU check of gpumemprof in one call (stdlib only).

Builds the CUDA workloads in tests/gpu/, runs each (and PyTorch with three allocator settings, and
PyTorch ending through os._exit, SIGTERM and a caught OOM) under LD_PRELOAD=build/lib/libgpumemprof.so,
times allocation pairs and training steps with and without the shim, then has tests/gpu/compare.py
judge every run directory against the workload's ground truth and print one table.

  scripts/gpu_check.py                 results in $OUT when set, else build/gpu-check/
  GPU_CHECK_ONLY="hotpath_costs bench_*" scripts/gpu_check.py   only these (fnmatch globs; commas
                                       work as separators too); the table then holds only them.

Environment: PYTHON (the Python that runs the PyTorch workloads; default python3), NVCC,
GPU_CHECK_DEADLINE (seconds, default 560: caps every timeout so the whole check, packing included,
ends inside the device tool's 10-minute call even if everything hangs; what the deadline leaves no
time for is reported SKIP), GPU_CHECK_BENCH_ROUNDS (A/B rounds of the allocation pairs, 4),
GPU_CHECK_TORCH_ROUNDS (rounds of the PyTorch benchmarks, 3: each of their processes spends ~13 s
starting PyTorch), GPU_CHECK_ASYNC_PAIRS (200000), GPU_CHECK_MALLOC_PAIRS (2000), GPU_CHECK_KEEP (set:
keep the work directory).

Workloads:
  rt_static rt_shared driver_api async_pools vmm   CUDA programs (static/shared cudart, driver API)
  torch_default torch_expandable torch_async       PyTorch with each allocator setting
  torch_oom rt_oom_exit                            out of memory on purpose: OOM bundles checked
  graph_capture      CUDA graphs with memory nodes (tests/gpu/graph_capture.cu): a capture per mode with a
                     second thread calling during it, an allocation outliving its launch, auto free on
                     launch, explicit memory nodes, a fork/join capture, 16 MiB left live at exit
  graph_cublas       cuBLAS SGEMMs captured (global mode) with its own workspace and with a user one
  torch_graphs torch_graphs_async   torch.cuda.graph (tests/gpu/torch_graphs.py): a whole training
                     step and a forward (native allocator), the forward alone (cudaMallocAsync)
  torch_compile_graphs  torch.compile(mode="reduce-overhead"): CUDA graph trees on a tiny model
                     These four run without the profiler first, then under it: same exit status, same
                     output (checksum, losses); graph memory against the driver's attributes as the
                     program read them, each graph's memory nodes and launches, PyTorch's private pools
  capture_rules      what the driver does during a stream capture (tests/gpu/capture_rules.cu), without
                     and with the profiler: its JSON lines, INFO only
  torch_train        tests/gpu/train.py through `gpumemprof run`, then every post-mortem command
  torch_llama        a HF transformers Llama (tests/gpu/llama_train.py) through `gpumemprof run`: the
                     framework bridge's figures against PyTorch's, report, memory-viz export loaded
                     by torch.cuda._memory_viz
  torch_llama_oom    the same model ending in an uncaught OutOfMemoryError: the OOM bundle and
                     `gpumemprof oom` against PyTorch's own message
  torch_categories   tensor memory categories (issue 33, tests/gpu/categories.py) through `gpumemprof run`:
                     a small HF Llama trained with AdamW (llama), the same in DistributedDataParallel
                     with and without gradient_as_bucket_view (ddp_bucket_view, ddp), greedy generate
                     with a DynamicCache (generate); `report RUN --json`'s categories_at_peak and
                     categories_at_exit against PyTorch's storages and counters; llama again with
                     GPUMEMPROF_CATEGORIES=off (llama_off): every tensor unknown, the same output
  python_layout      shim/python_layouts.h against offsetof on this Python's own headers
  torch_layout       shim/torch_layouts.h against this PyTorch's own headers (vtable slot, offsets)
  exit_os_exit exit_sigterm exit_oom_retry         PyTorch ending without exit handlers
  torch_python_api   the Python package's seed examples (tests/gpu/python_api.py) through `gpumemprof run`:
                     profile_function, profile_context and the tracker's figures against torch.cuda's
  torch_python_watchdog  the native watchdog (GPUMEMPROF_WATCHDOG=trim) on a cudaMallocAsync pool
  torch_live         gpumemprof top on a PyTorch program (tests/gpu/live_top.py) through `gpumemprof run`:
                     after each step, `top --json` of the process against PyTorch's counters; afterwards
                     `top --json --all --root` of its run says it exited
  torch_job          a one-rank `torchrun` job through `gpumemprof run -o ROOT` with limits and a
                     metrics directory; the job report, `check` (a limit that must break), the job's
                     perfetto export and the Prometheus file, judged against PyTorch and torchrun
  torch_ddp          a two-rank DistributedDataParallel job (tests/gpu/ddp_rank.py) through `gpumemprof run -o
                     ROOT -- torchrun --nproc-per-node 2`: each rank's figures at both levels against its
                     own PyTorch counters, the job view and perfetto export with both ranks, NCCL's buffers
                     named in each rank's report. With one GPU both ranks share it over gloo (NCCL refuses
                     that), and the NCCL rows are INFO
  torch_ddp_oom      the same job with rank 1 asking for twice its GPU: its bundle, the job view naming
                     rank 1 first to fail, `check ROOT --no-oom` exiting 1 naming rank 1
  torch_split        one process, a model split over cuda:0 and cuda:1 (tests/gpu/model_split.py): each
                     device's figures against PyTorch's for it; needs two GPUs (INFO "not run" on one)
  device_limit       GPUMEMPROF_DEVICE_LIMIT (tests/gpu/device_limit.py): a training run under a limit below
                     its peak fails where the limit says, with PyTorch's message and a bundle; above its
                     peak it ends with identical losses; set_per_process_memory_fraction at the same cap
                     for comparison; JAX under a limit preallocates 75% of it
  hotpath_costs      ns per call of the hot path's ingredients (INFO)
  bench_async bench_malloc bench_train             interleaved A/B timing against targets
  bench_pairs        ns per torch.empty alloc/free pair: no profiler, bridge on, bridge off, and
                     PyTorch's own _record_memory_history(stacks="python")
  bench_inference    tests/gpu/inference_bench.py: HF Llama greedy generate (ms/token), its training step
                     and torch.empty pairs, without the profiler and with it, where each round times
                     recording on and paused in the same process (and the pairs with the bridge detached)
  bench_categories   the category hooks' cost (issue 33): inference_bench.py's generate and training step under
                     the profiler, the hooks switched on and off between neighbouring units of one process;
                     the ratio of each unit with the hooks to its neighbour without (INFO)

Files written to the results directory (at most 4): table.txt, table.json, log.txt and
gpu-check.tar.gz (ground truths, summaries, manifests, logs, OOM bundle JSON, stdout/stderr, build
logs, hot-path JSONs, and traces under 8 MiB; the benchmarks' run directories are reduced to
summary.json and the log: their traces are hundreds of MB).
Exit status: 0 all good, 1 a MISMATCH or FAIL, 2 only benchmarks over target or skipped, 3 prerequisites
missing or a GPU_CHECK_ONLY word that selects nothing.
"""
import fnmatch
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "gpu"))
import compare  # noqa: E402  (tests/gpu/compare.py: the judge)

ALL_NAMES = ("rt_static rt_shared driver_api async_pools vmm graph_capture graph_cublas capture_rules torch_default "
             "torch_expandable torch_async torch_graphs torch_graphs_async torch_compile_graphs torch_oom "
             "rt_oom_exit torch_train torch_llama torch_llama_oom torch_categories python_layout torch_layout exit_os_exit exit_sigterm "
             "exit_oom_retry torch_python_api torch_python_watchdog torch_live torch_job torch_ddp torch_ddp_oom torch_split "
             "device_limit hotpath_costs bench_async "
             "bench_malloc bench_train bench_pairs bench_inference bench_categories").split()
# CUDA sources: binary name -> (source, extra nvcc arguments). rt_shared is rt_static's source
# linked against the shared cudart.
CUDA_BUILDS = {
    "rt_static": ("rt_static.cu", []),
    "rt_shared": ("rt_static.cu", ["-cudart", "shared"]),
    "driver_api": ("driver_api.cpp", ["-lcuda"]),
    "async_pools": ("async_pools.cu", []),
    "vmm": ("vmm.cu", []),
    "graph_capture": ("graph_capture.cu", []),
    "graph_cublas": ("graph_cublas.cu", ["-lcublas"]),
    "capture_rules": ("capture_rules.cu", ["-lcuda"]),
    "rt_oom_exit": ("rt_oom_exit.cu", []),
    "hotpath_costs": ("hotpath_costs.cu", []),
    "bench_async_pair": ("bench_async_pair.cu", []),
}
# The OOM bundle settings are unset so that bundles go to <run dir>/oom/ with the defaults.
UNSET_FOR_WORKLOADS = ("PYTORCH_CUDA_ALLOC_CONF", "GPUMEMPROF_ENABLE", "GPUMEMPROF_OOM_DIR", "GPUMEMPROF_OOM_MAX_DUMPS",
                       "GPUMEMPROF_OOM_MAX_TOTAL_MB", "GPUMEMPROF_OOM_EVENTS")
MiB = 1 << 20
TARBALL_LIMIT = 15 * MiB


class Tee:
    """stdout and log.txt at once: everything the check prints is also in the results."""

    def __init__(self, path):
        self.file = open(path, "w")
        self.console = sys.stdout

    def write(self, text):
        self.console.write(text)
        self.file.write(text)

    def flush(self):
        self.console.flush()
        self.file.flush()


def say(*args):
    print(*args, flush=True)


def tail(path, lines=5, indent="    "):
    """The last lines of a file, indented, for the log ("" when there is none)."""
    try:
        with open(path, errors="replace") as f:
            return "".join(indent + ln for ln in f.readlines()[-lines:])
    except OSError:
        return ""


def exit_status(returncode):
    """A child's status as a shell writes it: killed by signal N is 128+N (SIGKILL: 137)."""
    return 128 - returncode if returncode < 0 else returncode


class Check:
    def __init__(self):
        self.start = time.monotonic()
        self.dest = os.environ.get("OUT") or os.path.join(ROOT, "build", "gpu-check")
        self.shim = os.path.join(ROOT, "build", "lib", "libgpumemprof.so")
        self.tool = os.path.join(ROOT, "build", "bin", "gpumemprof")
        self.bootstrap = os.path.join(ROOT, "build", "lib", "gpumemprof", "python")
        self.py = os.environ.get("PYTHON", "python3")
        self.deadline = self.start + int(os.environ.get("GPU_CHECK_DEADLINE", "560"))
        self.rounds = int(os.environ.get("GPU_CHECK_BENCH_ROUNDS", "4"))
        self.torch_rounds = int(os.environ.get("GPU_CHECK_TORCH_ROUNDS", "3"))
        self.async_pairs = int(os.environ.get("GPU_CHECK_ASYNC_PAIRS", "200000"))
        self.malloc_pairs = int(os.environ.get("GPU_CHECK_MALLOC_PAIRS", "2000"))
        self.reps = 5  # timed repetitions per benchmark process (median)
        self.only = os.environ.get("GPU_CHECK_ONLY", "").replace(",", " ").split()
        self.work = tempfile.mkdtemp(prefix="gpu-check.", dir=os.environ.get("TMPDIR", "/tmp"))
        self.bin = os.path.join(self.work, "bin")
        for d in (self.dest, self.bin, os.path.join(self.work, "build"), os.path.join(self.work, "bench")):
            os.makedirs(d, exist_ok=True)
        self.nvcc = self.cuda_home = None

    # -- selection and time -------------------------------------------------------------------

    def want(self, name):
        return not self.only or any(fnmatch.fnmatchcase(name, p) for p in self.only)

    def needs(self, binary):
        """Whether a selected workload runs this binary."""
        if binary == "bench_async_pair":
            return self.want("bench_async") or self.want("bench_malloc")
        return self.want(binary)

    def check_only(self):
        """Every word of GPU_CHECK_ONLY must select something: a typo must not run an empty check."""
        bad = [p for p in self.only if not any(fnmatch.fnmatchcase(n, p) for n in ALL_NAMES)]
        for p in bad:
            say(f"GPU_CHECK_ONLY: '{p}' selects nothing; names: {' '.join(ALL_NAMES)}")
        if self.only:
            say("GPU_CHECK_ONLY: " + " ".join(n for n in ALL_NAMES if self.want(n)))
        return not bad

    def elapsed(self):
        return int(time.monotonic() - self.start)

    def phase(self, what):
        say(f"\n== {what} (t={self.elapsed()}s)")

    def budget(self, limit):
        """Seconds a command may run now: its own limit, cut to what is left before the deadline."""
        left = int(self.deadline - time.monotonic() - 20)
        return max(1, min(limit, left))

    def plan(self, name, kind):
        with open(os.path.join(self.work, "plan.txt"), "a") as f:
            f.write(f"{name} {kind}\n")

    def timed(self, limit, argv, cwd=None, env=None, stdout=None, stderr=None):
        """Runs argv under timeout(1) (SIGTERM at the limit, SIGKILL 5 s later, so that the shim can
        still write its summary); returns the exit status as a shell reports it (124: timed out)."""
        out = open(stdout, "wb") if stdout else subprocess.DEVNULL
        err = open(stderr, "ab") if stderr else subprocess.DEVNULL
        try:
            p = subprocess.run(["timeout", "-k", "5", str(limit)] + argv, cwd=cwd, env=env, stdout=out, stderr=err,
                               stdin=subprocess.DEVNULL)
            return exit_status(p.returncode)
        finally:
            for f in (out, err):
                if f is not subprocess.DEVNULL:
                    f.close()

    def shim_env(self, unset=(), **values):
        env = {k: v for k, v in os.environb.items() if k.decode() not in unset}
        for k, v in values.items():
            env[k.encode()] = v if isinstance(v, bytes) else str(v).encode()
        env[b"LD_PRELOAD"] = self.shim.encode()
        # The documented route to the framework bridge for LD_PRELOAD users (docs/framework-bridge.md).
        prev = env.get(b"PYTHONPATH", b"")
        env[b"PYTHONPATH"] = self.bootstrap.encode() + (b":" + prev if prev else b"")
        return env

    # -- phases -------------------------------------------------------------------------------

    def prereqs(self):
        self.phase("prerequisites")
        ok = True
        if shutil.which("nvidia-smi"):
            r = subprocess.run(["timeout", "30", "nvidia-smi", "--query-gpu=index,name,driver_version,memory.total,"
                                "compute_cap", "--format=csv,noheader"], capture_output=True, text=True)
            say((r.stdout + r.stderr).rstrip())
        else:
            say("MISSING nvidia-smi")
            ok = False
        # Resolved to its real path: nvcc finds its headers relative to where it really lives.
        nvcc = os.environ.get("NVCC") or "/usr/local/cuda/bin/nvcc"
        if not os.access(nvcc, os.X_OK):
            nvcc = shutil.which("nvcc") or nvcc
        self.nvcc = os.path.realpath(nvcc)
        if os.access(self.nvcc, os.X_OK):
            version = subprocess.run([self.nvcc, "--version"], capture_output=True, text=True).stdout
            say("".join(version.splitlines(keepends=True)[-2:]).rstrip())
        else:
            say("MISSING nvcc")
            ok = False
        self.cuda_home = os.path.dirname(os.path.dirname(self.nvcc))
        if self.want("torch_*") or self.want("exit_*") or self.want("bench_train"):
            r = subprocess.run(["timeout", "60", self.py, "-c", "import torch; print('torch', torch.__version__, "
                                "'cuda', torch.version.cuda, 'available', torch.cuda.is_available())"],
                               capture_output=True, text=True)
            say(r.stdout.rstrip() if r.returncode == 0 else
                f"WARNING: {self.py} cannot import torch; the torch workloads will show FAIL")
        if os.path.isfile(self.shim):
            say(f"{self.shim}: {os.path.getsize(self.shim)} bytes")
            ldd = subprocess.run(["ldd", self.shim], capture_output=True, text=True).stdout
            missing = [ln.strip() for ln in ldd.splitlines() if "not found" in ln]
            if missing:
                say("WARNING: the shim has unresolved dependencies: " + "; ".join(missing))
        else:
            say(f"MISSING {self.shim} (build it first: cmake --build build)")
            ok = False
        return ok

    def compile(self):
        """nvcc for every selected workload at once; a failure shows as a FAIL row later ("not built")."""
        self.phase("compile")
        cap = subprocess.run(["timeout", "30", "nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True).stdout.split("\n")[0].replace(".", "").strip()
        arch = f"sm_{cap}" if re.fullmatch(r"\d+", cap) else "sm_90"
        rpath = ["-Xlinker", f"-rpath={self.cuda_home}/lib64:{self.cuda_home}/lib:{self.cuda_home}/targets/x86_64-linux/lib"]
        src = os.path.join(ROOT, "tests", "gpu")
        limit = self.budget(180)

        def build(binary):
            source, extra = CUDA_BUILDS[binary]
            argv = [self.nvcc, "-O2", f"-arch={arch}", f"-I{src}", "-o", os.path.join(self.bin, binary),
                    os.path.join(src, source)] + extra + (rpath if "shared" in extra or "-lcublas" in extra else [])
            log = os.path.join(self.work, "build", binary + ".log")
            return self.timed(limit, argv, stdout=log, stderr=log)

        wanted = [b for b in CUDA_BUILDS if self.needs(b)]
        with ThreadPoolExecutor(max_workers=max(1, len(wanted))) as pool:
            list(pool.map(build, wanted))
        for b in wanted:
            if os.access(os.path.join(self.bin, b), os.X_OK):
                say(f"built {b} ({arch})")
            else:
                say(f"BUILD FAILED {b}:\n" + tail(os.path.join(self.work, "build", b + ".log"), 15, ""))

    def paired_workload(self, name, kind, limit, argv, **env):
        """Runs once without the profiler, then (run_workload) under it, each with `env`. The run without
        it leaves <name>/base.rc, base.stdout.txt, base.stderr.txt and its ground truth gt.base.json;
        compare.py wants the same exit status and the same stdout (a checksum, losses) from both."""
        d = os.path.join(self.work, name)
        os.makedirs(os.path.join(d, "runs"), exist_ok=True)
        t0 = time.monotonic()
        limit = self.budget(limit)
        if limit < 10:
            rc = -1
        elif kind in ("graph_c", "capture_rules") and not os.access(argv[0], os.X_OK):
            rc = -2
        else:
            e = {k: v for k, v in os.environ.items() if k not in UNSET_FOR_WORKLOADS and k != "LD_PRELOAD"}
            e.update(GROUND_TRUTH=os.path.join(d, "gt.base.json"), GPU_CHECK_NAME=name,
                     **{k: v.decode() if isinstance(v, bytes) else str(v) for k, v in env.items()})
            rc = self.timed(limit, argv, cwd=d, env=e, stdout=os.path.join(d, "base.stdout.txt"),
                            stderr=os.path.join(d, "base.stderr.txt"))
        self.write_rc(os.path.join(d, "base.rc"), rc)
        say(f"{name + ' (base)':<18} rc={rc:<4} {int(time.monotonic() - t0):3d}s  "
            f"{read_text(os.path.join(d, 'base.stdout.txt')).strip()[:100]!r}")
        if rc != 0 and tail(os.path.join(d, "base.stderr.txt")):
            say(tail(os.path.join(d, "base.stderr.txt")).rstrip("\n"))
        self.run_workload(name, kind, limit, argv, **env)

    def run_workload(self, name, kind, limit, argv, **env):
        """Runs once under the shim, in its own directory, with its run directory at
        <name>/runs/run.<pid>. rc: the exit status; -1 skipped (deadline), -2 not built, 124/137 timed out."""
        d = os.path.join(self.work, name)
        os.makedirs(os.path.join(d, "runs"), exist_ok=True)
        self.plan(name, kind)
        t0 = time.monotonic()
        limit = self.budget(limit)
        if limit < 10:
            rc = -1
        elif kind in ("c", "graph_c", "capture_rules") and not os.access(argv[0], os.X_OK):
            rc = -2
        else:
            e = self.shim_env(UNSET_FOR_WORKLOADS, GROUND_TRUTH=os.path.join(d, "gt.json"),
                              GPUMEMPROF_OUTPUT=os.path.join(d, "runs", "run.%p"), GPU_CHECK_NAME=name, **env)
            rc = self.timed(limit, argv, cwd=d, env=e, stdout=os.path.join(d, "stdout.txt"),
                            stderr=os.path.join(d, "stderr.txt"))
        self.write_rc(os.path.join(d, "rc"), rc)
        runs = " ".join(sorted(os.listdir(os.path.join(d, "runs"))))[:120]
        say(f"{name:<18} rc={rc:<4} {int(time.monotonic() - t0):3d}s  run dirs: {runs}")
        if rc != 0 and tail(os.path.join(d, "stderr.txt")):
            say(tail(os.path.join(d, "stderr.txt")).rstrip("\n"))

    @staticmethod
    def write_rc(path, rc):
        with open(path, "w") as f:
            f.write(f"{rc}\n")

    def workloads(self):
        self.phase("workloads under the shim")
        for name in ("rt_static", "rt_shared", "driver_api", "async_pools", "vmm"):
            if self.want(name):
                self.run_workload(name, "c", 60, [os.path.join(self.bin, name)])
        # CUDA graphs: each without the profiler first, then under it (a few seconds of GPU each).
        for name in ("graph_capture", "graph_cublas"):
            if self.want(name):
                self.paired_workload(name, "graph_c", 60, [os.path.join(self.bin, name)])
        if self.want("capture_rules"):
            self.paired_workload("capture_rules", "capture_rules", 90, [os.path.join(self.bin, "capture_rules")])
        alloc = os.path.join(ROOT, "tests", "gpu", "torch_alloc.py")
        for name, conf in (("torch_default", None), ("torch_expandable", "expandable_segments:True"),
                           ("torch_async", "backend:cudaMallocAsync")):
            if self.want(name):
                extra = {"PYTORCH_CUDA_ALLOC_CONF": conf} if conf else {}
                self.run_workload(name, "torch", 120, [self.py, alloc], **extra)
        graphs = os.path.join(ROOT, "tests", "gpu", "torch_graphs.py")
        for name, conf in (("torch_graphs", None), ("torch_graphs_async", "backend:cudaMallocAsync")):
            if self.want(name):
                extra = {"PYTORCH_CUDA_ALLOC_CONF": conf} if conf else {}
                self.paired_workload(name, "torch_graphs", 120, [self.py, graphs], **extra)
        if self.want("torch_compile_graphs"):
            self.paired_workload("torch_compile_graphs", "torch_graphs", 150,
                                 [self.py, os.path.join(ROOT, "tests", "gpu", "torch_compile_graphs.py")])
        # Out of memory on purpose (default allocator): one bundle for cudaMalloc + its retry.
        if self.want("torch_oom"):
            self.run_workload("torch_oom", "torch", 120, [self.py, os.path.join(ROOT, "tests", "gpu", "torch_oom.py")])
        # Static cudart: a failed cudaMalloc, then exit(3) with nothing freed (rc 3 is expected).
        if self.want("rt_oom_exit"):
            self.run_workload("rt_oom_exit", "c", 60, [os.path.join(self.bin, "rt_oom_exit")])
        self.exit_paths()
        if self.want("torch_train"):
            self.train_run()
        self.llama_runs()
        if self.want("torch_categories"):
            self.categories_runs()
        self.python_api_runs()
        if self.want("torch_job"):
            self.job_run()
        self.two_rank_runs()
        if self.want("torch_split"):
            self.split_run()
        # GPUMEMPROF_DEVICE_LIMIT: a training run under limits below and above its peak, PyTorch's
        # memory fraction at the same cap, JAX preallocating 75% of a limit (tests/gpu/device_limit.py).
        if self.want("device_limit"):
            self.run_workload("device_limit", "device_limit", 300,
                              [self.py, os.path.join(ROOT, "tests", "gpu", "device_limit.py")])
        if self.want("python_layout"):
            self.python_layout()
        if self.want("torch_layout"):
            self.torch_layout()
        self.oom_listing()
        if self.want("hotpath_costs"):
            self.hotpath()

    def exit_paths(self):
        """PyTorch ending without exit handlers (tests/gpu/exit_paths.py), with a byte that is not
        UTF-8 in the environment: the summary must still be complete and say how the process ended."""
        script = os.path.join(ROOT, "tests", "gpu", "exit_paths.py")
        for name in ("exit_os_exit", "exit_sigterm", "exit_oom_retry"):
            if self.want(name):
                self.run_workload(name, "exit", 90, [self.py, script, name[len("exit_"):]],
                                  OLDPWD=b"/home/u/caf\xe9")

    def launcher_run(self, name, script, args=(), commands=(), limit=180, kind=None, **extra_env):
        """A PyTorch job through `gpumemprof run`, then post-mortem commands on its run directory:
        (argv after `gpumemprof`, stdout file or None); "{run}" and "{d}" are filled in."""
        d = os.path.join(self.work, name)
        os.makedirs(d, exist_ok=True)
        self.plan(name, kind or (name if name.startswith("torch_llama") else "train"))
        t0 = time.monotonic()
        # GPUMEMPROF_CATEGORIES only where a run asks for it (torch_categories' llama_off).
        env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "GPUMEMPROF_CATEGORIES")}
        env.update(GROUND_TRUTH=os.path.join(d, "gt.json"), GPU_CHECK_NAME=name, **extra_env)
        rc = self.timed(self.budget(limit), [self.tool, "run", "-o", os.path.join(d, "runs"), "--", self.py,
                                             os.path.join(ROOT, "tests", "gpu", script), *args],
                        cwd=d, env=env, stdout=os.path.join(d, "stdout.txt"), stderr=os.path.join(d, "stderr.txt"))
        self.write_rc(os.path.join(d, "rc"), rc)
        runs_dir = os.path.join(d, "runs")
        runs = sorted(n for n in os.listdir(runs_dir) if os.path.isdir(os.path.join(runs_dir, n))) \
            if os.path.isdir(runs_dir) else []
        if runs:
            run = os.path.join(runs_dir, runs[0])
            err = os.path.join(d, "report.stderr")
            for argv, out in commands:
                argv = [a.format(run=run, d=d) for a in argv]
                self.timed(self.budget(120), argv if argv[0] == self.py else [self.tool] + argv,
                           stdout=os.path.join(d, out) if out else None, stderr=err)
            if os.path.exists(os.path.join(run, "attribution.jsonl")):
                shutil.copy(os.path.join(run, "attribution.jsonl"), os.path.join(d, "attribution.jsonl.txt"))
        try:
            with open(os.path.join(d, "report.txt"), errors="replace") as f:
                head = "|".join(f.read().splitlines()[:12])[:300]
        except OSError:
            head = ""
        say(f"{name:<18} rc={rc:<4} {int(time.monotonic() - t0):3d}s  {head}")
        if rc != 0 and tail(os.path.join(d, "stderr.txt")):
            say(tail(os.path.join(d, "stderr.txt")).rstrip("\n"))

    def python_api_runs(self):
        """torch_python_api and torch_python_watchdog: the Python package through the launcher."""
        if self.want("torch_python_api"):
            self.launcher_run("torch_python_api", "python_api.py", kind="python_api",
                              commands=((["report", "{run}"], "report.txt"),), GPUMEMPROF_WARN_PERCENT="1")
        if self.want("torch_python_watchdog"):
            self.launcher_run("torch_python_watchdog", "python_api.py", args=("watchdog",), kind="python_api",
                              commands=((["report", "{run}"], "report.txt"),),
                              PYTORCH_CUDA_ALLOC_CONF="backend:cudaMallocAsync", GPUMEMPROF_WATCHDOG="trim",
                              GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS="0", GPUMEMPROF_WARN_PERCENT="3",
                              GPUMEMPROF_CRITICAL_PERCENT="4")
        if self.want("torch_live"):
            registry = os.path.join(self.work, "torch_live", "registry")
            self.launcher_run("torch_live", "live_top.py", kind="live",
                              commands=((["top", "--json", "--all", "--root", "{d}/runs"], "top_after.json"),),
                              GMP_TOOL=self.tool, GPUMEMPROF_LIVE_REGISTRY=registry)

    def train_run(self):
        """torch_train: the training job through the launcher, then every post-mortem command on its
        run directory; compare.py checks the report against PyTorch's counters and the attribution."""
        self.launcher_run("torch_train", "train.py", commands=(
            (["report", "{run}"], "report.txt"), (["report", "{run}", "--json"], "report.json"),
            (["export", "{run}", "--format", "perfetto", "-o", "{d}/perfetto.json"], None),
            (["export", "{run}", "--format", "folded", "-o", "{d}/folded.txt"], None),
            (["html", "{run}", "-o", "{d}/report.html"], None)))

    def llama_runs(self):
        """torch_llama and torch_llama_oom: a third-party model through the launcher; the memory-viz
        export must load in torch.cuda._memory_viz (trace and segment plots)."""
        viz_check = ("import pickle, sys; from torch.cuda import _memory_viz as v; d = pickle.load(open(sys.argv[1], "
                     "'rb')); v.trace_plot(d); v.segment_plot(d); print('memory-viz OK', len(d['segments']), "
                     "'segments', sum(map(len, d['device_traces'])), 'trace entries')")
        if self.want("torch_llama"):
            self.launcher_run("torch_llama", "llama_train.py", commands=(
                (["report", "{run}"], "report.txt"), (["report", "{run}", "--json"], "report.json"),
                (["export", "{run}", "--format", "memory-viz", "-o", "{d}/snapshot.pickle"], None),
                ([self.py, "-c", viz_check, "{d}/snapshot.pickle"], "memory_viz.txt"),
                (["html", "{run}", "-o", "{d}/report.html"], None)))
        if self.want("torch_llama_oom"):
            self.launcher_run("torch_llama_oom", "llama_train.py", args=("--oom",), commands=(
                (["oom", "{run}"], "oom.txt"), (["report", "{run}"], "report.txt")))

    def categories_runs(self):
        """torch_categories: tests/gpu/categories.py's scenarios through the launcher, each in its own
        directory torch_categories/<scenario> (a row group of its own in the table), then `report
        RUN --json` (the categories) and the text report; the llama scenario once more with the
        category hooks off, which compare.py holds to the first run's output and exit status."""
        report = ((["report", "{run}", "--json"], "report.json"), (["report", "{run}"], "report.txt"))
        for scenario, args, env in (("llama", ("llama",), {}),
                                    ("ddp_bucket_view", ("ddp", "--bucket-view"), {}),
                                    ("ddp", ("ddp",), {}),
                                    ("generate", ("generate",), {}),
                                    ("llama_off", ("llama",), {"GPUMEMPROF_CATEGORIES": "off"})):
            self.launcher_run(f"torch_categories/{scenario}", "categories.py", args=args, commands=report,
                              limit=150, kind="categories", **env)

    def torchrun_job(self, name, kind, nproc, script, run_options=(), script_args=(), **extra_env):
        """`gpumemprof run -o ROOT [run_options] -- torchrun --nproc-per-node N tests/gpu/<script>`:
        returns (its work directory, ROOT, exit status, start time)."""
        d = os.path.join(self.work, name)
        root = os.path.join(d, "runs")
        os.makedirs(d, exist_ok=True)
        self.plan(name, kind)
        t0 = time.monotonic()
        env = {k: v for k, v in os.environ.items() if k != "PYTORCH_CUDA_ALLOC_CONF"}
        env.update(GPU_CHECK_NAME=name, **extra_env)
        argv = [self.tool, "run", "-o", root, *run_options, "--", self.py, "-m", "torch.distributed.run",
                "--nproc-per-node", str(nproc), os.path.join(ROOT, "tests", "gpu", script), *script_args]
        rc = self.timed(self.budget(180), argv, cwd=d, env=env, stdout=os.path.join(d, "stdout.txt"),
                        stderr=os.path.join(d, "stderr.txt"))
        self.write_rc(os.path.join(d, "rc"), rc)
        return d, root, rc, t0

    def job_commands(self, name, d, rc, t0, commands, expected_rcs=(0,)):
        """The post-mortem commands on a job: (stem, argv after `gpumemprof`), each to <stem>.txt,
        .stderr and .rc; then the job's line in the log."""
        for stem, args in commands:
            out = os.path.join(d, stem)
            self.write_rc(out + ".rc", self.timed(self.budget(120), [self.tool] + args, stdout=out + ".txt",
                                                  stderr=out + ".stderr"))
        head = "|".join(read_text(os.path.join(d, "job.txt")).splitlines()[:6])[:300]
        say(f"{name:<18} rc={rc:<4} {int(time.monotonic() - t0):3d}s  {head}")
        if rc not in expected_rcs and tail(os.path.join(d, "stderr.txt")):
            say(tail(os.path.join(d, "stderr.txt")).rstrip("\n"))

    def job_run(self):
        """torch_job: a one-rank torchrun job through `gpumemprof run -o ROOT` with limits that hold,
        then the job view, a CI gate that must break, and the job's perfetto export, all on ROOT."""
        name = "torch_job"
        d = os.path.join(self.work, name)
        d, root, rc, t0 = self.torchrun_job(
            name, "job", 1, "job_rank.py",
            run_options=("--max-peak", "64GiB", "--no-oom", "--metrics-dir", os.path.join(d, "metrics")),
            GROUND_TRUTH=os.path.join(d, "gt.json"))
        self.job_commands(name, d, rc, t0, (
            ("job", ["report", root]), ("job_json", ["report", root, "--json"]),
            ("gate", ["check", root, "--max-peak", "1MiB"]),
            ("perfetto", ["export", root, "--format", "perfetto", "-o", os.path.join(d, "job.perfetto.json")]),
            ("html", ["html", root, "-o", os.path.join(d, "job.html")])))

    def gpu_count(self):
        r = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
        return sum(1 for line in r.stdout.splitlines() if line.startswith("GPU "))

    def two_rank_runs(self):
        """torch_ddp and torch_ddp_oom: a two-rank torchrun job through `gpumemprof run -o ROOT`,
        then the job view, each rank's report, the job's perfetto export and `check --no-oom`."""
        for name, args in (("torch_ddp", ()), ("torch_ddp_oom", ("--oom-rank", "1"))):
            if not self.want(name):
                continue
            # NVLink multicast stays off on the lent machines (the device tool's notes).
            d, root, rc, t0 = self.torchrun_job(
                name, "ddp", 2, "ddp_rank.py", script_args=args, GROUND_TRUTH_DIR=os.path.join(self.work, name),
                NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
            commands = [("job", ["report", root]), ("job_json", ["report", root, "--json"]),
                        ("gate", ["check", root, "--no-oom"]),
                        ("perfetto", ["export", root, "--format", "perfetto", "-o", os.path.join(d, "job.perfetto.json")])]
            for run in sorted(os.listdir(root)) if os.path.isdir(root) else []:
                m = re.match(r"rank(\d+)\.", run)
                if m:
                    commands.append((f"rank{m[1]}.report", ["report", os.path.join(root, run)]))
                    commands.append((f"rank{m[1]}.oom", ["oom", os.path.join(root, run)]))
            self.job_commands(name, d, rc, t0, commands, expected_rcs=(0, 1))

    def split_run(self):
        """torch_split: one process on two GPUs; on one GPU it is not started (rc -3, INFO)."""
        if self.gpu_count() < 2:
            name = "torch_split"
            os.makedirs(os.path.join(self.work, name), exist_ok=True)
            self.plan(name, "split")
            self.write_rc(os.path.join(self.work, name, "rc"), -3)
            say(f"{name:<18} not run: one GPU")
            return
        self.run_workload("torch_split", "split", 120, [self.py, os.path.join(ROOT, "tests", "gpu", "model_split.py")])

    def python_layout(self):
        """The frame reader's offsets against this Python's headers (internal ones included)."""
        name, d = "python_layout", os.path.join(self.work, "python_layout")
        os.makedirs(d, exist_ok=True)
        self.plan(name, "layout")
        r = subprocess.run([self.py, "-c", "import sysconfig; print(sysconfig.get_paths()['include'])"],
                           capture_output=True, text=True)
        inc = r.stdout.strip()
        checker = os.path.join(self.bin, "check_python_layout")
        if not os.path.isfile(os.path.join(inc, "Python.h")):
            rc = -3  # no development headers for this Python: nothing to check against
        elif self.timed(self.budget(60), ["g++", "-std=c++20", f"-I{inc}", "-o", checker,
                                          os.path.join(ROOT, "tests", "python_layout", "check_python_layout.cpp")],
                        stdout=os.path.join(d, "build.txt"), stderr=os.path.join(d, "build.txt")) == 0:
            rc = self.timed(60, [checker], stdout=os.path.join(d, "stdout.txt"), stderr=os.path.join(d, "stderr.txt"))
        else:
            rc = -2
            say(tail(os.path.join(d, "build.txt")).rstrip("\n"))
        self.write_rc(os.path.join(d, "rc"), rc)
        try:
            with open(os.path.join(d, "stdout.txt"), errors="replace") as f:
                lines = f.read().splitlines()
            first_last = f"{lines[0]} {lines[-1]}" if lines else ""
        except OSError:
            first_last = ""
        say(f"{name:<18} rc={rc:<4} {first_last}")

    def torch_layout(self):
        """The framework bridge's table (shim/torch_layouts.h) against the installed PyTorch's own
        headers: scripts/torch_layout_probe.cpp compiled against torch/include."""
        name, d = "torch_layout", os.path.join(self.work, "torch_layout")
        os.makedirs(d, exist_ok=True)
        self.plan(name, "torch_layout")
        r = subprocess.run([self.py, "-c", "import os, torch; print(os.path.dirname(torch.__file__)); "
                            "print(torch.__version__); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"],
                           capture_output=True, text=True)
        lines = r.stdout.split()
        probe = os.path.join(self.bin, "torch_layout_probe")
        rc = -2
        if len(lines) == 3:
            with open(os.path.join(d, "version.txt"), "w") as f:
                f.write(lines[1] + "\n")
            cuda_inc = os.path.join(self.cuda_home or "/usr/local/cuda", "include")
            if self.timed(self.budget(120), ["g++", "-std=c++17", f"-D_GLIBCXX_USE_CXX11_ABI={lines[2]}",
                                             f"-I{lines[0]}/include", f"-I{cuda_inc}", "-o", probe,
                                             os.path.join(ROOT, "scripts", "torch_layout_probe.cpp")],
                          stdout=os.path.join(d, "build.txt"), stderr=os.path.join(d, "build.txt")) == 0:
                rc = self.timed(30, [probe], stdout=os.path.join(d, "stdout.txt"), stderr=os.path.join(d, "stderr.txt"))
            else:
                say(tail(os.path.join(d, "build.txt")).rstrip("\n"))
        self.write_rc(os.path.join(d, "rc"), rc)
        say(f"{name:<18} rc={rc:<4} {read_text(os.path.join(d, 'stdout.txt')).strip()}")

    def oom_listing(self):
        """The OOM bundles written (name, mode, size of each file), for the log; compare.py judges them."""
        for name in sorted(os.listdir(self.work)):
            runs = os.path.join(self.work, name, "runs")
            if not os.path.isdir(runs):
                continue
            for run in sorted(os.listdir(runs)):
                oom = os.path.join(runs, run, "oom")
                if not os.path.isdir(oom):
                    continue
                say(f"oom bundles in {name}/runs/{run}/oom:")
                entries = []
                for top, dirs, files in os.walk(oom):
                    for n in dirs + files:
                        p = os.path.join(top, n)
                        st = os.lstat(p)
                        entries.append(f"    {os.path.relpath(p, oom)} {st.st_mode & 0o7777:o} {st.st_size}")
                say("\n".join(sorted(entries)[:40]))

    def hotpath(self):
        """hotpath_costs (INFO): ns per call of the hot path's ingredients, once without the shim and
        once with it. Its run directory keeps summary.json, manifest.json and the log; the trace (a
        million events) is deleted."""
        name, d = "hotpath_costs", os.path.join(self.work, "hotpath_costs")
        os.makedirs(os.path.join(d, "runs"), exist_ok=True)
        self.plan(name, "hotpath")
        t0 = time.monotonic()
        binary = os.path.join(self.bin, "hotpath_costs")
        for variant in ("base", "shim"):
            limit = self.budget(60)
            if limit < 10:
                rc = -1
            elif not os.access(binary, os.X_OK):
                rc = -2
            else:
                env = (self.shim_env(("GPUMEMPROF_ENABLE",), GPUMEMPROF_OUTPUT=os.path.join(d, "runs", "run.%p"))
                       if variant == "shim" else {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
                rc = self.timed(limit, [binary], cwd=d, env=env, stdout=os.path.join(d, f"{variant}.json"),
                                stderr=os.path.join(d, f"{variant}.stderr"))
            self.write_rc(os.path.join(d, f"{variant}.rc"), rc)
            try:
                with open(os.path.join(d, f"{variant}.json"), errors="replace") as f:
                    head = f.read(400)
            except OSError:
                head = ""
            say(f"{name:<18} {variant:<4} rc={rc:<4} {head}")
            if rc != 0 and tail(os.path.join(d, f"{variant}.stderr")):
                say(tail(os.path.join(d, f"{variant}.stderr")).rstrip("\n"))
        say(f"    shim run dir: {dir_size(os.path.join(d, 'runs')) // MiB} MiB")
        for top, _, files in os.walk(os.path.join(d, "runs")):
            if "trace.gmpt" in files:
                os.unlink(os.path.join(top, "trace.gmpt"))
        say(f"{name}: {int(time.monotonic() - t0)}s")

    def bench_slot(self, mode, variant, rnd, limit):
        """One benchmark process's file stem, its run directory and its time limit; the limit is
        None (and the rc file says -1, skipped) once the deadline leaves too little time."""
        stem = os.path.join(self.work, "bench", f"{mode}.{variant}.{rnd}")
        limit = self.budget(limit)
        if limit < 10:
            self.write_rc(stem + ".rc", -1)
            limit = None
        return stem, os.path.join(self.work, "bench", f"rd.{mode}.{rnd}"), limit

    def bench_train(self):
        """Median step time of train.py --bench: without the profiler, with it at default settings (the
        framework bridge on), with the bridge off, and without the profiler but with PyTorch's own
        _record_memory_history(stacks="python"); the variants interleaved over the rounds."""
        train = os.path.join(ROOT, "tests", "gpu", "train.py")
        variants = {"base": None, "shim": {}, "bridgeoff": {"GPUMEMPROF_FRAMEWORK": "off"}, "history": None}
        for r in range(1, self.torch_rounds + 1):
            order = list(variants) if r % 2 else list(reversed(variants))
            for v in order:
                stem, rd, limit = self.bench_slot("train", v, r, 90)
                if limit is None:
                    continue
                env = None if variants[v] is None else \
                    self.shim_env(GPUMEMPROF_OUTPUT=os.path.join(rd, "run.%p"), **variants[v])
                argv = [self.py, train, "--bench", "40"] + (["--history"] if v == "history" else [])
                rc = self.timed(limit, argv, env=env, stdout=stem + ".json", stderr=stem + ".stderr")
                self.write_rc(stem + ".rc", rc)
                shutil.rmtree(rd, ignore_errors=True)
                say(f"  train  {v:<8} round {r} {read_text(stem + '.json').strip()}")

    def bench_pairs(self):
        """ns per torch.empty alloc/free pair (tests/gpu/torch_pairs.py), the same four variants as
        the training step, interleaved over the rounds."""
        script = os.path.join(ROOT, "tests", "gpu", "torch_pairs.py")
        variants = {"base": None, "shim": {}, "bridgeoff": {"GPUMEMPROF_FRAMEWORK": "off"}, "history": None}
        for r in range(1, self.torch_rounds + 1):
            for v in (list(variants) if r % 2 else list(reversed(variants))):
                stem, rd, limit = self.bench_slot("pairs", v, r, 60)
                if limit is None:
                    continue
                env = None if variants[v] is None else \
                    self.shim_env(GPUMEMPROF_OUTPUT=os.path.join(rd, "run.%p"), **variants[v])
                argv = [self.py, script, "100000"] + (["--history"] if v == "history" else [])
                rc = self.timed(limit, argv, env=env, stdout=stem + ".json", stderr=stem + ".stderr")
                self.write_rc(stem + ".rc", rc)
                shutil.rmtree(rd, ignore_errors=True)
                say(f"  pairs  {v:<9} round {r} {read_text(stem + '.json').strip()[:60]}")

    def bench_inference(self):
        """tests/gpu/inference_bench.py without and with the profiler, the order alternating over the
        rounds; each process times GPU_CHECK_INFERENCE_ROUNDS rounds (5) of its own (a round: a
        generate, 16 training steps, 100 blocks of tensor pairs)."""
        script = os.path.join(ROOT, "tests", "gpu", "inference_bench.py")
        rounds = os.environ.get("GPU_CHECK_INFERENCE_ROUNDS", "5")
        # GPU_CHECK_BEFORE_LIB: the lib/ directory of an earlier build (libgpumemprof.so and its
        # gpumemprof/python), timed as a third variant "before" in the same call.
        before = os.environ.get("GPU_CHECK_BEFORE_LIB")
        variants = ["base", "shim"] + (["before"] if before else [])
        for r in range(1, self.torch_rounds + 1):
            k = (r - 1) % len(variants)
            for v in variants[k:] + variants[:k]:
                stem, rd, limit = self.bench_slot("inference", v, r, 150)
                if limit is None:
                    continue
                env = None if v == "base" else self.shim_env(GPUMEMPROF_OUTPUT=os.path.join(rd, "run.%p"))
                if v == "before":
                    env[b"LD_PRELOAD"] = os.path.join(before, "libgpumemprof.so").encode()
                    env[b"PYTHONPATH"] = os.path.join(before, "gpumemprof", "python").encode()
                rc = self.timed(limit, [self.py, script, rounds], env=env, stdout=stem + ".json",
                                stderr=stem + ".stderr")
                self.write_rc(stem + ".rc", rc)
                shutil.rmtree(rd, ignore_errors=True)
                res = compare.load_json(stem + ".json") or {}
                say(f"  inference {v:<4} round {r} rc={rc} " + " ".join(
                    f"{k}={res[k].get('on_median', res[k].get('bare_median', 0)):.3f}" for k in
                    ("generate", "train_step", "pairs") if isinstance(res.get(k), dict)))

    def bench_categories(self):
        """tests/gpu/inference_bench.py's generate and training step under the profiler, recording
        throughout, with the category hooks switched on and off between neighbouring units of one
        process (--alternate hooks): one process per round."""
        script = os.path.join(ROOT, "tests", "gpu", "inference_bench.py")
        rounds = os.environ.get("GPU_CHECK_INFERENCE_ROUNDS", "5")
        for r in range(1, self.torch_rounds + 1):
            stem, rd, limit = self.bench_slot("categories", "hooks", r, 120)
            if limit is None:
                continue
            env = self.shim_env(("GPUMEMPROF_CATEGORIES",), GPUMEMPROF_OUTPUT=os.path.join(rd, "run.%p"))
            rc = self.timed(limit, [self.py, script, rounds, "generate,train_step", "--alternate", "hooks"], env=env,
                            stdout=stem + ".json", stderr=stem + ".stderr")
            self.write_rc(stem + ".rc", rc)
            shutil.rmtree(rd, ignore_errors=True)
            res = compare.load_json(stem + ".json") or {}
            say(f"  categories hooks round {r} rc={rc} " + " ".join(
                f"{k}={res[k].get('ratio_median', 0):.4f}" for k in ("generate", "train_step")
                if isinstance(res.get(k), dict)))

    def bench_one(self, mode, variant, rnd, pairs):
        """One benchmark process. The shim's run directory (its trace is big) is reduced to summary.json."""
        stem, rd, limit = self.bench_slot(mode, variant, rnd, 60)
        if limit is None:
            return
        argv = [os.path.join(self.bin, "bench_async_pair"), mode, str(pairs), str(self.reps)]
        if variant in ("shim", "nostk"):
            os.makedirs(rd, exist_ok=True)
            # info: gpumemprof.log names code whose stacks libunwind must walk (docs/attribution.md).
            extra = {"GPUMEMPROF_STACKS": "0"} if variant == "nostk" else {"GPUMEMPROF_LOG_LEVEL": "info"}
            env = self.shim_env(GPUMEMPROF_OUTPUT=os.path.join(rd, "run.%p"), **extra)
            rc = self.timed(limit, argv, cwd=rd, env=env, stdout=stem + ".json", stderr=stem + ".stderr")
            for run in os.listdir(rd):
                for f, suffix in (("summary.json", ".summary.json"), ("gpumemprof.log", ".gpumemprof.log")):
                    if os.path.exists(os.path.join(rd, run, f)):
                        shutil.copy(os.path.join(rd, run, f), stem + suffix)
            say(f"    shim run dir: {dir_size(rd) // MiB} MiB")
            shutil.rmtree(rd, ignore_errors=True)
        else:
            rc = self.timed(limit, argv, stdout=stem + ".json", stderr=stem + ".stderr")
        self.write_rc(stem + ".rc", rc)
        median = " ".join(re.findall(r'"median_ns": [0-9.]*', read_text(stem + ".json")))
        say(f"  {mode:<6} {variant:<4} round {rnd} rc={rc} {median}")

    def bench(self):
        # The allocation pairs first: they carry the hot-path targets and are the cheapest; the
        # PyTorch benchmarks, whose processes each spend seconds starting PyTorch, come after.
        self.bench_allocation_pairs()
        if self.want("bench_train"):
            self.phase("benchmark: training steps")
            self.bench_train()
        if self.want("bench_pairs"):
            self.phase("benchmark: tensor alloc/free pairs")
            self.bench_pairs()
        if self.want("bench_inference"):
            self.phase("benchmark: generate, training step and tensor pairs, in-process A/B")
            self.bench_inference()
        if self.want("bench_categories"):
            self.phase("benchmark: generate and training step, category hooks on and off")
            self.bench_categories()

    def bench_allocation_pairs(self):
        if not self.needs("bench_async_pair"):
            return
        self.phase(f"benchmark: {self.rounds} A/B rounds, {self.reps} timed repetitions per process")
        if not os.access(os.path.join(self.bin, "bench_async_pair"), os.X_OK):
            say("bench_async_pair not built")
            return
        for r in range(1, self.rounds + 1):
            # Rotate which variant goes first, so that drift over the run does not favour one. The
            # pool pair also runs with stacks off (GPUMEMPROF_STACKS=0), which has its own target.
            for mode, pairs in (("async", self.async_pairs), ("malloc", self.malloc_pairs)):
                if self.want("bench_" + mode):
                    variants = ["base", "shim", "nostk"] if mode == "async" else ["base", "shim"]
                    k = (r - 1) % len(variants)
                    for v in variants[k:] + variants[:k]:
                        self.bench_one(mode, v, r, pairs)

    def pack(self):
        """Everything small and useful into gpu-check.tar.gz; over 15 MiB compressed, the traces go
        first, then everything but ground truths and summaries."""
        self.phase("pack")
        files = []
        for top, dirs, names in os.walk(self.work):
            if top == self.work:
                dirs.remove("bin")
            for n in names:
                p = os.path.join(top, n)
                files.append(p)
                if n.endswith(".log") and os.path.getsize(p) >= 8 * MiB:  # a big log: its last MiB
                    with open(p, "rb") as src, open(p + ".tail.txt", "wb") as dst:
                        src.seek(-MiB, os.SEEK_END)
                        dst.write(src.read())
                    files.append(p + ".tail.txt")
        rel = sorted(os.path.relpath(p, self.work) for p in files if os.path.isfile(p))
        with open(os.path.join(self.work, "files.txt"), "w") as f:
            f.writelines(f"{p} {os.path.getsize(os.path.join(self.work, p))}\n" for p in rel)
        rel.append("files.txt")
        chosen = [p for p in rel if packed(p, os.path.getsize(os.path.join(self.work, p)))]
        tarball = os.path.join(self.dest, "gpu-check.tar.gz")
        tiers = (("", lambda p: True),
                 ("tarball too big; leaving out the traces", lambda p: not p.endswith("/trace.gmpt")),
                 ("tarball still too big; keeping only ground truths and summaries", essential))
        for message, keep in tiers:
            if message:
                say(message)
            chosen = [p for p in chosen if keep(p)]
            lst = os.path.join(self.work, "pack.lst")
            with open(lst, "w") as f:
                f.writelines(p + "\n" for p in chosen)
            subprocess.run(["tar", "-czf", tarball, "-C", self.work, "-T", lst], stderr=subprocess.DEVNULL)
            if os.path.getsize(tarball) <= TARBALL_LIMIT:
                break
        say(f"{tarball}: {os.path.getsize(tarball)} bytes")
        say(f"packed: {len(chosen)} files, of them traces: {sum(p.endswith('/trace.gmpt') for p in chosen)}")

    def run(self):
        say(f"gpumemprof gpu-check: repo {ROOT}, work {self.work}, results {self.dest}")
        if not self.check_only():
            return 3
        if not self.prereqs():
            say("prerequisites missing, nothing run")
            return 3
        self.compile()
        self.workloads()
        self.bench()
        self.pack()
        self.phase("compare")
        rc = compare.run(self.work, self.dest).exit_code()
        say(f"gpu-check finished in {self.elapsed()}s, exit {rc} (0 ok, 1 mismatch/fail, 2 benchmark over target or skipped by the deadline); "
            f"files in {self.dest}")
        return rc


def packed(rel, size):
    """Whether a file of the work directory goes into the tarball (before any size tier)."""
    name = os.path.basename(rel)
    if name in ("summary.json", "manifest.json"):
        return True
    if re.search(r"/oom/oom_dump_[^/]*/", rel) and name.endswith(".json") and size < 16 * MiB:
        return True
    if size < 4 * MiB and (name.endswith((".json", ".txt", ".rc", ".stderr")) or name == "rc"):
        return True
    return size < 8 * MiB and (name.endswith(".log") or name == "trace.gmpt")


def essential(rel):
    return bool(re.search(r"gt\.json$|summary\.json$|plan\.txt$|files\.txt$|/rc$|\.rc$|"
                          r"/oom/oom_dump_[^/]*/(manifest|metadata|allocations)\.json$", rel))


def dir_size(path):
    return sum(os.path.getsize(os.path.join(top, n)) for top, _, names in os.walk(path) for n in names
               if os.path.isfile(os.path.join(top, n)))


read_text = compare.read_text


def main():
    # The judge reads whole lines of the tools' text output: a wide page, so that nothing is wrapped
    # or elided to fit 80 columns (as the integration tests run the tools).
    os.environ["COLUMNS"] = "1000"
    check = Check()
    sys.stdout = Tee(os.path.join(check.dest, "log.txt"))
    try:
        return check.run()
    finally:
        sys.stdout.flush()
        if not os.environ.get("GPU_CHECK_KEEP"):
            shutil.rmtree(check.work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
