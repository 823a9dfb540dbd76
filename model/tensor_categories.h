// What each tensor's memory is for (docs/framework-bridge.md §Categories): one state machine over
// the event stream, run by the tools on a trace (Use::Replay: a tensor's verdict is final once it
// is freed or the trace ends, and kept for the report) and by the collector as the program runs
// (Use::Live: the bytes of each category as far as they are decided now, and at a window's peak).
//
// A tensor's category:
// - the label that reached it while it was allocated (a label names the allocation live at its
//   address, whenever in its life it came);
// - kv_cache: allocated with transformers' cache_utils.py (kKvCacheFile) on its Python stack;
// - activations: allocated in a forward phase and still allocated when the next backward began,
//   unless still allocated when a later backward begins (kept state, such as DDP's buckets: other);
// - temporaries: let go in the phase it was allocated in;
// - other: the rest, and what existed before the bridge attached or before the window;
// - unknown: every tensor of a run in which nothing was labelled and no phase was marked (the
//   bootstrap did not run, or GPUMEMPROF_CATEGORIES=0): not decided, rather than guessed.
// A tensor still allocated at the end of the trace that no backward followed is other; at an OOM
// (finish(true)), a tensor of the forward it cut short counts as an activation when the run had
// backward passes before.
//
// Live, one more case is not decided yet: an unlabelled tensor still held in the phase it was
// allocated in (or, in a run that marks no phases, any unlabelled tensor still held) may yet be an
// activation, a temporary or other, so it counts as unknown until it is let go or its phase ends.
// A label that comes later (gradients are labelled when the optimizer steps) moves the tensor's
// bytes then.
//
// Memory grows with the live tensors; in Use::Replay also with the tensors that were not
// temporaries (their verdicts), never in Use::Live.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>

#include "accounting.h"
#include "event.h"

namespace gmp {

// The file whose allocations are a KV cache: where Hugging Face transformers keeps its cache classes.
inline constexpr std::string_view kKvCacheFile = "transformers/cache_utils.py";

// Bytes by TensorCategory (indexed by its value).
using CategoryBytes = std::array<uint64_t, kTensorCategoryCount>;

struct Phase {
  TrainingPhase phase = TrainingPhase::None;
  uint64_t step = 0, micro_batch = 0;
  uint64_t begin_index = 0;  // trace position of its Phase event
};

struct TensorVerdict {
  TensorCategory category = TensorCategory::Unknown;
  uint32_t name_id = 0;  // a label's name in attribution.jsonl; 0 none
};

class TensorCategories {
 public:
  enum class Use { Replay, Live };
  // Whether the call stack of that id has kKvCacheFile among its Python frames; asked once per id.
  using CacheCode = std::function<bool(uint32_t stack_id)>;
  TensorCategories(Use use, CacheCode allocated_by_cache_code);

  // The tensors live where a replay's window starts: they existed before it.
  void start(const Accounting& acc);
  // Every event, in order; `index` is its trace position (the phases' begin_index).
  void add(const Event& e, uint64_t index = 0);
  // The end of a replay: decides the tensors still allocated. `cut_short`: the replay stops at an
  // OOM, which cut the current forward short.
  void finish(bool cut_short = false);

  // Whether anything was labelled or a phase marked: without either, every tensor is unknown.
  bool decided() const { return labels_ > 0 || spans_ > 0; }
  uint64_t labels() const { return labels_; }
  uint64_t backward_passes() const { return backward_passes_; }
  uint64_t optimizer_steps() const { return optimizer_steps_; }
  // Use::Replay, after finish(): the verdict on a tensor (a LiveAllocation of Accounting::live_tensors()).
  TensorVerdict of(const LiveAllocation& tensor) const;
  // The phase the stream is in now; none before the first Phase event.
  const std::optional<Phase>& phase() const { return current_; }

  // The device's tensors now, by category as decided so far (zeros for a device without tensors).
  const CategoryBytes& now(int device) const;
  // The device's tensor level just reached a window's peak: at_peak() splits the tensors held then.
  void mark_peak(int device);
  // The tensors held at the device's last mark_peak(), by category as decided now: those let go
  // since by their final verdict, the rest as now(). O(live tensors).
  CategoryBytes at_peak(int device) const;

 private:
  struct Live {
    uint64_t alloc_ns = 0;
    uint64_t size = 0;
    uint64_t order = 0;          // allocations before it, this one included: held at a peak marked at or after it
    int device = 0;
    uint32_t span = 0;           // the phases begun before its allocation (0: before the first)
    uint32_t let_go_span = 0;
    uint32_t name_id = 0;
    TensorCategory label = TensorCategory::Unknown;
    TensorCategory counted = TensorCategory::Unknown;  // where now() counts its bytes
    bool kv_cache = false, existed = false, let_go = false;
    bool activation = false;  // allocated in the forward that the latest backward followed
  };
  struct Key {
    uint64_t address, alloc_ns;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.address * 0x9E3779B97F4A7C15ull ^ k.alloc_ns); }
  };
  struct DevicePeak {
    uint64_t order = 0;     // the allocations made when the peak was marked
    CategoryBytes let_go{};  // the tensors held then and freed since, by verdict
  };

  bool allocated_by_cache_code(uint32_t stack_id);
  void on_phase(const Event& e, uint64_t index);
  void hold(uint64_t address, Live l);
  void drop(std::unordered_map<uint64_t, Live>::iterator it, bool cut_short);
  TensorCategory decide(const Live& t, bool cut_short) const;  // final
  TensorCategory so_far(const Live& t) const;                  // live
  void recount(Live& t);
  void recount_all();

  Use use_;
  CacheCode cache_code_;
  std::unordered_map<uint64_t, Live> live_;  // by address, as Accounting keeps tensors
  std::unordered_map<Key, TensorVerdict, KeyHash> verdicts_;  // Use::Replay: the tensors that were not temporaries
  std::unordered_map<uint32_t, bool> cache_stacks_;  // stack id -> allocated by cache code
  std::map<int, CategoryBytes> now_;
  std::map<int, DevicePeak> peaks_;
  std::optional<Phase> current_;
  uint32_t spans_ = 0;  // Phase events so far: what a phase is told apart by
  uint64_t orders_ = 0, labels_ = 0, backward_passes_ = 0, optimizer_steps_ = 0;
};

}  // namespace gmp
