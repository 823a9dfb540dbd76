// libFuzzer target: the redaction of secrets (collector/redact.h), which runs inside the profiled
// process on its argv and environment, where a crash or an escaping exception would take the
// program down. The input is redacted as one value, as an environment entry (cut at the first
// '='), and as a command line (cut at NUL bytes). (Redacting twice need not give the same result
// on such inputs: with several '@' in one URL authority, the first pass's cut moves the second's.
// The unit test checks that property on real-world shapes.)
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "redact.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  gmp::redact_text(input);
  const size_t eq = input.find('=');
  if (eq != std::string::npos) gmp::redact_env_value(input.substr(0, eq), input.substr(eq + 1));
  std::vector<std::string> argv;
  for (size_t start = 0; start <= input.size();) {
    const size_t end = std::min(input.find('\0', start), input.size());
    argv.push_back(input.substr(start, end - start));
    start = end + 1;
  }
  gmp::redact_argv(argv);
  return 0;
}
