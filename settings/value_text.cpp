#include "value_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace gmp {
namespace {

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Decimal digits, optionally a point and more digits: no sign, exponent, hex, inf or nan, and no
// whitespace anywhere (a value is taken exactly as written or not at all).
bool is_decimal(std::string_view s) {
  const size_t point = s.find('.');
  return point == std::string_view::npos ? all_digits(s)
                                         : all_digits(s.substr(0, point)) && all_digits(s.substr(point + 1));
}

}  // namespace

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  if (!is_decimal(s)) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, std::chars_format::fixed);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<uint64_t> parse_uint(std::string_view s) {
  uint64_t v = 0;
  if (!all_digits(s)) return std::nullopt;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);  // out of range: an error
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<uint64_t> parse_size(std::string_view s) {
  const size_t unit_at = std::min(s.find_first_not_of("0123456789."), s.size());
  const std::string_view number = s.substr(0, unit_at);
  const std::string unit = lower(s.substr(unit_at));
  uint64_t scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kib" || unit == "kb") scale = 1ull << 10;
  else if (unit == "m" || unit == "mib" || unit == "mb") scale = 1ull << 20;
  else if (unit == "g" || unit == "gib" || unit == "gb") scale = 1ull << 30;
  else if (unit == "t" || unit == "tib" || unit == "tb") scale = 1ull << 40;
  else return std::nullopt;
  // A whole number is computed exactly; a fraction in double, and must come to whole bytes.
  if (auto whole = parse_uint(number)) {
    if (*whole > UINT64_MAX / scale) return std::nullopt;
    return *whole * scale;
  }
  auto fraction = parse_double(number);
  if (!fraction) return std::nullopt;
  const double bytes = *fraction * static_cast<double>(scale);
  if (bytes >= 0x1p64 || bytes != std::floor(bytes)) return std::nullopt;
  return static_cast<uint64_t>(bytes);
}

std::optional<bool> parse_bool(std::string_view text) {
  const std::string s = lower(text);
  if (s == "1" || s == "true" || s == "yes" || s == "on") return true;
  if (s == "0" || s == "false" || s == "no" || s == "off") return false;
  return std::nullopt;
}

}  // namespace gmp
