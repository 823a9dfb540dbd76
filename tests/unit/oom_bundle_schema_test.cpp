// The OOM bundle's files (format/oom_bundle_schema.h): what to_json writes, that from_json reads
// every field back exactly, and the reader (tools/reader/oom_bundle_reader.h) on malformed input:
// never an exception, one-line errors and notes.
#include "oom_bundle_schema.h"

#include <gtest/gtest.h>

#include "json_text.h"
#include "oom_bundle_reader.h"

namespace gmp {
namespace {

using json = nlohmann::json;
constexpr uint64_t MiB = 1 << 20;

OomAllocation allocation(uint64_t base) {
  return {base, base + 1, "pool", "cuMemAllocAsync", 1, base + 2, base + 3, base + 4};
}

OomMetadata metadata() {
  OomMetadata m;
  m.reason = "CUDA_ERROR_OUT_OF_MEMORY: cuMemAllocAsync of 512 MiB (536870912 bytes) on device 1";
  m.request = {"cuMemAllocAsync", "pool", "CUDA_ERROR_OUT_OF_MEMORY", 512 * MiB, 1, 7, 42, 2, 1000};
  DeviceFigures d;
  d.stats.device = 1;
  d.name = "Dev 1";
  d.stats.total_bytes = 1024 * MiB;
  d.stats.allocated = {300, 400};
  d.stats.reserved = {600, 700};
  d.stats.allocated_peak_ns = 11;
  d.stats.kind(Kind::Pool) = {{300, 400}, 2, 1};
  d.stats.pool_reserved = {600, 700};
  d.stats.nvml = {3, 900, 1024, 650, 660, true};
  d.nvml_listed = true;
  m.devices = {d};
  m.host_pinned_bytes = {4096, 8192};
  m.driver_memory = OomDriverMemory{1, 404 * MiB, 1024 * MiB};
  m.live_count = 3;
  m.live_bytes = 300;
  m.largest_live = {allocation(100), allocation(200)};
  m.recovered = true;
  m.recovered_by = OomRecoveredBy{{{"t_ns", 2000}, {"op", "alloc"}, {"api", "cuMemAllocAsync"}, {"size", 256 * MiB}}};
  m.failures = 2;
  m.episode = 3;
  return m;
}

TEST(OomBundleSchema, BundleNamesAndTheirSequence) {
  const std::string name = oom_bundle_name("20260101T000003Z", 9302, 3);
  EXPECT_EQ(name, "oom_dump_20260101T000003Z_9302_cuda_3");
  EXPECT_EQ(oom_bundle_sequence(name), 3u);
  EXPECT_EQ(oom_bundle_sequence("oom_dump_20260101T000003Z_9302_cuda_"), 0u);
  EXPECT_EQ(oom_bundle_sequence("oom_dump_x_cuda_1234567890123456789"), 0u);  // 19 digits: not a sequence
  EXPECT_EQ(oom_bundle_sequence(""), 0u);
}

TEST(OomBundleSchema, AllocationRoundTrip) {
  const OomAllocation a = allocation(100);
  const json j = to_json(a);
  EXPECT_EQ(json_text(j), R"({"address":100,"age_ms":103,"api":"cuMemAllocAsync","device":1,"kind":"pool",)"
                          R"("size":101,"stack_id":104,"thread":102})");
  const OomAllocation b = oom_allocation_from_json(j);
  EXPECT_EQ(b.address, 100u);
  EXPECT_EQ(b.size, 101u);
  EXPECT_EQ(b.kind, "pool");
  EXPECT_EQ(b.api, "cuMemAllocAsync");
  EXPECT_EQ(b.device, 1);
  EXPECT_EQ(b.thread, 102u);
  EXPECT_EQ(b.age_ms, 103u);
  EXPECT_EQ(b.stack_id, 104u);
}

TEST(OomBundleSchema, AllocationFromTheAccounting) {
  LiveAllocation live;
  live.address = 0x1000;
  live.size = 4096;
  live.timestamp_ns = 1'000'000'000;
  live.thread_id = 9;
  live.stack_id = 5;
  live.device = 0;
  live.kind = Kind::Linear;
  live.api = Api::cuMemAlloc_v2;
  const OomAllocation a = oom_allocation(live, 3'500'000'000);
  EXPECT_EQ(json_text(to_json(a)), R"({"address":4096,"age_ms":2500,"api":")" +
                                       std::string(api_name(Api::cuMemAlloc_v2)) +
                                       R"(","device":0,"kind":"linear","size":4096,"stack_id":5,"thread":9})");
  EXPECT_EQ(oom_allocation(live, 0).age_ms, 0u);  // a clock that went back reads as no age
}

TEST(OomBundleSchema, MetadataRoundTrip) {
  const json j = to_json(metadata());
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["request"], json({{"api", "cuMemAllocAsync"},
                                {"kind", "pool"},
                                {"size", 512 * MiB},
                                {"device", 1},
                                {"stream", 7},
                                {"thread", 42},
                                {"error", 2},
                                {"error_name", "CUDA_ERROR_OUT_OF_MEMORY"},
                                {"t_ns", 1000}}));
  EXPECT_EQ(j["driver_memory"], json({{"device", 1}, {"free", 404 * MiB}, {"total", 1024 * MiB}}));
  EXPECT_EQ(j["host_pinned_bytes"], json({{"current", 4096}, {"peak", 8192}}));
  EXPECT_EQ(j["devices"][0]["allocated_peak_at_ns"], 11);
  EXPECT_EQ(j["largest_live"].size(), 2u);
  EXPECT_EQ(j["recovered_by"]["op"], "alloc");
  EXPECT_EQ(j.size(), 13u);

  std::string problem;
  size_t skipped = 99;
  const auto m = oom_metadata_from_json(j, problem, skipped);
  ASSERT_TRUE(m.has_value()) << problem;
  EXPECT_EQ(skipped, 0u);
  EXPECT_EQ(m->reason, metadata().reason);
  EXPECT_EQ(m->request.api, "cuMemAllocAsync");
  EXPECT_EQ(m->request.kind, "pool");
  EXPECT_EQ(m->request.error_name, "CUDA_ERROR_OUT_OF_MEMORY");
  EXPECT_EQ(m->request.size, 512 * MiB);
  EXPECT_EQ(m->request.device, 1);
  EXPECT_EQ(m->request.stream, 7u);
  EXPECT_EQ(m->request.thread, 42u);
  EXPECT_EQ(m->request.error, 2);
  EXPECT_EQ(m->request.t_ns, 1000u);
  ASSERT_EQ(m->devices.size(), 1u);
  EXPECT_EQ(m->devices[0].name, "Dev 1");
  EXPECT_EQ(m->devices[0].stats.kind(Kind::Pool).bytes.current, 300u);
  EXPECT_EQ(m->devices[0].stats.pool_reserved.current, 600u);
  EXPECT_EQ(m->devices[0].stats.nvml.process_used, 650u);
  EXPECT_EQ(m->host_pinned_bytes.peak, 8192u);
  ASSERT_TRUE(m->driver_memory.has_value());
  EXPECT_EQ(m->driver_memory->device, 1);
  EXPECT_EQ(m->driver_memory->free, 404 * MiB);
  EXPECT_EQ(m->driver_memory->total, 1024 * MiB);
  EXPECT_EQ(m->live_count, 3u);
  EXPECT_EQ(m->live_bytes, 300u);
  ASSERT_EQ(m->largest_live.size(), 2u);
  EXPECT_EQ(m->largest_live[1].address, 200u);
  EXPECT_TRUE(m->recovered);
  ASSERT_TRUE(m->recovered_by.has_value());
  EXPECT_EQ(m->recovered_by->api(), "cuMemAllocAsync");
  EXPECT_EQ(m->recovered_by->size(), 256 * MiB);
  EXPECT_EQ(m->recovered_by->t_ns(), 2000u);
  EXPECT_EQ(m->failures, 2u);
  EXPECT_EQ(m->episode, 3u);
  EXPECT_EQ(json_text(to_json(*m), 2), json_text(j, 2));  // written again, the same text
}

// A bundle written at the failure: no driver figures yet, not recovered.
TEST(OomBundleSchema, MetadataOfAnOpenEpisode) {
  OomMetadata m = metadata();
  m.driver_memory.reset();
  m.recovered = false;
  m.recovered_by.reset();
  const json j = to_json(m);
  EXPECT_TRUE(j["driver_memory"].is_null());
  EXPECT_FALSE(j.contains("recovered_by"));
  std::string problem;
  size_t skipped = 0;
  const auto back = oom_metadata_from_json(j, problem, skipped);
  ASSERT_TRUE(back.has_value());
  EXPECT_FALSE(back->driver_memory.has_value());
  EXPECT_FALSE(back->recovered_by.has_value());
}

TEST(OomBundleSchema, ManifestRoundTrip) {
  OomBundleManifest m{"oom_dump_20260101T000000Z_42_cuda_1",
                      "2026-01-01T00:00:00.000Z",
                      "r",
                      "cuda",
                      3,
                      {"manifest.json", "metadata.json"},
                      42};
  const json j = to_json(m);
  EXPECT_EQ(json_text(j), R"({"backend":"cuda","bundle_name":"oom_dump_20260101T000000Z_42_cuda_1",)"
                          R"("created_at_utc":"2026-01-01T00:00:00.000Z","event_count":3,)"
                          R"("files":["manifest.json","metadata.json"],"pid":42,"reason":"r","schema_version":1,)"
                          R"("tool":"gpumemprof"})");
  const OomBundleManifest back = oom_manifest_from_json(j);
  EXPECT_EQ(back.bundle_name, m.bundle_name);
  EXPECT_EQ(back.created_at_utc, m.created_at_utc);
  EXPECT_EQ(back.reason, "r");
  EXPECT_EQ(back.backend, "cuda");
  EXPECT_EQ(back.event_count, 3u);
  EXPECT_EQ(back.files, m.files);
  EXPECT_EQ(back.pid, 42u);
  EXPECT_TRUE(is_oom_manifest(j));
  EXPECT_TRUE(is_oom_manifest(json::parse(R"({"bundle_name": null})")));
  EXPECT_FALSE(is_oom_manifest(json::parse(R"({"pid": 1, "exe": "/bin/x"})")));  // a run's manifest
}

TEST(OomBundleSchema, EnvironmentRoundTrip) {
  const json process = {{"pid", 42}, {"exe", "/bin/x"}, {"host", "h"}, {"argv", {"x", "--y"}}};
  const json j = oom_environment_json(process, json::array(), {{"A", "b"}});
  EXPECT_EQ(json_text(j),
            R"({"argv":["x","--y"],"devices":[],"environment":{"A":"b"},"exe":"/bin/x","host":"h","pid":42})");
  const OomEnvironment e = oom_environment_from_json(j);
  EXPECT_EQ(e.exe, "/bin/x");
  EXPECT_EQ(e.host, "h");
  EXPECT_EQ(e.argv, (std::vector<std::string>{"x", "--y"}));
  EXPECT_EQ(e.pid, 42u);
}

// Malformed input never throws and gives one-line errors or notes (moved from the integration
// tests: it runs no program).
TEST(OomBundleReader, ToleratesWrongTypes) {
  std::string error;
  reader::OomBundleFiles files = {
      {"metadata.json",
       R"({"request": {"size": 1048576, "device": 99999, "t_ns": -5, "api": 7},
           "devices": [3, {"device": 0, "by_kind": []}, {"device": "0"}],
           "driver_memory": {"free": 1.5, "total": 2},
           "largest_live": [1, {"size": -1}, {"size": 4096, "kind": "linear", "device": -1}],
           "recovered": "yes", "failures": 1e300, "recovered_by": []})"},
      {"manifest.json", "[]"},
      {"allocations.json", "{}"},
  };
  auto b = reader::parse_oom_bundle("x", files, error);
  ASSERT_TRUE(b.has_value()) << error;
  const OomMetadata& m = b->metadata;
  EXPECT_EQ(m.request.size, 1 * MiB);
  EXPECT_EQ(m.request.device, -1);
  EXPECT_FALSE(m.request.t_ns.has_value());
  EXPECT_TRUE(m.request.api.empty());
  ASSERT_EQ(m.devices.size(), 2u);
  EXPECT_EQ(m.devices[0].stats.device, 0);
  EXPECT_EQ(m.devices[1].stats.device, -1);
  EXPECT_FALSE(m.driver_memory.has_value());
  ASSERT_EQ(m.largest_live.size(), 2u);
  EXPECT_EQ(m.largest_live[0].size, 0u);
  EXPECT_EQ(m.largest_live[1].size, 4096u);
  EXPECT_FALSE(m.recovered);
  EXPECT_FALSE(m.recovered_by.has_value());
  EXPECT_EQ(m.failures, 1u);
  EXPECT_FALSE(b->manifest.has_value());
  EXPECT_FALSE(b->allocations.has_value());
  EXPECT_FALSE(b->environment.has_value());
  EXPECT_FALSE(b->pid.has_value());
  EXPECT_EQ(b->name, "x");
  EXPECT_EQ(b->notes,
            (std::vector<std::string>{"manifest.json is not a JSON object; ignored",
                                      "metadata.json: 1 entries of largest_live are not objects",
                                      "allocations.json is not a JSON array; ignored", "environment.json is missing"}));

  for (const std::string bad : {"", "{", "null", "[]", "{\"request\": 5}", "{\"request\": {}}", "\xff\xfe"}) {
    error.clear();
    EXPECT_FALSE(reader::parse_oom_bundle("b", {{"metadata.json", bad}}, error).has_value()) << bad;
    EXPECT_TRUE(!error.empty() && error.find('\n') == std::string::npos) << error;
  }
  error.clear();
  EXPECT_FALSE(reader::parse_oom_bundle("b", {{"metadata.json", "{\"request\": {}}"}}, error).has_value());
  EXPECT_EQ(error,
            "b/metadata.json has no request size (\"request\": {\"size\": N}); expected the metadata of an OOM "
            "bundle written by libgpumemprof (schema_version 1)");
  error.clear();
  EXPECT_FALSE(reader::parse_oom_bundle("b", {}, error).has_value());
  EXPECT_EQ(error,
            "b/metadata.json is missing; expected an OOM bundle directory written by libgpumemprof "
            "(manifest.json, metadata.json, allocations.json, ...)");
}

}  // namespace
}  // namespace gmp
