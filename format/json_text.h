// JSON text that never throws. nlohmann::json::dump() throws on a string that is not valid UTF-8,
// and such strings reach our writers from outside the profiler (environment values, argv, paths,
// executable, NVTX and mark names, symbol names). Every writer of the run directory and every
// tool prints JSON through json_text(), which replaces each invalid byte with U+FFFD.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gmp {

// indent -1: one line; otherwise pretty-printed with that many spaces per level.
inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace gmp
