// The handlers the shim puts into an NVTX instance's function slots. Push/pop/mark handlers record
// RangePush/RangePop/Mark events with Api::nvtx through markers.h, then call the handler the
// chained tool (nvtx_chain.h) installed in the same slot, if any, so that both tools see every
// call. Each NVTX instance (each module that includes the NVTX headers) gets its own set of
// handlers, so that each calls on into that instance's own chained handlers.
#pragma once

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

namespace gmp::shim::nvtx {

constexpr int kMaxInstances = 32;  // NVTX instances (modules using NVTX) we attach to

// The slots we replace.
enum Slot : int {
  kRangePushA, kRangePushW, kRangePushEx, kRangePop, kMarkA, kMarkW, kMarkEx,
  kDomainRangePushEx, kDomainRangePop, kDomainMarkEx,
  kDomainCreateA, kDomainCreateW, kDomainRegisterStringA, kDomainRegisterStringW,
  kSlotCount
};

// Where a slot lives in NVTX's callback tables.
struct SlotSpec {
  NvtxCallbackModule module;
  unsigned id;
  bool creates_handles;  // installed under a chained tool only where it handles the call itself
};

inline constexpr SlotSpec kSlots[kSlotCount] = {
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

// Our handler for `slot` of NVTX instance `instance` (0 to kMaxInstances - 1).
NvtxFunctionPointer handler_of(int instance, Slot slot);

// The chained tool's handler that ours for (instance, slot) calls on to (nullptr: none). Set once,
// before the instance publishes its function pointers (NVTX's init is a barrier for them).
void set_next(int instance, Slot slot, NvtxFunctionPointer next);

}  // namespace gmp::shim::nvtx
