#include "attribution_records.h"

#include <cstdio>
#include <cstring>

#include "json_text.h"

namespace gmp {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string stack_record(uint32_t id, const std::vector<uint64_t>& frames) {
  nlohmann::json list = nlohmann::json::array();
  for (uint64_t f : frames) list.push_back(f & kPythonFrameTag ? "py:" + std::to_string(f & ~kPythonFrameTag) : hex(f));
  return json_text({{"type", "stack"}, {"id", id}, {"frames", list}});
}

std::string name_record(uint32_t id, std::string_view name) {
  return json_text({{"type", "name"}, {"id", id}, {"name", name}});
}

std::optional<std::string> pyframe_record(uint32_t id, const uint8_t* entry, uint32_t length) {
  const char* text = reinterpret_cast<const char*>(entry);
  const size_t file_len = strnlen(text, length);
  if (file_len + 1 + sizeof(int) > length) return std::nullopt;
  const char* function = text + file_len + 1;
  const size_t function_len = strnlen(function, length - file_len - 1 - sizeof(int));
  int line = 0;
  std::memcpy(&line, entry + length - sizeof line, sizeof line);
  return json_text({{"type", "pyframe"},
                    {"id", id},
                    {"file", std::string_view(text, file_len)},
                    {"function", std::string_view(function, function_len)},
                    {"line", line}});
}

std::string module_record(std::string_view path, uint64_t base, uint64_t start, uint64_t end,
                          std::string_view build_id, uint64_t seen_ns) {
  return json_text({{"type", "module"},
                    {"path", path},
                    {"base", hex(base)},
                    {"start", hex(start)},
                    {"end", hex(end)},
                    {"build_id", build_id},
                    {"seen_ns", seen_ns}});
}

std::string unloaded_record(std::string_view path, uint64_t base, uint64_t unloaded_ns) {
  return json_text({{"type", "unloaded"}, {"path", path}, {"base", hex(base)}, {"unloaded_ns", unloaded_ns}});
}

}  // namespace gmp
