// Checks shim/python_layouts.h against the headers of the Python it is compiled with: every
// offset the frame reader uses, from offsetof on the interpreter's own structs. Built by CTest
// for this machine's Python and by scripts/gpu_check.py for the GPU machine's. Prints one line
// per field and exits 1 on any difference, 2 when the version has no layout at all.
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_MINOR_VERSION == 10
#include <frameobject.h>
#else
#include <internal/pycore_frame.h>
#endif

#include <cstddef>
#include <cstdio>
#include <cstring>

#include "../../shim/python_layouts.h"

namespace {

int g_mismatches = 0;

void check(const char* field, long ours, long real) {
  std::printf("%-16s ours %4ld  headers %4ld  %s\n", field, ours, real, ours == real ? "ok" : "MISMATCH");
  if (ours != real) ++g_mismatches;
}

// The state bit field's positions, read back the way the reader reads them.
void check_state_bits() {
  PyASCIIObject s;
  std::memset(&s, 0, sizeof s);
  s.state.kind = PyUnicode_4BYTE_KIND;
  s.state.compact = 1;
  s.state.ascii = 1;
  uint32_t word = 0;
  std::memcpy(&word, reinterpret_cast<const char*>(&s) + gmp::shim::kUnicodeState, sizeof word);
  check("state.kind", (word >> 2) & 7, PyUnicode_4BYTE_KIND);
  check("state.compact", (word >> 5) & 1, 1);
  check("state.ascii", (word >> 6) & 1, 1);
}

}  // namespace

int main() {
  const gmp::shim::PythonLayout* l = gmp::shim::python_layout(PY_MAJOR_VERSION, PY_MINOR_VERSION);
  std::printf("Python %s\n", PY_VERSION);
  if (l == nullptr) {
    std::printf("no layout for %d.%d in shim/python_layouts.h\n", PY_MAJOR_VERSION, PY_MINOR_VERSION);
    return 2;
  }
#if PY_MINOR_VERSION == 10
  check("thread_frame", l->thread_frame, offsetof(PyThreadState, frame));
  check("cframe_current", l->cframe_current, -1);
  check("frame_code", l->frame_code, offsetof(PyFrameObject, f_code));
  check("frame_previous", l->frame_previous, offsetof(PyFrameObject, f_back));
  check("frame_instr", l->frame_instr, offsetof(PyFrameObject, f_lasti));
  check("frame_owner", l->frame_owner, -1);
  check("owner_cstack", l->owner_cstack, -1);
  check("code_name", l->code_name, offsetof(PyCodeObject, co_name));
  check("code_units", l->code_units, 0);
#else
#if PY_MINOR_VERSION <= 12
  check("thread_frame", l->thread_frame, offsetof(PyThreadState, cframe));
  check("cframe_current", l->cframe_current, offsetof(_PyCFrame, current_frame));
  check("frame_code", l->frame_code, offsetof(_PyInterpreterFrame, f_code));
  check("frame_instr", l->frame_instr, offsetof(_PyInterpreterFrame, prev_instr));
#else
  check("thread_frame", l->thread_frame, offsetof(PyThreadState, current_frame));
  check("cframe_current", l->cframe_current, -1);
  check("frame_code", l->frame_code, offsetof(_PyInterpreterFrame, f_executable));
  check("frame_instr", l->frame_instr, offsetof(_PyInterpreterFrame, instr_ptr));
#endif
  check("frame_previous", l->frame_previous, offsetof(_PyInterpreterFrame, previous));
  check("frame_owner", l->frame_owner, offsetof(_PyInterpreterFrame, owner));
#if PY_MINOR_VERSION >= 12
  check("owner_cstack", l->owner_cstack, FRAME_OWNED_BY_CSTACK);
#else
  check("owner_cstack", l->owner_cstack, -1);
#endif
  check("code_name", l->code_name, offsetof(PyCodeObject, co_qualname));
  check("code_units", l->code_units, offsetof(PyCodeObject, co_code_adaptive));
#endif
  check("code_filename", l->code_filename, offsetof(PyCodeObject, co_filename));
  check("ascii_size", l->ascii_size, sizeof(PyASCIIObject));
  check("compact_size", l->compact_size, sizeof(PyCompactUnicodeObject));
  check("thread_interp", gmp::shim::kThreadInterp, offsetof(PyThreadState, interp));
  check("ob_type", gmp::shim::kObjectType, offsetof(PyObject, ob_type));
  check("ob_size", gmp::shim::kVarObjectSize, offsetof(PyVarObject, ob_size));
  check("unicode_length", gmp::shim::kUnicodeLength, offsetof(PyASCIIObject, length));
  check("unicode_state", gmp::shim::kUnicodeState, offsetof(PyASCIIObject, state));
  check_state_bits();
  std::printf("%s\n", g_mismatches == 0 ? "layout matches" : "LAYOUT MISMATCH");
  return g_mismatches == 0 ? 0 : 1;
}
