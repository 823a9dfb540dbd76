#include "log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/pattern_formatter.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

#include "no_cancel.h"
#include "owned_file.h"
#include "seam.h"

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

// Every message goes to stderr with our prefix and, once the run directory exists, to
// gpumemprof.log: created 0600 and close-on-exec (the program's children must not inherit it),
// written through OwnedFile so the program's dup2()/closefrom() games never make us write into
// its files. The log copy is written first: when it fails (disk full, the file removed), the copy
// stops and the message on stderr says so at its end, so the loss costs no line of its own, and
// nothing about the log is ever logged (which could loop).
class MessageSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  MessageSink() : file_format_("%Y-%m-%dT%H:%M:%S.%e %l %v") {}

  void attach(const OwnedDir& dir, const std::string& name) {
    std::lock_guard<std::mutex> lock(mutex_);
    path_ = dir.shown(name);
    if (!file_.create(dir, name, /*exclusive=*/false)) failed_errno_ = errno;  // said with the next message
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    const NoCancel no_cancel;  // a message can be said on a program thread a cancellation targets
    if (file_.is_open() && failed_errno_ == 0) {
      spdlog::memory_buf_t text;
      file_format_.format(msg, text);
      if (!file_.append(text.data(), text.size())) failed_errno_ = errno;
    }
    std::string line(msg.payload.data(), msg.payload.size());
    if (failed_errno_ != 0 && !failure_said_) {
      failure_said_ = true;
      line += " [not in " + path_ + ": " + std::strerror(failed_errno_) + "; messages are on stderr only from here on]";
    }
    say_directly(line);
  }
  void flush_() override {}

 private:
  spdlog::pattern_formatter file_format_;
  std::string path_;
  OwnedFile file_;
  int failed_errno_ = 0;
  bool failure_said_ = false;
};

// The sink of the current logger (leaked with it).
std::atomic<MessageSink*> g_sink{nullptr};

}  // namespace

void configure(LogLevel level) {
  g_level = level;
  auto sink = std::make_shared<MessageSink>();
  // Deliberately leaked: it must outlive every static destructor.
  auto* logger = new spdlog::logger("gpumemprof", sink);
  logger->set_level(to_spdlog(level));
  logger->flush_on(spdlog::level::trace);
  // spdlog's own error report has no prefix and repeats; a sink that fails says so itself.
  logger->set_error_handler([](const std::string& what) {
    static std::atomic<bool> said{false};
    if (!said.exchange(true)) say_directly("logging failed: " + what);
  });
  g_sink.store(sink.get(), std::memory_order_release);
  g_logger.store(logger, std::memory_order_release);
}

void attach_file(const OwnedDir& dir, const std::string& name) {
  if (auto* sink = g_sink.load(std::memory_order_acquire)) sink->attach(dir, name);
}

void reset_after_fork() {
  g_logger.store(nullptr, std::memory_order_release);
  g_sink.store(nullptr, std::memory_order_release);
}

spdlog::logger* get() { return g_logger.load(std::memory_order_acquire); }

}  // namespace gmp::log

namespace gmp {

// The seam's (seam.h): the shim formats its lines itself, so the seam needs no spdlog.
void log_info(std::string_view line) { log::info("{}", line); }
void log_warn(std::string_view line) { log::warn("{}", line); }

}  // namespace gmp
