// The other NVTX tool GPUMEMPROF_NVTX_CHAIN names (Nsight Systems, say): loaded once per process,
// initialized for each NVTX instance after us, and handed the NVTX extensions, which the shim only
// forwards. Called under the injection's lock (nvtx_injection.cpp).
#pragma once

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

namespace gmp::shim::nvtx {

// The chained tool's InitializeInjectionNvtx2; nullptr when there is none, it cannot be loaded (a
// warning on stderr says why), or it is the shim itself. The first call loads it.
NvtxInitializeInjectionNvtxFunc_t chained_init();

// The chained tool's InitializeInjectionNvtxExtension, if it has one; call chained_init() first.
using ExtensionInit = int (*)(void* module_info);
ExtensionInit chained_extension_init();

}  // namespace gmp::shim::nvtx
