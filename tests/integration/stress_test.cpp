// Eight threads racing on reused addresses: exact counts, nothing lost, no address live twice.
#include <gtest/gtest.h>

#include "harness.h"

namespace gmp::test {
namespace {

void run_stress(const std::map<std::string, std::string>& env) {
  Sandbox box;
  // 8 threads x 50,000 iterations: 400,000 linear + 100,000 pool pairs = 1,000,000 events.
  RunResult r = box.run({Paths::bin("prog_stress"), "8", "50000"}, env, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto expected = nlohmann::json::parse(r.out);
  const auto s = read_json_file(box.only_run_dir() + "/summary.json");
  const auto& d = s["devices"][0];
  EXPECT_EQ(d["alloc_count"], expected["alloc_count"]);
  EXPECT_EQ(d["free_count"], expected["free_count"]);
  EXPECT_EQ(d["by_kind"]["linear"]["allocs"], expected["linear_allocs"]);
  EXPECT_EQ(d["by_kind"]["pool"]["allocs"], expected["pool_allocs"]);
  EXPECT_EQ(d["allocated_bytes"]["current"], 0);
  // At most one allocation per thread is live at any moment; the largest size is 1 MiB.
  EXPECT_LE(d["allocated_bytes"]["peak"].get<uint64_t>(), 8ull << 20);
  EXPECT_EQ(s["unknown_frees"], 0);  // a free recorded after a racing alloc would show here
  EXPECT_EQ(s["live_at_exit"]["count"], 0);
  EXPECT_EQ(s["events"]["lost"], 0);
  const uint64_t alloc_free = expected["alloc_free_events"];
  EXPECT_GE(alloc_free, 1'000'000u);
  const uint64_t recorded = s["events"]["recorded"];
  EXPECT_GE(recorded, alloc_free + 1);  // + device info + pool reserved changes at syncs
  EXPECT_LE(recorded, alloc_free + 16);
  EXPECT_EQ(s["trace_events_written"], s["events"]["recorded"]);
}

TEST(Stress, EightThreadsMillionEventsExact) { run_stress({}); }

// A 1024-event ring is full almost at once: producers wait (tests/unit/ring_test.cpp proves the
// wait itself deterministically), and still every event arrives.
TEST(Stress, TinyRingLosesNothing) { run_stress({{"GPUMEMPROF_RING_EVENTS", "1024"}}); }

}  // namespace
}  // namespace gmp::test
