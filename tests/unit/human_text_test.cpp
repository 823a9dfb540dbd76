// The terminal helpers of tools/gpumemprof/human_text.h (issue 15, defect 11).
#include "human_text.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "count_text.h"

namespace gmp::tool {
namespace {

TEST(Format, DisplayWidthCountsColumnsNotBytes) {
  EXPECT_EQ(display_width("abc"), 3u);
  EXPECT_EQ(display_width("wide-\u00fc\u4e2d"), 8u);  // ü one column, 中 two
  EXPECT_EQ(display_width("e\u0301"), 1u);            // a combining accent takes none
  EXPECT_EQ(display_width("\xff" "a"), 2u);           // a stray byte counts one
  EXPECT_EQ(pad("\u4e2d", 4), "\u4e2d  ");
  EXPECT_EQ(pad("toolong", 3), "toolong");
}

TEST(Format, ElidesTheMiddleBetweenCodePoints) {
  EXPECT_EQ(elide_middle("short", 10), "short");
  EXPECT_EQ(elide_middle("std::vector<int>::push_back (vector.h:1234)", 20), "std::vect....h:1234)");
  EXPECT_EQ(display_width(elide_middle("std::vector<int>::push_back (vector.h:1234)", 9)), 9u);
  EXPECT_EQ(elide_middle("\u4e2d\u4e2d\u4e2d\u4e2d\u4e2d", 8), "\u4e2d...\u4e2d");
  EXPECT_EQ(elide_middle("abcdef", 2), "ab");
}

TEST(Format, GroupsDigitsAndPrintsMicroseconds) {
  EXPECT_EQ(grouped(0), "0");
  EXPECT_EQ(grouped(999), "999");
  EXPECT_EQ(grouped(1000), "1,000");
  EXPECT_EQ(grouped(1234567), "1,234,567");
  EXPECT_EQ(counted(12345, "allocation"), "12,345 allocations");
  EXPECT_EQ(human_duration_ns(512'300), "512.3 \u00b5s");
  EXPECT_EQ(human_duration_ns(1'500'000), "1.5 ms");
  EXPECT_EQ(human_duration_ns(2'000'000'000), "2.000 s");
}

TEST(Format, WrapsByDisplayWidthAndKeepsUnitsWithTheirNumbers) {
  EXPECT_EQ(wrap("one two three 1.00 GiB", "  ", "    ", 14), "  one two\n    three\n    1.00 GiB\n");
  EXPECT_EQ(wrap("\u4e2d\u4e2d \u4e2d\u4e2d", "", "", 8), "\u4e2d\u4e2d\n\u4e2d\u4e2d\n");
}

TEST(Format, WidthIsColumnsElseEightyWhenNotATerminal) {
  setenv("COLUMNS", "132", 1);
  EXPECT_EQ(output_width(), 132u);
  setenv("COLUMNS", "wide", 1);  // not a number: as if unset
  EXPECT_EQ(output_width(), 80u);  // the tests' stdout is not a terminal
  unsetenv("COLUMNS");
  EXPECT_EQ(output_width(), 80u);
}

}  // namespace
}  // namespace gmp::tool
