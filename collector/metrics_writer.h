// Fleet metrics (docs/metrics.md): with GPUMEMPROF_METRICS_DIR, each profiled process keeps one
// gpumemprof_<host>_<pid>.prom file in the Prometheus text exposition format, for node_exporter's
// textfile collector. The text is a pure function of the accounting and the live categories
// (render_metrics, unit-tested); MetricsFile rewrites it atomically from the collector thread, never
// from an allocating thread.
#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "accounting.h"
#include "owned_dir.h"
#include "process_record.h"
#include "tensor_categories.h"

namespace gmp {

// A label value as the exposition format writes it between double quotes: backslash, double quote
// and newline escaped; bytes that are not UTF-8 become U+FFFD, since a parser refuses the whole
// file (and node_exporter every textfile with it) over one invalid label value.
std::string metrics_label_value(std::string_view v);

// The labels every sample carries, escaped: rank, job_id (both empty when no launcher says), host,
// pid, pid_namespace and executable, e.g. `rank="0",job_id="4711",host="gpu7",pid="1234",
// pid_namespace="4026531836",executable="python3"`. Not `job`: Prometheus gives every scraped series
// its own `job` label and would rename ours. The namespace keeps apart the series of two containers
// that share a host name and a pid.
std::string metrics_process_labels(const ProcessInfo& info);

// gpumemprof_<host>_<pid>_<pid namespace>.prom; a byte of the host name outside [A-Za-z0-9._-]
// becomes '_', so the name is always one plain file name. Two processes of one host name and one
// pid in different PID namespaces (containers) get two files.
std::string metrics_file_name(const std::string& host, int pid, uint64_t pid_namespace);

// What the accounting counts per process but the metrics give per device: OOM bundles written and
// alerts fired, by type, tallied from the events as the collector handles them. A device below 0
// (an OOM bundle for pinned host memory) is the device "" of the file.
class MetricsTally {
 public:
  struct Device {
    uint64_t oom_bundles = 0;
    std::array<uint64_t, 5> alerts_fired{};  // by AlertType, as Accounting::alerts_fired()
  };
  void note(const Event& e);
  const std::map<int, Device>& devices() const { return devices_; }

 private:
  std::map<int, Device> devices_;
};

// The whole file: every family with HELP and TYPE, no sample timestamps (the textfile collector
// refuses them). `now_realtime_ns` is the last-update time; `running` false marks the final figures
// of a process that has ended (gpumemprof_exited 1). With the bridge attached, the tensors by
// category as `categories` (the collector's, Use::Live) has decided them so far.
std::string render_metrics(const Accounting& acc, const MetricsTally& tally, const TensorCategories& categories,
                           std::string_view process_labels, uint64_t now_realtime_ns, bool running);

// The file itself. Files are mode 0644 less the umask: node_exporter runs as another user. The
// directory is held by descriptor (owned_dir.h) and each write goes to a temporary file of an
// unpredictable name, created exclusively and never blocking, renamed over ours (file_io.h): a
// FIFO or file another user planted in a shared directory is never opened, truncated or renamed.
class MetricsFile {
 public:
  // Nothing when `dir` is empty. Otherwise creates `dir` where missing (0777 less the umask),
  // reached by the rules of trusted_dir.h (relative to `info.cwd`); a directory that cannot be
  // used is one warning, and no metrics for this process (profiling carries on).
  void open(const std::string& dir, uint64_t interval_ms, const ProcessInfo& info);
  // Every event the collector handles, in order (for the per-device counts of MetricsTally).
  void note(const Event& e) {
    if (dir_.is_open()) tally_.note(e);
  }
  // Rewrites the file when `interval_ms` has passed since the last write (`now_ns`: now_ns()).
  void maybe_write(uint64_t now_ns, const Accounting& acc, const TensorCategories& categories);
  // The process is ending (exit, a fatal signal, _exit, exec): the final figures, gpumemprof_exited 1.
  // The next periodic write is an interval away, so a process that really ends never flips the
  // file back; one whose exec failed and carries on does, an interval later.
  void write_final(uint64_t now_ns, const Accounting& acc, const TensorCategories& categories);
  // The file's path; empty when there are no metrics.
  std::string path() const { return dir_.is_open() ? dir_.shown(name_) : std::string(); }

 private:
  void write(uint64_t now_ns, const Accounting& acc, const TensorCategories& categories, bool running);

  OwnedDir dir_;  // not open: no metrics (off, or the directory was refused)
  std::string name_;
  std::string labels_;
  MetricsTally tally_;
  bool warned_ = false;  // a failed write was said
  uint64_t interval_ns_ = 0;
  uint64_t due_ns_ = 0;  // the first pass writes at once
};

}  // namespace gmp
