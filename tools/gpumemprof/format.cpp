#include "format.h"

#include <cctype>
#include <cstdio>

#include "bytes_text.h"
#include "json_views.h"

namespace gmp::tool {

std::string human_duration_ns(uint64_t ns) {
  char buf[32];
  if (ns >= 1'000'000'000ull) snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  else snprintf(buf, sizeof buf, "%.1f ms", static_cast<double>(ns) / 1e6);
  return buf;
}

std::string counted(uint64_t n, const std::string& noun) {
  const bool sibilant = noun.ends_with('s') || noun.ends_with('x') || noun.ends_with("ch") || noun.ends_with("sh");
  return std::to_string(n) + " " + noun + (n == 1 ? "" : sibilant ? "es" : "s");
}

std::string marker_label(const analysis::Marker& m) {
  using Type = analysis::Marker::Type;
  switch (m.type) {
    case Type::AlertFired: {
      std::string s = alert_type_name(m.alert);
      for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      return s + " alert";
    }
    case Type::AlertCleared: return alert_type_name(m.alert) + " alert cleared";
    case Type::AllocFailed:
      return std::string(api_name(m.api)) + " of " + bytes_text(m.size) + " failed (" + cuda_error_name(m.result) + ")";
    case Type::OomBundle: return "OOM bundle written";
    case Type::OomRecovered: return "OOM recovered by a retry";
    case Type::Cleanup:
      return "watchdog trimmed " + counted(m.threshold, "pool") + ": " + bytes_text(m.size) + " given back";
  }
  return "?";
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

}  // namespace gmp::tool
