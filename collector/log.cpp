#include "log.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>

namespace gmp::log {
namespace {

std::atomic<spdlog::logger*> g_logger{nullptr};
LogLevel g_level = LogLevel::Warn;

spdlog::level::level_enum to_spdlog(LogLevel l) {
  switch (l) {
    case LogLevel::Trace: return spdlog::level::trace;
    case LogLevel::Debug: return spdlog::level::debug;
    case LogLevel::Info: return spdlog::level::info;
    case LogLevel::Warn: return spdlog::level::warn;
    case LogLevel::Error: return spdlog::level::err;
    case LogLevel::Critical: return spdlog::level::critical;
    case LogLevel::Off: return spdlog::level::off;
  }
  return spdlog::level::warn;
}

}  // namespace

void configure(LogLevel level) {
  g_level = level;
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  sink->set_pattern("gpumemprof: %v");
  // Deliberately leaked: it must outlive every static destructor.
  auto* logger = new spdlog::logger("gpumemprof", sink);
  logger->set_level(to_spdlog(level));
  logger->flush_on(spdlog::level::trace);
  g_logger.store(logger, std::memory_order_release);
}

void attach_file(const std::string& path) {
  auto* logger = get();
  if (logger == nullptr) return;
  try {
    auto sink = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path);
    sink->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
    logger->sinks().push_back(sink);
  } catch (const spdlog::spdlog_ex&) {
    // The run directory is ours; failing to open a log in it only loses the log copy.
  }
}

void reset_after_fork() { g_logger.store(nullptr, std::memory_order_release); }

spdlog::logger* get() { return g_logger.load(std::memory_order_acquire); }

}  // namespace gmp::log
