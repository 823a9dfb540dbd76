// The first pass's aggregators (tools/analysis: peak_watch, tensor_peak_watch, marker_log,
// nvml_peaks, device_limit_watch, first_memory, process_levels, exit_sets) each fed by hand, with
// no trace and no run directory, and the step that decides where each figure comes from
// (figure_sources). Every figure expected is worked out in the comments.
#include <gtest/gtest.h>

#include "device_limit_watch.h"
#include "exit_sets.h"
#include "figure_sources.h"
#include "first_memory.h"
#include "marker_log.h"
#include "nvml_peaks.h"
#include "peak_watch.h"
#include "process_levels.h"
#include "synthetic_run.h"
#include "tensor_peak_watch.h"

namespace gmp::analysis {
namespace {

constexpr uint64_t M = 1ull << 20;

// The replay's side: applies each event to the accounting, then hands the step to the aggregators,
// positions counted from 1 and times since 0.
struct Feed {
  Accounting acc;
  uint64_t index = 0;

  template <typename... Aggregators>
  void operator()(const Event& e, Aggregators&... aggregators) {
    acc.apply(e);
    const ReplayStep step{e, ++index, e.timestamp_ns, acc};
    (aggregators.add(step), ...);
  }
};

Event alloc(uint64_t t, uint64_t address, uint64_t size, int device = 0) {
  return test::linear_alloc_event(t, 1, address, size, 0, device);
}
Event free_at(uint64_t t, uint64_t address) { return test::linear_free_event(t, 1, address); }
Event tensor(uint64_t t, Op op, uint64_t address, uint64_t size, int device = 0) {
  return test::framework_event(t, 1, op, address, size, device);
}
Event attach(uint64_t t, bool attached) {
  Event e = tensor(t, Op::FrameworkAttach, 0, 0, -1);
  e.result = attached ? 1 : 0;
  return e;
}
Event of_op(uint64_t t, Op op, int device) {
  Event e{};
  e.timestamp_ns = t;
  e.op = op;
  e.device = static_cast<int16_t>(device);
  return e;
}
Event sample(uint64_t t, int device, uint64_t device_used, uint64_t process) {
  Event e = of_op(t, Op::Sample, device);
  e.size = device_used;
  e.value = process;
  return e;
}
Event device_limit(uint64_t t, int device, uint64_t limit, uint64_t context) {
  Event e = of_op(t, Op::DeviceLimit, device);
  e.value = limit;
  e.size = context;
  return e;
}
Event refusal(uint64_t t, int device, uint64_t limit, uint64_t context, uint64_t before, uint64_t asked) {
  Event e = device_limit(t, device, limit, context);
  e.result = kOutOfMemory;
  e.object = before;
  e.address = asked;
  return e;
}

size_t kind(Kind k) { return static_cast<size_t>(k); }

TEST(PeakWatch, EachDevicesPeaksWithTheEventThatSetThem) {
  Feed feed;
  PeakWatch peaks;
  peaks.start(feed.acc, 0, 0);
  feed(alloc(10, 0xA000, 10 * M), peaks);      // 1: device 0 at 10M
  feed(alloc(20, 0xB000, 5 * M, 1), peaks);    // 2: device 1 at 5M
  feed(free_at(30, 0xA000), peaks);            // 3: device 0 at 0
  feed(sample(35, 0, 64 * M, 32 * M), peaks);  // 4: no memory moved
  feed(alloc(40, 0xC000, 4 * M), peaks);       // 5: device 0 at 4M, below its peak
  feed(alloc(50, 0xD000, 7 * M, 1), peaks);    // 6: device 1 at 12M, its peak
  const DevicePeaks d0 = peaks.of(0), d1 = peaks.of(1);
  EXPECT_EQ(d0.allocated.bytes, 10 * M);
  EXPECT_EQ(d0.allocated.at_ns, 10u);
  EXPECT_EQ(d0.allocated.event_index, 1u);
  EXPECT_EQ(d0.allocated.kind_bytes[kind(Kind::Linear)], 10 * M);
  EXPECT_EQ(d0.reserved.bytes, 10 * M);  // linear memory is reserved as it is allocated
  EXPECT_EQ(d0.reserved.event_index, 1u);
  EXPECT_EQ(d1.allocated.bytes, 12 * M);
  EXPECT_EQ(d1.allocated.at_ns, 50u);
  EXPECT_EQ(d1.allocated.event_index, 6u);
  EXPECT_EQ(peaks.of(2).allocated.bytes, 0u);  // never seen
  EXPECT_EQ(peaks.of(2).allocated.event_index, 0u);
}

// A window that starts with memory held starts its peaks there: a lower level after it is no peak.
TEST(PeakWatch, AWindowsPeaksStartAtTheLevelWhereItStarts) {
  Feed feed;
  feed.acc.apply(alloc(10, 0xA000, 8 * M));
  feed.acc.apply(free_at(20, 0xA000));
  feed.acc.apply(alloc(30, 0xB000, 6 * M));
  feed.index = 3;
  PeakWatch peaks;
  peaks.start(feed.acc, 100, 3);           // 6M held at the start, at 100 ns
  feed(free_at(110, 0xB000), peaks);       // 4: 0
  feed(alloc(120, 0xC000, 5 * M), peaks);  // 5: 5M, below the start's 6M
  EXPECT_EQ(peaks.of(0).allocated.bytes, 6 * M);
  EXPECT_EQ(peaks.of(0).allocated.at_ns, 100u);
  EXPECT_EQ(peaks.of(0).allocated.event_index, 3u);
  feed(alloc(130, 0xD000, 2 * M), peaks);  // 6: 7M
  EXPECT_EQ(peaks.of(0).allocated.bytes, 7 * M);
  EXPECT_EQ(peaks.of(0).allocated.event_index, 6u);
}

TEST(TensorPeakWatch, TheTensorsPeakAndADetachVoidsIt) {
  Feed feed;
  TensorPeakWatch tensors;
  tensors.start(feed.acc, 0);
  feed(attach(1, true), tensors);                                   // 1
  feed(tensor(2, Op::TensorAlloc, 0x1000, 4000), tensors);          // 2: 4000
  feed(tensor(3, Op::TensorAlloc, 0x2000, 3 * M), tensors);         // 3: 3M + 4000, the peak
  feed(tensor(4, Op::TensorFreeCompleted, 0x1000, 4000), tensors);  // 4: 3M
  feed(tensor(5, Op::TensorAlloc, 0x3000, 2000), tensors);          // 5: 3M + 2000
  feed(alloc(6, 0xA000, 64 * M), tensors);                          // 6: driver memory is not tensors
  EXPECT_EQ(tensors.of(0).bytes, 3 * M + 4000);
  EXPECT_EQ(tensors.of(0).event_index, 3u);
  EXPECT_EQ(tensors.of(1).event_index, 0u);  // no tensors there
  feed(attach(7, false), tensors);           // detached: what the bridge said cannot be trusted
  EXPECT_EQ(tensors.of(0).bytes, 0u);
  EXPECT_EQ(tensors.of(0).event_index, 0u);
}

TEST(MarkerLog, AlertsFailuresOomsAndCleanupsAsMarkersBounded) {
  Feed feed;
  MarkerLog log(3);
  Event fired = of_op(10, Op::Alert, 0);
  fired.result = 1;
  fired.value = static_cast<uint64_t>(AlertType::Critical);
  fired.size = 900 * M;
  fired.object = 950 * M;
  fired.address = 972 * M;
  feed(fired, log);
  Event failed = alloc(20, 0xA000, 2048 * M);
  failed.result = kOutOfMemory;
  feed(failed, log);
  feed(alloc(25, 0xB000, 1 * M), log);  // succeeded: no marker
  Event cleanup = of_op(30, Op::Cleanup, 0);
  cleanup.size = 64 * M;
  cleanup.value = 2;
  feed(cleanup, log);
  feed(of_op(40, Op::OomBundle, 0), log);  // over the bound of 3: counted
  feed(of_op(50, Op::OomRecovered, 0), log);
  const std::vector<Marker>& m = log.markers();
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(log.dropped(), 2u);
  EXPECT_EQ(m[0].type, Marker::Type::AlertFired);
  EXPECT_EQ(m[0].at_ns, 10u);
  EXPECT_EQ(m[0].alert, AlertType::Critical);
  EXPECT_EQ(m[0].size, 900 * M);
  EXPECT_EQ(m[0].reserved, 950 * M);
  EXPECT_EQ(m[0].threshold, 972 * M);
  EXPECT_EQ(m[1].type, Marker::Type::AllocFailed);
  EXPECT_EQ(m[1].size, 2048 * M);
  EXPECT_EQ(m[1].result, kOutOfMemory);
  EXPECT_EQ(m[1].api, Api::cuMemAlloc_v2);
  EXPECT_EQ(m[1].device, 0);
  EXPECT_EQ(m[2].type, Marker::Type::Cleanup);
  EXPECT_EQ(m[2].at_ns, 30u);
  EXPECT_EQ(m[2].size, 64 * M);
  EXPECT_EQ(m[2].threshold, 2u);  // pools trimmed
}

TEST(NvmlPeaks, TheHighestOfEachFigureAndOnlyNamedUsage) {
  Feed feed;
  NvmlPeaks nvml;
  feed(sample(10, 0, 5000 * M, 1000 * M), nvml);
  feed(sample(20, 0, 4000 * M, UINT64_MAX), nvml);  // NVML did not name the process
  feed(sample(30, 0, 6000 * M, 500 * M), nvml);
  feed(sample(40, 1, 300 * M, UINT64_MAX), nvml);
  feed(sample(50, -1, 9000 * M, 9000 * M), nvml);  // no device: ignored
  ASSERT_EQ(nvml.devices().size(), 2u);
  EXPECT_EQ(nvml.devices().at(0).device_used, 6000 * M);
  EXPECT_EQ(nvml.devices().at(0).process, 1000 * M);
  EXPECT_EQ(nvml.devices().at(1).device_used, 300 * M);
  EXPECT_EQ(nvml.devices().at(1).process, 0u);
}

TEST(DeviceLimitWatch, TheLimitsPeakAndItsRefusals) {
  Feed feed;
  DeviceLimitWatch limits;
  feed(alloc(10, 0xA000, 10 * M), limits);  // before any limit: nothing to count
  EXPECT_TRUE(limits.devices().empty());
  feed(device_limit(20, 0, 24 * M, 2 * M), limits);  // 10M reserved + 2M context
  EXPECT_EQ(limits.devices().at(0).peak, 12 * M);
  feed(alloc(30, 0xB000, 5 * M), limits);                       // 15M + 2M
  feed(free_at(40, 0xB000), limits);                            // 10M + 2M: the peak stays
  feed(refusal(50, 0, 24 * M, 3 * M, 15 * M, 20 * M), limits);  // 15M + 20M asked: 11M over
  feed(refusal(60, 0, 24 * M, 3 * M, 13 * M, 30 * M), limits);  // only the first excess is kept
  feed(alloc(70, 0xC000, 1 * M, 1), limits);                    // device 1 has no limit
  ASSERT_EQ(limits.devices().size(), 1u);
  const DeviceLimitFigures& l = limits.devices().at(0);
  EXPECT_EQ(l.limit, 24 * M);
  EXPECT_EQ(l.context, 3 * M);
  EXPECT_EQ(l.peak, 17 * M);
  EXPECT_EQ(l.refusals, 2u);
  EXPECT_EQ(l.first_excess, 11 * M);
}

TEST(FirstMemory, TheFirstMomentADeviceHeldMemory) {
  Feed feed;
  FirstMemory first;
  first.start(feed.acc, 0);
  feed(sample(10, 0, 100 * M, 10 * M), first);
  Event failed = alloc(20, 0xA000, 1 * M);
  failed.result = kOutOfMemory;
  feed(failed, first);  // an allocation that failed holds nothing
  EXPECT_FALSE(first.at_ns());
  feed(alloc(30, 0xA000, 1 * M), first);
  feed(alloc(40, 0xB000, 1 * M), first);
  ASSERT_TRUE(first.at_ns());
  EXPECT_EQ(*first.at_ns(), 30u);
}

TEST(FirstMemory, MemoryHeldWhereTheWindowStartsWasFirstHeldThere) {
  Feed feed;
  feed.acc.apply(alloc(10, 0xA000, 1 * M));
  FirstMemory first;
  first.start(feed.acc, 500);
  feed(alloc(600, 0xB000, 1 * M), first);
  EXPECT_EQ(first.at_ns().value_or(0), 500u);
}

TEST(ProcessLevels, TotalsOverTheDevicesAtBothLevels) {
  Feed feed;
  feed.acc.apply(alloc(1, 0xA000, 3 * M, 1));
  ProcessLevels levels;
  levels.start(feed.acc);
  EXPECT_EQ(levels.allocated(), 3 * M);
  feed(alloc(10, 0xB000, 10 * M), levels);  // 13M over devices 0 and 1
  feed(attach(20, true), levels);
  EXPECT_FALSE(levels.tensors_recorded());
  feed(tensor(30, Op::TensorAlloc, 0xB000, 4 * M), levels);
  feed(tensor(40, Op::TensorAlloc, 0xC000, 1 * M, 1), levels);
  EXPECT_EQ(levels.allocated(), 13 * M);
  EXPECT_EQ(levels.tensors(), 5 * M);
  EXPECT_TRUE(levels.tensors_recorded());
  feed(free_at(50, 0xA000), levels);
  EXPECT_EQ(levels.allocated(), 10 * M);
}

TEST(ExitSets, LeaksPinnedMemoryAndTensorsApart) {
  Accounting acc;
  acc.apply(attach(1, true));
  acc.apply(alloc(2, 0x100000, 20 * M));  // the framework's segment: cache, not a leak
  acc.apply(tensor(3, Op::SegmentAlloc, 0x100000, 20 * M));
  acc.apply(tensor(4, Op::TensorAlloc, 0x100000, 3 * M));
  acc.apply(alloc(5, 0xA000000, 10 * M));
  acc.apply(alloc(6, 0xB000000, 4 * M));
  Event pinned = alloc(7, 0x7000000, 5 * M, -1);
  pinned.kind = Kind::HostPinned;
  pinned.api = Api::cuMemAllocHost_v2;
  acc.apply(pinned);
  const ExitSets exit = live_at_exit(acc, 1);
  EXPECT_EQ(exit.leaks.total.bytes, 14 * M);
  EXPECT_EQ(exit.leaks.total.count, 2u);
  ASSERT_EQ(exit.leaks.largest.size(), 1u);  // the one largest kept
  EXPECT_EQ(exit.leaks.largest[0].size, 10 * M);
  EXPECT_EQ(exit.pinned_at_exit.total.bytes, 5 * M);
  EXPECT_EQ(exit.pinned_at_exit.total.count, 1u);
  EXPECT_EQ(exit.tensor_leaks.total.bytes, 3 * M);
  EXPECT_EQ(exit.tensor_leaks.total.count, 1u);
}

TEST(FigureSources, SummaryForAnIncompleteTraceReplayForAWindow) {
  reader::RunDirectory run;
  const reader::Window whole;
  FigureSources s = figure_sources(run, whole);  // a whole trace with its summary.json
  EXPECT_EQ(s.totals, FigureSource::Replay);
  EXPECT_EQ(s.framework, FigureSource::Summary);
  run.events.written = 10;  // summary.json counted 10 written, the trace holds 8
  run.events.in_trace = 8;
  s = figure_sources(run, whole);
  EXPECT_EQ(s.totals, FigureSource::Summary);
  EXPECT_EQ(s.framework, FigureSource::Summary);
  reader::Window window;
  window.since_ns = 1000;
  s = figure_sources(run, window);  // summary.json's figures are the whole run's
  EXPECT_EQ(s.totals, FigureSource::Replay);
  EXPECT_EQ(s.framework, FigureSource::Replay);
  reader::RunDirectory killed;  // no summary.json: rebuilt from the trace, which is all there is
  killed.summary_rebuilt = true;
  killed.events.final_flush = false;
  s = figure_sources(killed, whole);
  EXPECT_EQ(s.totals, FigureSource::Replay);
  EXPECT_EQ(s.framework, FigureSource::RebuiltSummary);
}

DeviceFigures summary_device(int device, uint64_t allocated_peak, const char* name) {
  DeviceFigures f;
  f.stats.device = device;
  f.stats.allocated.peak = allocated_peak;
  f.stats.allocated_peak_ns = 700;
  f.stats.framework.attached = true;
  f.stats.framework.allocated.peak = 2 * M;
  f.name = name;
  return f;
}

TEST(FigureSources, TheSummarysTotalsKeepTheReplaysNvmlAndPositions) {
  RunAnalysis run;
  DeviceAnalysis& d = run.devices[0];
  d.final_stats.allocated.peak = 8 * M;
  d.final_stats.nvml.process_used = 5 * M;
  d.allocated_peak = {8 * M, 300, 42, {}};
  run.run.figures.devices = {summary_device(0, 9 * M, "GPU zero"), summary_device(1, 1 * M, "GPU one")};
  take_figures(run, {FigureSource::Summary, FigureSource::Summary});
  ASSERT_EQ(run.devices.size(), 2u);  // the device only the summary has is added
  const DeviceAnalysis& d0 = run.devices.at(0);
  EXPECT_EQ(d0.final_stats.allocated.peak, 9 * M);
  EXPECT_EQ(d0.final_stats.nvml.process_used, 5 * M);
  EXPECT_EQ(d0.allocated_peak.bytes, 9 * M);
  EXPECT_EQ(d0.allocated_peak.at_ns, 700u);
  EXPECT_EQ(d0.allocated_peak.event_index, 42u);  // where the replay saw it: what was live there
  EXPECT_EQ(d0.framework.allocated.peak, 2 * M);
  EXPECT_EQ(d0.name, "GPU zero");
  EXPECT_EQ(run.devices.at(1).name, "GPU one");
}

TEST(FigureSources, AWindowsFrameworkFiguresAreTheReplaysInItsClock) {
  RunAnalysis run;
  run.start_ns = 1'000'000;
  DeviceAnalysis& d = run.devices[0];
  d.final_stats.framework.attached = true;
  d.final_stats.framework.allocated.peak = 3 * M;
  d.final_stats.framework.allocated_peak_ns = 1'000'500;  // the event clock
  run.run.figures.devices = {summary_device(0, 9 * M, "GPU zero"), summary_device(1, 1 * M, "GPU one")};
  take_figures(run, {FigureSource::Replay, FigureSource::Replay});
  ASSERT_EQ(run.devices.size(), 1u);  // the summary adds no device to a window
  EXPECT_EQ(run.devices.at(0).framework.allocated.peak, 3 * M);
  EXPECT_EQ(run.devices.at(0).framework.allocated_peak_ns, 500u);  // since the profiler started
  EXPECT_EQ(run.devices.at(0).final_stats.allocated.peak, 0u);     // the replay's, untouched
  EXPECT_EQ(run.devices.at(0).name, "GPU zero");
}

}  // namespace
}  // namespace gmp::analysis
