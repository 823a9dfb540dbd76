// `gpumemprof oom` on bundles the recorder wrote for real OOMs on the fake driver (1 GiB devices):
// exact figures in the text and --json explanations, run directories with several bundles and
// with none, unreadable input, and a golden text output.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "harness.h"
#include "oom_bundle_reader.h"

namespace gmp::test {
namespace {

constexpr uint64_t MiB = 1 << 20;

std::string first_bundle(const std::string& run) {
  auto bundles = reader::list_oom_bundles(run + "/oom");
  EXPECT_FALSE(bundles.empty()) << run;
  return bundles.empty() ? std::string() : bundles.front();
}

// prog_ops on a 1 GiB fake device; the run must succeed.
std::string profile(const Sandbox& box, std::vector<std::string> ops, std::map<std::string, std::string> env = {}) {
  ops.insert(ops.begin(), Paths::bin("prog_ops"));
  env.emplace("FAKE_CUDA_CAPACITY", "1G");
  RunResult r = box.run(ops, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return box.only_run_dir();
}

// Linear 320 MiB live (256 + 64), a pool holding 300 MiB reserved with nothing allocated, then a
// 512 MiB request that fails twice: free is 1024 - 320 - 300 = 404 MiB.
const std::vector<std::string> kFragmented = {"alloc:256M", "alloc:128M", "alloc:64M",     "free:1",
                                              "alloc_async:300M", "free:3", "expect_fail:512M", "expect_fail:512M"};

nlohmann::json parse(const std::string& text) { return nlohmann::json::parse(text, nullptr, false); }

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

std::vector<std::string> advice_ids(const nlohmann::json& bundle) {
  std::vector<std::string> ids;
  for (const auto& a : bundle["advice"]) ids.push_back(a["id"].get<std::string>());
  return ids;
}

void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void truncate_half(const std::string& path) {
  const std::string text = read_file(path);
  ASSERT_GT(text.size(), 10u) << path;
  write_file(path, text.substr(0, text.size() / 2));
}

bool one_line(const std::string& s) { return !s.empty() && s.find('\n') == s.size() - 1; }

// Bundles keep ages in whole milliseconds: the text says "under 1 ms" or "N ms", never a made-up
// fraction of a microsecond.
TEST(OomCommand, AgesAreWholeMilliseconds) {
  Sandbox box;
  const std::string run = profile(box, {"alloc:256M", "alloc:64M", "sleep:20", "alloc:128M", "expect_fail:900M"});
  RunResult r = run_tool({"oom", run});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::regex age(", age (under 1 ms|[1-9][0-9]{0,2} ms|[0-9]+\\.[0-9]{3} s)(\\n|,)");
  size_t ages = 0;
  for (size_t at = r.out.find(", age "); at != std::string::npos; at = r.out.find(", age ", at + 1)) {
    ++ages;
    EXPECT_TRUE(std::regex_search(r.out.substr(at, 40), age)) << r.out.substr(at, 40);
  }
  EXPECT_EQ(ages, 3u) << r.out;
  EXPECT_EQ(r.out.find("\u00b5s"), std::string::npos) << r.out;
}

TEST(OomCommand, ExplainsABundleWithExactFigures) {
  Sandbox box;
  const std::string run = profile(box, kFragmented);
  const std::string bundle = first_bundle(run);

  RunResult text = run_tool({"oom", bundle});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(text.err.empty()) << text.err;
  const std::string& t = text.out;
  EXPECT_TRUE(contains(t, "cuMemAlloc_v2 asked for 512.00 MiB (536870912 bytes) of linear memory on device 0 (Fake CUDA Device 0)")) << t;
  EXPECT_TRUE(contains(t, "allocated 320.00 MiB, reserved 620.00 MiB")) << t;
  EXPECT_TRUE(contains(t, "pool      0 B           300.00 MiB  (300.00 MiB reserved but unused: trimming the pool releases it)")) << t;
  EXPECT_TRUE(contains(t, "free per the driver (cuMemGetInfo): 404.00 MiB of 1.00 GiB total; the request was 108.00 MiB more than that")) << t;
  EXPECT_TRUE(contains(t, "not recovered: 2 failed allocations in this episode (episode 1)")) << t;
  EXPECT_TRUE(contains(t, "Largest live allocations on device 0 (2 of 2, from allocations.json)")) << t;
  EXPECT_TRUE(contains(t, "     1.  256.00 MiB  linear   cuMemAlloc_v2, thread ")) << t;
  EXPECT_TRUE(contains(t, "     2.   64.00 MiB  linear   cuMemAlloc_v2, thread ")) << t;
  EXPECT_TRUE(contains(t, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")) << t;

  RunResult js = run_tool({"oom", bundle, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto j = parse(js.out);
  ASSERT_TRUE(j.is_object()) << js.out;
  EXPECT_EQ(j["source"]["type"], "bundle");
  ASSERT_EQ(j["bundles"].size(), 1u);
  const auto& b = j["bundles"][0];
  EXPECT_EQ(b["request"]["size"], 512 * MiB);
  EXPECT_EQ(b["request"]["api"], "cuMemAlloc_v2");
  EXPECT_EQ(b["request"]["device"], 0);
  EXPECT_EQ(b["process"]["allocated_bytes"], 320 * MiB);
  EXPECT_EQ(b["process"]["reserved_bytes"], 620 * MiB);
  EXPECT_EQ(b["process"]["by_kind"]["linear"]["allocated"], 320 * MiB);
  EXPECT_EQ(b["process"]["by_kind"]["pool"]["reserved"], 300 * MiB);
  EXPECT_EQ(b["process"]["by_kind"]["pool"]["reserved_unused"], 300 * MiB);
  EXPECT_EQ(b["process"]["live_on_device"]["bytes"], 320 * MiB);
  EXPECT_EQ(b["device"]["free_bytes"], 404 * MiB);
  EXPECT_EQ(b["device"]["total_bytes"], 1024 * MiB);
  EXPECT_EQ(b["device"]["shortfall_bytes"], 108 * MiB);
  EXPECT_EQ(b["other_processes"]["source"], "estimate");
  EXPECT_EQ(b["other_processes"]["bytes"], 0);
  EXPECT_EQ(b["outcome"]["recovered"], false);
  EXPECT_EQ(b["outcome"]["failures"], 2);
  ASSERT_EQ(b["largest_live"].size(), 2u);
  EXPECT_EQ(b["largest_live"][0]["size"], 256 * MiB);
  EXPECT_EQ(b["largest_live"][0]["kind"], "linear");
  EXPECT_EQ(b["largest_live"][1]["size"], 64 * MiB);
  EXPECT_EQ(advice_ids(b), std::vector<std::string>{"fragmentation"});
}

TEST(OomCommand, HoldersShowTheirCallSiteFromTheRunsAttribution) {
  Sandbox box;
  const std::string run = profile(box, {"alloc:256M", "expect_fail:2G"}, {{"GPUMEMPROF_STACKS", "16"}});
  const std::string bundle = first_bundle(run);
  const auto allocations = read_json_file(bundle + "/allocations.json");
  ASSERT_EQ(allocations.size(), 1u);
  const uint64_t stack = allocations[0]["stack_id"].get<uint64_t>();
  ASSERT_NE(stack, 0u);
  // The bundle where the shim put it, and the run directory: the holder's site, symbolised.
  const std::string site = "at (anonymous namespace)::Runner::alloc(";
  for (const std::string& target : {bundle, run}) {
    RunResult text = run_tool({"oom", target});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_TRUE(contains(text.out, "cuMemAlloc_v2, thread ")) << text.out;
    EXPECT_TRUE(contains(text.out, "\n          " + site)) << text.out;
    EXPECT_TRUE(contains(text.out, "prog_ops.cpp:")) << text.out;
    RunResult js = run_tool({"oom", target, "--json"});
    const auto holder = parse(js.out)["bundles"][0]["largest_live"][0];
    EXPECT_EQ(holder["stack_id"], stack);
    EXPECT_EQ(holder["site"].get<std::string>().rfind(site.substr(3), 0), 0u) << holder.dump();
  }
  // A bundle copied away from its run directory has no attribution beside it: the stack id.
  const std::string moved = box.dir() + "/moved_bundle";
  ASSERT_EQ(std::system(("cp -r '" + bundle + "' '" + moved + "'").c_str()), 0);
  RunResult text = run_tool({"oom", moved});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, ", stack " + std::to_string(stack) + "\n")) << text.out;
  EXPECT_TRUE(parse(run_tool({"oom", moved, "--json"}).out)["bundles"][0]["largest_live"][0]["site"].is_null());
}

TEST(OomCommand, RecoveredEpisodeAndOtherProcessesFromNvml) {
  Sandbox box;
  const std::string run = profile(box, {"alloc:512M", "sleep:200", "expect_fail:768M", "free:0", "retry_ok:768M"},
                                  {{"LD_LIBRARY_PATH", Paths::fake_dir() + ":" + GMP_FAKE_NVML_DIR},
                                   {"GPUMEMPROF_SAMPLE_MS", "10"},
                                   {"FAKE_NVML_USED", std::to_string(900 * MiB)},
                                   {"FAKE_NVML_PROCESS_USED", std::to_string(512 * MiB)}});
  RunResult text = run_tool({"oom", run});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "out-of-memory failures 1, bundles written 1, recovered episodes 1")) << text.out;
  EXPECT_TRUE(contains(text.out, "recovered: a later cuMemAlloc_v2 of 768.00 MiB succeeded")) << text.out;
  EXPECT_TRUE(contains(text.out, "1 failed allocation in this episode")) << text.out;
  EXPECT_TRUE(contains(text.out, "other processes: 388.00 MiB, per NVML's latest sample before the failure:\n"
                                 "    900.00 MiB used on the device, 512.00 MiB of it by this process")) << text.out;

  RunResult js = run_tool({"oom", "--json", run});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto j = parse(js.out);
  ASSERT_EQ(j["bundles"].size(), 1u) << js.out;
  const auto& b = j["bundles"][0];
  EXPECT_EQ(b["request"]["size"], 768 * MiB);
  EXPECT_EQ(b["process"]["allocated_bytes"], 512 * MiB);
  EXPECT_EQ(b["device"]["free_bytes"], 512 * MiB);
  EXPECT_EQ(b["outcome"]["recovered"], true);
  EXPECT_EQ(b["outcome"]["failures"], 1);
  EXPECT_EQ(b["outcome"]["recovered_by"]["size"], 768 * MiB);
  EXPECT_EQ(b["other_processes"]["source"], "nvml_sample");
  EXPECT_EQ(b["other_processes"]["bytes"], 388 * MiB);
  EXPECT_EQ(b["largest_live"][0]["size"], 512 * MiB);
  EXPECT_EQ(advice_ids(b)[0], "recovered");
  EXPECT_EQ(j["run"]["recovered"], 1);
}

TEST(OomCommand, ARequestLargerThanTheDeviceCannotFit) {
  Sandbox box;
  const std::string run = profile(box, {"alloc:256M", "expect_fail:2G"});
  RunResult js = run_tool({"oom", first_bundle(run), "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const auto b = parse(js.out)["bundles"][0];
  EXPECT_EQ(b["request"]["size"], 2048 * MiB);
  EXPECT_EQ(b["device"]["free_bytes"], 768 * MiB);
  EXPECT_EQ(b["process"]["reserved_bytes"], 256 * MiB);
  EXPECT_EQ(advice_ids(b), std::vector<std::string>{"cannot_fit"});
  EXPECT_TRUE(contains(b["advice"][0]["text"].get<std::string>(),
                       "The request (2.00 GiB) is larger than the device's total memory (1.00 GiB): it cannot fit on "
                       "this device at all"));
  RunResult text = run_tool({"oom", first_bundle(run)});  // the same advice, wrapped at 100 columns
  EXPECT_TRUE(contains(text.out, "What to try\n  - The request (2.00 GiB) is larger than the device's total memory (1.00 GiB)"))
      << text.out;
}

TEST(OomCommand, RunDirectoryWithTwoBundlesExplainsBothOldestFirst) {
  Sandbox box;
  // Episode 1: 512 MiB fails with 768 MiB held, recovers after a free. Episode 2: 256 MiB fails
  // with 900 MiB held and stays failed.
  const std::string run = profile(box, {"alloc:768M", "expect_fail:512M", "free:0", "retry_ok:512M", "free:1",
                                        "alloc:900M", "expect_fail:256M"});
  ASSERT_EQ(reader::list_oom_bundles(run + "/oom").size(), 2u);

  RunResult text = run_tool({"oom", run});
  ASSERT_EQ(text.exit_code, 0) << text.err;
  const std::string& t = text.out;
  EXPECT_TRUE(contains(t, "out-of-memory failures 2, bundles written 2, recovered episodes 1")) << t;
  const size_t first = t.find("=== bundle 1 of 2 ===");
  const size_t second = t.find("=== bundle 2 of 2 ===");
  ASSERT_NE(first, std::string::npos) << t;
  ASSERT_NE(second, std::string::npos) << t;
  const std::string one = t.substr(first, second - first), two = t.substr(second);
  EXPECT_TRUE(contains(one, "asked for 512.00 MiB")) << one;
  EXPECT_TRUE(contains(one, "recovered: a later cuMemAlloc_v2 of 512.00 MiB succeeded")) << one;
  EXPECT_TRUE(contains(two, "asked for 256.00 MiB")) << two;
  EXPECT_TRUE(contains(two, "not recovered: 1 failed allocation in this episode (episode 2)")) << two;
  EXPECT_TRUE(contains(two, "     1.  900.00 MiB  linear")) << two;

  RunResult js = run_tool({"oom", run, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto j = parse(js.out);
  EXPECT_EQ(j["source"]["type"], "run_directory");
  EXPECT_EQ(j["run"]["oom_failures"], 2);
  EXPECT_EQ(j["run"]["bundles_written"], 2);
  ASSERT_EQ(j["bundles"].size(), 2u);
  EXPECT_EQ(j["bundles"][0]["request"]["size"], 512 * MiB);
  EXPECT_EQ(j["bundles"][0]["outcome"]["recovered"], true);
  EXPECT_EQ(j["bundles"][0]["process"]["allocated_bytes"], 768 * MiB);
  EXPECT_EQ(j["bundles"][0]["device"]["free_bytes"], 256 * MiB);
  EXPECT_EQ(j["bundles"][1]["request"]["size"], 256 * MiB);
  EXPECT_EQ(j["bundles"][1]["outcome"]["recovered"], false);
  EXPECT_EQ(j["bundles"][1]["process"]["allocated_bytes"], 900 * MiB);
  EXPECT_EQ(j["bundles"][1]["device"]["free_bytes"], 124 * MiB);
  EXPECT_EQ(j["bundles"][1]["largest_live"][0]["size"], 900 * MiB);

  // The oom/ directory itself is accepted too, with the same bundles in the same order.
  RunResult dir = run_tool({"oom", run + "/oom", "--json"});
  ASSERT_EQ(dir.exit_code, 0) << dir.err;
  auto d = parse(dir.out);
  EXPECT_EQ(d["source"]["type"], "bundle_directory");
  ASSERT_EQ(d["bundles"].size(), 2u);
  EXPECT_EQ(d["bundles"][0]["request"]["size"], 512 * MiB);
}

TEST(OomCommand, BundlesInAConfiguredOomDirectoryAreFound) {
  Sandbox box;
  const std::string shared = box.dir() + "/shared-oom";
  const std::string run = profile(box, {"alloc:256M", "expect_fail:2G"}, {{"GPUMEMPROF_OOM_DIR", shared}});
  ASSERT_EQ(reader::list_oom_bundles(shared).size(), 1u);
  RunResult js = run_tool({"oom", run, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto j = parse(js.out);
  ASSERT_EQ(j["bundles"].size(), 1u) << js.out;
  EXPECT_EQ(j["bundles"][0]["request"]["size"], 2048 * MiB);
  EXPECT_EQ(j["bundles"][0]["bundle"]["path"].get<std::string>().rfind(shared + "/oom_dump_", 0), 0u);
}

// Issue 28: a shared OOM directory (mode 1777) also holds another user's bundle of a process that
// had the same pid (in another container): it is not the run's. Retention counts only the user's
// own bundles; the command shows only them too.
TEST(OomCommand, AnotherUsersBundleOfTheSamePidInASharedDirectoryIsNotTheRuns) {
  SKIP_UNLESS_ROOT();
  Sandbox box;
  const std::string shared = box.dir() + "/shared-oom";
  ASSERT_EQ(chmod(box.dir().c_str(), 0755), 0);
  ASSERT_EQ(mkdir(shared.c_str(), 0700), 0);
  ASSERT_EQ(chmod(shared.c_str(), 01777), 0);
  const std::string run = profile(box, {"alloc:256M", "expect_fail:2G"}, {{"GPUMEMPROF_OOM_DIR", shared}});
  const std::vector<std::string> ours = reader::list_oom_bundles(shared);
  ASSERT_EQ(ours.size(), 1u);
  // Theirs: the same files under the name of that pid's second bundle, written by them.
  std::map<std::string, std::string> files;
  for (const char* name : {"manifest.json", "metadata.json", "events.json", "allocations.json", "environment.json"}) {
    std::ifstream in(ours[0] + "/" + name);
    files[name] = std::string(std::istreambuf_iterator<char>(in), {});
  }
  const std::string theirs = ours[0].substr(0, ours[0].rfind('_') + 1) + "2";
  ASSERT_EQ(as_other_user([&] {
              if (mkdir(theirs.c_str(), 0755) != 0) return 1;
              for (const auto& [name, text] : files) {
                std::ofstream out(theirs + "/" + name);
                if (!(out << text)) return 1;
              }
              return 0;
            }),
            0);
  RunResult js = run_tool({"oom", run, "--json"});
  ASSERT_EQ(js.exit_code, 0) << js.err;
  auto j = parse(js.out);
  ASSERT_EQ(j["bundles"].size(), 1u) << js.out;
  EXPECT_EQ(j["bundles"][0]["bundle"]["path"], ours[0]);
  // The directory itself, given as such, is everyone's: both are listed.
  RunResult all = run_tool({"oom", shared, "--json"});
  ASSERT_EQ(all.exit_code, 0) << all.err;
  EXPECT_EQ(parse(all.out)["bundles"].size(), 2u);
}

TEST(OomCommand, RunWithoutOomSaysSo) {
  Sandbox box;
  const std::string run = profile(box, {"alloc:1M"});
  RunResult text = run_tool({"oom", run});
  EXPECT_EQ(text.exit_code, 0) << text.err;
  EXPECT_TRUE(contains(text.out, "out-of-memory failures 0, bundles written 0, recovered episodes 0")) << text.out;
  EXPECT_TRUE(contains(text.out, "No out-of-memory failure in this run: nothing to explain.")) << text.out;
  RunResult js = run_tool({"oom", run, "--json"});
  EXPECT_EQ(js.exit_code, 0) << js.err;
  auto j = parse(js.out);
  EXPECT_EQ(j["had_oom"], false);
  EXPECT_TRUE(j["bundles"].empty());
  EXPECT_EQ(j["message"], "No out-of-memory failure in this run: nothing to explain.");
}

// The recorder refuses a symlinked OOM directory, so the failure left no bundle: the command says
// so and lists the failed request from the summary.
TEST(OomCommand, FailuresWithoutABundleAreListedFromTheSummary) {
  Sandbox box;
  const std::string target = box.dir() + "/elsewhere", link = box.dir() + "/oom-link";
  ASSERT_EQ(mkdir(target.c_str(), 0700), 0);
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  const std::string run = profile(box, {"alloc:256M", "expect_fail:2G"}, {{"GPUMEMPROF_OOM_DIR", link}});
  RunResult r = run_tool({"oom", run});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "The run had 1 out-of-memory failure(s) but no bundle is left to explain")) << r.out;
  EXPECT_TRUE(contains(r.out, "Failed requests (summary.json):\n  cuMemAlloc_v2 of 2.00 GiB on device 0, ")) << r.out;
  RunResult js = run_tool({"oom", run, "--json"});
  auto j = parse(js.out);
  EXPECT_EQ(j["had_oom"], true);
  EXPECT_TRUE(j["bundles"].empty());
  EXPECT_EQ(j["run"]["oom_failures"], 1);
}

TEST(OomCommand, TruncatedMetadataIsAOneLineError) {
  Sandbox box;
  const std::string run = profile(box, {"alloc:256M", "expect_fail:2G"});
  const std::string bundle = first_bundle(run);
  truncate_half(bundle + "/metadata.json");
  RunResult r = run_tool({"oom", bundle});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_EQ(r.err.rfind("gpumemprof oom: " + bundle + "/metadata.json is not valid JSON (parse error at line ", 0), 0u) << r.err;
  EXPECT_TRUE(contains(r.err, "expected the JSON object of an OOM bundle's metadata")) << r.err;

  // Through the run directory: the run's header is printed, the bundle is named on stderr, exit 2.
  RunResult viarun = run_tool({"oom", run});
  EXPECT_EQ(viarun.exit_code, 2);
  EXPECT_TRUE(contains(viarun.out, "out-of-memory failures 1")) << viarun.out;
  EXPECT_TRUE(contains(viarun.err, "metadata.json is not valid JSON")) << viarun.err;
}

TEST(OomCommand, MetadataWithoutARequestIsAnError) {
  Sandbox box;
  const std::string run = profile(box, {"alloc:256M", "expect_fail:2G"});
  const std::string bundle = first_bundle(run);
  write_file(bundle + "/metadata.json", R"({"schema_version": 1, "request": {"api": "cuMemAlloc_v2", "size": "big"}})");
  RunResult r = run_tool({"oom", bundle});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(one_line(r.err)) << r.err;
  EXPECT_TRUE(contains(r.err, "metadata.json has no request size")) << r.err;
}

TEST(OomCommand, ACorruptOptionalFileIsANote) {
  Sandbox box;
  const std::string run = profile(box, {"alloc:256M", "alloc:64M", "expect_fail:2G"});
  const std::string bundle = first_bundle(run);
  truncate_half(bundle + "/allocations.json");
  write_file(bundle + "/environment.json", "[1, 2");
  RunResult r = run_tool({"oom", bundle});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "  - allocations.json is not valid JSON (")) << r.out;
  EXPECT_TRUE(contains(r.out, "  - environment.json is not valid JSON (")) << r.out;
  // The largest holders then come from metadata.json's largest_live.
  EXPECT_TRUE(contains(r.out, "Largest live allocations on device 0 (2 of 2, from metadata.json's 20 largest)")) << r.out;
  EXPECT_TRUE(contains(r.out, "     1.  256.00 MiB  linear")) << r.out;
}

// Replaces `token` where it is not part of a longer number.
std::string replace_number(std::string s, const std::string& token, const std::string& with) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (size_t at = s.find(token); at != std::string::npos; at = s.find(token, at)) {
    const bool before = at > 0 && digit(s[at - 1]);
    const bool after = at + token.size() < s.size() && digit(s[at + token.size()]);
    if (before || after) {
      at += token.size();
      continue;
    }
    s.replace(at, token.size(), with);
    at += with.size();
  }
  return s;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// The full text for kFragmented, with what differs between runs masked: the sandbox and build
// paths, the pid (prog_ops allocates on its main thread, so the thread id is the pid too), the
// bundle's timestamps, and durations (times since start and ages). Stack capture is off, so the
// output does not depend on the default. Set GMP_UPDATE_GOLDEN=1 to rewrite the file.
TEST(OomCommand, GoldenTextOutput) {
  Sandbox box;
  const std::string run = profile(box, kFragmented, {{"GPUMEMPROF_STACKS", "0"}});
  ScopedColumns columns("100");  // the advice wrapped as the golden file has it
  RunResult r = run_tool({"oom", run});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto manifest = read_json_file(run + "/manifest.json");
  const std::string pid = std::to_string(manifest["pid"].get<uint64_t>());
  const auto metadata = read_json_file(first_bundle(run) + "/metadata.json");
  ASSERT_EQ(std::to_string(metadata["request"]["thread"].get<uint64_t>()), pid);

  std::string masked = r.out;
  masked = replace_all(masked, box.dir(), "<SANDBOX>");
  masked = replace_all(masked, Paths::bin(""), "<BIN>/");
  masked = replace_number(masked, pid, "<PID>");
  masked = std::regex_replace(masked, std::regex("[0-9]{8}T[0-9]{6}Z"), "<STAMP>");
  masked = std::regex_replace(masked, std::regex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z"), "<UTC>");
  masked = std::regex_replace(masked, std::regex("[0-9]+\\.[0-9]+ (m|\xc2\xb5)?s\\b"), "<TIME>");
  masked = std::regex_replace(masked, std::regex("age (under 1 ms|[0-9]+ ms)"), "age <TIME>");

  const std::string golden_path = std::string(GMP_SOURCE_DIR) + "/tests/integration/golden/oom_explain.txt";
  if (const char* update = getenv("GMP_UPDATE_GOLDEN"); update != nullptr && std::string(update) == "1") {
    write_file(golden_path, masked);
  }
  EXPECT_EQ(masked, read_file(golden_path)) << "to accept the new output: GMP_UPDATE_GOLDEN=1 integration_tests "
                                               "--gtest_filter=OomCommand.GoldenTextOutput";
}

}  // namespace
}  // namespace gmp::test
