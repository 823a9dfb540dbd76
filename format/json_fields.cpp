#include "json_fields.h"

#include <climits>

namespace gmp::reader {

using json = nlohmann::json;

const json* member(const json* j, const char* key) {
  if (j == nullptr || !j->is_object()) return nullptr;
  auto it = j->find(key);
  return it == j->end() ? nullptr : &*it;
}

std::optional<std::string> as_string(const json* j) {
  return j != nullptr && j->is_string() ? std::optional<std::string>(j->get<std::string>()) : std::nullopt;
}

std::vector<std::string> strings_in(const json* j) {
  std::vector<std::string> out;
  for (const json& s : array_or_empty(j)) {
    if (s.is_string()) out.push_back(s.get<std::string>());
  }
  return out;
}

const json& array_or_empty(const json* j) {
  static const json empty = json::array();
  return j != nullptr && j->is_array() ? *j : empty;
}

std::optional<uint64_t> as_u64(const json* j) {
  if (j == nullptr) return std::nullopt;
  if (j->is_number_unsigned()) return j->get<uint64_t>();
  if (j->is_number_integer()) {
    const int64_t v = j->get<int64_t>();
    if (v >= 0) return static_cast<uint64_t>(v);
  }
  return std::nullopt;
}

std::optional<int64_t> as_i64(const json* j) {
  if (j == nullptr) return std::nullopt;
  if (j->is_number_unsigned()) {
    const uint64_t v = j->get<uint64_t>();
    if (v <= static_cast<uint64_t>(INT64_MAX)) return static_cast<int64_t>(v);
    return std::nullopt;
  }
  if (j->is_number_integer()) return j->get<int64_t>();
  return std::nullopt;
}

std::optional<int> as_device(const json* j) {
  auto v = as_i64(j);
  if (!v || *v < -1 || *v > INT16_MAX) return std::nullopt;
  return static_cast<int>(*v);
}

std::optional<bool> as_bool(const json* j) {
  if (j == nullptr || !j->is_boolean()) return std::nullopt;
  return j->get<bool>();
}

uint64_t u64_or(const json* j, uint64_t fallback) { return as_u64(j).value_or(fallback); }

std::string str_or(const json* j, const std::string& fallback) {
  return j != nullptr && j->is_string() ? j->get_ref<const std::string&>() : fallback;
}

}  // namespace gmp::reader
