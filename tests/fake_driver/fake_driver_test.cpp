// Checks the fake driver's documented rules (README.md). Links the fake libcuda.so.1 directly.
// The process runs with FAKE_CUDA_DEVICES=2 and FAKE_CUDA_CAPACITY=1G (set in main before
// cuInit). Tests share one driver instance, so each one measures charges relative to its start
// and cleans up after itself.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fakecuda_hooks.h"

// Exports of the fake that cuda.h does not declare (it only names them with
// CUDA_API_PER_THREAD_DEFAULT_STREAM).
extern "C" {
CUresult cuMemAllocAsync_ptsz(CUdeviceptr*, size_t, CUstream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr, CUstream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr*, size_t, CUmemoryPool, CUstream);
CUresult cuStreamSynchronize_ptsz(CUstream);
CUresult cuStreamGetDevice_ptsz(CUstream, CUdevice*);
CUresult cuStreamGetCtx_v2_ptsz(CUstream, CUcontext*, CUgreenCtx*);
CUresult cuEventRecord_ptsz(CUevent, CUstream);
}

namespace {

constexpr size_t MiB = size_t{1} << 20;
constexpr size_t GiB = size_t{1} << 30;
constexpr size_t kCapacity = GiB;
constexpr size_t G = 2 * MiB;

// Results of calls made in main() before cuInit.
CUresult g_alloc_before_init = CUDA_SUCCESS;
bool g_alloc_before_init_zeroed = false;
CUresult g_version_before_init = CUDA_ERROR_UNKNOWN;
int g_version_value = 0;
CUresult g_proc_before_init = CUDA_ERROR_UNKNOWN;
CUresult g_ctx_before_init = CUDA_SUCCESS;

using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
using GetProcV2 = CUresult (*)(const char*, void**, int, cuuint64_t,
                               CUdriverProcAddressQueryResult*);

void* lib() {
  static void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  return h;
}

void* sym(const char* name) { return dlsym(lib(), name); }

size_t charged(int dev = 0) { return fakecuda_charged_bytes(dev); }

class Fake : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx0_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx1_, 1), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx0_), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);  // empty pools hold nothing
    base0_ = charged(0);
    base1_ = charged(1);
  }
  void TearDown() override {
    EXPECT_EQ(cuCtxSetCurrent(ctx0_), CUDA_SUCCESS);
    EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_EQ(charged(0), base0_) << "test leaked charged bytes on device 0";
    EXPECT_EQ(charged(1), base1_) << "test leaked charged bytes on device 1";
    EXPECT_EQ(cuDevicePrimaryCtxRelease(0), CUDA_SUCCESS);
    EXPECT_EQ(cuDevicePrimaryCtxRelease(1), CUDA_SUCCESS);
  }

  static cuuint64_t pool_attr(CUmemoryPool p, CUmemPool_attribute a) {
    cuuint64_t v = ~0ULL;
    EXPECT_EQ(cuMemPoolGetAttribute(p, a, &v), CUDA_SUCCESS);
    return v;
  }
  static cuuint64_t reserved(CUmemoryPool p) {
    return pool_attr(p, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
  }
  static cuuint64_t used(CUmemoryPool p) { return pool_attr(p, CU_MEMPOOL_ATTR_USED_MEM_CURRENT); }

  static CUmemAllocationProp vmm_prop(int dev) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
  }

  CUcontext ctx0_ = nullptr;
  CUcontext ctx1_ = nullptr;
  size_t base0_ = 0;
  size_t base1_ = 0;
};

TEST(FakeBeforeInit, OnlyResolverVersionAndErrorsWork) {
  EXPECT_EQ(g_alloc_before_init, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_TRUE(g_alloc_before_init_zeroed);  // out-pointer cleared even then, as the real driver
  EXPECT_EQ(g_ctx_before_init, CUDA_ERROR_NOT_INITIALIZED);
  EXPECT_EQ(g_version_before_init, CUDA_SUCCESS);
  EXPECT_EQ(g_version_value, 13000);
  EXPECT_EQ(g_proc_before_init, CUDA_SUCCESS);
}

TEST_F(Fake, DevicesFromEnvironment) {
  int n = 0;
  ASSERT_EQ(cuDeviceGetCount(&n), CUDA_SUCCESS);
  EXPECT_EQ(n, 2);
  char name[64];
  ASSERT_EQ(cuDeviceGetName(name, sizeof name, 1), CUDA_SUCCESS);
  EXPECT_STREQ(name, "Fake CUDA Device 1");
  size_t total = 0;
  ASSERT_EQ(cuDeviceTotalMem(&total, 0), CUDA_SUCCESS);
  EXPECT_EQ(total, kCapacity);
  CUdevice d = -1;
  EXPECT_EQ(cuDeviceGet(&d, 1), CUDA_SUCCESS);
  EXPECT_EQ(d, 1);
  EXPECT_EQ(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
  int v = -1;
  EXPECT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 0), CUDA_SUCCESS);
  EXPECT_EQ(v, 1);
  EXPECT_EQ(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX_PITCH, 0), CUDA_SUCCESS);
  EXPECT_EQ(v, 0);  // unknown attributes read 0
  const char* s = nullptr;
  EXPECT_EQ(cuGetErrorName(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
  EXPECT_STREQ(s, "CUDA_ERROR_OUT_OF_MEMORY");
}

TEST_F(Fake, ContextIsThreadLocal) {
  CUdevice dev = -1;
  ASSERT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 0);
  ASSERT_EQ(cuCtxPushCurrent(ctx1_), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 1);
  CUcontext popped = nullptr;
  ASSERT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, ctx1_);
  ASSERT_EQ(cuCtxGetDevice(&dev), CUDA_SUCCESS);
  EXPECT_EQ(dev, 0);

  std::thread t([] {
    CUcontext c = reinterpret_cast<CUcontext>(1);
    EXPECT_EQ(cuCtxGetCurrent(&c), CUDA_SUCCESS);
    EXPECT_EQ(c, nullptr);
    CUdevice d = -1;
    EXPECT_EQ(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
    CUdeviceptr p = 1;
    EXPECT_EQ(cuMemAlloc(&p, 1024), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(p, 0u);
    EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_INVALID_CONTEXT);
    CUcontext none = nullptr;
    EXPECT_EQ(cuCtxPopCurrent(&none), CUDA_ERROR_INVALID_CONTEXT);
  });
  t.join();
}

TEST_F(Fake, LinearChargesAndFrees) {
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, 1000), CUDA_SUCCESS);
  EXPECT_NE(p, 0u);
  EXPECT_EQ(p % 256, 0u);
  EXPECT_EQ(charged(), base0_ + 1000);
  size_t free_b = 0, total = 0;
  ASSERT_EQ(cuMemGetInfo(&free_b, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, kCapacity);
  EXPECT_EQ(free_b, kCapacity - base0_ - 1000);
  int ordinal = -1;
  ASSERT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p + 10),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 0);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(charged(), base0_);
  EXPECT_EQ(cuMemFree(p), CUDA_ERROR_INVALID_VALUE);  // already freed = unknown
  EXPECT_EQ(cuMemFree(0), CUDA_SUCCESS);
  CUdeviceptr z = 7;
  EXPECT_EQ(cuMemAlloc(&z, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(z, 0u);

  // Pitch: pitch = round_up(width, 512), charged pitch * height.
  size_t pitch = 0;
  ASSERT_EQ(cuMemAllocPitch(&p, &pitch, 3000, 512, 4), CUDA_SUCCESS);
  EXPECT_EQ(pitch, 3072u);
  EXPECT_EQ(charged(), base0_ + 3072 * 512);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);

  // On device 1 through the current context.
  ASSERT_EQ(cuCtxSetCurrent(ctx1_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&p, 4 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(charged(1), base1_ + 4 * MiB);
  EXPECT_EQ(charged(0), base0_);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

TEST_F(Fake, FreedAddressesAreReusedAcrossThreads) {
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAlloc(&a, 4096), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(a), CUDA_SUCCESS);
  CUdeviceptr b = 0;
  CUcontext ctx = ctx0_;
  std::thread t([&] {
    ASSERT_EQ(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&b, 4000), CUDA_SUCCESS);  // same 256-rounded size class
  });
  t.join();
  EXPECT_EQ(a, b);
  EXPECT_EQ(cuMemFree(b), CUDA_SUCCESS);
}

TEST_F(Fake, OutOfMemoryAtCapacity) {
  const size_t room = kCapacity - charged();
  CUdeviceptr big = 0;
  ASSERT_EQ(cuMemAlloc(&big, room), CUDA_SUCCESS);  // exactly fits
  EXPECT_EQ(charged(), kCapacity);
  CUdeviceptr p = 123;
  EXPECT_EQ(cuMemAlloc(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(p, 0u);
  EXPECT_EQ(charged(), kCapacity);  // nothing changed
  // Pools and VMM are charged against the same capacity.
  EXPECT_EQ(cuMemAllocAsync(&p, 1, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  CUmemGenericAllocationHandle h = 5;
  const CUmemAllocationProp prop = vmm_prop(0);
  EXPECT_EQ(cuMemCreate(&h, G, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(h, 0u);
  // Managed and pinned memory are not charged, so they still work.
  CUdeviceptr m = 0;
  EXPECT_EQ(cuMemAllocManaged(&m, MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  void* host = nullptr;
  EXPECT_EQ(cuMemHostAlloc(&host, MiB, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(m), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(host), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(big), CUDA_SUCCESS);
  // A request bigger than the capacity.
  EXPECT_EQ(cuMemAlloc(&p, size_t{1} << 40), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(p, 0u);
}

TEST_F(Fake, ManagedAndPinnedAreNotCharged) {
  CUdeviceptr m = 0;
  ASSERT_EQ(cuMemAllocManaged(&m, 3 * MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  void* h1 = nullptr;
  void* h2 = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&h1, 2 * MiB, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocHost(&h2, MiB), CUDA_SUCCESS);
  EXPECT_EQ(charged(), base0_);
  EXPECT_EQ(cuMemFree(reinterpret_cast<CUdeviceptr>(h1)), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFreeHost(h1), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(h2), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(h2), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemFree(m), CUDA_SUCCESS);
}

TEST_F(Fake, DefaultPoolGrowsAndShrinksOnSync) {
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
  CUmemoryPool current = nullptr;
  ASSERT_EQ(cuDeviceGetMemPool(&current, 0), CUDA_SUCCESS);
  EXPECT_EQ(current, pool);
  ASSERT_EQ(reserved(pool), 0u);
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  cuuint64_t zero = 0;
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &zero), CUDA_SUCCESS);

  CUdeviceptr a = 0, b = 0, c = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, 3 * MiB, s), CUDA_SUCCESS);
  EXPECT_EQ(used(pool), 3 * MiB);
  EXPECT_EQ(reserved(pool), 4 * MiB);  // round_up(3 MiB, 2 MiB)
  EXPECT_EQ(charged(), base0_ + 4 * MiB);
  ASSERT_EQ(cuMemAllocAsync_ptsz(&b, MiB, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 4 * MiB);  // used 4 MiB still fits
  ASSERT_EQ(cuMemAllocAsync(&c, MiB + 1, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 6 * MiB);
  int ordinal = -1;
  ASSERT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, c),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 0);

  ASSERT_EQ(cuMemFreeAsync(a, s), CUDA_SUCCESS);
  EXPECT_EQ(used(pool), 2 * MiB + 1);
  EXPECT_EQ(reserved(pool), 6 * MiB);  // frees never shrink
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 4 * MiB);  // round_up(2 MiB + 1, 2 MiB)
  EXPECT_EQ(charged(), base0_ + 4 * MiB);

  // Release threshold: sync keeps max(round_up(used), round_up(threshold)).
  cuuint64_t threshold = 5 * MiB;
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync_ptsz(b, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(c, s), CUDA_SUCCESS);
  EXPECT_EQ(used(pool), 0u);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 4 * MiB);  // min(4, max(0, 6)) = 4
  // Trim ignores the threshold.
  ASSERT_EQ(cuMemPoolTrimTo(pool, 3 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 4 * MiB);  // round_up(3 MiB) = 4 MiB
  ASSERT_EQ(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 0u);
  EXPECT_EQ(charged(), base0_);

  EXPECT_EQ(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 6 * MiB);
  EXPECT_EQ(pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH), 5 * MiB + 1);
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero), CUDA_SUCCESS);
  EXPECT_EQ(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 0u);
  cuuint64_t nonzero = 1;
  EXPECT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &nonzero),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &zero), CUDA_SUCCESS);

  // Event synchronisation shrinks as well.
  ASSERT_EQ(cuMemAllocAsync(&a, MiB, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFreeAsync(a, s), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 2 * MiB);
  CUevent ev = nullptr;
  ASSERT_EQ(cuEventCreate(&ev, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(ev, s), CUDA_SUCCESS);
  ASSERT_EQ(cuEventSynchronize(ev), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 0u);
  EXPECT_EQ(cuEventDestroy(ev), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(Fake, PoolGrowthBeyondCapacityFailsCleanly) {
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
  const size_t room = kCapacity - charged();
  ASSERT_EQ(room % G, 0u);
  CUdeviceptr a = 0;
  ASSERT_EQ(cuMemAllocAsync(&a, room - MiB, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(charged(), kCapacity);
  CUdeviceptr b = 0;
  ASSERT_EQ(cuMemAllocAsync(&b, MiB, nullptr), CUDA_SUCCESS);  // inside the reserved slack
  CUdeviceptr c = 9;
  EXPECT_EQ(cuMemAllocAsync(&c, 1, nullptr), CUDA_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(c, 0u);
  EXPECT_EQ(used(pool), room);
  EXPECT_EQ(reserved(pool), room);
  ASSERT_EQ(cuMemFreeAsync(a, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemFree(b), CUDA_SUCCESS);  // cuMemFree accepts a pool allocation too
  EXPECT_EQ(used(pool), 0u);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 0u);
}

TEST_F(Fake, CustomPoolsAndDeviceRouting) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 1;
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  // Allocation from a device-1 pool through a device-0 stream lands on device 1.
  CUstream s0 = nullptr;
  ASSERT_EQ(cuStreamCreate(&s0, 0), CUDA_SUCCESS);
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&a, 5 * MiB, pool, s0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocFromPoolAsync_ptsz(&b, 2 * MiB, pool, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
  EXPECT_EQ(reserved(pool), 8 * MiB);
  EXPECT_EQ(charged(1), base1_ + 8 * MiB);
  EXPECT_EQ(charged(0), base0_);
  int ordinal = -1;
  ASSERT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 1);
  ASSERT_EQ(cuMemFreeAsync(b, s0), CUDA_SUCCESS);
  // Destroy releases the live allocation and every reserved byte.
  ASSERT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  EXPECT_EQ(charged(1), base1_);
  EXPECT_EQ(cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
  CUmemoryPool dflt = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&dflt, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPoolDestroy(dflt), CUDA_ERROR_INVALID_VALUE);

  // cuMemAllocAsync follows the stream's device and that device's current pool.
  ASSERT_EQ(cuCtxSetCurrent(ctx1_), CUDA_SUCCESS);
  CUstream s1 = nullptr;
  ASSERT_EQ(cuStreamCreate(&s1, 0), CUDA_SUCCESS);
  CUdevice sd = -1;
  ASSERT_EQ(cuStreamGetDevice(s1, &sd), CUDA_SUCCESS);
  EXPECT_EQ(sd, 1);
  CUcontext sc = nullptr;
  ASSERT_EQ(cuStreamGetCtx(s1, &sc), CUDA_SUCCESS);
  EXPECT_EQ(sc, ctx1_);
  ASSERT_EQ(cuCtxSetCurrent(ctx0_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamGetDevice_ptsz(CU_STREAM_PER_THREAD, &sd), CUDA_SUCCESS);
  EXPECT_EQ(sd, 0);
  props.location.id = 1;
  CUmemoryPool p1 = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&p1, &props), CUDA_SUCCESS);
  EXPECT_EQ(cuDeviceSetMemPool(0, p1), CUDA_ERROR_INVALID_VALUE);  // wrong device
  ASSERT_EQ(cuDeviceSetMemPool(1, p1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAllocAsync(&a, MiB, s1), CUDA_SUCCESS);
  EXPECT_EQ(used(p1), MiB);
  EXPECT_EQ(charged(1), base1_ + 2 * MiB);
  ASSERT_EQ(cuMemFreeAsync(a, s1), CUDA_SUCCESS);
  ASSERT_EQ(cuMemPoolDestroy(p1), CUDA_SUCCESS);
  CUmemoryPool cur = nullptr;
  ASSERT_EQ(cuDeviceGetMemPool(&cur, 1), CUDA_SUCCESS);
  CUmemoryPool d1 = nullptr;
  ASSERT_EQ(cuDeviceGetDefaultMemPool(&d1, 1), CUDA_SUCCESS);
  EXPECT_EQ(cur, d1);  // destroying the current pool falls back to the default
  EXPECT_EQ(cuStreamDestroy(s1), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(s0), CUDA_SUCCESS);
}

TEST_F(Fake, VmmReleaseWhileMappedAndMultiMappingUnmap) {
  const CUmemAllocationProp prop = vmm_prop(0);
  size_t gran = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
            CUDA_SUCCESS);
  EXPECT_EQ(gran, G);
  CUmemGenericAllocationHandle h = 0;
  EXPECT_EQ(cuMemCreate(&h, 3 * MiB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemCreate(&h, 4 * MiB, &prop, 0), CUDA_SUCCESS);
  EXPECT_EQ(charged(), base0_ + 4 * MiB);
  CUmemAllocationProp got{};
  ASSERT_EQ(cuMemGetAllocationPropertiesFromHandle(&got, h), CUDA_SUCCESS);
  EXPECT_EQ(got.location.id, 0);
  CUdeviceptr va = 0;
  ASSERT_EQ(cuMemAddressReserve(&va, 4 * MiB, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_GE(va, 0x7e0000000000ULL);
  EXPECT_EQ(va % G, 0u);
  ASSERT_EQ(cuMemMap(va, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  ASSERT_EQ(cuMemSetAccess(va, 4 * MiB, &access, 1), CUDA_SUCCESS);
  int ordinal = -1;
  ASSERT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + 100),
            CUDA_SUCCESS);
  EXPECT_EQ(ordinal, 0);
  ASSERT_EQ(cuMemRelease(h), CUDA_SUCCESS);
  EXPECT_EQ(charged(), base0_ + 4 * MiB);  // still mapped
  EXPECT_EQ(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemGetAllocationPropertiesFromHandle(&got, h), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuMemAddressFree(va, 4 * MiB), CUDA_ERROR_INVALID_VALUE);  // still mapped
  ASSERT_EQ(cuMemUnmap(va, 4 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(charged(), base0_);
  EXPECT_EQ(cuMemUnmap(va, 4 * MiB), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemAddressFree(va, 4 * MiB), CUDA_SUCCESS);

  // One handle in two mappings, one cuMemUnmap over both, on device 1.
  const CUmemAllocationProp prop1 = vmm_prop(1);
  ASSERT_EQ(cuMemCreate(&h, 8 * MiB, &prop1, 0), CUDA_SUCCESS);
  EXPECT_EQ(charged(1), base1_ + 8 * MiB);
  CUdeviceptr va2 = 0;
  ASSERT_EQ(cuMemAddressReserve(&va2, 16 * MiB, 0, 0, 0), CUDA_SUCCESS);
  EXPECT_GT(va2, va);  // bump allocator, never reused
  ASSERT_EQ(cuMemMap(va2, 4 * MiB, 0, h, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemMap(va2 + 4 * MiB, 4 * MiB, 4 * MiB, h, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuMemMap(va2 + 2 * MiB, 2 * MiB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);  // overlap
  EXPECT_EQ(cuMemMap(va2 + 8 * MiB, 4 * MiB, 6 * MiB, h, 0), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuMemRelease(h), CUDA_SUCCESS);
  EXPECT_EQ(cuMemUnmap(va2, 2 * MiB), CUDA_ERROR_INVALID_VALUE);  // partial mapping
  ASSERT_EQ(cuMemUnmap(va2, 16 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(charged(1), base1_);
  ASSERT_EQ(cuMemAddressFree(va2, 16 * MiB), CUDA_SUCCESS);
}

TEST_F(Fake, ArraysChargedByRequirementSize) {
  CUDA_ARRAY_DESCRIPTOR d2{};
  d2.Width = 1000;
  d2.Height = 300;
  d2.Format = CU_AD_FORMAT_FLOAT;
  d2.NumChannels = 4;
  CUarray a = nullptr;
  ASSERT_EQ(cuArrayCreate(&a, &d2), CUDA_SUCCESS);
  const size_t a_bytes = 74 * 65536;  // round_up(4*4*1000*300 = 4,800,000, 64 KiB)
  EXPECT_EQ(charged(), base0_ + a_bytes);
  CUDA_ARRAY_MEMORY_REQUIREMENTS req{};
  ASSERT_EQ(cuArrayGetMemoryRequirements(&req, a, 0), CUDA_SUCCESS);
  EXPECT_EQ(req.size, a_bytes);
  EXPECT_EQ(req.alignment, 65536u);

  CUDA_ARRAY3D_DESCRIPTOR d3{};
  d3.Width = 10;
  d3.Height = 0;
  d3.Depth = 0;
  d3.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  d3.NumChannels = 1;
  CUarray b = nullptr;
  ASSERT_EQ(cuArray3DCreate(&b, &d3), CUDA_SUCCESS);  // 10 bytes -> 64 KiB
  EXPECT_EQ(charged(), base0_ + a_bytes + 65536);

  CUDA_ARRAY3D_DESCRIPTOR dm{};
  dm.Width = 256;
  dm.Height = 256;
  dm.Format = CU_AD_FORMAT_HALF;
  dm.NumChannels = 2;
  CUmipmappedArray m = nullptr;
  EXPECT_EQ(cuMipmappedArrayCreate(&m, &dm, 10), CUDA_ERROR_INVALID_VALUE);  // > 9 levels
  ASSERT_EQ(cuMipmappedArrayCreate(&m, &dm, 9), CUDA_SUCCESS);
  // 4 bytes * (4^9 - 1) / 3 texels = 349,524 -> 6 * 64 KiB
  ASSERT_EQ(cuMipmappedArrayGetMemoryRequirements(&req, m, 0), CUDA_SUCCESS);
  EXPECT_EQ(req.size, 6u * 65536);
  EXPECT_EQ(charged(), base0_ + a_bytes + 65536 + 6 * 65536);

  EXPECT_EQ(cuArrayDestroy(a), CUDA_SUCCESS);
  EXPECT_EQ(cuArrayDestroy(b), CUDA_SUCCESS);
  EXPECT_EQ(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
  EXPECT_EQ(charged(), base0_);
}

TEST_F(Fake, ProcAddressRoutesToExactExports) {
  auto v2 = reinterpret_cast<GetProcV2>(sym("cuGetProcAddress_v2"));
  auto v1 = reinterpret_cast<GetProcV1>(sym("cuGetProcAddress"));
  ASSERT_NE(v2, nullptr);
  ASSERT_NE(v1, nullptr);
  EXPECT_NE(reinterpret_cast<void*>(v1), reinterpret_cast<void*>(v2));

  struct Case {
    const char* base;
    int version;
    cuuint64_t flags;
    const char* exported;
  };
  const Case cases[] = {
      {"cuMemAlloc", 13000, 0, "cuMemAlloc_v2"},
      {"cuMemAlloc", 13000, 2, "cuMemAlloc_v2"},
      {"cuMemFree", 3020, 0, "cuMemFree_v2"},
      {"cuMemGetInfo", 12000, 0, "cuMemGetInfo_v2"},
      {"cuArrayCreate", 12000, 0, "cuArrayCreate_v2"},
      {"cuArray3DCreate", 12000, 0, "cuArray3DCreate_v2"},
      {"cuStreamDestroy", 12000, 0, "cuStreamDestroy_v2"},
      {"cuCtxPopCurrent", 4000, 0, "cuCtxPopCurrent_v2"},
      {"cuDevicePrimaryCtxRelease", 13000, 0, "cuDevicePrimaryCtxRelease_v2"},
      {"cuDevicePrimaryCtxRelease", 10020, 0, "cuDevicePrimaryCtxRelease"},
      {"cuMemAllocAsync", 13000, 0, "cuMemAllocAsync"},
      {"cuMemAllocAsync", 13000, 2, "cuMemAllocAsync_ptsz"},
      {"cuMemAllocAsync", 13000, 1, "cuMemAllocAsync"},
      {"cuMemFreeAsync", 13000, 2, "cuMemFreeAsync_ptsz"},
      {"cuMemAllocFromPoolAsync", 13000, 2, "cuMemAllocFromPoolAsync_ptsz"},
      {"cuStreamSynchronize", 13000, 2, "cuStreamSynchronize_ptsz"},
      {"cuStreamSynchronize", 13000, 0, "cuStreamSynchronize"},
      {"cuStreamGetDevice", 13000, 2, "cuStreamGetDevice_ptsz"},
      {"cuMemCreate", 12000, 2, "cuMemCreate"},
      {"cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2"},
      {"cuGetProcAddress", 13000, 2, "cuGetProcAddress_v2"},
      {"cuGetProcAddress", 11030, 0, "cuGetProcAddress"},
      {"cuMipmappedArrayGetMemoryRequirements", 13000, 0, "cuMipmappedArrayGetMemoryRequirements"},
      // CUDA 13 / 12.5 ABIs and the other per-thread exports, as the real driver 580 hands out
      {"cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2"},
      {"cuCtxSynchronize", 12090, 2, "cuCtxSynchronize"},
      {"cuCtxGetDevice", 13000, 2, "cuCtxGetDevice_v2"},
      {"cuCtxGetDevice", 12000, 0, "cuCtxGetDevice"},
      {"cuStreamGetCtx", 13000, 0, "cuStreamGetCtx_v2"},
      {"cuStreamGetCtx", 13000, 2, "cuStreamGetCtx_v2_ptsz"},
      {"cuStreamGetCtx", 12040, 0, "cuStreamGetCtx"},
      {"cuStreamGetCtx", 12040, 2, "cuStreamGetCtx_ptsz"},
      {"cuEventRecord", 13000, 2, "cuEventRecord_ptsz"},
      {"cuEventRecord", 13000, 0, "cuEventRecord"},
      {"cuEventSynchronize", 13000, 2, "cuEventSynchronize"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.base) + " v" + std::to_string(c.version) + " flags " +
                 std::to_string(c.flags));
    void* expected = sym(c.exported);
    ASSERT_NE(expected, nullptr);
    void* got = nullptr;
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    ASSERT_EQ(v2(c.base, &got, c.version, c.flags, &st), CUDA_SUCCESS);
    EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SUCCESS);
    EXPECT_EQ(got, expected);
    void* got1 = nullptr;
    ASSERT_EQ(v1(c.base, &got1, c.version, c.flags), CUDA_SUCCESS);
    EXPECT_EQ(got1, expected);
    void* got_nostatus = nullptr;
    ASSERT_EQ(v2(c.base, &got_nostatus, c.version, c.flags, nullptr), CUDA_SUCCESS);
    EXPECT_EQ(got_nostatus, expected);
  }
  // The pointers are the same functions a direct call reaches.
  void* p = nullptr;
  ASSERT_EQ(v2("cuMemAlloc", &p, 13000, 0, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(p, reinterpret_cast<void*>(&cuMemAlloc_v2));

  // As the real driver 580: _v2 reports failures through the status with CUDA_SUCCESS and
  // *pfn = NULL; the old 4-argument ABI returns CUDA_ERROR_NOT_FOUND and leaves *pfn alone.
  void* got = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(v2("cuNoSuchFunction", &got, 13000, 0, &st), CUDA_SUCCESS);
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  got = reinterpret_cast<void*>(1);
  EXPECT_EQ(v2("cuMemAlloc_v2", &got, 13000, 0, &st), CUDA_SUCCESS);  // base names only
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  got = reinterpret_cast<void*>(1);
  EXPECT_EQ(v2("cuMemAllocAsync", &got, 11000, 2, &st), CUDA_SUCCESS);
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(v2("cuGetProcAddress", &got, 11020, 0, &st), CUDA_SUCCESS);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  // Under flags 2 a name with _ptsz variants never falls back to its legacy-stream export.
  got = reinterpret_cast<void*>(1);
  EXPECT_EQ(v2("cuStreamSynchronize", &got, 6000, 2, &st), CUDA_SUCCESS);
  EXPECT_EQ(got, nullptr);
  EXPECT_EQ(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  EXPECT_EQ(v2("cuStreamSynchronize", &got, 6000, 0, &st), CUDA_SUCCESS);
  EXPECT_EQ(got, sym("cuStreamSynchronize"));
  EXPECT_EQ(v2("cuNoSuchFunction", &got, 13000, 0, nullptr), CUDA_SUCCESS);
  got = reinterpret_cast<void*>(1);
  EXPECT_EQ(v1("cuNoSuchFunction", &got, 13000, 0), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(got, reinterpret_cast<void*>(1));
  EXPECT_EQ(v1("cuMemAlloc", &got, 3000, 0), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(got, reinterpret_cast<void*>(1));
  // A version above the driver's (13000) or unknown flags: CUDA_ERROR_INVALID_VALUE, untouched.
  st = static_cast<CUdriverProcAddressQueryResult>(77);
  EXPECT_EQ(v2("cuMemAlloc", &got, 13010, 0, &st), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(got, reinterpret_cast<void*>(1));
  EXPECT_EQ(static_cast<int>(st), 77);
  EXPECT_EQ(v1("cuMemAlloc", &got, 14000, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(v2("cuMemAlloc", &got, 13000, 4, &st), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(got, reinterpret_cast<void*>(1));
}

// Every answer of the real driver 580 recorded in reference/proc_address_driver580.txt and
// reference/proc_address_graph_driver580.txt must be reproduced, except the pre-_v2 legacy
// exports the fake does not have (it answers "not available" there). The files list the
// versions where an answer changes; every version of the finer list is checked against the
// latest change at or below it.
TEST_F(Fake, ProcAddressMatchesRealDriverReference) {
  std::ifstream base(FAKECUDA_REFERENCE_DIR "/proc_address_driver580.txt");
  std::ifstream graph(FAKECUDA_REFERENCE_DIR "/proc_address_graph_driver580.txt");
  ASSERT_TRUE(base.good());
  ASSERT_TRUE(graph.good());
  std::stringstream both;
  both << base.rdbuf() << graph.rdbuf();
  std::istream& in = both;
  auto v2 = reinterpret_cast<GetProcV2>(sym("cuGetProcAddress_v2"));
  const int versions[] = {2000,  3000,  3020,  4000,  6000,  7000,  9020,  10000,
                          10010, 10020, 11000, 11010, 11020, 11030, 11040, 11060,
                          12000, 12020, 12030, 12050, 12080, 13000};
  int lines = 0;
  int legacy_skipped = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    ++lines;
    std::istringstream words(line);
    std::string name;
    words >> name;
    name.pop_back();  // trailing ':'
    int flags = -1;
    std::map<int, std::string> changes;  // version -> answer, per flags
    std::map<int, std::map<int, std::string>> by_flags;
    std::string w;
    while (words >> w) {
      if (w == "[f0]" || w == "[f2]") {
        flags = w[2] - '0';
        continue;
      }
      const auto colon = w.find(':');
      by_flags[flags][std::stoi(w.substr(0, colon))] = w.substr(colon + 1);
    }
    for (const auto& [f, table] : by_flags) {
      for (int v : versions) {
        auto it = table.upper_bound(v);
        ASSERT_NE(it, table.begin()) << name;
        const std::string expected = std::prev(it)->second;
        void* p = nullptr;
        CUdriverProcAddressQueryResult st{};
        ASSERT_EQ(v2(name.c_str(), &p, v, static_cast<cuuint64_t>(f), &st), CUDA_SUCCESS);
        std::string got = "(nil)?";
        Dl_info info{};
        if (p != nullptr && dladdr(p, &info) != 0 && info.dli_sname != nullptr) got = info.dli_sname;
        if (got == "(nil)?" && expected != "(nil)?" && sym(expected.c_str()) == nullptr) {
          ++legacy_skipped;  // a legacy ABI the fake does not export
          continue;
        }
        EXPECT_EQ(got, expected) << name << " version " << v << " flags " << f;
      }
    }
  }
  EXPECT_GE(lines, 60 + 33);
  EXPECT_GT(legacy_skipped, 0);
}

TEST_F(Fake, Cuda13ContextAbis) {
  CUdevice d = -1;
  ASSERT_EQ(cuCtxGetDevice_v2(&d, ctx1_), CUDA_SUCCESS);
  EXPECT_EQ(d, 1);
  ASSERT_EQ(cuCtxGetDevice_v2(&d, nullptr), CUDA_SUCCESS);  // NULL = current
  EXPECT_EQ(d, 0);
  EXPECT_EQ(cuCtxSynchronize_v2(ctx1_), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize_v2(reinterpret_cast<CUcontext>(&d)), CUDA_ERROR_INVALID_CONTEXT);
  std::thread t([] {
    CUdevice dd = -1;
    EXPECT_EQ(cuCtxGetDevice_v2(&dd, nullptr), CUDA_ERROR_INVALID_CONTEXT);
    EXPECT_EQ(cuCtxSynchronize_v2(nullptr), CUDA_ERROR_INVALID_CONTEXT);
  });
  t.join();
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  CUcontext c = nullptr;
  CUgreenCtx g = reinterpret_cast<CUgreenCtx>(1);
  ASSERT_EQ(cuStreamGetCtx_v2(s, &c, &g), CUDA_SUCCESS);
  EXPECT_EQ(c, ctx0_);
  EXPECT_EQ(g, nullptr);
  ASSERT_EQ(cuStreamGetCtx_v2_ptsz(CU_STREAM_PER_THREAD, &c, &g), CUDA_SUCCESS);
  EXPECT_EQ(c, ctx0_);
  CUevent ev = nullptr;
  ASSERT_EQ(cuEventCreate(&ev, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuEventRecord_ptsz(ev, s), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(ev), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(Fake, FreeAsyncEdgeCases) {
  EXPECT_EQ(cuMemFreeAsync(0, nullptr), CUDA_SUCCESS);  // no-op, as the real driver
  CUdeviceptr m = 0;
  ASSERT_EQ(cuMemAllocManaged(&m, MiB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeAsync(m, nullptr), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuMemFree(m), CUDA_SUCCESS);
  CUdeviceptr l = 0;
  ASSERT_EQ(cuMemAlloc(&l, MiB), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeAsync(l, nullptr), CUDA_SUCCESS);  // linear memory is accepted
  EXPECT_EQ(charged(), base0_);
}

TEST_F(Fake, UntrackedHookIsAnOrdinaryLinearAllocation) {
  unsigned long long p = 0;
  ASSERT_EQ(fakecuda_alloc_untracked(&p, 2 * MiB), CUDA_SUCCESS);
  EXPECT_EQ(charged(), base0_ + 2 * MiB);
  EXPECT_EQ(cuMemFree(static_cast<CUdeviceptr>(p)), CUDA_SUCCESS);
  EXPECT_EQ(charged(), base0_);
  EXPECT_EQ(fakecuda_charged_bytes(7), 0u);
}

TEST_F(Fake, StreamsAndEventsValidateHandles) {
  CUstream s = nullptr;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuStreamSynchronize(CU_STREAM_LEGACY), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize_ptsz(nullptr), CUDA_SUCCESS);
  CUevent ev = nullptr;
  ASSERT_EQ(cuEventCreate(&ev, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuEventRecord(ev, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuEventSynchronize(ev), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(ev), CUDA_SUCCESS);
  EXPECT_EQ(cuEventSynchronize(ev), CUDA_ERROR_INVALID_HANDLE);
}

}  // namespace

int main(int argc, char** argv) {
  setenv("FAKE_CUDA_DEVICES", "2", 1);
  setenv("FAKE_CUDA_CAPACITY", "1G", 1);
  CUdeviceptr p = 5;
  g_alloc_before_init = cuMemAlloc(&p, 16);
  g_alloc_before_init_zeroed = (p == 0);
  CUcontext c = nullptr;
  g_ctx_before_init = cuCtxGetCurrent(&c);
  g_version_before_init = cuDriverGetVersion(&g_version_value);
  void* fn = nullptr;
  g_proc_before_init = cuGetProcAddress("cuInit", &fn, 13000, 0, nullptr);
  if (cuInit(0) != CUDA_SUCCESS) return 2;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
