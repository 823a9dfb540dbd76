// Internal state of the fake CUDA driver (libcuda.so.1 test double).
// Not installed, not part of the exported ABI. See README.md for the rules.
#pragma once

#include "fake_config.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <set>
#include <vector>

namespace fakecuda {
struct Capture;
}

// Opaque handle types that cuda.h only declares. The fake gives them bodies.
struct CUctx_st {
  int device = 0;
  int refcount = 0;  // primary-context retain count
};

struct CUstream_st {
  int device = 0;
  CUctx_st* ctx = nullptr;
  unsigned int flags = 0;
  // Stream capture (fake_capture.cpp): the capture this stream takes part in (as its origin or
  // joined through an event), and the nodes the next captured node will depend on.
  fakecuda::Capture* capture = nullptr;
  std::vector<CUgraphNode> capture_deps;
  std::vector<CUgraphEdgeData> capture_edges;  // parallel to capture_deps, all default edges
};

struct CUevent_st {
  unsigned int flags = 0;
  int device = -1;  // device of the last recorded stream, -1 if never recorded
  // Recorded on a capturing stream: that capture's id (0 otherwise) and the stream's
  // dependencies then, which a stream waiting on the event joins with.
  cuuint64_t capture_id = 0;
  std::vector<CUgraphNode> capture_deps;
};

struct CUmemPoolHandle_st {
  int device = 0;
  bool is_default = false;
  size_t used = 0;
  size_t used_high = 0;
  size_t reserved = 0;
  size_t reserved_high = 0;
  cuuint64_t release_threshold = 0;
  size_t max_size = 0;  // 0 = unlimited (bounded by device capacity only)
  int reuse_follow_event_dependencies = 1;
  int reuse_allow_opportunistic = 1;
  int reuse_allow_internal_dependencies = 1;
  CUmemPoolProps props{};
};

struct CUarray_st {
  int device = 0;
  size_t bytes = 0;  // requirement size (charged)
  CUDA_ARRAY3D_DESCRIPTOR desc{};
};

struct CUmipmappedArray_st {
  int device = 0;
  size_t bytes = 0;  // requirement size (charged)
  unsigned int levels = 0;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
};

namespace fakecuda {

inline constexpr size_t KiB = size_t{1} << 10;
inline constexpr size_t MiB = size_t{1} << 20;
inline constexpr size_t GiB = size_t{1} << 30;

inline constexpr int kDriverVersion = 13000;
inline constexpr int kMaxDevices = 8;
inline constexpr size_t kDefaultCapacity = 16 * GiB;
inline constexpr size_t kLinearAlign = 256;        // every host-backed block
inline constexpr size_t kPitchAlign = 512;         // cuMemAllocPitch pitch
inline constexpr size_t kPoolGranularity = 2 * MiB;
inline constexpr size_t kVmmGranularity = 2 * MiB;
inline constexpr size_t kArrayAlign = 64 * KiB;
inline constexpr CUdeviceptr kVaBase = 0x7e0000000000ULL;
// Addresses of graph allocation nodes: a range of their own, below the VMM range and far from
// where the host backing (heap, mmap) lands, so they never overlap another allocation.
inline constexpr CUdeviceptr kGraphVaBase = 0x600000000000ULL;
inline constexpr size_t kGraphGranularity = 2 * MiB;

// round_up that saturates at SIZE_MAX rounded down to the alignment instead of wrapping.
inline size_t round_up(size_t v, size_t a) {
  if (v > SIZE_MAX - (a - 1)) return SIZE_MAX - (SIZE_MAX % a);
  return (v + a - 1) / a * a;
}

enum class BlockKind { Linear, Managed, Pool, Host };

// A host-backed allocation: linear, pitch, managed, pool or pinned host memory.
struct Block {
  BlockKind kind = BlockKind::Linear;
  int device = 0;       // -1 for pinned host memory
  size_t size = 0;      // bytes requested (pitch*height for pitch allocations)
  size_t charged = 0;   // bytes charged against the device capacity (linear only)
  CUmemPoolHandle_st* pool = nullptr;
  size_t backing = 0;   // bytes obtained from backing_alloc
};

struct PhysHandle {
  int device = 0;
  size_t size = 0;
  bool released = false;
  int mappings = 0;
  CUmemAllocationProp prop{};
};

struct Mapping {
  size_t size = 0;
  size_t offset = 0;
  CUmemGenericAllocationHandle handle = 0;
};

// An address handed out by a graph allocation node (never reused).
struct GraphVa {
  int device = 0;
  size_t size = 0;
};

// A graph allocation made live by a launch, until freed (outside, by another graph's free
// node, or by an auto-free relaunch).
struct LiveGraphAlloc {
  int device = 0;
  size_t size = 0;
};

struct Device {
  size_t capacity = kDefaultCapacity;
  size_t charged = 0;
  CUctx_st* primary = nullptr;
  CUmemPoolHandle_st* default_pool = nullptr;
  CUmemPoolHandle_st* current_pool = nullptr;
  // Graph memory pool (fake_graph_mem.cpp); used always equals reserved, as on the real driver.
  size_t graph_reserved = 0;
  size_t graph_reserved_high = 0;
  size_t graph_used_high = 0;
};

struct State {
  std::mutex mu;
  bool initialized = false;
  std::vector<Device> devices;
  std::map<uintptr_t, Block> blocks;
  std::set<CUstream_st*> streams;
  std::set<CUevent_st*> events;
  std::set<CUmemPoolHandle_st*> pools;
  std::set<CUarray_st*> arrays;
  std::set<CUmipmappedArray_st*> mipmaps;
  std::map<CUmemGenericAllocationHandle, PhysHandle> handles;
  CUmemGenericAllocationHandle next_handle = 0x1000;
  std::map<CUdeviceptr, size_t> reservations;  // start -> size
  std::map<CUdeviceptr, Mapping> mappings;     // start -> mapping
  CUdeviceptr va_next = kVaBase;
  // stream capture and graphs (fake_capture.h)
  std::map<cuuint64_t, Capture*> captures;  // active (or invalidated, not yet ended) by id
  cuuint64_t next_capture_id = 1;
  std::set<CUgraph_st*> graphs;
  std::set<CUgraphNode_st*> graph_nodes;
  std::set<CUgraphExec_st*> graph_execs;
  std::map<CUdeviceptr, GraphVa> graph_vas;
  CUdeviceptr graph_va_next = kGraphVaBase;
  std::map<CUdeviceptr, LiveGraphAlloc> graph_live;
};

State& state();
using Lock = std::unique_lock<std::mutex>;

// --- configuration (fake_config.cpp; parse_size in fake_config.h) ---
int config_device_count();
size_t config_capacity();

// --- state helpers (fake_state.cpp); all *_locked helpers require state().mu held ---
bool valid_device(int dev);
// Charges bytes against a device; false (and nothing changed) when it would exceed capacity.
bool charge_locked(int dev, size_t bytes);
void uncharge_locked(int dev, size_t bytes);

// --- thread-local current context (fake_context.cpp) ---
CUctx_st* current_ctx();
// Device of the current context, or CUDA_ERROR_INVALID_CONTEXT.
CUresult current_device(int* dev);
bool valid_ctx_locked(CUctx_st* ctx);

// --- streams (fake_stream.cpp) ---
// Device a stream handle refers to: 0, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD mean the
// current context's device; other handles must come from cuStreamCreate.
CUresult stream_device_locked(CUstream s, int* dev);

// --- pools (fake_pool.cpp) ---
// Applies the synchronisation rule to every pool of every device.
void shrink_pools_on_sync_locked();
void create_default_pools_locked();

// --- host backing (fake_backing.cpp) ---
// Returns 256-byte-aligned host memory of at least `bytes` bytes (never nullptr for bytes > 0
// unless the host is out of address space). Freed blocks of the same rounded size are handed
// out again LIFO, across threads, so addresses are reused immediately.
void* backing_alloc(size_t bytes, size_t* backing_size);
void backing_free(void* p, size_t backing_size);

// --- signals raised inside a call (fake_raise.cpp) ---
// Raises the signal fakecuda_raise_in armed for `entry_point`, once.
void maybe_raise(const char* entry_point);

// --- host-backed blocks (fake_memory.cpp) ---
CUresult linear_alloc_locked(CUdeviceptr* dptr, size_t bytes, int dev);
CUresult free_device_block_locked(CUdeviceptr dptr);

}  // namespace fakecuda

#define FAKE_REQUIRE_INIT(lock_name)                         \
  ::fakecuda::Lock lock_name(::fakecuda::state().mu);        \
  if (!::fakecuda::state().initialized) return CUDA_ERROR_NOT_INITIALIZED

// Allocation entry points clear their out-pointer first, even before the init check (as the real
// driver does), then lock.
#define FAKE_ZERO_OUT(ptr, zero)      \
  do {                                \
    if ((ptr) != nullptr) *(ptr) = (zero); \
  } while (0)

// Exports that cuda.h does not declare under these names (old 4-argument cuGetProcAddress, the
// unversioned cuDevicePrimaryCtxRelease, the 32-bit cuMemGetInfo and cuDeviceTotalMem, and the
// per-thread-default-stream `_ptsz` variants).
// The set mirrors what the real driver (580, CUDA 13.0) hands out through cuGetProcAddress.
extern "C" {
CUresult fake_cuGetProcAddress_v1(const char* symbol, void** pfn, int cudaVersion,
                                  cuuint64_t flags) __asm__("cuGetProcAddress");
CUresult fake_cuDevicePrimaryCtxRelease_v1(CUdevice dev) __asm__("cuDevicePrimaryCtxRelease");
CUresult fake_cuMemGetInfo_v1(unsigned int* free, unsigned int* total) __asm__("cuMemGetInfo");
CUresult fake_cuDeviceTotalMem_v1(unsigned int* bytes, CUdevice dev) __asm__("cuDeviceTotalMem");
CUresult cuMemAllocAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUstream hStream);
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream);
CUresult cuStreamSynchronize_ptsz(CUstream hStream);
CUresult cuStreamGetDevice_ptsz(CUstream hStream, CUdevice* device);
CUresult cuStreamGetCtx_ptsz(CUstream hStream, CUcontext* pctx);
CUresult cuStreamGetCtx_v2_ptsz(CUstream hStream, CUcontext* pctx, CUgreenCtx* pGreenCtx);
CUresult cuEventRecord_ptsz(CUevent hEvent, CUstream hStream);
}
