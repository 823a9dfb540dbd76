"""gpumemprof.run: a program started under the profiler, as `gpumemprof run` would."""

import os
import shutil
import subprocess


def _tool():
    """The gpumemprof command: the one installed with this package (bin/ beside lib/gpumemprof/python,
    as in a build tree), else the first on PATH."""
    here = os.path.dirname(os.path.abspath(__file__))
    beside = os.path.normpath(os.path.join(here, "..", "..", "..", "..", "bin", "gpumemprof"))
    if os.access(beside, os.X_OK):
        return beside
    found = shutil.which("gpumemprof")
    if found is None:
        raise FileNotFoundError("gpumemprof: the gpumemprof command is neither beside this package nor on PATH")
    return found


def run(args, output=None, options=(), **kwargs):
    """Runs `args` (a list, as for subprocess.run) under `gpumemprof run`, with `output` as its
    ROOT (-o) and `options` (a list of gpumemprof run options) before the command. Returns the
    subprocess.CompletedProcess; other keyword arguments go to subprocess.run."""
    cmd = [_tool(), "run"] + (["-o", os.fspath(output)] if output is not None else []) + list(options)
    return subprocess.run(cmd + ["--"] + [os.fspath(a) for a in args], **kwargs)
