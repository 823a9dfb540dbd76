#include "bytes_text.h"

#include <cstdio>

namespace gmp {

std::string bytes_text(uint64_t bytes, ByteUnits units) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = units == ByteUnits::MiBOrGiB ? 2 : 0;
  const int largest = units == ByteUnits::MiBOrGiB ? 3 : 4;
  // Dividing by powers of two is exact, so each figure is the byte count's own double, scaled.
  double v = static_cast<double>(bytes) / static_cast<double>(1ull << (10 * unit));
  while (v >= 1024 && unit < largest) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0) std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  else std::snprintf(buf, sizeof buf, "%.2f %s", v, kUnits[unit]);
  return buf;
}

std::string pytorch_size_text(uint64_t bytes) {
  char buf[64];
  if (bytes <= 1024) {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(bytes));
  } else if (bytes <= 1048576) {
    std::snprintf(buf, sizeof buf, "%.2f KiB", static_cast<double>(bytes) / 1024.0);
  } else if (bytes <= 1073741824ull) {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / 1048576.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / 1073741824.0);
  }
  return buf;
}

}  // namespace gmp
