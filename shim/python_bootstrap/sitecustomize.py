"""gpumemprof's Python bootstrap (docs/framework-bridge.md).

`gpumemprof run` puts this directory first on PYTHONPATH, so Python imports this module at start-up.
It installs the PyTorch bridge's import hook (which does nothing until the program imports torch),
then hands over to the sitecustomize this one shadows, if there is one, so a project's own still runs.
"""


def _install_bridge():
    try:
        import _gpumemprof_bridge

        _gpumemprof_bridge.install()
    except Exception:  # never let the profiler break the program's start-up
        pass


def _chain_to_shadowed_sitecustomize():
    import os
    import sys

    here = os.path.dirname(os.path.abspath(__file__))
    ours = sys.modules.pop("sitecustomize", None)
    saved = sys.path[:]
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        import sitecustomize  # noqa: F401  (the shadowed one)
    except Exception as e:
        if not (isinstance(e, ImportError) and e.name == "sitecustomize"):  # it exists and failed: as site.py says
            if sys.flags.verbose:
                sys.excepthook(*sys.exc_info())
            else:
                sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n")
                sys.stderr.write(f"{e.__class__.__name__}: {e}\n")
    finally:
        sys.path[:] = saved
        # site.py's own import of us must find a module under this name, ours or the shadowed one.
        if ours is not None:
            sys.modules.setdefault("sitecustomize", ours)


_install_bridge()
_chain_to_shadowed_sitecustomize()
