#include "nvtx_chain.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "nvtx_injection.h"
#include "real_driver.h"

namespace gmp::shim::nvtx {
namespace {

bool g_chain_loaded = false;  // tried
NvtxInitializeInjectionNvtxFunc_t g_chain_init = nullptr;  // its library stays loaded
ExtensionInit g_chain_extension_init = nullptr;

void warn(const char* what, const char* detail) {
  char line[1024];
  const int n = std::snprintf(line, sizeof line, "gpumemprof: %s%s\n", what, detail != nullptr ? detail : "");
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1);
}

}  // namespace

NvtxInitializeInjectionNvtxFunc_t chained_init() {
  if (g_chain_loaded) return g_chain_init;
  g_chain_loaded = true;
  const char* path = std::getenv("GPUMEMPROF_NVTX_CHAIN");
  if (path == nullptr || *path == '\0') return nullptr;
  void* handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    warn("cannot load the NVTX tool in GPUMEMPROF_NVTX_CHAIN: ", dlerror());
    return nullptr;
  }
  auto init = reinterpret_cast<NvtxInitializeInjectionNvtxFunc_t>(real_dlsym()(handle, "InitializeInjectionNvtx2"));
  if (init == nullptr || init == &InitializeInjectionNvtx2) {  // not a tool, or ourselves again
    if (init == nullptr) warn("no InitializeInjectionNvtx2 in GPUMEMPROF_NVTX_CHAIN: ", path);
    dlclose(handle);
    return nullptr;
  }
  g_chain_init = init;
  auto extension = reinterpret_cast<ExtensionInit>(real_dlsym()(handle, "InitializeInjectionNvtxExtension"));
  if (extension != &InitializeInjectionNvtxExtension) g_chain_extension_init = extension;
  return init;
}

ExtensionInit chained_extension_init() { return g_chain_extension_init; }

}  // namespace gmp::shim::nvtx
