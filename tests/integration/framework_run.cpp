#include "framework_run.h"

#include <fstream>
#include <variant>

#include "accounting.h"
#include "json_text.h"
#include "manifest_record.h"
#include "records.h"
#include "summary.h"
#include "summary_builder.h"
#include "synthetic_run.h"
#include "trace_format.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1ull << 20;
constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kStep = 1'000;  // between the events of one allocator call: a segment's cudaMalloc, its record

// A bridge event on device 0 (synthetic_run.h), `t` ns after the run's start.
Event bridge_event(uint64_t t, uint32_t thread, Op op, uint64_t address, uint64_t size, uint32_t stack = 0) {
  return framework_event(kFrameworkStartNs + t, thread, op, address, size, 0, stack);
}

}  // namespace

FrameworkRun& FrameworkRun::process(std::vector<std::string> argv, std::string exe) {
  argv_ = std::move(argv);
  exe_ = std::move(exe);
  return *this;
}

FrameworkRun& FrameworkRun::event(const Event& e) {
  events_.push_back(e);
  return *this;
}

FrameworkRun& FrameworkRun::attach(uint64_t t, uint16_t major, uint8_t minor, uint8_t patch) {
  Event e = bridge_event(t, 1, Op::FrameworkAttach, 0, 0);
  e.result = 1;
  e.value = framework_version(major, minor, patch);
  return event(e);
}

FrameworkRun& FrameworkRun::refuse(uint64_t t, FrameworkRefusal why, uint16_t major, uint8_t minor, uint8_t patch) {
  Event e = bridge_event(t, 1, Op::FrameworkAttach, 0, 0);
  e.value = framework_version(major, minor, patch);
  e.object = static_cast<uint64_t>(why);
  return event(e);
}

FrameworkRun& FrameworkRun::driver_alloc(uint64_t t, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack) {
  return event(linear_alloc_event(kFrameworkStartNs + t, thread, address, size, stack, 0));
}

FrameworkRun& FrameworkRun::driver_free(uint64_t t, uint32_t thread, uint64_t address) {
  return event(linear_free_event(kFrameworkStartNs + t, thread, address));
}

FrameworkRun& FrameworkRun::segment(uint64_t t, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack) {
  driver_alloc(t, thread, address, size, stack);
  return event(bridge_event(t + kStep, thread, Op::SegmentAlloc, address, size));
}

FrameworkRun& FrameworkRun::release_segment(uint64_t t, uint32_t thread, uint64_t address, uint64_t size) {
  event(bridge_event(t, thread, Op::SegmentFree, address, size));
  return driver_free(t + kStep, thread, address);
}

FrameworkRun& FrameworkRun::tensor(uint64_t t, uint32_t thread, uint64_t address, uint64_t size, uint32_t stack) {
  return event(bridge_event(t, thread, Op::TensorAlloc, address, size, stack));
}

FrameworkRun& FrameworkRun::free_requested(uint64_t t, uint32_t thread, uint64_t address, uint64_t size) {
  return event(bridge_event(t, thread, Op::TensorFreeRequested, address, size));
}

FrameworkRun& FrameworkRun::free_completed(uint64_t t, uint32_t thread, uint64_t address, uint64_t size) {
  return event(bridge_event(t, thread, Op::TensorFreeCompleted, address, size));
}

FrameworkRun& FrameworkRun::free_tensor(uint64_t t, uint32_t thread, uint64_t address, uint64_t size) {
  free_requested(t, thread, address, size);
  return free_completed(t, thread, address, size);
}

FrameworkRun& FrameworkRun::nvml_sample(uint64_t t, uint64_t process_used) {
  Event e{};
  e.timestamp_ns = kFrameworkStartNs + t;
  e.op = Op::Sample;
  e.device = 0;
  e.size = process_used;
  e.object = kFrameworkDeviceBytes;
  e.value = process_used;
  e.api = Api::Collector;
  return event(e);
}

FrameworkRun& FrameworkRun::module(const std::string& path, uint64_t start, uint64_t end) {
  attribution_.push_back(ModuleLine{path, start, start, end, "", kFrameworkStartNs});
  return *this;
}

FrameworkRun& FrameworkRun::pyframe(uint32_t id, const std::string& file, const std::string& function, int64_t line) {
  attribution_.push_back(PyFrameLine{id, file, function, line});
  return *this;
}

FrameworkRun& FrameworkRun::label(uint64_t t, uint64_t address, TensorCategory category, uint32_t name_id) {
  Event e = bridge_event(t, 1, Op::TensorLabel, 0, 0);
  TensorLabelRecord{address, category, name_id}.to_event(e);
  return event(e);
}

FrameworkRun& FrameworkRun::phase(uint64_t t, TrainingPhase phase, uint64_t step, uint64_t micro_batch) {
  Event e = bridge_event(t, 1, Op::Phase, 0, 0);
  PhaseRecord{phase, step, micro_batch}.to_event(e);
  return event(e);
}

FrameworkRun& FrameworkRun::name(uint32_t id, const std::string& name) {
  attribution_.push_back(NameLine{id, name});
  return *this;
}

FrameworkRun& FrameworkRun::stack(uint32_t id, std::vector<StackFrame> frames) {
  attribution_.push_back(StackLine{id, std::move(frames)});
  return *this;
}

void FrameworkRun::write(bool with_summary) const {
  std::vector<Event> trace;
  Event info{};  // as the collector does before the device's first event
  info.timestamp_ns = kFrameworkStartNs;
  info.size = kFrameworkDeviceBytes;
  info.op = Op::DeviceInfo;
  trace.push_back(info);
  trace.insert(trace.end(), events_.begin(), events_.end());

  ManifestRecord m;
  m.pid = 4242;
  m.exe = exe_;
  m.argv = argv_;
  m.host = "synthetic";
  m.start_monotonic_ns = kFrameworkStartNs;
  m.devices.push_back(DeviceEntry{0, "Synthetic GPU", kFrameworkDeviceBytes});
  std::ofstream(dir_ + "/manifest.json") << json_text(to_json(m), 2);

  std::ofstream out(dir_ + "/" + kTraceFileName, std::ios::binary);
  const TraceHeader h = make_trace_header(4242, 0, kFrameworkStartNs);
  out.write(reinterpret_cast<const char*>(&h), sizeof h);
  for (const Event& e : trace) out.write(reinterpret_cast<const char*>(&e), sizeof e);

  std::ofstream attribution(dir_ + "/attribution.jsonl");
  for (const AttributionLine& line : attribution_) {
    attribution << json_text(std::visit([](const auto& r) { return to_json(r); }, line)) << "\n";
  }

  if (!with_summary) return;
  Accounting acc;  // what the collector counts as the events go by
  for (const Event& e : trace) acc.apply(e);
  SummaryContext ctx;
  ctx.device_names[0] = "Synthetic GPU";
  ctx.start_monotonic_ns = kFrameworkStartNs;
  Summary s = build_summary(acc, ctx);
  s.trace_events_written = trace.size();
  std::ofstream(dir_ + "/summary.json") << json_text(to_json(s), 2);
}

void write_training_run(const std::string& dir, bool with_summary) {
  constexpr uint32_t kMain = 101, kNccl = 202;
  constexpr uint64_t kSegA = 0x7f1000000000, kSegB = 0x7f2000000000, kNcclBuffer = 0x7f3000000000;
  constexpr uint64_t kC10 = 0x7e0000000000, kNcclLib = 0x7e1000000000, kPython = 0x400000;
  const std::string packages = "/opt/venv/lib/python3.12/site-packages/";
  FrameworkRun run(dir);
  run.module(packages + "torch/lib/libc10_cuda.so", kC10, kC10 + 0x100000)
      .module("/usr/bin/python3.12", kPython, kPython + 0x400000)
      .module("/usr/lib/x86_64-linux-gnu/libnccl.so.2", kNcclLib, kNcclLib + 0x100000)
      .pyframe(1, packages + "torch/nn/modules/linear.py", "Linear.forward", 125)
      .pyframe(2, "/work/model.py", "Model.forward", 42)
      .pyframe(3, "/work/train.py", "<module>", 10)
      .pyframe(4, packages + "transformers/models/llama/modeling_llama.py", "LlamaMLP.forward", 200)
      .pyframe(5, packages + "torch/nn/functional.py", "silu", 2100)
      .pyframe(6, "/usr/lib/python3.12/threading.py", "Thread.run", 1010)
      // The model's line under torch/nn's Python; a model library's line on a worker thread with no
      // user code; NCCL's own buffer, native frames only.
      .stack(1, {{kC10 + 0x1234, false}, {kC10 + 0x2345, false}, {kPython + 0x100, false}, {1, true}, {2, true},
                 {3, true}})
      .stack(2, {{kC10 + 0x1234, false}, {kPython + 0x100, false}, {5, true}, {4, true}, {6, true}})
      .stack(3, {{kNcclLib + 0x4567, false}});
  run.attach(1 * kMs, 2, 11, 0)
      .nvml_sample(2 * kMs, 300 * MiB)                          // the CUDA context and modules
      .driver_alloc(5 * kMs, kNccl, kNcclBuffer, 8 * MiB, 3)    // outside PyTorch, never freed
      .segment(10 * kMs, kMain, kSegA, 20 * MiB, 1)
      .tensor(10 * kMs + 2 * kStep, kMain, kSegA, 4 * MiB, 1)   // T1: never freed, a leak
      .tensor(20 * kMs, kMain, kSegA + 4 * MiB, 6 * MiB, 2)     // T2
      .segment(30 * kMs, kMain, kSegB, 100 * MiB, 1)            // reserved peak: 120 MiB
      .tensor(30 * kMs + 2 * kStep, kMain, kSegB, 100 * MiB, 1) // T3: allocated peak, 110 MiB
      .nvml_sample(35 * kMs, 428 * MiB)
      .free_tensor(40 * kMs, kMain, kSegA + 4 * MiB, 6 * MiB)
      .tensor(50 * kMs, kMain, kSegA + 4 * MiB, 2 * MiB, 2)     // T4, in T2's block
      .free_requested(55 * kMs, kMain, kSegA + 4 * MiB, 2 * MiB)  // used on another stream: pending
      .free_tensor(60 * kMs, kMain, kSegB, 100 * MiB)
      .free_completed(70 * kMs, kMain, kSegA + 4 * MiB, 2 * MiB)
      .release_segment(80 * kMs, kMain, kSegB, 100 * MiB)      // torch.cuda.empty_cache()
      .nvml_sample(90 * kMs, 312 * MiB)
      .write(with_summary);
}

void write_categories_run(const std::string& dir) {
  constexpr uint32_t kMain = 101;
  constexpr uint64_t kSeg = 0x7f1000000000;
  constexpr uint64_t kW = kSeg, kA = kSeg + 40 * MiB, kX = kSeg + 70 * MiB, kG = kSeg + 80 * MiB,
                     kS = kSeg + 120 * MiB;
  FrameworkRun run(dir);
  run.name(1, kCategoriesParameterName).name(2, "model.weight.grad").name(3, "AdamW.exp_avg");
  run.attach(1 * kMs, 2, 11, 0)
      .segment(10 * kMs, kMain, kSeg, 256 * MiB, 0)
      .tensor(20 * kMs, kMain, kW, 40 * MiB, 0)  // the parameters
      .label(20 * kMs + kStep, kW, TensorCategory::Parameters, 1)
      .phase(30 * kMs, TrainingPhase::Forward, 1, 1)
      .tensor(40 * kMs, kMain, kA, 30 * MiB, 0)  // an activation: alive when the backward begins
      .tensor(45 * kMs, kMain, kX, 10 * MiB, 0)  // a temporary: freed in the forward, 3 us later
      .free_tensor(45 * kMs + 3 * kStep, kMain, kX, 10 * MiB)
      .phase(60 * kMs, TrainingPhase::Backward, 1, 1)
      .tensor(70 * kMs, kMain, kG, 40 * MiB, 0)  // the gradients
      .label(70 * kMs + kStep, kG, TensorCategory::Gradients, 2)
      .free_tensor(80 * kMs, kMain, kA, 30 * MiB)
      .phase(90 * kMs, TrainingPhase::Optimizer, 1, 1)
      .tensor(100 * kMs, kMain, kS, 80 * MiB, 0)  // the optimizer state: the peak, 160 MiB
      .label(100 * kMs + kStep, kS, TensorCategory::OptimizerState, 3)
      .free_tensor(110 * kMs, kMain, kG, 40 * MiB)  // zero_grad(set_to_none=True)
      .write();
}

}  // namespace gmp::test
