// libnvtx_client.so: a library with NVTX calls of its own. The NVTX v3 headers keep their state
// hidden in each module, so this is a second NVTX instance next to prog_nvtx's, initialized (and
// attached to the injection library) separately; prog_nvtx's `instances` mode dlopens it.
#include <nvtx3/nvToolsExt.h>

#define CLIENT_EXPORT extern "C" __attribute__((visibility("default")))

CLIENT_EXPORT int nvtx_client_push(const char* name) { return nvtxRangePushA(name); }
CLIENT_EXPORT int nvtx_client_pop() { return nvtxRangePop(); }
