// The tool side of the tensor categories (model/tensor_categories.h decides them): a replay's
// categorizer, reading the KV cache's code from the trace's stacks, and the splits the outputs show.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "accounting.h"
#include "attribution_reader.h"
#include "bytes.h"
#include "event.h"
#include "symbolizer.h"
#include "tensor_categories.h"

namespace gmp::analysis {

// A categorizer for one replay of a trace whose stacks are `attribution`'s (which must outlive it).
TensorCategories replay_categories(const reader::Attribution& attribution);

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
