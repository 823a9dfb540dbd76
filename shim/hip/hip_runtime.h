// The real HIP and HSA runtimes: the real pointer of every entry point we wrap or call, and the
// routing from a real pointer to our wrapper (hipGetProcAddress, dlsym). Resolved lazily and
// lock-free like the CUDA driver (real_driver.h): two threads may both resolve and store the same.
#pragma once

#include "hip_api.h"

namespace gmp::shim::hip {

// The real function for `e`, or nullptr when its library is not loaded or lacks it. A library
// counts only when it is the runtime (libamdhip64 exports hipGetDeviceCount, libhsa-runtime64
// hsa_init); we never load either ourselves.
void* real(Entry e);

// Whether the HIP runtime is in the process: then HSA allocations outside its allocation calls are
// the runtime's own (kind runtime); without it they are the program's (hsa_level.h).
bool hip_loaded();

// Our wrapper for the runtime function `p`, or `p` itself if we do not wrap it.
void* route(void* p);

// The wrapper of the exact exported name `name` when we wrap it and `handle` (a dlsym handle, may
// be null) resolves it to the runtime's own function; nullptr otherwise.
void* wrapper_for_lookup(void* handle, const char* name);

}  // namespace gmp::shim::hip

#define GMP_HIP_REAL(name) reinterpret_cast<decltype(&::name)>(::gmp::shim::hip::real(::gmp::shim::hip::Entry::name))
// ... for the entry points named in c_type (hip_api.h).
#define GMP_HIP_REAL_C(name) reinterpret_cast<::gmp::shim::hip::c_type::name>(::gmp::shim::hip::real(::gmp::shim::hip::Entry::name))
