// A Python frame's intern-table entry (intern_table.h) as the pyframe record of attribution.jsonl.
// The shim interns it as file NUL function NUL line (4 bytes, native order; python_frames.cpp).
#pragma once

#include <cstdint>
#include <optional>

#include "attribution_records.h"

namespace gmp {

// nullopt when the entry is too short to hold that layout.
std::optional<PyFrameLine> pyframe_from_entry(uint32_t id, const uint8_t* entry, uint32_t length);

}  // namespace gmp
