// Counts as people read them: "1,234,567", "3 allocations". Shared by the command's output and the
// analyses that word their own findings (the OOM advice, the gate's verdict), so a count reads the
// same in every line the tools print.
#pragma once

#include <cstdint>
#include <string>

namespace gmp {

// A count with its digits grouped by thousands: "1,234,567".
std::string grouped(uint64_t n);

// "1 allocation", "3 allocations", "2 processes": a count (grouped()) with its noun (plural -es after
// s, x, ch, sh).
std::string counted(uint64_t n, const std::string& noun);

}  // namespace gmp
