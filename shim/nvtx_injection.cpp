// The shim as an NVTX injection library (docs/attribution.md, "NVTX"). An application's NVTX code
// (the v3 headers, one instance per module that includes them) dlopens $NVTX_INJECTION64_PATH and
// calls InitializeInjectionNvtx2 with its own export-table getter; we put our handlers into that
// instance's function slots. Push/pop/mark handlers record RangePush/RangePop/Mark events with
// Api::nvtx through markers.h, then call the handler another NVTX tool installed in the same slot
// when GPUMEMPROF_NVTX_CHAIN names one (so Nsight Systems and gpumemprof both see every call).
//
// Handled: RangePushA/W/Ex, RangePop, MarkA/W/Ex (CORE) and DomainRangePushEx, DomainRangePop,
// DomainMarkEx, DomainCreateA/W, DomainRegisterStringA/W (CORE2). Not handled: RangeStart/End
// (process-wide ranges that need not nest, which the per-thread range model cannot represent),
// naming of threads, categories and resources; those slots keep the chained tool's handlers, or
// become no-ops without one. The extension modules (payload, memory, counters) initialize through
// InitializeInjectionNvtxExtension, which is only forwarded to the chained tool.
//
// Handles. Without a chained tool, domain and string handles are ours: pointers to interned,
// never-freed names. With one, a handle-creating call (DomainCreate*, DomainRegisterString*) goes
// to the chained tool and we return its handle unchanged, remembering the name it stands for; so
// the chained tool only ever receives handles it issued, in every slot, ours or not. If the
// chained tool does not handle a creating call, we leave that slot alone too (NVTX returns NULL).
#include <dlfcn.h>
#include <unistd.h>

#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <utility>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "../collector/session.h"
#include "export.h"
#include "markers.h"
#include "real_driver.h"

GMP_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);
GMP_EXPORT int InitializeInjectionNvtxExtension(void* module_info);

namespace gmp::shim {
namespace {

constexpr const char* kUnnamed = "(unnamed)";
constexpr size_t kNameBytes = 4096;  // markers.cpp interns at most this many bytes of a name
constexpr int kMaxInstances = 32;    // NVTX instances (modules using NVTX) we attach to

// The slots we replace, and where they live in NVTX's callback tables.
enum Slot : int {
  kRangePushA, kRangePushW, kRangePushEx, kRangePop, kMarkA, kMarkW, kMarkEx,
  kDomainRangePushEx, kDomainRangePop, kDomainMarkEx,
  kDomainCreateA, kDomainCreateW, kDomainRegisterStringA, kDomainRegisterStringW,
  kSlotCount
};

struct SlotSpec {
  NvtxCallbackModule module;
  unsigned id;
  bool creates_handles;  // installed under a chained tool only where it handles the call itself
};

constexpr SlotSpec kSlots[kSlotCount] = {
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushA, false},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushW, false},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePushEx, false},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_RangePop, false},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkA, false},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkW, false},
    {NVTX_CB_MODULE_CORE, NVTX_CBID_CORE_MarkEx, false},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePushEx, false},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRangePop, false},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainMarkEx, false},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateA, true},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainCreateW, true},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringA, true},
    {NVTX_CB_MODULE_CORE2, NVTX_CBID_CORE2_DomainRegisterStringW, true},
};

// Per NVTX instance: the chained tool's handler for each slot we took over (nullptr: none). Written
// once, before the instance publishes its function pointers (NVTX's init is a barrier for them).
NvtxFunctionPointer g_next[kMaxInstances][kSlotCount];
int g_instances = 0;  // under g_init_mutex
std::recursive_mutex g_init_mutex;  // recursive: a chained tool's initialization may start another instance's

// The chained tool, loaded by the first instance's initialization.
bool g_chain_loaded = false;  // tried
NvtxInitializeInjectionNvtxFunc_t g_chain_init = nullptr;  // its library stays loaded
// Its entry point for the NVTX extensions (payload, counters, memory), which the shim only forwards.
using ExtensionInit = int (*)(void* module_info);
ExtensionInit g_chain_extension_init = nullptr;

// Each thread's open NVTX ranges (all domains), for the depth push and pop return.
__attribute__((tls_model("initial-exec"))) thread_local int t_depth = 0;

// ---- names ----

// Handle -> name, for domains and registered strings. Names are never freed (a re-created handle
// just points to a new name), so a reader may use the pointer after unlocking.
struct NameMaps {
  std::shared_mutex mutex;
  std::unordered_map<const void*, const char*> domains;
  struct PairHash {
    size_t operator()(const std::pair<const void*, const void*>& p) const {
      return std::hash<const void*>()(p.first) * 31u ^ std::hash<const void*>()(p.second);
    }
  };
  std::unordered_map<std::pair<const void*, const void*>, const char*, PairHash> strings;  // (domain, handle)
  // Our own handles when no chained tool issues them: one per distinct name (per domain).
  std::unordered_map<std::string, const char*> own_domains;
  std::unordered_map<std::string, const char*> own_strings;  // key: domain pointer bytes + text
};

NameMaps& names() {
  static NameMaps* maps = new NameMaps;  // never destroyed: NVTX calls may come during exit
  return *maps;
}

const char* intern_copy(const std::string& s) {
  char* p = new char[s.size() + 1];
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

// UTF-32 (Linux wchar_t) to UTF-8, truncated at a whole character to fit `n` bytes with its NUL.
const char* to_utf8(const wchar_t* w, char* out, size_t n) {
  if (w == nullptr) return nullptr;
  size_t o = 0;
  for (; *w != L'\0'; ++w) {
    uint32_t c = static_cast<uint32_t>(*w);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    char b[4];
    size_t len;
    if (c < 0x80) {
      b[0] = static_cast<char>(c);
      len = 1;
    } else if (c < 0x800) {
      b[0] = static_cast<char>(0xC0 | (c >> 6));
      b[1] = static_cast<char>(0x80 | (c & 0x3F));
      len = 2;
    } else if (c < 0x10000) {
      b[0] = static_cast<char>(0xE0 | (c >> 12));
      b[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      b[2] = static_cast<char>(0x80 | (c & 0x3F));
      len = 3;
    } else {
      b[0] = static_cast<char>(0xF0 | (c >> 18));
      b[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      b[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      b[3] = static_cast<char>(0x80 | (c & 0x3F));
      len = 4;
    }
    if (o + len + 1 > n) break;
    std::memcpy(out + o, b, len);
    o += len;
  }
  out[o] = '\0';
  return out;
}

std::string wide_to_string(const wchar_t* w) {
  char buf[kNameBytes];
  const char* s = to_utf8(w, buf, sizeof buf);
  return s != nullptr ? s : "";
}

const char* domain_name(nvtxDomainHandle_t domain) {
  if (domain == nullptr) return nullptr;  // the default domain
  NameMaps& m = names();
  std::shared_lock lock(m.mutex);
  auto it = m.domains.find(domain);
  return it != m.domains.end() ? it->second : nullptr;
}

const char* registered_string(nvtxDomainHandle_t domain, nvtxStringHandle_t handle) {
  if (handle == nullptr) return nullptr;
  NameMaps& m = names();
  std::shared_lock lock(m.mutex);
  auto it = m.strings.find({domain, handle});
  return it != m.strings.end() ? it->second : nullptr;
}

// Appends `s` to buf[*o] (truncating; buf holds kNameBytes).
void append(char* buf, size_t* o, const char* s) {
  const size_t room = kNameBytes - 1 - *o;
  const size_t n = strnlen(s, room);
  std::memcpy(buf + *o, s, n);
  *o += n;
  buf[*o] = '\0';
}

// The event's name: "domain::message" in a domain created with a name, else the message;
// "(unnamed)" when the attributes carry no message we can read. May return a pointer into the
// attributes, or `buf` (kNameBytes).
const char* attribute_name(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a, char* buf) {
  const char* message = nullptr;
  const wchar_t* wide = nullptr;
  if (a != nullptr && a->size >= offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) {
    switch (a->messageType) {
      case NVTX_MESSAGE_TYPE_ASCII: message = a->message.ascii; break;
      case NVTX_MESSAGE_TYPE_UNICODE: wide = a->message.unicode; break;
      case NVTX_MESSAGE_TYPE_REGISTERED: message = registered_string(domain, a->message.registered); break;
      default: break;
    }
  }
  if (message == nullptr && wide == nullptr) message = kUnnamed;
  const char* d = domain_name(domain);
  if ((d == nullptr || *d == '\0') && message != nullptr) return message;
  size_t o = 0;
  buf[0] = '\0';
  if (d != nullptr && *d != '\0') {
    append(buf, &o, d);
    append(buf, &o, "::");
  }
  if (message != nullptr) append(buf, &o, message);
  else to_utf8(wide, buf + o, kNameBytes - o);
  return buf;
}

// ---- what every handler does ----

int after_push(bool chained, int chained_result) {
  const int level = t_depth++;
  return chained ? chained_result : level;
}

int after_pop(bool chained, int chained_result) {
  int level = -1;  // nothing open: an unbalanced pop
  if (t_depth > 0) level = --t_depth;
  return chained ? chained_result : level;
}

// The chained tool's handle when it issued one; else our own, one per distinct name.
nvtxDomainHandle_t create_domain(const std::string& name, bool chained, nvtxDomainHandle_t theirs) {
  NameMaps& m = names();
  std::unique_lock lock(m.mutex);
  if (chained) {
    if (theirs != nullptr) m.domains[theirs] = intern_copy(name);
    return theirs;
  }
  const char*& own = m.own_domains[name];
  if (own == nullptr) own = intern_copy(name);
  m.domains[own] = own;
  return reinterpret_cast<nvtxDomainHandle_t>(const_cast<char*>(own));
}

nvtxStringHandle_t register_string(nvtxDomainHandle_t domain, const std::string& text, bool chained,
                                   nvtxStringHandle_t theirs) {
  NameMaps& m = names();
  std::unique_lock lock(m.mutex);
  if (chained) {
    if (theirs != nullptr) m.strings[{domain, theirs}] = intern_copy(text);
    return theirs;
  }
  std::string key(reinterpret_cast<const char*>(&domain), sizeof domain);
  key += text;
  const char*& own = m.own_strings[key];
  if (own == nullptr) own = intern_copy(text);
  m.strings[{domain, own}] = own;
  return reinterpret_cast<nvtxStringHandle_t>(const_cast<char*>(own));
}

template <typename Fn>
Fn next_of(int instance, Slot slot) {
  return reinterpret_cast<Fn>(g_next[instance][slot]);
}

// Handlers of instance I: each calls the chained tool's handler of the same instance and slot.
template <int I>
struct Handlers {
  static int range_push_a(const char* message) {
    record_range_push(Api::nvtx, message != nullptr ? message : kUnnamed);
    auto next = next_of<nvtxRangePushA_impl_fntype>(I, kRangePushA);
    return after_push(next != nullptr, next != nullptr ? next(message) : 0);
  }
  static int range_push_w(const wchar_t* message) {
    char buf[kNameBytes];
    const char* name = to_utf8(message, buf, sizeof buf);
    record_range_push(Api::nvtx, name != nullptr ? name : kUnnamed);
    auto next = next_of<nvtxRangePushW_impl_fntype>(I, kRangePushW);
    return after_push(next != nullptr, next != nullptr ? next(message) : 0);
  }
  static int range_push_ex(const nvtxEventAttributes_t* attributes) {
    char buf[kNameBytes];
    record_range_push(Api::nvtx, attribute_name(nullptr, attributes, buf));
    auto next = next_of<nvtxRangePushEx_impl_fntype>(I, kRangePushEx);
    return after_push(next != nullptr, next != nullptr ? next(attributes) : 0);
  }
  static int range_pop() {
    record_range_pop(Api::nvtx);
    auto next = next_of<nvtxRangePop_impl_fntype>(I, kRangePop);
    return after_pop(next != nullptr, next != nullptr ? next() : 0);
  }
  static void mark_a(const char* message) {
    record_mark(Api::nvtx, message != nullptr ? message : kUnnamed);
    if (auto next = next_of<nvtxMarkA_impl_fntype>(I, kMarkA)) next(message);
  }
  static void mark_w(const wchar_t* message) {
    char buf[kNameBytes];
    const char* name = to_utf8(message, buf, sizeof buf);
    record_mark(Api::nvtx, name != nullptr ? name : kUnnamed);
    if (auto next = next_of<nvtxMarkW_impl_fntype>(I, kMarkW)) next(message);
  }
  static void mark_ex(const nvtxEventAttributes_t* attributes) {
    char buf[kNameBytes];
    record_mark(Api::nvtx, attribute_name(nullptr, attributes, buf));
    if (auto next = next_of<nvtxMarkEx_impl_fntype>(I, kMarkEx)) next(attributes);
  }
  static int domain_range_push_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
    char buf[kNameBytes];
    record_range_push(Api::nvtx, attribute_name(domain, attributes, buf));
    auto next = next_of<nvtxDomainRangePushEx_impl_fntype>(I, kDomainRangePushEx);
    return after_push(next != nullptr, next != nullptr ? next(domain, attributes) : 0);
  }
  static int domain_range_pop(nvtxDomainHandle_t domain) {
    record_range_pop(Api::nvtx);
    auto next = next_of<nvtxDomainRangePop_impl_fntype>(I, kDomainRangePop);
    return after_pop(next != nullptr, next != nullptr ? next(domain) : 0);
  }
  static void domain_mark_ex(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes) {
    char buf[kNameBytes];
    record_mark(Api::nvtx, attribute_name(domain, attributes, buf));
    if (auto next = next_of<nvtxDomainMarkEx_impl_fntype>(I, kDomainMarkEx)) next(domain, attributes);
  }
  static nvtxDomainHandle_t domain_create_a(const char* name) {
    auto next = next_of<nvtxDomainCreateA_impl_fntype>(I, kDomainCreateA);
    return create_domain(name != nullptr ? name : "", next != nullptr, next != nullptr ? next(name) : nullptr);
  }
  static nvtxDomainHandle_t domain_create_w(const wchar_t* name) {
    auto next = next_of<nvtxDomainCreateW_impl_fntype>(I, kDomainCreateW);
    return create_domain(wide_to_string(name), next != nullptr, next != nullptr ? next(name) : nullptr);
  }
  static nvtxStringHandle_t register_string_a(nvtxDomainHandle_t domain, const char* text) {
    auto next = next_of<nvtxDomainRegisterStringA_impl_fntype>(I, kDomainRegisterStringA);
    return register_string(domain, text != nullptr ? text : "", next != nullptr,
                           next != nullptr ? next(domain, text) : nullptr);
  }
  static nvtxStringHandle_t register_string_w(nvtxDomainHandle_t domain, const wchar_t* text) {
    auto next = next_of<nvtxDomainRegisterStringW_impl_fntype>(I, kDomainRegisterStringW);
    return register_string(domain, wide_to_string(text), next != nullptr,
                           next != nullptr ? next(domain, text) : nullptr);
  }

  static NvtxFunctionPointer handler(Slot slot) {
    switch (slot) {
      case kRangePushA: return reinterpret_cast<NvtxFunctionPointer>(&range_push_a);
      case kRangePushW: return reinterpret_cast<NvtxFunctionPointer>(&range_push_w);
      case kRangePushEx: return reinterpret_cast<NvtxFunctionPointer>(&range_push_ex);
      case kRangePop: return reinterpret_cast<NvtxFunctionPointer>(&range_pop);
      case kMarkA: return reinterpret_cast<NvtxFunctionPointer>(&mark_a);
      case kMarkW: return reinterpret_cast<NvtxFunctionPointer>(&mark_w);
      case kMarkEx: return reinterpret_cast<NvtxFunctionPointer>(&mark_ex);
      case kDomainRangePushEx: return reinterpret_cast<NvtxFunctionPointer>(&domain_range_push_ex);
      case kDomainRangePop: return reinterpret_cast<NvtxFunctionPointer>(&domain_range_pop);
      case kDomainMarkEx: return reinterpret_cast<NvtxFunctionPointer>(&domain_mark_ex);
      case kDomainCreateA: return reinterpret_cast<NvtxFunctionPointer>(&domain_create_a);
      case kDomainCreateW: return reinterpret_cast<NvtxFunctionPointer>(&domain_create_w);
      case kDomainRegisterStringA: return reinterpret_cast<NvtxFunctionPointer>(&register_string_a);
      case kDomainRegisterStringW: return reinterpret_cast<NvtxFunctionPointer>(&register_string_w);
      case kSlotCount: break;
    }
    return nullptr;
  }
};

template <size_t... I>
NvtxFunctionPointer handler_of(int instance, Slot slot, std::index_sequence<I...>) {
  NvtxFunctionPointer out = nullptr;
  ((static_cast<int>(I) == instance ? (out = Handlers<static_cast<int>(I)>::handler(slot), 0) : 0), ...);
  return out;
}

NvtxFunctionPointer handler_of(int instance, Slot slot) {
  return handler_of(instance, slot, std::make_index_sequence<kMaxInstances>());
}

// ---- initialization ----

// Every callback table of one NVTX instance, so a failed chained initialization can be undone.
struct Tables {
  NvtxFunctionTable table[NVTX_CB_MODULE_SIZE] = {};
  unsigned size[NVTX_CB_MODULE_SIZE] = {};
  NvtxFunctionPointer* saved[NVTX_CB_MODULE_SIZE] = {};

  explicit Tables(const NvtxExportTableCallbacks* callbacks) {
    for (int m = NVTX_CB_MODULE_CORE; m < NVTX_CB_MODULE_SIZE; ++m) {
      NvtxFunctionTable t = nullptr;
      unsigned n = 0;
      if (callbacks->GetModuleFunctionTable(static_cast<NvtxCallbackModule>(m), &t, &n) == 0 || t == nullptr) continue;
      table[m] = t;
      size[m] = n;
      saved[m] = new NvtxFunctionPointer[n]();
      for (unsigned i = 1; i < n; ++i) saved[m][i] = t[i] != nullptr ? *t[i] : nullptr;
    }
  }
  ~Tables() {
    for (auto* s : saved) delete[] s;
  }
  NvtxFunctionPointer* slot(NvtxCallbackModule m, unsigned id) const {
    return table[m] != nullptr && id < size[m] ? table[m][id] : nullptr;
  }
  NvtxFunctionPointer before(NvtxCallbackModule m, unsigned id) const { return saved[m] != nullptr ? saved[m][id] : nullptr; }
  void restore() const {
    for (int m = NVTX_CB_MODULE_CORE; m < NVTX_CB_MODULE_SIZE; ++m) {
      for (unsigned i = 1; i < size[m]; ++i) {
        if (table[m][i] != nullptr) *table[m][i] = saved[m][i];
      }
    }
  }
};

void warn(const char* what, const char* detail) {
  char line[1024];
  const int n = std::snprintf(line, sizeof line, "gpumemprof: %s%s\n", what, detail != nullptr ? detail : "");
  if (n > 0) (void)!write(2, line, static_cast<size_t>(n) < sizeof line ? static_cast<size_t>(n) : sizeof line - 1);
}

// GPUMEMPROF_NVTX_CHAIN: the other tool's InitializeInjectionNvtx2, loaded once per process.
NvtxInitializeInjectionNvtxFunc_t chained_init() {
  if (g_chain_loaded) return g_chain_init;
  g_chain_loaded = true;
  const char* path = std::getenv("GPUMEMPROF_NVTX_CHAIN");
  if (path == nullptr || *path == '\0') return nullptr;
  void* handle = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
  if (handle == nullptr) {
    warn("cannot load the NVTX tool in GPUMEMPROF_NVTX_CHAIN: ", dlerror());
    return nullptr;
  }
  auto init = reinterpret_cast<NvtxInitializeInjectionNvtxFunc_t>(real_dlsym()(handle, "InitializeInjectionNvtx2"));
  if (init == nullptr || init == &InitializeInjectionNvtx2) {  // not a tool, or ourselves again
    if (init == nullptr) warn("no InitializeInjectionNvtx2 in GPUMEMPROF_NVTX_CHAIN: ", path);
    dlclose(handle);
    return nullptr;
  }
  g_chain_init = init;
  auto extension = reinterpret_cast<ExtensionInit>(real_dlsym()(handle, "InitializeInjectionNvtxExtension"));
  if (extension != &InitializeInjectionNvtxExtension) g_chain_extension_init = extension;
  return init;
}

int initialize(NvtxGetExportTableFunc_t get_export_table) {
  std::lock_guard lock(g_init_mutex);
  NvtxInitializeInjectionNvtxFunc_t chain = chained_init();
  // Pass-through (GPUMEMPROF_ENABLE=0) or no room for another instance: the chained tool alone.
  if (!session_enabled() || g_instances >= kMaxInstances) return chain != nullptr ? chain(get_export_table) : 0;
  auto* callbacks = get_export_table != nullptr
                        ? static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS))
                        : nullptr;
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return chain != nullptr ? chain(get_export_table) : 0;
  }

  const Tables tables(callbacks);
  bool chained = false;
  if (chain != nullptr) {
    chained = chain(get_export_table) != 0;
    if (!chained) tables.restore();  // as NVTX would: nothing of a failed tool stays installed
  }

  const int instance = g_instances++;
  int installed = 0;
  for (int s = 0; s < kSlotCount; ++s) {
    const SlotSpec& spec = kSlots[s];
    NvtxFunctionPointer* slot = tables.slot(spec.module, spec.id);
    if (slot == nullptr) continue;  // an older NVTX without this call
    // A slot still holding what it held before the chained tool ran is not the tool's: calling
    // that (NVTX's lazy-init stub) would come straight back to us.
    NvtxFunctionPointer next = chained && *slot != tables.before(spec.module, spec.id) ? *slot : nullptr;
    if (chained && spec.creates_handles && next == nullptr) continue;  // its handles, or none
    g_next[instance][s] = next;
    *slot = handler_of(instance, static_cast<Slot>(s));
    ++installed;
  }

  if (!chained) {
    if (auto* version = static_cast<const NvtxExportTableVersionInfo*>(get_export_table(NVTX_ETID_VERSIONINFO))) {
      if (version->struct_size >= sizeof(NvtxExportTableVersionInfo) && version->SetInjectionNvtxVersion != nullptr) {
        version->SetInjectionNvtxVersion(NVTX_VERSION);
      }
    }
  }
  return installed > 0 || chained ? 1 : 0;
}

int initialize_extension(void* module_info) {
  std::lock_guard lock(g_init_mutex);
  chained_init();
  return g_chain_extension_init != nullptr ? g_chain_extension_init(module_info) : 0;
}

}  // namespace
}  // namespace gmp::shim

// NVTX's entry point into an injection library (nvtxDetail/nvtxInit.h). Returns nonzero on success.
GMP_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  return gmp::shim::initialize(get_export_table);
}

// The NVTX extensions' entry point (nvtxDetail/nvtxExtInit.h): they look for it in the library
// NVTX_INJECTION64_PATH names, so the shim hands them to the chained tool, or declines (0: the
// extension's calls become no-ops).
GMP_EXPORT int InitializeInjectionNvtxExtension(void* module_info) {
  return gmp::shim::initialize_extension(module_info);
}
