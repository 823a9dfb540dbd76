// What each tensor's memory is for (docs/framework-bridge.md §Categories), decided with hindsight
// from one replay of the trace: the bootstrap's labels (parameters, gradients, optimizer state), the
// training phases it marked, and the Python line that allocated a tensor (a KV cache's code).
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
// Fed every event of the replay in order, as the first pass's other aggregators are; memory grows
// with the live tensors and the tensors that were not temporaries, not with the phases.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "accounting.h"
#include "attribution_reader.h"
#include "bytes.h"
#include "event.h"
#include "symbolizer.h"

namespace gmp::analysis {

// The file whose allocations are a KV cache: where Hugging Face transformers keeps its cache classes.
inline constexpr std::string_view kKvCacheFile = "transformers/cache_utils.py";

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
  explicit TensorCategories(const reader::Attribution& attribution) : attribution_(attribution) {}
  // The tensors live where a window starts (trace position `index`): they existed before it.
  void start(const Accounting& acc, uint64_t index);
  void add(const Event& e, uint64_t index);
  // The end of the replay: decides the tensors still allocated. `cut_short`: the replay stops at an
  // OOM, which cut the current forward short.
  void finish(bool cut_short = false);

  // Whether anything was labelled or a phase marked: without either, every tensor is unknown.
  bool decided() const { return labels_ > 0 || spans_ > 0; }
  uint64_t labels() const { return labels_; }
  uint64_t backward_passes() const { return backward_passes_; }
  uint64_t optimizer_steps() const { return optimizer_steps_; }
  // The verdict on a tensor (a LiveAllocation of Accounting::live_tensors()); after finish().
  TensorVerdict of(const LiveAllocation& tensor) const;
  // The phase the replay is in now; none before the first Phase event.
  const std::optional<Phase>& phase() const { return current_; }

 private:
  struct Live {
    uint64_t alloc_ns = 0;
    uint32_t span = 0;           // the phases begun before its allocation (0: before the first)
    uint32_t let_go_span = 0;
    uint32_t name_id = 0;
    TensorCategory label = TensorCategory::Unknown;
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

  bool allocated_by_cache_code(uint32_t stack_id);
  void on_phase(const Event& e, uint64_t index);
  TensorCategory decide(const Live& t, bool cut_short) const;
  void settle(uint64_t address, const Live& t, bool cut_short);

  const reader::Attribution& attribution_;
  std::unordered_map<uint64_t, Live> live_;  // by address, as Accounting keeps tensors
  std::unordered_map<Key, TensorVerdict, KeyHash> verdicts_;  // the tensors that were not temporaries
  std::unordered_map<uint32_t, bool> cache_stacks_;  // stack id -> allocated by cache code
  std::optional<Phase> current_;
  uint32_t spans_ = 0;  // Phase events so far: what a phase is told apart by
  uint64_t labels_ = 0, backward_passes_ = 0, optimizer_steps_ = 0;
};

// A set of tensors by category, with the largest items of each: a label's name (a parameter's
// module path) or, unlabelled, the call site that allocated it (call_sites.h).
struct CategoryItem {
  std::string name;
  Bytes bytes;
};
struct CategoryFigures {
  Bytes total;
  std::unordered_map<std::string, Bytes> by_label;  // labelled tensors by their label's name
  std::unordered_map<uint32_t, Bytes> by_stack;     // the others by stack id (0: none captured)
  std::vector<CategoryItem> largest;                // name_items(): biggest first
};
struct CategorySplit {
  bool decided = false;  // TensorCategories::decided()
  Bytes total;
  std::array<CategoryFigures, kTensorCategoryCount> by_category{};
  std::optional<Phase> phase;  // where the run was at that moment
};

// `tensors` (of any devices) on `device`, split by category; the items are named by name_items().
CategorySplit split_by_category(const std::vector<LiveAllocation>& tensors, int device,
                                const TensorCategories& categories, const reader::Attribution& attribution);
// The stack ids the split's unlabelled tensors carry, added to `ids` (to be symbolised once).
void stack_ids(const CategorySplit& split, std::vector<uint32_t>& ids);
// Each category's `largest` items from its labels and, by call site, its stacks (`stacks`
// symbolised), biggest first.
void name_items(CategorySplit& split, const StackTable& stacks, size_t largest);

// The order every output lists categories in: parameters to other, then unknown.
inline constexpr std::array<TensorCategory, kTensorCategoryCount> kCategoryOrder = {
    TensorCategory::Parameters,  TensorCategory::Gradients, TensorCategory::OptimizerState,
    TensorCategory::Activations, TensorCategory::Temporaries, TensorCategory::KvCache,
    TensorCategory::Other,       TensorCategory::Unknown};

// A category as the text outputs name it: "optimizer state", "kv cache".
std::string category_label(TensorCategory c);

// "backward of step 3, micro-batch 2", "forward of step 1".
std::string phase_text(const Phase& p);

// Why a run's tensors are all unknown (CategorySplit::decided false): `categories_setting` is
// GPUMEMPROF_CATEGORIES as the manifest recorded it.
std::string undecided_reason(bool categories_setting);

}  // namespace gmp::analysis
