#include "tensor_categories.h"

#include <algorithm>

#include "records.h"
#include "call_sites.h"

namespace gmp::analysis {
namespace {

// Labels that reach one tensor twice keep the first category in this order: a parameter that is
// also reached as an optimizer's parameter stays a parameter.
TensorCategory stronger(TensorCategory held, TensorCategory label) {
  if (held == TensorCategory::Unknown) return label;
  return static_cast<uint8_t>(label) < static_cast<uint8_t>(held) ? label : held;
}

}  // namespace

void TensorCategories::start(const Accounting& acc, uint64_t /*index*/) {
  for (const LiveAllocation& t : acc.live_tensors()) {
    Live& l = live_[t.address];
    l.alloc_ns = t.timestamp_ns;
    l.existed = true;
  }
}

bool TensorCategories::allocated_by_cache_code(uint32_t stack_id) {
  if (stack_id == 0) return false;
  auto [it, fresh] = cache_stacks_.try_emplace(stack_id, false);
  const reader::StackRecord* stack = fresh ? attribution_.stack(stack_id) : nullptr;
  for (size_t i = 0; stack != nullptr && i < stack->frames.size() && !it->second; ++i) {
    if (!stack->frames[i].python) continue;
    const reader::PyFrameRecord* py = attribution_.pyframe(static_cast<uint32_t>(stack->frames[i].value));
    it->second = py != nullptr && std::string_view(py->file).ends_with(kKvCacheFile);
  }
  return it->second;
}

void TensorCategories::add(const Event& e, uint64_t index) {
  const uint32_t span = spans_;
  switch (e.op) {
    case Op::TensorAlloc: {
      const bool seeded = FrameworkBlockRecord::from_event(e).seeded;
      auto it = live_.find(e.address);
      if (it != live_.end()) {
        if (seeded) break;  // a seed repeating what an event already said (as Accounting)
        settle(e.address, it->second, false);  // its free never reached us
        live_.erase(it);
      }
      Live& l = live_[e.address];
      l.alloc_ns = e.timestamp_ns;
      l.span = span;
      l.existed = seeded;
      l.kv_cache = allocated_by_cache_code(e.stack_id);
      break;
    }
    case Op::TensorFreeRequested:
    case Op::TensorFreeCompleted: {
      auto it = live_.find(e.address);
      if (it == live_.end()) break;
      if (!it->second.let_go) {  // the program let go at its request; a completion may come later
        it->second.let_go = true;
        it->second.let_go_span = span;
      }
      if (e.op == Op::TensorFreeCompleted) {
        settle(e.address, it->second, false);
        live_.erase(it);
      }
      break;
    }
    case Op::TensorLabel: {
      const TensorLabelRecord r = TensorLabelRecord::from_event(e);
      if (r.category == TensorCategory::Unknown) break;
      ++labels_;
      auto it = live_.find(r.address);
      if (it == live_.end()) break;
      const TensorCategory was = it->second.label;
      it->second.label = stronger(was, r.category);
      if (it->second.label != was && r.name_id != 0) it->second.name_id = r.name_id;
      break;
    }
    case Op::Phase: on_phase(e, index); break;
    default: break;
  }
}

void TensorCategories::on_phase(const Event& e, uint64_t index) {
  const PhaseRecord r = PhaseRecord::from_event(e);
  if (r.phase == TrainingPhase::None) return;
  const uint32_t closing = spans_++;
  // Before the first phase event the program was in a forward (or never trains).
  const TrainingPhase was = current_ ? current_->phase : TrainingPhase::Forward;
  current_ = Phase{r.phase, r.step, r.micro_batch, index};
  const bool backward_begins = r.phase == TrainingPhase::Backward && was == TrainingPhase::Forward;
  if (backward_begins) ++backward_passes_;
  if (r.phase == TrainingPhase::Optimizer) ++optimizer_steps_;
  if (!backward_begins) return;
  for (auto& [_, t] : live_) {
    if (t.let_go) continue;
    t.activation = false;  // still held when another backward begins: kept state (DDP's buckets), not an activation
    if (t.span == closing && t.label == TensorCategory::Unknown && !t.kv_cache && !t.existed) t.activation = true;
  }
}

TensorCategory TensorCategories::decide(const Live& t, bool cut_short) const {
  if (t.label != TensorCategory::Unknown) return t.label;
  if (t.kv_cache) return TensorCategory::KvCache;
  if (t.existed) return TensorCategory::Other;
  if (t.activation) return TensorCategory::Activations;
  if (!t.let_go) {
    const TrainingPhase current = current_ ? current_->phase : TrainingPhase::Forward;
    const bool cut_short_forward = cut_short && t.span == spans_ && current == TrainingPhase::Forward && backward_passes_ > 0;
    return cut_short_forward ? TensorCategory::Activations : TensorCategory::Other;
  }
  return t.let_go_span == t.span ? TensorCategory::Temporaries : TensorCategory::Other;
}

void TensorCategories::settle(uint64_t address, const Live& t, bool cut_short) {
  const TensorCategory c = decide(t, cut_short);
  if (c != TensorCategory::Temporaries) verdicts_[Key{address, t.alloc_ns}] = TensorVerdict{c, t.name_id};
}

void TensorCategories::finish(bool cut_short) {
  for (const auto& [address, t] : live_) settle(address, t, cut_short);
  live_.clear();
}

TensorVerdict TensorCategories::of(const LiveAllocation& tensor) const {
  if (!decided()) return {};
  auto it = verdicts_.find(Key{tensor.address, tensor.timestamp_ns});
  return it != verdicts_.end() ? it->second : TensorVerdict{TensorCategory::Temporaries, 0};
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
