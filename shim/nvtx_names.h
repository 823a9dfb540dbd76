// The names of NVTX events, and the registry of NVTX's handles that stand for names.
//
// Handles. Without a chained tool (nvtx_chain.h), domain and string handles are ours: pointers to
// interned, never-freed names. With one, a handle-creating call (DomainCreate*,
// DomainRegisterString*) goes to the chained tool and we return its handle unchanged, remembering
// the name it stands for; so the chained tool only ever receives handles it issued, in every slot,
// ours or not. If the chained tool does not handle a creating call, we leave that slot alone too
// (NVTX returns NULL).
#pragma once

#include <cstddef>
#include <string>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

namespace gmp::shim::nvtx {

constexpr const char* kUnnamed = "(unnamed)";
constexpr size_t kNameBytes = 4096;  // markers.cpp interns at most this many bytes of a name

// The handle for a domain named `name`: `theirs` when `chained` (the chained tool's, which may be
// null), else our own, one per distinct name.
nvtxDomainHandle_t create_domain(const std::string& name, bool chained, nvtxDomainHandle_t theirs);

// The same for a string registered in `domain`.
nvtxStringHandle_t register_string(nvtxDomainHandle_t domain, const std::string& text, bool chained,
                                   nvtxStringHandle_t theirs);

// An event's name: "domain::message" in a domain created with a name, else the message;
// "(unnamed)" when the attributes carry no message we can read. May return a pointer into the
// attributes, or `buf` (kNameBytes).
const char* attribute_name(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a, char* buf);

// A wide (UTF-32) name as UTF-8, at most kNameBytes - 1 bytes; "" for a null one.
std::string wide_name(const wchar_t* w);

}  // namespace gmp::shim::nvtx
