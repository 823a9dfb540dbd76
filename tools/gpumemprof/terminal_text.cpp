#include "terminal_text.h"

#include <cstdint>

namespace gmp::tool {
namespace {

constexpr char kReplacement = '?';

// The length of the UTF-8 sequence `lead` starts; 0 when it starts none (a continuation byte, an
// overlong two-byte lead, or past U+10FFFF).
size_t sequence_length(unsigned char lead) {
  if (lead >= 0xc2 && lead <= 0xdf) return 2;
  if (lead >= 0xe0 && lead <= 0xef) return 3;
  if (lead >= 0xf0 && lead <= 0xf4) return 4;
  return 0;
}

bool is_continuation(unsigned char c) { return (c & 0xc0) == 0x80; }

// A complete sequence's code point, or -1 when it is overlong, a surrogate or past U+10FFFF.
int32_t code_point(const std::string& seq) {
  const auto b = [&seq](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(seq[i])); };
  uint32_t cp = 0;
  if (seq.size() == 2) cp = (b(0) & 0x1f) << 6 | (b(1) & 0x3f);
  if (seq.size() == 3) cp = (b(0) & 0x0f) << 12 | (b(1) & 0x3f) << 6 | (b(2) & 0x3f);
  if (seq.size() == 4) cp = (b(0) & 0x07) << 18 | (b(1) & 0x3f) << 12 | (b(2) & 0x3f) << 6 | (b(3) & 0x3f);
  const uint32_t least = seq.size() == 2 ? 0x80 : seq.size() == 3 ? 0x800 : 0x10000;
  if (cp < least || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return -1;
  return static_cast<int32_t>(cp);
}

}  // namespace

void TerminalFilter::flush_pending_as_invalid(std::string& out) {
  if (!pending_.empty()) out += kReplacement;
  pending_.clear();
  expected_ = 0;
}

void TerminalFilter::feed(std::string_view piece, std::string& out) {
  for (const char ch : piece) {
    const auto c = static_cast<unsigned char>(ch);
    if (!pending_.empty()) {
      if (is_continuation(c)) {
        pending_ += ch;
        if (pending_.size() < expected_) continue;
        const int32_t cp = code_point(pending_);
        // C1 controls encoded in UTF-8: terminals that decode UTF-8 act on them as on ESC [.
        if (cp < 0 || (cp >= 0x80 && cp <= 0x9f)) {
          out += kReplacement;
        } else {
          out += pending_;
        }
        pending_.clear();
        expected_ = 0;
        continue;
      }
      flush_pending_as_invalid(out);  // and `c` starts afresh
    }
    if (c < 0x80) {
      const bool control = c < 0x20 || c == 0x7f;
      out += control && !(keep_newlines_ && c == '\n') ? kReplacement : ch;
    } else if (const size_t n = sequence_length(c); n > 0) {
      pending_ = ch;
      expected_ = n;
    } else {
      out += kReplacement;
    }
  }
}

void TerminalFilter::finish(std::string& out) { flush_pending_as_invalid(out); }

std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  TerminalFilter filter(false);
  filter.feed(s, out);
  filter.finish(out);
  return out;
}

}  // namespace gmp::tool
