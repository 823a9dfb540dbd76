#!/usr/bin/env python3
"""Fails naming every dynamic-symbol version an ELF file needs beyond the supported glibc floor.

The dynamic loader refuses to start a program (or to load a preloaded library) when one of the
versions in its version-needs table (.gnu.version_r) is missing from the named library; that table
is what this checks, with each offending symbol named from the dynamic symbol table. A statically
linked executable has no such table and needs no glibc at run time, so it passes.

Only glibc's own libraries may be needed: a dependency on libstdc++.so.6 or libgcc_s.so.1 would
tie the binary to the C++ runtime of the build host (link those statically), and any version other
than GLIBC_x.y (GLIBCXX_, CXXABI_, GCC_) is reported as well.

  glibc_floor.py --max 2.28 [--readelf readelf] FILE...
Exit status: 0 when every FILE is within the floor, 1 otherwise (one line per finding).
"""
import argparse
import re
import subprocess
import sys

# The libraries glibc itself installs on x86_64 (2.28 and later): present on every target system.
GLIBC_LIBRARIES = {
    "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0", "librt.so.1",
    "ld-linux-x86-64.so.2",
}


def readelf(tool, args, path):
    r = subprocess.run([tool, "-W", *args, path], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"glibc_floor: {tool} {' '.join(args)} {path} failed: {r.stderr.strip()}")
    return r.stdout


def version_tuple(text):
    return tuple(int(part) for part in text.split("."))


def needed_versions(tool, path):
    """{(library, version name)} from the version-needs table."""
    needs, library = set(), None
    for line in readelf(tool, ["--version-info"], path).splitlines():
        m = re.search(r"File: (\S+)", line)
        if m:
            library = m.group(1)
            continue
        m = re.search(r"Name: (\S+)\s+Flags:", line)
        if m and library is not None:
            needs.add((library, m.group(1)))
    return needs


def symbols_by_version(tool, path):
    """{version name: [symbols bound to it]} from the dynamic symbol table: undefined functions
    and the program's copies of library variables (copy relocations)."""
    found = {}
    for line in readelf(tool, ["--dyn-syms"], path).splitlines():
        m = re.search(r"\s([^@\s]+)@@?(\S+) \(\d+\)$", line)
        if m:
            found.setdefault(m.group(2), []).append(m.group(1))
    return found


def check(tool, path, floor):
    dynamic = readelf(tool, ["--dynamic"], path)
    if "There is no dynamic section" in dynamic:
        return []  # statically linked
    problems = []
    for lib in re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic):
        if lib not in GLIBC_LIBRARIES:
            problems.append(f"{path}: needs {lib}, which is not part of glibc (link it statically)")
    symbols = symbols_by_version(tool, path)
    for library, version in sorted(needed_versions(tool, path)):
        m = re.fullmatch(r"GLIBC_([0-9.]+)", version)
        if m and version_tuple(m.group(1)) <= floor:
            continue
        names = ", ".join(sorted(set(symbols.get(version, [])))) or "(no symbol named)"
        limit = ".".join(map(str, floor))
        problems.append(f"{path}: needs {version} from {library} (floor GLIBC_{limit}): {names}")
    return problems


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--max", required=True, help="the glibc floor, e.g. 2.28")
    parser.add_argument("--readelf", default="readelf")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    floor = version_tuple(args.max)
    problems = [p for f in args.files for p in check(args.readelf, f, floor)]
    for p in problems:
        print(p)
    if not problems:
        print(f"glibc_floor: {len(args.files)} files load on glibc {args.max} and newer")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
