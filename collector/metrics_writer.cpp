#include "metrics_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "clock.h"
#include "event.h"
#include "file_io.h"
#include "json_text.h"
#include "log.h"
#include "trusted_dir.h"
#include "records.h"

namespace gmp {
namespace {

// One figure of a device, for the families that have one sample per device.
struct DeviceFamily {
  const char* name;
  const char* type;
  const char* help;
  uint64_t (*value)(const DeviceStats& d, uint64_t live);
};

constexpr DeviceFamily kDeviceFamilies[] = {
    {"gpumemprof_device_total_bytes", "gauge", "Total memory of the device, as the driver reports it.",
     [](const DeviceStats& d, uint64_t) { return d.total_bytes; }},
    {"gpumemprof_allocated_bytes", "gauge",
     "Device memory held by the process's allocations (linear, pool, VMM mapped, arrays).",
     [](const DeviceStats& d, uint64_t) { return d.allocated.current; }},
    {"gpumemprof_allocated_peak_bytes", "gauge", "Highest allocated bytes since the process started, over every event.",
     [](const DeviceStats& d, uint64_t) { return d.allocated.peak; }},
    {"gpumemprof_reserved_bytes", "gauge", "Device memory the process holds from the driver, pools' reserve included.",
     [](const DeviceStats& d, uint64_t) { return d.reserved.current; }},
    {"gpumemprof_reserved_peak_bytes", "gauge", "Highest reserved bytes since the process started, over every event.",
     [](const DeviceStats& d, uint64_t) { return d.reserved.peak; }},
    {"gpumemprof_live_allocations", "gauge",
     "Allocations holding memory now; with the PyTorch bridge, its tensors rather than its cached segments.",
     [](const DeviceStats&, uint64_t live) { return live; }},
    {"gpumemprof_failed_allocations_total", "counter", "Allocation calls that failed (out of memory or another error).",
     [](const DeviceStats& d, uint64_t) { return d.failed_alloc_count; }},
};

// The framework's own figures (PyTorch's caching allocator), on the devices the bridge attached to.
constexpr DeviceFamily kFrameworkFamilies[] = {
    {"gpumemprof_framework_allocated_bytes", "gauge", "Bytes the framework's live tensors asked for.",
     [](const DeviceStats& d, uint64_t) { return d.framework.allocated.current; }},
    {"gpumemprof_framework_allocated_peak_bytes", "gauge",
     "Highest framework allocated bytes since the process started.",
     [](const DeviceStats& d, uint64_t) { return d.framework.allocated.peak; }},
    {"gpumemprof_framework_reserved_bytes", "gauge", "Bytes of the framework's segments (its cache included).",
     [](const DeviceStats& d, uint64_t) { return d.framework.reserved.current; }},
    {"gpumemprof_framework_reserved_peak_bytes", "gauge", "Highest framework reserved bytes since the process started.",
     [](const DeviceStats& d, uint64_t) { return d.framework.reserved.peak; }},
};

constexpr AlertType kAlertTypes[] = {AlertType::Warning, AlertType::Critical, AlertType::Fragmentation,
                                     AlertType::Growth};

void family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out.append("# HELP ").append(name).append(" ").append(help).append("\n");
  out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

void sample(std::string& out, std::string_view name, std::string_view labels, std::string_view value) {
  out.append(name).append("{").append(labels).append("} ").append(value).append("\n");
}

// A device's labels, then the process's: device "" for a device below 0 (pinned host memory).
std::string device_labels(int ordinal, std::string_view process_labels) {
  return "device=\"" + (ordinal >= 0 ? std::to_string(ordinal) : std::string()) + "\"," + std::string(process_labels);
}

void device_families(std::string& out, const Accounting& acc, std::string_view process_labels,
                     const std::map<int, Accounting::LiveTotals>& live, const DeviceFamily* begin,
                     const DeviceFamily* end, bool framework_only) {
  for (const DeviceFamily* f = begin; f != end; ++f) {
    family(out, f->name, f->type, f->help);
    for (const auto& [ordinal, d] : acc.devices()) {
      if (framework_only && !d.framework.attached) continue;
      const auto l = live.find(ordinal);
      sample(out, f->name, device_labels(ordinal, process_labels),
             std::to_string(f->value(d, l == live.end() ? 0 : l->second.count)));
    }
  }
}

}  // namespace

std::string metrics_label_value(std::string_view v) {
  // json_text() is the project's one UTF-8 repair (invalid bytes to U+FFFD); read its string back.
  const auto repaired = nlohmann::json::parse(json_text(nlohmann::json(std::string(v))), nullptr, false);
  const std::string valid = repaired.is_string() ? repaired.get<std::string>() : std::string();
  std::string out;
  out.reserve(valid.size());
  for (char c : valid) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '"': out += "\\\""; break;
      case '\n': out += "\\n"; break;
      default: out += c;
    }
  }
  return out;
}

std::string metrics_process_labels(const ProcessInfo& info) {
  const JobIdentity& job = info.job;
  return "rank=\"" + (job.rank ? std::to_string(*job.rank) : std::string()) + "\",job_id=\"" +
         metrics_label_value(job.job_id) + "\",host=\"" + metrics_label_value(info.host) + "\",pid=\"" +
         std::to_string(info.pid) + "\",pid_namespace=\"" + std::to_string(info.pid_namespace) +
         "\",executable=\"" + metrics_label_value(info.exe_name) + "\"";
}

std::string metrics_file_name(const std::string& host, int pid, uint64_t pid_namespace) {
  std::string name = "gpumemprof_";
  for (char c : host) {
    const bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                       c == '-' || c == '_';
    name += plain ? c : '_';
  }
  return name + "_" + std::to_string(pid) + "_" + std::to_string(pid_namespace) + ".prom";
}

std::string render_metrics(const Accounting& acc, const MetricsTally& tally, const TensorCategories& categories,
                           std::string_view process_labels, uint64_t now_realtime_ns, bool running) {
  std::string out;
  family(out, "gpumemprof_exited", "gauge", "1 once the profiled process has ended: the figures are its last ones.");
  sample(out, "gpumemprof_exited", process_labels, running ? "0" : "1");
  family(out, "gpumemprof_last_update_seconds", "gauge", "When gpumemprof last rewrote this file, in Unix time.");
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%llu.%03llu",
                static_cast<unsigned long long>(now_realtime_ns / 1'000'000'000),
                static_cast<unsigned long long>(now_realtime_ns / 1'000'000 % 1000));
  sample(out, "gpumemprof_last_update_seconds", process_labels, seconds);

  const auto live = acc.live_by_device();
  device_families(out, acc, process_labels, live, std::begin(kDeviceFamilies), std::end(kDeviceFamilies), false);
  bool bridged = false;
  for (const auto& [_, d] : acc.devices()) bridged = bridged || d.framework.attached;
  if (bridged) {
    device_families(out, acc, process_labels, live, std::begin(kFrameworkFamilies), std::end(kFrameworkFamilies),
                    true);
    family(out, "gpumemprof_tensor_category_bytes", "gauge",
           "Bytes of the framework's live tensors by what they are for, as decided so far; a tensor not decided "
           "yet (held in the phase it was allocated in) is unknown.");
    for (const auto& [ordinal, d] : acc.devices()) {
      if (!d.framework.attached) continue;
      const CategoryBytes& bytes = categories.now(ordinal);
      const std::string labels = device_labels(ordinal, process_labels);
      for (size_t c = 0; c < bytes.size(); ++c) {
        const auto category = static_cast<TensorCategory>(c);
        sample(out, "gpumemprof_tensor_category_bytes",
               labels + ",category=\"" + std::string(tensor_category_name(category)) + "\"", std::to_string(bytes[c]));
      }
    }
  }

  // Every device the accounting knows, and any other a bundle was written for.
  std::map<int, MetricsTally::Device> counted;
  for (const auto& [ordinal, _] : acc.devices()) counted[ordinal] = {};
  for (const auto& [ordinal, d] : tally.devices()) counted[ordinal] = d;
  family(out, "gpumemprof_oom_bundles_total", "counter", "OOM bundles written for an allocation on the device.");
  for (const auto& [ordinal, d] : counted) {
    sample(out, "gpumemprof_oom_bundles_total", device_labels(ordinal, process_labels),
           std::to_string(d.oom_bundles));
  }
  family(out, "gpumemprof_alerts_total", "counter", "Alerts fired for the device, by type.");
  for (const auto& [ordinal, d] : counted) {
    for (AlertType t : kAlertTypes) {
      sample(out, "gpumemprof_alerts_total",
             device_labels(ordinal, process_labels) + ",type=\"" + alert_type_name(t) + "\"",
             std::to_string(d.alerts_fired[static_cast<size_t>(t)]));
    }
  }
  return out;
}

void MetricsTally::note(const Event& e) {
  if (e.op == Op::OomBundle) {
    ++devices_[e.device].oom_bundles;
  } else if (const uint64_t type = AlertRecord::type_index(e);
             e.op == Op::Alert && AlertRecord::from_event(e).fired && type < MetricsTally::Device{}.alerts_fired.size()) {
    ++devices_[e.device].alerts_fired[type];  // fired, not cleared; as the accounting counts
  }
}

void MetricsFile::open(const std::string& dir, uint64_t interval_ms, const ProcessInfo& info) {
  if (dir.empty()) return;
  std::string error;
  const uid_t self = geteuid();
  // Absolute, like the run directory: messages name it so wherever the program goes later.
  const std::string absolute = dir[0] == '/' || info.cwd.empty() ? dir : info.cwd + "/" + dir;
  Fd fd = open_trusted_dir(absolute, self, error);
  if (!fd || !may_write_into(fd.get(), absolute, self, error) || !dir_.adopt(std::move(fd), absolute, self)) {
    if (error.empty()) error = std::strerror(errno);
    log::warn("cannot use the metrics directory {}: {}; no metrics for this process", dir, error);
    return;
  }
  name_ = metrics_file_name(info.host, info.pid, info.pid_namespace);
  labels_ = metrics_process_labels(info);
  interval_ns_ = interval_ms * 1'000'000;
}

void MetricsFile::maybe_write(uint64_t now_ns, const Accounting& acc, const TensorCategories& categories) {
  if (dir_.is_open() && now_ns >= due_ns_) write(now_ns, acc, categories, true);
}

void MetricsFile::write_final(uint64_t now_ns, const Accounting& acc, const TensorCategories& categories) {
  if (dir_.is_open()) write(now_ns, acc, categories, false);
}

void MetricsFile::write(uint64_t now_ns, const Accounting& acc, const TensorCategories& categories, bool running) {
  due_ns_ = now_ns + interval_ns_;
  const int dirfd = dir_.fd();
  const std::string text = render_metrics(acc, tally_, categories, labels_, realtime_ns(), running);
  if ((dirfd >= 0 && write_file_atomic(dirfd, name_, text, 0644)) || warned_) {
    return;
  }
  // Said once: a full disk or a removed directory would otherwise repeat it every interval. Later
  // writes still try, so the file comes back once there is room (or the directory) again.
  warned_ = true;
  log::warn("cannot write the metrics file {}: {}; trying again every interval", path(), std::strerror(errno));
}

}  // namespace gmp
