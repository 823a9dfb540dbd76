// Ground-truth helpers shared by the real-GPU workloads (tests/gpu/*.cu, *.cpp).
//
// Each workload keeps its own ledger of what it asked the driver for (sizes it chose, so the
// numbers are known exactly, not measured) and writes, at the end, a JSON file at $GROUND_TRUTH:
//   {"workload", "pid", "ok", "errors": [...], "checks": [...], "info": {...}}
// A check names a summary.json field ("dev0.by_kind.linear.peak", "live_at_exit.bytes", ...;
// "devN" selects the devices[] entry whose "device" is N) and the value the shim must report.
// A check with "min"/"max"/"why" is tolerant: tests/gpu/compare.py says OK inside the range.
// The pid lets compare.py pick this process's run directory among several.
#pragma once
#include <algorithm>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
#include <unistd.h>

namespace truth {

// One accounting bucket, updated by the workload right after each successful call.
struct Bucket {
  uint64_t cur = 0, peak = 0, allocs = 0, frees = 0;
  void add(uint64_t n) { cur += n; peak = std::max(peak, cur); ++allocs; }
  void sub(uint64_t n) { cur -= n; ++frees; }
};

// Device totals follow docs/accounting.md §Per device: allocated = linear + pool + vmm mapped + array,
// reserved = linear + pools' reserved + vmm physical + array. Call update() after every change so
// the peaks are maxima over the same event order the shim sees.
struct Device {
  Bucket linear, pool, vmm_mapped, vmm_phys, array, managed;
  uint64_t pool_reserved = 0;  // set by the workload from the driver's pool attributes
  uint64_t alloc_cur = 0, alloc_peak = 0, res_cur = 0, res_peak = 0;
  uint64_t failed = 0;
  void update() {
    alloc_cur = linear.cur + pool.cur + vmm_mapped.cur + array.cur;
    res_cur = linear.cur + pool_reserved + vmm_phys.cur + array.cur;
    alloc_peak = std::max(alloc_peak, alloc_cur);
    res_peak = std::max(res_peak, res_cur);
  }
  // alloc_count/free_count: linear, pool, vmm (create/release), array, managed; not pinned host.
  uint64_t alloc_count() const {
    return linear.allocs + pool.allocs + vmm_phys.allocs + array.allocs + managed.allocs;
  }
  uint64_t free_count() const {
    return linear.frees + pool.frees + vmm_phys.frees + array.frees + managed.frees;
  }
};

class Writer {
 public:
  explicit Writer(const char* workload) : workload_(workload) {}

  void exact(const std::string& metric, uint64_t v) { add(metric, v, v, v, ""); }
  void range(const std::string& metric, uint64_t v, uint64_t lo, uint64_t hi, const char* why) {
    add(metric, v, lo, hi, why);
  }
  void info(const std::string& key, uint64_t v) {
    info_.push_back("\"" + key + "\": " + std::to_string(v));
  }
  void info_str(const std::string& key, const std::string& v) {
    info_.push_back("\"" + key + "\": \"" + esc(v) + "\"");
  }
  // An extra top-level member, `json` written as given (an object, a number, ...): e.g. the
  // "oom" expectations and "expect_exit" of the out-of-memory workloads (compare.py).
  void top(const std::string& key, const std::string& json) {
    top_.push_back("\"" + key + "\": " + json);
  }
  // Records an unexpected result; the workload exits 1 and the table shows FAIL with this text.
  void error(const char* fmt, ...) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: %s\n", workload_, buf);
    errors_.push_back(buf);
  }
  bool ok() const { return errors_.empty(); }

  // The standard set of checks for device 0 and the process-wide figures.
  void device_checks(const Device& d, uint64_t total) {
    exact("dev0.total_bytes", total);
    exact("dev0.allocated_bytes.peak", d.alloc_peak);
    exact("dev0.allocated_bytes.current", d.alloc_cur);
    exact("dev0.reserved_bytes.peak", d.res_peak);
    exact("dev0.reserved_bytes.current", d.res_cur);
    exact("dev0.alloc_count", d.alloc_count());
    exact("dev0.free_count", d.free_count());
    exact("dev0.failed_alloc_count", d.failed);
  }
  void kind_checks(const char* kind, const Bucket& b) {
    std::string k = std::string("dev0.by_kind.") + kind;
    exact(k + ".peak", b.peak);
    exact(k + ".current", b.cur);
    exact(k + ".allocs", b.allocs);
    exact(k + ".frees", b.frees);
  }

  // Writes $GROUND_TRUTH (or stdout when unset) and returns the process exit status.
  int finish() {
    const char* path = getenv("GROUND_TRUTH");
    FILE* f = path ? fopen(path, "w") : stdout;
    if (!f) { perror(path); return 1; }
    fprintf(f, "{\"workload\": \"%s\", \"pid\": %d, \"ok\": %s,\n \"errors\": [", workload_,
            (int)getpid(), ok() ? "true" : "false");
    for (size_t i = 0; i < errors_.size(); ++i)
      fprintf(f, "%s\"%s\"", i ? ", " : "", esc(errors_[i]).c_str());
    fprintf(f, "],\n \"checks\": [\n");
    for (size_t i = 0; i < checks_.size(); ++i)
      fprintf(f, "  %s%s\n", checks_[i].c_str(), i + 1 < checks_.size() ? "," : "");
    fprintf(f, " ],\n \"info\": {");
    for (size_t i = 0; i < info_.size(); ++i) fprintf(f, "%s\n  %s", i ? "," : "", info_[i].c_str());
    fprintf(f, "}");
    for (const std::string& t : top_) fprintf(f, ",\n %s", t.c_str());
    fprintf(f, "}\n");
    if (f != stdout) fclose(f);
    return ok() ? 0 : 1;
  }

 private:
  void add(const std::string& metric, uint64_t v, uint64_t lo, uint64_t hi, const char* why) {
    std::string s = "{\"metric\": \"" + metric + "\", \"expect\": " + std::to_string(v);
    if (lo != v || hi != v || *why)
      s += ", \"min\": " + std::to_string(lo) + ", \"max\": " + std::to_string(hi) +
           ", \"why\": \"" + esc(why) + "\"";
    checks_.push_back(s + "}");
  }
  static std::string esc(const std::string& in) {
    std::string out;
    for (char c : in) {
      if (c == '"' || c == '\\') out += '\\';
      out += (c == '\n' || c == '\t') ? ' ' : c;
    }
    return out;
  }
  const char* workload_;
  std::vector<std::string> checks_, info_, errors_, top_;
};

}  // namespace truth
