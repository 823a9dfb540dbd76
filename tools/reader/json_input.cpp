#include "json_input.h"

#include "input_file.h"

namespace gmp::reader {
namespace {

// What a parse error says, on one line and bounded (the message quotes the last token read).
std::string parse_problem(const std::string& what) {
  std::string s = what;
  if (s.rfind("[json.exception.", 0) == 0) {
    const size_t close = s.find("] ");
    if (close != std::string::npos) s = s.substr(close + 2);
  }
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  return s;
}

}  // namespace

size_t json_depth(std::string_view text, size_t limit) {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return deepest;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

std::optional<nlohmann::json> parse_json(std::string_view text, std::string& problem) {
  // Checked before parsing: nlohmann's parser is iterative, but destroying and copying the values
  // it builds recurse, and a document of 100,000 nested arrays overflows the stack.
  if (json_depth(text) > kMaxJsonDepth) {
    problem = "nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) + " levels";
    return std::nullopt;
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    problem = parse_problem(e.what());
  } catch (const std::exception& e) {  // bad_alloc on absurd input
    problem = parse_problem(e.what());
  }
  return std::nullopt;
}

std::optional<nlohmann::json> read_json_file(const std::string& path, std::string& error, bool& missing) {
  error.clear();
  auto text = read_input_text(path, error, &missing);
  if (!text) {
    if (missing) error.clear();
    return std::nullopt;
  }
  std::string problem;
  auto parsed = parse_json(*text, problem);
  if (!parsed) error = path + " is not valid JSON (" + problem + ")";
  return parsed;
}

}  // namespace gmp::reader
