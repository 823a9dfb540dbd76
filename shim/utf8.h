// UTF-8 encoding, the project's one encoder of code points: NVTX's wide strings (UTF-32 wchar_t on
// Linux, nvtx_names.cpp and nvtx_handlers.cpp) and the characters of Python's str objects
// (python_frames.cpp) become the UTF-8 names the trace and attribution.jsonl carry. Header-only,
// allocation-free but for append(), so it is safe inside any intercepted call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace gmp::shim::utf8 {

constexpr uint32_t kReplacement = 0xFFFD;  // U+FFFD REPLACEMENT CHARACTER

// `c`, or U+FFFD where `c` is no Unicode scalar value (a surrogate, or above U+10FFFF).
constexpr uint32_t scalar_or_replacement(uint32_t c) {
  return c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF) ? kReplacement : c;
}

// The UTF-8 bytes of `c` in out[0..3]; returns how many (1 to 4). Nothing is replaced: a surrogate
// takes 3 bytes like its neighbours (as Python's "surrogatepass" writes it), and a value above
// U+10FFFF, which only a misread str could hold, 4 bytes with its high bits cut off. Either is then
// not valid UTF-8, which json_text() turns into U+FFFD when the name is written out.
inline size_t encode(uint32_t c, char out[4]) {
  if (c < 0x80) {
    out[0] = static_cast<char>(c);
    return 1;
  }
  if (c < 0x800) {
    out[0] = static_cast<char>(0xC0 | (c >> 6));
    out[1] = static_cast<char>(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    out[0] = static_cast<char>(0xE0 | (c >> 12));
    out[1] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out[2] = static_cast<char>(0x80 | (c & 0x3F));
    return 3;
  }
  out[0] = static_cast<char>(0xF0 | (c >> 18));
  out[1] = static_cast<char>(0x80 | ((c >> 12) & 0x3F));
  out[2] = static_cast<char>(0x80 | ((c >> 6) & 0x3F));
  out[3] = static_cast<char>(0x80 | (c & 0x3F));
  return 4;
}

inline void append(std::string& out, uint32_t c) {
  char bytes[4];
  out.append(bytes, encode(c, bytes));
}

// The NUL-terminated UTF-32 string `w` (Linux's wchar_t) as UTF-8 in out[0..n), NUL-terminated,
// ending before the first character that does not fit whole (n >= 1). What is no scalar value
// becomes U+FFFD, so the result is valid UTF-8. Returns `out`; nullptr when `w` is null.
inline const char* from_wide(const wchar_t* w, char* out, size_t n) {
  if (w == nullptr) return nullptr;
  size_t o = 0;
  for (; *w != L'\0'; ++w) {
    char bytes[4];
    const size_t len = encode(scalar_or_replacement(static_cast<uint32_t>(*w)), bytes);
    if (o + len + 1 > n) break;
    std::memcpy(out + o, bytes, len);
    o += len;
  }
  out[o] = '\0';
  return out;
}

}  // namespace gmp::shim::utf8
