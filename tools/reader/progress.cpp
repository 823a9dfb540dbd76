#include "progress.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace gmp::reader {
namespace {

constexpr std::chrono::milliseconds kQuietStart{2000}, kInterval{5000};

std::chrono::milliseconds from_environment(const char* name, std::chrono::milliseconds fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long ms = std::strtoull(v, &end, 10);
  return *end == '\0' ? std::chrono::milliseconds(ms) : fallback;
}

}  // namespace

Progress::Progress(std::string command) : command_(std::move(command)), start_(std::chrono::steady_clock::now()) {
  const auto quiet = from_environment("GPUMEMPROF_PROGRESS_MS", kQuietStart);
  interval_ = from_environment("GPUMEMPROF_PROGRESS_MS", kInterval);
  next_ = start_ + quiet;
}

void Progress::check() {
  const auto now = std::chrono::steady_clock::now();
  if (now < next_) return;
  next_ = now + interval_;
  const double seconds = std::chrono::duration<double>(now - start_).count();
  const uint64_t done = done_ - pass_start_, total = std::max(pass_total_, done);
  const std::string pass = passes_ > 1 ? "pass " + std::to_string(passes_) + ": " : "";
  std::fprintf(stderr, "%s: %s%llu of %llu events read (%.0f%%), %.0f s\n", command_.c_str(), pass.c_str(),
               static_cast<unsigned long long>(done), static_cast<unsigned long long>(total),
               100.0 * static_cast<double>(done) / static_cast<double>(total), seconds);
}

}  // namespace gmp::reader
