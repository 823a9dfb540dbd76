// libnvidia-ml.so.1 test double: the NVML calls the profiler makes, with figures from the
// environment so tests can assert them: FAKE_NVML_USED (device used, default 300 MiB),
// FAKE_NVML_TOTAL (default 1 GiB), FAKE_NVML_PROCESS_USED (this process, default 200 MiB).
// With FAKE_NVML_CONTEXT set, this process uses that many bytes (its context) plus what the fake
// driver charges on the device (fakecuda_charged_bytes), as the real NVML would see it. Handles are
// per device, by the fake driver's PCI bus ids ("0000:01:00.0" is device 0).
#include <dlfcn.h>
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

struct MemoryV2 {
  unsigned version;
  unsigned long long total, reserved, free, used;
};

constexpr int kDevices = 8;
int g_device_tags[kDevices] = {0, 1, 2, 3, 4, 5, 6, 7};
constexpr int kInsufficientSize = 7;

unsigned long long process_used(void* device) {
  const char* context = std::getenv("FAKE_NVML_CONTEXT");
  if (context == nullptr) return env_bytes("FAKE_NVML_PROCESS_USED", 200ull << 20);
  void* cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);  // loaded by the process, maybe RTLD_LOCAL
  auto charged = reinterpret_cast<size_t (*)(int)>(cuda ? dlsym(cuda, "fakecuda_charged_bytes") : nullptr);
  return std::strtoull(context, nullptr, 10) + (charged ? charged(*static_cast<int*>(device)) : 0);
}

}  // namespace

extern "C" {

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }

int nvmlDeviceGetHandleByPciBusId_v2(const char* pci_bus_id, void** device) {
  if (pci_bus_id == nullptr || std::strncmp(pci_bus_id, "0000:", 5) != 0) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  const int bus = static_cast<int>(std::strtol(pci_bus_id + 5, nullptr, 16));
  *device = &g_device_tags[bus >= 1 && bus <= kDevices ? bus - 1 : 0];
  return 0;
}

int nvmlDeviceGetMemoryInfo(void*, Memory* m) {
  m->total = env_bytes("FAKE_NVML_TOTAL", 1ull << 30);
  m->used = env_bytes("FAKE_NVML_USED", 300ull << 20);
  m->free = m->total - m->used;
  return 0;
}

int nvmlDeviceGetMemoryInfo_v2(void*, MemoryV2* m) {
  m->total = env_bytes("FAKE_NVML_TOTAL", 1ull << 30);
  m->reserved = 0;
  m->used = env_bytes("FAKE_NVML_USED", 300ull << 20);
  m->free = m->total - m->used;
  return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(void* device, unsigned* count, ProcessInfo* infos) {
  if (*count < 1) {
    *count = 1;
    return kInsufficientSize;
  }
  *count = 1;
  infos[0] = ProcessInfo{static_cast<unsigned>(getpid()), process_used(device), 0, 0};
  return 0;
}

}  // extern "C"
