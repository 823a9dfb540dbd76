// Values as the environment variables and the command line take them (docs/configuration.md,
// "Values"): exactly as written or not at all; no whitespace, sign, exponent or hex. Shared by the
// collector's configuration and the tools' options, so a size means the same everywhere.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gmp {

std::string lower(std::string_view s);
// Decimal digits only, within 64 bits.
std::optional<uint64_t> parse_uint(std::string_view s);
// Decimal digits, optionally a point and more digits; finite.
std::optional<double> parse_double(std::string_view s);
// "123", "4K", "4KiB", "1.5G", "100MiB": decimal digits (a fraction only if it comes to whole
// bytes), then nothing or a unit B, K, M, G, T, also KiB/KB, MiB/MB, ..., in any case, all powers
// of 1024; at most 2^64 - 1 bytes.
std::optional<uint64_t> parse_size(std::string_view text);
// 1, true, yes, on / 0, false, no, off, in any case.
std::optional<bool> parse_bool(std::string_view text);

}  // namespace gmp
