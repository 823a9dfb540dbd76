// The bounded trace (docs/trace-format.md §Segments and checkpoints): the accounting's checkpoint
// round-trips exactly and refuses damage; the writer keeps its files within the cap, each kept
// segment starting from the state just before its first event; the reader, seeded from the first
// kept segment, ends in exactly the state of a replay of the whole stream.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "accounting.h"
#include "synthetic_run.h"
#include "held_dir.h"
#include "temp_dir.h"
#include "trace_format.h"
#include "trace_reader.h"
#include "trace_writer.h"

namespace gmp::test {
namespace {

Event with(Event e, Kind kind, Op op, Api api) {
  e.kind = kind;
  e.op = op;
  e.api = api;
  return e;
}

// A deterministic stream touching every table the accounting keeps: linear, pool (with its
// reserved bytes), pinned, VMM handles and mappings, framework tensors and segments, failed
// allocations, a release the driver refuses, several devices and threads.
std::vector<Event> varied_stream(size_t n, uint64_t seed = 7) {
  std::mt19937_64 rng(seed);
  std::vector<Event> out;
  std::vector<std::pair<uint64_t, Kind>> live;
  std::vector<uint64_t> tensors, handles;
  uint64_t ts = kStartNs, next_address = 0x7f0000000000;
  for (int d = 0; d < 2; ++d) {
    Event info{};
    info.timestamp_ns = ts;
    info.device = static_cast<int16_t>(d);
    info.size = 80ull << 30;
    info.op = Op::DeviceInfo;
    info.api = Api::Collector;
    out.push_back(info);
  }
  out.push_back(framework_event(ts, 1, Op::FrameworkAttach, 0, 0, 0, 0, 0, framework_version(2, 11, 0)));
  out.back().result = 1;
  out.push_back(framework_event(ts, 1, Op::SegmentAlloc, 0x500000000000, 1ull << 30));
  while (out.size() < n) {
    ts += 1 + rng() % 1000;
    const uint32_t thread = 100 + static_cast<uint32_t>(rng() % 4);
    const int device = static_cast<int>(rng() % 2);
    const uint64_t size = 512 * (1 + rng() % 4096);
    // Bounded live tables, as a steady program has: the checkpoints stay a few tens of KiB.
    uint64_t pick = rng() % 10;
    if (live.size() > 300 && pick < 4) pick = 4;
    if (tensors.size() > 300 && pick == 6) pick = 7;
    if (handles.size() > 50 && pick == 8) pick = 9;
    switch (pick) {
      case 0: case 1: {
        const uint64_t a = next_address += 1 << 22;
        out.push_back(linear_alloc_event(ts, thread, a, size, static_cast<uint32_t>(rng() % 50), device));
        live.emplace_back(a, Kind::Linear);
        break;
      }
      case 2: {
        const uint64_t a = next_address += 1 << 22;
        Event e = with(linear_alloc_event(ts, thread, a, size, 0, device), Kind::Pool, Op::Alloc, Api::cuMemAllocAsync);
        e.object = 0x900 + static_cast<uint64_t>(device);
        e.value = (64ull << 20) + (rng() % 4) * (2ull << 20);
        out.push_back(e);
        live.emplace_back(a, Kind::Pool);
        break;
      }
      case 3: {
        const uint64_t a = next_address += 1 << 22;
        out.push_back(with(linear_alloc_event(ts, thread, a, size, 0, -1), Kind::HostPinned, Op::Alloc,
                           Api::cuMemHostAlloc));
        live.emplace_back(a, Kind::HostPinned);
        break;
      }
      case 4: case 5: {
        if (live.empty()) break;
        const size_t i = rng() % live.size();
        Event e = linear_free_event(ts, thread, live[i].first);
        e.kind = live[i].second;
        out.push_back(e);
        if (rng() % 50 == 0) {  // refused: the allocation stays live
          Event f = with(e, e.kind, Op::ReleaseFailed, e.api);
          f.result = 1;
          out.push_back(f);
        } else {
          live.erase(live.begin() + static_cast<long>(i));
        }
        break;
      }
      case 6: {
        const uint64_t a = 0x500000000000 + (rng() % (1 << 16)) * 4096;
        if (std::find(tensors.begin(), tensors.end(), a) != tensors.end()) break;
        out.push_back(framework_event(ts, thread, Op::TensorAlloc, a, size, 0, 0, 7));
        tensors.push_back(a);
        break;
      }
      case 7: {
        if (tensors.empty()) break;
        const size_t i = rng() % tensors.size();
        out.push_back(framework_event(ts, thread, Op::TensorFreeRequested, tensors[i], 0));
        if (rng() % 3 != 0) out.push_back(framework_event(ts, thread, Op::TensorFreeCompleted, tensors[i], 0));
        tensors.erase(tensors.begin() + static_cast<long>(i));
        break;
      }
      case 8: {
        const uint64_t h = next_address += 1 << 22;
        Event c = with(linear_alloc_event(ts, thread, h, 2 << 20, 0, device), Kind::Vmm, Op::VmmCreate, Api::cuMemCreate);
        out.push_back(c);
        Event m = with(linear_alloc_event(ts, thread, h + 0x100000000000, 2 << 20, 0, device), Kind::Vmm, Op::VmmMap,
                       Api::cuMemMap);
        m.object = h;
        out.push_back(m);
        handles.push_back(h);
        break;
      }
      case 9: {
        if (rng() % 4 == 0 || handles.empty()) {
          Event f = linear_alloc_event(ts, thread, 0, 1ull << 40, 0, device);
          f.result = kOutOfMemory;
          out.push_back(f);
          break;
        }
        const uint64_t h = handles.back();
        handles.pop_back();
        Event u = with(linear_free_event(ts, thread, h + 0x100000000000), Kind::Vmm, Op::VmmUnmap, Api::cuMemUnmap);
        u.size = 2 << 20;
        out.push_back(u);
        out.push_back(with(linear_free_event(ts, thread, h), Kind::Vmm, Op::VmmRelease, Api::cuMemRelease));
        break;
      }
    }
  }
  out.resize(n);
  return out;
}

std::string state_after(const std::vector<Event>& events, size_t count) {
  Accounting acc;
  for (size_t i = 0; i < count; ++i) acc.apply(events[i]);
  return acc.save_checkpoint();
}

TEST(Checkpoint, RestoresExactlyTheStateAndReplaysOnIdentically) {
  const auto events = varied_stream(60'000);
  Accounting whole;
  std::vector<std::pair<size_t, std::string>> taken;
  for (size_t i = 0; i < events.size(); ++i) {
    if (i % 9973 == 0) taken.emplace_back(i, whole.save_checkpoint());
    whole.apply(events[i]);
  }
  const std::string final_state = whole.save_checkpoint();
  EXPECT_GT(whole.live_allocations().size(), 100u);
  EXPECT_GT(whole.live_tensors().size(), 100u);
  for (const auto& [at, bytes] : taken) {
    Accounting restored;
    ASSERT_TRUE(restored.restore_checkpoint(bytes.data(), bytes.size())) << at;
    EXPECT_EQ(restored.save_checkpoint(), bytes) << at;
    for (size_t i = at; i < events.size(); ++i) restored.apply(events[i]);
    EXPECT_EQ(restored.save_checkpoint(), final_state) << "replayed on from event " << at;
    EXPECT_EQ(restored.devices().at(0).allocated.peak, whole.devices().at(0).allocated.peak);
    EXPECT_EQ(restored.devices().at(1).framework.allocated.peak, whole.devices().at(1).framework.allocated.peak);
    EXPECT_EQ(restored.live_at_exit().bytes, whole.live_at_exit().bytes);
  }
}

TEST(Checkpoint, RefusesEveryTruncationAndSurvivesDamage) {
  const auto events = varied_stream(5'000);
  Accounting acc;
  for (const Event& e : events) acc.apply(e);
  const std::string bytes = acc.save_checkpoint();
  for (size_t len = 0; len < bytes.size(); len += 1 + len / 50) {
    Accounting cut;
    EXPECT_FALSE(cut.restore_checkpoint(bytes.data(), len)) << len;
    EXPECT_EQ(cut.events(), 0u);  // left empty
    EXPECT_TRUE(cut.devices().empty());
  }
  std::string longer = bytes + '\0';
  Accounting extra;
  EXPECT_FALSE(extra.restore_checkpoint(longer.data(), longer.size()));
  std::mt19937_64 rng(3);
  for (int round = 0; round < 300; ++round) {
    std::string damaged = bytes;
    for (int flips = 0; flips < 4; ++flips) damaged[rng() % damaged.size()] ^= static_cast<char>(1 + rng() % 255);
    Accounting a;
    if (a.restore_checkpoint(damaged.data(), damaged.size())) {
      for (size_t i = 0; i < 200; ++i) a.apply(events[i]);  // whatever it holds, it stays usable
    }
  }
}

uint64_t trace_bytes(const std::string& dir) {
  uint64_t sum = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (trace_segment_of(entry.path().filename().string())) sum += entry.file_size();
  }
  return sum;
}

struct Written {
  std::string final_state;
  uint64_t dropped_events = 0, dropped_segments = 0, segments = 0;
};

// The collector's order: a full segment is cut before the next event is applied.
Written write_trace(const std::string& dir, const std::vector<Event>& events, uint64_t cap) {
  const HeldDir held(dir);
  TraceWriter w;
  EXPECT_TRUE(w.open(held.dir, make_trace_header(4242, 0, kStartNs), cap));
  Accounting acc;
  for (size_t i = 0; i < events.size(); ++i) {
    if (w.segment_full()) w.start_segment(acc.save_checkpoint());
    acc.apply(events[i]);
    w.append(events[i]);
    if (w.buffered() == 4096) {
      EXPECT_TRUE(w.flush());
      if (cap != 0) {
        EXPECT_LE(trace_bytes(dir), cap);
      }
    }
  }
  EXPECT_TRUE(w.flush());
  EXPECT_FALSE(w.failed()) << w.error();
  EXPECT_EQ(w.written_events(), events.size());
  return {acc.save_checkpoint(), w.events_dropped(), w.segments_dropped(), w.segments_written()};
}

TEST(TraceSegments, ACappedTraceStaysWithinItsCapAndReplaysToTheExactState) {
  TempDir dir;
  const auto events = varied_stream(120'000);  // 7.3 MiB of records against a 1 MiB cap
  const Written w = write_trace(dir.path, events, 1 << 20);
  EXPECT_LE(trace_bytes(dir.path), 1u << 20);
  EXPECT_GT(w.dropped_segments, 50u);
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/trace.gmpt"));

  reader::TraceReader r;
  ASSERT_TRUE(r.open(dir.path)) << r.error();
  EXPECT_TRUE(r.starts_mid_run());
  EXPECT_EQ(r.first_event(), w.dropped_events);
  EXPECT_EQ(r.first_event() + r.records_in_file(), events.size());
  EXPECT_EQ(r.segments(), w.segments - w.dropped_segments);
  Accounting acc;
  ASSERT_TRUE(r.seed(acc)) << r.error();
  // The checkpoint is the state just before the first kept event, as a replay from the start has it.
  EXPECT_EQ(acc.save_checkpoint(), state_after(events, r.first_event()));
  Event e;
  uint64_t i = r.first_event();
  while (r.next(e)) {
    ASSERT_EQ(std::memcmp(&e, &events[i], sizeof e), 0) << i;
    acc.apply(e);
    ++i;
  }
  EXPECT_FALSE(r.failed()) << r.error();
  EXPECT_EQ(i, events.size());
  EXPECT_EQ(acc.save_checkpoint(), w.final_state);

  // Every kept segment can be read on its own, from its own checkpoint.
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    reader::TraceReader one;
    ASSERT_TRUE(one.open(entry.path().string())) << one.error();
    Accounting from;
    ASSERT_TRUE(one.seed(from));
    EXPECT_EQ(from.save_checkpoint(), state_after(events, one.first_event())) << entry.path();
  }
}

TEST(TraceSegments, UnboundedIsOneFileFromTheStart) {
  TempDir dir;
  const auto events = varied_stream(20'000);
  const Written w = write_trace(dir.path, events, 0);
  EXPECT_EQ(w.segments, 1u);
  EXPECT_EQ(trace_bytes(dir.path), 64 + 64 * events.size());
  reader::TraceReader r;
  ASSERT_TRUE(r.open(dir.path + "/trace.gmpt")) << r.error();
  EXPECT_FALSE(r.starts_mid_run());
  EXPECT_EQ(r.header().version, kTraceVersion);
  EXPECT_EQ(r.records_in_file(), events.size());
}

TEST(TraceSegments, ReadingStopsAtAMissingSegmentAndAtOneCutWhileStarting) {
  TempDir dir;
  const auto events = varied_stream(40'000);
  write_trace(dir.path, events, 0);  // reference count only
  TempDir capped;
  write_trace(capped.path, events, 1 << 20);
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(capped.path)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 4u);
  reader::TraceReader whole;
  ASSERT_TRUE(whole.open(capped.path));
  const uint64_t all = whole.records_in_file();

  // Killed while starting a segment: its header never made it; the segments before it are whole.
  const std::string cut = capped.path + "/" + names.back();
  std::filesystem::resize_file(cut, 40);
  reader::TraceReader r;
  ASSERT_TRUE(r.open(capped.path)) << r.error();
  EXPECT_NE(r.stopped_at().find("is truncated"), std::string::npos) << r.stopped_at();
  EXPECT_EQ(r.segments(), names.size() - 1);
  EXPECT_LT(r.records_in_file(), all);

  // A segment deleted from the middle: reading stops before the gap.
  std::filesystem::remove(capped.path + "/" + names[1]);
  reader::TraceReader gap;
  ASSERT_TRUE(gap.open(capped.path)) << gap.error();
  EXPECT_EQ(gap.segments(), 1u);
  EXPECT_NE(gap.stopped_at().find("is missing"), std::string::npos) << gap.stopped_at();
}

// A running process deletes its oldest segments as it writes: once opened, the kept segments are
// read whole even when their files go meanwhile (the reader used to open each again by its path).
TEST(TraceSegments, SegmentsDeletedAfterTheyWereOpenedAreReadWhole) {
  TempDir dir;
  const auto events = varied_stream(40'000);
  const Written w = write_trace(dir.path, events, 1 << 20);
  reader::TraceReader r;
  ASSERT_TRUE(r.open(dir.path)) << r.error();
  ASSERT_GE(r.segments(), 4u);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) std::filesystem::remove(entry.path());
  Accounting acc;
  ASSERT_TRUE(r.seed(acc)) << r.error();
  Event e;
  uint64_t read = 0;
  while (r.next(e)) {
    acc.apply(e);
    ++read;
  }
  EXPECT_FALSE(r.failed()) << r.error();
  EXPECT_EQ(r.first_event() + read, events.size());
  EXPECT_EQ(acc.save_checkpoint(), w.final_state);
  EXPECT_EQ(r.files_text(), trace_segment_name(static_cast<uint32_t>(w.dropped_segments)) + " to " +
                                trace_segment_name(static_cast<uint32_t>(w.segments - 1)));
}

TEST(TraceSegments, AVersion1TraceIsStillRead) {
  TempDir dir;
  TraceHeader h = make_trace_header(1, 0, kStartNs);
  h.version = 1;
  const Event e = linear_alloc_event(kStartNs + 5, 1, 0x1000, 4096, 0, 0);
  {
    std::ofstream out(dir.path + "/trace.gmpt", std::ios::binary);
    out.write(reinterpret_cast<const char*>(&h), sizeof h);
    out.write(reinterpret_cast<const char*>(&e), sizeof e);
  }
  reader::TraceReader r;
  ASSERT_TRUE(r.open(dir.path)) << r.error();
  Accounting acc;
  ASSERT_TRUE(r.seed(acc));
  Event got;
  ASSERT_TRUE(r.next(got));
  acc.apply(got);
  EXPECT_EQ(acc.devices().at(0).allocated.current, 4096u);
  EXPECT_FALSE(r.next(got));
}

TEST(TraceSegments, ALiveTableTooLargeForTheCapStopsTracingWithOneReason) {
  TempDir dir;
  std::vector<Event> events;
  for (uint64_t i = 0; i < 40'000; ++i) events.push_back(linear_alloc_event(kStartNs + i, 1, 0x1000 + i * 512, 512, 0, 0));
  const HeldDir held(dir.path);
  TraceWriter w;
  ASSERT_TRUE(w.open(held.dir, make_trace_header(1, 0, kStartNs), 1 << 20));
  Accounting acc;
  for (const Event& e : events) {
    if (w.segment_full()) w.start_segment(acc.save_checkpoint());
    acc.apply(e);
    w.append(e);
  }
  w.flush();
  EXPECT_TRUE(w.failed());
  EXPECT_NE(w.error().find("too many for GPUMEMPROF_TRACE_MAX=1048576"), std::string::npos) << w.error();
  EXPECT_EQ(w.written_events() + w.unwritten_events(), events.size());
  EXPECT_LE(trace_bytes(dir.path), 1u << 20);
}

}  // namespace
}  // namespace gmp::test
