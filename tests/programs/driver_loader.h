// Ways a process reaches the driver without linking it (docs/design.md §Reaching the driver):
//   CudartStyle  dlopen("libcuda.so.1"), dlsym(h, "cuGetProcAddress_v2"), then every entry point
//                through cuGetProcAddress_v2, each base name asked twice (flags 0 and flags 2,
//                per-thread default stream) as cudart does; stream-ordered members keep the
//                flags-2 (`_ptsz`) pointer.
//   Dlsym        dlopen + dlsym(h, exact_versioned_name) per symbol (PyTorch / JAX style).
//   SelfLookup   dlsym(h, "cuGetProcAddress") (old 4-argument export), ask it for
//                "cuGetProcAddress" at version 12000, and resolve everything (flags 0 and 2, as
//                CudartStyle) through the resolver THAT returned.
// (The fourth way, linking libcuda, is prog_linked.cpp.)
#pragma once

#include <string>

#include "driver_table.h"

namespace gmp {

enum class LoadMode { CudartStyle, Dlsym, SelfLookup };

struct LoadOptions {
  // Version the cuGetProcAddress-based loaders ask for. 0 = min(CUDA_VERSION of the headers
  // (13000), the driver's cuDriverGetVersion), like a CUDA runtime.
  int cuda_version = 0;
  bool require_fake_hooks = true;  // fail when fakecuda_alloc_untracked is missing
  bool allow_missing = false;      // leave entry points the driver lacks null instead of failing
};

// Fills `t`; on failure returns false and describes the problem in *error.
bool load_driver(LoadMode mode, DriverTable& t, std::string* error, LoadOptions options = {});

// How the test programs start: cuInit, then device 0's primary context retained and made current
// in the calling thread. A failing call throws CheckFailure (check.h). Returns the context.
CUcontext make_primary_context_current(const DriverTable& t);

}  // namespace gmp
