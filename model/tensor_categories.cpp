#include "tensor_categories.h"

#include "records.h"

namespace gmp {
namespace {

// Labels that reach one tensor twice keep the first category in this order: a parameter that is
// also reached as an optimizer's parameter stays a parameter.
TensorCategory stronger(TensorCategory held, TensorCategory label) {
  if (held == TensorCategory::Unknown) return label;
  return static_cast<uint8_t>(label) < static_cast<uint8_t>(held) ? label : held;
}

size_t slot(TensorCategory c) { return static_cast<size_t>(c); }

}  // namespace

TensorCategories::TensorCategories(Use use, CacheCode allocated_by_cache_code)
    : use_(use), cache_code_(std::move(allocated_by_cache_code)) {}

void TensorCategories::start(const Accounting& acc) {
  for (const LiveAllocation& t : acc.live_tensors()) {
    Live l;
    l.alloc_ns = t.timestamp_ns;
    l.size = t.size;
    l.device = t.device;
    l.existed = true;
    hold(t.address, l);
  }
}

bool TensorCategories::allocated_by_cache_code(uint32_t stack_id) {
  if (stack_id == 0 || !cache_code_) return false;
  auto [it, fresh] = cache_stacks_.try_emplace(stack_id, false);
  if (fresh) it->second = cache_code_(stack_id);
  return it->second;
}

void TensorCategories::hold(uint64_t address, Live l) {
  l.order = ++orders_;
  l.counted = so_far(l);
  now_[l.device][slot(l.counted)] += l.size;
  live_[address] = l;
}

void TensorCategories::drop(std::unordered_map<uint64_t, Live>::iterator it, bool cut_short) {
  const Live& t = it->second;
  const TensorCategory c = decide(t, cut_short);
  now_[t.device][slot(t.counted)] -= t.size;
  if (auto p = peaks_.find(t.device); p != peaks_.end() && t.order <= p->second.order) {
    p->second.let_go[slot(c)] += t.size;
  }
  if (use_ == Use::Replay && c != TensorCategory::Temporaries) {
    verdicts_[Key{it->first, t.alloc_ns}] = TensorVerdict{c, t.name_id};
  }
  live_.erase(it);
}

void TensorCategories::add(const Event& e, uint64_t index) {
  switch (e.op) {
    case Op::TensorAlloc: {
      const bool seeded = FrameworkBlockRecord::from_event(e).seeded;
      if (auto it = live_.find(e.address); it != live_.end()) {
        if (seeded) break;  // a seed repeating what an event already said (as Accounting)
        drop(it, false);    // its free never reached us
      }
      Live l;
      l.alloc_ns = e.timestamp_ns;
      l.size = e.size;
      l.device = e.device;
      l.span = spans_;
      l.existed = seeded;
      l.kv_cache = allocated_by_cache_code(e.stack_id);
      hold(e.address, l);
      break;
    }
    case Op::TensorFreeRequested:
    case Op::TensorFreeCompleted: {
      auto it = live_.find(e.address);
      if (it == live_.end()) break;
      if (!it->second.let_go) {  // the program let go at its request; a completion may come later
        it->second.let_go = true;
        it->second.let_go_span = spans_;
        recount(it->second);
      }
      if (e.op == Op::TensorFreeCompleted) drop(it, false);
      break;
    }
    case Op::TensorLabel: {
      const TensorLabelRecord r = TensorLabelRecord::from_event(e);
      if (r.category == TensorCategory::Unknown) break;
      const bool first = !decided();
      ++labels_;
      if (first) recount_all();
      auto it = live_.find(r.address);
      if (it == live_.end()) break;
      Live& t = it->second;
      const TensorCategory was = t.label;
      t.label = stronger(was, r.category);
      if (t.label != was && r.name_id != 0) t.name_id = r.name_id;
      recount(t);
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
  if (backward_begins) {
    for (auto& [_, t] : live_) {
      if (t.let_go) continue;
      t.activation = false;  // still held when another backward begins: kept state (DDP's buckets), not an activation
      if (t.span == closing && t.label == TensorCategory::Unknown && !t.kv_cache && !t.existed) t.activation = true;
    }
  }
  recount_all();  // the closing phase's tensors are decided now
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

TensorCategory TensorCategories::so_far(const Live& t) const {
  if (!decided()) return TensorCategory::Unknown;
  const bool held_in_its_phase = !t.let_go && t.span == spans_;
  if (held_in_its_phase && t.label == TensorCategory::Unknown && !t.kv_cache && !t.existed) {
    return TensorCategory::Unknown;  // an activation, a temporary or other: its phase has not ended
  }
  return decide(t, false);
}

void TensorCategories::recount(Live& t) {
  const TensorCategory c = so_far(t);
  if (c == t.counted) return;
  CategoryBytes& b = now_[t.device];
  b[slot(t.counted)] -= t.size;
  b[slot(c)] += t.size;
  t.counted = c;
}

void TensorCategories::recount_all() {
  for (auto& [_, t] : live_) recount(t);
}

void TensorCategories::finish(bool cut_short) {
  while (!live_.empty()) drop(live_.begin(), cut_short);
}

TensorVerdict TensorCategories::of(const LiveAllocation& tensor) const {
  if (!decided()) return {};
  auto it = verdicts_.find(Key{tensor.address, tensor.timestamp_ns});
  return it != verdicts_.end() ? it->second : TensorVerdict{TensorCategory::Temporaries, 0};
}

const CategoryBytes& TensorCategories::now(int device) const {
  static const CategoryBytes kNone{};
  auto it = now_.find(device);
  return it != now_.end() ? it->second : kNone;
}

void TensorCategories::mark_peak(int device) { peaks_[device] = DevicePeak{orders_, {}}; }

CategoryBytes TensorCategories::at_peak(int device) const {
  auto p = peaks_.find(device);
  if (p == peaks_.end()) return {};
  CategoryBytes out = p->second.let_go;
  for (const auto& [_, t] : live_) {
    if (t.device == device && t.order <= p->second.order) out[slot(t.counted)] += t.size;
  }
  return out;
}

}  // namespace gmp
