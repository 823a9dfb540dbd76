#include "format.h"

#include <cstdio>

namespace gmp::tool {

std::string human_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
  return buf;
}

std::string human_duration_ns(uint64_t ns) {
  char buf[32];
  if (ns >= 1'000'000'000ull) snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  else snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

}  // namespace gmp::tool
