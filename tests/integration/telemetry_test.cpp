// NVML telemetry: with an NVML library present (the test double), samples of the device and of
// this process's usage land in the trace and the summary; without one, nothing changes.
#include <gtest/gtest.h>

#include "harness.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20;

TEST(Telemetry, NvmlSamplesSitNextToTrackedMemory) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:64M", "sleep:200", "alloc:1M"},
                        {{"LD_LIBRARY_PATH", Paths::fake_dir() + ":" + GMP_FAKE_NVML_DIR},
                         {"GPUMEMPROF_SAMPLE_MS", "10"},
                         {"FAKE_NVML_USED", std::to_string(400 * MiB)},
                         {"FAKE_NVML_PROCESS_USED", std::to_string(90 * MiB)}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string run = box.only_run_dir();
  auto s = read_json_file(run + "/summary.json");
  const auto& nvml = s["devices"][0]["nvml"];
  EXPECT_GE(nvml["samples"].get<uint64_t>(), 5u);  // 200 ms at 10 ms: far more than 5 in practice
  EXPECT_EQ(nvml["device_used_bytes"], 400 * MiB);
  EXPECT_EQ(nvml["device_total_bytes"], 1ull << 30);
  EXPECT_EQ(nvml["process_used_bytes"], 90 * MiB);
  EXPECT_EQ(s["devices"][0]["allocated_bytes"]["current"], 65 * MiB);  // tracked, next to NVML's view

  reader::TraceReader t;
  ASSERT_TRUE(t.open(run + "/trace.gmpt"));
  Event e;
  uint64_t samples = 0;
  while (t.next(e)) samples += e.op == Op::Sample;
  EXPECT_EQ(samples, nvml["samples"].get<uint64_t>());
}

TEST(Telemetry, WithoutNvmlThereAreNoSamples) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:64M", "sleep:50"}, {{"GPUMEMPROF_SAMPLE_MS", "10"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto s = read_json_file(box.only_run_dir() + "/summary.json");
  EXPECT_FALSE(s["devices"][0].contains("nvml"));
}

}  // namespace
}  // namespace gmp::test
