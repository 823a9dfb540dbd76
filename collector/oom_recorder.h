// The OOM flight recorder's logic, run by the collector on every event: it keeps the recent event
// history, turns allocation failures with CUDA_ERROR_OUT_OF_MEMORY into bundles, and applies the
// de-duplication rule (docs/oom-bundles.md):
//   - per device, a failure opens an episode and writes one bundle;
//   - further failures on that device while the episode is open only update that bundle
//     (`failures`), so a caching allocator's free-and-retry leaves one bundle, not two;
//   - an allocation of at least the failed size succeeding on that device ends the episode as
//     `recovered` (the bundle is updated);
//   - a failure more than kEpisodeGapNs after the episode's last failure opens a new episode.
// A framework's OOM (Op::FrameworkOomFigures, from PyTorch's OOM observer) is an episode of its own,
// by the same rules, ended by a tensor allocation of at least the failed size: it is what the
// program sees (the exception), while the driver-level failures before it are PyTorch's attempts.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "accounting.h"
#include "config.h"
#include "device_table.h"
#include "event.h"
#include "oom_bundle_schema.h"
#include "owned_dir.h"
#include "process_info.h"

namespace gmp {

class OomRecorder {
 public:
  static constexpr uint64_t kEpisodeGapNs = 10'000'000'000ull;
  static constexpr size_t kLargestShown = 20;

  OomRecorder(const Config& config, const ProcessInfo& info, const DeviceTable& devices);
  // The run directory, whose `oom` holds the bundles unless GPUMEMPROF_OOM_DIR names another; it
  // must outlive the recorder.
  void set_run_dir(const OwnedDir& run_dir);

  // Call for every event after the accounting applied it. Events the collector must add to the
  // trace and the accounting (OomBundle, OomRecovered) are appended to `out`.
  void after(const Event& e, const Accounting& acc, std::vector<Event>& out);

 private:
  struct Episode {
    bool open = false;
    uint64_t failed_size = 0;
    uint64_t last_failure_ns = 0;
    std::string bundle;  // name in the bundles' directory; empty if the bundle could not be written
    bool update_failure_said = false;
    OomMetadata metadata;
  };

  void remember(const Event& e);
  void failure(Episode& ep, const Event& e, const Accounting& acc, std::vector<Event>& out);
  // Closes the key's open episode as recovered by `e` when `e` asks for at least what failed (any
  // size with `any_size`); true if it did.
  bool success(std::map<int, Episode>& episodes, int key, const Event& e, std::vector<Event>& out,
               bool any_size = false);
  void open_episode(Episode& ep, const Event& e, const Accounting& acc, std::vector<Event>& out);
  // metadata.json's request, reason and driver figures for the failure `e`.
  void describe_failure(OomMetadata& m, const Event& e, const Accounting& acc) const;
  void update_metadata(Episode& ep);
  nlohmann::json history_json() const;
  nlohmann::json environment_json() const;
  // The bundles' directory, opened at the first bundle and kept (owned_dir.h); false with `error`.
  bool open_bundle_dir(std::string& error);

  Config config_;
  ProcessInfo info_;
  const DeviceTable& devices_;
  const OwnedDir* run_dir_ = nullptr;
  OwnedDir bundle_dir_;
  std::map<int, Episode> episodes_;  // by device; -1 for pinned host memory
  std::map<int, Episode> framework_episodes_;  // by device
  std::map<int, std::pair<uint64_t, uint64_t>> driver_memory_;  // device -> {free, total}
  std::map<int, OomDeviceLimit> limit_refusals_;  // device -> the device limit's refusal just before a failure
  std::vector<Event> history_;
  size_t history_next_ = 0;
  uint64_t bundles_ = 0;
};

}  // namespace gmp
