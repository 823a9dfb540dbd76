// Threshold alerts from the exact accounting (docs/alerts.md). Each condition has hysteresis: it
// fires once when it starts and reports `cleared` once when it ends, never once per event. On a
// device whose framework allocator is bridged, growth and fragmentation are judged inside it
// (tensors, and its cache), where a leak and fragmentation are; warning and critical stay at the
// driver level, which is what the device runs out of.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "accounting.h"
#include "config.h"
#include "device_limit_spec.h"

namespace gmp {


struct Alert {
  AlertType type;
  bool fired;  // false: cleared
  int device;
  uint64_t t_ns;
  uint64_t allocated, reserved, total;
  uint64_t threshold_bytes;  // warning/critical: the byte threshold; growth: baseline + leak bytes
  uint64_t baseline;         // growth only
  double ratio;              // fragmentation only: (reserved - allocated) / reserved
  bool framework = false;    // growth, fragmentation: allocated and reserved are the framework's (PyTorch's)
};

class AlertEngine {
 public:
  explicit AlertEngine(const Config& config);

  // Evaluates one device after an event changed it; state changes are appended to `out`.
  void evaluate(const DeviceStats& d, uint64_t now_ns, std::vector<Alert>& out);

  uint64_t growth_window_ns() const { return window_ns_; }
  // On a framework's device, growth's baseline waits until the tensors' lowest value over a window
  // stopped rising, at most this many windows: loading a model is not a leak.
  static constexpr uint64_t kMaxWarmupWindows = 60;

 private:
  struct State {
    bool active[5] = {};
    uint64_t on_since[5] = {}, off_since[5] = {};  // when the condition (or its end) was first seen
    uint64_t window_start = 0, window_floor = 0, baseline = 0;
    bool has_baseline = false;
    bool framework = false;  // growth watches the framework's allocated bytes
    uint64_t warmup_windows = 0, previous_floor = 0;
    uint64_t thresholds_of = 0;  // the device size threshold[] and clear_below[] were worked out for
    uint64_t threshold[2] = {};  // warning, critical: bytes
    double clear_below[2] = {};
    bool at_rest = false;  // no alert active and no condition begun, as of the last full evaluation
  };
  State& state(int device);  // indexed by device ordinal: evaluate() runs once per event
  // True when this event can change no alert (the device at rest, inside a growth window, below
  // every threshold); it then only follows the growth window's floor.
  bool quiet(State& s, const DeviceStats& d, uint64_t total, uint64_t now_ns) const;
  // The device's size as the program sees it: GPUMEMPROF_DEVICE_LIMIT's where one is set.
  uint64_t seen_total(const DeviceStats& d) const;
  // Fires once `on` has held for `fire_after` ns and clears once `off` has held for `clear_after`.
  void edge(State& s, AlertType t, bool on, bool off, uint64_t fire_after, uint64_t clear_after, const Alert& base,
            std::vector<Alert>& out);
  void growth(State& s, const DeviceStats& d, uint64_t now_ns, const Alert& base, std::vector<Alert>& out);
  // Whether the window whose lowest value was `floor` sets the baseline.
  static bool warmed_up(State& s, uint64_t floor);

  Config config_;
  uint64_t window_ns_;
  std::vector<State> states_;
  DeviceLimitSpec limits_;  // none unless GPUMEMPROF_DEVICE_LIMIT is set
};

}  // namespace gmp
