// cuInit, driver version and device queries.
#include "fake_state.h"

#include <algorithm>
#include <climits>

#include <cstdio>

using namespace fakecuda;

extern "C" {

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  Lock lock(state().mu);
  State& s = state();
  if (s.initialized) return CUDA_SUCCESS;
  const int count = config_device_count();
  const size_t capacity = config_capacity();
  s.devices.resize(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    Device& d = s.devices[static_cast<size_t>(i)];
    d.capacity = capacity;
    d.primary = new CUctx_st{i, 0};
  }
  create_default_pools_locked();
  s.initialized = true;
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* driverVersion) {
  maybe_raise("cuDriverGetVersion");
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  FAKE_REQUIRE_INIT(lock);
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  FAKE_REQUIRE_INIT(lock);
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(state().devices.size());
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  FAKE_REQUIRE_INIT(lock);
  if (name == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(name, static_cast<size_t>(len), "Fake CUDA Device %d", dev);
  return CUDA_SUCCESS;
}

// Bus N for device N, in the driver's "domain:bus:device.function" form.
CUresult cuDeviceGetPCIBusId(char* pci_bus_id, int len, CUdevice dev) {
  FAKE_REQUIRE_INIT(lock);
  if (pci_bus_id == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  std::snprintf(pci_bus_id, static_cast<size_t>(len), "0000:%02X:00.0", dev + 1);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  FAKE_REQUIRE_INIT(lock);
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = state().devices[static_cast<size_t>(dev)].capacity;
  return CUDA_SUCCESS;
}

// The 32-bit ABI, as fake_cuMemGetInfo_v1: above 4 GiB - 1 it reads UINT_MAX.
CUresult fake_cuDeviceTotalMem_v1(unsigned int* bytes, CUdevice dev) {
  size_t b = 0;
  const CUresult r = cuDeviceTotalMem_v2(bytes != nullptr ? &b : nullptr, dev);
  if (r == CUDA_SUCCESS) *bytes = static_cast<unsigned int>(std::min<size_t>(b, UINT_MAX));
  return r;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  FAKE_REQUIRE_INIT(lock);
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  int v = 0;
  switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: v = 9; break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: v = 0; break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: v = 132; break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE: v = 32; break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: v = 1024; break;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: v = 512; break;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: v = dev; break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: v = 1; break;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: v = 1; break;
    default: v = 0; break;
  }
  *pi = v;
  return CUDA_SUCCESS;
}

}  // extern "C"
