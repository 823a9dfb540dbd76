// The shim's UTF-8 encoder (shim/utf8.h): the exact bytes of each length, what becomes U+FFFD and
// what does not, and wide strings cut at a whole character.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "../../shim/utf8.h"

namespace gmp::shim::utf8 {
namespace {

std::string encoded(uint32_t c) {
  std::string out;
  append(out, c);
  return out;
}

std::string wide(const std::vector<wchar_t>& chars, size_t n) {
  std::vector<wchar_t> w = chars;
  w.push_back(L'\0');
  std::vector<char> buf(n + 1, '#');  // one byte past n, to see nothing is written there
  const char* s = from_wide(w.data(), buf.data(), n);
  EXPECT_EQ(s, buf.data());
  EXPECT_EQ(buf[n], '#');
  return s;
}

TEST(Utf8, EachLengthHasItsExactBytes) {
  const std::vector<std::pair<uint32_t, std::string>> cases = {
      {0x00, std::string(1, '\0')}, {'A', "A"}, {0x7F, "\x7F"},                        // 1 byte
      {0x80, "\xC2\x80"}, {0xE9, "\xC3\xA9"}, {0x7FF, "\xDF\xBF"},                      // 2 bytes
      {0x800, "\xE0\xA0\x80"}, {0x20AC, "\xE2\x82\xAC"}, {0xFFFF, "\xEF\xBF\xBF"},      // 3 bytes
      {0x10000, "\xF0\x90\x80\x80"}, {0x1F600, "\xF0\x9F\x98\x80"}, {0x10FFFF, "\xF4\x8F\xBF\xBF"},  // 4
  };
  for (const auto& [c, bytes] : cases) EXPECT_EQ(encoded(c), bytes) << std::hex << c;
}

TEST(Utf8, EncodeReplacesNothing) {
  // Surrogates take 3 bytes (Python's "surrogatepass"); above U+10FFFF, 4 bytes with the high bits cut.
  EXPECT_EQ(encoded(0xD800), "\xED\xA0\x80");
  EXPECT_EQ(encoded(0xDFFF), "\xED\xBF\xBF");
  EXPECT_EQ(encoded(0x110000), "\xF4\x90\x80\x80");
  EXPECT_EQ(encoded(0x1FFFFF), "\xF7\xBF\xBF\xBF");
}

TEST(Utf8, WhatIsNoScalarValueBecomesTheReplacementCharacter) {
  EXPECT_EQ(scalar_or_replacement(0xD7FF), 0xD7FFu);
  EXPECT_EQ(scalar_or_replacement(0xD800), kReplacement);
  EXPECT_EQ(scalar_or_replacement(0xDFFF), kReplacement);
  EXPECT_EQ(scalar_or_replacement(0xE000), 0xE000u);
  EXPECT_EQ(scalar_or_replacement(0x10FFFF), 0x10FFFFu);
  EXPECT_EQ(scalar_or_replacement(0x110000), kReplacement);
  EXPECT_EQ(scalar_or_replacement(0xFFFFFFFF), kReplacement);
  // A wide string's negative wchar_t is far above U+10FFFF.
  EXPECT_EQ(wide({L'a', static_cast<wchar_t>(0xD800), static_cast<wchar_t>(0x110000), static_cast<wchar_t>(-1), L'b'},
                 64),
            "a\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
            "b");
}

TEST(Utf8, WideStringsAreCutAtAWholeCharacter) {
  const std::vector<wchar_t> text = {L'a', L'b', 0x20AC, 0x1F600};  // "ab€😀": 1 + 1 + 3 + 4 bytes
  EXPECT_EQ(wide(text, 10), "ab\xE2\x82\xAC\xF0\x9F\x98\x80");      // all 9 bytes and the NUL
  EXPECT_EQ(wide(text, 9), "ab\xE2\x82\xAC");                       // no room for the NUL after 😀
  EXPECT_EQ(wide(text, 6), "ab\xE2\x82\xAC");
  EXPECT_EQ(wide(text, 5), "ab");                                   // € needs 3 + the NUL
  EXPECT_EQ(wide(text, 1), "");
  // The cut is at the first character that does not fit: a shorter one after it is not taken.
  EXPECT_EQ(wide({0x20AC, L'x'}, 3), "");
  EXPECT_EQ(wide({}, 1), "");
  char buf[4] = "zz";
  EXPECT_EQ(from_wide(nullptr, buf, sizeof buf), nullptr);
  EXPECT_EQ(std::string(buf), "zz");
}

}  // namespace
}  // namespace gmp::shim::utf8
