// HIP devices as HSA describes them: which device an HSA memory pool is on, and each device's name,
// PCI bus id and memory size. From HSA alone, never through HIP: these are asked from inside HIP's
// own calls (the HSA level, a device's first event), where HIP may hold its locks.
#pragma once

#include <cstdint>

#include "hip_api.h"

namespace gmp::shim::hip_devices {

// The HIP ordinal of a GPU pool's device, -1 for a host (CPU agent's) pool, -2 for a pool HSA did
// not list or a GPU hidden from HIP. HIP numbers the GPU agents in HSA's order (ROCR_VISIBLE_DEVICES
// already applied), then keeps those in HIP_VISIBLE_DEVICES (else CUDA_VISIBLE_DEVICES), in its order.
int pool_device(hsa_amd_memory_pool_t pool);

// The device's product name, PCI bus id ("0000:03:00.0") and total memory (its largest global
// pool); false when HSA does not know the ordinal.
bool info(int device, char* name, int name_len, char* pci_bus_id, int pci_len, uint64_t* total_bytes);

// The same from HIP, only where no HSA runtime is loaded (a HIP runtime of another make): then no
// event comes from inside HIP's calls and asking HIP is safe.
bool info_without_hsa(int device, char* name, int name_len, char* pci_bus_id, int pci_len, uint64_t* total_bytes);

}  // namespace gmp::shim::hip_devices
