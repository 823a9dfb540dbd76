// The alert engine's rules on hand-made device figures (docs/alerts.md): growth and fragmentation
// judged inside a bridged framework (tensors; its cache), and exactly today's rules elsewhere.
#include "alerts.h"

#include <gtest/gtest.h>

namespace gmp {
namespace {

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
constexpr uint64_t kWindow = 1'000'000'000;  // sample_ms 100: windows of 1 s

DeviceStats device(uint64_t total = 80 * kGiB) {
  DeviceStats d;
  d.device = 0;
  d.total_bytes = total;
  return d;
}

void set_driver(DeviceStats& d, uint64_t allocated, uint64_t reserved) {
  d.allocated.set(allocated);
  d.reserved.set(reserved);
}

void set_framework(DeviceStats& d, uint64_t allocated, uint64_t reserved) {
  d.framework.attached = true;
  d.framework.allocated.set(allocated);
  d.framework.reserved.set(reserved);
  set_driver(d, reserved, reserved);  // the segments are all the driver sees
}

std::vector<Alert> of_type(const std::vector<Alert>& all, AlertType t) {
  std::vector<Alert> out;
  for (const Alert& a : all) {
    if (a.type == t) out.push_back(a);
  }
  return out;
}

// One evaluation at each of `times` (ns), with the figures `fill` sets for that time.
template <typename Fill>
std::vector<Alert> run(AlertEngine& engine, DeviceStats& d, uint64_t from, uint64_t to, uint64_t step, Fill fill) {
  std::vector<Alert> out;
  for (uint64_t t = from; t <= to; t += step) {
    fill(d, t);
    engine.evaluate(d, t, out);
  }
  return out;
}

TEST(Alerts, DriverGrowthBaselineIsTheFirstWindow) {
  AlertEngine engine(Config{});
  DeviceStats d = device();
  // 1 GiB in the first window, then 1.2 GiB for good: growth fires once the floor stays above.
  auto alerts = run(engine, d, kWindow, 6 * kWindow, kWindow / 4, [](DeviceStats& d, uint64_t t) {
    const uint64_t bytes = t < 2 * kWindow ? kGiB : kGiB + 200 * kMiB;
    set_driver(d, bytes, bytes);
  });
  auto growth = of_type(alerts, AlertType::Growth);
  ASSERT_EQ(growth.size(), 1u);
  EXPECT_TRUE(growth[0].fired);
  EXPECT_FALSE(growth[0].framework);
  EXPECT_EQ(growth[0].baseline, kGiB);
  EXPECT_EQ(growth[0].allocated, kGiB + 200 * kMiB);
}

TEST(Alerts, FrameworkGrowthWaitsForTheModelToLoad) {
  AlertEngine engine(Config{});
  DeviceStats d = device();
  // A model loads over 5 windows (1 GiB per window), then training steps allocate and free 2 GiB
  // of activations: the floor stays at the model. No growth.
  auto fill = [](DeviceStats& d, uint64_t t) {
    const uint64_t model = std::min<uint64_t>(t / kWindow, 5) * kGiB;
    const bool activations = t >= 6 * kWindow && (t / (kWindow / 4)) % 2 == 1;
    set_framework(d, model + (activations ? 2 * kGiB : 0), 8 * kGiB);
  };
  auto alerts = run(engine, d, kWindow / 8, 20 * kWindow, kWindow / 8, fill);
  EXPECT_TRUE(of_type(alerts, AlertType::Growth).empty());

  // Then tensors leak, 150 MiB a window: growth fires, judged on the tensors, against the model.
  auto leak = run(engine, d, 20 * kWindow + kWindow / 8, 30 * kWindow, kWindow / 8, [](DeviceStats& d, uint64_t t) {
    set_framework(d, 5 * kGiB + (t / kWindow - 20) * 150 * kMiB, 8 * kGiB);
  });
  auto growth = of_type(leak, AlertType::Growth);
  ASSERT_EQ(growth.size(), 1u);
  EXPECT_TRUE(growth[0].fired);
  EXPECT_TRUE(growth[0].framework);
  EXPECT_EQ(growth[0].baseline, 5 * kGiB);
  EXPECT_GT(growth[0].allocated, 5 * kGiB + 100 * kMiB);
  EXPECT_EQ(growth[0].reserved, 8 * kGiB);
}

TEST(Alerts, FrameworkWarmupEndsAfterAtMostItsWindows) {
  AlertEngine engine(Config{});
  DeviceStats d = device();
  // Tensors grow 10 MiB every window from the start: the warm-up never settles, so the baseline
  // is the floor of window kMaxWarmupWindows, and growth fires once 100 MiB more stayed.
  auto alerts = run(engine, d, kWindow / 2, 90 * kWindow, kWindow / 2, [](DeviceStats& d, uint64_t t) {
    set_framework(d, kGiB + (t / kWindow) * 10 * kMiB, 4 * kGiB);
  });
  auto growth = of_type(alerts, AlertType::Growth);
  ASSERT_EQ(growth.size(), 1u);
  EXPECT_TRUE(growth[0].framework);
  EXPECT_GE(growth[0].baseline, kGiB + (AlertEngine::kMaxWarmupWindows - 1) * 10 * kMiB);
  EXPECT_LE(growth[0].baseline, kGiB + (AlertEngine::kMaxWarmupWindows + 1) * 10 * kMiB);
}

TEST(Alerts, FrameworkFragmentationIsItsCache) {
  AlertEngine engine(Config{});
  DeviceStats d = device();
  // 10 GiB reserved by PyTorch, 4 GiB in tensors: 60% cached, for more than a window.
  auto alerts = run(engine, d, kWindow, 4 * kWindow, kWindow / 4,
                    [](DeviceStats& d, uint64_t) { set_framework(d, 4 * kGiB, 10 * kGiB); });
  auto frag = of_type(alerts, AlertType::Fragmentation);
  ASSERT_EQ(frag.size(), 1u);
  EXPECT_TRUE(frag[0].fired);
  EXPECT_TRUE(frag[0].framework);
  EXPECT_DOUBLE_EQ(frag[0].ratio, 0.6);
  EXPECT_EQ(frag[0].allocated, 4 * kGiB);
  EXPECT_EQ(frag[0].reserved, 10 * kGiB);

  // The cache is used again (9 GiB of tensors): cleared after a window.
  auto later = run(engine, d, 4 * kWindow + kWindow / 4, 7 * kWindow, kWindow / 4,
                   [](DeviceStats& d, uint64_t) { set_framework(d, 9 * kGiB, 10 * kGiB); });
  frag = of_type(later, AlertType::Fragmentation);
  ASSERT_EQ(frag.size(), 1u);
  EXPECT_FALSE(frag[0].fired);
}

TEST(Alerts, DriverFragmentationUnchanged) {
  AlertEngine engine(Config{});
  DeviceStats d = device();
  // Driver level: a pool that reserved 10 GiB for 4 GiB allocated.
  auto alerts = run(engine, d, kWindow, 4 * kWindow, kWindow / 4,
                    [](DeviceStats& d, uint64_t) { set_driver(d, 4 * kGiB, 10 * kGiB); });
  auto frag = of_type(alerts, AlertType::Fragmentation);
  ASSERT_EQ(frag.size(), 1u);
  EXPECT_FALSE(frag[0].framework);
  EXPECT_DOUBLE_EQ(frag[0].ratio, 0.6);
  EXPECT_EQ(frag[0].reserved, 10 * kGiB);
  EXPECT_EQ(frag[0].threshold_bytes, kGiB);
}

TEST(Alerts, WarningStaysAtTheDriverLevelWithAFramework) {
  AlertEngine engine(Config{});
  DeviceStats d = device(10 * kGiB);
  // PyTorch reserved 9 GiB (90% of the device) for 1 GiB of tensors: the device is 90% full.
  std::vector<Alert> out;
  set_framework(d, kGiB, 9 * kGiB);
  engine.evaluate(d, kWindow, out);
  auto warning = of_type(out, AlertType::Warning);
  ASSERT_EQ(warning.size(), 1u);
  EXPECT_EQ(warning[0].allocated, 9 * kGiB);
  EXPECT_FALSE(warning[0].framework);
}

// Most events find the device at rest (no alert, no condition begun, inside a growth window) and
// are passed over for a few comparisons; they must still count: a dip lowers the growth window's
// floor, and a condition that begins among them is dated by the first event that shows it.
TEST(Alerts, EventsAtRestStillCount) {
  AlertEngine engine(Config{});
  DeviceStats d = device(100 * kGiB);
  auto growth = of_type(run(engine, d, kWindow, 3 * kWindow, kWindow / 8,
                            [&](DeviceStats& d, uint64_t t) {
                              const uint64_t v = t == kWindow + kWindow / 2 ? kGiB : 3 * kGiB;
                              set_driver(d, v, v);
                            }),
                        AlertType::Growth);
  // The first window's floor is the dip: the next window, 2 GiB above it, is growth.
  ASSERT_EQ(growth.size(), 1u);
  EXPECT_EQ(growth[0].baseline, kGiB);
  EXPECT_EQ(growth[0].allocated, 3 * kGiB);

  // Fragmentation begins at an event among quiet ones and fires a window after that event.
  AlertEngine frag_engine(Config{});
  DeviceStats f = device(100 * kGiB);
  const uint64_t begins = 2 * kWindow + 3;
  std::vector<Alert> out;
  for (uint64_t t = kWindow; t <= 4 * kWindow; t += kWindow / 16) {
    const uint64_t at = t == 2 * kWindow ? begins : t;
    set_driver(f, 4 * kGiB, at >= begins ? 10 * kGiB : 4 * kGiB);
    frag_engine.evaluate(f, at, out);
  }
  auto frag = of_type(out, AlertType::Fragmentation);
  ASSERT_EQ(frag.size(), 1u);
  EXPECT_EQ(frag[0].t_ns, 3 * kWindow + kWindow / 16);  // the first event a window after `begins`
  // Warning: the very event that crosses, after a quiet stretch.
  AlertEngine warn_engine(Config{});
  DeviceStats w = device(10 * kGiB);
  out.clear();
  for (uint64_t t = kWindow; t <= 2 * kWindow; t += kWindow / 16) {
    const uint64_t allocated = t >= kWindow + 5 * (kWindow / 16) ? 8 * kGiB : kGiB;
    set_driver(w, allocated, allocated);
    warn_engine.evaluate(w, t, out);
  }
  auto warning = of_type(out, AlertType::Warning);
  ASSERT_EQ(warning.size(), 1u);
  EXPECT_EQ(warning[0].t_ns, kWindow + 5 * (kWindow / 16));
}

}  // namespace
}  // namespace gmp
