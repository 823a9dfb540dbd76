/* gpumemprof.h: marks, named ranges and pause/resume for the gpumemprof GPU memory profiler.
 *
 *   gpumemprof_mark("epoch 3");          a checkpoint: the report lists memory at each mark
 *   gpumemprof_range_push("forward");    allocations until the matching pop are attributed to
 *   gpumemprof_range_pop();              "forward" (per thread; ranges nest)
 *   gpumemprof_pause();                  allocations are not recorded until gpumemprof_resume()
 *   gpumemprof_resume();
 *
 * Header only, C and C++. There is no link dependency: each function looks up the profiler
 * (libgpumemprof.so, preloaded by `gpumemprof run`) at run time and does nothing when it is not
 * loaded. Marks and ranges are recorded once the process has used CUDA; a range opened earlier is
 * carried into the trace when its thread first records.
 *
 * From Python (ctypes), the same functions are exported by the preloaded library:
 *   import ctypes
 *   lib = ctypes.CDLL(None)
 *   mark = getattr(lib, "gpumemprof_mark", None)   # None without the profiler
 *   if mark: mark(b"after warmup")
 */
#ifndef GPUMEMPROF_H
#define GPUMEMPROF_H

#ifndef _GNU_SOURCE
#define GPUMEMPROF_UNDEF_GNU_SOURCE
#define _GNU_SOURCE /* RTLD_DEFAULT */
#endif
#include <dlfcn.h>
#ifdef GPUMEMPROF_UNDEF_GNU_SOURCE
#undef _GNU_SOURCE
#undef GPUMEMPROF_UNDEF_GNU_SOURCE
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The profiler's function `name`, or a null pointer. Looked up on every call, which costs a
 * microsecond or so: marks and ranges are meant for coarse regions (steps, phases), not inner loops. */
static inline void* gpumemprof_lookup_(const char* name) {
#ifdef RTLD_DEFAULT
  return dlsym(RTLD_DEFAULT, name);
#else
  return dlsym((void*)0, name);
#endif
}

static inline void gpumemprof_mark(const char* name) {
  void (*fn)(const char*) = (void (*)(const char*))gpumemprof_lookup_("gpumemprof_mark");
  if (fn) fn(name);
}

static inline void gpumemprof_range_push(const char* name) {
  void (*fn)(const char*) = (void (*)(const char*))gpumemprof_lookup_("gpumemprof_range_push");
  if (fn) fn(name);
}

static inline void gpumemprof_range_pop(void) {
  void (*fn)(void) = (void (*)(void))gpumemprof_lookup_("gpumemprof_range_pop");
  if (fn) fn();
}

static inline void gpumemprof_pause(void) {
  void (*fn)(void) = (void (*)(void))gpumemprof_lookup_("gpumemprof_pause");
  if (fn) fn();
}

static inline void gpumemprof_resume(void) {
  void (*fn)(void) = (void (*)(void))gpumemprof_lookup_("gpumemprof_resume");
  if (fn) fn();
}

#ifdef __cplusplus
}
#endif

#endif /* GPUMEMPROF_H */
