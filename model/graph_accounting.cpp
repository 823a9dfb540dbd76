// CUDA graph memory (docs/accounting.md §Graph memory). An allocation node allocates nothing when it
// is captured or added: at each launch, the graph's allocations that no free node of the same graph
// releases become live (kind graph) until something frees them: a cuMemFreeAsync or cuMemFree
// outside the graph (Accounting::on_free finds them like any device pointer), a free node of
// another graph at its launch, or the next launch of an executable instantiated with
// AUTO_FREE_ON_LAUNCH. The graph memory pool's reserved and used bytes are the driver's own
// figures (GraphMemory events), read by the shim where they can change.
#include <algorithm>

#include "accounting.h"
#include "records.h"

namespace gmp {
namespace {

constexpr uint64_t kAutoFreeOnLaunch = 1;  // CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH
constexpr uint64_t kCaptureKey = uint64_t{1} << 63;  // a capture id standing in for an unknown handle

bool is_upload(Api a) { return a == Api::cuGraphUpload || a == Api::cuGraphUpload_ptsz; }

}  // namespace

GraphStats* Accounting::graph_for(uint64_t handle, uint64_t capture_id, bool create) {
  if (handle != 0) {
    if (auto it = graph_numbers_.find(handle); it != graph_numbers_.end()) return &graphs_[it->second - 1];
  }
  if (capture_id != 0) {
    if (auto it = capture_graphs_.find(capture_id); it != capture_graphs_.end()) {
      if (handle != 0) graph_numbers_[handle] = it->second;
      return &graphs_[it->second - 1];
    }
  }
  if (!create || graphs_.size() >= kMaxGraphsKept || (handle == 0 && capture_id == 0)) return nullptr;
  GraphStats& g = graphs_.emplace_back();
  g.number = static_cast<uint32_t>(graphs_.size());
  graph_numbers_[handle != 0 ? handle : (capture_id | kCaptureKey)] = g.number;
  if (capture_id != 0) capture_graphs_[capture_id] = g.number;
  return &g;
}

void Accounting::record_failure(const Event& e, Kind kind, uint64_t size) {
  if (e.result == kOutOfMemory) ++oom_.failures;
  if (kind != Kind::HostPinned) ++dev(e.device).failed_alloc_count;
  if (failed_.size() < kMaxFailedKept) {
    failed_.push_back({e.timestamp_ns, size, e.stream, e.thread_id, e.device, kind, e.api, e.result});
  }
}

void Accounting::on_graph(const Event& e) {
  switch (e.op) {
    case Op::CaptureBegin: {
      if (e.result != 0) return;
      const auto c = CaptureBeginRecord::from_event(e);
      GraphStats* g = graph_for(c.graph, c.capture_id, true);
      if (g == nullptr) return;
      g->captured = true;
      if (g->device < 0) g->device = e.device;
      g->capture_mode = static_cast<uint8_t>(c.mode);
      g->capture_stream = c.stream;
      if (g->stack_id == 0) g->stack_id = e.stack_id;
      return;
    }
    case Op::CaptureEnd: {
      const auto c = CaptureEndRecord::from_event(e);
      auto it = capture_graphs_.find(c.capture_id);
      if (it == capture_graphs_.end()) return;
      const uint32_t number = it->second;
      capture_graphs_.erase(it);
      graph_numbers_.erase(c.capture_id | kCaptureKey);
      if (e.result == 0 && c.graph != 0) graph_numbers_[c.graph] = number;
      return;
    }
    case Op::GraphAllocNode:
    case Op::GraphFreeNode: {
      if (e.result != 0) return;
      const auto n = GraphNodeRecord::from_event(e);
      GraphStats* g = graph_for(n.graph, n.capture_id, true);
      if (g == nullptr) return;
      if (e.op == Op::GraphFreeNode) {
        g->frees.push_back(n.address);
        return;
      }
      g->allocs.push_back({n.address, n.size, e.stack_id, e.device});
      if (g->device < 0) g->device = e.device;
      if (g->stack_id == 0) g->stack_id = e.stack_id;
      dev(e.device);
      return;
    }
    case Op::GraphChild: {
      const auto c = GraphChildRecord::from_event(e);
      const GraphStats* child = graph_for(c.child, 0, false);
      if (child == nullptr || c.child == c.parent) return;
      const GraphStats moved = *child;  // a copy: adding the parent may move graphs_
      GraphStats* parent = graph_for(c.parent, 0, true);
      if (parent == nullptr) return;
      parent->allocs.insert(parent->allocs.end(), moved.allocs.begin(), moved.allocs.end());
      parent->frees.insert(parent->frees.end(), moved.frees.begin(), moved.frees.end());
      if (parent->device < 0) parent->device = moved.device;
      return;
    }
    case Op::GraphInstantiate: {
      const auto i = GraphInstantiateRecord::from_event(e);
      GraphStats* g = graph_for(i.graph, 0, true);
      if (e.result != 0) {
        if (e.result == kOutOfMemory) record_failure(e, Kind::Graph, g != nullptr ? g->bytes_per_launch() : 0);
        return;
      }
      if (g == nullptr) return;
      ++g->instantiations;
      graph_execs_[i.exec] = GraphExec{g->number, i.flags};
      return;
    }
    case Op::GraphLaunch: on_graph_launch(e); return;
    case Op::GraphExecDestroy: graph_execs_.erase(GraphExecDestroyRecord::from_event(e).exec); return;
    case Op::GraphDestroy: graph_numbers_.erase(GraphDestroyRecord::from_event(e).graph); return;
    case Op::GraphMemory: on_graph_memory(e); return;
    default: return;
  }
}

void Accounting::on_graph_launch(const Event& e) {
  const auto launch = GraphLaunchRecord::from_event(e);
  auto it = graph_execs_.find(launch.exec);
  GraphStats* g = it != graph_execs_.end() ? &graphs_[it->second.graph - 1] : nullptr;
  if (e.result != 0) {
    if (g != nullptr) ++g->failed_launches;
    if (e.result == kOutOfMemory) record_failure(e, Kind::Graph, g != nullptr ? g->bytes_per_launch() : 0);
    return;
  }
  if (g == nullptr) return;
  if (is_upload(e.api)) {
    ++g->uploads;
    return;
  }
  ++g->launches;
  if (g->streams.size() < GraphStats::kMaxStreamsKept &&
      std::find(g->streams.begin(), g->streams.end(), launch.stream) == g->streams.end()) {
    g->streams.push_back(launch.stream);
  }
  auto release = [&](uint64_t address) {
    LiveAllocation a;
    if (!device_ptrs_.erase(address, &a)) return;
    DeviceStats& d = dev(a.device);
    ++d.kind(a.kind).frees;
    remove_bytes(a);
  };
  const bool auto_free = (it->second.flags & kAutoFreeOnLaunch) != 0;
  for (const uint64_t address : g->frees) release(address);  // freed at this launch, or never made live
  for (const GraphStats::Node& n : g->allocs) {
    if (g->frees_inside(n.address)) continue;
    const LiveAllocation* old = device_ptrs_.find(n.address);
    if (old != nullptr) {
      // The driver refuses to relaunch over a live allocation unless it frees it on launch.
      if (!auto_free && old->kind != Kind::Graph) ++unknown_frees_;
      release(n.address);
    }
    LiveAllocation a{n.address, n.size, e.timestamp_ns, g->number, e.thread_id, n.stack_id, n.device, Kind::Graph,
                     e.api};
    device_ptrs_.insert_or_assign(n.address, a);
    ++dev(n.device).kind(Kind::Graph).allocs;
    add_bytes(a);
  }
}

void Accounting::on_graph_memory(const Event& e) {
  const auto m = GraphMemoryRecord::from_event(e);
  DeviceStats& d = dev(e.device);
  d.graph_reserved.set(m.reserved);
  d.graph_reserved.peak = std::max(d.graph_reserved.peak, m.reserved_high);
  d.graph_used.set(m.used);
  d.graph_used.peak = std::max(d.graph_used.peak, m.used_high);
  refresh_totals(e.device, e.timestamp_ns);
}

}  // namespace gmp
