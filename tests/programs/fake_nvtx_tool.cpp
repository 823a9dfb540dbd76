// libfake_nvtx_tool.so: a minimal NVTX injection library standing in for another tool (Nsight
// Systems) in the chaining tests (tests/integration/nvtx_test.cpp). It installs RangePushA,
// RangePop, MarkA, DomainCreateA, DomainRegisterStringA, DomainRangePushEx and DomainRangePop
// (nothing for the W and other Ex variants), issues its own domain and string handles, and after
// every call rewrites $FAKE_NVTX_OUT with its counts as one JSON object:
//   init            InitializeInjectionNvtx2 calls
//   extension_init  InitializeInjectionNvtxExtension calls (it declines: returns 0)
//   push_a, pop, mark_a, domain_create, register_string, domain_push, domain_pop   calls seen
//   foreign_handles domain or string handles it did not issue (must stay 0 under a chaining profiler)
// RangePushA returns 100 + its depth, RangePop 200 + the depth left, so a test can tell its return
// values from the profiler's.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

namespace {

constexpr unsigned kMagic = 0xfa4e7001u;

struct Handle {
  unsigned magic;
  char text[64];
};

std::atomic<int> g_init{0}, g_extension_init{0}, g_push_a{0}, g_pop{0}, g_mark_a{0}, g_domain_create{0},
    g_register{0}, g_domain_push{0}, g_domain_pop{0}, g_foreign{0};
thread_local int t_depth = 0;

void write_counts() {
  const char* path = std::getenv("FAKE_NVTX_OUT");
  if (path == nullptr) return;
  static std::atomic_flag busy = ATOMIC_FLAG_INIT;  // calls come from several threads: last count last
  while (busy.test_and_set(std::memory_order_acquire)) {
  }
  char buf[512];
  const int n = std::snprintf(buf, sizeof buf,
                              "{\"init\":%d,\"extension_init\":%d,\"push_a\":%d,\"pop\":%d,\"mark_a\":%d,\"domain_create\":%d,"
                              "\"register_string\":%d,\"domain_push\":%d,\"domain_pop\":%d,\"foreign_handles\":%d}\n",
                              g_init.load(), g_extension_init.load(), g_push_a.load(), g_pop.load(), g_mark_a.load(),
                              g_domain_create.load(), g_register.load(), g_domain_push.load(), g_domain_pop.load(),
                              g_foreign.load());
  const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    (void)!write(fd, buf, static_cast<size_t>(n));
    close(fd);
  }
  busy.clear(std::memory_order_release);
}

Handle* make_handle(const char* text) {
  auto* h = new Handle{kMagic, {}};
  std::snprintf(h->text, sizeof h->text, "%s", text != nullptr ? text : "");
  return h;
}

bool ours(const void* p) { return p == nullptr || static_cast<const Handle*>(p)->magic == kMagic; }

int push_a(const char*) {
  ++g_push_a;
  write_counts();
  return 100 + t_depth++;
}

int pop() {
  ++g_pop;
  write_counts();
  if (t_depth > 0) --t_depth;
  return 200 + t_depth;
}

void mark_a(const char*) {
  ++g_mark_a;
  write_counts();
}

nvtxDomainHandle_t domain_create_a(const char* name) {
  ++g_domain_create;
  write_counts();
  return reinterpret_cast<nvtxDomainHandle_t>(make_handle(name));
}

nvtxStringHandle_t register_string_a(nvtxDomainHandle_t domain, const char* text) {
  ++g_register;
  if (!ours(domain)) ++g_foreign;
  write_counts();
  return reinterpret_cast<nvtxStringHandle_t>(make_handle(text));
}

int domain_push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  ++g_domain_push;
  if (!ours(domain)) ++g_foreign;
  if (a != nullptr && a->messageType == NVTX_MESSAGE_TYPE_REGISTERED && !ours(a->message.registered)) ++g_foreign;
  write_counts();
  return t_depth++;
}

int domain_pop(nvtxDomainHandle_t domain) {
  ++g_domain_pop;
  if (!ours(domain)) ++g_foreign;
  write_counts();
  return t_depth > 0 ? --t_depth : -1;
}

bool install(const NvtxExportTableCallbacks* cb, NvtxCallbackModule module, unsigned id, NvtxFunctionPointer fn) {
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (cb->GetModuleFunctionTable(module, &table, &size) == 0 || table == nullptr || id >= size) return false;
  *table[id] = fn;
  return true;
}

template <typename F>
NvtxFunctionPointer fp(F f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  ++g_init;
  write_counts();
  auto* cb = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (cb == nullptr) return 0;
  bool ok = install(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, fp(&push_a));
  ok = ok && install(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, fp(&pop));
  ok = ok && install(cb, NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, fp(&mark_a));
  ok = ok && install(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, fp(&domain_create_a));
  ok = ok && install(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, fp(&register_string_a));
  ok = ok && install(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, fp(&domain_push));
  ok = ok && install(cb, NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, fp(&domain_pop));
  return ok ? 1 : 0;
}

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtxExtension(void*) {
  ++g_extension_init;
  write_counts();
  return 0;
}
