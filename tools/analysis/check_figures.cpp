#include "check_figures.h"

#include <cstdint>

#include "json_fields.h"
#include "json_text.h"

namespace gmp::analysis {
namespace {

using json = nlohmann::json;

// The value as the message shows it: its JSON, cut short.
std::string shown(const json& v) {
  std::string text = json_text(v);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

// One walk over the figures: the first problem found, with the path of the key that holds it.
class Walk {
 public:
  std::optional<std::string> problem;

  // `parent[key]` as an object when it is one; records a problem when it is present and is not,
  // or missing and `required`.
  const json* object(const json* parent, const std::string& path, const char* key, bool required) {
    const json* v = at(parent, path, key, required);
    if (v != nullptr && !v->is_object()) fail(path, key, *v, "an object");
    return v != nullptr && v->is_object() && !problem ? v : nullptr;
  }
  const json* array(const json* parent, const std::string& path, const char* key) {
    const json* v = at(parent, path, key, false);
    if (v != nullptr && !v->is_array()) fail(path, key, *v, "an array");
    return v != nullptr && v->is_array() && !problem ? v : nullptr;
  }
  void count(const json* parent, const std::string& path, const char* key, bool required) {
    const json* v = at(parent, path, key, required);
    if (v != nullptr && !reader::as_u64(v)) fail(path, key, *v, "a count");
  }
  void device(const json* parent, const std::string& path) {
    const json* v = at(parent, path, "device", true);
    if (v != nullptr && !reader::as_device(v)) fail(path, "device", *v, "a device ordinal");
  }
  void integer(const json* parent, const std::string& path, const char* key) {
    const json* v = at(parent, path, key, false);
    if (v != nullptr && !reader::as_i64(v)) fail(path, key, *v, "an integer");
  }
  // A private pool's id as PyTorch names it, "N,M" (format/json_views.cpp reads it so).
  void pool_id(const json* parent, const std::string& path) {
    const json* v = at(parent, path, "pool", true);
    if (v == nullptr) return;
    const std::string id = reader::str_or(v);
    const size_t comma = id.find(',');
    const auto digits = [](const std::string& s) {
      return !s.empty() && s.size() <= 19 && s.find_first_not_of("0123456789") == std::string::npos;
    };
    if (comma == std::string::npos || !digits(id.substr(0, comma)) || !digits(id.substr(comma + 1))) {
      fail(path, "pool", *v, "a pool id \"N,M\"");
    }
  }

 private:
  const json* at(const json* parent, const std::string& path, const char* key, bool required) {
    if (problem || parent == nullptr) return nullptr;
    const json* v = reader::member(parent, key);
    if (v == nullptr && required) problem = join(path, key) + " is missing";
    return v;
  }
  void fail(const std::string& path, const char* key, const json& v, const char* what) {
    if (!problem) problem = join(path, key) + " is " + shown(v) + ", not " + what;
  }
  static std::string join(const std::string& path, const char* key) { return path.empty() ? key : path + "." + key; }
};

}  // namespace

std::optional<std::string> invalid_figure(const json& summary) {
  Walk w;
  const json* root = &summary;
  if (const json* devices = w.array(root, "", "devices")) {
    for (size_t i = 0; i < devices->size(); ++i) {
      const std::string at = "devices[" + std::to_string(i) + "]";
      const json* d = &(*devices)[i];
      if (!d->is_object()) return at + " is " + shown(*d) + ", not an object";
      w.device(d, at);
      w.count(w.object(d, at, "allocated_bytes", true), at + ".allocated_bytes", "peak", true);
      w.count(w.object(d, at, "reserved_bytes", true), at + ".reserved_bytes", "peak", true);
      const json* graph = w.object(w.object(d, at, "by_kind", false), at + ".by_kind", "graph", false);
      w.count(w.object(graph, at + ".by_kind.graph", "reserved", graph != nullptr), at + ".by_kind.graph.reserved",
              "peak", true);
      const json* framework = w.object(d, at, "framework", false);
      w.count(framework, at + ".framework", "ooms", false);
      if (const json* pools = w.array(framework, at + ".framework", "private_pools")) {
        for (size_t p = 0; p < pools->size(); ++p) {
          const std::string pool_at = at + ".framework.private_pools[" + std::to_string(p) + "]";
          const json* pool = &(*pools)[p];
          if (!pool->is_object()) return pool_at + " is " + shown(*pool) + ", not an object";
          w.pool_id(pool, pool_at);
          w.count(w.object(pool, pool_at, "reserved", true), pool_at + ".reserved", "peak", true);
        }
      }
      if (w.problem) return w.problem;
    }
  }
  const json* live = w.object(root, "", "live_at_exit", true);
  w.count(live, "live_at_exit", "bytes", true);
  w.count(live, "live_at_exit", "count", true);
  w.count(w.object(root, "", "oom", true), "oom", "failures", true);
  if (const json* failed = w.array(root, "", "failed_allocations")) {
    for (size_t i = 0; i < failed->size() && !w.problem; ++i) {
      const std::string at = "failed_allocations[" + std::to_string(i) + "]";
      const json* f = &(*failed)[i];
      if (!f->is_object()) return at + " is " + shown(*f) + ", not an object";
      w.device(f, at);
      w.integer(f, at, "error");
    }
  }
  return w.problem;
}

}  // namespace gmp::analysis
