// prog_nvtx [MODE]: NVTX v3 (header-only, nvtx3/nvToolsExt.h) ranges and marks around driver
// allocations, for tests/integration/nvtx_test.cpp. The NVTX calls reach a tool only when
// NVTX_INJECTION64_PATH names one (the profiler's shim: docs/attribution.md, "NVTX").
//
//   ranges (default)  main thread, in order (sizes in MiB; a range's allocations are listed in it):
//                       mark "warmup done", push "outer" (both before any CUDA memory call: replayed at
//                       the first one) { 1;
//                         thread 2, joined before main goes on:
//                           push "t2-outer" { 8; push "t2-inner" { 9 } }
//                         push "inner" { 2 }; mark "checkpoint";
//                         pushW L"wide-ü中" { 3 }; pushEx ascii "ex-ascii" { markEx unicode "mark-wide"; 4 } }
//                       5 (no range);
//                       domain "mydomain" (nvtxDomainCreateA); one call of the NVTX memory
//                       extension (nvtxMemHeapRegister: it initializes separately); string
//                       "registered" registered in the domain:
//                       domain pushEx registered { domain markEx ascii "dmark"; 6;
//                         default-domain pushEx ascii "default-domain" { 7 } }
//                       domain L"wdom" (nvtxDomainCreateW), string L"wreg" registered in it:
//                       domain pushEx registered { 10 }
//                       one more nvtxRangePop with nothing open (unbalanced).
//   instances         push "exe" { 1; push "lib" from libnvtx_client.so (a second NVTX instance,
//                     dlopened from next to this program) { 2 }; 3 }.
//   nvtx-only         push "a", mark "m", pop; never loads the driver.
// Prints one JSON line: {"returns":[...]}: the value every push and pop of the main thread returned,
// in call order, then {"thread":[...]} for thread 2's. Exits 0; 1 on a failed driver call.
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtMem.h>

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "check.h"
#include "driver_loader.h"

namespace {

constexpr size_t MiB = 1ull << 20;

DriverTable t;
CUcontext g_ctx = nullptr;

void init() {
  std::string error;
  gmp::LoadOptions options;
  options.require_fake_hooks = false;
  options.allow_missing = true;
  if (!gmp::load_driver(gmp::LoadMode::CudartStyle, t, &error, options)) throw gmp::CheckFailure(error);
  g_ctx = gmp::make_primary_context_current(t);
}

void alloc(size_t mib) {
  CUdeviceptr p = 0;
  CK(t.cuMemAlloc_v2(&p, mib * MiB));
}

nvtxEventAttributes_t ascii_attributes(const char* message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = message;
  return a;
}

nvtxEventAttributes_t unicode_attributes(const wchar_t* message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_UNICODE;
  a.message.unicode = message;
  return a;
}

nvtxEventAttributes_t registered_attributes(nvtxStringHandle_t message) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = message;
  return a;
}

std::string json_list(const std::vector<int>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

void ranges() {
  std::vector<int> r, r2;
  init();
  nvtxMarkA("warmup done");              // no CUDA memory call yet: nothing is recorded now
  r.push_back(nvtxRangePushA("outer"));
  alloc(1);
  std::string failure;
  std::thread second([&] {
    try {
      CK(t.cuCtxSetCurrent(g_ctx));
      r2.push_back(nvtxRangePushA("t2-outer"));
      alloc(8);
      r2.push_back(nvtxRangePushA("t2-inner"));
      alloc(9);
      r2.push_back(nvtxRangePop());
      r2.push_back(nvtxRangePop());
    } catch (const gmp::CheckFailure& e) {
      failure = e.what();
    }
  });
  second.join();
  if (!failure.empty()) throw gmp::CheckFailure(failure);
  r.push_back(nvtxRangePushA("inner"));
  alloc(2);
  r.push_back(nvtxRangePop());
  nvtxMarkA("checkpoint");
  r.push_back(nvtxRangePushW(L"wide-\u00fc\u4e2d"));
  alloc(3);
  r.push_back(nvtxRangePop());
  const nvtxEventAttributes_t ex = ascii_attributes("ex-ascii");
  r.push_back(nvtxRangePushEx(&ex));
  const nvtxEventAttributes_t mark_wide = unicode_attributes(L"mark-wide");
  nvtxMarkEx(&mark_wide);
  alloc(4);
  r.push_back(nvtxRangePop());
  r.push_back(nvtxRangePop());  // outer
  alloc(5);

  nvtxDomainHandle_t domain = nvtxDomainCreateA("mydomain");
  nvtxMemHeapDesc_t heap{};  // an NVTX extension call: its initialization looks for the tool too
  heap.extCompatID = NVTX_EXT_COMPATID_MEM;
  heap.structSize = sizeof heap;
  heap.usage = NVTX_MEM_HEAP_USAGE_TYPE_SUB_ALLOCATOR;
  heap.type = NVTX_MEM_TYPE_VIRTUAL_ADDRESS;
  nvtxMemHeapRegister(domain, &heap);
  const nvtxEventAttributes_t registered = registered_attributes(nvtxDomainRegisterStringA(domain, "registered"));
  r.push_back(nvtxDomainRangePushEx(domain, &registered));
  const nvtxEventAttributes_t dmark = ascii_attributes("dmark");
  nvtxDomainMarkEx(domain, &dmark);
  alloc(6);
  const nvtxEventAttributes_t in_default = ascii_attributes("default-domain");
  r.push_back(nvtxDomainRangePushEx(nullptr, &in_default));
  alloc(7);
  r.push_back(nvtxDomainRangePop(nullptr));
  r.push_back(nvtxDomainRangePop(domain));

  nvtxDomainHandle_t wide_domain = nvtxDomainCreateW(L"wdom");
  const nvtxEventAttributes_t wide_registered =
      registered_attributes(nvtxDomainRegisterStringW(wide_domain, L"wreg"));
  r.push_back(nvtxDomainRangePushEx(wide_domain, &wide_registered));
  alloc(10);
  r.push_back(nvtxDomainRangePop(wide_domain));

  r.push_back(nvtxRangePop());  // nothing open
  std::printf("{\"returns\":%s,\"thread\":%s}\n", json_list(r).c_str(), json_list(r2).c_str());
}

void instances() {
  std::vector<int> r;
  init();
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) throw gmp::CheckFailure("cannot read /proc/self/exe");
  std::string path(exe, static_cast<size_t>(n));
  path = path.substr(0, path.rfind('/')) + "/libnvtx_client.so";
  void* client = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (client == nullptr) throw gmp::CheckFailure(std::string("dlopen: ") + dlerror());
  auto client_push = reinterpret_cast<int (*)(const char*)>(dlsym(client, "nvtx_client_push"));
  auto client_pop = reinterpret_cast<int (*)()>(dlsym(client, "nvtx_client_pop"));
  if (client_push == nullptr || client_pop == nullptr) throw gmp::CheckFailure("libnvtx_client.so lacks its functions");
  r.push_back(nvtxRangePushA("exe"));
  alloc(1);
  r.push_back(client_push("lib"));
  alloc(2);
  r.push_back(client_pop());
  alloc(3);
  r.push_back(nvtxRangePop());
  std::printf("{\"returns\":%s,\"thread\":[]}\n", json_list(r).c_str());
}

void nvtx_only() {
  std::vector<int> r;
  r.push_back(nvtxRangePushA("a"));
  nvtxMarkA("m");
  r.push_back(nvtxRangePop());
  std::printf("{\"returns\":%s,\"thread\":[]}\n", json_list(r).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "ranges";
  try {
    if (mode == "ranges") ranges();
    else if (mode == "instances") instances();
    else if (mode == "nvtx-only") nvtx_only();
    else {
      std::fprintf(stderr, "usage: prog_nvtx [ranges|instances|nvtx-only]\n");
      return 2;
    }
  } catch (const gmp::CheckFailure& e) {
    std::fprintf(stderr, "prog_nvtx: %s\n", e.what());
    return 1;
  }
  return 0;
}
