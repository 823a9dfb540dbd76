// The glibc floor: what lets a binary built on a new glibc load on glibc 2.28 and newer (RHEL 8,
// RHEL 9, Ubuntu 20.04/22.04: where GPU clusters run). Applied with gmp_glibc_floor() from
// glibc_floor.cmake; docs/testing.md ("Portability") says how it is tested.
//
// Why it is needed: the static linker binds each reference to the newest ("default") version of a
// symbol in the build host's libc.so.6, and the dynamic loader refuses a binary whose required
// versions the running glibc lacks. glibc 2.32-2.36 gave many old functions new versions (2.34
// moved libpthread and libdl into libc), and the static libstdc++/libgcc we link (so that no C++
// runtime is needed at run time) were built against the host's glibc and use its newest symbols
// too: arc4random (std::random_device), _dl_find_object (libgcc's unwinder), __libc_single_threaded.
//
// How: glibc_floor.cmake links with -Wl,--wrap=NAME for each name defined below as __wrap_NAME,
// so every reference to NAME in our objects and in the static archives goes to __wrap_NAME
// instead. Each __wrap_NAME either calls the old version of NAME, named exactly with .symver (the
// version every glibc still exports, as a compatibility symbol in libc.so.6 since 2.34, from
// libpthread.so.0 / libdl.so.2 before it: the binary needs both, see glibc_floor.cmake), or, for
// what older glibc lacks, does the job itself. The behaviour on a new glibc is unchanged: the old
// versions are the same functions there.
//
// x86_64 only (glibc_floor.cmake applies it nowhere else): the base version, the stat structure
// version and the symbol lists are those of x86_64.
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

#define GMP_HIDDEN __attribute__((visibility("hidden")))

// gmp_old_NAME is NAME@VERSION in glibc; __wrap_NAME(params) forwards to it.
#define GMP_OLD_VERSION(ret, name, version, params, args)                 \
  extern "C" ret gmp_old_##name params;                                 \
  __asm__(".symver gmp_old_" #name ", " #name "@" version);             \
  extern "C" GMP_HIDDEN ret __wrap_##name params { return gmp_old_##name args; }

#define GMP_BASE "GLIBC_2.2.5"  // x86_64's first glibc version

// libpthread before 2.34 (pthread_sigmask: before 2.32).
GMP_OLD_VERSION(int, pthread_create, GMP_BASE,
                (pthread_t * t, const pthread_attr_t* attr, void* (*start)(void*), void* arg),
                (t, attr, start, arg))
GMP_OLD_VERSION(int, pthread_join, GMP_BASE, (pthread_t t, void** result), (t, result))
GMP_OLD_VERSION(int, pthread_detach, GMP_BASE, (pthread_t t), (t))
GMP_OLD_VERSION(int, pthread_once, GMP_BASE, (pthread_once_t * once, void (*init)()), (once, init))
GMP_OLD_VERSION(int, pthread_key_create, GMP_BASE, (pthread_key_t * key, void (*destroy)(void*)),
                (key, destroy))
// libgcc's and libstdc++'s "is libpthread loaded?" probe; the floor always loads it.
GMP_OLD_VERSION(int, __pthread_key_create, GMP_BASE, (pthread_key_t * key, void (*destroy)(void*)),
                (key, destroy))
GMP_OLD_VERSION(int, pthread_key_delete, GMP_BASE, (pthread_key_t key), (key))
GMP_OLD_VERSION(void*, pthread_getspecific, GMP_BASE, (pthread_key_t key), (key))
GMP_OLD_VERSION(int, pthread_setspecific, GMP_BASE, (pthread_key_t key, const void* value),
                (key, value))
GMP_OLD_VERSION(int, pthread_rwlock_rdlock, GMP_BASE, (pthread_rwlock_t * lock), (lock))
GMP_OLD_VERSION(int, pthread_rwlock_wrlock, GMP_BASE, (pthread_rwlock_t * lock), (lock))
GMP_OLD_VERSION(int, pthread_rwlock_unlock, GMP_BASE, (pthread_rwlock_t * lock), (lock))
GMP_OLD_VERSION(int, pthread_sigmask, GMP_BASE, (int how, const sigset_t* set, sigset_t* old),
                (how, set, old))

// libdl before 2.34. dlopen and dlsym/dlvsym(RTLD_NEXT) judge the caller by their return address:
// it stays inside the same binary (this wrapper is linked into it), so nothing changes.
GMP_OLD_VERSION(void*, dlopen, GMP_BASE, (const char* file, int mode), (file, mode))
GMP_OLD_VERSION(char*, dlerror, GMP_BASE, (), ())
GMP_OLD_VERSION(void*, dlsym, GMP_BASE, (void* handle, const char* name), (handle, name))
GMP_OLD_VERSION(void*, dlvsym, GMP_BASE, (void* handle, const char* name, const char* version),
                (handle, name, version))
GMP_OLD_VERSION(int, dladdr, GMP_BASE, (const void* address, Dl_info* info), (address, info))
GMP_OLD_VERSION(int, dladdr1, "GLIBC_2.3.3",
                (const void* address, Dl_info* info, void** extra, int flags),
                (address, info, extra, flags))

// stat and friends became functions of their own in 2.33; before, the headers turned them into
// calls of __xstat & co with the structure version (1 on x86_64), which every glibc still exports.
namespace {
constexpr int kStatVersion = 1;  // _STAT_VER_LINUX
}
extern "C" int gmp_old_xstat(int version, const char* path, struct stat* st);
extern "C" int gmp_old_lxstat(int version, const char* path, struct stat* st);
extern "C" int gmp_old_fxstat(int version, int fd, struct stat* st);
extern "C" int gmp_old_fxstatat(int version, int dirfd, const char* path, struct stat* st, int flags);
__asm__(".symver gmp_old_xstat, __xstat@" GMP_BASE);
__asm__(".symver gmp_old_lxstat, __lxstat@" GMP_BASE);
__asm__(".symver gmp_old_fxstat, __fxstat@" GMP_BASE);
__asm__(".symver gmp_old_fxstatat, __fxstatat@GLIBC_2.4");
extern "C" GMP_HIDDEN int __wrap_stat(const char* path, struct stat* st) {
  return gmp_old_xstat(kStatVersion, path, st);
}
extern "C" GMP_HIDDEN int __wrap_lstat(const char* path, struct stat* st) {
  return gmp_old_lxstat(kStatVersion, path, st);
}
extern "C" GMP_HIDDEN int __wrap_fstat(int fd, struct stat* st) {
  return gmp_old_fxstat(kStatVersion, fd, st);
}
extern "C" GMP_HIDDEN int __wrap_fstatat(int dirfd, const char* path, struct stat* st, int flags) {
  return gmp_old_fxstatat(kStatVersion, dirfd, path, st, flags);
}
// struct stat64 is struct stat on x86_64 (and __fxstat64 is __fxstat, __fxstatat64 __fxstatat).
extern "C" GMP_HIDDEN int __wrap_fstat64(int fd, struct stat* st) {
  return gmp_old_fxstat(kStatVersion, fd, st);
}
extern "C" GMP_HIDDEN int __wrap_fstatat64(int dirfd, const char* path, struct stat* st, int flags) {
  return gmp_old_fxstatat(kStatVersion, dirfd, path, st, flags);
}

// glibc 2.32's hint that the process has never started a thread, which libstdc++ reads to skip
// atomic instructions in reference counts. Ours says "maybe threaded": always atomic, always right.
extern "C" {
GMP_HIDDEN char __wrap___libc_single_threaded = 0;
}

// glibc 2.36. std::random_device's "arc4random" source; the kernel's generator does the same job,
// and like glibc's, this never fails: without any entropy source the process aborts.
namespace {

bool read_urandom(void* buf, size_t n) {
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, static_cast<char*>(buf) + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += static_cast<size_t>(r);
  }
  close(fd);
  return got == n;
}

}  // namespace

extern "C" GMP_HIDDEN uint32_t __wrap_arc4random() {
  const int saved_errno = errno;
  uint32_t value = 0;
  size_t got = 0;
  while (got < sizeof value) {
    ssize_t r = getrandom(reinterpret_cast<char*>(&value) + got, sizeof value - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r < 0 && errno == ENOSYS) {
      if (!read_urandom(&value, sizeof value)) break;
      got = sizeof value;
    } else if (!(r < 0 && errno == EINTR)) {
      break;
    }
  }
  if (got != sizeof value) {
    static const char kMessage[] = "gpumemprof: no entropy source for arc4random\n";
    (void)!write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
    abort();
  }
  errno = saved_errno;
  return value;
}

// glibc 2.35. libgcc's unwinder finds the unwind tables of the code at an address with it; when it
// fails, the unwinder sees no tables and a thrown C++ exception terminates the process. So: glibc's
// own when the running glibc has it (looked up once), otherwise the same answer from
// dl_iterate_phdr, as libgcc did before 2.35.
#ifdef DLFO_STRUCT_HAS_EH_DBASE
namespace {

using FindObject = int (*)(void*, struct dl_find_object*);
// glibc's function as an address; 1 until looked up. Constant-initialized, so it holds before any
// constructor runs.
constexpr uintptr_t kNotLookedUp = 1;
std::atomic<uintptr_t> g_glibc_find_object{kNotLookedUp};

struct Search {
  uintptr_t pc;
  struct dl_find_object* result;
};

int match_object(struct dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  uintptr_t start = UINTPTR_MAX, end = 0;
  bool contains = false;
  void* eh_frame = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uintptr_t begin = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD) {
      if (begin < start) start = begin;
      if (begin + ph.p_memsz > end) end = begin + ph.p_memsz;
      if (search->pc >= begin && search->pc < begin + ph.p_memsz) contains = true;
    } else if (ph.p_type == DLFO_EH_SEGMENT_TYPE) {
      eh_frame = reinterpret_cast<void*>(begin);
    }
  }
  if (!contains) return 0;
  search->result->dlfo_flags = 0;
  search->result->dlfo_map_start = reinterpret_cast<void*>(start);
  search->result->dlfo_map_end = reinterpret_cast<void*>(end);
  search->result->dlfo_eh_frame = eh_frame;
  return 1;
}

// Looked up once, at load time when possible: a failed lookup (on a glibc before 2.35) leaves a
// dlerror() message, which is cleared here before the program could mistake it for its own.
FindObject glibc_find_object() {
  uintptr_t f = g_glibc_find_object.load(std::memory_order_acquire);
  if (f == kNotLookedUp) {
    f = reinterpret_cast<uintptr_t>(gmp_old_dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35"));
    if (f == 0) gmp_old_dlerror();
    g_glibc_find_object.store(f, std::memory_order_release);
  }
  return reinterpret_cast<FindObject>(f);
}

__attribute__((constructor(101))) void look_up_glibc_find_object() { glibc_find_object(); }

}  // namespace

extern "C" GMP_HIDDEN int __wrap__dl_find_object(void* pc, struct dl_find_object* result) {
  if (FindObject glibc = glibc_find_object()) return glibc(pc, result);
  Search search{reinterpret_cast<uintptr_t>(pc), result};
  if (dl_iterate_phdr(match_object, &search) == 0) return -1;
  Dl_info info;
  void* map = nullptr;
  if (gmp_old_dladdr1(pc, &info, &map, RTLD_DL_LINKMAP) == 0) map = nullptr;
  result->dlfo_link_map = static_cast<struct link_map*>(map);
  return 0;
}
#endif
