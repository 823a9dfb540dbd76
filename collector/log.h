// The profiler's own messages: stderr with a "gpumemprof: " prefix, and gpumemprof.log in the run
// directory once it exists. Loggers are built directly (never registered with spdlog's global
// registry, whose static destructor runs before our exit-time flush).
#pragma once

#include <spdlog/spdlog.h>

#include <string>

#include "config.h"
#include "owned_dir.h"

namespace gmp::log {

void configure(LogLevel level);
// From now on messages also go to `name` in `dir` (which must outlive the logger).
void attach_file(const OwnedDir& dir, const std::string& name);
void reset_after_fork();  // another thread may have held a logger mutex at fork time
spdlog::logger* get();

template <typename... Args>
void warn(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (auto* l = get()) l->warn(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void error(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (auto* l = get()) l->error(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void info(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (auto* l = get()) l->info(fmt, std::forward<Args>(args)...);
}
template <typename... Args>
void debug(spdlog::format_string_t<Args...> fmt, Args&&... args) {
  if (auto* l = get()) l->debug(fmt, std::forward<Args>(args)...);
}

}  // namespace gmp::log
