#include "python_frames.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "../collector/seam.h"
#include "python_layouts.h"
#include "thread_caches.h"
#include "real_driver.h"
#include "utf8.h"

namespace gmp::shim {
namespace {

// What the reader needs from the interpreter: its version (for the layout), this thread's state,
// the line table lookup, and the type objects that prove a pointer is what the layout says.
// Every function here is safe without the GIL: the first two read process-wide flags or a
// thread-specific slot, PyCode_Addr2Line only reads the code object's immutable line table.
struct Interpreter {
  const PythonLayout* layout = nullptr;
  int (*is_initialized)() = nullptr;
  const char* (*this_thread_state)() = nullptr;  // PyGILState_GetThisThreadState
  int (*addr2line)(const void*, int) = nullptr;   // PyCode_Addr2Line
  const void* (*main_interpreter)() = nullptr;    // PyInterpreterState_Main: reads the runtime
  const void* code_type = nullptr;                // &PyCode_Type
  const void* unicode_type = nullptr;             // &PyUnicode_Type
};

template <typename T>
bool lookup(T& out, const char* name) {
  out = reinterpret_cast<T>(real_dlsym()(RTLD_DEFAULT, name));
  return out != nullptr;
}

Interpreter resolve() {
  Interpreter py;
  const char* (*version)() = nullptr;
  int major = 0, minor = 0;
  if (!lookup(version, "Py_GetVersion") || std::sscanf(version(), "%d.%d", &major, &minor) != 2) return py;
  const bool ok = lookup(py.is_initialized, "Py_IsInitialized") &&
                  lookup(py.this_thread_state, "PyGILState_GetThisThreadState") &&
                  lookup(py.addr2line, "PyCode_Addr2Line") && lookup(py.code_type, "PyCode_Type") &&
                  lookup(py.unicode_type, "PyUnicode_Type") && lookup(py.main_interpreter, "PyInterpreterState_Main");
  // A --with-trace-refs build puts two more pointers in every object header: not our layout.
  const void* trace_refs = real_dlsym()(RTLD_DEFAULT, "_Py_PrintReferences");
  if (ok && trace_refs == nullptr) py.layout = python_layout(major, minor);
  return py;
}

const Interpreter& interpreter() {
  static const Interpreter py = resolve();  // first use is inside an allocation, after the interpreter loaded
  return py;
}

template <typename T>
T field(const char* object, uint16_t offset) {
  T value;
  std::memcpy(&value, object + offset, sizeof value);
  return value;
}

// Pointers the reader follows are checked for plausibility first: a layout that does not match
// the running interpreter gives values that fail these checks rather than a wild read.
bool aligned(const char* p) { return p != nullptr && (reinterpret_cast<uintptr_t>(p) & 7) == 0; }

bool is_a(const char* object, const void* type) {
  return aligned(object) && field<const void*>(object, kObjectType) == type;
}

// A str object's text as UTF-8, read from its characters; "?" for anything but a compact string
// (names and file names of code objects always are).
void append_text(const Interpreter& py, const char* s, std::string& out) {
  constexpr int64_t kMaxChars = 4096;
  const auto state = is_a(s, py.unicode_type) ? field<uint32_t>(s, kUnicodeState) : 0;
  const uint32_t kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  const int64_t length = compact != 0 ? field<int64_t>(s, kUnicodeLength) : -1;
  if (length < 0 || length > kMaxChars || (kind != 1 && kind != 2 && kind != 4)) {
    out += '?';
    return;
  }
  const char* chars = s + (ascii != 0 ? py.layout->ascii_size : py.layout->compact_size);
  for (int64_t i = 0; i < length; ++i) {
    uint32_t c = 0;
    std::memcpy(&c, chars + i * kind, kind);  // little-endian: the low bytes hold the code point
    utf8::append(out, c);
  }
}

// Byte offset of the frame's current instruction in its code, as PyCode_Addr2Line takes it;
// -1 (the function's first line) before the frame has run an instruction.
int instruction_offset(const PythonLayout& l, const char* frame, const char* code) {
  if (l.code_units == 0) {  // 3.10: an instruction index
    const int lasti = field<int>(frame, l.frame_instr);
    return lasti < 0 ? -1 : lasti * 2;
  }
  const int64_t offset = field<const char*>(frame, l.frame_instr) - (code + l.code_units);
  const int64_t size = field<int64_t>(code, kVarObjectSize) * 2;
  return offset >= 0 && offset < size ? static_cast<int>(offset) : -1;
}

// (code, file, name, offset) -> interned frame id. The code object may die and another take its
// address; keying on its name strings' addresses too makes a stale hit need a new function with
// the same name objects at the same instruction, and then the record would be the same anyway.
// Threads capture without the GIL, so nothing else serialises them, and the table takes no lock:
// a slot is claimed by setting its code pointer, filled, then published by its id (release); a
// reader compares the other fields only after seeing the id (acquire). A slot claimed but not yet
// published (or never, by a thread that did not survive fork()) is passed over, and the frame is
// interned directly: the same id, only slower.
using FrameKey = PyFrameKey;
struct FrameSlot {
  std::atomic<const char*> code;
  std::atomic<uint32_t> id;  // 0 until the claimer has filled the slot
  const char* file;
  const char* name;
  int offset;
};
constexpr size_t kFrames = 1 << 16;
FrameSlot g_frames[kFrames];

uint64_t frame_hash(const FrameKey& k) {
  const uint64_t h = reinterpret_cast<uintptr_t>(k.code) * 0x9E3779B97F4A7C15ull;
  return h ^ static_cast<uint64_t>(static_cast<uint32_t>(k.offset)) * 0xff51afd7ed558ccdull;
}

size_t slot_of(const FrameKey& k) { return static_cast<size_t>(frame_hash(k) >> 24) & (kFrames - 1); }

uint32_t intern_frame(const Interpreter& py, const FrameKey& k) {
  std::string record;  // file NUL function NUL line (4 bytes), as attribution_writer reads it
  append_text(py, k.file, record);
  record.push_back('\0');
  append_text(py, k.name, record);
  record.push_back('\0');
  const int line = py.addr2line(k.code, k.offset);
  record.append(reinterpret_cast<const char*>(&line), sizeof line);
  return intern_python_frame(record.data(), static_cast<uint32_t>(record.size()));
}

uint32_t shared_frame_id(const FrameKey& key, const Interpreter& py) {
  for (size_t probe = 0, i = slot_of(key); probe < 64; ++probe, i = (i + 1) & (kFrames - 1)) {
    FrameSlot& s = g_frames[i];
    const char* claimed = s.code.load(std::memory_order_acquire);
    if (claimed == nullptr && s.code.compare_exchange_strong(claimed, key.code, std::memory_order_acq_rel)) {
      s.file = key.file;
      s.name = key.name;
      s.offset = key.offset;
      const uint32_t id = intern_frame(py, key);
      s.id.store(id, std::memory_order_release);  // 0 (table full) leaves the slot unpublished
      return id;
    }
    if (claimed != key.code) continue;
    const uint32_t id = s.id.load(std::memory_order_acquire);
    if (id != 0 && s.offset == key.offset && s.file == key.file && s.name == key.name) return id;
  }
  return intern_frame(py, key);  // table crowded: still correct, only slower
}

// A loop allocates from the same few hundred frames over and over: the thread's cache of the
// frames it looked up (thread_caches.h) is a few lines it keeps hot, where the shared table above
// (2.5 MiB, touched by nobody between two allocations) costs a cache miss a frame in a real
// program. The same key as the shared table, so a hit is the id it would give.
uint32_t frame_id(const Interpreter& py, const char* code, int offset, ThreadCaches* caches) {
  const PythonLayout& l = *py.layout;
  const FrameKey key{code, field<const char*>(code, l.code_filename), field<const char*>(code, l.code_name), offset};
  if (caches == nullptr) return shared_frame_id(key, py);
  auto& set = caches->frames[(frame_hash(key) >> 40) & (ThreadCaches::kFrameSets - 1)];
  if (const CachedFrame* hit = set.find([&](const CachedFrame& f) { return f.holds(key); })) return hit->id;
  const uint32_t id = shared_frame_id(key, py);
  if (id != 0) set.replace() = {key.code, key.file, key.name, key.offset, id};
  return id;
}

// The frame's instruction field as stored, for FrameMemo: equal values in one frame running one code
// object are the same instruction.
uint64_t instruction_word(const PythonLayout& l, const char* frame) {
  if (l.code_units == 0) return static_cast<uint32_t>(field<int>(frame, l.frame_instr));
  return field<uint64_t>(frame, l.frame_instr);
}

FrameMemo* memo_of(ThreadCaches* caches, const char* frame) {
  if (caches == nullptr) return nullptr;
  const uint64_t h = (reinterpret_cast<uintptr_t>(frame) >> 4) * 0x9E3779B97F4A7C15ull;
  return &caches->memos[h >> 56 & (ThreadCaches::kMemos - 1)];
}

}  // namespace

size_t walk_python_frames(PythonFrameRef* out, size_t max, const WalkHint* hint) {
  const Interpreter& py = interpreter();
  if (py.layout == nullptr || max == 0 || py.is_initialized() == 0) return 0;
  const char* thread = py.this_thread_state();
  // The thread state's `interp` must be the main interpreter: a check that the layout fits this
  // build (subinterpreters' threads get native frames only).
  if (!aligned(thread) || field<const void*>(thread, kThreadInterp) != py.main_interpreter()) return 0;
  const PythonLayout& l = *py.layout;
  // This thread's own frames cannot change while it is here, in native code, GIL or not.
  const char* frame = field<const char*>(thread, l.thread_frame);
  if (l.cframe_current >= 0 && aligned(frame)) frame = field<const char*>(frame, l.cframe_current);
  constexpr int kMaxHops = 1024;  // bounds the walk even if a chain were ever corrupt
  size_t n = 0;
  for (int hops = 0; aligned(frame) && n < max && hops < kMaxHops;
       ++hops, frame = field<const char*>(frame, l.frame_previous)) {
    if (l.frame_owner >= 0 && field<int8_t>(frame, l.frame_owner) == l.owner_cstack) continue;
    out[n++] = {frame, field<const char*>(frame, l.frame_code), instruction_word(l, frame)};
    if (hint != nullptr && n == hint->after) hint->walked(out, n, hint->arg);
  }
  if (hint != nullptr && n < hint->after && n != 0) hint->walked(out, n, hint->arg);
  return n;
}

size_t python_frame_ids(const PythonFrameRef* frames, size_t n, uint64_t* out) {
  const Interpreter& py = interpreter();
  const PythonLayout& l = *py.layout;
  ThreadCaches* caches = thread_caches();
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto [frame, code, instr] = frames[i];
    FrameMemo* memo = memo_of(caches, frame);
    if (memo != nullptr && memo->id != 0 && memo->frame == frame && memo->code == code && memo->instr == instr) {
      out[count++] = kPythonFrameTag | memo->id;
      continue;
    }
    if (!is_a(code, py.code_type)) continue;
    if (const uint32_t id = frame_id(py, code, instruction_offset(l, frame, code), caches); id != 0) {
      out[count++] = kPythonFrameTag | id;
      if (memo != nullptr) *memo = {frame, code, instr, id};
    }
  }
  return count;
}

size_t capture_python_frames(uint64_t* out, size_t max) {
  constexpr size_t kMaxWalk = 128;  // GPUMEMPROF_STACKS' ceiling
  PythonFrameRef walked[kMaxWalk];
  return python_frame_ids(walked, walk_python_frames(walked, max < kMaxWalk ? max : kMaxWalk, nullptr), out);
}

}  // namespace gmp::shim
