#include "category_json.h"

namespace gmp::analysis {

nlohmann::json category_split_json(const CategorySplit& split, bool categories_setting) {
  nlohmann::json categories = nlohmann::json::array();
  for (TensorCategory category : kCategoryOrder) {
    const auto c = static_cast<size_t>(category);
    const CategoryFigures& f = split.by_category[c];
    nlohmann::json largest = nlohmann::json::array();
    for (const CategoryItem& item : f.largest) {
      largest.push_back({{"name", item.name}, {"bytes", item.bytes.bytes}, {"count", item.bytes.count}});
    }
    const double share = split.total.bytes != 0 ? double(f.total.bytes) / double(split.total.bytes) : 0.0;
    categories.push_back({{"category", tensor_category_name(static_cast<TensorCategory>(c))},
                          {"bytes", f.total.bytes},
                          {"count", f.total.count},
                          {"share", share},
                          {"largest", largest}});
  }
  nlohmann::json phase;
  if (split.phase) {
    phase = {{"kind", training_phase_name(split.phase->phase)},
             {"step", split.phase->step},
             {"micro_batch", split.phase->micro_batch}};
  }
  nlohmann::json out = {{"decided", split.decided}, {"phase", phase}, {"total", split.total.bytes},
                        {"categories", categories}};
  if (!split.decided) out["why_undecided"] = undecided_reason(categories_setting);
  return out;
}

}  // namespace gmp::analysis
