#include "category_levels.h"

#include <algorithm>

#include "records.h"

namespace gmp::analysis {
namespace {
const CategoryBytes kNone{};
}  // namespace

void CategoryLevels::start(const Accounting& acc) {
  for (const LiveAllocation& t : acc.live_tensors()) hold(t.address, t);
}

void CategoryLevels::hold(uint64_t address, const LiveAllocation& tensor) {
  const TensorCategory c = categories_.of(tensor).category;
  held_[address] = Held{tensor.device, c, tensor.size};
  const auto i = static_cast<size_t>(c);
  uint64_t& now = current_[tensor.device][i];
  now += tensor.size;
  uint64_t& peak = peaks_[tensor.device][i];
  peak = std::max(peak, now);
}

void CategoryLevels::release(uint64_t address) {
  auto it = held_.find(address);
  if (it == held_.end()) return;
  uint64_t& now = current_[it->second.device][static_cast<size_t>(it->second.category)];
  now -= std::min(now, it->second.size);
  held_.erase(it);
}

// The same tensor table as Accounting's: a tensor counts from its allocation to its completed free,
// a seed that repeats a live tensor is ignored, an allocation at a live address replaces it.
void CategoryLevels::add(const Event& e) {
  if (e.op == Op::TensorAlloc) {
    if (FrameworkBlockRecord::from_event(e).seeded && held_.count(e.address) != 0) return;
    release(e.address);
    LiveAllocation t;
    t.address = e.address;
    t.size = e.size;
    t.timestamp_ns = e.timestamp_ns;
    t.device = e.device;
    hold(e.address, t);
  } else if (e.op == Op::TensorFreeCompleted) {
    release(e.address);
  }
}

const CategoryBytes& CategoryLevels::current(int device) const {
  auto it = current_.find(device);
  return it != current_.end() ? it->second : kNone;
}

std::vector<int> CategoryLevels::devices() const {
  std::vector<int> out;
  for (const auto& [device, _] : peaks_) out.push_back(device);
  return out;
}

const CategoryBytes& CategoryLevels::peaks(int device) const {
  auto it = peaks_.find(device);
  return it != peaks_.end() ? it->second : kNone;
}

}  // namespace gmp::analysis
