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

}  // namespace
}  // namespace gmp
