// format/records.h: each record's fields land in the Event fields the trace format has always given
// them (so traces written before the record types existed read the same), and read back whole.
#include <gtest/gtest.h>

#include "records.h"

namespace gmp {
namespace {

// The general fields of an event, in one comparable value.
struct Raw {
  uint64_t address, size, stream, object, value;
  int16_t result;
  Op op;
  bool operator==(const Raw&) const = default;
};
Raw raw(const Event& e) { return {e.address, e.size, e.stream, e.object, e.value, e.result, e.op}; }

template <typename R, typename... OpArg>
Event written(const R& r, OpArg... op) {
  Event e{};
  r.to_event(e, op...);
  return e;
}

TEST(Records, AllocKeepsPoolFieldsWhereTheTraceHasThem) {
  const Event e = written(AllocRecord{.address = 1, .size = 2, .stream = 3, .pool = 4, .pool_reserved = 5});
  EXPECT_EQ(raw(e), (Raw{1, 2, 3, 4, 5, 0, Op::Alloc}));
  const AllocRecord r = AllocRecord::from_event(e);
  EXPECT_EQ(r.pool, 4u);
  EXPECT_EQ(r.pool_reserved, 5u);
}

TEST(Records, CollectorRecordsKeepTheirLayout) {
  EXPECT_EQ(raw(written(PoolReservedRecord{7, 8, 9})), (Raw{0, 9, 0, 7, 8, 0, Op::PoolReserved}));
  EXPECT_EQ(raw(written(DriverMemoryRecord{100, 40})), (Raw{0, 100, 0, 0, 40, 0, Op::DriverMemory}));
  EXPECT_EQ(raw(written(OomBundleRecord{3, 64})), (Raw{3, 64, 0, 0, 0, 0, Op::OomBundle}));
  EXPECT_EQ(raw(written(AlertRecord{AlertType::Critical, true, 10, 20, 30})), (Raw{30, 10, 0, 20, 2, 1, Op::Alert}));
  EXPECT_EQ(raw(written(SampleRecord{5, 80, 4})), (Raw{0, 5, 0, 80, 4, 0, Op::Sample}));
  EXPECT_EQ(raw(written(CleanupRecord{1 << 20, 2})), (Raw{0, 1 << 20, 0, 0, 2, 0, Op::Cleanup}));
  EXPECT_EQ(raw(written(GraphMemoryRecord{1, 2, 3, 4})), (Raw{4, 1, 0, 3, 2, 0, Op::GraphMemory}));
}

TEST(Records, FrameworkRecordsKeepTheirLayout) {
  EXPECT_EQ(raw(written(FrameworkOomFiguresRecord{1, 2, 3, 4, 5})),
            (Raw{5, 1, 3, 4, 2, 0, Op::FrameworkOomFigures}));
  EXPECT_EQ(raw(written(FrameworkOomRecord{6, 7})), (Raw{0, 6, 0, 0, 7, 0, Op::FrameworkOom}));
  const uint64_t v = framework_version(2, 11, 0);
  EXPECT_EQ(raw(written(FrameworkAttachRecord{false, v, FrameworkRefusal::OtherBackend})),
            (Raw{0, 0, 0, 2, v, 0, Op::FrameworkAttach}));
  EXPECT_EQ(raw(written(FrameworkBlockRecord{1, 2, 3, 4, true}, Op::SegmentMap)),
            (Raw{1, 2, 3, 4, kSeeded, 0, Op::SegmentMap}));
  EXPECT_EQ(raw(written(DeviceLimitRecord{100, 10, true, 80, 30})),
            (Raw{30, 10, 0, 80, 100, kOutOfMemory, Op::DeviceLimit}));
}

TEST(Records, GraphRecordsKeepTheirLayout) {
  EXPECT_EQ(raw(written(GraphNodeRecord{1, 2, 3, 4, 5}, Op::GraphAllocNode)),
            (Raw{1, 2, 4, 3, 5, 0, Op::GraphAllocNode}));
  EXPECT_EQ(raw(written(CaptureBeginRecord{1, 2, 3, 4})), (Raw{0, 4, 1, 2, 3, 0, Op::CaptureBegin}));
  EXPECT_EQ(raw(written(CaptureEndRecord{1, 2, 3})), (Raw{0, 0, 1, 2, 3, 0, Op::CaptureEnd}));
  EXPECT_EQ(raw(written(GraphInstantiateRecord{1, 2, 3})), (Raw{2, 0, 0, 1, 3, 0, Op::GraphInstantiate}));
  EXPECT_EQ(raw(written(GraphLaunchRecord{1, 2, 3})), (Raw{1, 3, 2, 0, 0, 0, Op::GraphLaunch}));
  EXPECT_EQ(raw(written(GraphExecDestroyRecord{9})), (Raw{9, 0, 0, 0, 0, 0, Op::GraphExecDestroy}));
  EXPECT_EQ(raw(written(GraphDestroyRecord{9})), (Raw{0, 0, 0, 9, 0, 0, Op::GraphDestroy}));
  EXPECT_EQ(raw(written(GraphChildRecord{1, 2})), (Raw{2, 0, 0, 1, 0, 0, Op::GraphChild}));
  EXPECT_EQ(raw(written(VmmMapRecord{1, 2, 3, 4})), (Raw{1, 2, 0, 3, 4, 0, Op::VmmMap}));
}

TEST(Records, ReadBackWhatWasWritten) {
  const auto f = FrameworkOomFiguresRecord::from_event(written(FrameworkOomFiguresRecord{1, 2, 3, 4, 5}));
  EXPECT_EQ(std::tie(f.requested, f.free, f.capacity, f.allocated, f.reserved), std::make_tuple(1, 2, 3, 4, 5));
  const AlertRecord a = AlertRecord::from_event(written(AlertRecord{AlertType::Growth, false, 1, 2, 3}));
  EXPECT_EQ(a.type, AlertType::Growth);
  EXPECT_FALSE(a.fired);
  const DeviceLimitRecord l = DeviceLimitRecord::from_event(written(DeviceLimitRecord{100, 10, false, 0, 0}));
  EXPECT_FALSE(l.refused);
  EXPECT_EQ(l.limit, 100u);
  EXPECT_FALSE(SampleRecord::from_event(written(SampleRecord{1, 2, SampleRecord::kUnknownProcessUse})).process_known());
  const FrameworkAttachRecord at = FrameworkAttachRecord::from_event(written(FrameworkAttachRecord{true, 7, {}}));
  EXPECT_TRUE(at.attached);
  EXPECT_EQ(at.version, 7u);
}

TEST(Records, ANameIdOutsideThirtyTwoBitsReadsAsNoName) {
  Event e{};
  NameRecord{42}.to_event(e, Op::Mark);
  EXPECT_EQ(NameRecord::from_event(e).name_id, 42u);
  e.address = uint64_t{1} << 40;  // a damaged file
  EXPECT_EQ(NameRecord::from_event(e).name_id, 0u);
}

}  // namespace
}  // namespace gmp
