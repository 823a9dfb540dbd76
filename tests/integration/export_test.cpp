// `gpumemprof export` on run directories with known allocations (prog_ops on the fake driver):
// every format is parsed back and its figures checked exactly against the trace and summary.json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "accounting.h"
#include "harness.h"
#include "json_views.h"
#include "trace_reader.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20;

RunResult ops(const Sandbox& box, std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), Paths::bin("prog_ops"));
  return box.run(args, env);
}

std::vector<Event> trace_events(const std::string& run, uint64_t* start_ns = nullptr) {
  reader::TraceReader t;
  EXPECT_TRUE(t.open(run + "/trace.gmpt")) << t.error();
  if (start_ns != nullptr) *start_ns = t.header().start_monotonic_ns;
  std::vector<Event> out;
  Event e;
  while (t.next(e)) out.push_back(e);
  return out;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

std::vector<std::string> csv_cells(const std::string& line) {  // our cells never need quotes
  std::vector<std::string> out;
  std::istringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.push_back("");
  return out;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Points of one counter track of a perfetto export: (ts in us, args).
std::vector<std::pair<double, nlohmann::json>> counter_points(const nlohmann::json& trace, const std::string& name) {
  std::vector<std::pair<double, nlohmann::json>> out;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev["ph"] == "C" && ev["name"] == name) out.emplace_back(ev["ts"].get<double>(), ev["args"]);
  }
  return out;
}

std::string python3() {
  for (const char* p : {"/usr/bin/python3", "/usr/local/bin/python3", "/bin/python3"}) {
    if (exists(p)) return p;
  }
  return {};
}

TEST(Export, CsvHasOneRowPerEventWithRunningFigures) {
  Sandbox box;
  ASSERT_EQ(ops(box, {"alloc:1M", "alloc:2M", "free:0", "alloc:4M", "free_all"}).exit_code, 0);
  const std::string dir = box.only_run_dir();
  uint64_t start = 0;
  const auto events = trace_events(dir, &start);
  const auto summary = read_json_file(dir + "/summary.json");

  RunResult r = run_tool({"export", dir, "--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), events.size() + 1);
  EXPECT_EQ(lines[0],
            "t_ns,op,kind,api,device,address,size,stream,object,value,thread,stack_id,result,accounted_device,"
            "allocated,reserved");

  std::vector<uint64_t> alloc_sizes, after_alloc, after_free;
  uint64_t max_allocated = 0, last_allocated = 0, max_reserved = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    const auto c = csv_cells(lines[i + 1]);
    ASSERT_EQ(c.size(), 16u) << lines[i + 1];
    const Event& e = events[i];
    EXPECT_EQ(std::stoull(c[0]), e.timestamp_ns - start);
    EXPECT_EQ(c[1], op_name(e.op));
    EXPECT_EQ(c[3], api_name(e.api));
    EXPECT_EQ(std::stoll(c[4]), e.device);
    EXPECT_EQ(std::stoull(c[5], nullptr, 16), e.address);
    EXPECT_EQ(c[5].rfind("0x", 0), 0u);
    EXPECT_EQ(std::stoull(c[6]), e.size);
    if (c[13] == "-1") continue;  // no device figures: empty cells
    EXPECT_EQ(c[13], "0");
    const uint64_t allocated = std::stoull(c[14]), reserved = std::stoull(c[15]);
    EXPECT_EQ(allocated, reserved);  // linear memory only
    if (c[1] == "alloc") {
      alloc_sizes.push_back(e.size);
      after_alloc.push_back(allocated);
    }
    if (c[1] == "free") after_free.push_back(allocated);
    max_allocated = std::max(max_allocated, allocated);
    max_reserved = std::max(max_reserved, reserved);
    last_allocated = allocated;
  }
  EXPECT_EQ(alloc_sizes, (std::vector<uint64_t>{1 * MiB, 2 * MiB, 4 * MiB}));
  EXPECT_EQ(after_alloc, (std::vector<uint64_t>{1 * MiB, 3 * MiB, 6 * MiB}));
  EXPECT_EQ(after_free, (std::vector<uint64_t>{2 * MiB, 4 * MiB, 0}));  // free:0, then free_all
  EXPECT_EQ(max_allocated, summary["devices"][0]["allocated_bytes"]["peak"].get<uint64_t>());
  EXPECT_EQ(max_reserved, summary["devices"][0]["reserved_bytes"]["peak"].get<uint64_t>());
  EXPECT_EQ(last_allocated, summary["devices"][0]["allocated_bytes"]["current"].get<uint64_t>());
  EXPECT_EQ(max_allocated, 6 * MiB);
}

TEST(Export, JsonlIsEventJsonPlusTheReplayedFigures) {
  Sandbox box;
  ASSERT_EQ(ops(box, {"alloc:1M", "alloc_async:3M", "free:0", "free_all"}).exit_code, 0);
  const std::string dir = box.only_run_dir();
  uint64_t start = 0;
  const auto events = trace_events(dir, &start);

  RunResult r = run_tool({"export", dir, "--format", "jsonl"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), events.size());
  Accounting acc;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    std::map<int, std::pair<uint64_t, uint64_t>> before;
    for (const auto& [d, s] : acc.devices()) before[d] = {s.allocated.current, s.reserved.current};
    acc.apply(e);
    auto j = nlohmann::json::parse(lines[i]);
    const int dev = j["accounted_device"].get<int>();
    if (e.device >= 0) {
      EXPECT_EQ(dev, e.device);
    }
    if (dev >= 0) {
      const auto& s = acc.devices().at(dev);
      EXPECT_EQ(j["allocated"], s.allocated.current) << lines[i];
      EXPECT_EQ(j["reserved"], s.reserved.current) << lines[i];
    } else {
      EXPECT_TRUE(j["allocated"].is_null());
      for (const auto& [d, s] : acc.devices()) {  // -1 only when no device's figures moved
        EXPECT_EQ(before[d], std::make_pair(s.allocated.current, s.reserved.current)) << lines[i];
      }
    }
    j.erase("accounted_device");
    j.erase("allocated");
    j.erase("reserved");
    EXPECT_EQ(j, event_json(e, start)) << lines[i];
  }
  const auto& d0 = acc.devices().at(0);
  EXPECT_EQ(d0.allocated.peak, 4 * MiB);
  EXPECT_EQ(d0.allocated.current, 0u);
}

TEST(Export, PerfettoCountersMatchTheSummary) {
  Sandbox box;
  ASSERT_EQ(ops(box, {"alloc:1M", "alloc:2M", "alloc:4M", "free:2", "alloc:1M"}).exit_code, 0);
  const std::string dir = box.only_run_dir();
  const auto summary = read_json_file(dir + "/summary.json");
  const auto manifest = read_json_file(dir + "/manifest.json");

  RunResult r = run_tool({"export", dir, "--format", "perfetto"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trace = nlohmann::json::parse(r.out);
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  ASSERT_TRUE(trace["traceEvents"].is_array());
  EXPECT_EQ(trace["otherData"]["exe"], manifest["exe"]);

  int names = 0;
  for (const auto& ev : trace["traceEvents"]) {
    EXPECT_TRUE(ev.contains("ph") && ev.contains("name") && ev.contains("pid")) << ev;
    EXPECT_EQ(ev["pid"], manifest["pid"]);
    EXPECT_NE(ev["ph"], "i") << ev;  // nothing went wrong in this run
    if (ev["ph"] == "M" && ev["name"] == "process_name") {
      ++names;
      EXPECT_EQ(ev["args"]["name"], "prog_ops");
    } else {
      EXPECT_GE(ev["ts"].get<double>(), 0.0);
    }
  }
  EXPECT_EQ(names, 1);

  const auto points = counter_points(trace, "GPU 0 memory");
  ASSERT_EQ(points.size(), 6u);  // the starting zero, then one point per change
  EXPECT_EQ(points.front().second, nlohmann::json({{"allocated", 0}, {"reserved", 0}}));
  uint64_t max_allocated = 0, max_reserved = 0;
  for (size_t i = 0; i < points.size(); ++i) {
    max_allocated = std::max(max_allocated, points[i].second["allocated"].get<uint64_t>());
    max_reserved = std::max(max_reserved, points[i].second["reserved"].get<uint64_t>());
    if (i > 0) {
      EXPECT_NE(points[i].second, points[i - 1].second) << "a point without a change";
    }
  }
  const auto& d = summary["devices"][0];
  EXPECT_EQ(max_allocated, d["allocated_bytes"]["peak"].get<uint64_t>());
  EXPECT_EQ(max_reserved, d["reserved_bytes"]["peak"].get<uint64_t>());
  EXPECT_EQ(points.back().second["allocated"], d["allocated_bytes"]["current"]);
  EXPECT_EQ(points.back().second["reserved"], d["reserved_bytes"]["current"]);
  EXPECT_EQ(max_allocated, 7 * MiB);
  EXPECT_EQ(points.back().second["allocated"], 4 * MiB);
}

TEST(Export, PerfettoMarksOomBundleRecoveryAndAlerts) {
  Sandbox box;
  // 1 GiB device: 830 MiB fires the 80% warning at once; 512 MiB more cannot fit; after the free
  // the retry succeeds and ends the OOM episode. Long sample windows keep the alert from clearing.
  RunResult run = ops(box, {"alloc:830M", "expect_fail:512M", "free:0", "retry_ok:512M"},
                      {{"FAKE_CUDA_CAPACITY", "1G"}, {"GPUMEMPROF_SAMPLE_MS", "1000"}});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string dir = box.only_run_dir();
  const auto summary = read_json_file(dir + "/summary.json");
  ASSERT_EQ(summary["oom"], nlohmann::json({{"failures", 1}, {"bundles_written", 1}, {"recovered", 1}}));
  ASSERT_EQ(summary["alerts"]["warning"], 1);

  RunResult r = run_tool({"export", dir, "--format", "perfetto"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trace = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> instants;
  for (const auto& ev : trace["traceEvents"]) {
    if (ev["ph"] != "i") continue;
    EXPECT_EQ(ev["s"], "p");
    EXPECT_EQ(ev["args"]["device"], 0);
    instants[ev["name"].get<std::string>()] = ev;
  }
  ASSERT_EQ(instants.size(), 4u) << trace["traceEvents"].dump();
  ASSERT_TRUE(instants.count("OOM: cuMemAlloc_v2 of 512.00 MiB"));
  const auto& oom = instants["OOM: cuMemAlloc_v2 of 512.00 MiB"]["args"];
  EXPECT_EQ(oom["size"], 512 * MiB);
  EXPECT_EQ(oom["result"], 2);
  EXPECT_EQ(oom["error"], "CUDA_ERROR_OUT_OF_MEMORY");
  ASSERT_TRUE(instants.count("OOM bundle #1 written"));
  EXPECT_EQ(instants["OOM bundle #1 written"]["args"]["request_size"], 512 * MiB);
  ASSERT_TRUE(instants.count("OOM recovered"));
  EXPECT_EQ(instants["OOM recovered"]["args"]["size"], 512 * MiB);
  ASSERT_TRUE(instants.count("alert: warning fired"));
  EXPECT_EQ(instants["alert: warning fired"]["args"]["allocated"], 830 * MiB);
  // Markers sit in time order: the failure, then its bundle, then the recovery.
  EXPECT_LE(instants["OOM: cuMemAlloc_v2 of 512.00 MiB"]["ts"].get<double>(),
            instants["OOM bundle #1 written"]["ts"].get<double>());
  EXPECT_LE(instants["OOM bundle #1 written"]["ts"].get<double>(), instants["OOM recovered"]["ts"].get<double>());

  uint64_t max_allocated = 0;
  for (const auto& [ts, args] : counter_points(trace, "GPU 0 memory")) {
    max_allocated = std::max(max_allocated, args["allocated"].get<uint64_t>());
  }
  EXPECT_EQ(max_allocated, summary["devices"][0]["allocated_bytes"]["peak"].get<uint64_t>());
  EXPECT_EQ(max_allocated, 830 * MiB);
}

// A run with NVML (the test double) sampling every 10 ms through a 200 ms sleep.
RunResult nvml_run(const Sandbox& box) {
  return ops(box, {"alloc:64M", "sleep:200", "alloc:1M", "free:0"},
             {{"LD_LIBRARY_PATH", Paths::fake_dir() + ":" + GMP_FAKE_NVML_DIR},
              {"FAKE_CUDA_CAPACITY", "1G"},  // as NVML's fake says, so the two views agree
              {"GPUMEMPROF_SAMPLE_MS", "10"},
              {"FAKE_NVML_USED", std::to_string(400 * MiB)},
              {"FAKE_NVML_PROCESS_USED", std::to_string(90 * MiB)}});
}

TEST(Export, PerfettoNvmlCounterChangesOnlyWithTheSamples) {
  Sandbox box;
  RunResult run = nvml_run(box);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string dir = box.only_run_dir();
  const auto summary = read_json_file(dir + "/summary.json");
  ASSERT_GE(summary["devices"][0]["nvml"]["samples"].get<uint64_t>(), 5u);

  RunResult r = run_tool({"export", dir, "--format", "perfetto"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto trace = nlohmann::json::parse(r.out);
  const auto nvml = counter_points(trace, "GPU 0 NVML");
  ASSERT_EQ(nvml.size(), 1u);  // the fake's figures never change: one point for many samples
  EXPECT_EQ(nvml[0].second, nlohmann::json({{"device_used", 400 * MiB}, {"process_used", 90 * MiB}}));
  EXPECT_EQ(counter_points(trace, "GPU 0 memory").back().second["allocated"], 1 * MiB);
}

TEST(Export, TelemetryV2RecordsFollowTheSchema) {
  Sandbox box;
  RunResult run = nvml_run(box);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string dir = box.only_run_dir();
  const auto summary = read_json_file(dir + "/summary.json");
  const auto manifest = read_json_file(dir + "/manifest.json");
  const std::string file = box.dir() + "/telemetry.json";

  RunResult r = run_tool({"export", dir, "--format", "telemetry-v2", "-o", file});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  const auto records = nlohmann::json::parse(slurp(file));
  ASSERT_TRUE(records.is_array());

  const std::map<std::string, std::string> types = {
      {"schema_version", "int"}, {"timestamp_ns", "int"}, {"event_type", "str"}, {"collector", "str"},
      {"sampling_interval_ms", "int"}, {"pid", "int"}, {"host", "str"}, {"job_id", "null"}, {"rank", "int"},
      {"local_rank", "int"}, {"world_size", "int"}, {"device_id", "int"}, {"allocator_allocated_bytes", "int"},
      {"allocator_reserved_bytes", "int"}, {"allocator_active_bytes", "null"}, {"allocator_inactive_bytes", "null"},
      {"allocator_change_bytes", "int"}, {"device_used_bytes", "int"}, {"device_free_bytes", "int|null"},
      {"device_total_bytes", "int"}, {"context", "str"}, {"metadata", "object"}};
  std::vector<nlohmann::json> allocs, frees, samples;
  nlohmann::json last_sample;
  for (const auto& rec : records) {
    ASSERT_EQ(rec.size(), types.size()) << rec;
    for (const auto& [key, type] : types) {
      ASSERT_TRUE(rec.contains(key)) << key;
      const auto& v = rec[key];
      const bool ok = (type == "int" && v.is_number_integer()) || (type == "str" && v.is_string()) ||
                      (type == "null" && v.is_null()) || (type == "object" && v.is_object()) ||
                      (type == "int|null" && (v.is_null() || v.is_number_integer()));
      EXPECT_TRUE(ok) << key << " = " << v;
    }
    EXPECT_EQ(rec["schema_version"], 2);
    EXPECT_EQ(rec["collector"], "gpumemprof.cuda_tracker");
    EXPECT_EQ(rec["sampling_interval_ms"], 10);
    EXPECT_EQ(rec["pid"], manifest["pid"]);
    EXPECT_EQ(rec["host"], manifest["host"]);
    EXPECT_EQ(rec["rank"], 0);
    EXPECT_EQ(rec["local_rank"], 0);
    EXPECT_EQ(rec["world_size"], 1);
    EXPECT_EQ(rec["device_id"], 0);
    EXPECT_EQ(rec["device_total_bytes"], 1ull << 30);  // NVML's, and the fake driver's 1 GiB before it
    EXPECT_GE(rec["timestamp_ns"].get<uint64_t>(), manifest["start_realtime_ns"].get<uint64_t>());
    EXPECT_EQ(rec["metadata"]["backend"], "cuda");
    EXPECT_EQ(rec["metadata"]["sampling_source"], "gpumemprof-shim");
    const std::string type = rec["event_type"];
    if (type != "sample" && !last_sample.is_null()) {
      // NVML's figure moved by this process's reserved bytes since that sample.
      const uint64_t expected = 400 * MiB + rec["allocator_reserved_bytes"].get<uint64_t>() -
                                last_sample["allocator_reserved_bytes"].get<uint64_t>();
      EXPECT_EQ(rec["device_used_bytes"], expected) << rec;
      EXPECT_EQ(rec["device_free_bytes"], (1ull << 30) - expected) << rec;
      EXPECT_EQ(rec["metadata"]["device_view_source"], "nvml");
    }
    if (type == "sample") last_sample = rec;
    if (type == "allocation") allocs.push_back(rec);
    else if (type == "deallocation") frees.push_back(rec);
    else if (type == "sample") samples.push_back(rec);
    else ADD_FAILURE() << "unexpected event_type " << type;
  }
  ASSERT_EQ(allocs.size(), 2u);
  ASSERT_EQ(frees.size(), 1u);
  EXPECT_EQ(allocs[0]["allocator_allocated_bytes"], 64 * MiB);
  EXPECT_EQ(allocs[0]["allocator_change_bytes"], 64 * MiB);
  EXPECT_EQ(allocs[1]["allocator_allocated_bytes"], 65 * MiB);
  EXPECT_EQ(allocs[1]["allocator_change_bytes"], 1 * MiB);
  EXPECT_EQ(frees[0]["allocator_change_bytes"], -static_cast<int64_t>(64 * MiB));
  EXPECT_EQ(frees[0]["allocator_allocated_bytes"], summary["devices"][0]["allocated_bytes"]["current"]);
  EXPECT_EQ(frees[0]["allocator_reserved_bytes"], 1 * MiB);
  // The 200 ms sleep holds many 10 ms samples: the later records see NVML's view of the device.
  EXPECT_EQ(samples.size(), summary["devices"][0]["nvml"]["samples"].get<size_t>());
  ASSERT_GE(samples.size(), 5u);
  for (const auto& s : samples) {
    EXPECT_EQ(s["device_used_bytes"], 400 * MiB);
    EXPECT_EQ(s["device_free_bytes"], (1ull << 30) - 400 * MiB);
    EXPECT_EQ(s["allocator_change_bytes"], 0);
    EXPECT_EQ(s["metadata"]["nvml_process_used_bytes"], 90 * MiB);
    EXPECT_EQ(s["metadata"]["device_view_source"], "nvml");
  }
  EXPECT_FALSE(last_sample.is_null());

  // The schema's own rules, checked by an independent Python validator; and the validator
  // itself rejects what the schema rejects.
  const std::string py = python3();
  if (py.empty()) GTEST_SKIP() << "python3 not found; the schema validator did not run";
  const std::string validator = std::string(GMP_SOURCE_DIR) + "/tests/integration/validate_telemetry_v2.py";
  RunResult v = box.run({py, validator, file}, {{"LD_PRELOAD", "<unset>"}});
  EXPECT_EQ(v.exit_code, 0) << v.out << v.err;
  EXPECT_EQ(v.out, "ok " + std::to_string(records.size()) + "\n");
  auto bad = records;
  bad[0]["unexpected"] = 1;
  bad[1]["device_used_bytes"] = true;
  std::ofstream(box.dir() + "/bad.json") << bad.dump();
  RunResult vb = box.run({py, validator, box.dir() + "/bad.json"}, {{"LD_PRELOAD", "<unset>"}});
  EXPECT_EQ(vb.exit_code, 1);
  EXPECT_NE(vb.out.find("record 0: unknown fields ['unexpected']"), std::string::npos) << vb.out;
  EXPECT_NE(vb.out.find("record 1: device_used_bytes must be an integer"), std::string::npos) << vb.out;
}

TEST(Export, TelemetryV2TakesTheRankFromTheManifest) {
  Sandbox box;
  ASSERT_EQ(ops(box, {"alloc:1M"}, {{"RANK", "2"}}).exit_code, 0);
  const std::string dir = box.only_run_dir();

  RunResult inferred = run_tool({"export", dir, "--format", "telemetry-v2"});
  ASSERT_EQ(inferred.exit_code, 0) << inferred.err;
  EXPECT_NE(inferred.err.find("world size is not recorded; exported world_size 3 (pass --world-size N)"),
            std::string::npos)
      << inferred.err;
  auto records = nlohmann::json::parse(inferred.out);
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0]["rank"], 2);
  EXPECT_EQ(records[0]["local_rank"], 2);
  EXPECT_EQ(records[0]["world_size"], 3);

  RunResult given = run_tool({"export", dir, "--format", "telemetry-v2", "--world-size", "8"});
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_EQ(given.err, "");
  EXPECT_EQ(nlohmann::json::parse(given.out)[0]["world_size"], 8);

  RunResult contradicting = run_tool({"export", dir, "--format", "telemetry-v2", "--world-size=2"});
  EXPECT_EQ(contradicting.exit_code, 2);
  EXPECT_EQ(contradicting.err, "gpumemprof export: --world-size 2 is not above the run's rank 2\n");
}

TEST(Export, TruncatedTraceExportsTheWholeEventsWithANote) {
  Sandbox box;
  ASSERT_EQ(ops(box, {"alloc:1M", "alloc:2M"}).exit_code, 0);
  const std::string dir = box.only_run_dir();
  const size_t whole = trace_events(dir).size();
  std::ofstream(dir + "/trace.gmpt", std::ios::app) << std::string(10, '\0');  // a write cut short
  ASSERT_EQ(unlink((dir + "/summary.json").c_str()), 0);                        // as after SIGKILL

  RunResult r = run_tool({"export", dir, "--format", "csv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_of(r.out).size(), whole + 1);
  EXPECT_EQ(r.err, "gpumemprof export: note: " + dir + "/trace.gmpt ends in a partial 10-byte record (the process was "
                   "killed mid-write); exported the " + std::to_string(whole) + " whole events before it\n");
  EXPECT_NE(lines_of(r.out).back().find(",0,3145728,3145728"), std::string::npos) << lines_of(r.out).back();
}

TEST(Export, FileStdoutAndDashAgree) {
  Sandbox box;
  ASSERT_EQ(ops(box, {"alloc:1M", "free_all"}).exit_code, 0);
  const std::string dir = box.only_run_dir();
  for (const char* format : {"csv", "jsonl", "perfetto", "telemetry-v2"}) {
    RunResult plain = run_tool({"export", dir, "--format", format});
    RunResult dash = run_tool({"export", dir, "--format", format, "-o", "-"});
    const std::string file = box.dir() + "/out." + format;
    RunResult to_file = run_tool({"export", dir, "--format=" + std::string(format), "--output=" + file});
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    ASSERT_EQ(dash.exit_code, 0) << dash.err;
    ASSERT_EQ(to_file.exit_code, 0) << to_file.err;
    EXPECT_FALSE(plain.out.empty());
    EXPECT_EQ(plain.out, dash.out) << format;
    EXPECT_EQ(to_file.out, "");
    EXPECT_EQ(slurp(file), plain.out) << format;
    EXPECT_NE(to_file.err.find("wrote " + file + " (" + format), std::string::npos) << to_file.err;
  }
}

// Many events: the output crosses the writer's flush boundary many times and nothing is lost.
TEST(Export, LargeTraceStreamsEveryEvent) {
  Sandbox box;
  RunResult run = box.run({Paths::bin("prog_stress"), "4", "5000"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string dir = box.only_run_dir();
  const auto summary = read_json_file(dir + "/summary.json");
  const uint64_t events = trace_events(dir).size();
  ASSERT_GT(events, 50000u);

  RunResult csv = run_tool({"export", dir, "--format", "csv"});
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  const auto lines = lines_of(csv.out);
  ASSERT_EQ(lines.size(), events + 1);
  uint64_t max_allocated = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto c = csv_cells(lines[i]);
    if (!c[14].empty()) max_allocated = std::max<uint64_t>(max_allocated, std::stoull(c[14]));
  }
  EXPECT_EQ(max_allocated, summary["devices"][0]["allocated_bytes"]["peak"].get<uint64_t>());

  RunResult perfetto = run_tool({"export", dir, "--format", "perfetto"});
  ASSERT_EQ(perfetto.exit_code, 0) << perfetto.err;
  const auto trace = nlohmann::json::parse(perfetto.out);
  const auto points = counter_points(trace, "GPU 0 memory");
  EXPECT_EQ(points.back().second["allocated"], 0);
}

}  // namespace
}  // namespace gmp::test
