#include "pyframe_entry.h"

#include <cstring>
#include <string>

namespace gmp {

std::optional<PyFrameLine> pyframe_from_entry(uint32_t id, const uint8_t* entry, uint32_t length) {
  const char* text = reinterpret_cast<const char*>(entry);
  const size_t file_len = strnlen(text, length);
  if (file_len + 1 + sizeof(int) > length) return std::nullopt;
  const char* function = text + file_len + 1;
  const size_t function_len = strnlen(function, length - file_len - 1 - sizeof(int));
  int line = 0;
  std::memcpy(&line, entry + length - sizeof line, sizeof line);
  return PyFrameLine{id, std::string(text, file_len), std::string(function, function_len), line};
}

}  // namespace gmp
