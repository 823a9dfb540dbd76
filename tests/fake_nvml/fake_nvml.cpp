// libnvidia-ml.so.1 test double: the five NVML calls the profiler's telemetry makes, with figures
// from the environment so tests can assert them: FAKE_NVML_USED (device used, default 300 MiB),
// FAKE_NVML_TOTAL (default 1 GiB), FAKE_NVML_PROCESS_USED (this process, default 200 MiB).
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace {

struct Memory {
  unsigned long long total, free, used;
};
struct ProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id, compute_instance_id;
};

unsigned long long env_bytes(const char* name, unsigned long long fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}

int g_device_tag = 0;
constexpr int kInsufficientSize = 7;

}  // namespace

extern "C" {

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }

int nvmlDeviceGetHandleByPciBusId_v2(const char* pci_bus_id, void** device) {
  if (pci_bus_id == nullptr || std::strncmp(pci_bus_id, "0000:", 5) != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  *device = &g_device_tag;
  return 0;
}

int nvmlDeviceGetMemoryInfo(void*, Memory* m) {
  m->total = env_bytes("FAKE_NVML_TOTAL", 1ull << 30);
  m->used = env_bytes("FAKE_NVML_USED", 300ull << 20);
  m->free = m->total - m->used;
  return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void*, unsigned* count, ProcessInfo* infos) {
  if (*count < 1) {
    *count = 1;
    return kInsufficientSize;
  }
  *count = 1;
  infos[0] = ProcessInfo{static_cast<unsigned>(getpid()), env_bytes("FAKE_NVML_PROCESS_USED", 200ull << 20), 0, 0};
  return 0;
}

}  // extern "C"
