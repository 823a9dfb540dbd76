#include "log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "owned_file.h"

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

// Says `text` on stderr with our prefix, bypassing the logger (callable from inside a sink).
void say_directly(const std::string& text) {
  const std::string line = "gpumemprof: " + text + "\n";
  [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, line.data(), line.size());
}

// gpumemprof.log: created 0600 and close-on-exec (the program's children must not inherit it),
// written through OwnedFile so the program's dup2()/closefrom() games never make us write into
// its files. A failed write stops the copy, said once; stderr still gets every message.
class RunLogSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit RunLogSink(std::string path) : path_(std::move(path)) {}
  bool open() { return file_.create(path_, /*exclusive=*/false); }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (failed_) return;
    spdlog::memory_buf_t text;
    formatter_->format(msg, text);
    if (!file_.append(text.data(), text.size())) {
      failed_ = true;
      say_directly("cannot write " + path_ + ": " + std::strerror(errno) + "; messages go to stderr only");
    }
  }
  void flush_() override {}

 private:
  std::string path_;
  OwnedFile file_;
  bool failed_ = false;
};

}  // namespace

void configure(LogLevel level) {
  g_level = level;
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  sink->set_pattern("gpumemprof: %v");
  // Deliberately leaked: it must outlive every static destructor.
  auto* logger = new spdlog::logger("gpumemprof", sink);
  logger->set_level(to_spdlog(level));
  logger->flush_on(spdlog::level::trace);
  // spdlog's own error report has no prefix and repeats; a sink that fails says so itself.
  logger->set_error_handler([](const std::string& what) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) say_directly("logging failed: " + what);
  });
  g_logger.store(logger, std::memory_order_release);
}

void attach_file(const std::string& path) {
  auto* logger = get();
  if (logger == nullptr) return;
  auto sink = std::make_shared<RunLogSink>(path);
  if (!sink->open()) return;  // the run directory is ours; failing here only loses the log copy
  sink->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l %v");
  logger->sinks().push_back(sink);
}

void reset_after_fork() { g_logger.store(nullptr, std::memory_order_release); }

spdlog::logger* get() { return g_logger.load(std::memory_order_acquire); }

}  // namespace gmp::log
