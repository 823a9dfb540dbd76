// Reading JSON the tools did not write themselves: every JSON file of a run directory and of an
// OOM bundle, and each line of attribution.jsonl, is parsed here, so that they all refuse the same
// things in the same words. Never throws.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace gmp::reader {

// The deepest nesting of arrays and objects accepted. gpumemprof's own files nest at most 5 deep;
// a much deeper document is not one of them, and parsing it would recurse without bound.
inline constexpr size_t kMaxJsonDepth = 64;

// The deepest nesting of `[` and `{` in `text`, outside strings, counted up to `limit` + 1.
size_t json_depth(std::string_view text, size_t limit = kMaxJsonDepth);

// Parses `text`; nullopt with a one-line, bounded `problem` ("nests arrays and objects deeper
// than 64 levels", "parse error at line 1, column 5: ...") when it is not JSON.
std::optional<nlohmann::json> parse_json(std::string_view text, std::string& problem);

// Reads `path` (input_file.h: regular files only, no holes) and parses it. nullopt with a one-line
// `error` naming the file; `missing` is set, and `error` empty, when the file does not exist.
std::optional<nlohmann::json> read_json_file(const std::string& path, std::string& error, bool& missing);

}  // namespace gmp::reader
