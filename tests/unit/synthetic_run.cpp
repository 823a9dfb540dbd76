#include "synthetic_run.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "trace_format.h"

namespace gmp::test {

SyntheticRun::SyntheticRun() {
  char tmpl[] = "/tmp/gmp-synthetic-XXXXXX";
  dir_ = mkdtemp(tmpl);
}

SyntheticRun::~SyntheticRun() {
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

SyntheticRun& SyntheticRun::event(const Event& e) {
  events_.push_back(e);
  return *this;
}

Event linear_alloc_event(uint64_t ts, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack, int device) {
  Event e{};
  e.timestamp_ns = ts;
  e.address = address;
  e.size = size;
  e.thread_id = thread;
  e.stack_id = stack;
  e.device = static_cast<int16_t>(device);
  e.kind = Kind::Linear;
  e.op = Op::Alloc;
  e.api = Api::cuMemAlloc_v2;
  return e;
}

Event linear_free_event(uint64_t ts, uint32_t thread, uint64_t address) {
  Event e{};
  e.timestamp_ns = ts;
  e.address = address;
  e.thread_id = thread;
  e.device = -1;
  e.kind = Kind::Linear;
  e.op = Op::Free;
  e.api = Api::cuMemFree_v2;
  return e;
}

Event framework_event(uint64_t ts, uint32_t thread, Op op, uint64_t address, uint64_t size, int device,
                      uint32_t stack, uint64_t stream, uint64_t value) {
  Event e = linear_alloc_event(ts, thread, address, size, stack, device);  // the fields an allocation has
  e.stream = stream;
  e.value = value;
  e.kind = Kind::None;
  e.op = op;
  e.api = Api::torch_caching_allocator;
  return e;
}

SyntheticRun& SyntheticRun::alloc(uint64_t t, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack, int device) {
  return event(linear_alloc_event(kStartNs + t, thread, address, size, stack, device));
}

SyntheticRun& SyntheticRun::free(uint64_t t, uint32_t thread, uint64_t address) {
  return event(linear_free_event(kStartNs + t, thread, address));
}

SyntheticRun& SyntheticRun::framework(uint64_t t, uint32_t thread, Op op, uint64_t address, uint64_t size, int device,
                                      uint32_t stack, uint64_t stream, uint64_t value) {
  return event(framework_event(kStartNs + t, thread, op, address, size, device, stack, stream, value));
}

namespace {
Event marker(uint64_t t, uint32_t thread, Op op, uint64_t id) {
  Event e{};
  e.timestamp_ns = kStartNs + t;
  e.address = id;
  e.thread_id = thread;
  e.device = -1;
  e.op = op;
  e.api = Api::gpumemprof_api;
  return e;
}
}  // namespace

SyntheticRun& SyntheticRun::push(uint64_t t, uint32_t thread, uint32_t name_id) { return event(marker(t, thread, Op::RangePush, name_id)); }
SyntheticRun& SyntheticRun::pop(uint64_t t, uint32_t thread) { return event(marker(t, thread, Op::RangePop, 0)); }
SyntheticRun& SyntheticRun::mark(uint64_t t, uint32_t thread, uint32_t name_id) { return event(marker(t, thread, Op::Mark, name_id)); }
SyntheticRun& SyntheticRun::pause(uint64_t t, uint32_t thread) { return event(marker(t, thread, Op::Pause, 0)); }
SyntheticRun& SyntheticRun::resume(uint64_t t, uint32_t thread) { return event(marker(t, thread, Op::Resume, 0)); }

SyntheticRun& SyntheticRun::line(const std::string& json, bool terminate) {
  attribution_ += json;
  if (terminate) attribution_ += '\n';
  return *this;
}

SyntheticRun& SyntheticRun::name(uint32_t id, const std::string& n) {
  return line(nlohmann::json{{"type", "name"}, {"id", id}, {"name", n}}.dump());
}

void SyntheticRun::write(int devices) const {
  nlohmann::json manifest = {{"schema_version", 1}, {"tool", "gpumemprof"}, {"pid", 4242}, {"exe", "/synthetic"},
                             {"devices", nlohmann::json::array()}};
  for (int d = 0; d < devices; ++d) {
    manifest["devices"].push_back({{"ordinal", d}, {"name", "Synthetic GPU"}, {"total_bytes", 1ull << 30}});
  }
  std::ofstream(dir_ + "/manifest.json") << manifest.dump();
  std::ofstream trace(dir_ + "/trace.gmpt", std::ios::binary);
  const TraceHeader h = make_trace_header(4242, 0, kStartNs);
  trace.write(reinterpret_cast<const char*>(&h), sizeof h);
  for (int d = 0; d < devices; ++d) {  // as the collector does before a device's first event
    Event info{};
    info.timestamp_ns = kStartNs;
    info.device = static_cast<int16_t>(d);
    info.size = 1ull << 30;
    info.op = Op::DeviceInfo;
    trace.write(reinterpret_cast<const char*>(&info), sizeof info);
  }
  for (const Event& e : events_) trace.write(reinterpret_cast<const char*>(&e), sizeof e);
  if (!attribution_.empty()) std::ofstream(dir_ + "/attribution.jsonl", std::ios::binary) << attribution_;
}

}  // namespace gmp::test
