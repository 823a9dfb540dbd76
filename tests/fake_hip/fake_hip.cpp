// Fake HIP runtime (libamdhip64.so.6): devices, linear, managed and pinned memory, streams, arrays,
// virtual memory and hipGetProcAddress, over the fake HSA runtime. Rules in README.md.
#include <sys/mman.h>

#include <cstdio>
#include <cstring>

#include "fake_hip_state.h"
#include "fake_hsa_hooks.h"

namespace fakehip {

State& state() {
  static State* s = new State;  // never destroyed: callers may come from exit handlers
  return *s;
}

int& current_device() {
  thread_local int device = 0;
  return device;
}

uint64_t round_up(uint64_t v, uint64_t g) { return (v + g - 1) / g * g; }

hsa_amd_memory_pool_t vram_pool(int device, bool fine) { return {fakehsa_gpu_pool(device, fine ? 1 : 0)}; }

void ensure_init_locked() {
  State& s = state();
  if (s.initialised) return;
  s.initialised = true;
  hsa_init();
  s.devices = fakehsa_gpu_count();
  for (int d = 0; d < s.devices; ++d) {
    auto* p = new Pool{d, true};
    s.pools.insert(p);
    s.default_pool[d] = s.current_pool[d] = p;
  }
}

}  // namespace fakehip

using namespace fakehip;

namespace {

bool valid_device(int d) { return d >= 0 && d < state().devices; }

// One HSA allocation from `pool`: hipErrorOutOfMemory when HSA is out of resources.
hipError_t hsa_allocate(hsa_amd_memory_pool_t pool, uint64_t size, void** out) {
  const hsa_status_t r = hsa_amd_memory_pool_allocate(pool, size, 0, out);
  if (r == HSA_STATUS_SUCCESS) return hipSuccess;
  *out = nullptr;
  return r == HSA_STATUS_ERROR_OUT_OF_RESOURCES ? hipErrorOutOfMemory : hipErrorInvalidValue;
}

// A device's first allocation also sets up the runtime's staging buffer (an HSA allocation of its
// own, made inside the program's call).
void stage_device_locked(int d) {
  State& s = state();
  if (s.staged[d]) return;
  s.staged[d] = true;
  void* staging = nullptr;
  (void)hsa_allocate(vram_pool(d, false), kDeviceStaging, &staging);
}

hipError_t linear_alloc(void** ptr, uint64_t size, bool fine) {
  if (ptr == nullptr) return hipErrorInvalidValue;
  *ptr = nullptr;
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  if (size == 0) return hipSuccess;  // HIP returns success and a null pointer
  const int d = current_device();
  stage_device_locked(d);
  if (hipError_t r = hsa_allocate(vram_pool(d, fine), size, ptr); r != hipSuccess) return r;
  s.linear[reinterpret_cast<uint64_t>(*ptr)] = size;
  return hipSuccess;
}

hipError_t host_alloc(void** ptr, uint64_t size) {
  if (ptr == nullptr) return hipErrorInvalidValue;
  *ptr = nullptr;
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  if (size == 0) return hipSuccess;
  if (hipError_t r = hsa_allocate({fakehsa_host_pool()}, size, ptr); r != hipSuccess) return r;
  hsa_agent_t gpu{0x100};
  hsa_amd_agents_allow_access(1, &gpu, nullptr, *ptr);
  s.pinned.insert(reinterpret_cast<uint64_t>(*ptr));
  return hipSuccess;
}

hipError_t host_free(void* ptr) {
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  if (ptr == nullptr) return hipSuccess;
  if (s.pinned.erase(reinterpret_cast<uint64_t>(ptr)) == 0) return hipErrorInvalidValue;
  hsa_amd_memory_pool_free(ptr);
  return hipSuccess;
}

uint64_t channel_bytes(const hipChannelFormatDesc* d) { return uint64_t(d->x + d->y + d->z + d->w) / 8; }

uint64_t format_bytes(hipArray_Format f) {
  switch (f) {
    case HIP_AD_FORMAT_UNSIGNED_INT16: case HIP_AD_FORMAT_SIGNED_INT16: case HIP_AD_FORMAT_HALF: return 2;
    case HIP_AD_FORMAT_UNSIGNED_INT32: case HIP_AD_FORMAT_SIGNED_INT32: case HIP_AD_FORMAT_FLOAT: return 4;
    default: return 1;
  }
}

// An array of width × height × depth elements: rows padded to kPitchAlign, one HSA allocation.
hipError_t array_alloc(hipArray** array, uint64_t element, uint64_t width, uint64_t height, uint64_t depth) {
  if (array == nullptr || element == 0 || width == 0) return hipErrorInvalidValue;
  *array = nullptr;
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  const uint64_t bytes = round_up(width * element, kPitchAlign) * std::max<uint64_t>(height, 1) * std::max<uint64_t>(depth, 1);
  void* data = nullptr;
  if (hipError_t r = hsa_allocate(vram_pool(current_device(), false), bytes, &data); r != hipSuccess) return r;
  auto* a = new hipArray{};
  a->data = data;
  a->width = static_cast<unsigned>(width);
  a->height = static_cast<unsigned>(height);
  a->depth = static_cast<unsigned>(depth);
  s.arrays.insert(a);
  *array = a;
  return hipSuccess;
}

hipError_t array_free(hipArray* array) {
  State& s = state();
  Lock lock(s.mu);
  if (array == nullptr || s.arrays.erase(array) == 0) return hipErrorInvalidValue;
  hsa_amd_memory_pool_free(array->data);
  delete array;
  return hipSuccess;
}

}  // namespace

extern "C" {

hipError_t hipInit(unsigned int flags) {
  if (flags != 0) return hipErrorInvalidValue;
  Lock lock(state().mu);
  ensure_init_locked();
  return hipSuccess;
}

hipError_t hipDriverGetVersion(int* v) {
  if (v == nullptr) return hipErrorInvalidValue;
  *v = 60342134;
  return hipSuccess;
}

hipError_t hipRuntimeGetVersion(int* v) { return hipDriverGetVersion(v); }

hipError_t hipGetDeviceCount(int* count) {
  if (count == nullptr) return hipErrorInvalidValue;
  Lock lock(state().mu);
  ensure_init_locked();
  *count = state().devices;
  return hipSuccess;
}

hipError_t hipSetDevice(int device) {
  Lock lock(state().mu);
  ensure_init_locked();
  if (!valid_device(device)) return hipErrorInvalidDevice;
  current_device() = device;
  return hipSuccess;
}

hipError_t hipGetDevice(int* device) {
  if (device == nullptr) return hipErrorInvalidValue;
  Lock lock(state().mu);
  ensure_init_locked();
  *device = current_device();
  return hipSuccess;
}

hipError_t hipDeviceGetName(char* name, int len, hipDevice_t device) {
  Lock lock(state().mu);
  ensure_init_locked();
  if (name == nullptr || len <= 0) return hipErrorInvalidValue;
  if (!valid_device(device)) return hipErrorInvalidDevice;
  std::snprintf(name, static_cast<size_t>(len), "Fake AMD GPU %d", device);
  return hipSuccess;
}

hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t device) {
  Lock lock(state().mu);
  ensure_init_locked();
  if (bytes == nullptr) return hipErrorInvalidValue;
  if (!valid_device(device)) return hipErrorInvalidDevice;
  *bytes = fakehsa_capacity();
  return hipSuccess;
}

hipError_t hipDeviceGetPCIBusId(char* id, int len, int device) {
  Lock lock(state().mu);
  ensure_init_locked();
  if (id == nullptr || len <= 0) return hipErrorInvalidValue;
  if (!valid_device(device)) return hipErrorInvalidDevice;
  std::snprintf(id, static_cast<size_t>(len), "0000:%02x:00.0", 0x10 + device);
  return hipSuccess;
}

hipError_t hipMemGetInfo(size_t* free, size_t* total) {
  if (free == nullptr || total == nullptr) return hipErrorInvalidValue;
  Lock lock(state().mu);
  ensure_init_locked();
  *total = fakehsa_capacity();
  *free = *total - fakehsa_charged_bytes(current_device());
  return hipSuccess;
}

// --- linear, managed and pinned host memory ---
hipError_t hipMalloc(void** ptr, size_t size) { return linear_alloc(ptr, size, false); }

hipError_t hipExtMallocWithFlags(void** ptr, size_t size, unsigned int flags) {
  return linear_alloc(ptr, size, (flags & hipDeviceMallocFinegrained) != 0);
}

hipError_t hipMallocPitch(void** ptr, size_t* pitch, size_t width, size_t height) {
  if (pitch == nullptr || width == 0 || height == 0) return hipErrorInvalidValue;
  *pitch = round_up(width, kPitchAlign);
  return linear_alloc(ptr, *pitch * height, false);
}

hipError_t hipMalloc3D(hipPitchedPtr* pitched, hipExtent extent) {
  if (pitched == nullptr || extent.width == 0 || extent.height == 0 || extent.depth == 0) return hipErrorInvalidValue;
  const size_t pitch = round_up(extent.width, kPitchAlign);
  void* p = nullptr;
  if (hipError_t r = linear_alloc(&p, pitch * extent.height * extent.depth, false); r != hipSuccess) return r;
  *pitched = hipPitchedPtr{p, pitch, extent.width, extent.height};
  return hipSuccess;
}

hipError_t hipMallocManaged(void** ptr, size_t size, unsigned int) {
  if (ptr == nullptr) return hipErrorInvalidValue;
  *ptr = nullptr;
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  if (size == 0) return hipErrorInvalidValue;
  // HMM: plain pages, no HSA allocation (docs/rocm.md).
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return hipErrorOutOfMemory;
  s.managed[reinterpret_cast<uint64_t>(p)] = size;
  *ptr = p;
  return hipSuccess;
}

hipError_t hipFree(void* ptr) {
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  if (ptr == nullptr) return hipSuccess;
  const auto address = reinterpret_cast<uint64_t>(ptr);
  if (s.linear.erase(address) != 0) {
    hsa_amd_memory_pool_free(ptr);
    return hipSuccess;
  }
  if (auto it = s.managed.find(address); it != s.managed.end()) {
    munmap(ptr, it->second);
    s.managed.erase(it);
    return hipSuccess;
  }
  return pool_free_locked(address) ? hipSuccess : hipErrorInvalidValue;
}

hipError_t hipHostMalloc(void** ptr, size_t size, unsigned int) { return host_alloc(ptr, size); }
hipError_t hipMallocHost(void** ptr, size_t size) { return host_alloc(ptr, size); }
hipError_t hipHostAlloc(void** ptr, size_t size, unsigned int) { return host_alloc(ptr, size); }
hipError_t hipHostFree(void* ptr) { return host_free(ptr); }
hipError_t hipFreeHost(void* ptr) { return host_free(ptr); }

// --- streams: each holds a kernel-argument buffer the runtime allocates for itself ---
hipError_t hipStreamCreate(hipStream_t* stream) {
  if (stream == nullptr) return hipErrorInvalidValue;
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  auto* st = new Stream{current_device(), nullptr};
  if (hipError_t r = hsa_allocate(vram_pool(st->device, false), kStreamArgBuffer, &st->arg_buffer); r != hipSuccess) {
    delete st;
    return r;
  }
  s.streams.insert(st);
  *stream = reinterpret_cast<hipStream_t>(st);
  return hipSuccess;
}

hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int) { return hipStreamCreate(stream); }

hipError_t hipStreamDestroy(hipStream_t stream) {
  State& s = state();
  Lock lock(s.mu);
  auto* st = reinterpret_cast<Stream*>(stream);
  if (s.streams.erase(st) == 0) return hipErrorInvalidHandle;
  hsa_amd_memory_pool_free(st->arg_buffer);
  delete st;
  return hipSuccess;
}

int hipGetStreamDeviceId(hipStream_t stream) {
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  if (stream == nullptr) return current_device();
  auto* st = reinterpret_cast<Stream*>(stream);
  return s.streams.contains(st) ? st->device : -1;
}

hipError_t hipStreamIsCapturing(hipStream_t, hipStreamCaptureStatus* status) {
  if (status == nullptr) return hipErrorInvalidValue;
  *status = hipStreamCaptureStatusNone;  // the fake never captures
  return hipSuccess;
}

// Nothing runs asynchronously: every synchronisation gives the pools' free memory back down to
// their release thresholds.
hipError_t hipStreamSynchronize(hipStream_t) {
  Lock lock(state().mu);
  ensure_init_locked();
  synchronise_pools_locked();
  return hipSuccess;
}
hipError_t hipDeviceSynchronize() { return hipStreamSynchronize(nullptr); }

// --- arrays ---
hipError_t hipMallocArray(hipArray** array, const hipChannelFormatDesc* desc, size_t width, size_t height,
                          unsigned int) {
  if (desc == nullptr) return hipErrorInvalidValue;
  return array_alloc(array, channel_bytes(desc), width, height, 1);
}

hipError_t hipMalloc3DArray(hipArray** array, const hipChannelFormatDesc* desc, hipExtent extent, unsigned int) {
  if (desc == nullptr) return hipErrorInvalidValue;
  return array_alloc(array, channel_bytes(desc), extent.width, extent.height, extent.depth);
}

hipError_t hipArrayCreate(hipArray** array, const HIP_ARRAY_DESCRIPTOR* d) {
  if (d == nullptr) return hipErrorInvalidValue;
  return array_alloc(array, format_bytes(d->Format) * d->NumChannels, d->Width, d->Height, 1);
}

hipError_t hipArray3DCreate(hipArray** array, const HIP_ARRAY3D_DESCRIPTOR* d) {
  if (d == nullptr) return hipErrorInvalidValue;
  return array_alloc(array, format_bytes(d->Format) * d->NumChannels, d->Width, d->Height, d->Depth);
}

hipError_t hipFreeArray(hipArray* array) { return array_free(array); }
hipError_t hipArrayDestroy(hipArray* array) { return array_free(array); }

// --- virtual memory (below it the real runtime uses hsa_amd_vmem_*, not pool allocations) ---
hipError_t hipMemCreate(hipMemGenericAllocationHandle_t* handle, size_t size, const hipMemAllocationProp* prop,
                        unsigned long long) {
  if (handle == nullptr || prop == nullptr || size == 0 || size % kVmmGranule != 0) return hipErrorInvalidValue;
  State& s = state();
  Lock lock(s.mu);
  ensure_init_locked();
  // A ROCm 6 runtime: the properties in ROCm 6's layout.
  const hipMemLocation location = reinterpret_cast<const gmp_hipMemAllocationProp6*>(prop)->location;
  if (location.type != hipMemLocationTypeDevice || !valid_device(location.id)) return hipErrorInvalidDevice;
  auto* p = new Physical{size, location.id};
  s.physical[reinterpret_cast<uint64_t>(p)] = p;
  *handle = reinterpret_cast<hipMemGenericAllocationHandle_t>(p);
  return hipSuccess;
}

hipError_t hipMemRelease(hipMemGenericAllocationHandle_t handle) {
  State& s = state();
  Lock lock(s.mu);
  auto it = s.physical.find(reinterpret_cast<uint64_t>(handle));
  if (it == s.physical.end() || it->second->released) return hipErrorInvalidValue;
  it->second->released = true;
  if (it->second->mappings == 0) {
    delete it->second;
    s.physical.erase(it);
  }
  return hipSuccess;
}

hipError_t hipMemAddressReserve(void** ptr, size_t size, size_t, void*, unsigned long long) {
  if (ptr == nullptr || size == 0 || size % kVmmGranule != 0) return hipErrorInvalidValue;
  State& s = state();
  Lock lock(s.mu);
  *ptr = reinterpret_cast<void*>(s.next_va);
  s.reservations[s.next_va] = size;
  s.next_va += round_up(size, 1ull << 30);
  return hipSuccess;
}

hipError_t hipMemAddressFree(void* ptr, size_t) {
  State& s = state();
  Lock lock(s.mu);
  return s.reservations.erase(reinterpret_cast<uint64_t>(ptr)) != 0 ? hipSuccess : hipErrorInvalidValue;
}

hipError_t hipMemMap(void* ptr, size_t size, size_t offset, hipMemGenericAllocationHandle_t handle,
                     unsigned long long) {
  State& s = state();
  Lock lock(s.mu);
  auto it = s.physical.find(reinterpret_cast<uint64_t>(handle));
  if (it == s.physical.end() || it->second->released || size == 0 || offset + size > it->second->size ||
      s.maps.contains(reinterpret_cast<uint64_t>(ptr))) {
    return hipErrorInvalidValue;
  }
  ++it->second->mappings;
  s.maps[reinterpret_cast<uint64_t>(ptr)] = {size, it->second};
  return hipSuccess;
}

hipError_t hipMemSetAccess(void*, size_t, const hipMemAccessDesc*, size_t) { return hipSuccess; }

hipError_t hipMemUnmap(void* ptr, size_t size) {
  State& s = state();
  Lock lock(s.mu);
  const auto begin = reinterpret_cast<uint64_t>(ptr);
  auto it = s.maps.lower_bound(begin);
  if (it == s.maps.end() || it->first != begin) return hipErrorInvalidValue;
  // Every mapping inside [ptr, ptr + size): a physical allocation released before goes with its last.
  while (it != s.maps.end() && it->first < begin + size) {
    Physical* p = it->second.second;
    it = s.maps.erase(it);
    if (--p->mappings == 0 && p->released) {
      s.physical.erase(reinterpret_cast<uint64_t>(p));
      delete p;
    }
  }
  return hipSuccess;
}

const char* hipGetErrorString(hipError_t e) { return e == hipSuccess ? "no error" : "fake HIP error"; }
const char* hipGetErrorName(hipError_t e) { return e == hipSuccess ? "hipSuccess" : "hipErrorFake"; }

}  // extern "C"

namespace {

// What hipGetProcAddress hands out: the runtime's own functions (-Bsymbolic: never a preload's), as
// ROCm 6.2's does from its dispatch table.
#define FAKEHIP_EXPORTS(X)                                                                                  \
  X(hipInit) X(hipGetDeviceCount) X(hipSetDevice) X(hipGetDevice) X(hipDeviceGetName) X(hipDeviceTotalMem)   \
  X(hipMemGetInfo) X(hipExtMallocWithFlags) X(hipMallocPitch) X(hipMalloc3D) X(hipFree) X(hipHostFree)       \
  X(hipStreamCreate) X(hipStreamDestroy) X(hipStreamSynchronize) X(hipDeviceSynchronize) X(hipFreeAsync)     \
  X(hipMemPoolCreate) X(hipMemPoolDestroy) X(hipMemPoolTrimTo)                                               \
  X(hipMallocArray) X(hipMalloc3DArray) X(hipArrayCreate) X(hipArray3DCreate) X(hipFreeArray)                \
  X(hipArrayDestroy) X(hipMemCreate) X(hipMemRelease) X(hipMemMap) X(hipMemUnmap) X(hipGetProcAddress)
struct Export {
  const char* name;
  void* fn;
};
// The ones hip_runtime_api.h overloads with C++ templates (or marks deprecated), by their C type.
#define FAKEHIP_TYPED_EXPORTS(X) \
  X(hipMalloc) X(hipMallocManaged) X(hipHostMalloc) X(hipMallocHost) X(hipHostAlloc) X(hipMallocAsync) X(hipMallocFromPoolAsync)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // hipMallocHost, hipHostAlloc: still exported
const Export kExports[] = {
#define FAKEHIP_EXPORT(name) {#name, reinterpret_cast<void*>(&name)},
#define FAKEHIP_TYPED_EXPORT(name) {#name, reinterpret_cast<void*>(static_cast<gmp::shim::hip::c_type::name>(&name))},
    FAKEHIP_EXPORTS(FAKEHIP_EXPORT) FAKEHIP_TYPED_EXPORTS(FAKEHIP_TYPED_EXPORT)
#undef FAKEHIP_TYPED_EXPORT
#undef FAKEHIP_EXPORT
};
#pragma GCC diagnostic pop

}  // namespace

extern "C" hipError_t hipGetProcAddress(const char* symbol, void** pfn, int, uint64_t,
                                        hipDriverProcAddressQueryResult* status) {
  if (symbol == nullptr || pfn == nullptr) return hipErrorInvalidValue;
  *pfn = nullptr;
  for (const Export& e : kExports) {
    if (std::strcmp(e.name, symbol) == 0) *pfn = e.fn;
  }
  if (status != nullptr) *status = *pfn != nullptr ? 0 : 1;  // HIP_GET_PROC_ADDRESS_SUCCESS, _SYMBOL_NOT_FOUND
  return *pfn != nullptr ? hipSuccess : hipErrorNotFound;
}
