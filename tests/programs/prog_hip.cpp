// A HIP program on the fake HIP runtime (tests/fake_hip), linked against libamdhip64 as HIP programs
// are: every allocation path, one step per argument, in order. Prints one JSON line of the fake's
// own figures at the end, for the tests to compare the profiler's with. Exit status 1 when a call
// that should succeed fails (the step is named on stderr).
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "../../shim/hip/hip_api.h"
#include "fake_hsa_hooks.h"

namespace {

constexpr size_t MiB = 1 << 20;
int g_failures = 0;

void check(hipError_t r, const char* what, hipError_t expected = hipSuccess) {
  if (r != expected) {
    std::fprintf(stderr, "prog_hip: %s returned %d, expected %d\n", what, r, expected);
    ++g_failures;
  }
}

// Linear memory: as asked, pitched, 3D, fine-grained; all freed but `kept`.
void linear() {
  void *a, *kept, *pitched, *fine;
  size_t pitch = 0;
  check(hipMalloc(&a, MiB), "hipMalloc");
  check(hipMalloc(&kept, 3000), "hipMalloc");
  check(hipMallocPitch(&pitched, &pitch, 1000, 10), "hipMallocPitch");  // pitch 1024: 10240 bytes
  hipPitchedPtr p3{};
  check(hipMalloc3D(&p3, hipExtent{100, 4, 2}), "hipMalloc3D");  // pitch 256: 2048 bytes
  check(hipExtMallocWithFlags(&fine, 8192, hipDeviceMallocFinegrained), "hipExtMallocWithFlags");
  void* none = &a;
  check(hipMalloc(&none, 0), "hipMalloc(0)");  // success, a null pointer, nothing recorded
  check(hipFree(a), "hipFree");
  check(hipFree(pitched), "hipFree");
  check(hipFree(p3.ptr), "hipFree");
  check(hipFree(fine), "hipFree");
  check(hipFree(nullptr), "hipFree(NULL)");
  check(hipFree(reinterpret_cast<void*>(0x1234)), "hipFree(unknown)", hipErrorInvalidValue);
}

// Pinned host memory through its three names, and managed memory.
void host() {
  void *a, *b, *c, *m;
  check(hipHostMalloc(&a, 3 * 4096, 0), "hipHostMalloc");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // still exported, still used
  check(hipMallocHost(&b, 5000), "hipMallocHost");
  check(hipFreeHost(b), "hipFreeHost");
  check(hipHostAlloc(&c, 100, 0), "hipHostAlloc");
#pragma GCC diagnostic pop
  std::memset(a, 1, 3 * 4096);  // host memory the program may touch
  check(hipHostFree(a), "hipHostFree");
  check(hipMallocManaged(&m, 2 * MiB, hipMemAttachGlobal), "hipMallocManaged");
  check(hipFree(m), "hipFree(managed)");
  (void)c;  // left live
}

// Stream-ordered memory from the default pool and from a created one.
void pool() {
  hipStream_t s;
  check(hipStreamCreate(&s), "hipStreamCreate");  // the runtime's 1 MiB kernel-argument buffer
  void *a, *b, *c;
  check(hipMallocAsync(&a, MiB, s), "hipMallocAsync");       // pool grows by 1 MiB
  check(hipMallocAsync(&b, 3 * MiB, s), "hipMallocAsync");   // by 3 MiB: 4 MiB reserved
  check(hipFreeAsync(a, s), "hipFreeAsync");
  check(hipMallocAsync(&c, 1000000, s), "hipMallocAsync");   // reuses a's block
  check(hipFreeAsync(b, s), "hipFreeAsync");
  check(hipFreeAsync(c, s), "hipFreeAsync");
  check(hipStreamSynchronize(s), "hipStreamSynchronize");    // all 4 MiB back to HSA
  hipMemPool_t pool;
  hipMemPoolProps props{};
  props.allocType = hipMemAllocationTypePinned;
  props.location.type = hipMemLocationTypeDevice;
  props.location.id = 0;
  check(hipMemPoolCreate(&pool, &props), "hipMemPoolCreate");
  void *d, *e;
  check(hipMallocFromPoolAsync(&d, 2 * MiB, pool, s), "hipMallocFromPoolAsync");
  check(hipMemPoolTrimTo(pool, 0), "hipMemPoolTrimTo");  // d is in use: nothing to give back
  check(hipFreeAsync(d, s), "hipFreeAsync");
  check(hipMemPoolTrimTo(pool, 0), "hipMemPoolTrimTo");  // 2 MiB back
  check(hipMallocFromPoolAsync(&e, 5 * MiB, pool, s), "hipMallocFromPoolAsync");
  check(hipMemPoolDestroy(pool), "hipMemPoolDestroy");    // releases e with its 5 MiB
  check(hipStreamDestroy(s), "hipStreamDestroy");
}

// Arrays: the runtime pads rows to 256 bytes, which the profiler reads off the HSA level.
void array() {
  hipArray *a, *b, *c;
  const hipChannelFormatDesc f32 = {32, 0, 0, 0, hipChannelFormatKindFloat};
  check(hipMallocArray(&a, &f32, 100, 10, 0), "hipMallocArray");  // 512 × 10 = 5120 bytes
  HIP_ARRAY3D_DESCRIPTOR d3{64, 4, 2, HIP_AD_FORMAT_FLOAT, 2, 0};
  check(hipArray3DCreate(&b, &d3), "hipArray3DCreate");            // 512 × 4 × 2 = 4096 bytes
  HIP_ARRAY_DESCRIPTOR d2{300, 0, HIP_AD_FORMAT_UNSIGNED_INT8, 1};
  check(hipArrayCreate(&c, &d2), "hipArrayCreate");                // 512 bytes
  check(hipFreeArray(a), "hipFreeArray");
  check(hipArrayDestroy(b), "hipArrayDestroy");
  check(hipArrayDestroy(c), "hipArrayDestroy");
}

// Virtual memory: create, map, release while mapped, unmap.
void vmm() {
  gmp_hipMemAllocationProp6 prop{};  // the runtime is ROCm 6's (libamdhip64.so.6): its layout
  prop.type = hipMemAllocationTypePinned;
  prop.location.type = hipMemLocationTypeDevice;
  prop.location.id = 0;
  hipMemGenericAllocationHandle_t h;
  check(hipMemCreate(&h, 4 * MiB, reinterpret_cast<const hipMemAllocationProp*>(&prop), 0), "hipMemCreate");
  void* va = nullptr;
  check(hipMemAddressReserve(&va, 4 * MiB, 0, nullptr, 0), "hipMemAddressReserve");
  check(hipMemMap(va, 4 * MiB, 0, h, 0), "hipMemMap");
  check(hipMemRelease(h), "hipMemRelease");  // still mapped: the memory stays
  check(hipMemUnmap(va, 4 * MiB), "hipMemUnmap");
  check(hipMemAddressFree(va, 4 * MiB), "hipMemAddressFree");
}

// Past the device's capacity (the test sets FAKE_HIP_CAPACITY=8M).
void oom() {
  void *a, *b;
  check(hipMalloc(&a, 4 * MiB), "hipMalloc");
  check(hipMalloc(&b, 8 * MiB), "hipMalloc(too much)", hipErrorOutOfMemory);
  check(hipFree(a), "hipFree");
}

// The ways around the link: hipGetProcAddress (the runtime's own table) and dlsym on its handle.
void lookups() {
  using Malloc = hipError_t (*)(void**, size_t);
  using Free = hipError_t (*)(void*);
  void* fn = nullptr;
  check(hipGetProcAddress("hipMalloc", &fn, 600, 0, nullptr), "hipGetProcAddress");
  void *a = nullptr, *b = nullptr;
  if (fn != nullptr) check(reinterpret_cast<Malloc>(fn)(&a, 7 * 4096), "hipMalloc via hipGetProcAddress");
  void* lib = dlopen("libamdhip64.so.6", RTLD_LAZY | RTLD_NOLOAD);
  void* sym = lib != nullptr ? dlsym(lib, "hipMalloc") : nullptr;
  if (sym != nullptr) check(reinterpret_cast<Malloc>(sym)(&b, 9 * 4096), "hipMalloc via dlsym");
  void* free_fn = lib != nullptr ? dlsym(lib, "hipFree") : nullptr;
  if (free_fn != nullptr) check(reinterpret_cast<Free>(free_fn)(b), "hipFree via dlsym");
  if (fn == nullptr || sym == nullptr || free_fn == nullptr) ++g_failures;
  (void)a;  // left live
}

// Device 1 (FAKE_HIP_DEVICES=2): its own staging buffer and allocation.
void second_device() {
  void* a;
  check(hipSetDevice(1), "hipSetDevice");
  check(hipMalloc(&a, 2 * MiB), "hipMalloc");
  check(hipFree(a), "hipFree");
  check(hipSetDevice(0), "hipSetDevice");
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string step = argv[i];
    if (step == "linear") linear();
    else if (step == "host") host();
    else if (step == "pool") pool();
    else if (step == "array") array();
    else if (step == "vmm") vmm();
    else if (step == "oom") oom();
    else if (step == "lookups") lookups();
    else if (step == "second_device") second_device();
    else {
      std::fprintf(stderr, "prog_hip: unknown step %s\n", argv[i]);
      return 2;
    }
  }
  std::printf("{\"charged0\": %llu, \"charged1\": %llu}\n", static_cast<unsigned long long>(fakehsa_charged_bytes(0)),
              static_cast<unsigned long long>(fakehsa_charged_bytes(1)));
  return g_failures == 0 ? 0 : 1;
}
