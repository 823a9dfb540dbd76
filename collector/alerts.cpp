#include "alerts.h"

#include <algorithm>

#include "device_limit_spec.h"

namespace gmp {
namespace {

constexpr double kClearFraction = 0.95;          // warning/critical clear below 95% of the threshold
constexpr double kFragmentationClear = 0.9;      // ... fragmentation below 90% of its ratio
constexpr uint64_t kFragmentationFloor = 1ull << 30;  // reserved must reach min(1 GiB, 10% of total)

// Fragmentation's figures: inside a framework the unallocated part of reserved is its cache of
// free blocks.
struct Fragmentation {
  uint64_t reserved, unallocated, floor;
  double ratio;
};

uint64_t fragmentation_reserved(const DeviceStats& d) {
  return d.framework.attached ? d.framework.reserved.current : d.reserved.current;
}

uint64_t fragmentation_floor(uint64_t total) {
  return total > 0 ? std::min(kFragmentationFloor, total / 10) : kFragmentationFloor;
}

Fragmentation fragmentation_of(const DeviceStats& d, uint64_t total) {
  const FrameworkStats& fw = d.framework;
  Fragmentation f{};
  f.reserved = fragmentation_reserved(d);
  f.unallocated = fw.attached ? fw.cached() : d.reserved.current - std::min(d.allocated.current, d.reserved.current);
  f.floor = fragmentation_floor(total);
  f.ratio = f.reserved > 0 ? static_cast<double>(f.unallocated) / f.reserved : 0.0;
  return f;
}

bool fragmented(const Fragmentation& f, double threshold) { return f.reserved >= f.floor && f.ratio > threshold; }

// The same test without the division while reserved is below the floor (most events of most runs
// on a GPU of any size).
bool fragmented(const DeviceStats& d, uint64_t total, double threshold) {
  return fragmentation_reserved(d) >= fragmentation_floor(total) && fragmented(fragmentation_of(d, total), threshold);
}

}  // namespace

AlertEngine::AlertEngine(const Config& config)
    : config_(config), window_ns_((config.sample_ms == 0 ? 100 : config.sample_ms) * 10ull * 1'000'000ull) {
  if (const auto spec = parse_device_limit(config.device_limit); spec && !config.device_limit.empty()) limits_ = *spec;
}

uint64_t AlertEngine::seen_total(const DeviceStats& d) const {
  const uint64_t limit = limits_.for_device(d.device);
  if (limit == 0) return d.total_bytes;
  return d.total_bytes > 0 ? std::min(limit, d.total_bytes) : limit;
}

AlertEngine::State& AlertEngine::state(int device) {
  if (static_cast<size_t>(device) >= states_.size()) states_.resize(static_cast<size_t>(device) + 1);
  return states_[static_cast<size_t>(device)];
}

void AlertEngine::edge(State& s, AlertType t, bool on, bool off, uint64_t fire_after, uint64_t clear_after,
                       const Alert& base, std::vector<Alert>& out) {
  const int i = static_cast<int>(t);
  const uint64_t now = base.t_ns;
  bool& active = s.active[i];
  // The start (or end) of the condition is dated by the first event that shows it; it counts
  // once it has lasted long enough, checked at each later event.
  uint64_t& since = active ? s.off_since[i] : s.on_since[i];
  if (!(active ? off : on)) {
    since = 0;
    return;
  }
  if (since == 0) since = now;
  if (now - since < (active ? clear_after : fire_after)) return;
  active = !active;
  s.on_since[i] = s.off_since[i] = 0;
  Alert a = base;
  a.type = t;
  a.fired = active;
  out.push_back(a);
}

bool AlertEngine::quiet(State& s, const DeviceStats& d, uint64_t total, uint64_t now_ns) const {
  if (!s.at_rest || s.window_start == 0 || s.framework != d.framework.attached ||
      now_ns - s.window_start >= window_ns_ || (total > 0 && s.thresholds_of != total)) {
    return false;
  }
  // The critical threshold is never below the warning one (config.cpp), so one test covers both.
  if (total > 0 && d.allocated.current >= s.threshold[0]) return false;
  if (fragmented(d, total, config_.fragmentation)) return false;
  s.window_floor = std::min(s.window_floor, s.framework ? d.framework.allocated.current : d.allocated.current);
  return true;
}

void AlertEngine::evaluate(const DeviceStats& d, uint64_t now_ns, std::vector<Alert>& out) {
  if (d.device < 0) return;
  State& s = state(d.device);
  // Percentages are of the device the program sees: under GPUMEMPROF_DEVICE_LIMIT, the limit.
  const uint64_t total = seen_total(d);
  // Most events change nothing an alert looks at: no alert active, no condition begun, inside a
  // growth window. quiet() tells those apart for a few comparisons (the collector runs this on
  // every event).
  if (quiet(s, d, total, now_ns)) return;
  const uint64_t allocated = d.allocated.current, reserved = d.reserved.current;
  Alert base{AlertType::Warning, true, d.device, now_ns, allocated, reserved, total, 0, 0, 0.0};
  growth(s, d, now_ns, base, out);

  // Warning and critical fire the moment memory crosses; fragmentation only once it has lasted a
  // window (a pool between a free and the next synchronisation is not fragmented); every alert
  // clears only once its end has lasted a window. Together with the bands this keeps a training
  // loop whose peak crosses a threshold every step from firing every step.
  if (total > 0) {
    // Every event comes here: the byte thresholds are worked out once per device size.
    if (s.thresholds_of != total) {
      s.thresholds_of = total;
      const double percents[2] = {config_.warn_percent, config_.critical_percent};
      for (int k = 0; k < 2; ++k) {
        s.threshold[k] = static_cast<uint64_t>(static_cast<double>(total) * percents[k] / 100.0);
        s.clear_below[k] = static_cast<double>(s.threshold[k]) * kClearFraction;
      }
    }
    for (int k = 0; k < 2; ++k) {
      base.threshold_bytes = s.threshold[k];
      edge(s, k == 0 ? AlertType::Warning : AlertType::Critical, allocated >= s.threshold[k],
           static_cast<double>(allocated) < s.clear_below[k], 0, window_ns_, base, out);
    }
  }
  const Fragmentation f = fragmentation_of(d, total);
  if (d.framework.attached) {
    base.allocated = d.framework.allocated.current;
    base.reserved = f.reserved;
    base.framework = true;
  }
  base.ratio = f.ratio;
  base.threshold_bytes = f.floor;
  edge(s, AlertType::Fragmentation, fragmented(f, config_.fragmentation),
       f.ratio < config_.fragmentation * kFragmentationClear || f.reserved < f.floor * kFragmentationClear, window_ns_,
       window_ns_, base, out);
  s.at_rest = true;
  for (int i = 0; i < 5; ++i) s.at_rest = s.at_rest && !s.active[i] && s.on_since[i] == 0 && s.off_since[i] == 0;
}

// Growth is judged on the floor of allocated over each window: memory that "comes back" between
// steps keeps the floor down, so only growth that stays is reported. With a framework bridged,
// allocated is its tensors' (its segments are a cache, not a leak).
void AlertEngine::growth(State& s, const DeviceStats& d, uint64_t now_ns, const Alert& base, std::vector<Alert>& out) {
  const bool framework = d.framework.attached;
  if (framework != s.framework) {  // attached or detached: the figures change meaning, start again
    s.framework = framework;
    s.window_start = 0;
    s.has_baseline = false;
    s.warmup_windows = 0;
  }
  const uint64_t allocated = framework ? d.framework.allocated.current : d.allocated.current;
  if (s.window_start == 0) {
    s.window_start = now_ns;
    s.window_floor = allocated;
    return;
  }
  if (now_ns - s.window_start < window_ns_) {
    s.window_floor = std::min(s.window_floor, allocated);
    return;
  }
  const uint64_t floor = s.window_floor;
  s.window_start = now_ns;
  s.window_floor = allocated;
  if (!s.has_baseline) {
    s.has_baseline = !framework || warmed_up(s, floor);
    s.baseline = floor;
    return;
  }
  Alert a = base;
  a.framework = framework;
  if (framework) a.reserved = d.framework.reserved.current;
  a.baseline = s.baseline;
  a.threshold_bytes = s.baseline + config_.leak_bytes;
  a.allocated = floor;
  // Windows already make growth durable: no further delay.
  edge(s, AlertType::Growth, floor > s.baseline + config_.leak_bytes, floor <= s.baseline + config_.leak_bytes / 2, 0,
       0, a, out);
  if (!s.active[static_cast<int>(AlertType::Growth)]) s.baseline = std::min(s.baseline, floor);
}

// A framework's warm-up (loading a model, the optimizer's first step) raises the floor window after
// window; it is over at the first window whose floor did not rise above the one before, or after
// kMaxWarmupWindows windows, so that a leak from the very start is still caught.
bool AlertEngine::warmed_up(State& s, uint64_t floor) {
  const bool settled = s.warmup_windows > 0 && floor <= s.previous_floor;
  s.previous_floor = floor;
  return settled || ++s.warmup_windows >= kMaxWarmupWindows;
}

}  // namespace gmp
