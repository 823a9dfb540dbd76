// memory-viz: a snapshot for PyTorch's memory viewer (torch/utils/viz/MemoryViz.js,
// https://pytorch.org/memory_viz, and torch.cuda._memory_viz): a pickle of {"segments",
// "device_traces", "allocator_settings"} in the form torch.cuda.memory._snapshot() returns
// (docs/exports.md, "memory-viz").
//
// The viewer draws its "Allocator State History" by replaying each device's trace backwards from
// `segments`, and fails on a block that lies outside every segment at some moment. So the export
// replays the run into the viewer's own model (segments holding blocks), writes only the entries
// that model accepts, and writes `segments` from the model's final state: the trace replays onto
// the snapshot exactly, whatever the run recorded.
//
// - A run where PyTorch's bridge attached: its tensors are blocks, its segments (mapped ranges of
//   expandable segments, coalesced) are segments, as torch records them.
// - Any other run: each device allocation (linear, pool, mapped VMM range) is a segment of its own
//   holding one block of the same size.
//
// The trace is read once to find the model's final state, the stacks to name and the devices,
// then once per device to write its entries: memory grows with the live allocations and the
// distinct stacks, never with the number of events.
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "export_formats.h"
#include "pickle_writer.h"
#include "run_directory_files.h"
#include "symbolizer.h"
#include "trace_format.h"
#include "records.h"

namespace gmp::tool::exporter {
namespace {

using analysis::PickleWriter;

// PyTorch's caching allocator hands out blocks in multiples of 512 bytes (kMinBlockSize), and its
// small pool's segments are 2 MiB (kSmallBuffer); its large pool's are never that small.
constexpr uint64_t kMinBlock = 512;
constexpr uint64_t kSmallSegment = 2ull << 20;

enum class Action : uint8_t {
  Alloc,
  FreeRequested,
  FreeCompleted,
  SegmentAlloc,
  SegmentFree,
  SegmentMap,
  SegmentUnmap,
  Oom
};
constexpr const char* kActionNames[] = {"alloc",        "free_requested", "free_completed", "segment_alloc",
                                        "segment_free", "segment_map",    "segment_unmap",  "oom"};

struct Entry {
  Action action;
  int device;
  uint64_t addr, size, stream, time_us;
  uint32_t stack;
  uint64_t device_free = 0;  // oom only
};

struct Block {
  uint64_t size;  // its extent: the requested size rounded as the allocator does
  uint64_t requested;
  uint32_t stack;
  bool free_requested = false;
};

struct Segment {
  uint64_t size, stream;
  int device;
  uint32_t stack;
  bool expandable = false;
  bool mapping = false;              // driver level: a cuMemMap range
  uint64_t pool = 0;                 // driver level: the memory pool of a pool allocation
  std::map<uint64_t, Block> blocks;  // by address, never overlapping, inside the segment
};

using Segments = std::map<uint64_t, Segment>;  // by address, never overlapping

// The run replayed into the viewer's model. Every entry it passes to `sink` keeps the model one the
// viewer can replay: blocks inside segments, frees of live blocks, segments released whole or, for
// expandable ones, by range. A release of memory it never saw allocated (the accounting's unknown
// frees) has nothing to show and is dropped; an allocation it cannot place (a block outside every
// segment) is left out and counted. Memory the trace never freed is freed, with entries of its
// own, when its addresses are handed out again or its segment goes.
class VizReplay {
 public:
  using Sink = std::function<void(const Entry&)>;
  // Entries of events before `since_ns` build the model but are not delivered: the viewer replays
  // the entries backwards from the final segments, so a window's entries are a suffix it accepts.
  VizReplay(bool framework, uint64_t since_ns, Sink sink)
      : framework_(framework), since_ns_(since_ns), sink_(std::move(sink)) {}

  void apply(const Event& e, const Replay& r) {
    quiet_ = r.since_start(e.timestamp_ns) < since_ns_;
    const uint64_t t = r.since_start(e.timestamp_ns) / 1000;
    if (!framework_) {
      driver_event(e, r.accounted_device(), t);
    } else if (e.api == Api::torch_caching_allocator) {
      framework_event(e, t);
    }
  }

  const Segments& segments() const { return segments_; }
  uint64_t left_out() const { return left_out_; }
  uint64_t released_unfreed() const { return released_unfreed_; }

 private:
  using Blocks = std::map<uint64_t, Block>;

  void deliver(const Entry& e) {
    if (!quiet_) sink_(e);
  }
  void emit(Action a, int device, uint64_t addr, uint64_t size, uint64_t stream, uint64_t t, uint32_t stack) {
    deliver(Entry{a, device, addr, size, stream, t, stack});
  }

  void framework_event(const Event& e, uint64_t t) {
    const bool seeded = FrameworkBlockRecord::from_event(e).seeded;
    switch (e.op) {
      case Op::TensorAlloc:
        tensor_alloc(e, seeded, t);
        break;
      case Op::TensorFreeRequested: {
        auto [s, b] = block_at(e.address);
        if (s == segments_.end() || b->second.free_requested) break;
        b->second.free_requested = true;
        emit(Action::FreeRequested, s->second.device, e.address, b->second.requested, s->second.stream, t, e.stack_id);
        break;
      }
      case Op::TensorFreeCompleted: {
        auto [s, b] = block_at(e.address);
        if (s != segments_.end()) free_block(s->second, b, t, e.stack_id, false);
        break;
      }
      case Op::SegmentAlloc:
      case Op::SegmentMap:
        if (e.device < 0 || e.size == 0) {
          ++left_out_;
          break;
        }
        if (seeded && overlaps(e.address, e.size)) break;  // a seed an event described already counts once
        release_range(e.address, e.address + e.size, t, 0);
        add_segment(e.address, Segment{e.size, e.stream, e.device, e.stack_id, e.op == Op::SegmentMap}, t);
        break;
      case Op::SegmentFree:
      case Op::SegmentUnmap:
        release_range(e.address, e.address + e.size, t, e.stack_id);
        break;
      case Op::FrameworkOom:
        if (const auto oom = FrameworkOomRecord::from_event(e); e.device >= 0) {
          deliver(Entry{Action::Oom, e.device, 0, oom.requested, e.stream, t, e.stack_id, oom.free});
        }
        break;
      default:
        break;
    }
  }

  void tensor_alloc(const Event& e, bool seeded, uint64_t t) {
    auto s = containing(e.address);
    const uint64_t room = s == segments_.end() ? 0 : s->first + s->second.size - e.address;
    if (s == segments_.end() || s->second.device != e.device || e.size > room) {
      ++left_out_;
      return;
    }
    Segment& seg = s->second;
    if (seeded && seg.blocks.contains(e.address)) return;  // described by an event already
    const uint64_t extent = std::min(std::max(kMinBlock, (e.size + kMinBlock - 1) / kMinBlock * kMinBlock), room);
    release_blocks(seg, e.address, e.address + extent, t);
    seg.blocks[e.address] = Block{extent, e.size, e.stack_id};
    emit(Action::Alloc, seg.device, e.address, e.size, e.stream, t, e.stack_id);
  }

  void driver_event(const Event& e, int device, uint64_t t) {
    const bool device_memory = e.kind == Kind::Linear || e.kind == Kind::Pool;
    switch (e.op) {
      case Op::Alloc:
      case Op::VmmCreate:
        if (e.result == kOutOfMemory && e.kind != Kind::HostPinned && e.device >= 0) {
          deliver(Entry{Action::Oom, e.device, 0, e.size, e.stream, t, e.stack_id, device_free_[e.device]});
        } else if (e.result == 0 && e.op == Op::Alloc && device_memory) {
          const auto a = AllocRecord::from_event(e);
          driver_alloc(e, Segment{a.size, a.stream, e.device, e.stack_id, false, false, a.pool}, t);
        }
        break;
      case Op::VmmMap:
        if (e.result == 0) driver_alloc(e, Segment{e.size, e.stream, device, e.stack_id, false, true}, t);
        break;
      case Op::DriverMemory:
        device_free_[e.device] = DriverMemoryRecord::from_event(e).free;
        break;
      case Op::Free:
        if (device_memory) driver_release(e, t, e.address, e.address + 1, [](const Segment& s) { return !s.mapping; });
        break;
      case Op::PoolDestroy:
        driver_release(e, t, 0, UINT64_MAX, [pool = PoolRecord::from_event(e).pool](const Segment& s) {
          return s.pool != 0 && s.pool == pool;
        });
        break;
      case Op::VmmUnmap:
        driver_release(e, t, e.address, e.address + e.size, [](const Segment& s) { return s.mapping; });
        break;
      case Op::ReleaseFailed: {
        // The driver refused the release this thread recorded just before: the memory is still there.
        auto undo = undo_.find(e.thread_id);
        if (undo == undo_.end()) break;
        for (auto& [address, s] : undo->second) {
          if (!overlaps(address, s.size)) add_driver_segment(address, std::move(s), t);
        }
        undo_.erase(undo);
        break;
      }
      default:
        break;
    }
  }

  void driver_alloc(const Event& e, Segment s, uint64_t t) {
    if (s.device < 0 || s.size == 0) {
      ++left_out_;
      return;
    }
    if (e.kind != Kind::Pool) s.pool = 0;
    release_range(e.address, e.address + e.size, t, 0);
    add_driver_segment(e.address, std::move(s), t);
  }

  void add_driver_segment(uint64_t address, Segment s, uint64_t t) {
    s.blocks.clear();
    s.blocks[address] = Block{s.size, s.size, s.stack};
    const Segment& added = segments_.emplace(address, std::move(s)).first->second;
    emit(Action::SegmentAlloc, added.device, address, added.size, added.stream, t, added.stack);
    emit(Action::Alloc, added.device, address, added.size, added.stream, t, added.stack);
  }

  // Releases the segments starting in [first, last) that `match` picks, remembered for a
  // ReleaseFailed.
  template <class Match>
  void driver_release(const Event& e, uint64_t t, uint64_t first, uint64_t last, Match match) {
    auto& undo = undo_[e.thread_id];
    undo.clear();
    for (auto it = segments_.lower_bound(first); it != segments_.end() && it->first < last;) {
      if (!match(it->second)) {
        ++it;
        continue;
      }
      release_segment(it, t, e.stack_id, false);
      undo.emplace_back(it->first, std::move(it->second));
      it = segments_.erase(it);
    }
  }

  // Frees the segment's blocks, then the segment (entries only: the caller erases it). `stale`:
  // the blocks were never freed in the trace.
  void release_segment(Segments::iterator it, uint64_t t, uint32_t stack, bool stale) {
    Segment& s = it->second;
    while (!s.blocks.empty()) free_block(s, s.blocks.begin(), t, stack, stale);
    emit(Action::SegmentFree, s.device, it->first, s.size, s.stream, t, stack);
  }

  void free_block(Segment& s, Blocks::iterator b, uint64_t t, uint32_t stack, bool stale) {
    if (stale) ++released_unfreed_;
    if (!b->second.free_requested) {
      emit(Action::FreeRequested, s.device, b->first, b->second.requested, s.stream, t, stack);
    }
    emit(Action::FreeCompleted, s.device, b->first, b->second.requested, s.stream, t, stack);
    s.blocks.erase(b);
  }

  // Frees the blocks of `s` overlapping [begin, end), which the trace never freed.
  void release_blocks(Segment& s, uint64_t begin, uint64_t end, uint64_t t) {
    auto b = s.blocks.upper_bound(begin);
    if (b != s.blocks.begin() && std::prev(b)->first + std::prev(b)->second.size > begin) --b;
    while (b != s.blocks.end() && b->first < end) free_block(s, b++, t, 0, true);
  }

  // Releases [begin, end): the segments it touches go whole, expandable ones lose only that range
  // (segment_unmap), with the blocks there.
  void release_range(uint64_t begin, uint64_t end, uint64_t t, uint32_t stack) {
    auto it = containing(begin);
    if (it == segments_.end()) it = segments_.lower_bound(begin);
    while (it != segments_.end() && it->first < end) {
      const uint64_t finish = it->first + it->second.size;
      if (it->second.expandable) {
        unmap(it, std::max(begin, it->first), std::min(end, finish), t, stack);
        it = segments_.lower_bound(std::min(end, finish));
      } else {
        release_segment(it, t, stack, true);
        it = segments_.erase(it);
      }
    }
  }

  // Cuts [begin, end) out of expandable segment `it`.
  void unmap(Segments::iterator it, uint64_t begin, uint64_t end, uint64_t t, uint32_t stack) {
    Segment& s = it->second;
    const uint64_t start = it->first, finish = start + s.size;
    release_blocks(s, begin, end, t);
    emit(Action::SegmentUnmap, s.device, begin, end - begin, s.stream, t, stack);
    if (end < finish) {  // what follows the cut is a segment of its own
      Segment tail{finish - end, s.stream, s.device, s.stack, true};
      tail.blocks.insert(s.blocks.lower_bound(end), s.blocks.end());
      s.blocks.erase(s.blocks.lower_bound(end), s.blocks.end());
      segments_.emplace(end, std::move(tail));
    }
    if (begin == start) {
      segments_.erase(it);
    } else {
      s.size = begin - start;
    }
  }

  // Adds a framework segment. A mapped range joins the expandable segments it touches on the same
  // device and stream, as the viewer joins them when it replays an unmap backwards.
  void add_segment(uint64_t address, Segment s, uint64_t t) {
    emit(s.expandable ? Action::SegmentMap : Action::SegmentAlloc, s.device, address, s.size, s.stream, t, s.stack);
    auto joins = [expandable = s.expandable, device = s.device, stream = s.stream](const Segment& other) {
      return expandable && other.expandable && other.device == device && other.stream == stream;
    };
    auto next = segments_.find(address + s.size);
    if (next != segments_.end() && joins(next->second)) {
      s.size += next->second.size;
      s.blocks.merge(next->second.blocks);
      segments_.erase(next);
    }
    auto it = segments_.emplace(address, std::move(s)).first;
    if (it == segments_.begin()) return;
    auto prev = std::prev(it);
    if (prev->first + prev->second.size == address && joins(prev->second)) {
      prev->second.size += it->second.size;
      prev->second.blocks.merge(it->second.blocks);
      segments_.erase(it);
    }
  }

  // The segment holding `address`, or end().
  Segments::iterator containing(uint64_t address) {
    auto it = segments_.upper_bound(address);
    if (it == segments_.begin()) return segments_.end();
    --it;
    return address - it->first < it->second.size ? it : segments_.end();
  }

  // The live block at exactly `address` and its segment; the segment is end() when there is none.
  std::pair<Segments::iterator, Blocks::iterator> block_at(uint64_t address) {
    auto s = containing(address);
    if (s == segments_.end()) return {s, {}};
    auto b = s->second.blocks.find(address);
    if (b == s->second.blocks.end()) return {segments_.end(), {}};
    return {s, b};
  }

  bool overlaps(uint64_t address, uint64_t size) {
    auto it = segments_.lower_bound(address);
    return (it != segments_.end() && it->first - address < size) || containing(address) != segments_.end();
  }

  bool framework_;
  uint64_t since_ns_;
  bool quiet_ = false;  // the event being applied lies before the window
  Sink sink_;
  Segments segments_;
  std::unordered_map<int, uint64_t> device_free_;  // the driver's free bytes at the latest failure
  std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, Segment>>> undo_;  // by thread
  uint64_t left_out_ = 0, released_unfreed_ = 0;
};

// Frames as torch writes them, {filename, line, name}, innermost first. Each stack's list and each
// distinct frame is written once and fetched from the memo afterwards.
class FrameWriter {
 public:
  FrameWriter(PickleWriter& w, const analysis::StackTable& stacks) : w_(w), stacks_(stacks) {}

  void write(uint32_t stack) {
    auto known = lists_.find(stack);
    if (known != lists_.end()) {
      w_.get(known->second);
      return;
    }
    w_.begin_list();
    auto it = stacks_.find(stack);
    if (it != stacks_.end()) {
      for (const analysis::Frame& f : it->second) frame(f);
    }
    w_.end_list();
    lists_.emplace(stack, w_.memoize());
  }

 private:
  void frame(const analysis::Frame& f) {
    const std::string filename = !f.file.empty() ? f.file : !f.module.empty() ? f.module : "??";
    std::string name =
        f.python ? (f.function.empty() ? "?" : f.function) : (f.function.empty() ? f.flame_name() : f.function);
    if (!f.note.empty()) name += " " + f.note;
    const std::string key = filename + '\n' + std::to_string(f.line) + '\n' + name;
    auto known = frames_.find(key);
    if (known != frames_.end()) {
      w_.get(known->second);
      return;
    }
    w_.begin_dict();
    w_.memo_string("filename");
    w_.memo_string(filename);
    w_.memo_string("line");
    w_.integer(f.line);
    w_.memo_string("name");
    w_.memo_string(name);
    w_.end_dict();
    frames_.emplace(key, w_.memoize());
  }

  PickleWriter& w_;
  const analysis::StackTable& stacks_;
  std::unordered_map<uint32_t, uint32_t> lists_;      // stack id -> memo slot of its frames
  std::unordered_map<std::string, uint32_t> frames_;  // frame -> memo slot
};

void write_entry(PickleWriter& w, FrameWriter& frames, const Entry& e) {
  w.begin_dict();
  w.memo_string("action");
  w.memo_string(kActionNames[static_cast<size_t>(e.action)]);
  if (e.action == Action::Oom) {
    w.memo_string("device_free");  // in place of addr, as torch writes it
    w.integer(e.device_free);
  } else {
    w.memo_string("addr");
    w.integer(e.addr);
  }
  w.memo_string("size");
  w.integer(e.size);
  w.memo_string("stream");
  w.integer(e.stream);
  w.memo_string("time_us");
  w.integer(e.time_us);
  w.memo_string("frames");
  frames.write(e.stack);
  w.end_dict();
}

void write_block(PickleWriter& w, FrameWriter& frames, uint64_t address, uint64_t size, const Block* b) {
  w.begin_dict();
  w.memo_string("address");
  w.integer(address);
  w.memo_string("size");
  w.integer(size);
  w.memo_string("requested_size");
  w.integer(b != nullptr ? b->requested : 0);
  w.memo_string("state");
  w.memo_string(b == nullptr ? "inactive" : b->free_requested ? "active_pending_free" : "active_allocated");
  w.memo_string("frames");
  frames.write(b != nullptr ? b->stack : 0);
  w.end_dict();
}

// One segment of torch's snapshot; its blocks tile it in address order, the gaps between live
// blocks as inactive ones, since the viewer places each block after the ones before it.
void write_segment(PickleWriter& w, FrameWriter& frames, uint64_t address, const Segment& s, bool framework) {
  uint64_t allocated = 0, active = 0, requested = 0;
  for (const auto& [_, b] : s.blocks) {
    if (!b.free_requested) allocated += b.size;
    active += b.size;
    requested += b.requested;
  }
  w.begin_dict();
  w.memo_string("device");
  w.integer(static_cast<uint64_t>(s.device));
  w.memo_string("address");
  w.integer(address);
  w.memo_string("total_size");
  w.integer(s.size);
  w.memo_string("allocated_size");
  w.integer(allocated);
  w.memo_string("active_size");
  w.integer(active);
  w.memo_string("requested_size");
  w.integer(requested);
  w.memo_string("stream");
  w.integer(s.stream);
  w.memo_string("segment_type");
  w.memo_string(framework && !s.expandable && s.size == kSmallSegment ? "small" : "large");
  w.memo_string("segment_pool_id");
  w.begin_tuple();
  w.integer(0);
  w.integer(0);
  w.end_tuple();
  w.memo_string("is_expandable");
  w.boolean(s.expandable);
  w.memo_string("frames");
  frames.write(s.stack);
  w.memo_string("blocks");
  w.begin_list();
  uint64_t cursor = address;
  for (const auto& [at, b] : s.blocks) {
    if (at > cursor) write_block(w, frames, cursor, at - cursor, nullptr);
    write_block(w, frames, at, b.size, &b);
    cursor = at + b.size;
  }
  if (cursor < address + s.size) write_block(w, frames, cursor, address + s.size - cursor, nullptr);
  w.end_list();
  w.end_dict();
}

// Trace entries by time (µs since the start), for choosing the window of a thinned export: 65536
// buckets, whose width doubles whenever an entry lies past the last one.
class EntryTimes {
 public:
  void add(uint64_t t_us) {
    while (t_us / width_ >= kBuckets) coarsen();
    ++counts_[t_us / width_];
  }

  // The µs range [from, to] of at most `max` entries: the latest ones; or, when `peak_us` lies
  // before them, those around it. Whole buckets only, so a bucket of more than `max` entries is
  // kept whole (then the range holds more).
  std::pair<uint64_t, uint64_t> window(uint64_t max, std::optional<uint64_t> peak_us) const {
    size_t from = kBuckets;
    for (uint64_t kept = 0; from > 0 && (kept + counts_[from - 1] <= max || kept == 0);) kept += counts_[--from];
    while (from + 1 < kBuckets && counts_[from] == 0) ++from;  // from the first entry kept
    if (!peak_us || *peak_us / width_ >= from) return {from * width_, UINT64_MAX};
    size_t lo = *peak_us / width_, hi = lo;
    uint64_t kept = counts_[lo];
    for (bool grew = true; grew;) {
      grew = false;
      if (hi + 1 < kBuckets && kept + counts_[hi + 1] <= max) kept += counts_[++hi], grew = true;
      if (lo > 0 && kept + counts_[lo - 1] <= max) kept += counts_[--lo], grew = true;
    }
    while (lo < hi && counts_[lo] == 0) ++lo;  // from the first entry kept to the last
    while (hi > lo && counts_[hi] == 0) --hi;
    return {lo * width_, (hi + 1) * width_ - 1};
  }

 private:
  static constexpr size_t kBuckets = 1 << 16;
  void coarsen() {
    for (size_t i = 0; i < kBuckets / 2; ++i) counts_[i] = counts_[2 * i] + counts_[2 * i + 1];
    std::fill(counts_.begin() + kBuckets / 2, counts_.end(), 0);
    width_ *= 2;
  }
  std::vector<uint64_t> counts_ = std::vector<uint64_t>(kBuckets);
  uint64_t width_ = 1;
};

// What the first pass learns from the entries of one way of reading the run.
struct Survey {
  std::set<uint32_t> stacks;
  std::map<int, uint64_t> entries;  // by device
  EntryTimes times;
  uint64_t total() const {
    uint64_t n = 0;
    for (const auto& [_, count] : entries) n += count;
    return n;
  }
  VizReplay::Sink sink() {
    return [this](const Entry& e) {
      if (e.stack != 0) stacks.insert(e.stack);
      ++entries[e.device];
      times.add(e.time_us);
    };
  }
};

// The viewer's model needs every event from the start: each pass replays the run up to the
// window's end, and the VizReplay leaves out the entries before its start.
bool open_model_replay(Context& ctx, const reader::Window& window, Replay& replay) {
  if (!replay.open(ctx.run.path, reader::Window{0, window.until_ns}, ctx.progress, ctx.error)) return false;
  if (ctx.progress != nullptr) ctx.progress->expect(replay.records_in_file());
  return true;
}

// The first pass over `window`: both readings of the run (the accounting then says which one
// applies), and the model's state at the window's end.
struct Surveyed {
  Survey framework_survey, driver_survey;
  VizReplay framework_replay{true, 0, nullptr}, driver_replay{false, 0, nullptr};
  bool framework = false;
  std::optional<uint64_t> peak_us;  // when the largest allocated peak of a device was reached
  int devices = 0;                  // device_traces has a list for every device up to the highest used
  const VizReplay& final_state() const { return framework ? framework_replay : driver_replay; }
  const Survey& survey() const { return framework ? framework_survey : driver_survey; }
};

bool survey(Context& ctx, const reader::Window& window, Surveyed& s) {
  s.framework_replay = VizReplay(true, window.since_ns, s.framework_survey.sink());
  s.driver_replay = VizReplay(false, window.since_ns, s.driver_survey.sink());
  Replay replay;
  if (!open_model_replay(ctx, window, replay)) return false;
  while (replay.next()) {
    s.framework_replay.apply(replay.event(), replay);
    s.driver_replay.apply(replay.event(), replay);
  }
  if (replay.failed()) {
    ctx.error = replay.error();
    return false;
  }
  s.framework = replay.accounting().framework().attached;
  uint64_t peak = 0;
  for (const auto& [device, d] : replay.accounting().devices()) {
    const uint64_t bytes = s.framework ? d.framework.allocated.peak : d.allocated.peak;
    const uint64_t at = s.framework ? d.framework.allocated_peak_ns : d.allocated_peak_ns;
    if (bytes > peak && at != 0) peak = bytes, s.peak_us = replay.since_start(at) / 1000;
    s.devices = std::max(s.devices, device + 1);
  }
  const Survey& chosen = s.survey();
  if (!chosen.entries.empty()) s.devices = std::max(s.devices, chosen.entries.rbegin()->first + 1);
  for (const auto& [_, seg] : s.final_state().segments()) s.devices = std::max(s.devices, seg.device + 1);
  return true;
}

std::string seconds(uint64_t us) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6f s", static_cast<double>(us) / 1e6);
  return text;
}

// More entries than --max-events: the window narrowed to the latest entries, or to those around
// the allocated peak when it is older, and surveyed again; a note says what was kept.
bool thin(Context& ctx, reader::Window& window, Surveyed& s) {
  const uint64_t found = s.survey().total();
  if (ctx.max_entries == 0 || found <= ctx.max_entries) return true;
  std::optional<uint64_t> peak = s.peak_us;
  if (peak && (*peak * 1000 < window.since_ns || window.after(*peak * 1000))) peak.reset();  // not in the window
  const auto [from_us, to_us] = s.survey().times.window(ctx.max_entries, peak);
  window.since_ns = std::max(window.since_ns, from_us * 1000);
  if (to_us != UINT64_MAX) window.until_ns = std::min(window.until_ns.value_or(UINT64_MAX), to_us * 1000 + 999);
  s = Surveyed{};
  if (!survey(ctx, window, s)) return false;
  const bool around_peak = to_us != UINT64_MAX;
  ctx.notes.push_back(std::to_string(found) + " trace entries; kept the " + std::to_string(s.survey().total()) +
                      (around_peak ? " around the allocated peak" : " latest") + ", from " + seconds(from_us) +
                      (around_peak ? " to " + seconds(to_us) : "") +
                      " (--max-events " + std::to_string(ctx.max_entries) + "; 0 keeps all)" +
                      (around_peak ? ": the snapshot is the state at the last one" : ""));
  return true;
}

}  // namespace

void write_memory_viz(Context& ctx) {
  reader::Window window = ctx.replay.window();
  Surveyed surveyed;
  if (!survey(ctx, window, surveyed) || !thin(ctx, window, surveyed)) return;
  const bool framework = surveyed.framework;
  const VizReplay& final_state = surveyed.final_state();
  const Survey& survey = surveyed.survey();

  const reader::Attribution attribution = reader::read_attribution(ctx.run.path + "/" + kAttributionFile);
  if (!attribution.error.empty()) {
    ctx.error = attribution.error;
    return;
  }
  analysis::StackTable stacks;
  if (!survey.stacks.empty()) {
    stacks = analysis::Symbolizer(attribution).symbolize({survey.stacks.begin(), survey.stacks.end()});
  }

  PickleWriter w(ctx.out.buffer());
  FrameWriter frames(w, stacks);
  w.begin();
  w.begin_dict();
  w.memo_string("segments");
  w.begin_list();
  for (const auto& [address, s] : final_state.segments()) {
    write_segment(w, frames, address, s, framework);
    ctx.out.written();
  }
  w.end_list();
  w.memo_string("device_traces");
  w.begin_list();
  uint64_t entries = 0;
  for (int device = 0; device < surveyed.devices; ++device) {
    w.begin_list();
    auto count = survey.entries.find(device);
    if (count != survey.entries.end()) {  // one more pass over the trace, writing this device's entries
      Replay replay;
      if (!open_model_replay(ctx, window, replay)) return;
      VizReplay writer(framework, window.since_ns, [&](const Entry& e) {
        if (e.device != device) return;
        write_entry(w, frames, e);
        ctx.out.written();
      });
      while (replay.next()) writer.apply(replay.event(), replay);
      if (replay.failed()) {
        ctx.error = replay.error();
        return;
      }
      entries += count->second;
    }
    w.end_list();
  }
  w.end_list();
  w.memo_string("allocator_settings");
  w.begin_dict();
  w.end_dict();
  w.end_dict();
  w.end();
  ctx.out.written();

  if (!framework) {
    ctx.notes.push_back(
        "no PyTorch caching-allocator events in this run: each device allocation is a segment of its "
        "own holding one block");
  }
  if (final_state.left_out() > 0) {
    ctx.notes.push_back(std::to_string(final_state.left_out()) +
                        " allocations left out: they lie outside every segment the trace reserved, which the viewer "
                        "cannot draw");
  }
  if (final_state.released_unfreed() > 0) {
    ctx.notes.push_back(std::to_string(final_state.released_unfreed()) +
                        " blocks the trace never freed are freed where their memory was handed out again or released");
  }
  ctx.written =
      std::to_string(entries) + " trace entries, " + std::to_string(final_state.segments().size()) + " segments";
}

}  // namespace gmp::tool::exporter
