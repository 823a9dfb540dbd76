// The tools on runs with framework events (docs/framework-bridge.md), without a GPU: run
// directories written by hand (tests/unit/synthetic_run.h) and an OOM bundle of a framework OOM.
// Every figure expected follows from the events and files written here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "harness.h"
#include "synthetic_run.h"

namespace gmp {
namespace {

using nlohmann::json;
using test::kStartNs;
using test::SyntheticRun;
using test::RunResult;
using test::run_tool;

constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;

Event fw(Op op, uint64_t t, uint64_t address, uint64_t size, uint32_t stack = 0) {
  Event e{};
  e.timestamp_ns = kStartNs + t;
  e.op = op;
  e.api = Api::torch_caching_allocator;
  e.device = 0;
  e.address = address;
  e.size = size;
  e.thread_id = 7;
  e.stack_id = stack;
  return e;
}

// A bridged run: PyTorch 2.11 attaches, reserves a 20 MiB segment (a cudaMalloc underneath), hands
// out tensors of 8 and `second` MiB, frees the first, and runs out of memory asking for 2 GiB.
void bridged_run(SyntheticRun& run, uint64_t second = 4) {
  Event attach = fw(Op::FrameworkAttach, 100, 0, 0);
  attach.result = 1;
  attach.value = framework_version(2, 11, 0);
  run.event(attach);
  run.alloc(200, 7, 0x10000000, 20 * kMiB);
  run.event(fw(Op::SegmentAlloc, 210, 0x10000000, 20 * kMiB));
  run.event(fw(Op::TensorAlloc, 300, 0x10000000, 8 * kMiB));
  run.event(fw(Op::TensorAlloc, 400, 0x10800000, second * kMiB));
  run.event(fw(Op::TensorFreeRequested, 500, 0x10000000, 8 * kMiB));
  run.event(fw(Op::TensorFreeCompleted, 510, 0x10000000, 8 * kMiB));
  Event oom = fw(Op::FrameworkOomFigures, 600, 20 * kMiB, 2 * kGiB);
  oom.value = 900 * kMiB;
  oom.stream = kGiB;
  oom.object = second * kMiB;
  run.event(oom);
  run.write();
}

std::vector<json> json_lines(const std::string& text) {
  std::vector<json> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    out.push_back(json::parse(text.substr(start, end - start)));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

TEST(FrameworkTools, PerfettoHasAPyTorchTrackBesideTheDriverLevel) {
  SyntheticRun run;
  bridged_run(run);
  RunResult r = run_tool({"export", run.dir(), "--format", "perfetto"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json trace = json::parse(r.out);
  std::vector<std::tuple<double, uint64_t, uint64_t>> pytorch, driver;
  std::vector<std::string> instants;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "C" && e["name"] == "GPU 0 PyTorch")
      pytorch.emplace_back(e["ts"].get<double>(), e["args"]["allocated"], e["args"]["reserved"]);
    if (e["ph"] == "C" && e["name"] == "GPU 0 memory")
      driver.emplace_back(e["ts"].get<double>(), e["args"]["allocated"], e["args"]["reserved"]);
    if (e["ph"] == "i") instants.push_back(e["name"]);
  }
  using P = std::tuple<double, uint64_t, uint64_t>;
  EXPECT_EQ(pytorch, (std::vector<P>{{0.1, 0, 0},
                                     {0.21, 0, 20 * kMiB},
                                     {0.3, 8 * kMiB, 20 * kMiB},
                                     {0.4, 12 * kMiB, 20 * kMiB},
                                     {0.51, 4 * kMiB, 20 * kMiB}}));
  EXPECT_EQ(driver, (std::vector<P>{{0, 0, 0}, {0.2, 20 * kMiB, 20 * kMiB}}));
  EXPECT_EQ(instants, (std::vector<std::string>{"PyTorch 2.11.0 allocator attached",
                                                "PyTorch OOM: tried to allocate 2.00 GiB"}));
}

TEST(FrameworkTools, CsvAndJsonlCarryTheFrameworkFigures) {
  SyntheticRun run;
  bridged_run(run);
  RunResult csv = run_tool({"export", run.dir(), "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string header, line;
  std::getline(lines, header);
  EXPECT_EQ(header, "t_ns,op,kind,api,device,address,size,stream,object,value,thread,stack_id,result,"
                    "accounted_device,allocated,reserved,framework_allocated,framework_reserved");
  std::vector<std::string> rows;
  while (std::getline(lines, line)) rows.push_back(line);
  ASSERT_EQ(rows.size(), 9u);
  EXPECT_EQ(rows[0], "0,device_info,none,none,0,0x0,1073741824,0,0,0,0,0,0,0,0,0,,");
  EXPECT_EQ(rows[4], "300,tensor_alloc,none,torch_caching_allocator,0,0x10000000,8388608,0,0,0,7,0,0,0,"
                     "20971520,20971520,8388608,20971520");
  // A framework OOM's address is PyTorch's reserved bytes: decimal.
  EXPECT_EQ(rows[8], "600,framework_oom_figures,none,torch_caching_allocator,0,20971520,2147483648,1073741824,"
                     "4194304,943718400,7,0,0,0,20971520,20971520,4194304,20971520");

  RunResult jsonl = run_tool({"export", run.dir(), "--format", "jsonl"});
  ASSERT_EQ(jsonl.exit_code, 0) << jsonl.err;
  const auto records = json_lines(jsonl.out);
  ASSERT_EQ(records.size(), 9u);
  EXPECT_FALSE(records[0].contains("framework_allocated"));  // before the bridge attached
  EXPECT_EQ(records[4]["op"], "tensor_alloc");
  EXPECT_EQ(records[4]["framework_allocated"], 8 * kMiB);
  EXPECT_EQ(records[4]["framework_reserved"], 20 * kMiB);
  EXPECT_EQ(records[4]["allocated"], 20 * kMiB);
}

TEST(FrameworkTools, CsvOfADriverOnlyRunHasNoFrameworkColumns) {
  SyntheticRun run;
  run.alloc(100, 7, 0x1000, kMiB);
  run.write();
  RunResult csv = run_tool({"export", run.dir(), "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')),
            "t_ns,op,kind,api,device,address,size,stream,object,value,thread,stack_id,result,"
            "accounted_device,allocated,reserved");
}

TEST(FrameworkTools, TelemetryReportsPyTorchsAllocatedAndReserved) {
  SyntheticRun run;
  bridged_run(run);
  RunResult r = run_tool({"export", run.dir(), "--format", "telemetry-v2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json records = json::parse(r.out);
  std::vector<std::tuple<std::string, uint64_t, uint64_t, int64_t>> seen;
  for (const auto& rec : records) {
    seen.emplace_back(rec["event_type"], rec["allocator_allocated_bytes"], rec["allocator_reserved_bytes"],
                      rec["allocator_change_bytes"]);
  }
  using R = std::tuple<std::string, uint64_t, uint64_t, int64_t>;
  EXPECT_EQ(seen, (std::vector<R>{{"allocation", 0, 0, 0},  // the segment's cudaMalloc: the driver level
                                  {"allocation", 0, 20 * kMiB, 0},
                                  {"allocation", 8 * kMiB, 20 * kMiB, 8 * kMiB},
                                  {"allocation", 12 * kMiB, 20 * kMiB, 4 * kMiB},
                                  {"deallocation", 4 * kMiB, 20 * kMiB, -8 * static_cast<int64_t>(kMiB)},
                                  {"error", 4 * kMiB, 20 * kMiB, 0}}));
  const json& tensor = records[2];
  EXPECT_EQ(tensor["metadata"]["allocator_level"], "framework");
  EXPECT_EQ(tensor["metadata"]["driver_allocated_bytes"], 20 * kMiB);
  EXPECT_EQ(tensor["metadata"]["driver_reserved_bytes"], 20 * kMiB);
  const json& error = records[5];
  EXPECT_EQ(error["context"], "PyTorch out of memory: tried to allocate 2147483648 bytes");
  EXPECT_EQ(error["metadata"]["framework_reserved_bytes"], 20 * kMiB);
  EXPECT_EQ(error["metadata"]["framework_allocated_bytes"], 4 * kMiB);
  EXPECT_EQ(error["metadata"]["framework_capacity_bytes"], kGiB);
  EXPECT_EQ(error["metadata"]["framework_free_bytes"], 900 * kMiB);
}

TEST(FrameworkTools, DiffComparesTheFrameworkPeaks) {
  SyntheticRun a, b;
  bridged_run(a, 4);
  bridged_run(b, 10);
  RunResult r = run_tool({"diff", a.dir(), b.dir(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  const json& figures = out["devices"][0]["figures"];
  EXPECT_EQ(figures["framework_allocated_peak"], (json{{"a", 12 * kMiB}, {"b", 18 * kMiB}, {"change", 6 * kMiB}}));
  EXPECT_EQ(figures["framework_reserved_peak"], (json{{"a", 20 * kMiB}, {"b", 20 * kMiB}, {"change", 0}}));
  EXPECT_EQ(figures["framework_allocated_final"], (json{{"a", 4 * kMiB}, {"b", 10 * kMiB}, {"change", 6 * kMiB}}));
  RunResult text = run_tool({"diff", a.dir(), b.dir()});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("  framework allocated peak 12.00 MiB      18.00 MiB      +6.00 MiB (+50.0%)\n"),
            std::string::npos)
      << text.out;

  SyntheticRun plain;
  plain.alloc(100, 7, 0x1000, kMiB);
  plain.write();
  RunResult mixed = run_tool({"diff", a.dir(), plain.dir(), "--json"});
  ASSERT_EQ(mixed.exit_code, 0) << mixed.err;
  EXPECT_FALSE(json::parse(mixed.out)["devices"][0]["figures"].contains("framework_allocated_peak"));
}

// PyTorch 2.11's message, measured on an H200 (the figures of its OOM observer are these).
constexpr const char* kPyTorchMessage =
    "CUDA out of memory. Tried to allocate 65536.00 GiB. GPU 0 has a total capacity of 139.80 GiB of which "
    "139.17 GiB is free. Including non-PyTorch memory, this process has 634.00 MiB memory in use. Of the allocated "
    "memory 25.00 MiB is allocated by PyTorch, and 19.00 MiB is reserved by PyTorch but unallocated.";

// A framework OOM's bundle as the collector writes it (collector/oom_recorder.cpp), by hand.
std::string write_framework_bundle(const std::string& dir, const std::string& process_used_source) {
  const std::string b = dir + "/oom_dump_20260101T000000Z_4242_cuda_1";
  std::filesystem::create_directories(b);
  const json framework = {{"device", 0},
                          {"requested_bytes", 70368744177664ull},
                          {"free_bytes", 149432565760ull},
                          {"capacity_bytes", 150108897280ull},
                          {"allocated_bytes", 25 * kMiB},
                          {"reserved_bytes", 44 * kMiB},
                          {"process_used_bytes", 634 * kMiB},
                          {"process_used_source", process_used_source},
                          {"non_pytorch_bytes", 590 * kMiB},
                          {"accounting",
                           {{"allocated_bytes", {{"current", 24 * kMiB}, {"peak", 30 * kMiB}}},
                            {"reserved_bytes", {{"current", 44 * kMiB}, {"peak", 44 * kMiB}}},
                            {"outside_bytes", {{"current", 2 * kMiB}, {"peak", 2 * kMiB}}}}}};
  const json metadata = {
      {"schema_version", 1},
      {"reason", "PyTorch out of memory: tried to allocate 65536.00 GiB (70368744177664 bytes) on device 0"},
      {"request",
       {{"api", "torch_caching_allocator"}, {"kind", "tensor"}, {"size", 70368744177664ull}, {"device", 0},
        {"stream", 0}, {"thread", 7}, {"error", nullptr}, {"error_name", ""}, {"t_ns", 5'000'000'000ull}}},
      {"devices", json::array({{{"device", 0}, {"name", "NVIDIA H200"}, {"total_bytes", 150108897280ull}}})},
      {"driver_memory", {{"device", 0}, {"free", 149432565760ull}, {"total", 150108897280ull}}},
      {"live_count", 0}, {"live_bytes", 0}, {"largest_live", json::array()},
      {"recovered", false}, {"failures", 1}, {"episode", 1},
      {"framework", framework}};
  std::ofstream(b + "/metadata.json") << metadata.dump();
  json tensors = json::array();
  auto tensor = [&](uint64_t address, uint64_t size, uint64_t stack) {
    tensors.push_back({{"address", address}, {"size", size}, {"kind", "tensor"}, {"device", 0},
                       {"api", "torch_caching_allocator"}, {"thread", 7}, {"age_ms", 3}, {"stack_id", stack}});
  };
  tensor(0x1000000, 16 * kMiB, 3);
  tensor(0x2000000, 5 * kMiB, 4);
  tensor(0x3000000, 3 * kMiB, 3);
  std::ofstream(b + "/tensors.json") << tensors.dump();
  std::ofstream(b + "/allocations.json") << "[]";
  std::ofstream(b + "/environment.json") << json{{"pid", 4242}, {"exe", "/usr/bin/python3"}}.dump();
  std::ofstream(b + "/manifest.json")
      << json{{"schema_version", 1}, {"bundle_name", "oom_dump_20260101T000000Z_4242_cuda_1"},
              {"created_at_utc", "2026-01-01T00:00:00.000Z"}, {"pid", 4242}}
             .dump();
  return b;
}

TEST(FrameworkTools, OomSaysWhatPyTorchSaidWithTheSameFigures) {
  SyntheticRun dir;
  const std::string b = write_framework_bundle(dir.dir(), "nvml");
  RunResult r = run_tool({"oom", b});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The message wrapped at 100 columns: joined, it is PyTorch's, character for character.
  const size_t from = r.out.find("PyTorch's message, from the figures it passed to its OOM observer\n");
  ASSERT_NE(from, std::string::npos) << r.out;
  std::string joined;
  std::istringstream in(r.out.substr(from));
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line) && line.rfind("  ", 0) == 0 && line.rfind("    ", 0) != 0) {
    joined += (joined.empty() ? "" : " ") + line.substr(2);
  }
  EXPECT_EQ(joined, kPyTorchMessage);
  for (const char* expected : {
           "    tried to allocate          65536.00 GiB  70368744177664 bytes\n",
           "    total capacity               139.80 GiB  150108897280 bytes\n",
           "    free                         139.17 GiB  149432565760 bytes\n",
           "    this process has in use      634.00 MiB  664797184 bytes  (NVML's latest sample of this process)\n",
           "    allocated by PyTorch          25.00 MiB  26214400 bytes\n",
           "    reserved but unallocated      19.00 MiB  19922944 bytes\n",
           "    reserved by PyTorch           44.00 MiB  46137344 bytes\n",
           "    non-PyTorch memory           590.00 MiB  618659840 bytes  (in use less reserved: the CUDA context, "
           "other libraries)\n",
           "  PyTorch's caching allocator could not allocate 65536.00 GiB (70368744177664 bytes) on device 0 "
           "(NVIDIA H200)\n",
           "Largest live tensors on device 0 (3 of 3, from tensors.json)\n",
           "  live tensors on the device: 3 (24.00 MiB)\n",
       }) {
    EXPECT_NE(r.out.find(expected), std::string::npos) << expected << "\nin:\n" << r.out;
  }
  // The request is larger than the capacity: that is the one thing to say.
  EXPECT_NE(r.out.find("  - The request (65536.00 GiB) is larger than the capacity PyTorch may use (139.80 GiB)"),
            std::string::npos)
      << r.out;

  RunResult j = run_tool({"oom", b, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json x = json::parse(j.out)["bundles"][0];
  EXPECT_EQ(x["framework"]["message"], kPyTorchMessage);
  EXPECT_EQ(x["framework"]["reserved_unallocated_bytes"], 19 * kMiB);
  EXPECT_EQ(x["framework"]["process_used_source"], "nvml");
  EXPECT_EQ(x["framework"]["live_tensors"], (json{{"count", 3}, {"bytes", 24 * kMiB}}));
  EXPECT_EQ(x["framework"]["tensor_sites"],
            (json{{{"stack_id", 3}, {"site", nullptr}, {"bytes", 19 * kMiB}, {"count", 2}},
                  {{"stack_id", 4}, {"site", nullptr}, {"bytes", 5 * kMiB}, {"count", 1}}}));
  EXPECT_EQ(x["largest_live_from"], "tensors.json");
  EXPECT_EQ(x["advice"][0]["id"], "cannot_fit");
}

TEST(FrameworkTools, OomAdviceForAFragmentedCache) {
  SyntheticRun dir;
  const std::string b = write_framework_bundle(dir.dir(), "capacity_less_free");
  // A request of 30 MiB that did not fit although 19 MiB of the cache was free is a different
  // story: make the request 10 MiB, less than the unallocated 19 MiB.
  json meta = json::parse(std::ifstream(b + "/metadata.json"));
  meta["request"]["size"] = 10 * kMiB;
  meta["framework"]["requested_bytes"] = 10 * kMiB;
  std::ofstream(b + "/metadata.json") << meta.dump();
  RunResult j = run_tool({"oom", b, "--json"});
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json x = json::parse(j.out)["bundles"][0];
  std::vector<std::string> ids;
  for (const auto& a : x["advice"]) ids.push_back(a["id"]);
  EXPECT_EQ(ids, (std::vector<std::string>{"expandable_segments", "tensors"}));
  EXPECT_EQ(x["advice"][1]["text"],
            "Tensors held 25.00 MiB when the request came: lower the batch size, use activation checkpointing or "
            "smaller data types, and drop references to tensors no longer needed (del, torch.no_grad() for "
            "inference). The largest holders by call site: stack 3: 19.00 MiB in 2 tensors; stack 4: 5.00 MiB in "
            "1 tensor.");
  RunResult t = run_tool({"oom", b});
  EXPECT_NE(t.out.find("(capacity less free: no NVML sample, so other processes count too)"), std::string::npos)
      << t.out;
}

}  // namespace
}  // namespace gmp
