#!/usr/bin/env python3
"""Runs the demo under the shim inside an older distribution's root file system, with its glibc.

The oldest Debian release deb.debian.org still serves (bullseye, glibc 2.31) is installed once with
`debootstrap --variant=minbase` into the build directory and kept there (--rootfs); each run copies
the shim, the command, the demo and the fake driver into /opt/gpumemprof of that tree and, inside
`chroot` (with a /proc of its own, mounted in a private mount namespace that vanishes with it):

1. `gpumemprof run -- gpumemprof-demo` on the fake driver, then `gpumemprof report` and
   `gpumemprof report --json` on the run directory: exit 0 and the demo's exact figures;
2. the demo under the shim with a ring larger than the address-space limit: the shim's session
   fails with std::bad_alloc, which the shim throws and catches (C++ exceptions unwind through the
   glibc floor's _dl_find_object), and the demo runs on;
3. the demo alone on a 4 MiB device: its first failed check throws, main catches it, exit 1.

Exit 77 (skipped, with the reason) when not root, when debootstrap is missing, when the rootfs is
not built yet and the mirror cannot be reached, or when no mount namespace can be made.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request

SKIPPED = 77
GiB = 1 << 30
MiB = 1 << 20
INSTALL = "/opt/gpumemprof"
RUNS = "/tmp/gmp-runs"


def skip(reason):
    print(f"old_distro_demo: SKIPPED: {reason}")
    sys.exit(SKIPPED)


def fail(message):
    print(f"old_distro_demo: FAIL: {message}")
    sys.exit(1)


def mounts_under(path):
    prefix = os.path.realpath(path) + "/"
    with open("/proc/self/mounts") as f:
        points = [line.split()[1] for line in f]
    return [p for p in points if p.startswith(prefix)]


def remove_tree(path):
    """Deletes a (possibly half-built) root file system; unmounts what an interrupted debootstrap
    may have left mounted in it first, so the deletion never reaches into /proc or /sys."""
    for point in sorted(mounts_under(path), reverse=True):
        subprocess.run(["umount", "-l", point], check=False)
    if mounts_under(path):
        fail(f"{path} still has mounts in it; unmount them by hand")
    shutil.rmtree(path, ignore_errors=True)


def ensure_rootfs(args):
    marker = os.path.join(args.rootfs, ".gmp-rootfs-complete")
    if os.path.exists(marker):
        return
    debootstrap = shutil.which("debootstrap") or shutil.which("debootstrap", path="/usr/sbin:/sbin")
    if debootstrap is None:
        skip("debootstrap is not installed (scripts/setup.sh installs it)")
    release = f"{args.mirror}/dists/{args.suite}/Release"
    try:
        urllib.request.urlopen(release, timeout=20).close()
    except OSError as e:
        skip(f"cannot reach the package mirror ({release}: {e})")
    partial = args.rootfs + ".partial"
    remove_tree(partial)
    remove_tree(args.rootfs)
    print(f"old_distro_demo: debootstrap --variant=minbase {args.suite} into {args.rootfs} (once)")
    log = args.rootfs + ".debootstrap.log"
    with open(log, "w") as out:
        try:
            r = subprocess.run([debootstrap, "--variant=minbase", args.suite, partial, args.mirror],
                               stdout=out, stderr=subprocess.STDOUT, timeout=args.debootstrap_timeout)
        except subprocess.TimeoutExpired:
            remove_tree(partial)
            fail(f"debootstrap took longer than {args.debootstrap_timeout} s (log: {log})")
    if r.returncode != 0:
        remove_tree(partial)
        with open(log) as f:
            tail = f.read().strip().splitlines()[-3:]
        fail(f"debootstrap exited {r.returncode}: {' | '.join(tail)} (log: {log})")
    # The downloaded packages are installed; only the tree is kept.
    shutil.rmtree(os.path.join(partial, "var/cache/apt/archives"), ignore_errors=True)
    os.rename(partial, args.rootfs)
    open(marker, "w").close()


def install(args):
    root = args.rootfs + INSTALL
    shutil.rmtree(root, ignore_errors=True)
    for sub in ("bin", "lib", "fake"):
        os.makedirs(os.path.join(root, sub))
    shutil.copy2(args.tool, os.path.join(root, "bin", "gpumemprof"))
    shutil.copy2(args.demo, os.path.join(root, "bin", "gpumemprof-demo"))
    shutil.copy2(args.shim, os.path.join(root, "lib", "libgpumemprof.so"))
    # What an installation ships beside the shim (the libunwind copy stack capture looks for).
    beside = os.path.join(os.path.dirname(args.shim), "libunwind.so.8")
    if os.path.exists(beside):
        shutil.copy2(beside, os.path.join(root, "lib", "libunwind.so.8"))
    shutil.copy2(args.fake_driver, os.path.join(root, "fake", "libcuda.so.1"))
    shutil.rmtree(args.rootfs + RUNS, ignore_errors=True)


def in_chroot(args, command, env=None):
    """Runs `command` with /bin/sh inside the root file system, in a clean environment."""
    variables = {"PATH": "/usr/bin:/bin", "LD_LIBRARY_PATH": f"{INSTALL}/fake", **(env or {})}
    inner = ["env", "-i", *[f"{k}={v}" for k, v in variables.items()], "/bin/sh", "-c", command]
    script = 'mount -t proc proc "$1/proc" || exit 125; shift; exec chroot "$@"'
    try:
        return subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script,
                               "sh", args.rootfs, args.rootfs, *inner],
                              capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail(f"`{command}` did not finish in 120 s")


def expect(condition, what, result=None):
    if condition:
        return
    detail = ""
    if result is not None:
        detail = f"\n--- exit {result.returncode}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"
    fail(what + detail)


def check_glibc(args):
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "true"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        skip(f"cannot make a private mount namespace: {r.stderr.strip()}")
    r = in_chroot(args, "getconf GNU_LIBC_VERSION")
    if r.returncode == 125:
        skip(f"cannot mount /proc in a private mount namespace: {r.stderr.strip()}")
    m = re.fullmatch(r"glibc (\d+)\.(\d+)\s*", r.stdout)
    expect(m is not None, "cannot read the root file system's glibc version", r)
    version = (int(m.group(1)), int(m.group(2)))
    # Older than 2.32, the oldest version the shim needed before the floor: the run proves it.
    expect(version < (2, 32), f"{args.suite} has glibc {version}, not an old one")
    print(f"old_distro_demo: Debian {args.suite}, glibc {version[0]}.{version[1]}")


def demo_run_and_report(args):
    tool = f"{INSTALL}/bin/gpumemprof"
    r = in_chroot(args, f"{tool} run -o {RUNS} -- {INSTALL}/bin/gpumemprof-demo")
    expect(r.returncode == 0, "gpumemprof run -- gpumemprof-demo failed", r)
    expect("[demo] done: weights freed; 128.0 MiB still live at exit (the leak)\n" in r.stdout,
           "the demo did not finish", r)
    runs = os.listdir(args.rootfs + RUNS)
    expect(len(runs) == 1 and runs[0].startswith("gpumemprof-demo."), f"run directories: {runs}")
    run_dir = f"{RUNS}/{runs[0]}"

    text = in_chroot(args, f"{tool} report {run_dir}")
    expect(text.returncode == 0 and text.stderr == "", "gpumemprof report failed", text)
    expect(re.search(r"allocated +peak 2\.50 GiB .* final 128\.00 MiB", text.stdout) is not None,
           "the report's allocated line is wrong", text)
    r = in_chroot(args, f"{tool} report --json {run_dir}")
    expect(r.returncode == 0, "gpumemprof report --json failed", r)
    report = json.loads(r.stdout)

    # The demo on the fake driver's 16 GiB device: unit = 16 GiB / 4 / 32 = 128 MiB. Peak = 4
    # weights of 2 units + 4 activations of 3 units; one unit leaked; 24 allocations (4 weights,
    # 5 steps of 3, 4 activations, the leak), every one but the leak freed; one failed request of
    # twice the device. Call stacks are captured and named from the symbol table (a minbase system
    # has no addr2line, so no source lines).
    unit = 128 * MiB
    device = report["devices"][0]
    got = {
        "peak": device["allocated_bytes"]["peak"],
        "final": device["allocated_bytes"]["current"],
        "allocs": device["alloc_count"],
        "frees": device["free_count"],
        "failed": device["failed_alloc_count"],
        "failed_size": report["failed_allocations"][0]["size"],
        "leaks": (report["analysis"]["leaks"]["count"], report["analysis"]["leaks"]["bytes"]),
        "leak_site": report["analysis"]["leak_sites"][0]["site"],
        "lost": report["events"]["lost"],
        "clean_exit": report["clean_exit"],
    }
    want = {
        "peak": 20 * unit, "final": unit, "allocs": 24, "frees": 23, "failed": 1,
        "failed_size": 32 * GiB, "leaks": (1, unit),
        "leak_site": "(anonymous namespace)::run() [gpumemprof-demo]", "lost": 0, "clean_exit": True,
    }
    expect(got == want, f"report figures {got}, expected {want}")
    print("old_distro_demo: gpumemprof run + report: exact figures OK")


def shim_exception(args):
    # 2^26 ring events give each thread a 288 MiB buffer; with 256 MiB allowed, the first one's mmap
    # fails and its std::bad_alloc crosses frames of the shim to session_start's catch.
    r = in_chroot(args, f"ulimit -v 262144; exec {INSTALL}/bin/gpumemprof-demo", {
        "LD_PRELOAD": f"{INSTALL}/lib/libgpumemprof.so",
        "GPUMEMPROF_RING_EVENTS": "67108864",
        "GPUMEMPROF_OUTPUT": "/tmp/gmp-no-session.%p",
        "FAKE_CUDA_CAPACITY": "64M",
    })
    expect(r.returncode == 0 and "[demo] done" in r.stdout and
           r.stderr == "gpumemprof: cannot start: std::bad_alloc; profiling is off for this process\n",
           "the shim's exception was not caught where it should be", r)
    print("old_distro_demo: an exception thrown and caught inside the shim: OK")


def demo_exception(args):
    # 4 MiB device: unit = 1 MiB, so the second 2-unit weight buffer does not fit and CK throws.
    r = in_chroot(args, f"exec {INSTALL}/bin/gpumemprof-demo", {"FAKE_CUDA_CAPACITY": "4M"})
    pattern = (r"gpumemprof-demo: \S*demo_workload\.cpp:\d+: t\.cuMemAlloc_v2\(&w, 2 \* unit\) "
               r"returned CUDA_ERROR_OUT_OF_MEMORY \(2\), expected CUDA_SUCCESS\n")
    expect(r.returncode == 1 and re.fullmatch(pattern, r.stderr) is not None,
           "the demo's own exception was not caught by its main", r)
    print("old_distro_demo: an exception thrown and caught inside the demo: OK")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rootfs", required=True, help="where the root file system is kept")
    parser.add_argument("--suite", default="bullseye")
    parser.add_argument("--mirror", default="http://deb.debian.org/debian")
    parser.add_argument("--debootstrap-timeout", type=int, default=240)
    parser.add_argument("--shim", required=True)
    parser.add_argument("--tool", required=True)
    parser.add_argument("--demo", required=True)
    parser.add_argument("--fake-driver", required=True)
    args = parser.parse_args()
    if os.geteuid() != 0:
        skip("chroot needs root (CI runs as root)")
    if shutil.which("unshare") is None:
        skip("unshare (util-linux) is not installed")
    ensure_rootfs(args)
    install(args)
    check_glibc(args)
    demo_run_and_report(args)
    shim_exception(args)
    demo_exception(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
