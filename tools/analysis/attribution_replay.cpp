#include "attribution_replay.h"
#include "records.h"

#include <algorithm>

namespace gmp::analysis {

AttributionReplay::AttributionReplay(const reader::Attribution& names, uint64_t start_ns, size_t max_marks,
                                     size_t max_pauses)
    : names_(names), start_ns_(start_ns), max_marks_(std::max<size_t>(max_marks, 2)), max_pauses_(max_pauses) {}

std::string AttributionReplay::name_of(const Event& e) const {
  const uint32_t id = NameRecord::from_event(e).name_id;
  if (id != 0) {
    if (const std::string* n = names_.name(id)) return *n;
  }
  return "#" + std::to_string(id);  // a name attribution.jsonl lost (a partial last line)
}

void AttributionReplay::Level::set(uint64_t now) {
  now_ = now;
  peak_ = std::max(peak_, now);
  since_mark_max_ = std::max(since_mark_max_, now);
  if (!stretches_.empty()) stretches_.rbegin()->second = std::max(stretches_.rbegin()->second, now);
}

uint64_t AttributionReplay::Level::enter() {
  const uint64_t stretch = next_stretch_++;
  stretches_[stretch] = now_;
  return stretch;
}

uint64_t AttributionReplay::Level::leave(uint64_t stretch, uint64_t entry) {
  auto s = stretches_.find(stretch);
  uint64_t max = entry;
  for (auto j = s; j != stretches_.end(); ++j) max = std::max(max, j->second);
  // The stretch this range opened now belongs to the stretch before it.
  if (s != stretches_.begin()) std::prev(s)->second = std::max(std::prev(s)->second, s->second);
  stretches_.erase(s);
  return max;
}

MarkFigures AttributionReplay::Level::mark() {
  const MarkFigures m{now_, since_mark_max_, peak_, static_cast<int64_t>(now_) - static_cast<int64_t>(last_mark_)};
  since_mark_max_ = now_;
  last_mark_ = now_;
  return m;
}

void AttributionReplay::apply(const Event& e, uint64_t allocated, uint64_t tensors) {
  const uint64_t before = driver_.now(), tensors_before = tensors_.now();
  driver_.set(allocated);
  tensors_.set(tensors);
  // An allocation counts for the innermost range open on its thread, at its level.
  auto count = [&](OpenLevel Open::*level, uint64_t grew) {
    auto it = open_.find(e.thread_id);
    if (grew == 0 || it == open_.end() || it->second.empty()) return;
    OpenLevel& o = it->second.back().*level;
    o.bytes += grew;
    ++o.allocations;
  };
  switch (e.op) {
    case Op::Alloc:
    case Op::VmmMap:
      if (e.result != 0) break;
      if (paused_) ++paused_->allocations;
      count(&Open::driver, allocated > before ? allocated - before : 0);
      break;
    case Op::TensorAlloc: count(&Open::tensors, tensors > tensors_before ? tensors - tensors_before : 0); break;
    case Op::Free:
    case Op::VmmRelease:
    case Op::VmmUnmap:
      if (paused_) ++paused_->frees;
      break;
    case Op::Mark: mark(e); break;
    case Op::RangePush: push(e); break;
    case Op::RangePop: pop(e.thread_id, e.timestamp_ns, false); break;
    case Op::Pause:
      if (!paused_) paused_ = PauseRow{since(e.timestamp_ns)};
      break;
    case Op::Resume:
      if (paused_) {
        paused_->resumed_at_ns = since(e.timestamp_ns);
        paused_->resumed = true;
        if (pauses_.size() < max_pauses_) pauses_.push_back(*paused_);
        else ++pauses_dropped_;
        paused_.reset();
      }
      break;
    default: break;
  }
}

void AttributionReplay::push(const Event& e) {
  const std::string name = name_of(e);
  auto [it, added] = row_of_.emplace(name, rows_.size());
  if (added) rows_.push_back(RangeRow{name});
  Open o{it->second, e.timestamp_ns, {}, {}};
  o.driver = {driver_.now(), driver_.enter()};
  o.tensors = {tensors_.now(), tensors_.enter()};
  open_[e.thread_id].push_back(o);
}

namespace {

void close_call(RangeFigures& f, uint64_t entry, uint64_t max, uint64_t exit, uint64_t bytes, uint64_t allocations) {
  f.bytes_allocated += bytes;
  f.allocations += allocations;
  f.peak_above_entry = std::max(f.peak_above_entry, max - entry);
  f.net_change += static_cast<int64_t>(exit) - static_cast<int64_t>(entry);
}

}  // namespace

void AttributionReplay::pop(uint32_t thread, uint64_t at_ns, bool at_end) {
  auto t = open_.find(thread);
  if (t == open_.end() || t->second.empty()) {
    ++unbalanced_;
    return;
  }
  const Open o = t->second.back();
  t->second.pop_back();
  RangeRow& r = rows_[o.row];
  const uint64_t duration = at_ns > o.entry_ns ? at_ns - o.entry_ns : 0;
  ++r.calls;
  r.total_ns += duration;
  r.max_ns = std::max(r.max_ns, duration);
  close_call(r.driver, o.driver.entry, driver_.leave(o.driver.stretch, o.driver.entry), driver_.now(), o.driver.bytes,
             o.driver.allocations);
  close_call(r.tensors, o.tensors.entry, tensors_.leave(o.tensors.stretch, o.tensors.entry), tensors_.now(),
             o.tensors.bytes, o.tensors.allocations);
  if (at_end) {
    ++r.open_at_end;
    ++open_at_end_;
  }
  if (on_range) on_range({r.name, thread, since(o.entry_ns), since(at_ns), t->second.size(), at_end});
  if (t->second.empty()) {
    open_.erase(t);
    return;
  }
  for (auto [outer, inner] : {std::pair{&t->second.back().driver, &o.driver}, {&t->second.back().tensors, &o.tensors}}) {
    outer->bytes += inner->bytes;  // inclusive: the enclosing range allocated these too
    outer->allocations += inner->allocations;
  }
}

void AttributionReplay::mark(const Event& e) {
  MarkRow m;
  m.name = name_of(e);
  m.index = ++marks_;
  m.at_ns = since(e.timestamp_ns);
  m.thread = e.thread_id;
  m.driver = driver_.mark();
  m.tensors = tensors_.mark();
  if (m.driver.growth > 0 && (!largest_ || m.driver.growth > largest_->driver.growth)) largest_ = m;
  if (on_mark) on_mark(m);
  // Long runs mark every step: keep the first and the last ones, count those between.
  const size_t head_cap = max_marks_ / 2;
  if (head_.size() < head_cap) {
    head_.push_back(std::move(m));
    return;
  }
  tail_.push_back(std::move(m));
  if (tail_.size() > max_marks_ - head_cap) {
    tail_.pop_front();
    ++marks_omitted_;
  }
}

Regions AttributionReplay::finish(uint64_t last_ns) {
  std::vector<uint32_t> threads;
  for (const auto& [tid, _] : open_) threads.push_back(tid);
  std::sort(threads.begin(), threads.end());
  for (uint32_t tid : threads) {
    while (open_.count(tid)) pop(tid, last_ns, true);
  }
  if (paused_) {
    paused_->resumed_at_ns = since(last_ns);
    if (pauses_.size() < max_pauses_) pauses_.push_back(*paused_);
    else ++pauses_dropped_;
    paused_.reset();
  }
  Regions out;
  out.ranges = rows_;
  out.marks.assign(head_.begin(), head_.end());
  out.marks.insert(out.marks.end(), tail_.begin(), tail_.end());
  out.marks_total = marks_;
  out.marks_omitted = marks_omitted_;
  out.largest_growth = largest_;
  out.pauses = pauses_;
  out.pauses_dropped = pauses_dropped_;
  out.unbalanced_pops = unbalanced_;
  out.open_at_end = open_at_end_;
  return out;
}

}  // namespace gmp::analysis
