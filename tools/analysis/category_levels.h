// The tensors' bytes per category over time (tensor_categories.h decides each tensor's category with
// hindsight, so this runs in the replay after it): each device's current bytes per category and
// each category's peak. Feeds the timeline's stacked categories and `check --max-category`.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "accounting.h"
#include "event.h"
#include "category_split.h"

namespace gmp::analysis {


class CategoryLevels {
 public:
  explicit CategoryLevels(const TensorCategories& categories) : categories_(categories) {}
  void start(const Accounting& acc);  // the tensors live where the window starts
  void add(const Event& e);
  // Zeros for a device without tensors.
  const CategoryBytes& current(int device) const;
  const CategoryBytes& peaks(int device) const;
  std::vector<int> devices() const;  // those that held tensors

 private:
  struct Held {
    int16_t device;
    TensorCategory category;
    uint64_t size;
  };
  void hold(uint64_t address, const LiveAllocation& tensor);
  void release(uint64_t address);

  const TensorCategories& categories_;
  std::unordered_map<uint64_t, Held> held_;  // by address, as Accounting keeps tensors
  std::map<int, CategoryBytes> current_, peaks_;
};

}  // namespace gmp::analysis
