// The lines of attribution.jsonl (docs/attribution.md), one function per record type, each
// returning the line without its newline. Their strings come from outside the profiler (library
// paths, NVTX and mark names, Python file and function names) and may hold any bytes: they are
// written through json_text(), so a byte that is not UTF-8 becomes U+FFFD and nothing throws.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gmp {

// A stack frame with this bit set is a Python frame's intern id, as the shim writes them
// (python_frames.h); other frames are return addresses.
inline constexpr uint64_t kPythonFrameTag = 1ull << 63;

std::string stack_record(uint32_t id, const std::vector<uint64_t>& frames);
std::string name_record(uint32_t id, std::string_view name);
// `entry`: file NUL function NUL line (4 bytes), as python_frames.cpp interns it; nullopt when
// the entry is too short to hold that.
std::optional<std::string> pyframe_record(uint32_t id, const uint8_t* entry, uint32_t length);
std::string module_record(std::string_view path, uint64_t base, uint64_t start, uint64_t end,
                          std::string_view build_id, uint64_t seen_ns);
std::string unloaded_record(std::string_view path, uint64_t base, uint64_t unloaded_ns);

}  // namespace gmp
