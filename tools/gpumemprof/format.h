// Human-readable figures for the command's output.
#pragma once

#include <cstdint>
#include <string>

namespace gmp::tool {

std::string human_bytes(uint64_t bytes);  // "1.50 GiB", "512 B"
std::string human_duration_ns(uint64_t ns);  // "1.234 s", "12.5 ms"

}  // namespace gmp::tool
