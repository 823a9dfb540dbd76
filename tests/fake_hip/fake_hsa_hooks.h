// Test hooks of the fake HSA runtime, for the fake HIP runtime and the tests.
#pragma once

#include <cstdint>

extern "C" {
uint64_t fakehsa_charged_bytes(int gpu);   // VRAM charged on GPU `gpu` (rounded allocations)
uint64_t fakehsa_gpu_pool(int gpu, int fine);  // the handle of GPU `gpu`'s coarse (0) or fine (1) pool
uint64_t fakehsa_host_pool();
int fakehsa_gpu_count();                   // FAKE_HIP_DEVICES
uint64_t fakehsa_capacity();               // FAKE_HIP_CAPACITY
}
