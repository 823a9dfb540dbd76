// The flight recorder fed events directly, as the collector feeds them: a framework OOM
// (Op::FrameworkOomFigures) writes a bundle with PyTorch's figures, its tensors and segments.
#include "oom_recorder.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "process_info.h"
#include "held_dir.h"
#include "temp_dir.h"

namespace gmp {
namespace {

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
constexpr uint64_t kStart = 1'000'000'000;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

Event framework_event(Op op, uint64_t t, uint64_t address, uint64_t size, uint32_t stack = 0) {
  Event e{};
  e.timestamp_ns = kStart + t;
  e.op = op;
  e.api = Api::torch_caching_allocator;
  e.device = 0;
  e.address = address;
  e.size = size;
  e.thread_id = 77;
  e.stack_id = stack;
  return e;
}

Event driver_alloc(uint64_t t, uint64_t address, uint64_t size, int16_t result = 0) {
  Event e{};
  e.timestamp_ns = kStart + t;
  e.op = Op::Alloc;
  e.kind = Kind::Linear;
  e.api = Api::cuMemAlloc_v2;
  e.device = 0;
  e.address = address;
  e.size = size;
  e.result = result;
  e.thread_id = 77;
  return e;
}

class Recorder {
 public:
  explicit Recorder(const std::string& dir) : run_dir_(dir) {
    config_.oom_dir = dir + "/oom";
    info_ = current_process_info();
    info_.start_monotonic_ns = kStart;
    std::snprintf(devices_.entries[0].name, sizeof devices_.entries[0].name, "%s", "Test GPU");
    devices_.entries[0].total_bytes = 80 * kGiB;
    devices_.claim(0);
    recorder_ = std::make_unique<OomRecorder>(config_, info_, devices_);
    recorder_->set_run_dir(run_dir_.dir);
  }
  std::vector<Event> feed(const Event& e) {
    acc_.apply(e);
    std::vector<Event> out;
    recorder_->after(e, acc_, out);
    for (const Event& o : out) acc_.apply(o);
    return out;
  }
  std::vector<std::string> bundles() const {
    std::vector<std::string> out;
    for (const auto& entry : std::filesystem::directory_iterator(config_.oom_dir)) out.push_back(entry.path());
    std::sort(out.begin(), out.end());
    return out;
  }
  const Accounting& accounting() const { return acc_; }

 private:
  test::HeldDir run_dir_;
  Config config_;
  ProcessInfo info_;
  DeviceTable devices_;
  Accounting acc_;
  std::unique_ptr<OomRecorder> recorder_;
};

// A bridged process: two segments (one through a driver allocation), three tensors.
void bridged(Recorder& r) {
  Event info{};
  info.timestamp_ns = kStart;
  info.op = Op::DeviceInfo;
  info.device = 0;
  info.size = 80 * kGiB;
  r.feed(info);
  Event attach = framework_event(Op::FrameworkAttach, 1, 0, 0);
  attach.result = 1;
  attach.value = framework_version(2, 11, 0);
  r.feed(attach);
  r.feed(driver_alloc(10, 0x7000'0000, 20 * kMiB));
  r.feed(framework_event(Op::SegmentAlloc, 11, 0x7000'0000, 20 * kMiB));
  r.feed(framework_event(Op::SegmentAlloc, 12, 0x9000'0000, 24 * kMiB));
  r.feed(framework_event(Op::TensorAlloc, 20, 0x7000'0000, 16 * kMiB, 5));
  r.feed(framework_event(Op::TensorAlloc, 21, 0x7100'0000, 4 * kMiB, 6));
  r.feed(framework_event(Op::TensorAlloc, 22, 0x9000'0000, 5 * kMiB, 5));
}

Event figures(uint64_t t) {
  Event e = framework_event(Op::FrameworkOomFigures, t, 44 * kMiB, 65536 * kGiB);
  e.value = 139 * kGiB;   // device free
  e.stream = 140 * kGiB;  // capacity
  e.object = 25 * kMiB;   // PyTorch's allocated (block sizes)
  return e;
}

TEST(OomRecorder, FrameworkOomWritesABundleWithPyTorchsFigures) {
  test::TempDir dir;
  Recorder r(dir.path);
  bridged(r);
  auto out = r.feed(figures(1000));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op, Op::OomBundle);
  EXPECT_EQ(out[0].size, 65536 * kGiB);
  auto bundles = r.bundles();
  ASSERT_EQ(bundles.size(), 1u);
  const std::string b = bundles[0];

  const auto meta = read_json(b + "/metadata.json");
  EXPECT_EQ(meta["request"]["api"], "torch_caching_allocator");
  EXPECT_EQ(meta["request"]["kind"], "tensor");
  EXPECT_EQ(meta["request"]["size"], 65536 * kGiB);
  EXPECT_EQ(meta["request"]["stream"], 0);
  EXPECT_EQ(meta["reason"], "PyTorch out of memory: tried to allocate 65536.00 GiB (70368744177664 bytes) on device 0");
  const auto& f = meta["framework"];
  EXPECT_EQ(f["device"], 0);
  EXPECT_EQ(f["requested_bytes"], 65536 * kGiB);
  EXPECT_EQ(f["free_bytes"], 139 * kGiB);
  EXPECT_EQ(f["capacity_bytes"], 140 * kGiB);
  EXPECT_EQ(f["allocated_bytes"], 25 * kMiB);
  EXPECT_EQ(f["reserved_bytes"], 44 * kMiB);
  // No NVML sample: capacity - free, which counts other processes too.
  EXPECT_EQ(f["process_used_source"], "capacity_less_free");
  EXPECT_EQ(f["process_used_bytes"], kGiB);
  EXPECT_EQ(f["non_pytorch_bytes"], kGiB - 44 * kMiB);
  EXPECT_EQ(f["accounting"]["allocated_bytes"]["current"], 25 * kMiB);
  EXPECT_EQ(f["accounting"]["reserved_bytes"]["current"], 44 * kMiB);
  EXPECT_EQ(f["accounting"]["cached_bytes"], 19 * kMiB);
  EXPECT_EQ(f["accounting"]["allocated_peak_at_ns"], 22);
  EXPECT_EQ(meta["driver_memory"], (nlohmann::json{{"device", 0}, {"free", 139 * kGiB}, {"total", 80 * kGiB}}));

  const auto tensors = read_json(b + "/tensors.json");
  ASSERT_EQ(tensors.size(), 3u);
  EXPECT_EQ(tensors[0]["size"], 16 * kMiB);  // largest first
  EXPECT_EQ(tensors[0]["address"], 0x7000'0000);
  EXPECT_EQ(tensors[0]["kind"], "tensor");
  EXPECT_EQ(tensors[0]["api"], "torch_caching_allocator");
  EXPECT_EQ(tensors[0]["stack_id"], 5);
  EXPECT_EQ(tensors[0]["thread"], 77);
  EXPECT_EQ(tensors[0]["age_ms"], 0);
  EXPECT_EQ(tensors[2]["size"], 4 * kMiB);
  const auto segments = read_json(b + "/segments.json");
  EXPECT_EQ(segments, (nlohmann::json{{{"address", 0x7000'0000}, {"size", 20 * kMiB}, {"device", 0}},
                                      {{"address", 0x9000'0000}, {"size", 24 * kMiB}, {"device", 0}}}));
  const auto manifest = read_json(b + "/manifest.json");
  EXPECT_EQ(manifest["files"], (nlohmann::json{"manifest.json", "metadata.json", "events.json", "allocations.json",
                                               "environment.json", "tensors.json", "segments.json"}));
  EXPECT_EQ(r.accounting().oom().bundles_written, 1u);
}

TEST(OomRecorder, FrameworkOomUsesNvmlsProcessFigure) {
  test::TempDir dir;
  Recorder r(dir.path);
  bridged(r);
  Event sample{};
  sample.timestamp_ns = kStart + 500;
  sample.op = Op::Sample;
  sample.api = Api::Collector;
  sample.device = 0;
  sample.size = 2 * kGiB;
  sample.object = 140 * kGiB;
  sample.value = 634 * kMiB;
  r.feed(sample);
  r.feed(figures(1000));
  const auto meta = read_json(r.bundles()[0] + "/metadata.json");
  EXPECT_EQ(meta["framework"]["process_used_source"], "nvml");
  EXPECT_EQ(meta["framework"]["process_used_bytes"], 634 * kMiB);
  EXPECT_EQ(meta["framework"]["non_pytorch_bytes"], 590 * kMiB);
}

TEST(OomRecorder, FrameworkOomsOfOneEpisodeShareABundleUntilATensorFits) {
  test::TempDir dir;
  Recorder r(dir.path);
  bridged(r);
  r.feed(figures(1000));
  EXPECT_TRUE(r.feed(figures(2000)).empty());  // the same episode: the bundle is updated
  EXPECT_EQ(r.bundles().size(), 1u);
  EXPECT_EQ(read_json(r.bundles()[0] + "/metadata.json")["failures"], 2);
  // A smaller tensor does not end it; one of the failed size does.
  EXPECT_TRUE(r.feed(framework_event(Op::TensorAlloc, 3000, 0xA000'0000, kMiB)).empty());
  auto out = r.feed(framework_event(Op::TensorAlloc, 4000, 0xB000'0000, 65536 * kGiB));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].op, Op::OomRecovered);
  EXPECT_EQ(read_json(r.bundles()[0] + "/metadata.json")["recovered"], true);
  // The next framework OOM opens a new episode.
  EXPECT_EQ(r.feed(figures(5000)).size(), 1u);
  EXPECT_EQ(r.bundles().size(), 2u);
}

TEST(OomRecorder, DriverOomInABridgedProcessListsItsTensors) {
  test::TempDir dir;
  Recorder r(dir.path);
  bridged(r);
  auto out = r.feed(driver_alloc(1000, 0, 2 * kGiB, kOutOfMemory));
  ASSERT_EQ(out.size(), 1u);
  const std::string b = r.bundles()[0];
  const auto meta = read_json(b + "/metadata.json");
  EXPECT_FALSE(meta.contains("framework"));
  EXPECT_EQ(meta["request"]["api"], "cuMemAlloc_v2");
  EXPECT_EQ(read_json(b + "/tensors.json").size(), 3u);
  // The driver episode and the framework's are apart: the framework OOM that follows has its own.
  EXPECT_EQ(r.feed(figures(1100)).size(), 1u);
  EXPECT_EQ(r.bundles().size(), 2u);
}

TEST(OomRecorder, DriverOomWithoutFrameworkHasNoTensorFiles) {
  test::TempDir dir;
  Recorder r(dir.path);
  r.feed(driver_alloc(10, 0x1000, kMiB));
  r.feed(driver_alloc(1000, 0, 2 * kGiB, kOutOfMemory));
  const std::string b = r.bundles()[0];
  EXPECT_FALSE(std::filesystem::exists(b + "/tensors.json"));
  EXPECT_FALSE(std::filesystem::exists(b + "/segments.json"));
  EXPECT_EQ(read_json(b + "/manifest.json")["files"].size(), 5u);
  EXPECT_FALSE(read_json(b + "/metadata.json").contains("framework"));
}

}  // namespace
}  // namespace gmp
