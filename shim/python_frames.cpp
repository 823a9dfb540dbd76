#include "python_frames.h"

#include <dlfcn.h>

#include <atomic>
#include <cstring>
#include <string>

#include "../collector/intern_table.h"
#include "real_driver.h"

namespace gmp::shim {
namespace {

// CPython's C API, resolved from the process (the interpreter is the executable or libpython).
// Only functions present and unchanged from 3.9 to 3.13; no struct layouts.
struct PyApi {
  int (*is_initialized)();
  int (*gil_check)();
  void* (*current_frame)();                 // PyEval_GetFrame: borrowed
  void* (*frame_code)(void*);               // PyFrame_GetCode: new reference
  void* (*frame_back)(void*);               // PyFrame_GetBack: new reference
  int (*frame_line)(void*);                 // PyFrame_GetLineNumber
  void* (*get_attr)(void*, const char*);    // PyObject_GetAttrString: new reference
  const char* (*utf8)(void*);               // PyUnicode_AsUTF8: owned by the string
  void (*incref)(void*);
  void (*decref)(void*);
  void (*err_fetch)(void**, void**, void**);
  void (*err_restore)(void*, void*, void*);
  bool ok = false;
};

template <typename T>
bool lookup(T& fn, const char* name) {
  fn = reinterpret_cast<T>(real_dlsym()(RTLD_DEFAULT, name));
  return fn != nullptr;
}

PyApi resolve() {
  PyApi a{};
  a.ok = lookup(a.is_initialized, "Py_IsInitialized") && lookup(a.gil_check, "PyGILState_Check") &&
         lookup(a.current_frame, "PyEval_GetFrame") && lookup(a.frame_code, "PyFrame_GetCode") &&
         lookup(a.frame_back, "PyFrame_GetBack") && lookup(a.frame_line, "PyFrame_GetLineNumber") &&
         lookup(a.get_attr, "PyObject_GetAttrString") && lookup(a.utf8, "PyUnicode_AsUTF8") &&
         lookup(a.incref, "Py_IncRef") && lookup(a.decref, "Py_DecRef") && lookup(a.err_fetch, "PyErr_Fetch") &&
         lookup(a.err_restore, "PyErr_Restore");
  return a;
}

const PyApi& api() {
  static const PyApi a = resolve();  // first use is inside an allocation, after the interpreter loaded
  return a;
}

// Code object -> its (file, function) names, and (code, line) -> interned frame id. Code objects
// in the first table are kept alive by a reference we own, so their addresses are never reused
// and their name strings stay valid. Both tables are guarded by a spin lock: the GIL already
// serialises them on ordinary CPython, the lock covers free-threaded builds.
struct CodeNames {  // plain data: no destructors run at exit while other threads may still allocate
  void* code;
  char* file;  // malloc'd, never freed: the code object is never freed either
  char* function;
};
constexpr size_t kCodes = 1 << 14;
constexpr size_t kLines = 1 << 16;
CodeNames g_codes[kCodes];
struct LineKey {
  void* code;
  int line;
  uint32_t id;
};
LineKey g_lines[kLines];
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;

size_t slot_of(const void* p, int line, size_t size) {
  uint64_t h = reinterpret_cast<uintptr_t>(p) * 0x9E3779B97F4A7C15ull ^ static_cast<uint64_t>(line) * 0xff51afd7ed558ccdull;
  return static_cast<size_t>(h >> 20) & (size - 1);
}

char* attr_utf8(const PyApi& py, void* obj, const char* name) {
  void* s = py.get_attr(obj, name);
  const char* text = s != nullptr ? py.utf8(s) : nullptr;
  char* out = strdup(text != nullptr ? text : "?");
  if (s != nullptr) py.decref(s);
  return out;
}

void release_exception(const PyApi& py, void* type, void* value, void* trace) {
  for (void* o : {type, value, trace}) {
    if (o != nullptr) py.decref(o);
  }
}

const CodeNames* names_for(const PyApi& py, void* code) {
  for (size_t probe = 0, i = slot_of(code, 0, kCodes); probe < 64; ++probe, i = (i + 1) & (kCodes - 1)) {
    CodeNames& c = g_codes[i];
    if (c.code == code) return &c;
    if (c.code != nullptr) continue;
    // Attribute reads can set a Python exception; the application's pending one is kept.
    void *type, *value, *trace, *our_type, *our_value, *our_trace;
    py.err_fetch(&type, &value, &trace);
    c.file = attr_utf8(py, code, "co_filename");
    c.function = attr_utf8(py, code, "co_name");
    py.err_fetch(&our_type, &our_value, &our_trace);
    release_exception(py, our_type, our_value, our_trace);
    py.err_restore(type, value, trace);
    py.incref(code);
    c.code = code;
    return &c;
  }
  return nullptr;  // table crowded: this frame is skipped
}

uint32_t frame_id(const PyApi& py, void* code, int line) {
  for (size_t probe = 0, i = slot_of(code, line, kLines); probe < 64; ++probe, i = (i + 1) & (kLines - 1)) {
    LineKey& k = g_lines[i];
    if (k.code == code && k.line == line) return k.id;
    if (k.code != nullptr) continue;
    const CodeNames* names = names_for(py, code);
    if (names == nullptr) return 0;
    std::string record = names->file;  // file NUL function NUL line (4 bytes)
    record.push_back('\0');
    record += names->function;
    record.push_back('\0');
    record.append(reinterpret_cast<const char*>(&line), sizeof line);
    const uint32_t id = intern_table().intern(InternType::PyFrame, record.data(), static_cast<uint32_t>(record.size()));
    if (id != 0) k = {code, line, id};
    return id;
  }
  return 0;
}

}  // namespace

size_t capture_python_frames(uint64_t* out, size_t max) {
  const PyApi& py = api();
  if (!py.ok || max == 0 || !py.is_initialized() || !py.gil_check()) return 0;
  void* frame = py.current_frame();
  if (frame == nullptr) return 0;
  py.incref(frame);  // so every frame in the walk is released the same way
  while (g_lock.test_and_set(std::memory_order_acquire)) {
  }
  size_t n = 0;
  while (frame != nullptr && n < max) {
    void* code = py.frame_code(frame);
    const uint32_t id = code != nullptr ? frame_id(py, code, py.frame_line(frame)) : 0;
    if (code != nullptr) py.decref(code);
    if (id != 0) out[n++] = kPythonFrameTag | id;
    void* back = py.frame_back(frame);
    py.decref(frame);
    frame = back;
  }
  g_lock.clear(std::memory_order_release);
  if (frame != nullptr) py.decref(frame);
  return n;
}

}  // namespace gmp::shim
