#include "oom_recorder.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "bytes_text.h"
#include "clock.h"
#include "json_views.h"
#include "log.h"
#include "manifest_record.h"
#include "oom_bundle.h"
#include "run_directory_files.h"
#include "records.h"

extern char** environ;

namespace gmp {
namespace {

// A graph launch or upload maps the graph's memory: out of memory there is an allocation failure,
// and a later successful launch of as much recovers it.
bool is_allocation(const Event& e) {
  return e.op == Op::Alloc || e.op == Op::VmmCreate || (e.op == Op::GraphLaunch && e.device >= 0) ||
         (e.op == Op::GraphInstantiate && e.result == kOutOfMemory);
}

}  // namespace

OomRecorder::OomRecorder(const Config& config, const ProcessInfo& info, const DeviceTable& devices)
    : config_(config), info_(info), devices_(devices) {
  history_.reserve(config_.oom_events);
}

void OomRecorder::set_run_dir(const OwnedDir& run_dir) { run_dir_ = &run_dir; }

bool OomRecorder::open_bundle_dir(std::string& error) {
  if (bundle_dir_.is_open()) return true;
  if (config_.oom_dir.empty()) {
    if (run_dir_ == nullptr) {
      error = "no run directory";
      return false;
    }
    return open_bundle_subdir(*run_dir_, kOomSubdirectory, bundle_dir_, error);
  }
  // Relative to the working directory the process started in, as the tools read it (the
  // manifest's cwd), whatever directory the program has moved to since.
  const std::string& dir = config_.oom_dir;
  const std::string absolute = dir[0] == '/' || info_.cwd.empty() ? dir : info_.cwd + "/" + dir;
  return gmp::open_bundle_dir(absolute, bundle_dir_, error, geteuid());
}

void OomRecorder::remember(const Event& e) {
  if (config_.oom_events == 0) return;
  if (history_.size() < config_.oom_events) {
    history_.push_back(e);
  } else {
    history_[history_next_] = e;
    if (++history_next_ == history_.size()) history_next_ = 0;  // not %: a division on every event
  }
}

nlohmann::json OomRecorder::history_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < history_.size(); ++i) {
    out.push_back(event_json(history_[(history_next_ + i) % history_.size()], info_.start_monotonic_ns));
  }
  return out;
}

nlohmann::json OomRecorder::environment_json() const {
  nlohmann::json devices = nlohmann::json::array();
  for (int d = 0; d < kMaxDevices; ++d) {
    if (devices_.seen.load(std::memory_order_acquire) & (1ull << d)) devices.push_back(to_json(devices_.entry(d)));
  }
  return oom_environment_json(process_json(info_), devices, redacted_environment(environ));
}

void OomRecorder::after(const Event& e, const Accounting& acc, std::vector<Event>& out) {
  remember(e);
  if (e.op == Op::DriverMemory) {
    const auto m = DriverMemoryRecord::from_event(e);
    driver_memory_[e.device] = {m.free, m.total};
  } else if (e.op == Op::DeviceLimit) {
    const auto l = DeviceLimitRecord::from_event(e);
    if (l.refused) limit_refusals_[e.device] = OomDeviceLimit{e.device, l.limit, l.before, l.context, l.bytes};
  } else if (e.op == Op::FrameworkOomFigures) {
    failure(framework_episodes_[e.device], e, acc, out);
  } else if (e.op == Op::TensorAlloc && !FrameworkBlockRecord::from_event(e).seeded) {
    // Like with like: the tensor against the framework's request, not the driver's, which PyTorch
    // rounded up (to 2 MiB and beyond). Recovering the framework's OOM recovers the driver failure
    // that was part of it.
    if (success(framework_episodes_, e.device, e, out)) success(episodes_, e.device, e, out, true);
  } else if (is_allocation(e)) {
    const int key = e.kind == Kind::HostPinned ? -1 : e.device;
    if (e.result == kOutOfMemory) {
      failure(episodes_[key], e, acc, out);
      limit_refusals_.erase(e.device);  // said by this failure's bundle, or by its episode's
    }
    else if (e.result == 0) success(episodes_, key, e, out);
  }
}

void OomRecorder::failure(Episode& ep, const Event& e, const Accounting& acc, std::vector<Event>& out) {
  if (ep.open && e.timestamp_ns - ep.last_failure_ns <= kEpisodeGapNs) {
    ep.last_failure_ns = e.timestamp_ns;
    ep.failed_size = std::min(ep.failed_size, e.size);
    ++ep.metadata.failures;
    update_metadata(ep);
  } else {
    open_episode(ep, e, acc, out);
  }
}

bool OomRecorder::success(std::map<int, Episode>& episodes, int key, const Event& e, std::vector<Event>& out,
                          bool any_size) {
  auto it = episodes.find(key);
  if (it == episodes.end() || !it->second.open || (!any_size && e.size < it->second.failed_size)) return false;
  Episode& ep = it->second;
  ep.open = false;
  ep.metadata.recovered = true;
  ep.metadata.recovered_by = OomRecoveredBy{event_json(e, info_.start_monotonic_ns)};
  update_metadata(ep);
  Event r{};
  r.timestamp_ns = e.timestamp_ns;
  r.op = Op::OomRecovered;
  r.api = Api::Collector;
  r.device = e.device;
  r.size = e.size;
  out.push_back(r);
  return true;
}

void OomRecorder::describe_failure(OomMetadata& m, const Event& e, const Accounting& acc) const {
  const std::string size = bytes_text(e.size, ByteUnits::MiBOrGiB) + " (" + std::to_string(e.size) + " bytes)";
  if (e.op == Op::FrameworkOomFigures) {
    m.reason = "PyTorch out of memory: tried to allocate " + size + " on device " + std::to_string(e.device);
    m.request = {std::string(api_name(e.api)), kOomTensorKind, "", e.size, e.device, 0, e.thread_id, std::nullopt,
                 since(e.timestamp_ns, info_.start_monotonic_ns)};
    auto d = acc.devices().find(e.device);
    const DeviceStats none{};
    const DeviceStats& stats = d != acc.devices().end() ? d->second : none;
    m.framework = oom_framework(e, stats, info_.start_monotonic_ns);
    if (stats.total_bytes > 0) {
      m.driver_memory = OomDriverMemory{e.device, FrameworkOomFiguresRecord::from_event(e).free, stats.total_bytes};
    }
    return;
  }
  const std::string where = e.kind == Kind::HostPinned ? "pinned host memory" : "device " + std::to_string(e.device);
  m.reason = "CUDA_ERROR_OUT_OF_MEMORY: " + std::string(api_name(e.api)) + " of " + size + " on " + where;
  m.request = {std::string(api_name(e.api)), std::string(kind_name(e.kind)), cuda_error_name(e.result), e.size,
               e.device, e.stream, e.thread_id, e.result, e.timestamp_ns - info_.start_monotonic_ns};
  if (auto dm = driver_memory_.find(e.device); dm != driver_memory_.end()) {
    m.driver_memory = OomDriverMemory{e.device, dm->second.first, dm->second.second};
  }
  // The shim records its refusal just before the failed call it answers.
  if (auto l = limit_refusals_.find(e.device); l != limit_refusals_.end()) {
    m.device_limit = l->second;
    m.reason += " (the GPUMEMPROF_DEVICE_LIMIT rehearsal limit of " + bytes_text(l->second.limit, ByteUnits::MiBOrGiB) +
                ")";
  }
}

void OomRecorder::open_episode(Episode& ep, const Event& e, const Accounting& acc, std::vector<Event>& out) {
  ep = Episode{};
  ep.open = true;
  ep.failed_size = e.size;
  ep.last_failure_ns = e.timestamp_ns;

  OomMetadata& m = ep.metadata;
  for (const auto& [ordinal, d] : acc.devices()) {
    if (ordinal >= 0) m.devices.push_back(device_figures(d, devices_.entries[ordinal].name, info_.start_monotonic_ns));
  }
  std::vector<LiveAllocation> live = acc.live_allocations();
  std::sort(live.begin(), live.end(), [](const auto& a, const auto& b) { return a.size > b.size; });
  std::vector<OomAllocation> all;
  all.reserve(live.size());
  for (const auto& a : live) {
    all.push_back(oom_allocation(a, e.timestamp_ns));
    m.live_bytes += a.size;
  }
  m.live_count = live.size();
  m.largest_live.assign(all.begin(), all.begin() + static_cast<ptrdiff_t>(std::min(all.size(), kLargestShown)));
  describe_failure(m, e, acc);
  m.host_pinned_bytes = acc.host_pinned();
  m.episode = bundles_ + 1;
  const nlohmann::json events = history_json();
  const std::string name = oom_bundle_name(utc_timestamp(realtime_ns()), info_.pid, bundles_ + 1);
  std::vector<BundleFile> files = {
      {kOomMetadataFile, to_json(m)},
      {kOomEventsFile, events},
      {kOomAllocationsFile, to_json(all)},
      {kOomEnvironmentFile, environment_json()},
  };
  // A bridged process: its tensors (what the program holds) and segments (the framework's cache).
  std::vector<LiveAllocation> tensors = acc.live_tensors();
  std::vector<Accounting::Segment> segments = acc.framework_segments();
  if (!tensors.empty() || !segments.empty()) {
    std::sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.size > b.size; });
    std::vector<OomAllocation> listed;
    listed.reserve(tensors.size());
    for (const auto& t : tensors) {
      listed.push_back(oom_allocation(t, e.timestamp_ns));
      listed.back().kind = kOomTensorKind;
    }
    files.push_back({kOomTensorsFile, to_json(listed)});
    files.push_back({kOomSegmentsFile, to_json(segments)});
  }
  OomBundleManifest manifest{name, iso8601_utc(realtime_ns()), m.reason, "cuda", events.size(), {kOomManifestFile}};
  for (const auto& f : files) manifest.files.push_back(f.name);
  manifest.pid = static_cast<uint64_t>(info_.pid);
  files.push_back({kOomManifestFile, to_json(manifest)});
  std::string error;
  if (!open_bundle_dir(error) || !write_bundle(bundle_dir_, name, files, error)) {
    log::error("out of memory, but the OOM bundle could not be written: {}", error);
    return;
  }
  ep.bundle = name;
  ++bundles_;
  log::warn("{}; OOM bundle written to {}", m.reason, bundle_dir_.shown(name));
  apply_retention(bundle_dir_, config_.oom_max_dumps, config_.oom_max_total_mb << 20, name, geteuid());
  Event b{};
  b.timestamp_ns = e.timestamp_ns;
  OomBundleRecord{bundles_, e.size}.to_event(b);
  b.api = Api::Collector;
  b.device = e.device;
  out.push_back(b);
}

void OomRecorder::update_metadata(Episode& ep) {
  if (ep.bundle.empty()) return;
  // Atomic: on failure the previous metadata.json stays whole, and the bundle readable as it was.
  if (!rewrite_bundle_file(bundle_dir_, ep.bundle, {kOomMetadataFile, to_json(ep.metadata)}) &&
      !ep.update_failure_said) {
    ep.update_failure_said = true;
    log::error("cannot update {}/{}: {}; the bundle keeps its earlier failure count and recovery state",
               bundle_dir_.shown(ep.bundle), kOomMetadataFile, std::strerror(errno));
  }
}

}  // namespace gmp
