#include "nvml_sampler.h"

#include <dlfcn.h>

#include "log.h"
#include "records.h"

namespace gmp {
namespace {

// The few NVML ABI types used here (stable since NVML 11; nvml.h is not a build dependency).
struct NvmlMemory {
  unsigned long long total, free, used;
};
struct NvmlProcessInfo {  // nvmlProcessInfo_t as filled by nvmlDeviceGetComputeRunningProcesses_v3
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};
constexpr int kNvmlSuccess = 0;
constexpr unsigned kMaxProcesses = 256;

}  // namespace

uint64_t nvml_process_usage(NvmlGetProcesses get_processes, void* device, int pid) {
  if (get_processes == nullptr) return kUnknownUsage;
  NvmlProcessInfo infos[kMaxProcesses];
  unsigned count = kMaxProcesses;
  if (get_processes(device, &count, infos) != kNvmlSuccess) return kUnknownUsage;
  for (unsigned i = 0; i < count && i < kMaxProcesses; ++i) {
    if (static_cast<int>(infos[i].pid) == pid) return infos[i].used_gpu_memory;
  }
  return kUnknownUsage;
}

NvmlSampler::NvmlSampler(uint32_t sample_ms, int pid) : period_ns_(uint64_t{sample_ms} * 1'000'000ull), pid_(pid) {}

bool NvmlSampler::load() {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) return false;
  auto init = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
  get_handle_ = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
  get_memory_ = reinterpret_cast<int (*)(void*, void*)>(dlsym(lib_, "nvmlDeviceGetMemoryInfo"));
  get_processes_ =
      reinterpret_cast<int (*)(void*, unsigned*, void*)>(dlsym(lib_, "nvmlDeviceGetComputeRunningProcesses_v3"));
  if (init == nullptr || get_handle_ == nullptr || get_memory_ == nullptr || init() != kNvmlSuccess) {
    log::info("NVML is present but unusable; no device telemetry");
    return false;
  }
  return true;
}

void NvmlSampler::maybe_sample(uint64_t now_ns, const DeviceTable& devices, std::vector<Event>& out) {
  if (period_ns_ == 0 || state_ < 0 || now_ns < next_ns_) return;
  next_ns_ = now_ns + period_ns_;
  if (state_ == 0) state_ = load() ? 1 : -1;
  if (state_ < 0) return;
  const uint64_t seen = devices.seen.load(std::memory_order_acquire);
  for (int d = 0; d < kMaxDevices; ++d) {
    if (!(seen & (1ull << d)) || devices.entries[d].pci_bus_id[0] == '\0') continue;
    if (handles_[d] == nullptr && get_handle_(devices.entries[d].pci_bus_id, &handles_[d]) != kNvmlSuccess) continue;
    NvmlMemory mem{};
    if (get_memory_(handles_[d], &mem) != kNvmlSuccess) continue;
    const uint64_t process = nvml_process_usage(get_processes_, handles_[d], pid_);
    Event e{};
    e.timestamp_ns = now_ns;
    SampleRecord{mem.used, mem.total, process}.to_event(e);
    e.api = Api::Collector;
    e.device = static_cast<int16_t>(d);
    out.push_back(e);
  }
}

}  // namespace gmp
