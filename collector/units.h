// Sizes as the profiler's own messages print them: MiB below 1 GiB, GiB above, two decimals.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace gmp {

inline std::string mib_or_gib(uint64_t bytes) {
  char buf[32];
  if (bytes >= (1ull << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1ull << 30));
  else std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace gmp
