// GPUMEMPROF_DEVICE_LIMIT (docs/device-limit.md): a process rehearsing a smaller GPU. The fake
// device has 1 GiB; the limit is 64 MiB; the fake NVML says the process holds 8 MiB beyond what the
// fake driver charges (its context), so 56 MiB are left for allocations. Every kind of device
// memory is tried just under, exactly at and just over the limit (prog_limit prints each call's
// CUresult: 0 success, 2 out of memory), and every memory query must show the 64 MiB device.
#include <dirent.h>

#include <gtest/gtest.h>

#include "harness.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20;

std::map<std::string, std::string> limited(const std::string& limit, std::map<std::string, std::string> extra = {}) {
  extra.emplace("LD_LIBRARY_PATH", Paths::fake_dir() + ":" + GMP_FAKE_NVML_DIR);
  extra.emplace("FAKE_CUDA_CAPACITY", "1G");
  extra.emplace("FAKE_NVML_CONTEXT", std::to_string(8 * MiB));
  extra.emplace("GPUMEMPROF_DEVICE_LIMIT", limit);
  return extra;
}

std::string only_bundle(const std::string& run) {
  std::vector<std::string> out;
  if (DIR* d = opendir((run + "/oom").c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind("oom_dump_", 0) == 0) out.push_back(run + "/oom/" + e->d_name);
    }
    closedir(d);
  }
  EXPECT_EQ(out.size(), 1u);
  return out.empty() ? "" : out[0];
}

// `gpumemprof ARGS` succeeds and prints `text` somewhere in its output.
void expect_tool_says(const std::vector<std::string>& args, const std::string& text) {
  RunResult r = run_tool(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(flat(r.out).find(flat(text)), std::string::npos) << r.out;
}

TEST(DeviceLimit, EveryKindJustUnderExactlyAtAndJustOver) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_limit"),
                         // queries: 64 MiB in all, 56 MiB free (8 MiB of context)
                         "meminfo", "meminfo_v1", "totalmem", "totalmem_v1", "nvml", "nvml_v2",
                         // linear
                         "alloc:55M", "alloc:1M", "alloc:1", "free", "free",
                         // pitched: 1024 bytes x H rows
                         "pitch:57343", "free", "pitch:57344", "pitch:57345", "free",
                         // arrays: 1024 x H bytes, rounded to 64 KiB
                         "array:57280", "array_free", "array:57344", "array:57345", "array_free",
                         // the default pool grows by 2 MiB; past the limit the growth is undone
                         "async:54M", "async:2M", "async:1", "async_free", "async_free", "sync", "meminfo",
                         // a pool of its own
                         "pool:56M", "pool:1", "async_free", "sync",
                         // VMM: physical memory counts until released and unmapped
                         "vmm:54M", "vmm:2M", "vmm:2M", "vmm_map:2M", "vmm_release", "vmm:2M", "vmm_unmap",
                         "vmm:2M", "meminfo",
                         // managed memory is not device memory the limit counts
                         "managed:1G"},
                        limited("64M"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "meminfo 0 free 58720256 total 67108864\n"
            "meminfo_v1 0 free 58720256 total 67108864\n"
            "totalmem 0 total 67108864\n"
            "totalmem_v1 0 total 67108864\n"
            "nvml 0 total 67108864 free 58720256 used 8388608\n"
            "nvml_v2 0 total 67108864 reserved 0 free 58720256 used 8388608\n"
            "alloc:55M 0\nalloc:1M 0\nalloc:1 2\nfree 0\nfree 0\n"
            "pitch:57343 0\nfree 0\npitch:57344 0\npitch:57345 2\nfree 0\n"
            "array:57280 0\narray_free 0\narray:57344 0\narray:57345 2\narray_free 0\n"
            "async:54M 0\nasync:2M 0\nasync:1 2\nasync_free 0\nasync_free 0\nsync 0\n"
            "meminfo 0 free 58720256 total 67108864\n"
            "pool:56M 0\npool:1 2\nasync_free 0\nsync 0\n"
            "vmm:54M 0\nvmm:2M 0\nvmm:2M 2\nvmm_map:2M 0\nvmm_release 0\nvmm:2M 2\nvmm_unmap 0\n"
            "vmm:2M 0\nmeminfo 0 free 0 total 67108864\n"
            "managed:1G 0\n");
}

// Many threads allocating from the default pool at once: every growth is decided alone, so the pool
// ends where the limit leaves it (56 MiB: 28 blocks of 2 MiB), nothing that fits is refused, and the
// pool passes it at most by the one growth being undone (its high watermark 58 MiB).
TEST(DeviceLimit, HoldsExactlyForConcurrentStreamOrderedAllocations) {
  Sandbox box;
  for (const char* race : {"race:16:2M", "race:64:2M"}) {
    RunResult r = box.run({Paths::bin("prog_limit"), race, "meminfo"}, limited("64M"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, std::string(race) + " 0 allocated 28 pool_high " + std::to_string(58 * MiB) +
                         "\nmeminfo 0 free 58720256 total 67108864\n");
  }
}

// Modules load lazily, so the context grows after it was first measured: near the limit it is read
// again, and an allocation that only fitted the stale figure is refused.
TEST(DeviceLimit, AContextThatGrewIsCountedNearTheLimit) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_limit"), "alloc:40M", "context:16M", "alloc:10M", "alloc:8M"},
                        limited("64M"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "alloc:40M 0\ncontext:16M 0\nalloc:10M 2\nalloc:8M 0\n");
}

TEST(DeviceLimit, PerDeviceLimitsOnTwoDevices) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_limit"), "totalmem", "device:1", "totalmem", "meminfo", "alloc:24M",
                         "alloc:1", "meminfo", "device:0", "alloc:56M", "alloc:1", "nvml"},
                        limited("0:64M,1:32M", {{"FAKE_CUDA_DEVICES", "2"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "totalmem 0 total 67108864\n"
            "device:1 0\n"
            "totalmem 0 total 33554432\n"
            "meminfo 0 free 25165824 total 33554432\n"
            "alloc:24M 0\nalloc:1 2\n"
            "meminfo 0 free 0 total 33554432\n"
            "device:0 0\n"
            "alloc:56M 0\nalloc:1 2\n"
            "nvml 0 total 67108864 free 0 used 67108864\n");
}

// A malformed value or an unknown name: one line, and the program runs on the whole device.
TEST(DeviceLimit, BadValuesAreOneLineAndIgnored) {
  for (const std::string bad : {"V100", "0:1G,0:2G", "24 GiB", "0:L4,x", "0"}) {
    Sandbox box;
    RunResult r = box.run({Paths::bin("prog_limit"), "alloc:500M", "meminfo"}, limited(bad));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "alloc:500M 0\nmeminfo 0 free 549453824 total 1073741824\n") << bad;
    EXPECT_EQ(r.err, "gpumemprof: invalid GPUMEMPROF_DEVICE_LIMIT='" + bad +
                         "': expected a size (24GiB), a GPU name (L4, A10, A100-40GB, A100-80GB, H100-80GB, "
                         "H200, RTX-4090) or per device (0:24GiB,1:L4); using the default none (the device's own size)\n");
  }
}

TEST(DeviceLimit, ALimitLargerThanTheDeviceIsOneLineAndIgnored) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_limit"), "alloc:500M", "meminfo", "totalmem"}, limited("A100-80GB"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "alloc:500M 0\nmeminfo 0 free 549453824 total 1073741824\ntotalmem 0 total 1073741824\n");
  EXPECT_EQ(r.err, "gpumemprof: GPUMEMPROF_DEVICE_LIMIT: 79.15 GiB is more than device 0 has (1.00 GiB); device 0 "
                   "runs without a limit\n");
}

// The bundle, `gpumemprof oom` and `report` say the failure came from the limit, with the real
// device's free memory and the excess; `report` says whether the run fits.
TEST(DeviceLimit, TheOomBundleAndTheReportExplainIt) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_limit"), "alloc:40M", "alloc:24M"}, limited("64M"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "alloc:40M 0\nalloc:24M 2\n");
  const std::string run = box.only_run_dir();
  const std::string bundle = only_bundle(run);
  const auto m = read_json_file(bundle + "/metadata.json");
  EXPECT_EQ(m["reason"], "CUDA_ERROR_OUT_OF_MEMORY: cuMemAlloc_v2 of 24.00 MiB (25165824 bytes) on device 0 (the "
                         "GPUMEMPROF_DEVICE_LIMIT rehearsal limit of 64.00 MiB)");
  EXPECT_EQ(m["device_limit"].dump(), R"({"context":8388608,"device":0,"excess":8388608,"held":50331648,)"
                                      R"("limit":67108864,"requested":25165824})");
  EXPECT_EQ(m["driver_memory"]["free"], 1024 * MiB - 40 * MiB);

  expect_tool_says({"oom", bundle},
                   "\nThe device\n"
                   "  rehearsal limit (GPUMEMPROF_DEVICE_LIMIT): the device is limited to 64.00 MiB; the process held "
                   "48.00 MiB of it (8.00 MiB context and modules, per NVML) and the call needed 24.00 MiB more: "
                   "8.00 MiB over the limit\n"
                   "  the real device had 984.00 MiB free, enough for the call: the limit made it fail\n");
  RunResult oom_json = run_tool({"oom", bundle, "--json"});
  ASSERT_EQ(oom_json.exit_code, 0) << oom_json.err;
  EXPECT_EQ(nlohmann::json::parse(oom_json.out)["bundles"][0]["device_limit"].dump(),
            R"({"context_bytes":8388608,"excess_bytes":8388608,"held_bytes":50331648,"limit_bytes":67108864,)"
            R"("requested_bytes":25165824})");

  expect_tool_says({"report", run},
                   "  device limit (GPUMEMPROF_DEVICE_LIMIT): does not fit, peak 48.00 MiB against limit 64.00 MiB, "
                   "headroom 16.00 MiB\n"
                   "    the peak counts reserved memory and 8.00 MiB of context and modules (NVML's figure for the "
                   "process)\n"
                   "    1 allocation refused by the limit, the first 8.00 MiB over it\n");
}

TEST(DeviceLimit, TheReportSaysARunFits) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_limit"), "alloc:40M", "free", "alloc:50M"},
                        limited("L4", {{"FAKE_CUDA_CAPACITY", "32G"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_tool_says({"report", box.only_run_dir()},
                   "  device limit (GPUMEMPROF_DEVICE_LIMIT): fits, peak 58.00 MiB against limit 22.05 GiB, "
                   "headroom 21.99 GiB\n"
                   "    the peak counts reserved memory and 8.00 MiB of context and modules (NVML's figure for the "
                   "process)\n"
                   "  allocations 2");
}

// `run --device-limit` sets the variable for the command; `check --max-peak` takes a GPU name.
TEST(DeviceLimit, RunSetsItAndCheckTakesAGpuName) {
  Sandbox box;
  const std::string root = box.dir() + "/runs";
  RunResult r = box.run(run_args(root, {Paths::bin("prog_limit"), "alloc:60M", "alloc:1"}, {"--device-limit", "64M"}),
                        tool_env(limited("<unset>")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("alloc:60M 2\nalloc:1 0\n"), std::string::npos) << r.out;
  expect_tool_says({"check", root, "--max-peak", "l4"}, "--max-peak 22.05 GiB");
  expect_tool_says({"run", "--help"},
                   "  --device-limit LIMIT     rehearse a smaller GPU: 24GiB, a GPU name (L4, A10, A100-40GB, "
                   "A100-80GB,\n                           H100-80GB, H200, RTX-4090) or per device 0:24GiB,1:L4 "
                   "(docs/device-limit.md)\n");
  RunResult bad = run_tool({"check", root, "--max-peak", "V100"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_EQ(bad.err, "gpumemprof check: --max-peak 'V100' is not a size or a GPU name; accepted: a byte count with "
                     "an optional unit K, M, G, KiB, MiB or GiB (e.g. 1M, 512KiB), or a GPU name: L4, A10, A100-40GB, "
                     "A100-80GB, H100-80GB, H200, RTX-4090\n");
}

}  // namespace
}  // namespace gmp::test
