#!/usr/bin/env python3
"""gpumemprof installed as users install it, from the already built tree (nothing is rebuilt).

  prefix      `cmake --install BUILD --prefix P` into a temporary P: exactly the files of the layout
              (cmake/install.cmake); P/bin/gpumemprof --version and -V; the installed `gpumemprof run`,
              with no --shim, preloads P's shim and puts P's Python bootstrap on PYTHONPATH; the demo
              profiled from P on the fake driver, with P's libunwind copy, and reported: exact figures.
  man         the man page renders without a groff warning and carries every command's --help.
  completion  the bash completion, sourced in bash and called as bash calls it (COMP_WORDS).
  package     cpack's .tar.gz and .deb: one file list (the same install rules); the .deb's control
              fields; dpkg-shlibdeps finds no dependency the control file does not state; the .deb
              installed for real with dpkg into a temporary root (unprivileged: --force-not-root),
              refused where libc6 is older than the glibc floor, the demo profiled from the installed
              /usr tree, and the package purged without a file left behind.

Exit 77 (skipped, with the reason) where a tool the part needs is missing (dpkg on a non-Debian host).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

SKIPPED = 77
MiB = 1 << 20
GiB = 1 << 30
SHIM_DIR = "lib/gpumemprof"
# What cmake/install.cmake installs besides README.md and docs/.
LAYOUT = [
    "bin/gpumemprof",
    f"{SHIM_DIR}/libgpumemprof.so",
    f"{SHIM_DIR}/libunwind.so.8",
    f"{SHIM_DIR}/python/_gpumemprof_bridge.py",
    f"{SHIM_DIR}/python/_gpumemprof_categories.py",
    f"{SHIM_DIR}/python/sitecustomize.py",
] + [f"{SHIM_DIR}/python/gpumemprof/{m}.py" for m in ("__init__", "_launcher", "_native", "_thresholds", "_window", "profiler",
                                                      "tracker")] + [
    "include/gpumemprof.h",
    "share/bash-completion/completions/gpumemprof",
    "share/man/man1/gpumemprof.1",
    "share/doc/gpumemprof/libunwind8.copyright",  # the bundled libunwind's licence
]


def skip(part, reason):
    print(f"install.{part}: SKIPPED: {reason}")
    sys.exit(SKIPPED)


def fail(message):
    print(f"FAIL: {message}")
    sys.exit(1)


def expect(condition, what, result=None):
    if condition:
        return
    if result is not None:
        what += f"\n--- exit {result.returncode}\n--- stdout\n{result.stdout}--- stderr\n{result.stderr}"
    fail(what)


def run(args, env=None, cwd=None, timeout=120):
    full_env = {k: v for k, v in os.environ.items()
                if k not in ("LD_PRELOAD", "PYTHONPATH", "GPUMEMPROF_OUTPUT", "NVTX_INJECTION64_PATH")}
    full_env.update(env or {})
    return subprocess.run(args, env=full_env, cwd=cwd, capture_output=True, text=True, timeout=timeout)


def checked(args, **kwargs):
    r = run(args, **kwargs)
    expect(r.returncode == 0, f"`{' '.join(args)}` failed", r)
    return r


def files_under(root):
    out = set()
    for d, _, files in os.walk(root):
        out.update(os.path.relpath(os.path.join(d, f), root) for f in files)
    return out


def expected_files(source):
    docs = {"share/doc/gpumemprof/README.md"}
    for path in files_under(os.path.join(source, "docs")):
        if not path.startswith("man/"):
            docs.add(f"share/doc/gpumemprof/docs/{path}")
    return set(LAYOUT) | docs


def check_version(args, tool):
    for flag in ("--version", "-V"):
        r = run([tool, flag])
        expect((r.returncode, r.stdout, r.stderr) == (0, f"gpumemprof {args.version}\n", ""),
               f"gpumemprof {flag}", r)


def check_run_environment(tool, prefix, work):
    """The installed `gpumemprof run`, with no --shim, preloads the installed shim and puts the
    installed bootstrap first on PYTHONPATH (what /usr/bin/env sees)."""
    r = checked([tool, "run", "-o", os.path.join(work, "env-runs"), "--", "env"])
    shim = os.path.join(os.path.realpath(prefix), SHIM_DIR, "libgpumemprof.so")
    bootstrap = os.path.join(os.path.realpath(prefix), SHIM_DIR, "python")
    seen = {line.split("=", 1)[0]: line.split("=", 1)[1] for line in r.stdout.splitlines() if "=" in line}
    got = {k: seen.get(k) for k in ("LD_PRELOAD", "NVTX_INJECTION64_PATH", "PYTHONPATH")}
    want = {"LD_PRELOAD": shim, "NVTX_INJECTION64_PATH": shim, "PYTHONPATH": bootstrap}
    expect(got == want, f"the profiled command's environment {got}, expected {want}", r)


def check_python_package(tool, prefix, work):
    """The installed Python package, imported under the installed `gpumemprof run` (docs/python.md):
    from the prefix, with the shim loaded; gpumemprof.run() finds the installed command beside it."""
    code = ("import gpumemprof, sys; print(gpumemprof.__file__, gpumemprof.loaded()); "
            "sys.exit(gpumemprof.run(['true'], output=sys.argv[1]).returncode)")
    r = checked([tool, "run", "-o", os.path.join(work, "py-runs"), "--", sys.executable, "-c", code,
                 os.path.join(work, "py-inner")])
    package = os.path.join(os.path.realpath(prefix), SHIM_DIR, "python", "gpumemprof", "__init__.py")
    expect(r.stdout == f"{package} True\n", "the installed package under gpumemprof run", r)


def check_demo(args, tool, prefix, work):
    """The demo profiled by the installed command on the fake driver, then reported: exact figures.
    Its figures on the fake 16 GiB device (unit = 128 MiB): peak 20 units, one unit leaked, 24
    allocations, 23 frees, one failed request of 32 GiB (tests/programs/demo_workload.cpp)."""
    runs = os.path.join(work, "runs")
    r = run([tool, "run", "-o", runs, "--", args.demo], env={"LD_LIBRARY_PATH": args.fake_dir})
    expect(r.returncode == 0 and "[demo] done: weights freed; 128.0 MiB still live at exit (the leak)\n" in r.stdout,
           "gpumemprof run -- gpumemprof-demo", r)
    dirs = os.listdir(runs)
    expect(len(dirs) == 1 and dirs[0].startswith("gpumemprof-demo."), f"run directories {dirs}")
    run_dir = os.path.join(runs, dirs[0])
    for line in ("    device 0: peak allocated 2.50 GiB, peak reserved 2.50 GiB",
                 "    OOM: 1 allocation refused by the driver for lack of memory",
                 "         1 bundle written",
                 "         0 episodes recovered by a later allocation of the failed size",
                 "    alerts 0",
                 "    events: 57 recorded, 0 lost, 0 unwritten, 57 in trace.gmpt, 0 producer waits",
                 # The installed command is not on PATH here: the lines name it by its path.
                 f"    next: {os.path.realpath(tool)} report {run_dir}",
                 f"          {os.path.realpath(tool)} oom {run_dir}"):
        expect(line in r.stderr.splitlines(), f"the run's summary lacks {line!r}", r)

    # The installed shim and the libunwind copy beside it were the ones loaded.
    with open(os.path.join(run_dir, "attribution.jsonl")) as f:
        modules = {json.loads(line).get("path") for line in f if '"type":"module"' in line}
    for name in ("libgpumemprof.so", "libunwind.so.8"):
        path = os.path.join(os.path.realpath(prefix), SHIM_DIR, name)
        expect(path in modules, f"{path} not among the profiled process's modules {sorted(modules)}")

    text = checked([tool, "report", run_dir])
    for pattern in (r"  allocated  peak 2\.50 GiB +at [\d.]+ ms +final 128\.00 MiB",
                    r"  allocations 24, frees 23, failed allocations 1",
                    r"leaks: live at exit 1 allocation, 128\.00 MiB"):
        expect(any(re.fullmatch(pattern, line) for line in text.stdout.splitlines()),
               f"the report has no line matching {pattern!r}", text)
    report = json.loads(checked([tool, "report", "--json", run_dir]).stdout)
    device = report["devices"][0]
    got = (device["allocated_bytes"]["peak"], device["allocated_bytes"]["current"], device["alloc_count"],
           device["free_count"], device["failed_alloc_count"], report["failed_allocations"][0]["size"],
           report["analysis"]["leaks"]["count"], report["analysis"]["leaks"]["bytes"], report["events"]["lost"])
    want = (20 * 128 * MiB, 128 * MiB, 24, 23, 1, 32 * GiB, 1, 128 * MiB, 0)
    expect(got == want, f"report --json figures {got}, expected {want}")


def part_prefix(args):
    with tempfile.TemporaryDirectory(prefix="gmp-install.") as work:
        prefix = os.path.join(work, "prefix")
        checked([args.cmake, "--install", args.build_dir, "--prefix", prefix])
        got, want = files_under(prefix), expected_files(args.source_dir)
        expect(got == want, f"installed {sorted(got - want)} beyond the layout, missing {sorted(want - got)}")
        tool = os.path.join(prefix, "bin", "gpumemprof")
        check_version(args, tool)
        usage = checked([tool, "run", "--help"]).stdout
        expect("--shim PATH libgpumemprof.so to preload (default: ../lib/gpumemprof/ from this program's directory, "
               "where it is installed, else ../lib/ in a build tree)" in " ".join(usage.split()),
               "run --help does not say where the shim is looked for")
        check_run_environment(tool, prefix, work)
        check_demo(args, tool, prefix, work)
        check_python_package(tool, prefix, work)
    print("install.prefix: OK")


def part_man(args):
    if shutil.which("groff") is None:
        skip("man", "groff is not installed (scripts/setup.sh installs groff-base)")
    page = os.path.join(args.build_dir, "share", "man", "man1", "gpumemprof.1")
    warnings = run(["groff", "-man", "-Tascii", "-ww", "-z", page])
    expect(warnings.returncode == 0 and warnings.stderr == "", "groff warns about the man page", warnings)
    rendered = checked(["groff", "-man", "-Tascii", "-P-cbou", page]).stdout
    expect(f"gpumemprof {args.version}" in rendered, "the man page does not carry the version")
    top = checked([args.tool, "--help"]).stdout
    commands = re.findall(r"^  ([a-z][a-z0-9-]*) ", top, re.M)
    expect(len(commands) >= 6, f"commands read off --help: {commands}")
    # Man sections indent by 7 columns; a no-fill block keeps every line as it is.
    for command, text in [(None, top)] + [(c, checked([args.tool, c, "--help"]).stdout) for c in commands]:
        block = "\n".join("       " + line if line else "" for line in text.rstrip("\n").split("\n"))
        expect(block in rendered, f"the man page does not carry `gpumemprof {command or ''} --help`:\n{block}")
        if command:
            expect(f"\n   gpumemprof {command}\n" in rendered, f"no section for {command}")
    # A Makefile build runs help_pages.py with share/man/man1/ not made yet (Ninja makes it first).
    with tempfile.TemporaryDirectory() as tmp:
        man = os.path.join(tmp, "share", "man", "man1", "gpumemprof.1")
        completion = os.path.join(tmp, "share", "bash-completion", "completions", "gpumemprof")
        checked([sys.executable, os.path.join(args.source_dir, "cmake", "help_pages.py"), "--tool", args.tool,
                 "--man-template", os.path.join(args.source_dir, "docs", "man", "gpumemprof.1.in"), "--man", man,
                 "--completion-template", os.path.join(args.source_dir, "scripts", "completion", "gpumemprof.bash.in"),
                 "--completion", completion])
        expect(open(man).read() == open(page).read(), "help_pages.py into missing directories wrote another page")
        expect(os.path.exists(completion), "help_pages.py into missing directories wrote no completion")
    print(f"install.man: OK ({len(commands)} commands)")


def complete(script, words, path=None):
    """COMPREPLY for the command line `words`, the last being the word under the cursor."""
    line = " ".join(f"'{w}'" for w in words)
    program = (f"source '{script}'; COMP_WORDS=({line}); COMP_CWORD={len(words) - 1}; _gpumemprof; "
               'printf "%s\\n" "${COMPREPLY[@]}"')
    if path:
        program = f"PATH='{path}'; {program}"
    r = checked(["bash", "--norc", "--noprofile", "-c", program])
    return r.stdout.split()


def part_completion(args):
    script = os.path.join(args.build_dir, "share", "bash-completion", "completions", "gpumemprof")
    r = checked(["bash", "--norc", "--noprofile", "-c", f"source '{script}'; complete -p gpumemprof"])
    expect(r.stdout == "complete -o bashdefault -o default -F _gpumemprof gpumemprof\n", "complete -p", r)
    top = checked([args.tool, "--help"]).stdout
    commands = re.findall(r"^  ([a-z][a-z0-9-]*) ", top, re.M)
    cases = [
        (["gpumemprof", "ex"], ["export"]),
        (["gpumemprof", "r"], sorted(c for c in commands if c.startswith("r"))),
        (["gpumemprof", "-"], ["--version", "-V", "--help"]),
        (["gpumemprof", "oom", "-"], ["--json", "--help"]),
        (["gpumemprof", "export", "run", "--format", ""], ["csv", "jsonl", "perfetto", "telemetry-v2", "folded",
                                                            "memory-viz"]),
        (["gpumemprof", "export", "run", "--format", "p"], ["perfetto"]),
        (["gpumemprof", "export", "run", "--wo"], ["--world-size"]),
        (["gpumemprof", "html", "run", "--s"], ["--since"]),
        (["gpumemprof", "run", "--log-level", ""], ["trace", "debug", "info", "warn", "error", "critical", "off"]),
        (["gpumemprof", "run", "--log-level", "w"], ["warn"]),
        (["gpumemprof", "run", "--device-limit", "A1"], ["A10", "A100-40GB", "A100-80GB"]),
        (["gpumemprof", "report", ""], []),  # a run directory: bash's filename completion
        (["gpumemprof", "run", "--", "ls", "-"], []),  # the profiled command's own arguments
        (["gpumemprof", "frobnicate", "-"], []),
    ]
    for words, want in cases:
        got = complete(script, words)
        got = sorted(got) if words[1] == "r" else got
        expect(got == want, f"completing {words}: {got}, expected {want}")
    # After `run ... --`, the command to profile comes from PATH.
    got = complete(script, ["gpumemprof", "run", "-o", "r", "--", "gpumemprof-de"], path=os.path.dirname(args.demo))
    expect(got == ["gpumemprof-demo"], f"completing the profiled command: {got}")
    # Every command of --help completes, and so does every option its --help lists.
    got = complete(script, ["gpumemprof", ""])
    expect(got == commands + ["--version", "-V", "--help"], f"completing the commands: {got}")
    for command in commands:
        listed = re.findall(r"^ +(?:-\w, )?(--[a-z][a-z-]*)", checked([args.tool, command, "--help"]).stdout, re.M)
        offered = complete(script, ["gpumemprof", command, "--"])
        missing = [o for o in listed if o not in offered]
        expect(not missing and "--help" in offered, f"`gpumemprof {command} --` does not offer {missing + ['--help']}")
    print(f"install.completion: OK ({len(cases) + 2 + len(commands)} cases)")


def deb_files(deb):
    listing = checked(["dpkg-deb", "--contents", deb]).stdout
    # "-rw-r--r-- root/root  2583 2026-01-01 00:00 ./usr/include/gpumemprof.h"
    return {line.split()[-1][len("./usr/"):] for line in listing.splitlines() if not line.startswith("d")}


def dpkg_root(root, libc6_version):
    """An empty dpkg database under root that knows one package, libc6 at libc6_version."""
    admin = os.path.join(root, "var", "lib", "dpkg")
    for sub in ("info", "updates"):
        os.makedirs(os.path.join(admin, sub))
    stanza = checked(["dpkg-query", "-s", "libc6"]).stdout
    stanza = re.sub(r"^Version: .*$", f"Version: {libc6_version}", stanza, count=1, flags=re.M)
    with open(os.path.join(admin, "status"), "w") as f:
        f.write(stanza.rstrip("\n") + "\n\n")


def dpkg(root, *args):
    # dpkg looks for ldconfig and friends on PATH, which lacks the sbin directories for a user.
    path = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
    return run(["dpkg", f"--root={root}", "--force-not-root", "--log=/dev/null", *args],
               env={"HOME": root, "PATH": path})


def part_package(args):
    for tool in ("dpkg", "dpkg-deb", "dpkg-query", "dpkg-shlibdeps"):
        if shutil.which(tool) is None:
            skip("package", f"{tool} is not installed (a Debian host; scripts/setup.sh installs dpkg-dev)")
    arch = checked(["dpkg", "--print-architecture"]).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="gmp-package.") as work:
        checked([args.cpack, "--config", os.path.join(args.build_dir, "CPackConfig.cmake"), "-B", work], cwd=work)
        tgz = os.path.join(work, f"gpumemprof-{args.version}-Linux.tar.gz")
        deb = os.path.join(work, f"gpumemprof_{args.version}_{arch}.deb")
        expect(os.path.isfile(tgz) and os.path.isfile(deb), f"cpack wrote {sorted(os.listdir(work))}")
        shutil.rmtree(os.path.join(work, "_CPack_Packages"))

        # One set of install rules: the archive and the package hold the same files, the layout's.
        top = f"gpumemprof-{args.version}-Linux/"
        with tarfile.open(tgz) as t:
            in_tgz = {m.name[len(top):] for m in t.getmembers() if m.isfile()}
        want = expected_files(args.source_dir)
        expect(in_tgz == want, f"the .tar.gz: {sorted(in_tgz ^ want)} differ from the layout")
        expect(deb_files(deb) == want, f"the .deb: {sorted(deb_files(deb) ^ want)} differ from the layout")

        fields = ("Package", "Version", "Architecture", "Depends", "Section")
        control = dict(zip(fields, checked(["dpkg-deb", "-f", deb, *fields]).stdout.splitlines()))
        want_control = {"Package": "Package: gpumemprof", "Version": f"Version: {args.version}",
                        "Architecture": f"Architecture: {arch}", "Depends": f"Depends: libc6 (>= {args.glibc_floor})",
                        "Section": "Section: devel"}
        expect(control == want_control, f"control fields {control}, expected {want_control}")

        # dpkg-shlibdeps on what runs as a dependency (the shim, the static command) asks for no
        # more than the control file states. The libunwind copy is dlopened when it loads at all.
        extracted = os.path.join(work, "x")
        checked(["dpkg-deb", "-x", deb, extracted])
        os.makedirs(os.path.join(work, "debian"))
        open(os.path.join(work, "debian", "control"), "w").close()
        for elf in (f"usr/{SHIM_DIR}/libgpumemprof.so", "usr/bin/gpumemprof"):
            r = checked(["dpkg-shlibdeps", "-O", os.path.join(extracted, elf)], cwd=work)
            needs = re.findall(r"^shlibs:Depends=(.*)$", r.stdout, re.M)
            for need in ", ".join(needs).split(", ") if needs and needs[0] else []:
                m = re.fullmatch(r"libc6 \(>= ([\d.]+)\)", need)
                expect(m is not None and version_tuple(m.group(1)) <= version_tuple(args.glibc_floor),
                       f"{elf} needs {need}, beyond Depends: libc6 (>= {args.glibc_floor})", r)
        shutil.rmtree(extracted)

        # Installed for real by dpkg into a root whose database holds libc6: refused below the
        # floor, installed at this host's libc6, then purged.
        old = os.path.join(work, "old-root")
        dpkg_root(old, "2.27-0")
        r = dpkg(old, "-i", deb)
        expect(r.returncode == 1 and f"gpumemprof depends on libc6 (>= {args.glibc_floor}); however:" in r.stderr,
               "dpkg installed the package where libc6 is older than the floor", r)
        shutil.rmtree(old)
        root = os.path.join(work, "root")
        dpkg_root(root, checked(["dpkg-query", "-W", "-f=${Version}", "libc6"]).stdout)
        r = dpkg(root, "-i", deb)
        expect(r.returncode == 0, "dpkg -i", r)
        status = dpkg(root, "-s", "gpumemprof").stdout
        expect("Status: install ok installed\n" in status, f"dpkg -s gpumemprof:\n{status}")
        prefix = os.path.join(root, "usr")
        expect(files_under(prefix) == want, "dpkg installed other files than the package lists")
        tool = os.path.join(prefix, "bin", "gpumemprof")
        check_version(args, tool)
        check_demo(args, tool, prefix, work)
        r = dpkg(root, "-P", "gpumemprof")
        expect(r.returncode == 0 and files_under(prefix) == set(), f"purged, left {sorted(files_under(prefix))}", r)
    print("install.package: OK")


def version_tuple(text):
    return tuple(int(x) for x in text.split("."))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("part", choices=("prefix", "man", "completion", "package"))
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--cmake", required=True)
    parser.add_argument("--cpack", required=True)
    parser.add_argument("--tool", required=True, help="the built gpumemprof")
    parser.add_argument("--version", required=True, help="the CMake project's version")
    parser.add_argument("--glibc-floor", help="package: the Depends on libc6")
    parser.add_argument("--demo", required=True)
    parser.add_argument("--fake-dir", required=True, help="the fake libcuda.so.1's directory")
    args = parser.parse_args()
    {"prefix": part_prefix, "man": part_man, "completion": part_completion, "package": part_package}[args.part](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
