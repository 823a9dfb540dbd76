// GPUMEMPROF_DEVICE_LIMIT (docs/device-limit.md): the size of the smaller GPU a process rehearses,
// for every device or per device, as a size or a known GPU's name. Parsed the same way by the
// collector's configuration (its one error line, manifest.json), the shim (which enforces it) and
// the tools (`check --max-peak L4`).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gmp {

// A GPU whose usable capacity a limit may name: the total the driver reports on it (what
// cuMemGetInfo and PyTorch's "total capacity" say), which is less than the marketed size.
struct KnownGpu {
  const char* name;
  uint64_t bytes;
};
inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr std::array<KnownGpu, 7> kKnownGpus = {{
    {"L4", 22579 * kMiB},
    {"A10", 22723 * kMiB},
    {"A100-40GB", 40336 * kMiB},
    {"A100-80GB", 81050 * kMiB},
    {"H100-80GB", 81009 * kMiB},
    {"H200", 143157 * kMiB},  // measured on an H200 (driver 580.159.04), 2026-11-28
    {"RTX-4090", 24217 * kMiB},
}};
inline constexpr int kMaxLimitDevices = 64;

// A known GPU's usable bytes, by its name in any case.
std::optional<uint64_t> known_gpu_bytes(std::string_view name);
// A known GPU's name or a size (parse_size) of more than 0.
std::optional<uint64_t> parse_size_or_gpu(std::string_view text);
// "L4, A10, ...": the names as the messages list them.
std::string known_gpu_names();

struct DeviceLimitSpec {
  std::optional<uint64_t> every;                      // one limit for every device
  std::array<uint64_t, kMaxLimitDevices> per_device{};  // 0: no limit on that device
  uint64_t for_device(int device) const {
    if (every) return *every;
    return device >= 0 && device < kMaxLimitDevices ? per_device[device] : 0;
  }
};

// A whole value: a size or a name for every device, or "ORDINAL:SIZE_OR_NAME" entries separated by
// commas, each device once. nullopt when malformed.
std::optional<DeviceLimitSpec> parse_device_limit(std::string_view text);
// What parse_device_limit accepts, for the one error line.
std::string device_limit_form();

}  // namespace gmp
