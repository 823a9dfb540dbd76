// Stream-ordered pools as the shim sees them: each device's current pool (cached, kept current by
// the cuDeviceSetMemPool wrapper) and every pool met so far with the reserved bytes last reported,
// so synchronisation points re-read only what can have shrunk and emit only changes.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>

namespace gmp::shim::pools {

CUmemoryPool current_pool(int device);
void set_current_pool(int device, CUmemoryPool pool);

// The pool's RESERVED_MEM_CURRENT as the driver reports it now, remembering nothing; nullopt when
// it cannot say (no pool, no cuMemPoolGetAttribute, an error).
std::optional<uint64_t> driver_reserved(CUmemoryPool pool);

// Reads the pool's RESERVED_MEM_CURRENT from the driver and remembers it as the last reading.
uint64_t read_reserved(CUmemoryPool pool, int device);

void forget(CUmemoryPool pool);

// The device a pool met so far was created on or used for; -1 when unknown.
int known_device(CUmemoryPool pool);

// Re-reads every known pool and records a PoolReserved event for each that changed.
void refresh_all();

// A forked child inherits handles that mean nothing to it.
void reset();

}  // namespace gmp::shim::pools
