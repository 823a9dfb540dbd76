// The shim as an NVTX injection library (docs/attribution.md, "NVTX"). An application's NVTX code
// (the v3 headers, one instance per module that includes them) dlopens $NVTX_INJECTION64_PATH and
// calls InitializeInjectionNvtx2 with its own export-table getter; we put our handlers
// (nvtx_handlers.h) into that instance's function slots, after the tool GPUMEMPROF_NVTX_CHAIN names
// (nvtx_chain.h) has put in its own, which ours then call on to.
//
// Handled: RangePushA/W/Ex, RangePop, MarkA/W/Ex (CORE) and DomainRangePushEx, DomainRangePop,
// DomainMarkEx, DomainCreateA/W, DomainRegisterStringA/W (CORE2). Not handled: RangeStart/End
// (process-wide ranges that need not nest, which the per-thread range model cannot represent),
// naming of threads, categories and resources; those slots keep the chained tool's handlers, or
// become no-ops without one. The extension modules (payload, memory, counters) initialize through
// InitializeInjectionNvtxExtension, which is only forwarded to the chained tool.
#include "nvtx_injection.h"

#include <mutex>

#include "../collector/seam.h"
#include "nvtx_chain.h"
#include "nvtx_handlers.h"

namespace gmp::shim::nvtx {
namespace {

int g_instances = 0;  // NVTX instances we attached to; under g_init_mutex
std::recursive_mutex g_init_mutex;  // recursive: a chained tool's initialization may start another instance's

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
  NvtxFunctionPointer before(NvtxCallbackModule m, unsigned id) const {
    return saved[m] != nullptr ? saved[m][id] : nullptr;
  }
  void restore() const {
    for (int m = NVTX_CB_MODULE_CORE; m < NVTX_CB_MODULE_SIZE; ++m) {
      for (unsigned i = 1; i < size[m]; ++i) {
        if (table[m][i] != nullptr) *table[m][i] = saved[m][i];
      }
    }
  }
};

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
    set_next(instance, static_cast<Slot>(s), next);
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
  const ExtensionInit extension = chained_extension_init();
  return extension != nullptr ? extension(module_info) : 0;
}

}  // namespace
}  // namespace gmp::shim::nvtx

// NVTX's entry point into an injection library (nvtxDetail/nvtxInit.h). Returns nonzero on success.
GMP_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  return gmp::shim::nvtx::initialize(get_export_table);
}

// The NVTX extensions' entry point (nvtxDetail/nvtxExtInit.h): they look for it in the library
// NVTX_INJECTION64_PATH names, so the shim hands them to the chained tool, or declines (0: the
// extension's calls become no-ops).
GMP_EXPORT int InitializeInjectionNvtxExtension(void* module_info) {
  return gmp::shim::nvtx::initialize_extension(module_info);
}
