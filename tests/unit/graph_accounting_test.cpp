// Graph memory in the accounting (docs/accounting.md §Graph memory) and PyTorch's private pools,
// from hand-made event streams: what a launch makes live, what frees it, the driver's pool figures,
// per-graph statistics, and the checkpoint carrying all of it (and reading a version-1 one).
#include <gtest/gtest.h>

#include <cstring>

#include "accounting.h"
#include "summary.h"
#include "summary_builder.h"

namespace gmp {
namespace {

constexpr uint64_t MiB = 1 << 20;
constexpr uint64_t kGraph = 0x9000, kExec = 0xe000, kStream = 0x5000;

class Graphs {
 public:
  Accounting acc;
  uint64_t t = 1000;

  Event base(Op op, int dev = 0) {
    Event e{};
    e.op = op;
    e.kind = Kind::Graph;
    e.device = static_cast<int16_t>(dev);
    e.thread_id = 7;
    e.timestamp_ns = t += 10;
    return e;
  }
  void begin(uint64_t graph, uint64_t id, uint64_t mode = 0, uint32_t stack = 0) {
    Event e = base(Op::CaptureBegin);
    e.object = graph;
    e.value = id;
    e.size = mode;
    e.stream = kStream;
    e.stack_id = stack;
    acc.apply(e);
  }
  void end(uint64_t graph, uint64_t id, int16_t result = 0) {
    Event e = base(Op::CaptureEnd, -1);
    e.object = result == 0 ? graph : 0;
    e.value = id;
    e.result = result;
    acc.apply(e);
  }
  void node(Op op, uint64_t graph, uint64_t address, uint64_t size, uint64_t id = 0) {
    Event e = base(op);
    e.object = graph;
    e.address = address;
    e.size = size;
    e.value = id;
    acc.apply(e);
  }
  void instantiate(uint64_t graph, uint64_t exec, uint64_t flags = 0, int16_t result = 0) {
    Event e = base(Op::GraphInstantiate, -1);
    e.object = graph;
    e.address = exec;
    e.value = flags;
    e.result = result;
    acc.apply(e);
  }
  void launch(uint64_t exec, uint64_t stream = kStream, int16_t result = 0, Api api = Api::cuGraphLaunch) {
    Event e = base(Op::GraphLaunch);
    e.address = exec;
    e.stream = stream;
    e.result = result;
    e.api = api;
    acc.apply(e);
  }
  void pool(uint64_t reserved, uint64_t high, uint64_t used, uint64_t used_high) {
    Event e = base(Op::GraphMemory);
    e.size = reserved;
    e.value = high;
    e.object = used;
    e.address = used_high;
    acc.apply(e);
  }
  void free(uint64_t address, Kind kind = Kind::Pool) {
    Event e = base(Op::Free, -1);
    e.kind = kind;
    e.address = address;
    acc.apply(e);
  }
  const DeviceStats& d0() const { return acc.devices().at(0); }
};

TEST(GraphAccounting, CapturedNodesAllocateNothingUntilALaunchAndOutlivingOnesStayLiveUntilFreed) {
  Graphs g;
  g.begin(kGraph, 1, 0, 42);
  g.node(Op::GraphAllocNode, kGraph, 0xa000'0000, 256 * MiB, 1);
  g.node(Op::GraphFreeNode, kGraph, 0xa000'0000, 0, 1);
  g.node(Op::GraphAllocNode, kGraph, 0xb000'0000, 64 * MiB, 1);
  g.end(kGraph, 1);
  EXPECT_EQ(g.d0().allocated.current, 0u);  // captured: nothing yet
  g.instantiate(kGraph, kExec);
  g.launch(kExec);
  g.pool(320 * MiB, 320 * MiB, 320 * MiB, 320 * MiB);
  EXPECT_EQ(g.d0().kind(Kind::Graph).bytes.current, 64 * MiB);  // only what outlives the launch
  EXPECT_EQ(g.d0().allocated.current, 64 * MiB);
  EXPECT_EQ(g.d0().reserved.current, 320 * MiB);
  g.free(0xb000'0000);  // cuMemFreeAsync outside the graph
  EXPECT_EQ(g.d0().kind(Kind::Graph).bytes.current, 0u);
  EXPECT_EQ(g.d0().kind(Kind::Graph).frees, 1u);
  EXPECT_EQ(g.acc.unknown_frees(), 0u);
  g.launch(kExec, 0x6000);
  g.free(0xb000'0000, Kind::Linear);  // cuMemFree works on graph memory too
  EXPECT_EQ(g.d0().kind(Kind::Graph).allocs, 2u);
  EXPECT_EQ(g.d0().kind(Kind::Graph).bytes.peak, 64 * MiB);
  EXPECT_EQ(g.d0().alloc_count, 0u);  // a launch is not an allocation call
  // The pool's figures are the driver's, peaks its high watermarks.
  g.pool(0, 320 * MiB, 0, 320 * MiB);
  EXPECT_EQ(g.d0().graph_reserved.current, 0u);
  EXPECT_EQ(g.d0().graph_reserved.peak, 320 * MiB);
  EXPECT_EQ(g.d0().reserved.peak, 320 * MiB);

  ASSERT_EQ(g.acc.graphs().size(), 1u);
  const GraphStats& s = g.acc.graphs()[0];
  EXPECT_EQ(s.number, 1u);
  EXPECT_TRUE(s.captured);
  EXPECT_EQ(s.capture_mode, 0);
  EXPECT_EQ(s.stack_id, 42u);
  EXPECT_EQ(s.bytes_per_launch(), 320 * MiB);
  EXPECT_EQ(s.outliving_bytes(), 64 * MiB);
  EXPECT_EQ(s.launches, 2u);
  EXPECT_EQ(s.streams.size(), 2u);
}

TEST(GraphAccounting, AutoFreeOnLaunchFreesTheLastLaunchsAllocationFirstAndOtherGraphsFreeNodesApply) {
  Graphs g;
  g.node(Op::GraphAllocNode, kGraph, 0xc000'0000, 16 * MiB);
  g.instantiate(kGraph, kExec, 1 /* AUTO_FREE_ON_LAUNCH */);
  for (int i = 0; i < 3; ++i) g.launch(kExec);
  EXPECT_EQ(g.d0().kind(Kind::Graph).bytes.current, 16 * MiB);
  EXPECT_EQ(g.d0().kind(Kind::Graph).bytes.peak, 16 * MiB);  // never two at once
  EXPECT_EQ(g.d0().kind(Kind::Graph).allocs, 3u);
  EXPECT_EQ(g.d0().kind(Kind::Graph).frees, 2u);
  // A second graph whose free node releases the first one's allocation at its launch.
  g.node(Op::GraphFreeNode, kGraph + 1, 0xc000'0000, 0);
  g.instantiate(kGraph + 1, kExec + 1);
  g.launch(kExec + 1);
  EXPECT_EQ(g.d0().kind(Kind::Graph).bytes.current, 0u);
  EXPECT_EQ(g.acc.graphs().size(), 2u);
  EXPECT_FALSE(g.acc.graphs()[0].captured);
}

TEST(GraphAccounting, AnOutOfMemoryLaunchIsAFailedAllocationAndAnInvalidatedCaptureLeavesNoHandle) {
  Graphs g;
  g.begin(kGraph, 5);
  g.node(Op::GraphAllocNode, kGraph, 0xd000'0000, 8 * MiB, 5);
  g.end(kGraph, 5, 901);  // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
  g.node(Op::GraphAllocNode, kGraph + 2, 0xd100'0000, 8 * MiB);
  g.instantiate(kGraph + 2, kExec);
  g.launch(kExec, kStream, kOutOfMemory);
  EXPECT_EQ(g.acc.oom().failures, 1u);
  EXPECT_EQ(g.d0().failed_alloc_count, 1u);
  ASSERT_EQ(g.acc.failed_allocations().size(), 1u);
  EXPECT_EQ(g.acc.failed_allocations()[0].kind, Kind::Graph);
  EXPECT_EQ(g.acc.failed_allocations()[0].size, 8 * MiB);
  EXPECT_EQ(g.acc.graphs()[1].failed_launches, 1u);
  EXPECT_EQ(g.d0().allocated.current, 0u);
}

TEST(GraphAccounting, TheSummaryListsGraphsAndByKindGraph) {
  Graphs g;
  g.begin(kGraph, 1, 1);
  g.node(Op::GraphAllocNode, kGraph, 0xa000'0000, 4 * MiB, 1);
  g.end(kGraph, 1);
  g.instantiate(kGraph, kExec);
  g.launch(kExec, kStream, 0, Api::cuGraphUpload);
  g.launch(kExec);
  g.pool(4 * MiB, 4 * MiB, 4 * MiB, 4 * MiB);
  const Summary s = build_summary(g.acc, SummaryContext{});
  ASSERT_EQ(s.graphs.size(), 1u);
  EXPECT_EQ(s.graphs[0].origin, "capture");
  EXPECT_EQ(s.graphs[0].capture_mode, "thread_local");
  EXPECT_EQ(s.graphs[0].uploads, 1u);
  EXPECT_EQ(s.graphs[0].launches, 1u);
  const nlohmann::json j = to_json(s);
  EXPECT_EQ(j["devices"][0]["by_kind"]["graph"]["reserved"]["peak"], 4 * MiB);
  EXPECT_EQ(j["devices"][0]["by_kind"]["graph"]["current"], 4 * MiB);
  EXPECT_EQ(j["live_at_exit"]["bytes"], 4 * MiB);
  const Summary back = summary_from_json(j);
  EXPECT_EQ(back.graphs.size(), 1u);
  EXPECT_EQ(back.graphs[0].outliving_bytes, 4 * MiB);
  EXPECT_EQ(back.devices[0].stats.graph_reserved.peak, 4 * MiB);
}

Event framework(Op op, uint64_t address, uint64_t size, uint64_t pool) {
  Event e{};
  e.op = op;
  e.api = Api::torch_caching_allocator;
  e.address = address;
  e.size = size;
  e.object = pool;
  return e;
}

TEST(FrameworkPrivatePools, SegmentsAndTensorsCountInTheirPool) {
  Accounting acc;
  const uint64_t graph_pool = framework_pool_id(0, 1);
  EXPECT_EQ(framework_pool_text(graph_pool), "0,1");
  acc.apply(framework(Op::SegmentAlloc, 0x1000'0000, 20 * MiB, 0));
  acc.apply(framework(Op::SegmentAlloc, 0x2000'0000, 20 * MiB, graph_pool));
  acc.apply(framework(Op::TensorAlloc, 0x2000'0000, 3 * MiB, graph_pool));
  acc.apply(framework(Op::TensorAlloc, 0x1000'0000, 5 * MiB, 0));
  const FrameworkStats& f = acc.devices().at(0).framework;
  ASSERT_EQ(f.private_pools.size(), 1u);
  const auto& p = f.private_pools.at(graph_pool);
  EXPECT_EQ(p.reserved.current, 20 * MiB);
  EXPECT_EQ(p.allocated.current, 3 * MiB);
  acc.apply(framework(Op::TensorFreeRequested, 0x2000'0000, 3 * MiB, 0));
  acc.apply(framework(Op::TensorFreeCompleted, 0x2000'0000, 3 * MiB, 0));
  acc.apply(framework(Op::SegmentFree, 0x2000'0000, 20 * MiB, 0));
  EXPECT_EQ(p.allocated.current, 0u);
  EXPECT_EQ(p.allocated.peak, 3 * MiB);
  EXPECT_EQ(p.reserved.current, 0u);
  EXPECT_EQ(p.reserved.peak, 20 * MiB);
  EXPECT_EQ(f.reserved.current, 20 * MiB);  // the default pool's segment
  const nlohmann::json j = to_json(build_summary(acc, SummaryContext{}));
  EXPECT_EQ(j["devices"][0]["framework"]["private_pools"][0]["pool"], "0,1");
  EXPECT_EQ(j["devices"][0]["framework"]["private_pools"][0]["reserved"]["peak"], 20 * MiB);
  const Summary back = summary_from_json(j);
  EXPECT_EQ(back.devices[0].stats.framework.private_pools.at(graph_pool).allocated.peak, 3 * MiB);
}

TEST(GraphCheckpoint, GraphStateRoundTripsAndVersion1And2CheckpointsAreStillRead) {
  Graphs g;
  g.begin(kGraph, 1);
  g.node(Op::GraphAllocNode, kGraph, 0xa000'0000, 64 * MiB, 1);
  g.end(kGraph, 1);
  g.instantiate(kGraph, kExec, 1);
  g.launch(kExec);
  g.pool(64 * MiB, 64 * MiB, 64 * MiB, 64 * MiB);
  g.acc.apply(framework(Op::SegmentAlloc, 0x2000'0000, 20 * MiB, framework_pool_id(0, 3)));
  const std::string saved = g.acc.save_checkpoint();
  Accounting restored;
  ASSERT_TRUE(restored.restore_checkpoint(saved.data(), saved.size()));
  EXPECT_EQ(restored.save_checkpoint(), saved);
  // Replaying on the restored state goes on where the original was: the exec is known.
  Event relaunch{};
  relaunch.op = Op::GraphLaunch;
  relaunch.kind = Kind::Graph;
  relaunch.api = Api::cuGraphLaunch;
  relaunch.address = kExec;
  relaunch.device = 0;
  restored.apply(relaunch);
  g.acc.apply(relaunch);
  EXPECT_EQ(restored.save_checkpoint(), g.acc.save_checkpoint());
  EXPECT_EQ(restored.devices().at(0).kind(Kind::Graph).allocs, 2u);

  // Older checkpoints: version 2 (before the runtime kind) has eight kinds per device; version 1
  // (before graphs) seven, and no graph figures or tables.
  Accounting old;
  Event a{};
  a.op = Op::Alloc;
  a.kind = Kind::Linear;
  a.address = 0x1000;
  a.size = MiB;
  old.apply(a);
  const std::string v3 = old.save_checkpoint();
  const size_t device_start = 4 + 4 + 8 + 4;  // magic, version, device count, the ordinal key
  const size_t kinds_at = device_start + 4 + 8 + 16 * 2 + 8 * 2;  // device, total bytes, two counters, two times
  std::string v2 = v3;
  const uint32_t two = 2;
  std::memcpy(v2.data() + 4, &two, sizeof two);
  v2.erase(kinds_at + 8 * 32, 32);  // the runtime kind
  Accounting from_v2;
  ASSERT_TRUE(from_v2.restore_checkpoint(v2.data(), v2.size()));
  EXPECT_EQ(from_v2.save_checkpoint(), v3);
  std::string v1 = v2;
  const uint32_t one = 1;
  std::memcpy(v1.data() + 4, &one, sizeof one);
  // The device's eighth kind (32 bytes) and two graph counters (32 bytes) go, and the trailing
  // graph tables and private pools (five empty counts).
  v1.erase(kinds_at + 7 * 32, 32);                          // the graph kind
  v1.erase(kinds_at + 7 * 32 + 32, 32);                     // after pool and vmm counters: graph counters
  const size_t framework_end_v1 = kinds_at + 7 * 32 + 32 + 9 * 8 + 1 + 1 + 4 * 16 + 8 * 8;
  v1.erase(framework_end_v1, 8);                            // the private pools' count
  v1.erase(v1.size() - 4 * 8, 4 * 8);                       // graphs, graph numbers, captures, execs
  Accounting from_v1;
  ASSERT_TRUE(from_v1.restore_checkpoint(v1.data(), v1.size()));
  EXPECT_EQ(from_v1.devices().at(0).allocated.current, MiB);
  EXPECT_EQ(from_v1.save_checkpoint(), v3);
}

}  // namespace
}  // namespace gmp
