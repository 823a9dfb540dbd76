// Live files written by hand with the collector's own writer (format/live_file.h's LiveFileWriter),
// for the tests of the reader (live_reader_test.cpp) and of `gpumemprof top` (live_top_test.cpp):
// every figure they expect is one the test wrote.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "live_file.h"
#include "live_registry.h"
#include "live_reader.h"

namespace gmp::test {

inline uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

class LiveRunFile {
 public:
  // Creates `dir` (0700) and its live.bin: a running process of this machine that is this test
  // itself (so alive by /proc) until the test says otherwise.
  explicit LiveRunFile(const std::string& dir) : dir_(dir), f_(std::make_unique<live::LiveFile>()) {
    mkdir(dir.c_str(), 0700);
    live::init_live_file(*f_);
    const reader::ThisMachine here = reader::this_machine();
    live::set_text(f_->host, here.host);
    live::set_text(f_->boot_id, here.boot_id);
    f_->pid_namespace = here.pid_namespace;
    f_->pid = static_cast<uint64_t>(getpid());
    f_->start_ticks = live::process_start_ticks(f_->pid).value_or(0);
    f_->start_realtime_ns = f_->heartbeat_realtime_ns = realtime_ns();
    live::set_text(f_->run_dir, dir);
    const std::string path = dir + "/live.bin";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ >= 0 && ftruncate(fd_, sizeof(live::LiveFile)) == 0) ok_ = writer_.start(fd_, *f_);
  }
  ~LiveRunFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  LiveRunFile(const LiveRunFile&) = delete;
  LiveRunFile& operator=(const LiveRunFile&) = delete;

  bool ok() const { return ok_; }
  live::LiveFile& f() { return *f_; }
  const std::string& dir() const { return dir_; }

  // Device slot `slot` in use for `ordinal`: allocated `allocated`, reserved `reserved`, peaks
  // as given (else equal to the figures), total `total`.
  live::LiveDevice& device(int slot, int ordinal, uint64_t total = 80ull << 30) {
    live::LiveDevice& d = f_->devices[slot];
    d.ordinal = ordinal;
    d.total_bytes = total;
    if (static_cast<uint32_t>(slot) + 1 > f_->devices_used) f_->devices_used = static_cast<uint32_t>(slot) + 1;
    return d;
  }
  // The whole file, as the writer's first write (identity fields included).
  bool rewrite() { return writer_.start(fd_, *f_); }
  bool publish(uint64_t history_second = 0) { return writer_.publish(*f_, true, history_second); }

 private:
  std::string dir_;
  std::unique_ptr<live::LiveFile> f_;
  live::LiveFileWriter writer_;
  int fd_ = -1;
  bool ok_ = false;
};

}  // namespace gmp::test
