// The report's tensors by category (docs/report.md, "Categories"): at the tensor peak and at exit.
#pragma once

#include <string>

#include "run_analysis.h"

namespace gmp::tool {

// "  tensors by category at <moment> (<phase>):" and a table of the categories that hold memory,
// each with its share and largest item; one line saying why when nothing decided them.
void print_categories(const std::string& moment, const analysis::CategorySplit& split, bool categories_setting);

}  // namespace gmp::tool
