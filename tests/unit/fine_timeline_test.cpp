// FineTimeline (tools/analysis/fine_timeline.h): whatever the cap made of the slices, each kept
// slice's figures are exactly those of the level function over its time, and a slice that is not
// kept held the previous kept slice's last level throughout.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "fine_timeline.h"

namespace gmp::analysis {
namespace {

struct Step {
  uint64_t at_ns;
  Levels after;
};

// What happened over [from, to): lowest, highest and last allocated level, from the steps alone.
struct Truth {
  uint64_t min, max, last;
};
Truth truth(const std::vector<Step>& steps, uint64_t from, uint64_t to) {
  uint64_t level = 0;
  size_t i = 0;
  for (; i < steps.size() && steps[i].at_ns < from; ++i) level = steps[i].after.allocated;
  Truth t{level, level, level};
  for (; i < steps.size() && steps[i].at_ns < to; ++i) {
    t.min = std::min(t.min, steps[i].after.allocated);
    t.max = std::max(t.max, steps[i].after.allocated);
    t.last = steps[i].after.allocated;
  }
  return t;
}

TEST(FineTimeline, EverySliceIsExactAtTheWidthTheCapLeaves) {
  std::mt19937_64 rng(7);
  std::vector<Step> steps;
  uint64_t at = 1000;
  for (int i = 0; i < 5000; ++i) {
    at += rng() % 3 == 0 ? rng() % 1'000'000 : rng() % 50;  // bursts and gaps
    steps.push_back({at, {rng() % (1ull << 34), rng() % (1ull << 35), 0, 0}});
  }
  for (size_t cap : {1ul, 7ul, 100ul, 4096ul, 100000ul}) {
    FineTimeline fine(1000, 1, cap);
    Levels now;
    for (const Step& s : steps) {
      fine.level(s.at_ns, now, s.after);
      now = s.after;
    }
    const auto& kept = fine.slices();
    ASSERT_LE(kept.size(), cap);
    ASSERT_FALSE(kept.empty());
    const uint64_t w = fine.width_ns();
    EXPECT_EQ(w & (w - 1), 0u) << "a power of two";
    if (cap == 100000) {
      EXPECT_EQ(w, 1u) << "uncapped: as fine as the events";
    }
    for (size_t k = 0; k < kept.size(); ++k) {
      const uint64_t from = 1000 + kept[k].index * w;
      const Truth t = truth(steps, from, from + w);
      ASSERT_EQ(kept[k].allocated_min, t.min) << "cap " << cap << " slice " << k;
      ASSERT_EQ(kept[k].allocated_max, t.max) << "cap " << cap << " slice " << k;
      ASSERT_EQ(kept[k].allocated_last, t.last) << "cap " << cap << " slice " << k;
      if (k + 1 < kept.size()) {  // the gap to the next kept slice saw no change
        const uint64_t gap_from = from + w, gap_to = 1000 + kept[k + 1].index * w;
        const Truth g = truth(steps, gap_from, gap_to);
        ASSERT_TRUE(gap_to == gap_from || (g.min == t.last && g.max == t.last)) << "cap " << cap << " gap after " << k;
      }
    }
  }
}

TEST(FineTimeline, SamplesAreKeptWithTheLevelTheyFellIn) {
  FineTimeline fine(0, 1, 3);
  fine.level(10, {}, {100, 200, 0, 0});
  fine.sample(20, {100, 200, 0, 0}, 555);
  fine.level(30, {100, 200, 0, 0}, {50, 200, 0, 0});
  fine.sample(40, {50, 200, 0, 0}, 666);  // the fourth slice: coarsened to fit three
  const auto& kept = fine.slices();
  ASSERT_LE(kept.size(), 3u);
  uint64_t nvml = 0;
  for (const FineSlice& s : kept) nvml = std::max(nvml, s.nvml_process_max);
  EXPECT_EQ(nvml, 666u);
  EXPECT_EQ(kept.back().allocated_last, 50u);
  EXPECT_EQ(kept.front().allocated_max, 100u);
}

// The categories of a slice are those at its tensors' highest (the first time it was reached), and
// at its end; coarsening keeps the half that reached the merged slice's highest first.
TEST(FineTimeline, TheCategoriesAreThoseAtTheTensorsHighestAndAtTheEnd) {
  auto at = [](uint64_t tensors, uint64_t params, uint64_t activations) {
    Levels l{tensors, tensors, tensors, tensors};
    l.categories[static_cast<size_t>(TensorCategory::Parameters)] = params;
    l.categories[static_cast<size_t>(TensorCategory::Activations)] = activations;
    return l;
  };
  FineTimeline fine(0, 100, 2);
  fine.level(10, {}, at(100, 100, 0));
  fine.level(20, at(100, 100, 0), at(150, 100, 50));   // slice 0's highest
  fine.level(30, at(150, 100, 50), at(120, 100, 20));
  fine.level(130, at(120, 100, 20), at(150, 150, 0));   // slice 1: as high again, later
  fine.level(140, at(150, 150, 0), at(110, 110, 0));
  ASSERT_EQ(fine.slices().size(), 2u);
  const FineSlice& first = fine.slices()[0];
  EXPECT_EQ(first.tensors_max, 150u);
  EXPECT_EQ(first.categories_at_max[static_cast<size_t>(TensorCategory::Activations)], 50u);
  EXPECT_EQ(first.categories_last[static_cast<size_t>(TensorCategory::Activations)], 20u);
  fine.level(250, at(110, 110, 0), at(90, 90, 0));  // a third slice: two by two into one of 200 ns
  ASSERT_EQ(fine.slices().size(), 2u);
  const FineSlice& merged = fine.slices()[0];
  EXPECT_EQ(fine.width_ns(), 200u);
  EXPECT_EQ(merged.tensors_max, 150u);
  EXPECT_EQ(merged.categories_at_max[static_cast<size_t>(TensorCategory::Activations)], 50u);  // the earlier half's
  EXPECT_EQ(merged.categories_last[static_cast<size_t>(TensorCategory::Parameters)], 110u);
}

TEST(FineTimeline, NoCapKeepsNothing) {
  FineTimeline fine(0, 1, 0);
  fine.level(10, {}, {100, 200, 0, 0});
  EXPECT_TRUE(fine.slices().empty());
}

}  // namespace
}  // namespace gmp::analysis
