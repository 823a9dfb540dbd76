"""gpumemprof for Python: the names of the `gpumemprof` package users know (GPUMemoryProfiler,
MemoryTracker, MemoryWatchdog), on the exact figures of the preloaded profiler (docs/python.md).

Pure Python over ctypes. Under `gpumemprof run` every figure is exact; without the profiler in the
process the package says once that nothing is recorded, and gpumemprof.run([...]) starts a program
under it.
"""

from ._launcher import run
from ._native import loaded, recording
from .profiler import GPUMemoryProfiler, MemorySnapshot, ProfileResult
from .tracker import MemoryTracker, MemoryWatchdog, TrackingEvent

__all__ = ["GPUMemoryProfiler", "MemorySnapshot", "ProfileResult", "MemoryTracker", "MemoryWatchdog",
           "TrackingEvent", "run", "loaded", "recording"]
