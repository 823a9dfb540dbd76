#include "attribution_replay.h"

#include <algorithm>

namespace gmp::analysis {

AttributionReplay::AttributionReplay(const reader::Attribution& names, uint64_t start_ns, size_t max_marks,
                                     size_t max_pauses)
    : names_(names), start_ns_(start_ns), max_marks_(std::max<size_t>(max_marks, 2)), max_pauses_(max_pauses) {}

std::string AttributionReplay::name_of(uint64_t id) const {
  if (id != 0 && id <= UINT32_MAX) {
    if (const std::string* n = names_.name(static_cast<uint32_t>(id))) return *n;
  }
  return "#" + std::to_string(id);  // a name attribution.jsonl lost (a partial last line)
}

void AttributionReplay::apply(const Event& e, uint64_t allocated) {
  const uint64_t before = allocated_;
  allocated_ = allocated;
  peak_ = std::max(peak_, allocated);
  since_mark_max_ = std::max(since_mark_max_, allocated);
  if (!segments_.empty()) segments_.rbegin()->second = std::max(segments_.rbegin()->second, allocated);

  switch (e.op) {
    case Op::Alloc:
    case Op::VmmMap:
      if (e.result != 0) break;
      if (paused_) ++paused_->allocations;
      if (allocated > before) {
        auto it = open_.find(e.thread_id);
        if (it != open_.end() && !it->second.empty()) {
          it->second.back().bytes += allocated - before;
          ++it->second.back().allocations;
        }
      }
      break;
    case Op::Free:
    case Op::VmmRelease:
    case Op::VmmUnmap:
      if (paused_) ++paused_->frees;
      break;
    case Op::Mark: mark(e, allocated); break;
    case Op::RangePush: push(e, allocated); break;
    case Op::RangePop: pop(e.thread_id, e.timestamp_ns, allocated, false); break;
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

void AttributionReplay::push(const Event& e, uint64_t allocated) {
  const std::string name = name_of(e.address);
  auto [it, added] = row_of_.emplace(name, rows_.size());
  if (added) rows_.push_back(RangeRow{name});
  const uint64_t segment = next_segment_++;
  segments_[segment] = allocated;
  open_[e.thread_id].push_back(Open{it->second, e.timestamp_ns, allocated, segment});
}

void AttributionReplay::pop(uint32_t thread, uint64_t at_ns, uint64_t allocated, bool at_end) {
  auto t = open_.find(thread);
  if (t == open_.end() || t->second.empty()) {
    ++unbalanced_;
    return;
  }
  const Open o = t->second.back();
  t->second.pop_back();
  auto s = segments_.find(o.segment);
  uint64_t max = o.entry_allocated;
  for (auto j = s; j != segments_.end(); ++j) max = std::max(max, j->second);
  // The stretch this range opened now belongs to the stretch before it.
  if (s != segments_.begin()) std::prev(s)->second = std::max(std::prev(s)->second, s->second);
  segments_.erase(s);

  RangeRow& r = rows_[o.row];
  const uint64_t duration = at_ns > o.entry_ns ? at_ns - o.entry_ns : 0;
  ++r.calls;
  r.total_ns += duration;
  r.max_ns = std::max(r.max_ns, duration);
  r.bytes_allocated += o.bytes;
  r.allocations += o.allocations;
  r.peak_above_entry = std::max(r.peak_above_entry, max - o.entry_allocated);
  r.net_change += static_cast<int64_t>(allocated) - static_cast<int64_t>(o.entry_allocated);
  if (at_end) {
    ++r.open_at_end;
    ++open_at_end_;
  }
  if (on_range) on_range({r.name, thread, since(o.entry_ns), since(at_ns), t->second.size(), at_end});
  if (t->second.empty()) {
    open_.erase(t);
  } else {
    t->second.back().bytes += o.bytes;  // inclusive: the enclosing range allocated these too
    t->second.back().allocations += o.allocations;
  }
}

void AttributionReplay::mark(const Event& e, uint64_t allocated) {
  MarkRow m;
  m.name = name_of(e.address);
  m.index = ++marks_;
  m.at_ns = since(e.timestamp_ns);
  m.thread = e.thread_id;
  m.allocated = allocated;
  m.peak_since_previous = since_mark_max_;
  m.peak_so_far = peak_;
  m.growth = static_cast<int64_t>(allocated) - static_cast<int64_t>(last_mark_allocated_);
  since_mark_max_ = allocated;
  last_mark_allocated_ = allocated;
  if (m.growth > 0 && (!largest_ || m.growth > largest_->growth)) largest_ = m;
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
    while (open_.count(tid)) pop(tid, last_ns, allocated_, true);
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
