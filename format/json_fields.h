// Reading fields of JSON the tools did not write (manifest.json, summary.json, bundle files) without
// trusting it: a missing key, a value of the wrong type or a number out of range reads as absent,
// never as an exception. nlohmann's own accessors throw on a type mismatch (value("exe", "?") on
// "exe": null) and are undefined on a missing key of a const object (operator[]); the from_json of
// format/'s schemas (summary.h, device_figures.h, oom_bundle_schema.h, manifest_record.h,
// config_record.h) use these instead, so the tools read every file through them. The namespace is
// the tools' (gmp::reader), which were its first users.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gmp::reader {

// `j[key]` when `j` is an object holding `key`; nullptr otherwise (also when `j` is nullptr).
const nlohmann::json* member(const nlohmann::json* j, const char* key);
// `j` when it is an array (to iterate), else an empty array.
const nlohmann::json& array_or_empty(const nlohmann::json* j);

std::optional<uint64_t> as_u64(const nlohmann::json* j);  // a non-negative integer
std::optional<int64_t> as_i64(const nlohmann::json* j);   // an integer that fits int64
std::optional<int> as_device(const nlohmann::json* j);    // -1 (none) up to the int16 the trace stores
std::optional<bool> as_bool(const nlohmann::json* j);
uint64_t u64_or(const nlohmann::json* j, uint64_t fallback = 0);
std::string str_or(const nlohmann::json* j, const std::string& fallback = {});
std::optional<std::string> as_string(const nlohmann::json* j);
// The strings of an array, in order, leaving out elements that are not strings; none when not an array.
std::vector<std::string> strings_in(const nlohmann::json* j);

// The writers' counterpart: an optional field as its value, or null when it has none.
template <typename T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

}  // namespace gmp::reader
