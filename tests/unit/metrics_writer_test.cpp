// The Prometheus textfile (collector/metrics_writer.h): the exact text for a fixed state, label
// escaping, the file name, and the file's atomic rewrite.
#include "metrics_writer.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "records.h"
#include "temp_dir.h"

namespace gmp {
namespace {

constexpr uint64_t MiB = 1 << 20;

class Events {
 public:
  Accounting acc;
  MetricsTally tally;
  TensorCategories cats{TensorCategories::Use::Live, {}};

  void apply(const Event& e) {
    acc.apply(e);
    cats.add(e);
    tally.note(e);
  }

  Event& next(Op op, int dev) {
    e_ = Event{};
    e_.op = op;
    e_.device = static_cast<int16_t>(dev);
    e_.thread_id = 1;
    e_.timestamp_ns = ++t_;
    return e_;
  }
  void device(int dev, uint64_t total) {
    next(Op::DeviceInfo, dev).size = total;
    apply(e_);
  }
  void alloc(int dev, uint64_t addr, uint64_t size, int result = 0) {
    Event& e = next(Op::Alloc, dev);
    e.kind = Kind::Linear;
    e.address = addr;
    e.size = size;
    e.result = static_cast<int16_t>(result);
    apply(e);
  }
  void free(uint64_t addr) {
    Event& e = next(Op::Free, -1);
    e.kind = Kind::Linear;
    e.address = addr;
    apply(e);
  }
  void alert(int dev, AlertType type, bool fired) {
    Event& e = next(Op::Alert, dev);
    e.api = Api::Collector;
    e.value = static_cast<uint64_t>(type);
    e.result = fired ? 1 : 0;
    apply(e);
  }
  void oom_bundle(int dev) { apply(next(Op::OomBundle, dev)); }

 private:
  Event e_{};
  uint64_t t_ = 0;
};

ProcessInfo process() {
  ProcessInfo info;
  info.pid = 4242;
  info.pid_namespace = 4026531836;  // the initial namespace's
  info.host = "gpu7";
  info.exe_name = "python3";
  info.job.rank = 3;
  info.job.job_id = "a\"b\\c\nd\xff";  // every character the format escapes, and a byte that is not UTF-8
  return info;
}

TEST(MetricsText, LabelValuesAreEscapedAndValidUtf8) {
  EXPECT_EQ(metrics_label_value("plain"), "plain");
  EXPECT_EQ(metrics_label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(metrics_label_value("tab\there"), "tab\there");         // only \, " and newline are escaped
  EXPECT_EQ(metrics_label_value("caf\xc3\xa9"), "caf\xc3\xa9");      // valid UTF-8 is kept
  EXPECT_EQ(metrics_label_value("x\xff\xfey"), "x\xef\xbf\xbd\xef\xbf\xbdy");  // each invalid byte: U+FFFD
  EXPECT_EQ(metrics_label_value(""), "");
}

TEST(MetricsText, ProcessLabels) {
  EXPECT_EQ(metrics_process_labels(process()),
            R"(rank="3",job_id="a\"b\\c\nd)"
            "\xef\xbf\xbd"
            R"(",host="gpu7",pid="4242",pid_namespace="4026531836",executable="python3")");
  ProcessInfo alone;  // no launcher: rank and job_id empty (as good as absent to Prometheus)
  alone.pid = 7;
  alone.host = "h";
  alone.exe_name = "a b";
  EXPECT_EQ(metrics_process_labels(alone), R"(rank="",job_id="",host="h",pid="7",pid_namespace="0",executable="a b")");
}

TEST(MetricsText, FileName) {
  EXPECT_EQ(metrics_file_name("gpu7.example.com", 4242, 4026531836),
            "gpumemprof_gpu7.example.com_4242_4026531836.prom");
  EXPECT_EQ(metrics_file_name("a/b c\xc3\xa9", 1, 7), "gpumemprof_a_b_c___1_7.prom");
  EXPECT_EQ(metrics_file_name("", 1, 0), "gpumemprof__1_0.prom");
}

// Two devices; device 0 peaks at 130 MiB and ends at 100 MiB; device 1 has one allocation, one
// that failed with its OOM bundle. Alerts: a warning that fired and cleared, a critical.
void fixed_state(Events& s) {
  s.device(0, 1024 * MiB);
  s.device(1, 2048 * MiB);
  s.alloc(0, 0x100000, 100 * MiB);
  s.alloc(0, 0x10000000, 30 * MiB);
  s.alert(0, AlertType::Warning, true);
  s.alert(0, AlertType::Critical, true);
  s.free(0x10000000);
  s.alert(0, AlertType::Warning, false);
  s.alloc(1, 0x80000000, MiB);
  s.alloc(1, 0, 4096 * MiB, 2);  // CUDA_ERROR_OUT_OF_MEMORY
  s.oom_bundle(1);
}

TEST(MetricsText, ExactFileForAFixedState) {
  Events s;
  fixed_state(s);
  const std::string L = metrics_process_labels(process());
  const std::string d0 = "{device=\"0\"," + L + "} ";
  const std::string d1 = "{device=\"1\"," + L + "} ";
  const std::string expected =
      "# HELP gpumemprof_exited 1 once the profiled process has ended: the figures are its last ones.\n"
      "# TYPE gpumemprof_exited gauge\n"
      "gpumemprof_exited{" + L + "} 0\n"
      "# HELP gpumemprof_last_update_seconds When gpumemprof last rewrote this file, in Unix time.\n"
      "# TYPE gpumemprof_last_update_seconds gauge\n"
      "gpumemprof_last_update_seconds{" + L + "} 1700000000.123\n"
      "# HELP gpumemprof_device_total_bytes Total memory of the device, as the driver reports it.\n"
      "# TYPE gpumemprof_device_total_bytes gauge\n"
      "gpumemprof_device_total_bytes" + d0 + "1073741824\n"
      "gpumemprof_device_total_bytes" + d1 + "2147483648\n"
      "# HELP gpumemprof_allocated_bytes Device memory held by the process's allocations (linear, pool, VMM "
      "mapped, arrays).\n"
      "# TYPE gpumemprof_allocated_bytes gauge\n"
      "gpumemprof_allocated_bytes" + d0 + "104857600\n"
      "gpumemprof_allocated_bytes" + d1 + "1048576\n"
      "# HELP gpumemprof_allocated_peak_bytes Highest allocated bytes since the process started, over every "
      "event.\n"
      "# TYPE gpumemprof_allocated_peak_bytes gauge\n"
      "gpumemprof_allocated_peak_bytes" + d0 + "136314880\n"
      "gpumemprof_allocated_peak_bytes" + d1 + "1048576\n"
      "# HELP gpumemprof_reserved_bytes Device memory the process holds from the driver, pools' reserve "
      "included.\n"
      "# TYPE gpumemprof_reserved_bytes gauge\n"
      "gpumemprof_reserved_bytes" + d0 + "104857600\n"
      "gpumemprof_reserved_bytes" + d1 + "1048576\n"
      "# HELP gpumemprof_reserved_peak_bytes Highest reserved bytes since the process started, over every "
      "event.\n"
      "# TYPE gpumemprof_reserved_peak_bytes gauge\n"
      "gpumemprof_reserved_peak_bytes" + d0 + "136314880\n"
      "gpumemprof_reserved_peak_bytes" + d1 + "1048576\n"
      "# HELP gpumemprof_live_allocations Allocations holding memory now; with the PyTorch bridge, its tensors "
      "rather than its cached segments.\n"
      "# TYPE gpumemprof_live_allocations gauge\n"
      "gpumemprof_live_allocations" + d0 + "1\n"
      "gpumemprof_live_allocations" + d1 + "1\n"
      "# HELP gpumemprof_failed_allocations_total Allocation calls that failed (out of memory or another "
      "error).\n"
      "# TYPE gpumemprof_failed_allocations_total counter\n"
      "gpumemprof_failed_allocations_total" + d0 + "0\n"
      "gpumemprof_failed_allocations_total" + d1 + "1\n"
      "# HELP gpumemprof_oom_bundles_total OOM bundles written for an allocation on the device.\n"
      "# TYPE gpumemprof_oom_bundles_total counter\n"
      "gpumemprof_oom_bundles_total" + d0 + "0\n"
      "gpumemprof_oom_bundles_total" + d1 + "1\n"
      "# HELP gpumemprof_alerts_total Alerts fired for the device, by type.\n"
      "# TYPE gpumemprof_alerts_total counter\n"
      "gpumemprof_alerts_total{device=\"0\"," + L + ",type=\"warning\"} 1\n"
      "gpumemprof_alerts_total{device=\"0\"," + L + ",type=\"critical\"} 1\n"
      "gpumemprof_alerts_total{device=\"0\"," + L + ",type=\"fragmentation\"} 0\n"
      "gpumemprof_alerts_total{device=\"0\"," + L + ",type=\"growth\"} 0\n"
      "gpumemprof_alerts_total{device=\"1\"," + L + ",type=\"warning\"} 0\n"
      "gpumemprof_alerts_total{device=\"1\"," + L + ",type=\"critical\"} 0\n"
      "gpumemprof_alerts_total{device=\"1\"," + L + ",type=\"fragmentation\"} 0\n"
      "gpumemprof_alerts_total{device=\"1\"," + L + ",type=\"growth\"} 0\n";
  EXPECT_EQ(render_metrics(s.acc, s.tally, s.cats, L, 1'700'000'000'123'456'789ull, true), expected);
  // The final figures differ in gpumemprof_exited only.
  std::string final_text = expected;
  const std::string running = "gpumemprof_exited{" + L + "} 0\n";
  final_text.replace(final_text.find(running), running.size(), "gpumemprof_exited{" + L + "} 1\n");
  EXPECT_EQ(render_metrics(s.acc, s.tally, s.cats, L, 1'700'000'000'123'456'789ull, false), final_text);
}

// An OOM bundle for pinned host memory has no device: it counts under device "".
TEST(MetricsText, ABundleWithoutADeviceCountsUnderAnEmptyDevice) {
  Events s;
  s.device(0, 1024 * MiB);
  s.oom_bundle(-1);
  const std::string text = render_metrics(s.acc, s.tally, s.cats, "pid=\"1\"", 0, true);
  EXPECT_NE(text.find("gpumemprof_oom_bundles_total{device=\"\",pid=\"1\"} 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpumemprof_oom_bundles_total{device=\"0\",pid=\"1\"} 0\n"), std::string::npos) << text;
}

TEST(MetricsText, FrameworkFamiliesOnlyOnBridgedDevices) {
  Events s;
  s.device(0, 1024 * MiB);
  s.device(1, 1024 * MiB);
  Event attach{};
  FrameworkAttachRecord{true, framework_version(2, 11, 0)}.to_event(attach);
  attach.api = Api::torch_caching_allocator;
  attach.device = -1;
  s.apply(attach);
  s.alloc(0, 0x100000, 20 * MiB);  // the segment's cudaMalloc
  auto framework = [&](Op op, uint64_t addr, uint64_t size) {
    Event e{};
    e.op = op;
    e.api = Api::torch_caching_allocator;
    e.address = addr;
    e.size = size;
    s.apply(e);
  };
  framework(Op::SegmentAlloc, 0x100000, 20 * MiB);
  framework(Op::TensorAlloc, 0x100000, 3 * MiB);
  framework(Op::TensorAlloc, 0x400000, 1000);
  Event label{};  // the first tensor is a parameter; the second is not decided yet
  TensorLabelRecord{0x100000, TensorCategory::Parameters, 0}.to_event(label);
  label.api = Api::torch_caching_allocator;
  s.apply(label);
  const std::string text = render_metrics(s.acc, s.tally, s.cats, "pid=\"1\"", 0, true);
  const std::string d0 = "{device=\"0\",pid=\"1\"} ";
  EXPECT_NE(text.find("gpumemprof_framework_allocated_bytes" + d0 + std::to_string(3 * MiB + 1000) + "\n"),
            std::string::npos) << text;
  EXPECT_NE(text.find("gpumemprof_framework_reserved_bytes" + d0 + std::to_string(20 * MiB) + "\n"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("gpumemprof_framework_allocated_bytes{device=\"1\""), std::string::npos) << text;
  const std::string c0 = "gpumemprof_tensor_category_bytes{device=\"0\",pid=\"1\",category=";
  EXPECT_NE(text.find(c0 + "\"parameters\"} " + std::to_string(3 * MiB) + "\n"), std::string::npos) << text;
  EXPECT_NE(text.find(c0 + "\"unknown\"} 1000\n"), std::string::npos) << text;
  EXPECT_NE(text.find(c0 + "\"activations\"} 0\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("gpumemprof_tensor_category_bytes{device=\"1\""), std::string::npos) << text;
  // The tensors are the live allocations; the segment is the framework's cache.
  EXPECT_NE(text.find("gpumemprof_live_allocations" + d0 + "2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("gpumemprof_last_update_seconds{pid=\"1\"} 0.000\n"), std::string::npos) << text;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(MetricsFile, WritesAtOnceThenEveryIntervalAndMarksTheEnd) {
  test::TempDir dir;
  Events s;
  fixed_state(s);
  const ProcessInfo info = process();
  MetricsFile file;
  file.open(dir.path + "/prom/sub", 1000, info);  // created where missing
  const std::string path = dir.path + "/prom/sub/gpumemprof_gpu7_4242_4026531836.prom";
  ASSERT_EQ(file.path(), path);
  file.maybe_write(5'000'000'000, s.acc, s.cats);  // the first pass writes at once
  EXPECT_NE(slurp(path).find("gpumemprof_allocated_bytes{device=\"0\""), std::string::npos);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  const mode_t mask = umask(0);
  umask(mask);
  EXPECT_EQ(st.st_mode & 0777, 0644u & ~mask);  // node_exporter runs as another user
  size_t files = 0;  // no temporary left beside it
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path + "/prom/sub")) ++files;
  EXPECT_EQ(files, 1u);
  s.alloc(0, 0x20000000, MiB);
  file.maybe_write(5'999'999'999, s.acc, s.cats);  // within the interval: unchanged
  EXPECT_NE(slurp(path).find("gpumemprof_allocated_bytes{device=\"0\"," + metrics_process_labels(info) + "} " +
                             std::to_string(100 * MiB) + "\n"),
            std::string::npos);
  file.maybe_write(6'000'000'000, s.acc, s.cats);
  EXPECT_NE(slurp(path).find("gpumemprof_allocated_bytes{device=\"0\"," + metrics_process_labels(info) + "} " +
                             std::to_string(101 * MiB) + "\n"),
            std::string::npos);
  file.write_final(6'000'000'001, s.acc, s.cats);
  EXPECT_NE(slurp(path).find("gpumemprof_exited{" + metrics_process_labels(info) + "} 1\n"), std::string::npos);
}

TEST(MetricsFile, OffWithoutADirectory) {
  Events s;
  MetricsFile file;
  file.open("", 1000, process());
  EXPECT_EQ(file.path(), "");
  file.maybe_write(1, s.acc, s.cats);
  file.write_final(2, s.acc, s.cats);
}

}  // namespace
}  // namespace gmp
