// Writes run directories as a PyTorch process under the framework bridge leaves them, without a GPU
// or PyTorch: manifest.json, trace.gmpt, attribution.jsonl and summary.json through the format
// library's own writers (to_json of ManifestRecord, the attribution records and Summary, the trace
// header), with events as the bridge and the shim record them (docs/trace-format.md, ops 22-31:
// the driver's cuMemAlloc of a segment, then segment_alloc, then tensor_alloc, all on the
// allocating thread with its stack). Reusable: build a run with the calls below, or take
// write_training_run()'s fixed one, whose figures the tests pin.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attribution_records.h"
#include "event.h"

namespace gmp::test {

inline constexpr uint64_t kFrameworkStartNs = 5'000'000'000;  // the trace's start on the event clock
inline constexpr uint64_t kFrameworkDeviceBytes = 1ull << 30;

class FrameworkRun {
 public:
  explicit FrameworkRun(std::string dir) : dir_(std::move(dir)) {}

  // The process: argv and executable go to manifest.json.
  FrameworkRun& process(std::vector<std::string> argv, std::string exe);
  // Events; `t` is ns since the start, on device 0 unless said otherwise.
  FrameworkRun& attach(uint64_t t, uint16_t major, uint8_t minor, uint8_t patch);  // framework_attach, result 1
  FrameworkRun& refuse(uint64_t t, FrameworkRefusal why, uint16_t major, uint8_t minor, uint8_t patch);
  // PyTorch reserves a segment: its cudaMalloc (a linear allocation at driver level), then segment_alloc.
  FrameworkRun& segment(uint64_t t, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack);
  // empty_cache(): segment_free, then the driver's free.
  FrameworkRun& release_segment(uint64_t t, uint32_t thread, uint64_t address, uint64_t size);
  FrameworkRun& tensor(uint64_t t, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack);
  FrameworkRun& free_requested(uint64_t t, uint32_t thread, uint64_t address, uint64_t size);
  FrameworkRun& free_completed(uint64_t t, uint32_t thread, uint64_t address, uint64_t size);
  // A tensor's free with nothing pending: PyTorch records both at once.
  FrameworkRun& free_tensor(uint64_t t, uint32_t thread, uint64_t address, uint64_t size);
  // Driver-level memory outside the framework (a library's cudaMalloc).
  FrameworkRun& driver_alloc(uint64_t t, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack);
  FrameworkRun& driver_free(uint64_t t, uint32_t thread, uint64_t address);
  FrameworkRun& nvml_sample(uint64_t t, uint64_t process_used);  // device used = process used
  // The bootstrap's tensor_label (of the tensor at `address`, named `name_id`: a name() line) and
  // phase events (docs/framework-bridge.md §Categories).
  FrameworkRun& label(uint64_t t, uint64_t address, TensorCategory category, uint32_t name_id = 0);
  FrameworkRun& phase(uint64_t t, TrainingPhase phase, uint64_t step, uint64_t micro_batch);
  FrameworkRun& event(const Event& e);

  // attribution.jsonl records.
  FrameworkRun& module(const std::string& path, uint64_t start, uint64_t end);
  FrameworkRun& pyframe(uint32_t id, const std::string& file, const std::string& function, int64_t line);
  FrameworkRun& stack(uint32_t id, std::vector<StackFrame> frames);
  FrameworkRun& name(uint32_t id, const std::string& name);

  // Writes the directory; summary.json as the collector writes it at exit (from the same events)
  // unless `with_summary` is false (a killed process).
  void write(bool with_summary = true) const;

 private:
  std::string dir_;
  std::vector<std::string> argv_ = {"python3", "train.py"};
  std::string exe_ = "/usr/bin/python3.12";
  std::vector<Event> events_;
  std::vector<AttributionLine> attribution_;
};

// The run the framework tests pin (framework_run.cpp says what happens when): PyTorch 2.11.0 on a
// 1 GiB device; tensors peak at 110 MiB, PyTorch's segments at 120 MiB, 8 MiB outside PyTorch;
// one 4 MiB tensor and one 20 MiB segment left at exit; NVML samples.
void write_training_run(const std::string& dir, bool with_summary = true);

// One training step with the bootstrap's labels and phases (framework_run.cpp says what happens
// when), for the categories' outputs: tensors peak at 160 MiB in the optimizer phase of step 1,
// 40 MiB parameters (named kCategoriesParameterName), 40 MiB gradients, 80 MiB optimizer state; on
// the way, 30 MiB activations and a 10 MiB temporary held 3 us (narrower than one of the HTML page's
// 2048 timeline slices). At exit: the parameters and the optimizer state.
inline constexpr const char* kCategoriesParameterName = "model.</script><b>&\"'.weight";
void write_categories_run(const std::string& dir);

}  // namespace gmp::test
