// summary.json's schema (format/summary.h): what to_json writes for a typed summary, that
// summary_from_json reads every field back exactly, and that reading never throws on wrong types.
#include "summary.h"

#include <gtest/gtest.h>

#include "json_text.h"

namespace gmp {
namespace {

using json = nlohmann::json;

DeviceFigures device(int ordinal, const std::string& name, uint64_t base) {
  DeviceFigures f;
  DeviceStats& s = f.stats;
  s.device = ordinal;
  f.name = name;
  s.total_bytes = base + 1;
  s.allocated = {base + 2, base + 3};
  s.reserved = {base + 4, base + 5};
  s.allocated_peak_ns = base + 6;
  s.reserved_peak_ns = base + 7;
  for (size_t k = 0; k < s.by_kind.size(); ++k) s.by_kind[k] = {{base + 10 * k, base + 10 * k + 1}, k + 2, k + 1};
  s.pool_reserved = {base + 8, base + 9};
  s.vmm_physical = {base + 11, base + 12};
  s.alloc_count = 13;
  s.free_count = 14;
  s.failed_alloc_count = 15;
  s.released_by_pool_destroy = 16;
  return f;
}

// Every field set, and to a value of its own.
Summary full() {
  Summary s;
  s.clean_exit = false;
  s.ended_by = "signal";
  s.terminated_by_signal = 15;
  s.devices = {device(0, "Dev 0", 1000), device(1, "Dev 1", 2000)};
  s.devices[1].stats.nvml = {3, 900, 1024, 400, 500, true};
  s.devices[1].nvml_listed = true;
  s.unattributed = device(-1, "", 3000);
  s.host_pinned_bytes = {17, 18};
  s.host_pinned_allocs = 19;
  s.host_pinned_frees = 20;
  s.events.recorded = 21;
  s.events.lost = 22;
  s.events.producer_waits = 23;
  s.events.unwritten = 24;
  s.events.trace_error = "write trace.gmpt: No space left on device";
  s.trace_events_written = 25;
  s.unknown_frees = 26;
  s.failed_releases = 27;
  s.live_at_exit_count = 28;
  s.live_at_exit_bytes = 29;
  s.duration_ns = 30;
  s.failed_allocations = {{"cuMemAlloc", "linear", 0, 31, 2, 32, 33},
                          {"cudaMallocHost", "host_pinned", -1, 34, 2, 35, 36}};
  s.alerts = {37, 38, 39, 40};
  s.oom = {41, 42, 43};
  return s;
}

TEST(SummarySchema, WritesEveryKey) {
  const json j = to_json(full());
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["clean_exit"], false);
  EXPECT_EQ(j["ended_by"], "signal");
  EXPECT_EQ(j["terminated_by_signal"], 15);
  EXPECT_EQ(j["devices"].size(), 2u);
  EXPECT_EQ(j["devices"][1]["name"], "Dev 1");
  EXPECT_EQ(j["devices"][1]["allocated_peak_at_ns"], 2006);  // as held: since the profiler started
  EXPECT_EQ(j["devices"][1]["nvml"]["process_used_bytes"], 400);
  EXPECT_FALSE(j["devices"][0].contains("nvml"));
  EXPECT_EQ(j["unattributed"]["device"], -1);
  EXPECT_EQ(j["host_pinned_bytes"], json({{"current", 17}, {"peak", 18}}));
  EXPECT_EQ(j["host_pinned"], json({{"allocs", 19}, {"frees", 20}}));
  EXPECT_EQ(j["events"], json({{"recorded", 21},
                               {"lost", 22},
                               {"producer_waits", 23},
                               {"unwritten", 24},
                               {"trace_error", "write trace.gmpt: No space left on device"}}));
  EXPECT_EQ(j["trace_events_written"], 25);
  EXPECT_EQ(j["unknown_frees"], 26);
  EXPECT_EQ(j["failed_releases"], 27);
  EXPECT_EQ(j["live_at_exit"], json({{"count", 28}, {"bytes", 29}}));
  EXPECT_EQ(j["duration_ns"], 30);
  EXPECT_EQ(j["failed_allocations"][1], json({{"api", "cudaMallocHost"},
                                              {"kind", "host_pinned"},
                                              {"device", -1},
                                              {"size", 34},
                                              {"error", 2},
                                              {"thread", 35},
                                              {"at_ns", 36}}));
  EXPECT_EQ(j["alerts"], json({{"warning", 37}, {"critical", 38}, {"fragmentation", 39}, {"growth", 40}}));
  EXPECT_EQ(j["oom"], json({{"failures", 41}, {"bundles_written", 42}, {"recovered", 43}}));
  EXPECT_EQ(j.size(), 17u);
}

TEST(SummarySchema, ReadsBackEveryField) {
  const Summary s = summary_from_json(to_json(full()));
  EXPECT_FALSE(s.clean_exit);
  EXPECT_EQ(s.ended_by, "signal");
  EXPECT_EQ(s.terminated_by_signal, 15u);
  EXPECT_TRUE(s.devices_listed);
  ASSERT_EQ(s.devices.size(), 2u);
  const DeviceStats& d = s.devices[1].stats;
  EXPECT_EQ(d.device, 1);
  EXPECT_EQ(s.devices[1].name, "Dev 1");
  EXPECT_EQ(d.total_bytes, 2001u);
  EXPECT_EQ(d.allocated.current, 2002u);
  EXPECT_EQ(d.reserved.peak, 2005u);
  EXPECT_EQ(d.allocated_peak_ns, 2006u);
  EXPECT_EQ(d.reserved_peak_ns, 2007u);
  EXPECT_EQ(d.kind(Kind::Pool).bytes.peak, 2021u);
  EXPECT_EQ(d.kind(Kind::Managed).allocs, 7u);
  EXPECT_EQ(d.pool_reserved.peak, 2009u);
  EXPECT_EQ(d.vmm_physical.current, 2011u);
  EXPECT_EQ(d.released_by_pool_destroy, 16u);
  EXPECT_EQ(d.failed_alloc_count, 15u);
  EXPECT_TRUE(s.devices[1].nvml_listed);
  EXPECT_EQ(d.nvml.device_used, 900u);
  EXPECT_TRUE(d.nvml.process_known);
  EXPECT_EQ(d.nvml.process_used_peak, 500u);
  EXPECT_FALSE(s.devices[1].nvml_processes.has_value());
  ASSERT_TRUE(s.unattributed.has_value());
  EXPECT_EQ(s.unattributed->stats.allocated.peak, 3003u);
  EXPECT_EQ(s.host_pinned_bytes.peak, 18u);
  EXPECT_EQ(s.host_pinned_frees, 20u);
  EXPECT_EQ(s.events.recorded, 21u);
  EXPECT_EQ(s.events.lost, 22u);
  EXPECT_EQ(s.events.producer_waits, 23u);
  EXPECT_EQ(s.events.unwritten, 24u);
  EXPECT_EQ(s.events.trace_error, "write trace.gmpt: No space left on device");
  EXPECT_EQ(s.trace_events_written, 25u);
  EXPECT_EQ(s.live_at_exit_bytes, 29u);
  EXPECT_EQ(s.duration_ns, 30u);
  ASSERT_EQ(s.failed_allocations.size(), 2u);
  EXPECT_EQ(s.failed_allocations[1].api, "cudaMallocHost");
  EXPECT_EQ(s.failed_allocations[1].device, -1);
  EXPECT_EQ(s.failed_allocations[1].error, 2);
  EXPECT_EQ(s.failed_allocations[1].at_ns, 36u);
  EXPECT_EQ(s.alerts.fired(), 37u + 38 + 39 + 40);
  EXPECT_EQ(s.oom.recovered, 43u);
  // And written again, the same text.
  EXPECT_EQ(json_text(to_json(s), 2), json_text(to_json(full()), 2));
}

// A summary rebuilt without summary.json: what only the collector knew is written as unknown.
TEST(SummarySchema, UnknownCountsAreNull) {
  Summary s;
  s.events.recorded = 5;
  s.events.counts_known = false;
  EXPECT_EQ(json_text(to_json(s)["events"]), R"({"lost":null,"producer_waits":null,"recorded":5,"unwritten":null})");
  s.events.counts_known = true;  // rebuilt with a summary.json that had no devices: no unwritten
  EXPECT_EQ(json_text(to_json(s)["events"]), R"({"lost":0,"producer_waits":0,"recorded":5})");
  const json j = to_json(s);
  EXPECT_FALSE(j.contains("terminated_by_signal") || j.contains("unattributed") || j.contains("trace_events_written") ||
               j.contains("exit_status"));
}

// The exit status is written when known and read back only as a status a parent can see (0-255).
TEST(SummarySchema, ExitStatusRoundTripsAndOnlyAStatusIsRead) {
  Summary s;
  s.exit_status = 3;
  EXPECT_EQ(to_json(s)["exit_status"], 3);
  EXPECT_EQ(summary_from_json(to_json(s)).exit_status, 3);
  for (const char* bad : {R"({"exit_status": 256})", R"({"exit_status": -1})", R"({"exit_status": "3"})"}) {
    EXPECT_FALSE(summary_from_json(json::parse(bad)).exit_status.has_value()) << bad;
  }
}

TEST(SummarySchema, WrongTypesReadAsDefaults) {
  const json j = json::parse(R"({"clean_exit": "no", "ended_by": 3, "terminated_by_signal": -9, "devices": {},
      "unattributed": [], "host_pinned_bytes": {"peak": "1"}, "events": {"recorded": -1, "unwritten": "x",
      "trace_error": 5}, "trace_events_written": null, "failed_allocations": [7, {"device": 99999, "error": "2"}],
      "alerts": {"warning": 1.5, "growth": 2}, "oom": []})");
  const Summary s = summary_from_json(j);
  EXPECT_TRUE(s.clean_exit);
  EXPECT_EQ(s.ended_by, "");
  EXPECT_EQ(s.terminated_by_signal, 0u);
  EXPECT_FALSE(s.devices_listed);
  EXPECT_FALSE(s.unattributed.has_value());
  EXPECT_EQ(s.host_pinned_bytes.peak, 0u);
  EXPECT_EQ(s.events.recorded, 0u);
  EXPECT_FALSE(s.events.unwritten.has_value());
  EXPECT_FALSE(s.events.trace_error.has_value());
  EXPECT_FALSE(s.trace_events_written.has_value());
  ASSERT_EQ(s.failed_allocations.size(), 2u);  // every element counts
  EXPECT_EQ(s.failed_allocations[0].device, -1);
  EXPECT_EQ(s.failed_allocations[1].device, -1);
  EXPECT_EQ(s.failed_allocations[1].error, 0);
  EXPECT_EQ(s.alerts.fired(), 2u);
  EXPECT_EQ(s.oom.failures, 0u);
  for (const json& odd : {json(nullptr), json(5), json::array(), json("summary")}) {
    EXPECT_FALSE(summary_from_json(odd).devices_listed) << odd;
  }
}

}  // namespace
}  // namespace gmp
