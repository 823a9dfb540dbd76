// TensorCategories (tools/analysis/tensor_categories.h) fed by hand: each category's rule and each
// phase boundary, with exact bytes (docs/framework-bridge.md §Categories).
#include <gtest/gtest.h>

#include "category_levels.h"
#include "records.h"
#include "category_split.h"

namespace gmp::analysis {
namespace {

// A stream of bridge events with increasing times and trace positions, fed to TensorCategories and
// CategoryLevels as a replay would: categories first (pass one), then the levels (pass two).
class Stream {
 public:
  Stream& alloc(uint64_t address, uint64_t size, uint32_t stack = 0) {
    Event e = base(Op::TensorAlloc);
    FrameworkBlockRecord{address, size, 0, 0, false}.to_event(e, Op::TensorAlloc);
    e.stack_id = stack;
    return push(e);
  }
  Stream& free(uint64_t address) {
    Event r = base(Op::TensorFreeRequested);
    r.address = address;
    push(r);
    Event c = base(Op::TensorFreeCompleted);
    c.address = address;
    return push(c);
  }
  Stream& label(uint64_t address, TensorCategory c, uint32_t name = 0) {
    Event e = base(Op::TensorLabel);
    TensorLabelRecord{address, c, name}.to_event(e);
    return push(e);
  }
  Stream& phase(TrainingPhase p, uint64_t step, uint64_t micro) {
    Event e = base(Op::Phase);
    PhaseRecord{p, step, micro}.to_event(e);
    e.device = -1;
    return push(e);
  }
  // The tensors live after the last event, by category and in total.
  CategorySplit at_end(const reader::Attribution& a = {}, bool cut_short = false) {
    TensorCategories categories = replay_categories(a);
    Accounting acc;
    for (size_t i = 0; i < events_.size(); ++i) {
      acc.apply(events_[i]);
      categories.add(events_[i], i + 1);
    }
    categories.finish(cut_short);
    CategorySplit s = split_by_category(acc.live_tensors(), 0, categories, a);
    s.phase = categories.phase();
    std::vector<uint32_t> ids;
    stack_ids(s, ids);
    name_items(s, Symbolizer(a).symbolize(ids), 4);
    return s;
  }
  // Use::Live after each event: the bytes counted per category always add up to the tensors held.
  std::vector<CategoryBytes> live() {
    TensorCategories categories(TensorCategories::Use::Live, {});
    Accounting acc;
    std::vector<CategoryBytes> out;
    for (const Event& e : events_) {
      acc.apply(e);
      categories.add(e);
      out.push_back(categories.now(0));
      uint64_t held = 0, counted = 0;
      for (const LiveAllocation& t : acc.live_tensors()) held += t.size;
      for (uint64_t b : out.back()) counted += b;
      EXPECT_EQ(counted, held) << "after event " << out.size();
    }
    return out;
  }
  // Each category's peak over the stream.
  CategoryBytes peaks() {
    const reader::Attribution a;
    TensorCategories categories = replay_categories(a);
    for (size_t i = 0; i < events_.size(); ++i) categories.add(events_[i], i + 1);
    categories.finish();
    CategoryLevels levels(categories);
    for (const Event& e : events_) levels.add(e);
    return levels.peaks(0);
  }

 private:
  Event base(Op op) {
    Event e{};
    e.op = op;
    e.device = 0;
    e.api = Api::torch_caching_allocator;
    e.timestamp_ns = ++now_ * 1000;
    return e;
  }
  Stream& push(const Event& e) {
    events_.push_back(e);
    return *this;
  }
  std::vector<Event> events_;
  uint64_t now_ = 0;
};

uint64_t bytes(const CategorySplit& s, TensorCategory c) { return s.by_category[static_cast<size_t>(c)].total.bytes; }

constexpr uint64_t kParam = 0x1000, kAct = 0x2000, kTemp = 0x3000, kGrad = 0x4000, kState = 0x5000, kKept = 0x6000,
                   kLate = 0x7000;

TEST(TensorCategories, NothingLabelledAndNoPhaseIsUnknownNotGuessed) {
  CategorySplit s = Stream().alloc(kParam, 100).alloc(kAct, 50).at_end();
  EXPECT_FALSE(s.decided);
  EXPECT_EQ(bytes(s, TensorCategory::Unknown), 150u);
  EXPECT_EQ(s.total.bytes, 150u);
  EXPECT_FALSE(s.phase);
}

// One training step: forward (an activation saved, a temporary), backward (the activation freed,
// a gradient made and labelled after it), the optimizer (its state made and labelled), then the
// next forward; each tensor's category and the phase the run ended in.
TEST(TensorCategories, OneTrainingStepByCategory) {
  Stream s;
  s.alloc(kParam, 1000).label(kParam, TensorCategory::Parameters);
  s.alloc(kAct, 300).alloc(kTemp, 70).free(kTemp);                                   // forward of step 1
  s.phase(TrainingPhase::Backward, 1, 1).alloc(kGrad, 1000).free(kAct);               // backward
  s.phase(TrainingPhase::Forward, 1, 2);                                             // its end
  s.phase(TrainingPhase::Optimizer, 1, 1).label(kGrad, TensorCategory::Gradients).alloc(kState, 2000);
  s.label(kState, TensorCategory::OptimizerState).phase(TrainingPhase::Forward, 2, 1);
  s.alloc(kKept, 40);  // in step 2's forward, alive at the end, no backward after it: other
  const CategorySplit end = s.at_end();
  // At an OOM that cut step 2's forward short, its tensors are activations.
  EXPECT_EQ(bytes(s.at_end({}, true), TensorCategory::Activations), 40u);
  EXPECT_TRUE(end.decided);
  EXPECT_EQ(bytes(end, TensorCategory::Parameters), 1000u);
  EXPECT_EQ(bytes(end, TensorCategory::Gradients), 1000u);
  EXPECT_EQ(bytes(end, TensorCategory::OptimizerState), 2000u);
  EXPECT_EQ(bytes(end, TensorCategory::Activations), 0u);
  EXPECT_EQ(bytes(end, TensorCategory::Other), 40u);
  EXPECT_EQ(end.total.bytes, 4040u);
  ASSERT_TRUE(end.phase);
  EXPECT_EQ(end.phase->phase, TrainingPhase::Forward);
  EXPECT_EQ(end.phase->step, 2u);
  EXPECT_EQ(phase_text(*end.phase), "forward of step 2");
  // The peaks by category, with hindsight: the activation was one while it lived, the temporary a
  // temporary.
  const CategoryBytes p = s.peaks();
  EXPECT_EQ(p[static_cast<size_t>(TensorCategory::Activations)], 300u);  // the step-2 one came after it was freed
  EXPECT_EQ(p[static_cast<size_t>(TensorCategory::Temporaries)], 70u);
  EXPECT_EQ(p[static_cast<size_t>(TensorCategory::Gradients)], 1000u);
  EXPECT_EQ(p[static_cast<size_t>(TensorCategory::Other)], 40u);
}

// Live, the same step as decided so far: a tensor held in the phase it was allocated in is unknown
// until the phase ends or it is let go, and a late label moves its bytes then.
TEST(TensorCategories, LiveCountsWhatIsDecidedSoFar) {
  Stream s;
  s.alloc(kParam, 1000);                                                 // 1: nothing decided yet
  s.label(kParam, TensorCategory::Parameters);                           // 2
  s.alloc(kAct, 300).alloc(kTemp, 70);                                   // 3, 4
  s.free(kTemp);                                                         // 5, 6
  s.phase(TrainingPhase::Backward, 1, 1).alloc(kGrad, 1000);             // 7, 8
  s.phase(TrainingPhase::Optimizer, 1, 1).label(kGrad, TensorCategory::Gradients);  // 9, 10
  const std::vector<CategoryBytes> live = s.live();
  auto at = [&](size_t event, TensorCategory c) { return live[event - 1][static_cast<size_t>(c)]; };
  EXPECT_EQ(at(1, TensorCategory::Unknown), 1000u);
  EXPECT_EQ(at(2, TensorCategory::Parameters), 1000u);
  EXPECT_EQ(at(2, TensorCategory::Unknown), 0u);
  EXPECT_EQ(at(4, TensorCategory::Unknown), 370u);     // the forward is still on
  EXPECT_EQ(at(5, TensorCategory::Temporaries), 70u);  // let go in its phase: a temporary until freed
  EXPECT_EQ(at(6, TensorCategory::Temporaries), 0u);
  EXPECT_EQ(at(7, TensorCategory::Activations), 300u);  // held when backward began
  EXPECT_EQ(at(8, TensorCategory::Unknown), 1000u);     // the gradient, before its label
  EXPECT_EQ(at(9, TensorCategory::Other), 1000u);       // its phase ended, no label yet
  EXPECT_EQ(at(10, TensorCategory::Gradients), 1000u);
  EXPECT_EQ(at(10, TensorCategory::Activations), 300u);
}

TEST(TensorCategories, WhatIsStillHeldWhenTheNextBackwardBeginsIsKeptStateNotAnActivation) {
  Stream s;
  s.alloc(kKept, 64).alloc(kAct, 32);                       // forward of step 1
  s.phase(TrainingPhase::Backward, 1, 1).free(kAct);        // the activation goes in backward
  s.phase(TrainingPhase::Forward, 1, 2);
  s.phase(TrainingPhase::Optimizer, 1, 1).phase(TrainingPhase::Forward, 2, 1);
  s.phase(TrainingPhase::Backward, 2, 1);                   // kKept is still held: kept state
  const CategorySplit end = s.at_end();
  EXPECT_EQ(bytes(end, TensorCategory::Other), 64u);
  EXPECT_EQ(bytes(end, TensorCategory::Activations), 0u);
  EXPECT_EQ(s.peaks()[static_cast<size_t>(TensorCategory::Activations)], 32u);
}

TEST(TensorCategories, AnActivationFreedAfterItsBackwardButBeforeTheNextStaysOne) {
  Stream s;
  s.alloc(kAct, 32).phase(TrainingPhase::Backward, 1, 1).phase(TrainingPhase::Forward, 1, 2).free(kAct);
  s.phase(TrainingPhase::Optimizer, 1, 1);
  EXPECT_EQ(s.peaks()[static_cast<size_t>(TensorCategory::Activations)], 32u);
}

TEST(TensorCategories, WithoutABackwardTheUnfinishedPhasesTensorsAreOther) {
  Stream s;
  s.alloc(kParam, 10).label(kParam, TensorCategory::Parameters).alloc(kLate, 5).alloc(kTemp, 7).free(kTemp);
  const CategorySplit end = s.at_end();
  EXPECT_EQ(bytes(end, TensorCategory::Other), 5u);
  EXPECT_EQ(bytes(end, TensorCategory::Parameters), 10u);
  EXPECT_EQ(s.peaks()[static_cast<size_t>(TensorCategory::Temporaries)], 7u);
}

TEST(TensorCategories, ALabelBindsToTheAllocationLiveAtItsAddressOnly) {
  Stream s;
  s.alloc(kGrad, 8).label(kGrad, TensorCategory::Gradients).free(kGrad);
  s.alloc(kGrad, 9);                                   // the same address again: a new tensor
  s.label(0x9999, TensorCategory::Parameters);         // no tensor there: says nothing
  const CategorySplit end = s.at_end();
  EXPECT_EQ(bytes(end, TensorCategory::Gradients), 0u);
  EXPECT_EQ(bytes(end, TensorCategory::Other), 9u);
  EXPECT_EQ(s.peaks()[static_cast<size_t>(TensorCategory::Gradients)], 8u);
}

TEST(TensorCategories, AParameterReachedAgainAsAnotherCategoryStaysAParameter) {
  Stream s;
  s.alloc(kParam, 8).label(kParam, TensorCategory::OptimizerState, 3).label(kParam, TensorCategory::Parameters, 5);
  s.label(kParam, TensorCategory::Gradients, 7);
  const CategorySplit end = s.at_end();
  EXPECT_EQ(bytes(end, TensorCategory::Parameters), 8u);
}

TEST(TensorCategories, KvCacheIsWhatTransformersCacheCodeAllocated) {
  reader::Attribution a;
  a.pyframes[1] = reader::PyFrameRecord{1, "/site-packages/transformers/cache_utils.py", "update", 120};
  a.pyframes[2] = reader::PyFrameRecord{2, "/work/model.py", "forward", 7};
  a.stacks[10] = reader::StackRecord{{StackFrame{1, true}, StackFrame{2, true}}, 1};
  a.stacks[11] = reader::StackRecord{{StackFrame{2, true}}, 2};
  Stream s;
  s.alloc(kKept, 256, 10).alloc(kLate, 16, 11).phase(TrainingPhase::Forward, 1, 1);
  const CategorySplit end = s.at_end(a);
  EXPECT_EQ(bytes(end, TensorCategory::KvCache), 256u);
  EXPECT_EQ(bytes(end, TensorCategory::Other), 16u);
  const auto& kv = end.by_category[static_cast<size_t>(TensorCategory::KvCache)];
  ASSERT_EQ(kv.largest.size(), 1u);
  EXPECT_EQ(kv.largest[0].name, "forward (model.py:7)");  // the program's line that called the cache
}

TEST(TensorCategories, ItemsAreNamedByLabelAndSumByName) {
  reader::Attribution a;
  a.names[5] = "model.layers.0.mlp.down_proj.weight";
  Stream s;
  s.alloc(kParam, 30).label(kParam, TensorCategory::Parameters, 5).alloc(kState, 10);
  s.label(kState, TensorCategory::Parameters, 5);
  const CategorySplit end = s.at_end(a);
  const auto& p = end.by_category[static_cast<size_t>(TensorCategory::Parameters)];
  ASSERT_EQ(p.largest.size(), 1u);
  EXPECT_EQ(p.largest[0].name, "model.layers.0.mlp.down_proj.weight");
  EXPECT_EQ(p.largest[0].bytes.bytes, 40u);
  EXPECT_EQ(p.largest[0].bytes.count, 2u);
}

TEST(TensorCategories, ThePhaseNowAndItsText) {
  const reader::Attribution a;
  TensorCategories c = replay_categories(a);
  EXPECT_FALSE(c.phase());
  Event e{};
  PhaseRecord{TrainingPhase::Backward, 3, 2}.to_event(e);
  c.add(e, 10);
  ASSERT_TRUE(c.phase());
  EXPECT_EQ(phase_text(*c.phase()), "backward of step 3, micro-batch 2");
  PhaseRecord{TrainingPhase::Optimizer, 3, 2}.to_event(e);
  c.add(e, 20);
  ASSERT_TRUE(c.phase());
  EXPECT_EQ(c.phase()->phase, TrainingPhase::Optimizer);
  EXPECT_EQ(phase_text(*c.phase()), "optimizer of step 3, micro-batch 2");
  EXPECT_EQ(c.backward_passes(), 1u);
  EXPECT_EQ(c.optimizer_steps(), 1u);
}

}  // namespace
}  // namespace gmp::analysis
