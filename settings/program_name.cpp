#include "program_name.h"

#include <cctype>
#include <string_view>

namespace gmp {
namespace {

std::string_view basename_of(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// python, python3, python3.12, python3.12d, python3.13t: CPython's names for itself.
bool is_python(std::string_view name) {
  if (!name.starts_with("python")) return false;
  for (char c : name.substr(6)) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'd' && c != 't' && c != 'm') return false;
  }
  return true;
}

}  // namespace

ProgramName program_name(const std::string& exe, const std::vector<std::string>& argv) {
  ProgramName out;
  out.name = std::string(basename_of(exe));
  if (out.name.empty()) out.name = "unknown";
  if (!is_python(out.name)) return out;
  // CPython's command line: options up to the script, -c CMD or -m MOD; -W and -X take an argument,
  // attached or next; single-letter flags combine (-um pkg.mod, -OO).
  for (size_t i = 1; i < argv.size(); ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--") {
      if (i + 1 < argv.size()) out = {std::string(basename_of(argv[i + 1])), false, true};
      return out;
    }
    if (arg == "--check-hash-based-pycs") {
      ++i;
      continue;
    }
    if (arg.starts_with("--")) continue;
    if (!arg.starts_with('-') || arg == "-") {  // the script ("-" is standard input: no name)
      if (arg != "-" && !arg.empty()) out = {std::string(basename_of(arg)), false, true};
      return out;
    }
    for (size_t k = 1; k < arg.size(); ++k) {
      const char c = arg[k];
      if (c == 'c') return out;  // a command string: only the interpreter names it
      if (c != 'm' && c != 'W' && c != 'X') continue;
      const bool attached = k + 1 < arg.size();
      if (!attached) ++i;  // the argument is the next word
      if (c == 'm') {
        std::string_view mod;
        if (attached) mod = arg.substr(k + 1);
        else if (i < argv.size()) mod = argv[i];
        if (!mod.empty()) out = {std::string(mod), true, true};
        return out;
      }
      break;
    }
  }
  return out;
}

}  // namespace gmp
