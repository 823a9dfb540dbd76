// Configuration from the environment, shared by the fake CUDA driver and the fake HIP runtime
// (tests/fake_hip): a device count and a per-device capacity. An invalid value prints one line on
// stderr, naming `tool`, and the default is used.
#pragma once

#include <cstddef>

namespace fakecuda {

// Parses "123", "64K", "512M", "16G", "1T", also "16GiB"/"16GB". Returns false when invalid.
bool parse_size(const char* text, size_t* out);
// `variable`: 1..max_devices, default 1.
int env_device_count(const char* variable, const char* tool, int max_devices);
// `variable`: bytes with an optional K/M/G/T suffix, default `fallback`.
size_t env_capacity(const char* variable, const char* tool, size_t fallback);

}  // namespace fakecuda
