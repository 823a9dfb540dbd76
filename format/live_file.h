// live.bin (docs/live.md, "The live file"): the figures of a running process for readers outside it
// (`gpumemprof top`, `gpumemprof run --live`). The collector rewrites it after its passes; any number
// of readers copy it whenever they like, and neither side ever waits for the other.
//
// Encoding. One fixed-size file of one version, little-endian, every field naturally aligned: the
// struct LiveFile below is the layout, byte for byte (static_asserts pin its size and the offsets a
// reader of another version needs). The file is made at its full size (disk space allocated at once,
// so no later write can fail for space) and only ever rewritten in place.
//
// Consistency: a sequence lock. `seq` (offset 16) is even when the file is consistent and odd while
// the collector rewrites it. The writer (LiveFileWriter) does three separate writes: `seq` + 1, the
// changed bytes, `seq` + 2. A reader (read_live_file) copies `seq`, the whole file, then `seq`
// again: equal and even, the copy is one consistent snapshot; otherwise it tries again. The writer
// never looks at readers, so a reader that is slow, crashes or hangs mid-read changes nothing;
// writes are positioned writes of the collector thread (pwrite), never stores from the program's
// threads, and readers use pread, so nobody holds a mapping that could fault.
//
// Freshness: `heartbeat_realtime_ns` is rewritten at least every kHeartbeatNs while the process
// lives, and `state` says how it ended. A file whose state is still Running but whose process is
// gone (killed, crashed) is told apart by the reader (tools/reader/live_reader.h): same boot and
// PID namespace, the pid and its start time; otherwise a heartbeat older than kStaleNs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gmp::live {

inline constexpr char kMagic[8] = {'G', 'M', 'P', 'L', 'I', 'V', 'E', '1'};
inline constexpr uint32_t kVersion = 1;

inline constexpr int kDevices = 16;           // device ordinals 0-15
inline constexpr int kTopAllocations = 16;    // the largest live allocations kept, per level
inline constexpr int kNotices = 32;           // the latest OOMs, alerts and cleanups
inline constexpr int kHistorySeconds = 600;   // the allocated and reserved history (ten minutes)
inline constexpr uint64_t kHeartbeatNs = 1'000'000'000;  // the writer's heartbeat, at least
inline constexpr uint64_t kStaleNs = 10'000'000'000;     // no heartbeat for this long: not alive

enum class State : uint32_t {
  Running = 1,
  Exited = 2,    // exit() or return from main: the figures are the final ones
  Signalled = 3, // a fatal signal; the final figures were written by the signal's flush
  Exec = 4,      // the process replaced its image; a profiled new image has a run directory of its own
};

// A device's figures, as the accounting has them at the last publish (docs/accounting.md).
struct LiveDevice {
  int32_t ordinal;  // -1: this slot is unused
  uint32_t flags;   // kFramework, kNvml, kGraphs
  uint64_t total_bytes;
  // Driver level.
  uint64_t allocated, allocated_peak, reserved, reserved_peak;
  uint64_t live_allocations;  // live allocations and tensors (docs/accounting.md §Counts), as of `top_realtime_ns`
  uint64_t alloc_count, free_count, failed_allocs;
  // The framework's caching allocator (PyTorch's), with kFramework: tensors and its segments.
  uint64_t tensors, tensors_peak, framework_reserved, framework_reserved_peak;
  uint64_t cached;        // framework_reserved less tensors
  uint64_t outside, outside_peak;  // reserved outside the framework's segments
  uint64_t pending_free;  // tensors freed whose free has not completed
  // CUDA graphs' memory pool, as the driver last reported it (kGraphs).
  uint64_t graph_reserved, graph_used;
  // The latest NVML sample (kNvml): the device as nvidia-smi sees it, and this process's share.
  uint64_t nvml_device_used, nvml_device_total, nvml_process_used, nvml_process_used_peak;
  uint64_t ooms;          // allocation calls that ran out of memory on this device
  uint64_t alerts_fired;  // alerts of any type fired for this device
  uint64_t reserved_words[4];

  static constexpr uint32_t kFramework = 1, kNvml = 2, kGraphs = 4;
};

// One of the largest live allocations: a driver allocation (level 0) or a tensor (level 1).
struct LiveTop {
  uint64_t address, size;
  uint64_t realtime_ns;  // when it was made
  uint32_t stack_id;     // its call stack in attribution.jsonl; 0: none captured
  uint32_t thread_id;
  int16_t device;
  uint8_t kind, api;     // event.h's Kind and Api
  uint8_t level;         // kDriver or kTensor
  uint8_t pad[3];
  static constexpr uint8_t kDriver = 0, kTensor = 1;
};

// An OOM, an alert fired or cleared, or a watchdog's cleanup.
struct LiveNotice {
  uint64_t realtime_ns;
  uint64_t size;       // OOMs: the bytes asked for; alert: its threshold; cleanup: the bytes released
  uint64_t allocated;  // the device's allocated and reserved just after it
  uint64_t reserved;
  uint32_t stack_id;   // OOM: the failing call's stack
  int16_t device;
  uint8_t type;        // kOom, ...
  uint8_t alert_type;  // event.h's AlertType, for alerts
  // kFrameworkOom: the framework raised its out-of-memory error (PyTorch's OutOfMemoryError),
  // whether or not a driver call failed first.
  static constexpr uint8_t kOom = 1, kAlertFired = 2, kAlertCleared = 3, kCleanup = 4, kFrameworkOom = 5;
};

// One second of history: the highest allocated and reserved of each device during that second.
struct LiveSecond {
  uint64_t second;  // realtime seconds since the epoch; 0: empty
  uint64_t allocated_max[kDevices];
  uint64_t reserved_max[kDevices];
};

struct LiveFile {
  // The part every version keeps at these offsets.
  char magic[8];
  uint32_t version;
  uint32_t pad0;
  uint64_t seq;        // the sequence lock: odd while being rewritten
  uint64_t file_size;  // sizeof(LiveFile) of the writer's version
  // Who writes it (set once).
  uint64_t pid, pid_namespace;   // the namespace's inode (/proc/self/ns/pid)
  uint64_t start_ticks;          // field 22 of /proc/PID/stat: with the pid, this very process
  uint64_t start_realtime_ns;
  int64_t rank, local_rank, world_size;  // -1 when no launcher says
  char boot_id[40];     // /proc/sys/kernel/random/boot_id
  char host[64];
  char program[128];    // the script for Python (settings/program_name.h), else the executable
  char job_id[64];
  char run_dir[512];    // absolute; empty when it does not fit
  // Now.
  uint32_t state;       // State
  uint32_t devices_used;  // slots of `devices` in use, in order of first use
  uint64_t heartbeat_realtime_ns;
  uint64_t published;   // publishes so far
  uint64_t events, lost;
  uint64_t oom_failures, oom_bundles, oom_recovered;
  uint64_t alerts_fired[5];  // by AlertType value
  uint64_t cleanups, cleanup_bytes;
  uint64_t host_pinned, host_pinned_peak;
  uint64_t top_realtime_ns;  // when `top` was last rebuilt
  uint64_t notices_total;    // notices ever written: the latest is notices[(notices_total - 1) % kNotices]
  uint64_t history_latest;   // the latest second written into `history` (0: none)
  uint64_t reserved_words[8];
  LiveDevice devices[kDevices];
  LiveTop top[2 * kTopAllocations];  // the largest first; size 0 ends the list
  LiveNotice notices[kNotices];
  LiveSecond history[kHistorySeconds];  // second s in slot s % kHistorySeconds
};

static_assert(offsetof(LiveFile, seq) == 16 && offsetof(LiveFile, file_size) == 24);
static_assert(sizeof(LiveDevice) == 240 && sizeof(LiveTop) == 40 && sizeof(LiveNotice) == 40);
static_assert(sizeof(LiveSecond) == 8 + 8 * kDevices * 2);
static_assert(sizeof(LiveFile) % 8 == 0);

// A NUL-terminated copy of `text` into `field`, cut to fit (never mid-character of UTF-8).
void set_text(char* field, size_t size, const std::string& text);
template <size_t N>
void set_text(char (&field)[N], const std::string& text) {
  set_text(field, N, text);
}
// The text of a field the writer filled (NUL-terminated, or the whole field).
template <size_t N>
std::string text_of(const char (&field)[N]) {
  size_t n = 0;
  while (n < N && field[n] != '\0') ++n;
  return std::string(field, n);
}

// An empty file: magic, version and size set, every device slot unused.
void init_live_file(LiveFile& f);

// The writer's side: rewrites a descriptor's file by the sequence lock. Only one writer per file.
class LiveFileWriter {
 public:
  // Takes `fd` (opened for writing, not O_APPEND, already allocated to sizeof(LiveFile)) and writes
  // `initial` whole. False with errno set when it could not be written.
  bool start(int fd, const LiveFile& initial);
  // Rewrites, under the lock, the fields every publish changes (from `state` to the devices),
  // with `figures` the devices, top allocations and notices too, and with `history_from` (not 0)
  // the history slots of the seconds from it to `f.history_latest` (at most the whole ring). `f`
  // is the writer's whole current copy; `f.seq` is the writer's. False with errno set when a write
  // failed (the lock is released all the same).
  bool publish(LiveFile& f, bool figures, uint64_t history_from);
  int fd() const { return fd_; }
  void set_fd(int fd) { fd_ = fd; }  // the same file, reopened

 private:
  bool write_seq(uint64_t seq);
  int fd_ = -1;
};

enum class ReadResult {
  Ok,
  NotLive,   // not a live file of this version (bad magic, another version, short)
  Torn,      // never consistent in the attempts allowed: a writer stopped mid-publish (its process
             // killed then) or preempted for long; `out` holds the last copy, possibly mixed
  Failed,    // the read itself failed (errno)
};
// One consistent snapshot of the file open at `fd` into `out`. Never waits: a publish takes
// microseconds, so a few immediate retries are enough unless the writer stopped.
ReadResult read_live_file(int fd, LiveFile& out);

}  // namespace gmp::live
