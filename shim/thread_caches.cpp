#include "thread_caches.h"

#include <pthread.h>
#include <sys/mman.h>

namespace gmp::shim {
namespace {

constexpr size_t kBytes = (sizeof(ThreadCaches) + 4095) & ~size_t{4095};
ThreadCaches* const kNone = reinterpret_cast<ThreadCaches*>(uintptr_t{1});  // failed, or exiting

__attribute__((tls_model("initial-exec"))) thread_local ThreadCaches* t_caches = nullptr;

pthread_key_t g_key;
bool g_key_made = false;
pthread_once_t g_once = PTHREAD_ONCE_INIT;

// At thread exit (a key's destructor): the pages go, and a capture later in this thread's exit
// (another library's destructor freeing GPU memory) finds no cache rather than freed pages.
void release(void* caches) {
  t_caches = kNone;
  munmap(caches, kBytes);
}

void make_key() { g_key_made = pthread_key_create(&g_key, &release) == 0; }

}  // namespace

ThreadCaches* thread_caches() {
  ThreadCaches* c = t_caches;
  if (c != nullptr) return c == kNone ? nullptr : c;
  pthread_once(&g_once, &make_key);
  void* p = g_key_made ? mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : MAP_FAILED;
  if (p == MAP_FAILED || pthread_setspecific(g_key, p) != 0) {
    if (p != MAP_FAILED) munmap(p, kBytes);
    t_caches = kNone;
    return nullptr;
  }
  t_caches = static_cast<ThreadCaches*>(p);  // zero-filled: every entry empty
  return t_caches;
}

}  // namespace gmp::shim
