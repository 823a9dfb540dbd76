// Prints, as one JSON line, what the framework bridge's table (shim/torch_layouts.h) must say for
// the PyTorch whose headers this is compiled against: the virtual-table slot of
// CUDAAllocator::attachAllocatorTraceTracker and the offsets of the TraceEntry fields the tracker
// reads. Built and run by scripts/gpu_check.py (workload torch_layout) against the wheel's own
// headers (torch/include); compare.py holds the table to it.
//   g++ -std=c++17 -I$TORCH/include -I/usr/local/cuda/include -D_GLIBCXX_USE_CXX11_ABI=1 \
//       torch_layout_probe.cpp -o probe && ./probe
#include <c10/cuda/CUDACachingAllocator.h>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>

namespace CA = c10::cuda::CUDACachingAllocator;

// TraceEntry moved namespaces (2.11: c10::CachingDeviceAllocator); the tracker's parameter names it
// in every release.
template <typename M>
struct Param;
template <typename C, typename P>
struct Param<void (C::*)(P)> {
  using type = P;
};
template <typename F>
struct Arg;
template <typename A>
struct Arg<std::function<void(const A&)>> {
  using type = A;
};
using Entry = Arg<Param<decltype(&CA::CUDAAllocator::attachAllocatorTraceTracker)>::type>::type;

int main() {
  // A pointer to a virtual member function holds 1 + the byte offset of its vtable entry.
  auto member = &CA::CUDAAllocator::attachAllocatorTraceTracker;
  uintptr_t raw;
  std::memcpy(&raw, &member, sizeof raw);
  std::printf(
      "{\"attach_slot\": %zu, \"sizeof\": %zu, \"action\": %zu, \"device\": %zu, \"addr\": %zu, "
      "\"stream\": %zu, \"size\": %zu, \"mempool\": %zu, \"mempool_size\": %zu}\n",
      static_cast<size_t>((raw - 1) / sizeof(void*)), sizeof(Entry), offsetof(Entry, action_),
      offsetof(Entry, device_), offsetof(Entry, addr_), offsetof(Entry, stream_), offsetof(Entry, size_),
      offsetof(Entry, mempool_), sizeof(Entry::mempool_));
  return 0;
}
