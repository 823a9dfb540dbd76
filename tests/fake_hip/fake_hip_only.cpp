// A HIP runtime of another make, with no HSA underneath (libamdhip64.so.5 in
// build/tests/fake/hip_only/): devices and linear memory only, backed by malloc. The profiler then
// has the HIP level alone and names devices through HIP (docs/design.md §Reaching an AMD GPU).
#include <cstdio>
#include <cstdlib>

#include "../../shim/hip/hip_api.h"

extern "C" {

hipError_t hipGetDeviceCount(int* count) {
  if (count == nullptr) return hipErrorInvalidValue;
  *count = 1;
  return hipSuccess;
}

hipError_t hipGetDevice(int* device) {
  if (device == nullptr) return hipErrorInvalidValue;
  *device = 0;
  return hipSuccess;
}

hipError_t hipDeviceGetName(char* name, int len, hipDevice_t device) {
  if (name == nullptr || len <= 0) return hipErrorInvalidValue;
  if (device != 0) return hipErrorInvalidDevice;
  std::snprintf(name, static_cast<size_t>(len), "HIP-only Fake GPU 0");
  return hipSuccess;
}

hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t device) {
  if (bytes == nullptr) return hipErrorInvalidValue;
  if (device != 0) return hipErrorInvalidDevice;
  *bytes = 1ull << 30;
  return hipSuccess;
}

hipError_t hipMalloc(void** ptr, size_t size) {
  if (ptr == nullptr) return hipErrorInvalidValue;
  *ptr = size == 0 ? nullptr : std::malloc(size);
  return size != 0 && *ptr == nullptr ? hipErrorOutOfMemory : hipSuccess;
}

hipError_t hipFree(void* ptr) {
  std::free(ptr);
  return hipSuccess;
}

}  // extern "C"
