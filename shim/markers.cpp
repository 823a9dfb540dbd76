#include "markers.h"

#include <atomic>
#include <cstring>
#include <mutex>

#include "../collector/seam.h"
#include "export.h"
#include "records.h"

namespace gmp::shim {
namespace {

constexpr uint32_t kMaxOpenRanges = 128;  // deeper pushes are counted but not named
constexpr uint32_t kMaxEarlyMarks = 256;  // marks before the session: later ones are dropped

std::atomic<bool> g_paused{false};

// The calling thread's open ranges (outermost first) and the session that has seen them.
struct OpenRange {
  uint32_t name_id;
  Api source;  // replayed as it was opened: NVTX or the C API
};
struct ThreadRanges {
  OpenRange open[kMaxOpenRanges];
  uint32_t depth;
  Session* synced_with;
};
__attribute__((tls_model("initial-exec"))) thread_local ThreadRanges t_ranges{};

uint32_t name_id(const char* name) {
  if (name == nullptr) name = "";
  const size_t n = strnlen(name, 4096);
  return intern_name(name, static_cast<uint32_t>(n));
}

void record_named(Op op, Api source, uint32_t id) {
  session_record(-1, [&](Event& e) {
    NameRecord{id}.to_event(e, op);
    e.api = source;
  });
}

// Ranges this thread opened while no session (or another one, before a fork) was recording.
void sync_ranges(Session* s) {
  if (t_ranges.synced_with == s) return;
  t_ranges.synced_with = s;
  const uint32_t named = t_ranges.depth < kMaxOpenRanges ? t_ranges.depth : kMaxOpenRanges;
  for (uint32_t i = 0; i < named; ++i) record_named(Op::RangePush, t_ranges.open[i].source, t_ranges.open[i].name_id);
}

// Marks made while no session was recording (before the process's first CUDA memory call), in
// order, replayed when a session records: a program that marks "warmup done" first keeps it.
struct EarlyMark {
  uint32_t name_id;
  Api source;
};
std::mutex g_early_lock;
EarlyMark g_early[kMaxEarlyMarks];
uint32_t g_early_count = 0;                // under g_early_lock
std::atomic<bool> g_early_pending{false};  // g_early_count != 0, read without the lock

void keep_early_mark(Api source, uint32_t id) {
  std::lock_guard<std::mutex> lock(g_early_lock);
  if (g_early_count == kMaxEarlyMarks) return;
  g_early[g_early_count++] = {id, source};
  g_early_pending.store(true, std::memory_order_release);
}

// Replays the early marks (once: they are taken out of the list) into the session now recording.
void replay_early_marks() {
  if (!g_early_pending.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(g_early_lock);
  for (uint32_t i = 0; i < g_early_count; ++i) record_named(Op::Mark, g_early[i].source, g_early[i].name_id);
  g_early_count = 0;
  g_early_pending.store(false, std::memory_order_relaxed);
}

}  // namespace

bool catch_up(Session** session) {
  if (g_paused.load(std::memory_order_relaxed)) return false;
  Session* s = session_get();
  if (s != nullptr) replay_early_marks();
  if (s != nullptr && t_ranges.depth != 0 && t_ranges.synced_with != s) sync_ranges(s);
  *session = s;
  return true;
}

// Marks and ranges never start a session: a process that never uses CUDA writes nothing.
void record_mark(Api source, const char* name) {
  const uint32_t id = name_id(name);
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s == nullptr) return keep_early_mark(source, id);
  replay_early_marks();
  if (t_ranges.depth != 0) sync_ranges(s);
  record_named(Op::Mark, source, id);
}

void record_range_push(Api source, const char* name) {
  const uint32_t id = name_id(name);
  if (t_ranges.depth < kMaxOpenRanges) t_ranges.open[t_ranges.depth] = {id, source};
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s != nullptr) {  // the earlier marks and ranges first, then this one
    replay_early_marks();
    sync_ranges(s);
  }
  ++t_ranges.depth;
  if (s != nullptr) record_named(Op::RangePush, source, id);
}

void record_range_pop(Api source) {
  if (t_ranges.depth == 0) return;  // unbalanced: nothing of ours to close
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s != nullptr) {
    replay_early_marks();
    sync_ranges(s);
  }
  --t_ranges.depth;
  if (s != nullptr) record_named(Op::RangePop, source, 0);
}

void set_paused(Api source, bool paused) {
  if (g_paused.exchange(paused, std::memory_order_relaxed) == paused) return;
  Session* s = g_active_session.load(std::memory_order_acquire);
  if (s != nullptr) record_named(paused ? Op::Pause : Op::Resume, source, 0);
}

}  // namespace gmp::shim

// The C API (include/gpumemprof.h finds these at run time; see docs/attribution.md).
using gmp::Api;
GMP_EXPORT void gpumemprof_mark(const char* name) { gmp::shim::record_mark(Api::gpumemprof_api, name); }
GMP_EXPORT void gpumemprof_range_push(const char* name) { gmp::shim::record_range_push(Api::gpumemprof_api, name); }
GMP_EXPORT void gpumemprof_range_pop(void) { gmp::shim::record_range_pop(Api::gpumemprof_api); }
GMP_EXPORT void gpumemprof_pause(void) { gmp::shim::set_paused(Api::gpumemprof_api, true); }
GMP_EXPORT void gpumemprof_resume(void) { gmp::shim::set_paused(Api::gpumemprof_api, false); }
