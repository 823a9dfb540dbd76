// Stream-ordered pools as the shim sees them: each device's current pool (cached, kept current by
// the cuDeviceSetMemPool wrapper) and every pool met so far with the reserved bytes last reported,
// so synchronisation points re-read only what can have shrunk and emit only changes.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <optional>

#include "../collector/seam.h"  // PoolReading

namespace gmp::shim::pools {

CUmemoryPool current_pool(int device);
void set_current_pool(int device, CUmemoryPool pool);

// The pool's RESERVED_MEM_CURRENT as the driver reports it now, remembering nothing; nullopt when
// it cannot say (no pool, no cuMemPoolGetAttribute, an error).
std::optional<uint64_t> driver_reserved(CUmemoryPool pool);

// Reads the pool's RESERVED_MEM_CURRENT from the driver and remembers it as the last reading.
uint64_t read_reserved(CUmemoryPool pool, int device);

// After a successful allocation of `size` from `pool`: its reserved bytes when the allocation may
// have grown it (the headroom known from the last reading did not cover it), read then with its
// used bytes for the next headroom; kNoReading when it provably fit (then the allocation path asks
// the driver nothing). Rounding or fragmentation beyond what the headroom counts can grow a pool
// unseen until the next reading, whose high watermark still gives the pool's peak.
uint64_t read_after_allocation(CUmemoryPool pool, int device, uint64_t size);

// An allocation from the pool failed: the driver counted its attempt in RESERVED_MEM_HIGH, which
// readings then ignore until the program resets it below that. Returns the pool's reserved bytes
// (0 when the driver cannot say), for the failure's record.
uint64_t failed_allocation(CUmemoryPool pool, int device);

// The pool gave memory back (a trim): the headroom known for it is gone.
void trimmed(CUmemoryPool pool);

// The pool's reserved bytes and high watermark now (remembered as its last reading), for the
// record of a trim or of a pool about to be destroyed; false when the driver cannot say.
bool read_with_high(CUmemoryPool pool, int device, PoolReading* out);

// Every known pool's reserved bytes and high watermark, for the collector's passes (PoolReadFn).
size_t read_all(PoolReading* out, size_t max);

void forget(CUmemoryPool pool);

// The device a pool met so far was created on or used for; -1 when unknown.
int known_device(CUmemoryPool pool);

// Re-reads every known pool and records a PoolReserved event (with its high watermark) for each
// that changed: at synchronisations and at exit, on the program's thread.
void refresh_all();

// A forked child inherits handles that mean nothing to it.
void reset();

}  // namespace gmp::shim::pools
