// Virtual memory management workload: cuMemCreate / cuMemAddressReserve / cuMemMap /
// cuMemSetAccess / cuMemUnmap / cuMemRelease, fetched the way PyTorch's expandable segments fetch
// them (cudaGetDriverEntryPointByVersion, version 12000, which goes through cuGetProcAddress).
// Sizes are multiples of the allocation granularity g. Accounting (docs/design.md §Accounting): allocated
// = mapped bytes, reserved = physical bytes created and not yet released, where a handle released
// while still mapped stays physical until its last mapping goes.
//
//   create A=4g, B=2g                         physical 6g
//   map A@0, B@4g, B@8g (B mapped twice)      mapped 8g  (peak; allocated > reserved here)
//   release A while mapped                    physical stays 6g
//   one cuMemUnmap over [0, 6g) (A and B@4g)  mapped 2g, physical 2g (A gone)
//   create C=1g, map C@0                      mapped 3g, physical 3g
//   unmap B@8g, release B                     mapped 1g, physical 1g  (C stays live at exit)
#include <cuda.h>
#include <cuda_runtime.h>
#include "truth.h"

#define DRIVER_FN(name) static decltype(&name) p_##name = nullptr
DRIVER_FN(cuMemGetAllocationGranularity);
DRIVER_FN(cuMemCreate);
DRIVER_FN(cuMemRelease);
DRIVER_FN(cuMemAddressReserve);
DRIVER_FN(cuMemMap);
DRIVER_FN(cuMemUnmap);
DRIVER_FN(cuMemSetAccess);

int main() {
  truth::Writer w("vmm");
  truth::Device d;
  auto rt = [&](cudaError_t e, const char* what) {
    if (e != cudaSuccess) w.error("%s: %s", what, cudaGetErrorName(e));
    return e == cudaSuccess;
  };
  auto drv = [&](CUresult r, const char* what) {
    if (r != CUDA_SUCCESS) w.error("%s: CUresult %d", what, (int)r);
    return r == CUDA_SUCCESS;
  };
  if (!rt(cudaSetDevice(0), "cudaSetDevice")) return w.finish();
  cudaDeviceProp prop{};
  rt(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  const uint64_t total = prop.totalGlobalMem;

  bool resolved = true;
  auto get = [&](const char* name, void** fn) {
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !*fn) {
      w.error("cannot resolve %s", name);
      resolved = false;
    }
  };
#define GET(name) get(#name, reinterpret_cast<void**>(&p_##name))
  GET(cuMemGetAllocationGranularity); GET(cuMemCreate); GET(cuMemRelease);
  GET(cuMemAddressReserve); GET(cuMemMap); GET(cuMemUnmap); GET(cuMemSetAccess);
  if (!resolved) return w.finish();

  CUmemAllocationProp ap{};
  ap.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  ap.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  ap.location.id = 0;
  size_t g = 0;
  if (!drv(p_cuMemGetAllocationGranularity(&g, &ap, CU_MEM_ALLOC_GRANULARITY_MINIMUM), "granularity"))
    return w.finish();
  w.info("granularity", g);

  // A physical allocation larger than the device: counted as one failed allocation on device 0.
  CUmemGenericAllocationHandle hbig;
  CUresult r = p_cuMemCreate(&hbig, (2 * total + g - 1) / g * g, &ap, 0);
  if (r == CUDA_SUCCESS) { w.error("cuMemCreate(2 x total) succeeded"); p_cuMemRelease(hbig); }
  else d.failed++;
  w.info("failed_create_result", (uint64_t)r);

  auto create = [&](CUmemGenericAllocationHandle* h, uint64_t size) {
    if (!drv(p_cuMemCreate(h, size, &ap, 0), "cuMemCreate")) return false;
    d.vmm_phys.add(size);
    d.update();
    return true;
  };
  CUdeviceptr va = 0;
  if (!drv(p_cuMemAddressReserve(&va, 16 * g, 0, 0, 0), "cuMemAddressReserve")) return w.finish();
  auto map = [&](uint64_t off, uint64_t size, CUmemGenericAllocationHandle h) {
    if (!drv(p_cuMemMap(va + off, size, 0, h, 0), "cuMemMap")) return;
    CUmemAccessDesc acc{};
    acc.location = ap.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    drv(p_cuMemSetAccess(va + off, size, &acc, 1), "cuMemSetAccess");
    rt(cudaMemset(reinterpret_cast<void*>(va + off), 0, size), "cudaMemset");
    d.vmm_mapped.cur += size;  // mappings are not creates: only the bytes move
    d.vmm_mapped.peak = std::max(d.vmm_mapped.peak, d.vmm_mapped.cur);
    d.update();
  };
  auto unmap = [&](uint64_t off, uint64_t size) {
    CUresult u = p_cuMemUnmap(va + off, size);
    if (u == CUDA_SUCCESS) { d.vmm_mapped.cur -= size; d.update(); }
    return u;
  };

  CUmemGenericAllocationHandle A, B, C;
  if (!create(&A, 4 * g) || !create(&B, 2 * g)) return w.finish();
  map(0, 4 * g, A);
  map(4 * g, 2 * g, B);
  map(8 * g, 2 * g, B);
  rt(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  // Release while mapped: the handle count drops, the physical bytes stay until the unmap.
  if (drv(p_cuMemRelease(A), "cuMemRelease(A) while mapped")) d.vmm_phys.frees++;

  // One unmap covering two mappings (A@0 and B@4g). Should the driver refuse a range spanning
  // two mappings, fall back to one call each and say so: the expected figures are the same.
  r = unmap(0, 6 * g);
  w.info("single_unmap_of_two_mappings_result", (uint64_t)r);
  if (r != CUDA_SUCCESS) {
    drv(unmap(0, 4 * g), "cuMemUnmap(A)");
    drv(unmap(4 * g, 2 * g), "cuMemUnmap(B@4g)");
  }
  d.vmm_phys.cur -= 4 * g;  // A: released and now unmapped, so its physical bytes are gone
  d.update();

  if (create(&C, 1 * g)) map(0, 1 * g, C);
  drv(unmap(8 * g, 2 * g), "cuMemUnmap(B@8g)");
  if (drv(p_cuMemRelease(B), "cuMemRelease(B)")) { d.vmm_phys.sub(2 * g); d.update(); }
  rt(cudaDeviceSynchronize(), "cudaDeviceSynchronize");

  // C stays created and mapped: vmm current 1g, physical 1g, one live handle.
  w.device_checks(d, total);
  w.exact("dev0.by_kind.vmm.peak", d.vmm_mapped.peak);
  w.exact("dev0.by_kind.vmm.current", d.vmm_mapped.cur);
  w.exact("dev0.by_kind.vmm.allocs", d.vmm_phys.allocs);
  w.exact("dev0.by_kind.vmm.frees", d.vmm_phys.frees);
  w.exact("dev0.by_kind.vmm.physical.peak", d.vmm_phys.peak);
  w.exact("dev0.by_kind.vmm.physical.current", d.vmm_phys.cur);
  w.exact("live_at_exit.count", 1);
  w.exact("live_at_exit.bytes", 1 * g);
  return w.finish();
}
