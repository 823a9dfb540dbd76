#include "category_split.h"

#include <algorithm>

#include "records.h"
#include "call_sites.h"

namespace gmp::analysis {

TensorCategories replay_categories(const reader::Attribution& attribution) {
  return TensorCategories(TensorCategories::Use::Replay, [&attribution](uint32_t stack_id) {
    const reader::StackRecord* stack = attribution.stack(stack_id);
    for (size_t i = 0; stack != nullptr && i < stack->frames.size(); ++i) {
      if (!stack->frames[i].python) continue;
      const reader::PyFrameRecord* py = attribution.pyframe(static_cast<uint32_t>(stack->frames[i].value));
      if (py != nullptr && std::string_view(py->file).ends_with(kKvCacheFile)) return true;
    }
    return false;
  });
}

CategorySplit split_by_category(const std::vector<LiveAllocation>& tensors, int device,
                                const TensorCategories& categories, const reader::Attribution& attribution) {
  CategorySplit out;
  out.decided = categories.decided();
  for (const LiveAllocation& t : tensors) {
    if (t.device != device) continue;
    const TensorVerdict v = categories.of(t);
    CategoryFigures& f = out.by_category[static_cast<size_t>(v.category)];
    out.total.add(t.size);
    f.total.add(t.size);
    if (const std::string* label = v.name_id != 0 ? attribution.name(v.name_id) : nullptr) {
      f.by_label[*label].add(t.size);
    } else {
      f.by_stack[t.stack_id].add(t.size);
    }
  }
  return out;
}

void stack_ids(const CategorySplit& split, std::vector<uint32_t>& ids) {
  for (const CategoryFigures& f : split.by_category) {
    for (const auto& [id, _] : f.by_stack) {
      if (id != 0) ids.push_back(id);
    }
  }
}

void name_items(CategorySplit& split, const StackTable& stacks, size_t largest) {
  for (CategoryFigures& f : split.by_category) {
    f.largest.clear();
    for (const auto& [name, bytes] : f.by_label) f.largest.push_back({name, bytes});
    for (const CallSite& site : group_by_site(f.by_stack, stacks, largest)) f.largest.push_back({site.label, site.bytes});
    std::sort(f.largest.begin(), f.largest.end(), [](const CategoryItem& a, const CategoryItem& b) {
      return a.bytes.bytes != b.bytes.bytes ? a.bytes.bytes > b.bytes.bytes : a.name < b.name;
    });
    if (f.largest.size() > largest) f.largest.resize(largest);
  }
}

std::string category_label(TensorCategory c) {
  std::string s(tensor_category_name(c));
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

std::string phase_text(const Phase& p) {
  std::string s = std::string(training_phase_name(p.phase)) + " of step " + std::to_string(p.step);
  if (p.micro_batch > 1) s += ", micro-batch " + std::to_string(p.micro_batch);
  return s;
}

std::string undecided_reason(bool categories_setting) {
  if (!categories_setting) return "GPUMEMPROF_CATEGORIES=0 turned the category hooks off";
  return "the Python bootstrap labelled no tensor and marked no phase (python -S, -I or -E, PyTorch imported "
         "without it, or the process ended before its first label)";
}

}  // namespace gmp::analysis
