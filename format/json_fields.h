// Reading fields of JSON the tools did not write (manifest.json, summary.json, bundle files) without
// trusting it: a missing key, a value of the wrong type or a number out of range reads as absent,
// never as an exception. nlohmann's own accessors throw on a type mismatch (value("exe", "?") on
// "exe": null) and are undefined on a missing key of a const object (operator[]); the schemas'
// from_json (summary.h, oom_bundle_schema.h, manifest_record.h, attribution_records.h) and the tools
// use these instead. In format/ because the schemas read through it; the namespace is the tools'
// (gmp::reader), which were its first users.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace gmp::reader {

// `j[key]` when `j` is an object holding `key`; nullptr otherwise (also when `j` is nullptr).
const nlohmann::json* member(const nlohmann::json* j, const char* key);
// The value at `path` under `j` ({"oom", "failures"}); nullptr when any step is missing.
const nlohmann::json* at_path(const nlohmann::json& j, std::initializer_list<const char*> path);
// `j` when it is an array (to iterate), else an empty array.
const nlohmann::json& array_or_empty(const nlohmann::json* j);

std::optional<uint64_t> as_u64(const nlohmann::json* j);  // a non-negative integer
std::optional<int64_t> as_i64(const nlohmann::json* j);   // an integer that fits int64
std::optional<int> as_device(const nlohmann::json* j);    // -1 (none) up to the int16 the trace stores
std::optional<bool> as_bool(const nlohmann::json* j);
uint64_t u64_or(const nlohmann::json* j, uint64_t fallback = 0);
std::string str_or(const nlohmann::json* j, const std::string& fallback = {});

// The forms most callers want: the number or string at `path`, 0 or "" where there is none.
inline uint64_t json_u64(const nlohmann::json& j, std::initializer_list<const char*> path) {
  return u64_or(at_path(j, path));
}
inline std::string json_str(const nlohmann::json& j, std::initializer_list<const char*> path) {
  return str_or(at_path(j, path));
}

}  // namespace gmp::reader
