// `gpumemprof export --format memory-viz`: a run with PyTorch caching-allocator events (written by
// hand, as the bridge records them) and a driver-level run (a real program on the fake driver),
// each exported and read back by an independent reader, Python's pickle, through
// check_memory_viz.py: the viewer's opcodes only, torch's snapshot structure, blocks tiling their
// segments, and each device's trace replaying from nothing onto the snapshot. The figures are
// then compared with the accounting's.
#include <gtest/gtest.h>

#include <sstream>

#include "accounting.h"
#include "harness.h"
#include "synthetic_run.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

constexpr uint64_t KiB = 1 << 10, MiB = 1 << 20;

std::string python() {
  std::stringstream list(GMP_TEST_PYTHONS);
  std::string first;
  std::getline(list, first, ':');
  return first;
}

// Exports `dir` to `file` and checks it; the checker's figures (null when it failed the test).
nlohmann::json export_and_check(const Sandbox& box, const std::string& dir, const std::string& file, RunResult& r) {
  r = run_tool({"export", dir, "--format", "memory-viz", "-o", file});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (python().empty()) return nullptr;
  const std::string checker = std::string(GMP_SOURCE_DIR) + "/tests/integration/check_memory_viz.py";
  RunResult c = box.run({python(), checker, file}, {{"LD_PRELOAD", "<unset>"}});
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  if (c.exit_code != 0) return nullptr;
  return nlohmann::json::parse(c.out);
}

void replay_into(const std::string& dir, Accounting& acc) {
  reader::TraceReader t;
  EXPECT_TRUE(t.open(dir + "/trace.gmpt")) << t.error();
  for (Event e; t.next(e);) acc.apply(e);
}

// The bridge attached (torch 2.11.0), as its first event; the frames of stacks 1 and 2.
SyntheticRun& attached(SyntheticRun& run) {
  return run
      .event(Event{.timestamp_ns = kStartNs + 10,
                   .value = framework_version(2, 11, 0),
                   .device = 0,
                   .kind = Kind::None,
                   .op = Op::FrameworkAttach,
                   .api = Api::torch_caching_allocator,
                   .result = 1})
      .line(R"({"type":"pyframe","id":1,"file":"/work/train.py","function":"forward","line":42})")
      .line(R"({"type":"pyframe","id":2,"file":"/work/train.py","function":"main","line":7})")
      .line(R"({"type":"stack","id":1,"frames":["0x1234","py:1","py:2"]})")
      .line(R"({"type":"stack","id":2,"frames":["py:2"]})");
}

constexpr uint64_t S0 = 0x7f0003000000, S1 = 0x7f0000000000, S2 = 0x7f0002000000, E = 0x7f1000000000;

TEST(MemoryViz, FrameworkRunReplaysOntoItsSnapshot) {
  Sandbox box;
  SyntheticRun run;
  attached(run);
  uint64_t t = 100;
  auto fw = [&](Op op, uint64_t address, uint64_t size, int device = 0, uint32_t stack = 0, uint64_t stream = 0,
                uint64_t value = 0) { run.framework(t += 10, 7, op, address, size, device, stack, stream, value); };
  // What existed when the bridge attached (seeds), described twice: counted once.
  fw(Op::SegmentAlloc, S0, 2 * MiB, 0, 0, 0, kSeeded);
  fw(Op::TensorAlloc, S0, 256, 0, 0, 0, kSeeded);
  fw(Op::SegmentAlloc, S0, 2 * MiB, 0, 0, 0, kSeeded);
  fw(Op::TensorAlloc, S0, 256, 0, 0, 0, kSeeded);
  // Device 0: a 20 MiB segment (its cudaMalloc first, as the driver level sees it) holding tensors.
  run.alloc(t += 10, 7, S1, 20 * MiB);
  fw(Op::SegmentAlloc, S1, 20 * MiB, 0, 1);
  fw(Op::TensorAlloc, S1, 4 * MiB, 0, 1);
  fw(Op::TensorAlloc, S1 + 4 * MiB, 400, 0, 2);
  fw(Op::TensorAlloc, S1 + 4 * MiB + 512, 1000, 0, 2);
  fw(Op::TensorFreeRequested, S1 + 4 * MiB, 400, 0, 2);
  fw(Op::TensorFreeCompleted, S1 + 4 * MiB, 400);
  fw(Op::TensorFreeRequested, S1 + 4 * MiB + 512, 1000, 0, 2);  // record_stream: its free never completes
  // A small-pool segment, used and given back.
  run.alloc(t += 10, 7, S2, 2 * MiB);
  fw(Op::SegmentAlloc, S2, 2 * MiB, 0, 2);
  fw(Op::TensorAlloc, S2, 100, 0, 2);
  fw(Op::TensorFreeRequested, S2, 100);
  fw(Op::TensorFreeCompleted, S2, 100);
  fw(Op::SegmentFree, S2, 2 * MiB);
  run.free(t += 10, 7, S2);
  fw(Op::FrameworkOom, 0, 64ull << 30, 0, 1, 0, 123456);
  // Device 1: expandable segments on stream 5; the three mapped ranges coalesce, then the middle
  // one is unmapped, which splits the segment in two.
  fw(Op::SegmentMap, E, 2 * MiB, 1, 1, 5);
  fw(Op::SegmentMap, E + 2 * MiB, 2 * MiB, 1, 1, 5);
  fw(Op::SegmentMap, E + 4 * MiB, 2 * MiB, 1, 1, 5);
  fw(Op::TensorAlloc, E + 2 * MiB, 1 * MiB, 1, 1, 5);
  fw(Op::TensorAlloc, E, 1 * MiB, 1, 2, 5);
  fw(Op::TensorAlloc, E + 4 * MiB, 4 * KiB, 1, 2, 5);
  fw(Op::TensorFreeRequested, E + 2 * MiB, 1 * MiB, 1, 0, 5);
  fw(Op::TensorFreeCompleted, E + 2 * MiB, 1 * MiB, 1, 0, 5);
  fw(Op::SegmentUnmap, E + 2 * MiB, 2 * MiB, 1, 0, 5);
  run.write(2);

  RunResult r;
  const std::string file = box.dir() + "/snapshot.pickle";
  const nlohmann::json stats = export_and_check(box, run.dir(), file, r);
  EXPECT_NE(r.err.find("wrote " + file + " (memory-viz, 24 trace entries, 4 segments)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("note"), std::string::npos) << r.err;
  if (stats.is_null()) GTEST_SKIP() << "no python3 for the checker";

  // The figures are the accounting's: tensors' requested bytes, and the segments.
  Accounting acc;
  replay_into(run.dir(), acc);
  for (int d = 0; d < 2; ++d) {
    const FrameworkStats& f = acc.devices().at(d).framework;
    EXPECT_EQ(stats["allocated"][std::to_string(d)], f.allocated.current) << d;
    EXPECT_EQ(stats["reserved"][std::to_string(d)], f.reserved.current) << d;
  }
  EXPECT_EQ(stats["entries"], (nlohmann::json{15, 9}));
  EXPECT_EQ(stats["actions"], (nlohmann::json{{"alloc", 8},
                                              {"free_requested", 4},
                                              {"free_completed", 3},
                                              {"segment_alloc", 3},
                                              {"segment_free", 1},
                                              {"segment_map", 3},
                                              {"segment_unmap", 1},
                                              {"oom", 1}}));
  using L = nlohmann::json;
  EXPECT_EQ(stats["layout"],
            (L{{0,
                S1,
                20 * MiB,
                false,
                "large",
                {{"active_allocated", 4 * MiB, 4 * MiB},
                 {"inactive", 512, 0},
                 {"active_pending_free", 1024, 1000},
                 {"inactive", 16 * MiB - 1536, 0}}},
               {0, S0, 2 * MiB, false, "small", {{"active_allocated", 512, 256}, {"inactive", 2 * MiB - 512, 0}}},
               {1, E, 2 * MiB, true, "large", {{"active_allocated", 1 * MiB, 1 * MiB}, {"inactive", 1 * MiB, 0}}},
               {1,
                E + 4 * MiB,
                2 * MiB,
                true,
                "large",
                {{"active_allocated", 4 * KiB, 4 * KiB}, {"inactive", 2 * MiB - 4 * KiB, 0}}}}));
  // Frames innermost first, as torch writes them: a native frame without a module, then Python's.
  EXPECT_EQ(stats["frames"][std::to_string(S1) + ":alloc"],
            (L{{"??", 0, "0x1234"}, {"/work/train.py", 42, "forward"}, {"/work/train.py", 7, "main"}}));
  EXPECT_EQ(stats["frames"][std::to_string(E) + ":alloc"], (L{{"/work/train.py", 7, "main"}}));
  EXPECT_EQ(stats["frames"][std::to_string(S2) + ":segment_free"], L::array());
}

TEST(MemoryViz, EventsTheViewerCannotReplayAreDroppedOrRepaired) {
  Sandbox box;
  SyntheticRun run;
  attached(run);
  uint64_t t = 100;
  auto fw = [&](Op op, uint64_t address, uint64_t size) { run.framework(t += 10, 7, op, address, size); };
  fw(Op::SegmentAlloc, S1, 20 * MiB);
  fw(Op::TensorAlloc, S1, 1 * MiB);
  fw(Op::TensorAlloc, S1 + 512 * KiB, 1 * MiB);    // the first one's free never arrived: freed here
  fw(Op::TensorFreeCompleted, S1 + 8 * MiB, 512);  // never allocated: nothing to show
  fw(Op::TensorAlloc, S2, 512);                    // outside every segment: left out
  fw(Op::TensorAlloc, S1 + 19 * MiB, 2 * MiB);     // runs past its segment's end: left out
  fw(Op::TensorAlloc, S1 + 4 * MiB, 4096);
  fw(Op::SegmentFree, S1, 20 * MiB);  // with two live tensors, which go with it
  fw(Op::SegmentUnmap, E, 2 * MiB);   // nothing mapped there: nothing to show
  run.write(1);

  RunResult r;
  const nlohmann::json stats = export_and_check(box, run.dir(), box.dir() + "/repaired.pickle", r);
  EXPECT_NE(r.err.find("note: 2 allocations left out"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("note: 3 blocks the trace never freed"), std::string::npos) << r.err;
  if (stats.is_null()) GTEST_SKIP() << "no python3 for the checker";
  EXPECT_EQ(stats["segments"], 0);
  EXPECT_EQ(stats["actions"]["alloc"], 3);
  EXPECT_EQ(stats["actions"]["free_completed"], 3);
}

TEST(MemoryViz, DriverLevelRunHasOneSegmentPerAllocation) {
  Sandbox box;
  // Linear, pool (stream-ordered), VMM, arrays and pinned memory, some of it freed, on device 0.
  ASSERT_EQ(box.run({Paths::bin("prog_cudart_style")}, {{"GPUMEMPROF_STACKS", "16"}}).exit_code, 0);
  const std::string dir = box.only_run_dir();
  RunResult r;
  const nlohmann::json stats = export_and_check(box, dir, box.dir() + "/driver.pickle", r);
  EXPECT_NE(r.err.find("note: no PyTorch caching-allocator events"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("left out"), std::string::npos) << r.err;  // a free of managed memory is no loss
  if (stats.is_null()) GTEST_SKIP() << "no python3 for the checker";

  // Every live device allocation with an address is a segment holding one block of its size:
  // the device's allocated bytes without arrays (they have no address).
  Accounting acc;
  replay_into(dir, acc);
  const DeviceStats& d = acc.devices().at(0);
  const uint64_t addressed = d.allocated.current - d.kind(Kind::Array).bytes.current;
  EXPECT_EQ(stats["allocated"]["0"], addressed);
  EXPECT_EQ(stats["reserved"]["0"], addressed);
  for (const auto& s : stats["layout"]) {
    ASSERT_EQ(s[5].size(), 1u) << s;
    EXPECT_EQ(s[5][0], (nlohmann::json{"active_allocated", s[2], s[2]})) << s;
  }
  EXPECT_EQ(stats["actions"]["alloc"], stats["actions"]["segment_alloc"]);
  EXPECT_EQ(stats["actions"]["free_completed"], stats["actions"]["segment_free"]);
  EXPECT_GT(stats["actions"]["segment_free"].get<int>(), 0);
  // Allocations carry their stacks: the program's own frames are named.
  bool named = false;
  for (const auto& [key, frames] : stats["frames"].items()) {
    for (const auto& f : frames) named = named || f[2].get<std::string>().find("main") != std::string::npos;
  }
  EXPECT_TRUE(named) << stats["frames"];
}

TEST(MemoryViz, AnOutputItCannotWriteIsRefusedInOneLine) {
  Sandbox box;
  ASSERT_EQ(box.run({Paths::bin("prog_ops"), "alloc:1M"}).exit_code, 0);
  RunResult r = run_tool({"export", box.only_run_dir(), "--format", "memory-viz", "-o", box.dir() + "/no/such.pickle"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "gpumemprof export: cannot write " + box.dir() + "/no/such.pickle: No such file or directory\n");
  EXPECT_FALSE(exists(box.dir() + "/no/such.pickle"));
}

// Exports `dir` with --max-events `max` and checks it the viewer's way (undone from the snapshot).
nlohmann::json export_thinned(const Sandbox& box, const std::string& dir, uint64_t max, RunResult& r) {
  const std::string file = box.dir() + "/thinned.pickle";
  r = run_tool({"export", dir, "--format", "memory-viz", "-o", file, "--max-events", std::to_string(max)});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (python().empty()) return nullptr;
  const std::string checker = std::string(GMP_SOURCE_DIR) + "/tests/integration/check_memory_viz.py";
  RunResult c = box.run({python(), checker, file, "--suffix"}, {{"LD_PRELOAD", "<unset>"}});
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
  return c.exit_code == 0 ? nlohmann::json::parse(c.out) : nullptr;
}

// More trace entries than --max-events: the latest ones when they hold the allocated peak; when
// the peak is older, those around it, the snapshot then being the state at the last one kept.
// Every event here is 50 µs after the one before; a driver-level allocation is two entries
// (segment_alloc, alloc), a release three (free_requested, free_completed, segment_free).
TEST(MemoryViz, ThinnedToTheLatestEntriesOrThoseAroundThePeak) {
  Sandbox box;
  SyntheticRun growth;  // 100 allocations of 1 MiB, none freed: the peak is the last event
  for (uint64_t i = 1; i <= 100; ++i) growth.alloc(i * 50'000, 1, 0x100000000 + i * 0x1000000, MiB);
  growth.write();
  RunResult r;
  nlohmann::json stats = export_thinned(box, growth.dir(), 50, r);
  EXPECT_NE(r.err.find("note: 200 trace entries; kept the 50 latest, from 0.003800 s (--max-events 50; 0 keeps all)"),
            std::string::npos)
      << r.err;
  if (!stats.is_null()) {
    EXPECT_EQ(stats["entries"], nlohmann::json::array({50}));
    EXPECT_EQ(stats["allocated"]["0"], 100 * MiB);  // the snapshot: the state at the end
  }
  RunResult all = run_tool({"export", growth.dir(), "--format", "memory-viz", "-o", box.dir() + "/all.pickle",
                            "--max-events", "0"});
  EXPECT_NE(all.err.find("(memory-viz, 200 trace entries, 100 segments)"), std::string::npos) << all.err;

  SyntheticRun early;  // 20 allocations of 64 MiB, all freed, then 100 pairs of 1 MiB
  uint64_t t = 0;
  for (uint64_t i = 0; i < 20; ++i) early.alloc(t += 50'000, 1, 0x100000000 + i * 0x10000000, 64 * MiB);
  for (uint64_t i = 0; i < 20; ++i) early.free(t += 50'000, 1, 0x100000000 + i * 0x10000000);
  for (uint64_t i = 0; i < 100; ++i) {
    early.alloc(t += 50'000, 1, 0x800000000, MiB);
    early.free(t += 50'000, 1, 0x800000000);
  }
  early.write();
  stats = export_thinned(box, early.dir(), 100, r);
  // The peak (all 20 blocks live, at 1 ms) with the 40 entries of their allocations before it and the
  // 60 of their releases after it.
  EXPECT_NE(r.err.find("note: 600 trace entries; kept the 100 around the allocated peak, from 0.000050 s to 0.002000 s "
                       "(--max-events 100; 0 keeps all): the snapshot is the state at the last one"),
            std::string::npos)
      << r.err;
  if (!stats.is_null()) {
    EXPECT_EQ(stats["entries"], nlohmann::json::array({100}));
    EXPECT_EQ(stats["actions"], (nlohmann::json{{"alloc", 20}, {"free_requested", 20}, {"free_completed", 20},
                                                 {"segment_alloc", 20}, {"segment_free", 20}}));
    EXPECT_EQ(stats["allocated"]["0"], 0);  // the snapshot: at 2 ms, every block released
  }
}

// A pickle is never written to a terminal: stdout is a pseudo-terminal here (script(1)), and the
// command is refused before it reads anything; redirected, the same command writes the pickle.
TEST(MemoryViz, APickleIsNotWrittenToATerminal) {
  Sandbox box;
  ASSERT_EQ(box.run({Paths::bin("prog_ops"), "alloc:1M"}).exit_code, 0);
  const std::string command = Paths::tool() + " export " + box.only_run_dir() + " --format memory-viz";
  RunResult tty = box.run({"/usr/bin/script", "-qec", command, "/dev/null"}, {{"LD_PRELOAD", "<unset>"}});
  EXPECT_EQ(tty.exit_code, 2) << tty.out << tty.err;
  EXPECT_NE(tty.out.find("gpumemprof export: --format memory-viz writes a binary pickle and stdout is a terminal; "
                         "give -o FILE or redirect stdout"),
            std::string::npos)
      << tty.out;
  RunResult piped = run_tool({"export", box.only_run_dir(), "--format", "memory-viz"});
  EXPECT_EQ(piped.exit_code, 0) << piped.err;
  EXPECT_EQ(piped.out.rfind("\x80", 0), 0u);  // the pickle's PROTO opcode
}

}  // namespace
}  // namespace gmp::test
