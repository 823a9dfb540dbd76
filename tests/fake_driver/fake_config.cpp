// Configuration of the fake driver, read once at the first cuInit:
//   FAKE_CUDA_DEVICES   number of devices, 1..8 (default 1)
//   FAKE_CUDA_CAPACITY  bytes per device: integer, optionally followed by K, M, G or T
//                       (1024-based; "KiB"/"KB" spellings accepted too). Default 16G.
// An invalid value prints one line on stderr and the default is used. The fake HIP runtime reads
// its own variables through the same functions (fake_config.h).
#include "fake_config.h"
#include "fake_state.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fakecuda {

bool parse_size(const char* text, size_t* out) {
  if (text == nullptr) return false;
  const char* p = text;
  while (std::isspace(static_cast<unsigned char>(*p))) ++p;
  if (!std::isdigit(static_cast<unsigned char>(*p))) return false;
  unsigned long long value = 0;
  while (std::isdigit(static_cast<unsigned char>(*p))) {
    const unsigned digit = static_cast<unsigned>(*p - '0');
    if (value > (~0ULL - digit) / 10) return false;
    value = value * 10 + digit;
    ++p;
  }
  unsigned shift = 0;
  switch (std::toupper(static_cast<unsigned char>(*p))) {
    case 'K': shift = 10; ++p; break;
    case 'M': shift = 20; ++p; break;
    case 'G': shift = 30; ++p; break;
    case 'T': shift = 40; ++p; break;
    default: break;
  }
  if (shift != 0) {
    if (std::strcmp(p, "iB") == 0 || std::strcmp(p, "B") == 0) p += std::strlen(p);
  } else if (std::strcmp(p, "B") == 0) {
    ++p;
  }
  while (std::isspace(static_cast<unsigned char>(*p))) ++p;
  if (*p != '\0') return false;
  if (shift != 0 && value > (~0ULL >> shift)) return false;
  *out = static_cast<size_t>(value << shift);
  return true;
}

int env_device_count(const char* variable, const char* tool, int max_devices) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return 1;
  char* end = nullptr;
  const long n = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || n < 1 || n > max_devices) {
    std::fprintf(stderr, "%s: invalid %s=\"%s\" (expected 1..%d), using 1\n", tool, variable, text, max_devices);
    return 1;
  }
  return static_cast<int>(n);
}

size_t env_capacity(const char* variable, const char* tool, size_t fallback) {
  const char* text = std::getenv(variable);
  if (text == nullptr || *text == '\0') return fallback;
  size_t bytes = 0;
  if (!parse_size(text, &bytes) || bytes == 0) {
    std::fprintf(stderr, "%s: invalid %s=\"%s\" (expected bytes, optionally with K/M/G/T suffix), using %zuG\n",
                 tool, variable, text, fallback >> 30);
    return fallback;
  }
  return bytes;
}

int config_device_count() { return env_device_count("FAKE_CUDA_DEVICES", "fakecuda", kMaxDevices); }

size_t config_capacity() { return env_capacity("FAKE_CUDA_CAPACITY", "fakecuda", kDefaultCapacity); }

}  // namespace fakecuda
