// Test hooks exported by the fake libcuda.so.1. Their names deliberately do not start with "cu",
// so a profiler that interposes CUDA entry points never sees them.
#pragma once

#include <cuda.h>

#include <cstddef>

extern "C" {
// Allocates linear device memory on the current context's device exactly like cuMemAlloc_v2
// (same charging, same rules, freeable with cuMemFree_v2) without going through any exported
// cu* symbol, so a profiler cannot observe the allocation.
CUresult fakecuda_alloc_untracked(unsigned long long* dptr, size_t size);
// Bytes currently charged against `device`'s capacity (0 for an invalid device or before cuInit).
size_t fakecuda_charged_bytes(int device);
// Bytes the graph memory pool of `device` holds (reserved == used; charged against the capacity;
// 0 for an invalid device or before cuInit).
size_t fakecuda_graph_reserved_bytes(int device);
// Arms a one-shot signal: the next call of the entry point named `entry_point` (checked by
// cuDriverGetVersion, cuCtxSynchronize and cuCtxSynchronize_v2), from any thread, raises `sig`
// inside the driver, with the driver's lock held where that call takes it, as when a signal
// interrupts a thread inside the real driver.
void fakecuda_raise_in(const char* entry_point, int sig);
}

using fakecuda_alloc_untracked_fn = CUresult (*)(unsigned long long*, size_t);
using fakecuda_charged_bytes_fn = size_t (*)(int);
using fakecuda_graph_reserved_bytes_fn = size_t (*)(int);
using fakecuda_raise_in_fn = void (*)(const char*, int);
