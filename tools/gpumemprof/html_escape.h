// Escaping for the HTML report (`gpumemprof html`): text and attribute values, and JSON embedded in
// a <script type="application/json"> element. Header-only so the tests can call it directly.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "json_text.h"

namespace gmp::tool::html {

// `s` as HTML text or a quoted attribute value: & < > " ' become entities, and control characters
// other than tab and line breaks become U+FFFD (they are not allowed in HTML documents). Bytes that
// are not valid UTF-8 are passed on; browsers show them as U+FFFD.
inline std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\t': case '\n': case '\r': out += c; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) out += "\xEF\xBF\xBD";
        else out += c;
    }
  }
  return out;
}

// `j` as JSON text that can sit inside <script type="application/json">...</script>: no "<" (so
// neither "</script>" nor "<!--" can end or change the element), no ">" or "&", and U+2028/U+2029
// escaped, all as \uXXXX escapes inside strings (those characters only occur inside strings), so
// JSON.parse(element.textContent) returns `j` unchanged. Invalid UTF-8 in strings becomes U+FFFD.
inline std::string script_json(const nlohmann::json& j) {
  const std::string text = json_text(j);
  std::string out;
  out.reserve(text.size() + 64);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
             (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      out += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace gmp::tool::html
