#include "nvtx_handlers.h"

#include <cstddef>
#include <utility>

#include "markers.h"
#include "nvtx_names.h"
#include "utf8.h"

namespace gmp::shim::nvtx {
namespace {

// Per NVTX instance: the chained tool's handler for each slot we took over (nullptr: none).
NvtxFunctionPointer g_next[kMaxInstances][kSlotCount];

// Each thread's open NVTX ranges (all domains), for the depth push and pop return.
__attribute__((tls_model("initial-exec"))) thread_local int t_depth = 0;

int after_push(bool chained, int chained_result) {
  const int level = t_depth++;
  return chained ? chained_result : level;
}

int after_pop(bool chained, int chained_result) {
  int level = -1;  // nothing open: an unbalanced pop
  if (t_depth > 0) level = --t_depth;
  return chained ? chained_result : level;
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
    const char* name = utf8::from_wide(message, buf, sizeof buf);
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
    const char* name = utf8::from_wide(message, buf, sizeof buf);
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
    return create_domain(wide_name(name), next != nullptr, next != nullptr ? next(name) : nullptr);
  }
  static nvtxStringHandle_t register_string_a(nvtxDomainHandle_t domain, const char* text) {
    auto next = next_of<nvtxDomainRegisterStringA_impl_fntype>(I, kDomainRegisterStringA);
    return register_string(domain, text != nullptr ? text : "", next != nullptr,
                           next != nullptr ? next(domain, text) : nullptr);
  }
  static nvtxStringHandle_t register_string_w(nvtxDomainHandle_t domain, const wchar_t* text) {
    auto next = next_of<nvtxDomainRegisterStringW_impl_fntype>(I, kDomainRegisterStringW);
    return register_string(domain, wide_name(text), next != nullptr,
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

}  // namespace

NvtxFunctionPointer handler_of(int instance, Slot slot) {
  return handler_of(instance, slot, std::make_index_sequence<kMaxInstances>());
}

void set_next(int instance, Slot slot, NvtxFunctionPointer next) { g_next[instance][slot] = next; }

}  // namespace gmp::shim::nvtx
