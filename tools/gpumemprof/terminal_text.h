// Text for a terminal or a CI log. Names the tools print come from outside (executable paths, range
// and mark names, symbols, device names, paths), and a terminal takes some bytes as commands: an
// escape sequence may retitle the window, clear the screen or move the cursor, and a log viewer
// renders them too. The one rule, for every text output: printable UTF-8 is shown as it is; C0
// control characters, DEL, C1 control characters (U+0080 to U+009F, and the raw bytes an 8-bit
// terminal takes for them) and bytes that are not UTF-8 become '?'.
#pragma once

#include <string>
#include <string_view>

namespace gmp::tool {

// Applies the rule to text that may arrive in pieces (a stream's writes): a UTF-8 sequence cut
// between two pieces is judged whole.
class TerminalFilter {
 public:
  // `keep_newlines`: a whole output's lines stay lines; a field that must stay on its line
  // (printable()) has its newlines replaced too.
  explicit TerminalFilter(bool keep_newlines) : keep_newlines_(keep_newlines) {}
  // Appends what `piece` shows as to `out`; the bytes of a sequence it ends within wait for the next.
  void feed(std::string_view piece, std::string& out);
  // The end of the text: a sequence left incomplete is not UTF-8.
  void finish(std::string& out);

 private:
  void flush_pending_as_invalid(std::string& out);
  bool keep_newlines_;
  std::string pending_;  // the start of a UTF-8 sequence
  size_t expected_ = 0;  // its length
};

// One field shown by the rule, newlines and tabs included: a name that stays on its line.
std::string printable(std::string_view s);

}  // namespace gmp::tool
