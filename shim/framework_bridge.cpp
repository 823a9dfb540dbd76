// The framework bridge (docs/framework-bridge.md): a tracker attached to PyTorch's CUDA caching
// allocator turns each of its events into a ring event. The bootstrap in shim/python_bootstrap
// calls these functions from Python, once PyTorch has initialised CUDA; the tracker itself is
// called by PyTorch on the allocating thread, under the allocator's lock.
#include <dlfcn.h>

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "../collector/seam.h"
#include "export.h"
#include "framework_bridge.h"
#include "stack_capture.h"
#include "real_driver.h"
#include "torch_layouts.h"
#include "records.h"

namespace gmp::shim {
namespace {

enum class State : int { Off, Recording, Detached };
std::atomic<State> g_state{State::Off};
// Whether this release's TraceEntry carries mempool_ where torch_layouts.h says (TorchLayout::mempool).
std::atomic<bool> g_mempool{false};
std::atomic<bool> g_attach_tried{false};
std::atomic<uint64_t> g_version{0};

// The latest tensor allocations, for the self-check: the probe tensor must be among them. Kept
// only until the self-check has passed: afterwards the tracker spends no locked instruction on it.
std::atomic<bool> g_self_check_pending{true};
struct Seen {
  std::atomic<uint64_t> address{0}, size{0};
  std::atomic<int> device{-1};
};
constexpr unsigned kSeen = 16;
Seen g_seen[kSeen];
std::atomic<unsigned> g_seen_next{0};

// PyTorch's TraceEntry, read by offset (torch_layouts.h); never copied or constructed here.
struct TraceEntry;
using Tracker = std::function<void(const TraceEntry&)>;

template <typename T>
T field(const TraceEntry& entry, size_t offset) {
  T v;
  std::memcpy(&v, reinterpret_cast<const unsigned char*>(&entry) + offset, sizeof v);
  return v;
}

Op op_for(int32_t action) {
  switch (action) {
    case 0: return Op::TensorAlloc;
    case 1: return Op::TensorFreeRequested;
    case 2: return Op::TensorFreeCompleted;
    case 3: return Op::SegmentAlloc;
    case 4: return Op::SegmentFree;
    case 5: return Op::SegmentMap;
    case 6: return Op::SegmentUnmap;
    case 8: return Op::FrameworkOom;
    default: return Op::None;  // SNAPSHOT and anything newer: not memory
  }
}

// The tracker. Under PyTorch's allocator lock: copy the fields into the ring and return; no GIL,
// no call into PyTorch, no allocation, nothing that can throw.
void on_trace_entry(const TraceEntry& entry) noexcept {
  // Never starts a session (a forked DataLoader worker dropping an inherited tensor must not get a
  // run directory): in a process that uses CUDA, the driver's first event started it.
  if (g_state.load(std::memory_order_relaxed) != State::Recording || !session_running()) return;
  constexpr TraceEntryLayout L = kTraceEntryLayout;
  const Op op = op_for(field<int32_t>(entry, L.action));
  if (op == Op::None) return;
  const int device = field<int8_t>(entry, L.device);
  const uint64_t addr = field<uint64_t>(entry, L.addr);
  const uint64_t size = field<uint64_t>(entry, L.size);
  const uint64_t stream = field<uint64_t>(entry, L.stream);
  // The pool of a tensor or a segment: a CUDA graph's private pool, or 0 for the default one.
  const bool pooled = op == Op::TensorAlloc || op == Op::SegmentAlloc || op == Op::SegmentMap;
  const uint64_t pool = pooled && g_mempool.load(std::memory_order_relaxed)
                            ? framework_pool_id(field<uint64_t>(entry, L.mempool), field<uint64_t>(entry, L.mempool + 8))
                            : 0;
  if (op == Op::TensorAlloc && g_self_check_pending.load(std::memory_order_relaxed)) {  // paused or not
    Seen& s = g_seen[g_seen_next.fetch_add(1, std::memory_order_relaxed) % kSeen];
    s.address.store(addr, std::memory_order_relaxed);
    s.size.store(size, std::memory_order_relaxed);
    s.device.store(device, std::memory_order_relaxed);
  }
  uint32_t stack = 0;
  // Like driver allocations, new memory is not recorded while paused; releases always are.
  if ((op == Op::TensorAlloc || op == Op::SegmentAlloc || op == Op::SegmentMap) && !prepare_framework_event(&stack)) {
    return;
  }
  session_record(device, [&](Event& e) {
    if (op == Op::FrameworkOom) {
      FrameworkOomRecord{size, addr}.to_event(e);  // PyTorch passes the device's free bytes in addr
      e.stream = stream;
    } else {
      FrameworkBlockRecord{addr, size, stream, pool}.to_event(e, op);
      e.stack_id = op == Op::TensorAlloc ? stack : 0;
    }
    e.api = Api::torch_caching_allocator;
  });
}

void record_attach(bool attached, FrameworkRefusal why, int device) {
  session_record(device, [&](Event& e) {
    FrameworkAttachRecord{attached, g_version.load(std::memory_order_relaxed), why}.to_event(e);
    e.api = Api::torch_caching_allocator;
  });
}

// One log line, then the driver level carries on as without the bridge. Expected refusals (the
// user's own setting, the cudaMallocAsync backend whose tensors the driver level sees exactly) are
// information; the others are warnings.
FrameworkRefusal refuse(FrameworkRefusal why, std::string_view detail, bool expected = false) {
  const std::string line = fmt::format("PyTorch tensor-level recording off ({}): {}", framework_refusal_name(why), detail);
  if (expected) {
    log_info(line);
  } else {
    log_warn(line + "; recording at driver level");
  }
  record_attach(false, why, -1);
  return why;
}

// The allocator object, checked to be PyTorch's native caching allocator; nullptr with *why set.
void* native_allocator(FrameworkRefusal* why, std::string* detail) {
  void* lib = dlopen(kAllocatorLibrary, RTLD_LAZY | RTLD_NOLOAD);
  auto* slot = lib != nullptr ? static_cast<std::atomic<void*>*>(real_dlsym()(lib, kAllocatorSymbol)) : nullptr;
  void* allocator = slot != nullptr ? slot->load() : nullptr;
  if (lib != nullptr) dlclose(lib);
  if (allocator == nullptr) {
    *why = FrameworkRefusal::NoAllocator;
    *detail = std::string(kAllocatorLibrary) + " has no allocator object";
    return nullptr;
  }
  // vtable[-1] is the std::type_info (null without RTTI), whose second word is the mangled name
  // ('*' marks local types).
  void** vtable = *static_cast<void***>(allocator);
  const char* type = vtable[-1] == nullptr ? nullptr
                     : *reinterpret_cast<const char* const*>(static_cast<const char*>(vtable[-1]) + sizeof(void*));
  if (type != nullptr && *type == '*') ++type;
  if (type == nullptr || std::strcmp(type, kNativeAllocatorType) != 0) {
    *why = FrameworkRefusal::OtherBackend;
    *detail = std::string("the allocator is ") + (type != nullptr ? type : "of an unknown type");
    return nullptr;
  }
  return allocator;
}

}  // namespace

bool framework_recording() { return g_state.load() == State::Recording; }

// major.minor.patch of torch.__version__, and torch.cuda.get_allocator_backend(). 0 when attached,
// else the FrameworkRefusal. Attaches once per process.
GMP_EXPORT int gpumemprof_framework_attach(int major, int minor, int patch, const char* backend) {
  if (g_attach_tried.exchange(true)) return g_state.load() == State::Recording ? 0 : int(FrameworkRefusal::AttachFailed);
  if (session_get() == nullptr) return int(FrameworkRefusal::Disabled);  // profiling is off: nothing to record
  g_version.store(framework_version(major, minor, patch));
  const std::string version = framework_version_text(g_version.load());
  if (g_framework_off.load(std::memory_order_relaxed)) {
    return int(refuse(FrameworkRefusal::Disabled, "GPUMEMPROF_FRAMEWORK=off", true));
  }
  if (backend != nullptr && std::string_view(backend) == "uncached") {
    return int(refuse(FrameworkRefusal::OtherBackend,
                      "PYTORCH_NO_CUDA_MEMORY_CACHING: every tensor is a cudaMalloc, recorded exactly at driver level",
                      true));
  }
  if (backend != nullptr && std::string_view(backend) == "cudaMallocAsync") {
    return int(refuse(FrameworkRefusal::OtherBackend,
                      "allocator backend cudaMallocAsync: every tensor is a stream-ordered driver allocation, "
                      "recorded exactly at driver level",
                      true));
  }
  if (backend == nullptr || std::string_view(backend) != "native") {
    return int(refuse(FrameworkRefusal::OtherBackend, std::string("allocator backend ") + (backend ? backend : "?")));
  }
  const TorchLayout* layout = find_torch_layout(major, minor);
  if (layout == nullptr || (!layout->checked && !g_framework_unverified.load(std::memory_order_relaxed))) {
    return int(refuse(FrameworkRefusal::UnknownVersion,
                      "torch " + version +
                          (layout == nullptr ? " has no known layout"
                                             : " has a layout not checked against its headers "
                                               "(GPUMEMPROF_FRAMEWORK=unverified uses it)")));
  }
  FrameworkRefusal why = FrameworkRefusal::None;
  std::string detail;
  void* allocator = native_allocator(&why, &detail);
  if (allocator == nullptr) return int(refuse(why, detail));
  void** vtable = *static_cast<void***>(allocator);
  void* attach = vtable[layout->attach_slot];
  Dl_info where{};
  if (dladdr(attach, &where) == 0 || where.dli_fname == nullptr || std::strstr(where.dli_fname, "libc10_cuda") == nullptr) {
    return int(refuse(FrameworkRefusal::UnknownVersion, "torch " + version + ": the table's slot is not in " +
                                                             std::string(kAllocatorLibrary)));
  }
  // The tracker is taken by value: in the Itanium C++ ABI the caller passes a pointer to its own
  // copy and destroys it after the call; PyTorch keeps copies (std::function's layout is the same
  // in every libstdc++ of the C++11 ABI).
  g_mempool.store(layout->mempool, std::memory_order_relaxed);
  g_state.store(State::Recording, std::memory_order_release);
  record_attach(true, FrameworkRefusal::None, -1);
  Tracker tracker(&on_trace_entry);
  try {
    reinterpret_cast<void (*)(void*, Tracker*)>(attach)(allocator, &tracker);
  } catch (...) {
    g_state.store(State::Off);
    return int(refuse(FrameworkRefusal::AttachFailed, "PyTorch refused the tracker"));
  }
  log_info(fmt::format("PyTorch {}: tensor-level recording attached to the native caching allocator ({})", version,
                       layout->source));
  return 0;
}

// What existed before the tracker was attached, from torch.cuda.memory_snapshot(): op is
// TensorAlloc, TensorFreeRequested, SegmentAlloc or SegmentMap.
GMP_EXPORT void gpumemprof_framework_seed(int op, int device, uint64_t address, uint64_t size, uint64_t stream) {
  if (g_state.load() != State::Recording) return;
  const Op o = static_cast<Op>(op);
  if (o != Op::TensorAlloc && o != Op::TensorFreeRequested && o != Op::SegmentAlloc && o != Op::SegmentMap) return;
  session_record(device, [&](Event& e) {
    FrameworkBlockRecord{address, size, stream, 0, true}.to_event(e, o);
    e.api = Api::torch_caching_allocator;
  });
}

// The bootstrap allocated a tensor of `size` bytes at `address` on `device`: 1 if the tracker saw
// exactly that; otherwise the bridge detaches (records nothing more) and 0. The bootstrap also
// calls it with size 0 to detach when its own set-up failed half way.
GMP_EXPORT int gpumemprof_framework_self_check(uint64_t address, uint64_t size, int device) {
  if (g_state.load() != State::Recording) return 0;
  for (const Seen& s : g_seen) {
    if (size == 0) break;  // the bootstrap's own failure: detach
    if (s.address.load() == address && s.size.load() == size && s.device.load() == device) {
      g_self_check_pending.store(false, std::memory_order_relaxed);
      return 1;
    }
  }
  g_state.store(State::Detached);
  log_warn(
      fmt::format("PyTorch tensor-level recording detached: the self-check allocation of {} bytes did not "
                  "arrive as expected; recording at driver level",
                  size));
  record_attach(false, FrameworkRefusal::SelfCheckFailed, device);
  return 0;
}

// From PyTorch's OOM observer, after it released its lock and before it raises: its own figures.
// Returns once the OOM bundle is written (bounded by GPUMEMPROF_OOM_WAIT_MS).
GMP_EXPORT void gpumemprof_framework_oom(int device, uint64_t requested, uint64_t capacity, uint64_t free_bytes,
                                         uint64_t allocated, uint64_t reserved) {
  if (g_state.load() != State::Recording) return;
  session_record(device, [&](Event& e) {
    FrameworkOomFiguresRecord{requested, free_bytes, capacity, allocated, reserved}.to_event(e);
    e.api = Api::torch_caching_allocator;
  });
  session_wait_for_collector();
}

}  // namespace gmp::shim
