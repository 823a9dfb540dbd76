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

uint64_t json_u64(const nlohmann::json& j, std::initializer_list<const char*> path) {
  const nlohmann::json* p = &j;
  for (const char* k : path) {
    if (!p->is_object() || !p->contains(k)) return 0;
    p = &(*p)[k];
  }
  return p->is_number_unsigned() || p->is_number_integer() ? p->get<uint64_t>() : 0;
}

}  // namespace gmp::tool
