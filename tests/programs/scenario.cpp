// The scenario every scenario program runs (see scenario_expected.h for the step list and the
// numbers a profiler must report). Every driver call's result is checked; any unexpected result
// throws and the program exits 1 after printing what failed.
#include "scenario.h"

#include <cstdio>
#include <cstring>

#include "check.h"
#include "scenario_expected.h"

namespace gmp {

namespace {

using namespace gmp::scenario;

std::uint64_t pool_attr(const DriverTable& t, CUmemoryPool pool, CUmemPool_attribute attr) {
  cuuint64_t v = ~0ULL;
  CK(t.cuMemPoolGetAttribute(pool, attr, &v));
  return v;
}

void expect_pool_reserved(const DriverTable& t, CUmemoryPool pool, std::uint64_t want,
                          int line) {
  const std::uint64_t got = pool_attr(t, pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT);
  check_true(got == want, "pool RESERVED_MEM_CURRENT", __FILE__, line,
             std::to_string(got) + " vs expected " + std::to_string(want));
}
#define EXPECT_RESERVED(pool, want) expect_pool_reserved(t, (pool), (want), __LINE__)

std::uint64_t driver_in_use(const DriverTable& t) {
  size_t free_b = 0;
  size_t total = 0;
  CK(t.cuMemGetInfo_v2(&free_b, &total));
  CHECK(free_b <= total);
  return total - free_b;
}

void run(const DriverTable& t) {
  CHECK(t.fakecuda_alloc_untracked != nullptr);

  // ---- setup ----
  CK(t.cuInit(0));
  int version = 0;
  CK(t.cuDriverGetVersion(&version));
  CHECK(version >= 12000);
  int count = 0;
  CK(t.cuDeviceGetCount(&count));
  CHECK(count >= 1);
  CUdevice dev = -1;
  CK(t.cuDeviceGet(&dev, kDevice));
  char name[128] = {};
  CK(t.cuDeviceGetName(name, sizeof name, dev));
  size_t total = 0;
  CK(t.cuDeviceTotalMem_v2(&total, dev));
  CHECK(total < kFailedRequest);  // the 1 TiB request must fail
  CHECK(total >= 64 * MiB);       // the scenario needs 24 MiB at its peak
  CUcontext ctx = nullptr;
  CK(t.cuDevicePrimaryCtxRetain(&ctx, dev));
  CK(t.cuCtxSetCurrent(ctx));
  CUcontext cur = nullptr;
  CK(t.cuCtxGetCurrent(&cur));
  CHECK(cur == ctx);
  CUdevice ctx_dev = -1;
  CK(t.cuCtxGetDevice_v2(&ctx_dev, nullptr));
  CHECK_EQ(ctx_dev, kDevice);
  const std::uint64_t in_use_before = driver_in_use(t);

  // ---- linear (steps 1-5) ----
  CUdeviceptr l1 = 0, l2 = 0, l3 = 0;
  CK(t.cuMemAlloc_v2(&l1, kLinear1));
  CK(t.cuMemAlloc_v2(&l2, kLinear2));
  size_t pitch = 0;
  CK(t.cuMemAllocPitch_v2(&l3, &pitch, kPitchWidth, kPitchHeight, kPitchElement));
  CHECK_EQ(pitch, kPitch);
  CHECK(l1 != 0 && l2 != 0 && l3 != 0);
  int ordinal = -1;
  CK(t.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, l2));
  CHECK_EQ(ordinal, kDevice);
  CHECK_EQ(driver_in_use(t) - in_use_before, kLinear1 + kLinear2 + kPitchBytes);
  CK(t.cuMemFree_v2(l2));
  CK(t.cuMemFree_v2(l3));

  // ---- managed (steps 6-7) ----
  CUdeviceptr m = 0;
  CK(t.cuMemAllocManaged(&m, kManaged, CU_MEM_ATTACH_GLOBAL));
  CHECK(m != 0);
  CK(t.cuMemFree_v2(m));

  // ---- stream-ordered allocator (steps 8-20) ----
  CUstream s = nullptr;
  CK(t.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CUdevice sdev = -1;
  CK(t.cuStreamGetDevice(s, &sdev));
  CHECK_EQ(sdev, kDevice);
  CUcontext sctx = nullptr;
  CUgreenCtx green = nullptr;
  CK(t.cuStreamGetCtx_v2(s, &sctx, &green));
  CHECK(sctx == ctx);
  CHECK(green == nullptr);
  CUmemoryPool dp = nullptr;
  CK(t.cuDeviceGetDefaultMemPool(&dp, dev));
  CUmemoryPool current_pool = nullptr;
  CK(t.cuDeviceGetMemPool(&current_pool, dev));
  CHECK(current_pool == dp);
  EXPECT_RESERVED(dp, 0);

  CUdeviceptr p1 = 0, p2 = 0, q1 = 0, q2 = 0;
  CK(t.cuMemAllocAsync(&p1, kPoolP1, s));  // step 9
  EXPECT_RESERVED(dp, 4 * MiB);
  CK(t.cuMemAllocAsync(&p2, kPoolP2, s));  // step 10
  EXPECT_RESERVED(dp, 8 * MiB);

  CUmemPoolProps props;
  std::memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = dev;
  CUmemoryPool cp = nullptr;
  CK(t.cuMemPoolCreate(&cp, &props));  // step 11
  cuuint64_t threshold = kCustomPoolThreshold;
  CK(t.cuMemPoolSetAttribute(cp, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold));
  EXPECT_RESERVED(cp, 0);
  CK(t.cuMemAllocFromPoolAsync(&q1, kPoolQ1, cp, s));  // step 12
  EXPECT_RESERVED(cp, 6 * MiB);
  CK(t.cuMemAllocFromPoolAsync(&q2, kPoolQ2, cp, s));  // step 13: the peak
  EXPECT_RESERVED(cp, 8 * MiB);
  CK(t.cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, q2));
  CHECK_EQ(ordinal, kDevice);
  CHECK_EQ(driver_in_use(t) - in_use_before, kDeviceReserved.peak);

  CK(t.cuMemFreeAsync(p1, s));  // step 14
  CK(t.cuMemFreeAsync(q1, s));  // step 15
  EXPECT_RESERVED(dp, 8 * MiB);
  EXPECT_RESERVED(cp, 8 * MiB);
  CK(t.cuStreamSynchronize(s));  // step 16
  EXPECT_RESERVED(dp, 6 * MiB);
  EXPECT_RESERVED(cp, 8 * MiB);
  CK(t.cuMemFreeAsync(p2, s));  // step 17
  EXPECT_RESERVED(dp, 6 * MiB);
  CK(t.cuMemPoolTrimTo(cp, 0));  // step 18
  EXPECT_RESERVED(cp, 2 * MiB);
  CUevent ev = nullptr;
  CK(t.cuEventCreate(&ev, 0));
  CK(t.cuEventRecord(ev, s));
  CK(t.cuEventSynchronize(ev));  // step 19
  EXPECT_RESERVED(dp, 0);
  EXPECT_RESERVED(cp, 2 * MiB);
  CK(t.cuEventDestroy_v2(ev));
  CHECK_EQ(pool_attr(t, dp, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), kDefaultPoolReservedHigh);
  CHECK_EQ(pool_attr(t, dp, CU_MEMPOOL_ATTR_USED_MEM_HIGH), kDefaultPoolUsedHigh);
  CHECK_EQ(pool_attr(t, cp, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), kCustomPoolReservedHigh);
  CHECK_EQ(pool_attr(t, cp, CU_MEMPOOL_ATTR_USED_MEM_HIGH), kCustomPoolUsedHigh);
  CHECK_EQ(pool_attr(t, cp, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), kPoolQ2);
  CK(t.cuMemPoolDestroy(cp));  // step 20: q2 still live inside
  CHECK_EQ(driver_in_use(t) - in_use_before, kLinear1);

  // ---- VMM (steps 21-30) ----
  CUmemAllocationProp prop;
  std::memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  size_t gran = 0;
  CK(t.cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK_EQ(gran, 2 * MiB);
  CUmemAccessDesc access;
  std::memset(&access, 0, sizeof access);
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;

  CUmemGenericAllocationHandle h1 = 0;
  CK(t.cuMemCreate(&h1, kVmmH1, &prop, 0));  // step 21
  CUmemAllocationProp got_prop;
  std::memset(&got_prop, 0, sizeof got_prop);
  CK(t.cuMemGetAllocationPropertiesFromHandle(&got_prop, h1));
  CHECK_EQ(got_prop.location.id, dev);
  CUdeviceptr va1 = 0;
  CK(t.cuMemAddressReserve(&va1, kVmmH1, 0, 0, 0));  // step 22
  CK(t.cuMemMap(va1, kVmmH1, 0, h1, 0));
  CK(t.cuMemSetAccess(va1, kVmmH1, &access, 1));
  CK(t.cuMemRelease(h1));  // step 23: released while mapped
  CHECK_EQ(driver_in_use(t) - in_use_before, kLinear1 + kVmmH1);
  CK(t.cuMemUnmap(va1, kVmmH1));  // step 24
  CHECK_EQ(driver_in_use(t) - in_use_before, kLinear1);
  CK(t.cuMemAddressFree(va1, kVmmH1));  // step 25

  CUmemGenericAllocationHandle h2 = 0;
  CK(t.cuMemCreate(&h2, kVmmH2, &prop, 0));  // step 26
  CUdeviceptr va2 = 0;
  CK(t.cuMemAddressReserve(&va2, kVmmH2, 0, 0, 0));  // step 27
  CK(t.cuMemMap(va2, kVmmH2 / 2, 0, h2, 0));
  CK(t.cuMemMap(va2 + kVmmH2 / 2, kVmmH2 / 2, kVmmH2 / 2, h2, 0));
  CK(t.cuMemSetAccess(va2, kVmmH2, &access, 1));
  CK(t.cuMemUnmap(va2, kVmmH2));  // step 28: one call, two mappings
  CHECK_EQ(driver_in_use(t) - in_use_before, kLinear1 + kVmmH2);
  CK(t.cuMemRelease(h2));  // step 29
  CK(t.cuMemAddressFree(va2, kVmmH2));  // step 30
  CK(t.cuCtxSynchronize_v2(ctx));
  CHECK_EQ(driver_in_use(t) - in_use_before, kLinear1);

  // ---- arrays (steps 31-34) ----
  CUDA_ARRAY_DESCRIPTOR d2;
  std::memset(&d2, 0, sizeof d2);
  d2.Width = 1000;
  d2.Height = 300;
  d2.Format = CU_AD_FORMAT_FLOAT;
  d2.NumChannels = 4;
  CUarray a1 = nullptr;
  CK(t.cuArrayCreate_v2(&a1, &d2));  // step 31
  CUDA_ARRAY_MEMORY_REQUIREMENTS req;
  std::memset(&req, 0, sizeof req);
  CK(t.cuArrayGetMemoryRequirements(&req, a1, dev));
  CHECK_EQ(req.size, kArray1Bytes);

  CUDA_ARRAY3D_DESCRIPTOR d3;
  std::memset(&d3, 0, sizeof d3);
  d3.Width = 64;
  d3.Height = 64;
  d3.Depth = 64;
  d3.Format = CU_AD_FORMAT_UNSIGNED_INT8;
  d3.NumChannels = 1;
  CUarray a2 = nullptr;
  CK(t.cuArray3DCreate_v2(&a2, &d3));  // step 32
  CK(t.cuArrayGetMemoryRequirements(&req, a2, dev));
  CHECK_EQ(req.size, kArray2Bytes);

  CUDA_ARRAY3D_DESCRIPTOR dm;
  std::memset(&dm, 0, sizeof dm);
  dm.Width = 256;
  dm.Height = 256;
  dm.Depth = 0;
  dm.Format = CU_AD_FORMAT_HALF;
  dm.NumChannels = 2;
  CUmipmappedArray ma = nullptr;
  CK(t.cuMipmappedArrayCreate(&ma, &dm, 9));  // step 33
  CK(t.cuMipmappedArrayGetMemoryRequirements(&req, ma, dev));
  CHECK_EQ(req.size, kMipmapBytes);
  CHECK_EQ(driver_in_use(t) - in_use_before, kLinear1 + kArray.peak);
  CK(t.cuArrayDestroy(a1));  // step 34
  CK(t.cuArrayDestroy(a2));
  CK(t.cuMipmappedArrayDestroy(ma));

  // ---- pinned host memory (step 35) ----
  void* ha = nullptr;
  void* hb = nullptr;
  CK(t.cuMemHostAlloc(&ha, kPinnedA, CU_MEMHOSTALLOC_PORTABLE));
  CK(t.cuMemAllocHost_v2(&hb, kPinnedB));
  CHECK(ha != nullptr && hb != nullptr);
  CK(t.cuMemFreeHost(ha));  // hb stays live

  // ---- failed allocation (step 36) ----
  CUdeviceptr huge = 0xdead;
  CK_EQ(t.cuMemAlloc_v2(&huge, kFailedRequest), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_EQ(huge, 0ULL);

  // ---- unknown free (step 37) ----
  unsigned long long untracked = 0;
  CK(t.fakecuda_alloc_untracked(&untracked, kUntracked));
  CHECK(untracked != 0);
  CK(t.cuMemFree_v2(static_cast<CUdeviceptr>(untracked)));

  // ---- end (step 38) ----
  CK(t.cuStreamDestroy_v2(s));
  CHECK_EQ(driver_in_use(t) - in_use_before, kDriverInUseAtExit);
}

}  // namespace

int run_scenario(const DriverTable& t) {
  try {
    run(t);
  } catch (const CheckFailure& e) {
    std::fprintf(stderr, "scenario[%s]: FAILED: %s\n", t.how, e.what());
    return 1;
  }
  std::printf("scenario[%s]: OK\n", t.how);
  std::fflush(stdout);
  return 0;
}

}  // namespace gmp
