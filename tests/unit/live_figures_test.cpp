// The query API's collector side (collector/live_figures.h) and the native watchdog
// (collector/watchdog.h) on hand-made event streams: exact figures, windows, records in order.
#include "live_figures.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "config.h"
#include "records.h"
#include "watchdog.h"

namespace gmp {
namespace {

constexpr uint64_t MiB = 1 << 20;

// Feeds events as the collector does (LiveFigures around the accounting) and ends passes.
class Feed {
 public:
  Feed() { live.restart(); }
  std::unique_ptr<LiveFigures> owned = std::make_unique<LiveFigures>();  // 2 MiB: not on the stack
  LiveFigures& live = *owned;
  Accounting acc;
  TensorCategories cats{TensorCategories::Use::Live, {}};
  Ring ring{1024};
  TickConverter ticks{false};  // CLOCK_MONOTONIC ticks are ns
  uint64_t t = now_ns() + 1'000'000'000;  // past any reset the test requests

  void apply(Event e) {
    e.timestamp_ns = ++t;
    live.before(e, acc, cats, ticks);
    acc.apply(e);
    cats.add(e);
    live.after(e, acc, cats);
  }
  void device(int d, uint64_t total) {
    Event e{};
    e.op = Op::DeviceInfo;
    e.device = static_cast<int16_t>(d);
    e.size = total;
    apply(e);
  }
  void alloc(uint64_t address, uint64_t size, int d = 0, Kind k = Kind::Linear, int16_t result = 0) {
    Event e{};
    e.op = Op::Alloc;
    e.kind = k;
    e.device = static_cast<int16_t>(d);
    e.address = address;
    e.size = size;
    e.result = result;
    apply(e);
  }
  void free(uint64_t address) {
    Event e{};
    e.op = Op::Free;
    e.kind = Kind::Linear;
    e.device = -1;  // releases do not say their device
    e.address = address;
    apply(e);
  }
  // PyTorch's side through the bridge (device 0): attached with one 64 MiB segment.
  void attach() {
    Event a{};
    FrameworkAttachRecord{true, framework_version(2, 11, 0)}.to_event(a);
    a.api = Api::torch_caching_allocator;
    a.device = -1;
    apply(a);
    alloc(0x10000000, 64 * MiB);
    framework(Op::SegmentAlloc, 0x10000000, 64 * MiB);
  }
  void framework(Op op, uint64_t address, uint64_t size = 0) {
    Event e{};
    if (op == Op::TensorAlloc) {
      FrameworkBlockRecord{address, size, 0, 0, false}.to_event(e, op);
    } else {
      e.op = op;
      e.address = address;
      e.size = size;
    }
    e.api = Api::torch_caching_allocator;
    apply(e);
  }
  void tensor_free(uint64_t address) {
    framework(Op::TensorFreeRequested, address);
    framework(Op::TensorFreeCompleted, address);
  }
  void label(uint64_t address, TensorCategory c) {
    Event e{};
    TensorLabelRecord{address, c, 0}.to_event(e);
    e.api = Api::torch_caching_allocator;
    apply(e);
  }
  void phase(TrainingPhase p) {
    Event e{};
    PhaseRecord{p, 1, 1}.to_event(e);
    e.api = Api::torch_caching_allocator;
    e.device = -1;
    apply(e);
  }
  void pass() { live.end_pass(live.begin_pass(ring), ring, acc, cats); }
  gpumemprof_device_stats_t stats(int d) {
    gpumemprof_device_stats_t s{};
    EXPECT_TRUE(live.read_device(d, s));
    return s;
  }
  std::vector<gpumemprof_record_t> recent(uint64_t after) {
    std::vector<gpumemprof_record_t> out(LiveFigures::kRecords + 10);
    out.resize(live.read_recent(after, out.data(), out.size()));
    return out;
  }
};

TEST(LiveFigures, NothingIsPublishedBeforeTheFirstPass) {
  Feed f;
  f.device(0, 1024 * MiB);
  f.alloc(0x1000, MiB);
  gpumemprof_device_stats_t s{};
  EXPECT_FALSE(f.live.read_device(0, s));
  EXPECT_TRUE(f.recent(0).empty());  // records are readable once a pass published their count
  f.pass();
  EXPECT_EQ(f.stats(0).allocated, MiB);
  EXPECT_EQ(f.recent(0).size(), 1u);
  EXPECT_FALSE(f.live.read_device(1, s));
}

TEST(LiveFigures, DeviceFiguresCountsAndRecordsAreExact) {
  Feed f;
  f.device(0, 1024 * MiB);
  f.device(1, 2048 * MiB);
  f.alloc(0x1000, 3 * MiB);
  f.alloc(0x9000000, 5 * MiB, 1);
  f.alloc(0x2000000, 8 * MiB);
  f.free(0x2000000);  // a spike between two passes
  f.alloc(0, 4096 * MiB, 0, Kind::Linear, kOutOfMemory);
  f.pass();
  const gpumemprof_device_stats_t s = f.stats(0);
  EXPECT_EQ(s.device, 0);
  EXPECT_EQ(s.total_bytes, 1024 * MiB);
  EXPECT_EQ(s.as_of_ns, f.t);
  EXPECT_EQ(s.allocated, 3 * MiB);
  EXPECT_EQ(s.allocated_peak, 11 * MiB);
  EXPECT_EQ(s.reserved, 3 * MiB);
  EXPECT_EQ(s.kind_allocated[1], 3 * MiB);
  EXPECT_EQ(s.kind_allocated_peak[1], 11 * MiB);
  EXPECT_EQ(s.alloc_count, 2u);
  EXPECT_EQ(s.free_count, 1u);
  EXPECT_EQ(s.failed_alloc_count, 1u);
  EXPECT_EQ(s.framework_attached, 0u);
  // No reset yet: the window is the whole run.
  EXPECT_EQ(s.window_allocated_peak, 11 * MiB);
  EXPECT_EQ(s.window_bytes_allocated, 11 * MiB);
  EXPECT_EQ(s.window_bytes_freed, 8 * MiB);
  EXPECT_EQ(s.window_alloc_count, 2u);
  EXPECT_EQ(s.window_free_count, 1u);
  EXPECT_EQ(f.stats(1).allocated, 5 * MiB);

  gpumemprof_counts_t c{};
  f.live.read_counts(c);
  EXPECT_EQ(c.events, 7u);
  EXPECT_EQ(c.records, 5u);
  EXPECT_EQ(c.devices, 2u);
  EXPECT_EQ(c.device_ordinals[0], 0);
  EXPECT_EQ(c.device_ordinals[1], 1);
  EXPECT_EQ(c.alloc_count, 3u);
  EXPECT_EQ(c.free_count, 1u);
  EXPECT_EQ(c.failed_alloc_count, 1u);

  const auto r = f.recent(0);
  ASSERT_EQ(r.size(), 5u);
  const uint64_t types[] = {GPUMEMPROF_ALLOCATION, GPUMEMPROF_ALLOCATION, GPUMEMPROF_ALLOCATION,
                            GPUMEMPROF_DEALLOCATION, GPUMEMPROF_OOM};
  const int64_t devices[] = {0, 1, 0, 0, 0};
  const int64_t changes[] = {3 * MiB, 5 * MiB, 8 * MiB, -8 * static_cast<int64_t>(MiB), 0};
  const uint64_t allocated[] = {3 * MiB, 5 * MiB, 11 * MiB, 3 * MiB, 3 * MiB};
  for (size_t i = 0; i < r.size(); ++i) {
    EXPECT_EQ(r[i].seq, i + 1);
    EXPECT_EQ(r[i].type, types[i]) << i;
    EXPECT_EQ(r[i].device, devices[i]) << i;
    EXPECT_EQ(r[i].change, changes[i]) << i;
    EXPECT_EQ(r[i].allocated, allocated[i]) << i;
    EXPECT_EQ(r[i].detail, 1u) << i;  // linear
  }
  EXPECT_EQ(r[3].address, 0x2000000u);
  EXPECT_EQ(r[4].size, 4096 * MiB);
  EXPECT_EQ(f.recent(3).size(), 2u);
  EXPECT_EQ(f.recent(3)[0].seq, 4u);
}

// A 10 MiB spike, then 2 MiB held, published; then a reset is requested.
void spike_then_reset(Feed& f) {
  f.device(0, 1024 * MiB);
  f.alloc(0x1000, 10 * MiB);
  f.free(0x1000);
  f.alloc(0x2000, 2 * MiB);
  f.pass();
  f.live.request_reset();
}

TEST(LiveFigures, AResetOpensAWindowAtTheFirstLaterEvent) {
  Feed f;
  spike_then_reset(f);
  EXPECT_EQ(f.live.reset_applied(), 0u);
  f.alloc(0x3000, 4 * MiB);
  f.free(0x3000);
  f.pass();
  const gpumemprof_device_stats_t s = f.stats(0);
  EXPECT_EQ(f.live.reset_applied(), f.live.reset_requested());
  EXPECT_EQ(s.allocated_peak, 10 * MiB);
  EXPECT_EQ(s.window_allocated_peak, 6 * MiB);
  EXPECT_EQ(s.window_bytes_allocated, 4 * MiB);
  EXPECT_EQ(s.window_bytes_freed, 4 * MiB);
  EXPECT_EQ(s.window_alloc_count, 1u);
  EXPECT_EQ(s.window_free_count, 1u);
  // The window the reset ended: the run up to it, and the levels at it.
  EXPECT_EQ(s.reset_allocated, 2 * MiB);
  EXPECT_EQ(s.reset_reserved, 2 * MiB);
  EXPECT_EQ(s.closed_allocated_peak, 10 * MiB);
  EXPECT_EQ(s.closed_bytes_allocated, 12 * MiB);
  EXPECT_EQ(s.closed_bytes_freed, 10 * MiB);
  EXPECT_EQ(s.closed_alloc_count, 2u);
  EXPECT_EQ(s.closed_free_count, 1u);
}

// Events reach the collector after the reset was asked for, in the same pass as later ones (other
// threads allocate while a reset is pending): each lands on its side of the reset's instant, so the
// window a caller reads after its reset holds every event before it.
TEST(LiveFigures, AResetCutsTheEventsAtItsInstant) {
  Feed f;
  f.t = now_ns() - 1'000'000'000;  // stamped before the reset
  f.device(0, 1024 * MiB);
  f.alloc(0x1000, 3 * MiB);
  f.pass();
  f.live.request_reset();
  f.alloc(0x2000, 5 * MiB);  // stamped before the reset, handed over after it was asked for
  f.free(0x2000);
  f.t = now_ns() + 1'000'000'000;  // stamped after it
  f.alloc(0x3000, 7 * MiB);
  f.pass();
  const gpumemprof_device_stats_t s = f.stats(0);
  EXPECT_EQ(s.reset_allocated, 3 * MiB);
  EXPECT_EQ(s.closed_allocated_peak, 8 * MiB);
  EXPECT_EQ(s.closed_bytes_allocated, 8 * MiB);
  EXPECT_EQ(s.closed_bytes_freed, 5 * MiB);
  EXPECT_EQ(s.closed_alloc_count, 2u);
  EXPECT_EQ(s.closed_free_count, 1u);
  EXPECT_EQ(s.window_allocated_peak, 10 * MiB);
  EXPECT_EQ(s.window_bytes_allocated, 7 * MiB);
  EXPECT_EQ(s.window_bytes_freed, 0u);
  EXPECT_EQ(s.window_alloc_count, 1u);
}

TEST(LiveFigures, AResetWithNoLaterEventOpensAnEmptyWindowOnceCaughtUp) {
  Feed f;
  spike_then_reset(f);
  f.pass();  // the ring holds nothing claimed before the request
  const gpumemprof_device_stats_t s = f.stats(0);
  EXPECT_EQ(f.live.reset_applied(), f.live.reset_requested());
  EXPECT_EQ(s.window_allocated_peak, 2 * MiB);
  EXPECT_EQ(s.window_bytes_allocated, 0u);
  EXPECT_EQ(s.window_alloc_count, 0u);
}

uint64_t category(const uint64_t (&bytes)[8], TensorCategory c) { return bytes[static_cast<size_t>(c)]; }

// One training step in a window: the tensors by category now, at the reset, and at the window's
// peak (in backward), where what was decided after the peak (the activation let go in backward, the
// gradient labelled when the optimizer stepped) counts by its final category.
TEST(LiveFigures, TensorsByCategoryNowAndAtTheClosedWindowsPeak) {
  constexpr uint64_t kParam = 0x10000000, kAct = 0x10400000, kTemp = 0x10600000, kGrad = 0x10800000,
                     kState = 0x10c00000;
  Feed f;
  f.device(0, 1024 * MiB);
  f.attach();
  f.framework(Op::TensorAlloc, kParam, 4 * MiB);
  f.pass();
  EXPECT_EQ(category(f.stats(0).tensor_category, TensorCategory::Unknown), 4 * MiB);  // nothing labelled yet
  f.label(kParam, TensorCategory::Parameters);
  f.live.request_reset();
  f.pass();  // the window opens at 4 MiB
  f.framework(Op::TensorAlloc, kAct, 2 * MiB);
  f.framework(Op::TensorAlloc, kTemp, MiB);
  f.tensor_free(kTemp);
  f.pass();
  gpumemprof_device_stats_t s = f.stats(0);
  EXPECT_EQ(category(s.tensor_category, TensorCategory::Parameters), 4 * MiB);
  EXPECT_EQ(category(s.tensor_category, TensorCategory::Unknown), 2 * MiB);  // its forward has not ended
  f.phase(TrainingPhase::Backward);
  f.framework(Op::TensorAlloc, kGrad, 4 * MiB);  // the peak: 10 MiB
  f.pass();
  s = f.stats(0);
  EXPECT_EQ(category(s.tensor_category, TensorCategory::Activations), 2 * MiB);
  EXPECT_EQ(category(s.tensor_category, TensorCategory::Unknown), 4 * MiB);
  f.tensor_free(kAct);
  f.phase(TrainingPhase::Optimizer);
  f.label(kGrad, TensorCategory::Gradients);
  f.framework(Op::TensorAlloc, kState, MiB);
  f.label(kState, TensorCategory::OptimizerState);
  f.live.request_reset();
  f.pass();
  s = f.stats(0);
  ASSERT_EQ(s.closed_tensor_allocated_peak, 10 * MiB);
  EXPECT_EQ(category(s.closed_tensor_peak_category, TensorCategory::Parameters), 4 * MiB);
  EXPECT_EQ(category(s.closed_tensor_peak_category, TensorCategory::Activations), 2 * MiB);
  EXPECT_EQ(category(s.closed_tensor_peak_category, TensorCategory::Gradients), 4 * MiB);
  EXPECT_EQ(category(s.closed_tensor_peak_category, TensorCategory::Temporaries), 0u);  // let go before the peak
  EXPECT_EQ(category(s.closed_tensor_peak_category, TensorCategory::Unknown), 0u);
  ASSERT_EQ(s.reset_tensor_allocated, 9 * MiB);
  EXPECT_EQ(category(s.reset_tensor_category, TensorCategory::Parameters), 4 * MiB);
  EXPECT_EQ(category(s.reset_tensor_category, TensorCategory::Gradients), 4 * MiB);
  EXPECT_EQ(category(s.reset_tensor_category, TensorCategory::OptimizerState), MiB);
  for (size_t c = 0; c < 8; ++c) EXPECT_EQ(s.tensor_category[c], s.reset_tensor_category[c]) << c;
}

TEST(LiveFigures, AReaderThatFellBehindSeesTheLatestRecordsAndAGap) {
  Feed f;
  f.device(0, 1024 * MiB);
  const uint64_t n = LiveFigures::kRecords + 100;
  for (uint64_t i = 0; i < n; ++i) f.alloc(0x1000 + i * 0x1000, 512);
  f.pass();
  const auto r = f.recent(0);
  ASSERT_EQ(r.size(), LiveFigures::kRecords);
  EXPECT_EQ(r.front().seq, 101u);
  EXPECT_EQ(r.back().seq, n);
  EXPECT_EQ(r.back().allocated, n * 512);
}

// Hands out the trims the watchdog asks for: each pool shrinks to what `in_use` says.
std::vector<uint64_t> g_trimmed;
std::map<uint64_t, std::pair<uint64_t, uint64_t>> g_pools;  // handle -> reserved, in use
bool fake_trim(uint64_t pool, uint64_t* before, uint64_t* after) {
  auto it = g_pools.find(pool);
  if (it == g_pools.end()) return false;
  g_trimmed.push_back(pool);
  *before = it->second.first;
  *after = it->second.first = it->second.second;
  return true;
}

class WatchdogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_trimmed.clear();
    g_pools = {{0xa, {64 * MiB, 16 * MiB}}, {0xb, {32 * MiB, 32 * MiB}}, {0xc, {8 * MiB, 0}}};
    set_pool_trimmer(fake_trim);
    for (auto [pool, device] : {std::pair{0xaull, 0}, {0xbull, 0}, {0xcull, 1}}) {
      Event e{};
      e.op = Op::PoolCreate;
      e.object = pool;
      e.device = static_cast<int16_t>(device);
      acc.apply(e);
    }
  }
  void TearDown() override { set_pool_trimmer(nullptr); }
  static Config trim(uint64_t interval_ms) {
    Config c;
    c.watchdog_trim = true;
    c.watchdog_min_interval_ms = interval_ms;
    return c;
  }
  Accounting acc;
};

TEST_F(WatchdogTest, TrimsTheAlertingDevicesPoolsAndRecordsTheBytes) {
  Watchdog w(trim(30000));
  std::vector<Event> out;
  w.on_critical(0, 5'000, acc, out);
  EXPECT_EQ(g_trimmed, (std::vector<uint64_t>{0xa, 0xb}));
  ASSERT_EQ(out.size(), 2u);  // pool 0xb gave nothing back: no pool_reserved for it
  EXPECT_EQ(out[0].op, Op::PoolReserved);
  EXPECT_EQ(out[0].api, Api::cuMemPoolTrimTo);
  EXPECT_EQ(out[0].object, 0xau);
  EXPECT_EQ(out[0].value, 16 * MiB);
  EXPECT_EQ(out[0].device, 0);
  EXPECT_EQ(out[1].op, Op::Cleanup);
  EXPECT_EQ(out[1].api, Api::Collector);
  EXPECT_EQ(out[1].timestamp_ns, 5'000u);
  EXPECT_EQ(out[1].device, 0);
  EXPECT_EQ(out[1].size, 48 * MiB);
  EXPECT_EQ(out[1].value, 2u);
}

TEST_F(WatchdogTest, AtMostOncePerInterval) {
  Watchdog w(trim(30000));
  std::vector<Event> out;
  w.on_critical(0, 1'000'000'000, acc, out);
  w.on_critical(1, 30'999'999'999, acc, out);  // another device: the interval is the process's
  EXPECT_EQ(g_trimmed.size(), 2u);
  w.on_critical(1, 31'000'000'000, acc, out);
  EXPECT_EQ(g_trimmed, (std::vector<uint64_t>{0xa, 0xb, 0xc}));
  ASSERT_EQ(out.back().op, Op::Cleanup);
  EXPECT_EQ(out.back().size, 8 * MiB);
}

TEST_F(WatchdogTest, OffDoesNothing) {
  Watchdog w{Config{}};
  std::vector<Event> out;
  w.on_critical(0, 1'000, acc, out);
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(g_trimmed.empty());
}

TEST(WatchdogConfig, TrimAndTheIntervalAreRead) {
  auto parse = [](std::map<std::string, std::string> env) {
    return parse_config([&](const char* name) { return env.count(name) ? env.at(name).c_str() : nullptr; });
  };
  const Config d = parse({});
  EXPECT_FALSE(d.watchdog_trim);
  EXPECT_EQ(d.watchdog_min_interval_ms, 30000u);
  const Config c = parse({{"GPUMEMPROF_WATCHDOG", "trim"}, {"GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS", "0"}});
  EXPECT_TRUE(c.watchdog_trim);
  EXPECT_EQ(c.watchdog_min_interval_ms, 0u);
  EXPECT_TRUE(c.errors.empty());
  const Config bad = parse({{"GPUMEMPROF_WATCHDOG", "empty_cache"}, {"GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS", "1s"}});
  EXPECT_FALSE(bad.watchdog_trim);
  EXPECT_EQ(bad.watchdog_min_interval_ms, 30000u);
  EXPECT_EQ(bad.errors, (std::vector<std::string>{
                            "invalid GPUMEMPROF_WATCHDOG='empty_cache': expected off or trim; using the default off",
                            "invalid GPUMEMPROF_WATCHDOG_MIN_INTERVAL_MS='1s': expected an integer from 0 to "
                            "86400000; using the default 30000"}));
}

}  // namespace
}  // namespace gmp
