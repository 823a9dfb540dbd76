// Writes small run directories by hand for tests of the tools: a trace.gmpt of chosen events, a
// manifest.json naming the devices, and an attribution.jsonl of chosen lines. No shim, no driver:
// every figure a test expects follows from the events it wrote.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "event.h"

namespace gmp::test {

constexpr uint64_t kStartNs = 1'000'000;  // the trace's start on the event clock

// Events as the shim and the bridge record them, at event-clock time `ts`; shared by SyntheticRun
// and the integration tests' FrameworkRun, so the two never encode a recording differently.
Event linear_alloc_event(uint64_t ts, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack, int device);
Event linear_free_event(uint64_t ts, uint32_t thread, uint64_t address);  // device -1: the address says
// Kind None, Api torch_caching_allocator (docs/trace-format.md, ops 22-31).
Event framework_event(uint64_t ts, uint32_t thread, Op op, uint64_t address, uint64_t size, int device = 0,
                      uint32_t stack = 0, uint64_t stream = 0, uint64_t value = 0);

class SyntheticRun {
 public:
  SyntheticRun();   // a fresh directory under /tmp
  ~SyntheticRun();  // removes it
  const std::string& dir() const { return dir_; }

  // Events; `t` is ns since the start. Allocations are linear on device `device`.
  SyntheticRun& alloc(uint64_t t, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack = 0, int device = 0);
  SyntheticRun& free(uint64_t t, uint32_t thread, uint64_t address);
  // An event of the framework bridge (Kind None, Api torch_caching_allocator), as it records them.
  SyntheticRun& framework(uint64_t t, uint32_t thread, Op op, uint64_t address, uint64_t size, int device = 0,
                          uint32_t stack = 0, uint64_t stream = 0, uint64_t value = 0);
  SyntheticRun& push(uint64_t t, uint32_t thread, uint32_t name_id);
  SyntheticRun& pop(uint64_t t, uint32_t thread);
  SyntheticRun& mark(uint64_t t, uint32_t thread, uint32_t name_id);
  SyntheticRun& pause(uint64_t t, uint32_t thread);
  SyntheticRun& resume(uint64_t t, uint32_t thread);
  SyntheticRun& event(const Event& e);

  // attribution.jsonl, written as given (each line gets a '\n' unless `terminate` is false).
  SyntheticRun& line(const std::string& json, bool terminate = true);
  SyntheticRun& name(uint32_t id, const std::string& name);

  // Writes manifest.json (devices 0..devices-1, 1 GiB each), trace.gmpt and attribution.jsonl.
  void write(int devices = 1) const;

 private:
  std::string dir_;
  std::vector<Event> events_;
  std::string attribution_;
};

}  // namespace gmp::test
