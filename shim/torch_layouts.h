// Where PyTorch keeps what the framework bridge needs, per release (docs/framework-bridge.md):
// the virtual-table slot of CUDAAllocator::attachAllocatorTraceTracker, and the fields of
// TraceEntry that the tracker reads. The slot moves whenever a release adds a virtual method
// before it; calling a wrong slot calls the wrong function, so only releases checked against their
// own headers attach by default.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gmp::shim {

// The TraceEntry fields the tracker reads: byte offsets, the same from 2.4 to 2.11 (the fields
// added later, mempool_, time_, compile_context_, user_metadata_, all come after size_).
struct TraceEntryLayout {
  size_t action = 0;  // int-sized enum: 0 ALLOC, 1 FREE_REQUESTED, 2 FREE_COMPLETED, 3 SEGMENT_ALLOC,
                      // 4 SEGMENT_FREE, 5 SEGMENT_MAP, 6 SEGMENT_UNMAP, 7 SNAPSHOT, 8 OOM
  size_t device = 4;  // int8_t
  size_t addr = 8;    // size_t; for OOM the device's free bytes
  size_t stream = 32;
  size_t size = 40;   // the size the program asked for; for OOM the request
  size_t mempool = 48;  // MempoolId_t, a pair of unsigned long long: the block's pool ({0, 0}: default)
};

struct TorchLayout {
  int major, minor;
  unsigned attach_slot;  // in 8-byte entries from the vtable's address point
  bool checked;          // measured against this release's own headers
  const char* source;
  bool mempool = false;  // TraceEntry::mempool_ is at TraceEntryLayout::mempool (checked by the probe)
};

// `checked` rows: a probe compiled against the release's wheel headers printed offsetof() of each
// field and the slot from a pointer to member (scripts/torch_layout_probe.cpp). Others: counted
// from stored copies of the release's c10/cuda/CUDACachingAllocator.h and its base classes,
// attached only with GPUMEMPROF_FRAMEWORK=unverified.
inline constexpr TorchLayout kTorchLayouts[] = {
    {2, 11, 44, true, "torch 2.11.0+cu130 wheel headers, probe on an H200 (2026-11-24)", true},
    {2, 10, 44, false, "a stored copy of the header with 2.11's method set (unversioned)", true},
    {2, 9, 39, false, "ROCm/pytorch 10b22ea, 2.9.0 side of a merge"},
    {2, 8, 38, false, "a vendor build's header of torch 2.8.0 (f58de39)"},
    {2, 7, 35, false, "ROCm/pytorch ee04104, 2.7.1 side of a merge"},
    {2, 6, 35, false, "cyyever/pytorch 47f6cef and PR dates"},
    {2, 5, 31, false, "a vendor mirror of the class and PR dates"},
    {2, 4, 29, false, "an unversioned annotated copy of the header"},
};

inline constexpr TraceEntryLayout kTraceEntryLayout{};

// The run-time type of the native caching allocator (its typeinfo name, as std::type_info::name
// spells it): anything else (cudaMallocAsync, a pluggable allocator) is refused.
inline constexpr const char* kNativeAllocatorType = "N3c104cuda20CUDACachingAllocator6Native22NativeCachingAllocatorE";
inline constexpr const char* kAllocatorSymbol = "_ZN3c104cuda20CUDACachingAllocator9allocatorE";
inline constexpr const char* kAllocatorLibrary = "libc10_cuda.so";

inline const TorchLayout* find_torch_layout(int major, int minor) {
  for (const auto& l : kTorchLayouts) {
    if (l.major == major && l.minor == minor) return &l;
  }
  return nullptr;
}

}  // namespace gmp::shim
