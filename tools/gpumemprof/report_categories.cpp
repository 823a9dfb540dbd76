#include "report_categories.h"

#include <cstdio>

#include "bytes_text.h"
#include "human_text.h"

namespace gmp::tool {

void print_categories(const std::string& moment, const analysis::CategorySplit& split, bool categories_setting) {
  if (split.total.count == 0) return;
  if (!split.decided) {
    say("tensors by category " + moment + ": not decided: " + analysis::undecided_reason(categories_setting), "  ",
        "    ");
    return;
  }
  std::string heading = "  tensors by category " + moment;
  if (split.phase) heading += " (" + analysis::phase_text(*split.phase) + ")";
  std::printf("%s:\n", heading.c_str());
  std::vector<std::vector<std::string>> table{{"category", "bytes", "share", "tensors", "largest"}};
  for (TensorCategory category : analysis::kCategoryOrder) {
    const auto c = static_cast<size_t>(category);
    const analysis::CategoryFigures& f = split.by_category[c];
    if (f.total.count == 0) continue;
    char share[16];
    std::snprintf(share, sizeof share, "%.1f%%", 100.0 * double(f.total.bytes) / double(split.total.bytes));
    std::string largest;
    if (!f.largest.empty()) {
      const analysis::CategoryItem& top = f.largest.front();
      largest = top.name + " (" + bytes_text(top.bytes.bytes) +
                (top.bytes.count > 1 ? ", " + std::to_string(top.bytes.count) + " tensors" : "") + ")";
    }
    table.push_back({analysis::category_label(static_cast<TensorCategory>(c)), bytes_text(f.total.bytes), share,
                     std::to_string(f.total.count), largest});
  }
  print_table(std::move(table), TableLayout{.indent = 4, .gap = 2, .header_rows = 1, .elastic = 4, .right = {1, 2, 3}});
}

}  // namespace gmp::tool
