#include <gtest/gtest.h>

#include "accounting.h"
#include "summary.h"
#include "summary_builder.h"

namespace gmp {
namespace {

constexpr uint64_t MiB = 1 << 20;

// Builds synthetic event streams the way the shim emits them.
class Stream {
 public:
  Accounting acc;

  void alloc(Kind k, uint64_t addr, uint64_t size, int dev = 0, uint32_t tid = 1, uint64_t pool = 0,
             uint64_t pool_reserved = 0) {
    Event e = base(Op::Alloc, dev, tid);
    e.kind = k;
    e.address = addr;
    e.size = size;
    e.object = pool;
    e.value = pool_reserved;
    acc.apply(e);
  }
  void fail(Kind k, uint64_t size, int dev = 0) {
    Event e = base(Op::Alloc, dev, 1);
    e.kind = k;
    e.size = size;
    e.result = 2;  // CUDA_ERROR_OUT_OF_MEMORY
    acc.apply(e);
  }
  void free(Kind k, uint64_t addr, uint32_t tid = 1) {
    Event e = base(Op::Free, -1, tid);
    e.kind = k;
    e.address = addr;
    acc.apply(e);
  }
  void refused(uint64_t addr, uint32_t tid = 1) {
    Event e = base(Op::ReleaseFailed, -1, tid);
    e.address = addr;
    e.result = 1;
    acc.apply(e);
  }
  void pool_reserved(uint64_t pool, uint64_t bytes, int dev = 0, uint64_t high = 0) {
    Event e = base(Op::PoolReserved, dev, 1);
    e.object = pool;
    e.value = bytes;
    e.size = high;
    acc.apply(e);
  }
  void pool_create(uint64_t pool, int dev = 0) {
    Event e = base(Op::PoolCreate, dev, 1);
    e.object = pool;
    acc.apply(e);
  }
  void pool_destroy(uint64_t pool, uint32_t tid = 1) {
    Event e = base(Op::PoolDestroy, -1, tid);
    e.address = pool;
    e.object = pool;
    acc.apply(e);
  }
  void vmm_create(uint64_t handle, uint64_t size, int dev = 0) {
    Event e = base(Op::VmmCreate, dev, 1);
    e.address = handle;
    e.size = size;
    acc.apply(e);
  }
  void vmm_release(uint64_t handle, uint32_t tid = 1) {
    Event e = base(Op::VmmRelease, -1, tid);
    e.address = handle;
    acc.apply(e);
  }
  void vmm_map(uint64_t va, uint64_t size, uint64_t handle) {
    Event e = base(Op::VmmMap, -1, 1);
    e.address = va;
    e.size = size;
    e.object = handle;
    acc.apply(e);
  }
  void vmm_unmap(uint64_t va, uint64_t size, uint32_t tid = 1) {
    Event e = base(Op::VmmUnmap, -1, tid);
    e.address = va;
    e.size = size;
    acc.apply(e);
  }

  const DeviceStats& dev(int d = 0) const { return acc.devices().at(d); }
  uint64_t tick() { return ++t_; }  // the next event time, for events built outside

 private:
  Event base(Op op, int dev, uint32_t tid) {
    Event e{};
    e.op = op;
    e.device = static_cast<int16_t>(dev);
    e.thread_id = tid;
    e.timestamp_ns = ++t_;
    return e;
  }
  uint64_t t_ = 0;
};

// A framework event as the bridge records it (docs/trace-format.md, ops 22-31).
void framework(Stream& s, Op op, uint64_t addr, uint64_t size, int dev = 0, uint32_t tid = 1, uint64_t value = 0) {
  Event e{};
  e.timestamp_ns = s.tick();
  e.op = op;
  e.api = Api::torch_caching_allocator;
  e.device = static_cast<int16_t>(dev);
  e.thread_id = tid;
  e.address = addr;
  e.size = size;
  e.value = value;
  s.acc.apply(e);
}

void attach(Stream& s, bool attached, FrameworkRefusal why = FrameworkRefusal::None) {
  Event e{};
  e.timestamp_ns = s.tick();
  e.op = Op::FrameworkAttach;
  e.api = Api::torch_caching_allocator;
  e.device = -1;
  e.result = attached ? 1 : 0;
  e.value = framework_version(2, 11, 0);
  e.object = static_cast<uint64_t>(why);
  s.acc.apply(e);
}

const FrameworkStats& fw(const Stream& s, int dev = 0) { return s.acc.devices().at(dev).framework; }

// The segment is a driver allocation too: both levels, side by side.
// The allocation path reads no pool (value kNoReading); a reading's high watermark makes the peaks
// the driver's even when the pool grew and shrank between two readings.
TEST(Accounting, APoolsHighWatermarkMakesItsPeaksExactBetweenReadings) {
  Stream s;
  s.alloc(Kind::Linear, 0x1000, 1 * MiB);
  s.alloc(Kind::Pool, 0x2000, 3 * MiB, 0, 1, 0x77, kNoReading);
  const DeviceStats& d = s.acc.devices().at(0);
  EXPECT_EQ(d.pool_reserved.current, 0u);  // known, not read yet
  EXPECT_EQ(s.acc.pools().size(), 1u);
  s.pool_reserved(0x77, 4 * MiB, 0, 10 * MiB);  // it reached 10 MiB between the readings
  EXPECT_EQ(d.pool_reserved.current, 4 * MiB);
  EXPECT_EQ(d.pool_reserved.peak, 10 * MiB);
  EXPECT_EQ(d.reserved.current, 5 * MiB);
  EXPECT_EQ(d.reserved.peak, 11 * MiB);  // the linear MiB beside the pool's high
  s.pool_reserved(0x77, 4 * MiB, 0, 4 * MiB);  // a high at or below the reading adds nothing
  EXPECT_EQ(d.reserved.peak, 11 * MiB);
}

TEST(FrameworkAccounting, TensorsAndSegmentsBesideTheDriverLevel) {
  Stream s;
  attach(s, true);
  s.alloc(Kind::Linear, 0x100000, 20 * MiB);  // PyTorch's cudaMalloc of a segment
  framework(s, Op::SegmentAlloc, 0x100000, 20 * MiB);
  framework(s, Op::TensorAlloc, 0x100000, 4000);
  framework(s, Op::TensorAlloc, 0x101000, 3 * MiB);
  framework(s, Op::TensorFreeRequested, 0x100000, 4000);
  framework(s, Op::TensorFreeCompleted, 0x100000, 4000);
  const FrameworkStats& f = fw(s);
  EXPECT_EQ(f.allocated.current, 3 * MiB);
  EXPECT_EQ(f.allocated.peak, 3 * MiB + 4000);
  EXPECT_EQ(f.reserved.current, 20 * MiB);
  EXPECT_EQ(f.cached(), 17 * MiB);
  EXPECT_EQ(f.pending_free.peak, 0u);  // completed at once: never pending
  EXPECT_EQ(f.outside.peak, 0u);       // the segment was never outside, not even before its event
  EXPECT_EQ(s.acc.devices().at(0).reserved.current, 20 * MiB);
  // At exit the tensor is the leak, the segment is the cache.
  EXPECT_EQ(s.acc.live_at_exit().count, 1u);
  EXPECT_EQ(s.acc.live_at_exit().bytes, 3 * MiB);
  EXPECT_EQ(s.acc.cached_at_exit().bytes, 20 * MiB);
}

// By device, the same allocations as live_at_exit(): tensors rather than the segments they sit in,
// and neither pinned host memory nor frees.
TEST(FrameworkAccounting, LiveByDeviceSplitsLiveAtExit) {
  Stream s;
  attach(s, true);
  s.alloc(Kind::Linear, 0x100000, 20 * MiB);
  framework(s, Op::SegmentAlloc, 0x100000, 20 * MiB);
  framework(s, Op::TensorAlloc, 0x100000, 4000);
  framework(s, Op::TensorAlloc, 0x101000, 3 * MiB);
  s.alloc(Kind::Linear, 0x9000000, 32 * MiB, 1);
  s.alloc(Kind::Linear, 0xa000000, 1 * MiB, 1);
  s.free(Kind::Linear, 0xa000000);
  s.alloc(Kind::HostPinned, 0x7000000, 5 * MiB);
  const auto live = s.acc.live_by_device();
  ASSERT_EQ(live.size(), 2u);
  EXPECT_EQ(live.at(0).count, 2u);
  EXPECT_EQ(live.at(0).bytes, 3 * MiB + 4000);
  EXPECT_EQ(live.at(1).count, 1u);
  EXPECT_EQ(live.at(1).bytes, 32 * MiB);
  EXPECT_EQ(s.acc.live_at_exit().count, 3u);
  EXPECT_EQ(s.acc.live_at_exit().bytes, 35 * MiB + 4000);
}

TEST(FrameworkAccounting, AFreeThatWaitsOnAStreamIsPendingUntilItCompletes) {
  Stream s;
  attach(s, true);
  framework(s, Op::SegmentAlloc, 0x100000, 2 * MiB);
  framework(s, Op::TensorAlloc, 0x100000, 1000);
  framework(s, Op::TensorFreeRequested, 0x100000, 1000);
  framework(s, Op::TensorAlloc, 0x100400, 500);  // the completion did not come next: pending
  EXPECT_EQ(fw(s).pending_free.current, 1000u);
  EXPECT_EQ(fw(s).pending_free.peak, 1000u);
  EXPECT_EQ(fw(s).allocated.current, 1500u);  // still allocated until the free completes
  framework(s, Op::TensorFreeCompleted, 0x100000, 1000);
  EXPECT_EQ(fw(s).pending_free.current, 0u);
  EXPECT_EQ(fw(s).allocated.current, 500u);
}

TEST(FrameworkAccounting, DriverMemoryOutsideTheFrameworkHasItsOwnPeak) {
  Stream s;
  attach(s, true);
  s.alloc(Kind::Linear, 0x100000, 20 * MiB, 0, 1);
  framework(s, Op::SegmentAlloc, 0x100000, 20 * MiB, 0, 1);  // a segment: never outside
  EXPECT_EQ(fw(s).outside.peak, 0u);
  s.alloc(Kind::Linear, 0x9000000, 32 * MiB, 0, 2);  // cuBLAS's workspace, another thread
  const uint64_t workspace_at = s.tick() - 1;
  framework(s, Op::TensorAlloc, 0x100000, 1000, 0, 1);  // thread 2 is unpaired: its peak waits
  EXPECT_EQ(fw(s).outside.peak, 0u);
  s.free(Kind::Linear, 0x9000000, 3);                   // freed before its thread said more
  framework(s, Op::TensorAlloc, 0x100400, 1000, 0, 2);  // thread 2's next event: no segment
  // The workspace was outside: it enters the peak with the figure it made, at its own time.
  EXPECT_EQ(fw(s).outside.current, 0u);
  EXPECT_EQ(fw(s).outside.peak, 32 * MiB);
  EXPECT_EQ(fw(s).outside_peak_ns, workspace_at);
}

TEST(FrameworkAccounting, SeedsCountOnceAndAPartialUnmapSplitsARange) {
  Stream s;
  attach(s, true);
  framework(s, Op::SegmentMap, 0x100000, 8 * MiB);
  framework(s, Op::SegmentMap, 0x100000, 8 * MiB, 0, 1, kSeeded);  // the snapshot repeats it
  framework(s, Op::TensorAlloc, 0x100000, 100);
  framework(s, Op::TensorAlloc, 0x100000, 100, 0, 1, kSeeded);
  EXPECT_EQ(fw(s).reserved.current, 8 * MiB);
  EXPECT_EQ(fw(s).allocated.current, 100u);
  framework(s, Op::SegmentUnmap, 0x100000 + 2 * MiB, 2 * MiB);
  const auto segs = s.acc.framework_segments();
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].size, 2 * MiB);
  EXPECT_EQ(segs[1].address, 0x100000 + 4 * MiB);
  EXPECT_EQ(segs[1].size, 4 * MiB);
  EXPECT_EQ(fw(s).reserved.current, 6 * MiB);
}

TEST(FrameworkAccounting, AFailedSelfCheckDiscardsTheFrameworkLevelOnly) {
  Stream s;
  attach(s, true);
  s.alloc(Kind::Linear, 0x100000, 2 * MiB);
  framework(s, Op::SegmentAlloc, 0x100000, 2 * MiB);
  framework(s, Op::TensorAlloc, 0x100000, 4093);
  attach(s, false, FrameworkRefusal::SelfCheckFailed);
  EXPECT_FALSE(fw(s).attached);
  EXPECT_EQ(fw(s).allocated.current, 0u);
  EXPECT_TRUE(s.acc.live_tensors().empty());
  EXPECT_EQ(s.acc.devices().at(0).reserved.current, 2 * MiB);
  EXPECT_EQ(s.acc.live_at_exit().bytes, 2 * MiB);  // the driver level is untouched
  EXPECT_EQ(s.acc.framework().refusal, FrameworkRefusal::SelfCheckFailed);
}

TEST(Accounting, LinearPeakIsTheMaximumOverTheEventOrder) {
  Stream s;
  s.alloc(Kind::Linear, 0x1000, 10 * MiB);
  s.alloc(Kind::Linear, 0x2000, 20 * MiB);
  s.free(Kind::Linear, 0x1000);
  s.alloc(Kind::Linear, 0x3000, 5 * MiB);
  const auto& d = s.dev();
  EXPECT_EQ(d.allocated.current, 25 * MiB);
  EXPECT_EQ(d.allocated.peak, 30 * MiB);
  EXPECT_EQ(d.reserved.peak, 30 * MiB);
  EXPECT_EQ(d.kind(Kind::Linear).allocs, 3u);
  EXPECT_EQ(d.kind(Kind::Linear).frees, 1u);
  EXPECT_EQ(d.alloc_count, 3u);
  EXPECT_EQ(d.free_count, 1u);
  EXPECT_EQ(d.allocated_peak_ns, 2u);  // the second event reached the peak
}

TEST(Accounting, ManagedAndPinnedStayOutOfDeviceTotals) {
  Stream s;
  s.alloc(Kind::Linear, 0x1000, 100);
  s.alloc(Kind::Array, 0x2000, 50);
  s.alloc(Kind::Managed, 0x3000, 30);
  s.alloc(Kind::HostPinned, 0x4000, 20, -1);
  const auto& d = s.dev();
  EXPECT_EQ(d.allocated.current, 150u);
  EXPECT_EQ(d.reserved.current, 150u);
  EXPECT_EQ(d.kind(Kind::Managed).bytes.current, 30u);
  EXPECT_EQ(d.alloc_count, 3u);  // pinned host memory is counted apart
  EXPECT_EQ(s.acc.host_pinned().current, 20u);
  EXPECT_EQ(s.acc.host_pinned_allocs(), 1u);
  s.free(Kind::HostPinned, 0x4000);
  EXPECT_EQ(s.acc.host_pinned().current, 0u);
  EXPECT_EQ(s.acc.host_pinned().peak, 20u);
  EXPECT_EQ(s.acc.live_at_exit().count, 3u);
  EXPECT_EQ(s.acc.live_at_exit().bytes, 180u);
}

TEST(Accounting, PoolReservedFollowsDriverReadings) {
  Stream s;
  s.alloc(Kind::Pool, 0xa000, 1 * MiB, 0, 1, /*pool*/ 0x77, /*reserved*/ 2 * MiB);
  s.alloc(Kind::Pool, 0xb000, 2 * MiB, 0, 1, 0x77, 4 * MiB);
  EXPECT_EQ(s.dev().allocated.current, 3 * MiB);
  EXPECT_EQ(s.dev().reserved.current, 4 * MiB);
  s.free(Kind::Pool, 0xa000);
  s.free(Kind::Pool, 0xb000);
  EXPECT_EQ(s.dev().allocated.current, 0u);
  EXPECT_EQ(s.dev().reserved.current, 4 * MiB);  // a free does not shrink the pool
  s.pool_reserved(0x77, 0);                    // a synchronisation did
  EXPECT_EQ(s.dev().reserved.current, 0u);
  EXPECT_EQ(s.dev().reserved.peak, 4 * MiB);
  EXPECT_EQ(s.dev().pool_reserved.peak, 4 * MiB);
  EXPECT_EQ(s.dev().kind(Kind::Pool).bytes.peak, 3 * MiB);
}

TEST(Accounting, PoolReservedIsSummedOverThePoolsOfADevice) {
  Stream s;
  s.pool_create(0x1);
  s.pool_create(0x2);
  s.alloc(Kind::Pool, 0xa000, 1 * MiB, 0, 1, 0x1, 2 * MiB);
  s.alloc(Kind::Pool, 0xb000, 3 * MiB, 0, 1, 0x2, 4 * MiB);
  EXPECT_EQ(s.dev().pool_reserved.current, 6 * MiB);
  s.pool_reserved(0x1, 0);
  EXPECT_EQ(s.dev().pool_reserved.current, 4 * MiB);
}

TEST(Accounting, DestroyingAPoolReleasesItsAllocations) {
  Stream s;
  s.pool_create(0x5);
  s.alloc(Kind::Pool, 0xa000, 1 * MiB, 0, 1, 0x5, 2 * MiB);
  s.alloc(Kind::Pool, 0xb000, 1 * MiB, 0, 1, 0x5, 2 * MiB);
  s.alloc(Kind::Pool, 0xc000, 1 * MiB, 0, 1, 0x9, 2 * MiB);  // another pool
  s.free(Kind::Pool, 0xa000);
  s.pool_destroy(0x5);
  const auto& d = s.dev();
  EXPECT_EQ(d.kind(Kind::Pool).bytes.current, 1 * MiB);
  EXPECT_EQ(d.pool_reserved.current, 2 * MiB);
  EXPECT_EQ(d.released_by_pool_destroy, 1u);
  EXPECT_EQ(d.kind(Kind::Pool).frees, 1u);  // destroy is not a free call
  EXPECT_EQ(s.acc.live_at_exit().count, 1u);
}

TEST(Accounting, VmmPhysicalStaysUntilReleasedAndUnmapped) {
  Stream s;
  s.vmm_create(0x100, 4 * MiB);
  s.vmm_map(0x7000000, 4 * MiB, 0x100);
  EXPECT_EQ(s.dev().allocated.current, 4 * MiB);
  EXPECT_EQ(s.dev().reserved.current, 4 * MiB);
  s.vmm_release(0x100);  // release while mapped: memory stays
  EXPECT_EQ(s.dev().vmm_physical.current, 4 * MiB);
  EXPECT_EQ(s.dev().kind(Kind::Vmm).frees, 1u);
  EXPECT_EQ(s.acc.live_at_exit().count, 1u);
  s.vmm_unmap(0x7000000, 4 * MiB);
  EXPECT_EQ(s.dev().vmm_physical.current, 0u);
  EXPECT_EQ(s.dev().allocated.current, 0u);
  EXPECT_EQ(s.dev().reserved.peak, 4 * MiB);
  EXPECT_EQ(s.acc.live_at_exit().count, 0u);
}

TEST(Accounting, OneUnmapCoversSeveralMappings) {
  Stream s;
  s.vmm_create(0x200, 4 * MiB);
  s.vmm_map(0x8000000, 2 * MiB, 0x200);
  s.vmm_map(0x8200000, 2 * MiB, 0x200);
  s.vmm_map(0x9000000, 2 * MiB, 0x200);  // outside the unmapped range
  EXPECT_EQ(s.dev().kind(Kind::Vmm).bytes.current, 6 * MiB);
  s.vmm_unmap(0x8000000, 4 * MiB);
  EXPECT_EQ(s.dev().kind(Kind::Vmm).bytes.current, 2 * MiB);
  s.vmm_release(0x200);
  EXPECT_EQ(s.dev().vmm_physical.current, 4 * MiB);  // still mapped at 0x9000000
  s.vmm_unmap(0x9000000, 2 * MiB);
  EXPECT_EQ(s.dev().vmm_physical.current, 0u);
  EXPECT_EQ(s.dev().kind(Kind::Vmm).bytes.peak, 6 * MiB);
}

TEST(Accounting, UnknownFreesAreCountedNeverNegative) {
  Stream s;
  s.alloc(Kind::Linear, 0x1000, 100);
  s.free(Kind::Linear, 0x9999);
  s.free(Kind::Linear, 0);  // NULL: a no-op
  s.vmm_release(0x4242);
  EXPECT_EQ(s.acc.unknown_frees(), 2u);
  EXPECT_EQ(s.dev().allocated.current, 100u);
}

TEST(Accounting, RefusedReleaseIsUndoneForItsThreadOnly) {
  Stream s;
  s.alloc(Kind::Linear, 0x1000, 100);
  s.alloc(Kind::Linear, 0x2000, 50);
  s.free(Kind::Linear, 0x1000, /*tid*/ 7);
  s.free(Kind::Linear, 0x2000, /*tid*/ 8);
  s.refused(0x1000, 7);
  EXPECT_EQ(s.dev().allocated.current, 100u);
  EXPECT_EQ(s.dev().free_count, 1u);
  EXPECT_EQ(s.acc.failed_releases(), 1u);
  s.free(Kind::Linear, 0x5555, 9);
  s.refused(0x5555, 9);
  EXPECT_EQ(s.acc.unknown_frees(), 0u);
  s.vmm_create(0x300, 2 * MiB);
  s.vmm_map(0xa000000, 2 * MiB, 0x300);
  s.vmm_unmap(0xa000000, 2 * MiB, 3);
  s.refused(0xa000000, 3);
  EXPECT_EQ(s.dev().kind(Kind::Vmm).bytes.current, 2 * MiB);
}

TEST(Accounting, FailedAllocationsCountOnTheirDevice) {
  Stream s;
  s.fail(Kind::Linear, 1ull << 40, 1);
  s.fail(Kind::Pool, 1ull << 40, 1);
  EXPECT_EQ(s.dev(1).failed_alloc_count, 2u);
  EXPECT_EQ(s.dev(1).alloc_count, 0u);
  ASSERT_EQ(s.acc.failed_allocations().size(), 2u);
  EXPECT_EQ(s.acc.failed_allocations()[0].size, 1ull << 40);
}

TEST(Accounting, AnAddressHandedOutTwiceReplacesTheStaleEntry) {
  Stream s;
  s.alloc(Kind::Linear, 0x1000, 100);
  s.alloc(Kind::Linear, 0x1000, 40);  // its free happened outside our view
  EXPECT_EQ(s.dev().allocated.current, 40u);
  EXPECT_EQ(s.acc.live_at_exit().count, 1u);
}

TEST(Accounting, DevicesAreSeparate) {
  Stream s;
  s.alloc(Kind::Linear, 0x1000, 100, 0);
  s.alloc(Kind::Linear, 0x2000, 200, 1);
  s.free(Kind::Linear, 0x2000);
  EXPECT_EQ(s.dev(0).allocated.current, 100u);
  EXPECT_EQ(s.dev(1).allocated.current, 0u);
  EXPECT_EQ(s.dev(1).allocated.peak, 200u);
}

TEST(Summary, HasTheContractKeys) {
  Stream s;
  s.alloc(Kind::Linear, 0x1000, 100);
  SummaryContext ctx;
  ctx.device_names[0] = "Dev";
  auto j = to_json(build_summary(s.acc, ctx));
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["clean_exit"], true);
  const auto& d = j["devices"][0];
  EXPECT_EQ(d["name"], "Dev");
  EXPECT_EQ(d["allocated_bytes"]["peak"], 100);
  for (const char* k : {"linear", "pool", "vmm", "array", "managed"}) {
    for (const char* f : {"current", "peak", "allocs", "frees"}) EXPECT_TRUE(d["by_kind"][k].contains(f)) << k << f;
  }
  EXPECT_TRUE(d["by_kind"]["pool"]["reserved"].contains("peak"));
  EXPECT_TRUE(d["by_kind"]["vmm"]["physical"].contains("peak"));
  for (const char* k : {"alloc_count", "free_count", "failed_alloc_count", "total_bytes"}) EXPECT_TRUE(d.contains(k));
  EXPECT_EQ(j["events"]["lost"], 0);
  EXPECT_EQ(j["live_at_exit"]["bytes"], 100);
  EXPECT_TRUE(j.contains("host_pinned_bytes"));
  EXPECT_TRUE(j.contains("unknown_frees"));
}

}  // namespace
}  // namespace gmp
