#include "graph_memory.h"

#include <atomic>
#include <cstdint>

#include "record.h"

namespace gmp::shim::graph_memory {
namespace {

// Handles with memory nodes: a small open-addressing set that threads share without a lock. A
// lost race only duplicates a slot; a full table makes launches read the pool anyway (device -2).
struct Slot {
  std::atomic<uint64_t> handle{0};
  std::atomic<int> device{-1};
  std::atomic<uint64_t> bytes{0};
};
constexpr size_t kSlots = 4096;
constexpr uint64_t kTombstone = ~uint64_t{0};
Slot g_graphs[kSlots];
Slot g_execs[kSlots];

struct Last {
  std::atomic<uint64_t> reserved{0}, reserved_high{0}, used{0}, used_high{0};
  std::atomic<bool> seen{false};
};
Last g_last[kMaxDevices];

size_t home(uint64_t h) { return static_cast<size_t>((h >> 4) * 0x9E3779B97F4A7C15ull >> 52) % kSlots; }

Slot* find(Slot* table, uint64_t h) {
  for (size_t i = home(h), n = 0; n < kSlots; i = (i + 1) % kSlots, ++n) {
    const uint64_t v = table[i].handle.load(std::memory_order_acquire);
    if (v == h) return &table[i];
    if (v == 0) return nullptr;
  }
  return nullptr;
}

// Adds `bytes` to the handle's entry, creating it.
void insert(Slot* table, uint64_t h, int device, uint64_t bytes) {
  if (h == 0 || h == kTombstone) return;
  if (Slot* s = find(table, h)) {
    if (device >= 0) s->device.store(device, std::memory_order_relaxed);
    s->bytes.fetch_add(bytes, std::memory_order_relaxed);
    return;
  }
  for (size_t i = home(h), n = 0; n < kSlots; i = (i + 1) % kSlots, ++n) {
    uint64_t v = table[i].handle.load(std::memory_order_relaxed);
    if ((v == 0 || v == kTombstone) && table[i].handle.compare_exchange_strong(v, h)) {
      table[i].device.store(device, std::memory_order_relaxed);
      table[i].bytes.store(bytes, std::memory_order_relaxed);
      return;
    }
  }
}

void erase(Slot* table, uint64_t h) {
  if (Slot* s = find(table, h)) s->handle.store(kTombstone, std::memory_order_release);
}

uint64_t key(const void* p) { return reinterpret_cast<uint64_t>(p); }

}  // namespace

void note_graph(CUgraph graph, int device, uint64_t bytes) { insert(g_graphs, key(graph), device, bytes); }

void record_node(Op op, Api api, CUgraph graph, uint64_t capture_id, CUstream stream, uint64_t address,
                 uint64_t size, int device) {
  ErrnoKeeper keep;
  note_graph(graph, device, size);
  uint32_t stack = 0;
  if (op == Op::GraphAllocNode) prepare_allocation_event(&stack);
  session_record(device, [&](Event& e) {
    GraphNodeRecord{address, size, key(graph), reinterpret_cast<uint64_t>(stream), capture_id}.to_event(e, op);
    e.api = api;
    e.kind = Kind::Graph;
    e.stack_id = stack;
  });
}

void note_exec(CUgraphExec exec, CUgraph graph) {
  if (const Slot* g = find(g_graphs, key(graph))) {
    insert(g_execs, key(exec), g->device.load(std::memory_order_relaxed), g->bytes.load(std::memory_order_relaxed));
  }
}

void note_child(CUgraph parent, CUgraph child) {
  if (const Slot* c = find(g_graphs, key(child))) {
    note_graph(parent, c->device.load(std::memory_order_relaxed), c->bytes.load(std::memory_order_relaxed));
  }
}

int exec_device(CUgraphExec exec, uint64_t* bytes) {
  const Slot* s = find(g_execs, key(exec));
  if (bytes != nullptr) *bytes = s != nullptr ? s->bytes.load(std::memory_order_relaxed) : 0;
  if (s == nullptr) return -1;
  const int d = s->device.load(std::memory_order_relaxed);
  return d >= 0 ? d : current_device();
}

void forget_exec(CUgraphExec exec) { erase(g_execs, key(exec)); }
void forget_graph(CUgraph graph) { erase(g_graphs, key(graph)); }

void read(int device) {
  auto get = GMP_REAL(cuDeviceGetGraphMemAttribute);
  if (get == nullptr || device < 0 || device >= kMaxDevices) return;
  cuuint64_t reserved = 0, reserved_high = 0, used = 0, used_high = 0;
  if (get(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &reserved) != CUDA_SUCCESS ||
      get(device, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &reserved_high) != CUDA_SUCCESS ||
      get(device, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &used) != CUDA_SUCCESS ||
      get(device, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &used_high) != CUDA_SUCCESS) {
    return;
  }
  Last& last = g_last[device];
  const bool same = last.seen.load(std::memory_order_relaxed) && last.reserved.load() == reserved &&
                    last.reserved_high.load() == reserved_high && last.used.load() == used &&
                    last.used_high.load() == used_high;
  if (same) return;
  last.reserved.store(reserved);
  last.reserved_high.store(reserved_high);
  last.used.store(used);
  last.used_high.store(used_high);
  last.seen.store(true);
  session_record(device, [&](Event& e) {
    GraphMemoryRecord{reserved, reserved_high, used, used_high}.to_event(e);
    e.api = Api::Collector;
    e.kind = Kind::Graph;
  });
}

void refresh_all() {
  for (int d = 0; d < kMaxDevices; ++d) {
    if (g_last[d].seen.load(std::memory_order_relaxed)) read(d);
  }
}

void reset() {
  for (Slot* table : {g_graphs, g_execs}) {
    for (size_t i = 0; i < kSlots; ++i) table[i].handle.store(0, std::memory_order_relaxed);
  }
  for (Last& l : g_last) l.seen.store(false);
}

}  // namespace gmp::shim::graph_memory
