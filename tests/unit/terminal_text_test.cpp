// The terminal rule of every text output (tools/gpumemprof/terminal_text.h): what a terminal would
// take for a command becomes '?', everything printable stays byte for byte.
#include <gtest/gtest.h>

#include <string>

#include "terminal_text.h"

namespace gmp::tool {
namespace {

TEST(TerminalText, ControlSequencesBecomeQuestionMarks) {
  EXPECT_EQ(printable("\x1b]0;owned\x07title"), "?]0;owned?title");  // a window title
  EXPECT_EQ(printable("\x1b[2J\x1b[H"), "?[2J?[H");                    // clear the screen
  EXPECT_EQ(printable("a\rb\tc\nd\x7f"), "a?b?c?d?");
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "?31m");  // CSI as U+009B in UTF-8
  EXPECT_EQ(printable("\x9b" "31m"), "?31m");      // and as the raw byte of an 8-bit terminal
}

TEST(TerminalText, PrintableUtf8StaysAndInvalidBytesDoNot) {
  const std::string text = "caf\xc3\xa9 \xe6\xb7\xb1\xe5\xb1\xa4 \xf0\x9f\x94\xa5 ~";  // accents, CJK, an emoji
  EXPECT_EQ(printable(text), text);
  EXPECT_EQ(printable("caf\xe9!"), "caf?!");             // Latin-1
  EXPECT_EQ(printable("\xc0\xaf"), "??");                // an overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "?");             // a surrogate
  EXPECT_EQ(printable("\xe6\xb7"), "?");                 // cut short at the end
  EXPECT_EQ(printable("\xe6\xb7x"), "?x");               // cut short before another character
}

// A stream's writes may cut a sequence anywhere: it is judged whole, and lines stay lines.
TEST(TerminalText, AStreamJudgesASequenceCutBetweenWrites) {
  TerminalFilter filter(true);
  std::string out;
  for (const char* piece : {"line \xe6", "\xb7\xb1 \xc2", "\x9b", "x\n\x1b", "[0m\n\xe6"}) filter.feed(piece, out);
  filter.finish(out);
  EXPECT_EQ(out, "line \xe6\xb7\xb1 ?x\n?[0m\n?");
}

}  // namespace
}  // namespace gmp::tool
