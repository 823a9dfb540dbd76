#include "export_thinning.h"

#include <algorithm>
#include <vector>

#include "export_formats.h"

namespace gmp::tool::exporter {

void Thinner::point(uint64_t track, uint64_t t_ns, std::span<const uint64_t> values, const std::string& text) {
  if (resolution_ == 0) {
    write_(text);
    return;
  }
  const uint64_t index = (t_ns > origin_ ? t_ns - origin_ : 0) / resolution_;
  const Held now{++seq_, text};
  auto [it, fresh] = open_.try_emplace(track);
  Bucket& b = it->second;
  // Events of different threads may be out of order by microseconds: a point stamped in another
  // bucket than the open one closes it either way.
  if (!fresh && b.index != index) flush(b);
  if (fresh || b.first.seq == 0) {
    b.index = index;
    b.first = now;
    b.values = std::min(values.size(), kMaxValues);
    for (size_t i = 0; i < b.values; ++i) {
      b.max[i] = b.min[i] = now;
      b.max_v[i] = b.min_v[i] = values[i];
    }
  }
  b.last = now;
  for (size_t i = 0; i < b.values; ++i) {
    if (values[i] > b.max_v[i]) b.max_v[i] = values[i], b.max[i] = now;
    if (values[i] < b.min_v[i]) b.min_v[i] = values[i], b.min[i] = now;
  }
}

void Thinner::flush(Bucket& b) {
  std::vector<const Held*> kept = {&b.first, &b.last};
  for (size_t i = 0; i < b.values; ++i) kept.insert(kept.end(), {&b.max[i], &b.min[i]});
  std::sort(kept.begin(), kept.end(), [](const Held* x, const Held* y) { return x->seq < y->seq; });
  uint64_t written = 0;
  for (const Held* h : kept) {
    if (h->seq == written) continue;  // one point can be several of these
    written = h->seq;
    write_(h->text);
  }
  b = Bucket{};
}

void Thinner::finish() {
  for (auto& [_, b] : open_) {
    if (b.first.seq != 0) flush(b);
  }
}

// The default resolution (docs/exports.md §Resolution): every change up to kThinAbove trace events,
// which keeps a perfetto file near 30 MB; above, the window in kDefaultBuckets buckets, which keeps
// 10^7 events under 20 MB (tests/bench/report_bench.cpp measures it).
constexpr uint64_t kThinAbove = 250'000, kDefaultBuckets = 10'000;

void set_resolution(Context& ctx, std::optional<uint64_t> asked) {
  if (asked) {
    ctx.resolution_ns = *asked;
    return;
  }
  const uint64_t records = ctx.replay.records_in_file();
  if (records <= kThinAbove) return;
  const reader::Window& window = ctx.replay.window();
  const uint64_t end = window.until_ns.value_or(ctx.run.figures.duration_ns);
  const uint64_t length = end > window.since_ns ? end - window.since_ns : 0;
  ctx.resolution_ns = (length + kDefaultBuckets - 1) / kDefaultBuckets;
  if (ctx.resolution_ns > 0) {
    ctx.notes.push_back("counter points thinned to a resolution of " + std::to_string(ctx.resolution_ns) + " ns" +
                        " (the trace holds " + std::to_string(records) + " events; --resolution 0 keeps every change)");
  }
}

}  // namespace gmp::tool::exporter
