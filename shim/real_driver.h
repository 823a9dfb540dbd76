// The real driver: its library handle, the real pointer of every entry point we wrap or call, and
// the routing from a real pointer to our wrapper. Resolved lazily and lock-free (two threads may
// both resolve; they store the same values), because it can be reached from inside dlsym while
// another thread holds the loader lock.
#pragma once

#include "entry_points.h"

namespace gmp::shim {

using RealDlsym = void* (*)(void*, const char*) noexcept;  // noexcept: lets dlsym tail-jump
RealDlsym real_dlsym();

// The real function for `e`, or nullptr if the driver is not loaded or lacks it.
void* real(Entry e);

// Our wrapper for the driver function `p`, or `p` itself if we do not wrap it.
void* route(void* p);

// The wrapper of the exact exported name `name`, if we wrap it (nullptr otherwise), plus its entry.
bool wrapped_entry_for_name(const char* name, Entry* out);
void* wrapper(Entry e);

// Tries to resolve the driver now; `hint` is a handle that lookups arrived with (may be null).
bool ensure_driver(void* hint);

}  // namespace gmp::shim

#define GMP_REAL(name) reinterpret_cast<decltype(&name)>(::gmp::shim::real(::gmp::shim::Entry::name))
