/* gpumemprof.h: marks, named ranges, pause/resume and live figures for the gpumemprof GPU memory profiler.
 *
 *   gpumemprof_mark("epoch 3");          a checkpoint: the report lists memory at each mark
 *   gpumemprof_range_push("forward");    allocations until the matching pop are attributed to
 *   gpumemprof_range_pop();              "forward" (per thread; ranges nest)
 *   gpumemprof_pause();                  allocations are not recorded until gpumemprof_resume()
 *   gpumemprof_resume();
 *
 * Live figures (docs/python.md), cheap enough to read every step; they are as of the collector's
 * last pass over the events (a millisecond or so behind), and gpumemprof_sync() waits for it:
 *   gpumemprof_device_stats(0, &s, sizeof s)   current and peak figures of device 0, both levels
 *   gpumemprof_counts(&c, sizeof c)            events, allocations, alerts, cleanups
 *   gpumemprof_reset_peaks()                   starts a new peak window (the window_* figures; the
 *                                              one it ended is the closed_* figures)
 *   gpumemprof_recent(after, records, n)       the recent allocations, alerts and cleanups, in order
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

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One device's figures. The driver level is every allocation of the process on the device (bytes
 * by kind: [1] linear, [2] pool, [3] VMM, [4] array, [5] managed); the framework level is PyTorch's
 * caching allocator seen through the bridge (docs/framework-bridge.md), zero unless attached. */
typedef struct gpumemprof_device_stats {
  int64_t device;
  uint64_t total_bytes;
  uint64_t as_of_ns; /* CLOCK_MONOTONIC time of the last event the figures include */
  uint64_t allocated, allocated_peak, reserved, reserved_peak;
  uint64_t kind_allocated[6], kind_allocated_peak[6];
  uint64_t alloc_count, free_count, failed_alloc_count;
  uint64_t framework_attached;
  uint64_t tensor_allocated, tensor_allocated_peak, framework_reserved, framework_reserved_peak, framework_cached;
  uint64_t tensor_alloc_count, tensor_free_count;
  /* Since gpumemprof_reset_peaks() (or the device's first event): the peaks, and what was allocated
   * and freed, at both levels. */
  uint64_t window_allocated_peak, window_reserved_peak, window_tensor_allocated_peak, window_framework_reserved_peak;
  uint64_t window_bytes_allocated, window_bytes_freed, window_tensor_bytes_allocated, window_tensor_bytes_freed;
  uint64_t window_alloc_count, window_free_count, window_tensor_alloc_count, window_tensor_free_count;
  /* The window the last gpumemprof_reset_peaks() closed, cut at the reset's instant: every event
   * stamped before it and after the reset before (docs/python.md). A caller that resets, syncs and
   * reads these has a window no other thread's event can slip out of. The four levels at the reset,
   * then that window's figures as above; all 0 before the first reset. */
  uint64_t reset_allocated, reset_reserved, reset_tensor_allocated, reset_framework_reserved;
  uint64_t closed_allocated_peak, closed_reserved_peak, closed_tensor_allocated_peak, closed_framework_reserved_peak;
  uint64_t closed_bytes_allocated, closed_bytes_freed, closed_tensor_bytes_allocated, closed_tensor_bytes_freed;
  uint64_t closed_alloc_count, closed_free_count, closed_tensor_alloc_count, closed_tensor_free_count;
  /* The tensors by category (docs/framework-bridge.md §Categories), indexed by GPUMEMPROF_CATEGORY_*:
   * now, at the last reset, and at the tensor peak of the window it closed (as decided at the reset:
   * what was let go since the peak by its final category). A tensor still held in the phase it was
   * allocated in is not decided yet and counts as unknown; so does every tensor with the category
   * hooks off. Each array sums to tensor_allocated, reset_tensor_allocated and
   * closed_tensor_allocated_peak. */
  uint64_t tensor_category[8], reset_tensor_category[8], closed_tensor_peak_category[8];
} gpumemprof_device_stats_t;

/* The index of a category in tensor_category and the arrays after it. */
enum {
  GPUMEMPROF_CATEGORY_UNKNOWN = 0,
  GPUMEMPROF_CATEGORY_PARAMETERS = 1,
  GPUMEMPROF_CATEGORY_GRADIENTS = 2,
  GPUMEMPROF_CATEGORY_OPTIMIZER_STATE = 3,
  GPUMEMPROF_CATEGORY_ACTIVATIONS = 4,
  GPUMEMPROF_CATEGORY_TEMPORARIES = 5,
  GPUMEMPROF_CATEGORY_KV_CACHE = 6,
  GPUMEMPROF_CATEGORY_OTHER = 7
};

/* The process's counts. */
typedef struct gpumemprof_counts {
  uint64_t events;                /* events the collector has handled */
  uint64_t records;               /* the last recent record's seq */
  uint64_t devices;               /* how many of device_ordinals are set */
  int64_t device_ordinals[16];    /* the devices with figures, in ordinal order */
  uint64_t alloc_count, free_count, failed_alloc_count; /* every device, driver level */
  uint64_t alerts_fired[5];       /* by type: [1] warning, [2] critical, [3] fragmentation, [4] growth */
  uint64_t cleanups, cleanup_bytes; /* the watchdog's pool trims and the bytes they gave back */
} gpumemprof_counts_t;

/* A recent record's type. */
enum {
  GPUMEMPROF_ALLOCATION = 1,   /* detail: the kind (1-5), 0 for a tensor; size = bytes */
  GPUMEMPROF_DEALLOCATION = 2, /* likewise */
  GPUMEMPROF_ALERT = 3,        /* an alert fired; detail: 1 warning, 2 critical, 3 fragmentation, 4 growth;
                                  size = its threshold bytes */
  GPUMEMPROF_ALERT_CLEARED = 4,
  GPUMEMPROF_CLEANUP = 5,      /* the watchdog trimmed pools; detail: pools trimmed, size = bytes given back */
  GPUMEMPROF_OOM = 6           /* an allocation failed for lack of memory; detail: the kind, size = bytes asked */
};

/* One recent record: an allocation or release (at the driver level, or a tensor's), an alert, a
 * cleanup, a failed allocation, with the device's figures just after it. */
typedef struct gpumemprof_record {
  uint64_t seq; /* 1, 2, 3...: a gap means records were overwritten before they were read */
  uint64_t timestamp_ns; /* CLOCK_MONOTONIC */
  int64_t device;
  uint64_t type, detail, size, address;
  int64_t change; /* the change of allocated at the record's level (the tensors' for detail 0) */
  uint64_t allocated, reserved, tensor_allocated, framework_reserved;
} gpumemprof_record_t;

#ifndef GPUMEMPROF_TYPES_ONLY /* the profiler itself defines the functions */

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

/* 1 and the figures of `device` in *out (`size` bytes of it, sizeof *out); 0 when the device has no
 * figures yet; -1 when the profiler is not recording in this process. Never waits on the collector. */
static inline int gpumemprof_device_stats(int device, gpumemprof_device_stats_t* out, size_t size) {
  int (*fn)(int, gpumemprof_device_stats_t*, size_t) =
      (int (*)(int, gpumemprof_device_stats_t*, size_t))gpumemprof_lookup_("gpumemprof_device_stats");
  return fn ? fn(device, out, size) : -1;
}

/* 1 and the counts in *out; -1 when the profiler is not recording. */
static inline int gpumemprof_counts(gpumemprof_counts_t* out, size_t size) {
  int (*fn)(gpumemprof_counts_t*, size_t) =
      (int (*)(gpumemprof_counts_t*, size_t))gpumemprof_lookup_("gpumemprof_counts");
  return fn ? fn(out, size) : -1;
}

/* Starts a new peak window on every device, from the events after this call on; once applied (see
 * gpumemprof_sync), the window it ended is each device's closed_* figures. */
static inline void gpumemprof_reset_peaks(void) {
  void (*fn)(void) = (void (*)(void))gpumemprof_lookup_("gpumemprof_reset_peaks");
  if (fn) fn();
}

/* Waits until the figures include every event recorded before the call (and the last reset), at
 * most `timeout_ms` (UINT64_MAX: no limit): 1 when they do, 0 after the timeout, -1 when the
 * profiler is not recording. */
static inline int gpumemprof_sync(uint64_t timeout_ms) {
  int (*fn)(uint64_t) = (int (*)(uint64_t))gpumemprof_lookup_("gpumemprof_sync");
  return fn ? fn(timeout_ms) : -1;
}

/* Copies up to `max` records with a seq above `after_seq`, oldest first; returns how many (0 when
 * `after_seq` is the last seq or above). The profiler keeps the latest 16384; a reader that falls
 * further behind sees a gap in seq. */
static inline size_t gpumemprof_recent(uint64_t after_seq, gpumemprof_record_t* out, size_t max) {
  size_t (*fn)(uint64_t, gpumemprof_record_t*, size_t) =
      (size_t (*)(uint64_t, gpumemprof_record_t*, size_t))gpumemprof_lookup_("gpumemprof_recent");
  return fn ? fn(after_seq, out, max) : 0;
}

#endif /* GPUMEMPROF_TYPES_ONLY */

#ifdef __cplusplus
}
#endif

#endif /* GPUMEMPROF_H */
