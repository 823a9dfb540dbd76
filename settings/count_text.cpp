#include "count_text.h"

namespace gmp {

std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string counted(uint64_t n, const std::string& noun) {
  const bool sibilant = noun.ends_with('s') || noun.ends_with('x') || noun.ends_with("ch") || noun.ends_with("sh");
  return grouped(n) + " " + noun + (n == 1 ? "" : sibilant ? "es" : "s");
}

}  // namespace gmp
