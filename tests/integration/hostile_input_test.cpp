// The gpumemprof command on hostile input (docs/testing.md, "What the tools refuse"): whatever sits
// in a run directory or an OOM bundle, whatever the path and wherever stdout goes, every command
// either does its job (a field of the wrong type reads as absent) or exits 2 with exactly one line
// on stderr. It never crashes and never hangs: every run here is killed, and fails, after 20 s.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "harness.h"
#include "oom_bundle_reader.h"

namespace gmp::test {
namespace {

namespace fs = std::filesystem;
using Args = std::vector<std::string>;

constexpr int kToolTimeoutS = 20;

// prog_ops on a 1 GiB device with call stacks: 100M and 200M allocated, a 2 GiB request refused
// (one OOM bundle), the 100M freed. Every file a run directory can hold is there.
std::string base_run(const Sandbox& box) {
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:100M", "alloc:200M", "expect_fail:2G", "free:0"},
                        {{"FAKE_CUDA_CAPACITY", "1G"}, {"GPUMEMPROF_STACKS", "8"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string dir = box.only_run_dir();
  for (const char* f : {"/manifest.json", "/summary.json", "/trace.gmpt", "/attribution.jsonl"}) {
    EXPECT_TRUE(exists(dir + f)) << dir + f;
  }
  return dir;
}

std::string only_bundle(const std::string& run) {
  const auto bundles = reader::list_oom_bundles(run + "/oom");
  EXPECT_EQ(bundles.size(), 1u) << run;
  return bundles.empty() ? std::string() : bundles.front();
}

// A fresh copy of `run` under `box`, named `name`, for one case to spoil.
std::string copy_of(const Sandbox& box, const std::string& run, const std::string& name) {
  const std::string to = box.dir() + "/" + name;
  fs::copy(run, to, fs::copy_options::recursive);
  return to;
}

void write_file(const std::string& path, const std::string& text) {
  fs::remove(path);
  std::ofstream(path, std::ios::binary) << text;
}

void make_fifo(const std::string& path) {
  fs::remove(path);
  ASSERT_EQ(mkfifo(path.c_str(), 0600), 0) << path;
}

// `file` with the JSON value at `pointer` replaced by `value`.
void set_field(const std::string& file, const std::string& pointer, const nlohmann::json& value) {
  nlohmann::json j = read_json_file(file);
  j[nlohmann::json::json_pointer(pointer)] = value;
  write_file(file, j.dump());
}

std::string joined(const Args& args) {
  std::string s;
  for (const auto& a : args) s += (s.empty() ? "" : " ") + a;
  return s;
}

size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

// Every command that reads a run directory, on `dir`.
std::vector<Args> run_commands(const std::string& dir, const std::string& scratch) {
  return {{"report", dir},
          {"report", dir, "--json"},
          {"diff", dir, dir},
          {"diff", dir, dir, "--json"},
          {"html", dir, "-o", scratch + "/report.html"},
          {"export", dir, "--format", "csv", "-o", scratch + "/out.csv"},
          {"export", dir, "--format", "jsonl"},
          {"export", dir, "--format", "perfetto"},
          {"export", dir, "--format", "telemetry-v2"},
          {"export", dir, "--format", "folded"},
          {"check", dir, "--max-peak", "1G"}};
}
std::vector<Args> oom_commands(const std::string& path) { return {{"oom", path}, {"oom", path, "--json"}}; }
std::vector<Args> all_commands(const std::string& dir, const std::string& scratch) {
  auto all = run_commands(dir, scratch);
  for (auto& a : oom_commands(dir)) all.push_back(a);
  return all;
}

// Input a command cannot use: status 2, one line on stderr naming the command and saying `why`,
// nothing on stdout and no output file left behind.
void expect_refused(const Args& args, const std::string& why, const std::string& scratch) {
  SCOPED_TRACE(joined(args));
  RunResult r = run_tool(args, kToolTimeoutS);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(lines(r.err), 1u) << r.err;
  const bool command = !args.empty() && args[0][0] != '-' && args[0] != "frobnicate";
  EXPECT_EQ(r.err.rfind(command ? "gpumemprof " + args[0] + ": " : "gpumemprof: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(why), std::string::npos) << "expected '" << why << "' in: " << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_FALSE(exists(scratch + "/report.html"));
  EXPECT_FALSE(exists(scratch + "/out.csv"));
}

// Input a command can use: status 0, no crash.
RunResult expect_done(const Args& args) {
  SCOPED_TRACE(joined(args));
  RunResult r = run_tool(args, kToolTimeoutS);
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r;
}

// 100,000 nested arrays, valid JSON: destroying the parsed value recursed until the stack overflowed.
const std::string kDeep = std::string(100000, '[') + std::string(100000, ']');
const std::string kTooDeep = "is not valid JSON (nests arrays and objects deeper than 64 levels)";

struct RefusedCase {
  std::string name;
  std::function<void(const std::string& dir)> spoil;  // makes the copy of the run hostile
  std::string why;                                    // what every command's line must say
  // The commands, on the spoiled copy and a scratch directory for outputs.
  std::function<std::vector<Args>(const std::string& dir, const std::string& scratch)> commands = all_commands;
};

TEST(HostileInput, UnusableInputIsStatus2WithOneLine) {
  Sandbox box;
  const std::string run = base_run(box);
  const std::string scratch = box.dir() + "/scratch";
  fs::create_directory(scratch);
  auto without_summary = [](const std::string& dir) { fs::remove(dir + "/summary.json"); };
  auto bundle_only = [](const std::string& dir, const std::string&) { return oom_commands(only_bundle(dir)); };
  // The commands that name call sites; the other exports and check never open attribution.jsonl.
  auto attribution_readers = [](const std::string& dir, const std::string& scratch) {
    std::vector<Args> out;
    for (Args& a : all_commands(dir, scratch)) {
      if ((a[0] != "export" || a[3] == "folded") && a[0] != "check") out.push_back(std::move(a));
    }
    return out;
  };

  const std::vector<RefusedCase> cases = {
      // A trace that is not one, or too short to be one; without summary.json, oom reads it too.
      {"foreign trace", [&](const std::string& d) { without_summary(d); write_file(d + "/trace.gmpt", std::string(100, 'x')); },
       "trace.gmpt is not a gpumemprof trace (bad magic)"},
      {"stub trace", [&](const std::string& d) { without_summary(d); write_file(d + "/trace.gmpt", "GMPTRACE"); },
       "shorter than the 64-byte trace header"},
      // JSON files that are not JSON, or nest without bound.
      {"broken manifest", [](const std::string& d) { write_file(d + "/manifest.json", "{ not json"); },
       "manifest.json is not valid JSON (parse error at line 1, column 4"},
      {"broken summary", [](const std::string& d) { write_file(d + "/summary.json", "[1,2"); },
       "summary.json is not valid JSON (parse error at line 1, column 5"},
      {"deep manifest", [](const std::string& d) { write_file(d + "/manifest.json", kDeep); }, "manifest.json " + kTooDeep},
      {"deep summary", [](const std::string& d) { write_file(d + "/summary.json", kDeep); }, "summary.json " + kTooDeep},
      {"deep bundle metadata", [](const std::string& d) { write_file(only_bundle(d) + "/metadata.json", kDeep); },
       "metadata.json " + kTooDeep, bundle_only},
      // A FIFO in place of a file: opening it for reading would block forever.
      {"FIFO manifest", [](const std::string& d) { make_fifo(d + "/manifest.json"); },
       "manifest.json is a FIFO, not a regular file; gpumemprof reads only regular files"},
      {"FIFO summary", [](const std::string& d) { make_fifo(d + "/summary.json"); }, "summary.json is a FIFO, not a regular file"},
      {"FIFO trace", [&](const std::string& d) { without_summary(d); make_fifo(d + "/trace.gmpt"); },
       "trace.gmpt is a FIFO, not a regular file"},
      {"FIFO attribution", [](const std::string& d) { make_fifo(d + "/attribution.jsonl"); },
       "attribution.jsonl is a FIFO, not a regular file", attribution_readers},
      {"FIFO bundle metadata", [](const std::string& d) { make_fifo(only_bundle(d) + "/metadata.json"); },
       "metadata.json is a FIFO, not a regular file", bundle_only},
      {"directory as summary", [](const std::string& d) { fs::remove(d + "/summary.json"); fs::create_directory(d + "/summary.json"); },
       "summary.json is a directory, not a regular file"},
      // Sparse files: 1 TiB of hole behind a real trace (`truncate -s 1T`), a summary that is one hole.
      {"sparse trace", [&](const std::string& d) { without_summary(d); fs::resize_file(d + "/trace.gmpt", 1ull << 40); },
       "trace.gmpt is a sparse file ("},
      {"sparse summary", [](const std::string& d) { fs::resize_file(d + "/summary.json", 1ull << 40); },
       "summary.json is a sparse file (1099511627776 bytes with a hole at byte "},
  };
  for (const RefusedCase& c : cases) {
    SCOPED_TRACE(c.name);
    std::string name = c.name;
    std::replace(name.begin(), name.end(), ' ', '_');
    const std::string dir = copy_of(box, run, name);
    c.spoil(dir);
    const auto start = std::chrono::steady_clock::now();
    for (const Args& args : c.commands(dir, scratch)) expect_refused(args, c.why, scratch);
    const auto took = std::chrono::steady_clock::now() - start;
    EXPECT_LT(took, std::chrono::seconds(10)) << "refusing takes no reading";
    fs::remove_all(dir);  // the sparse files go at once
  }
}

// Command lines a command cannot use, and directories it cannot read: every command refuses them in
// its own words, by the same rule (expect_refused). One row per command line.
TEST(HostileInput, BadCommandLinesAndForeignDirectoriesAreStatus2WithOneLine) {
  Sandbox box;
  const std::string run = base_run(box);
  const std::string scratch = box.dir() + "/scratch", empty = box.dir() + "/empty", foreign = box.dir() + "/foreign",
                    missing = box.dir() + "/missing", corrupt = box.dir() + "/corrupt", stub = box.dir() + "/stub",
                    nameless_bundle = box.dir() + "/oom_dump_x_1_cuda_1";  // named like one, no metadata.json
  for (const auto& d : {scratch, empty, foreign, corrupt, stub, nameless_bundle}) fs::create_directory(d);
  write_file(foreign + "/notes.txt", "hello\n");
  write_file(corrupt + "/trace.gmpt", std::string(100, 'x'));
  write_file(stub + "/trace.gmpt", "GMPTRACE");
  // The output files expect_refused checks are never left behind.
  const std::string csv = scratch + "/out.csv", html = scratch + "/report.html";
  const std::string formats = "accepted: csv, jsonl, perfetto, telemetry-v2";

  std::vector<std::pair<Args, std::string>> rows = {
      // The command itself.
      {{}, "no command given; usage: gpumemprof COMMAND [ARGS]"},
      {{"frobnicate"}, "unknown command 'frobnicate'; accepted: run, report"},
      // run
      {{"run"}, "no command given; usage: gpumemprof run [options] -- COMMAND [ARGS...]"},
      {{"run", "--bogus", "--", "true"}, "unknown option '--bogus'; see gpumemprof run --help (COMMAND goes after --)"},
      {{"run", "-o"}, "option -o needs a value"},
      {{"run", "--shim", box.dir() + "/missing.so", "--", "true"},
       "cannot find the shim " + box.dir() + "/missing.so; give its path with --shim"},
      // report and diff
      {{"report"}, "usage: gpumemprof report DIR [--json]"},
      {{"report", "--bogus", empty}, "unknown option '--bogus'; accepted: --json, --since, --until, --help"},
      {{"diff"}, "two run directories expected, got 0; usage: gpumemprof diff DIR_A DIR_B [--json]"},
      {{"diff", "/tmp"}, "two run directories expected, got 1"},
      {{"diff", "a", "b", "c"}, "two run directories expected, got 3"},
      {{"diff", "--frob", "a", "b"}, "unknown option '--frob'; accepted: --json, --fail-if-peak-grows, --help"},
      // export
      {{"export"}, "no run directory given; usage: gpumemprof export DIR --format csv|jsonl|perfetto|telemetry-v2"},
      {{"export", run}, "--format is required; " + formats},
      {{"export", run, "--format", "xml"}, "unknown format 'xml'; " + formats},
      {{"export", run, "--format"}, "--format needs a value; " + formats},
      {{"export", run, "--format", "csv", "-o"}, "-o needs a file name"},
      {{"export", run, "--format", "csv", "--bogus"}, "unknown option '--bogus'"},
      {{"export", run, run, "--format", "csv"}, "one run directory expected"},
      {{"export", run, "--format", "csv", "--world-size", "4"}, "--world-size applies to --format telemetry-v2 only"},
      {{"export", run, "--format", "telemetry-v2", "--world-size", "zero"}, "--world-size needs a positive integer"},
      {{"export", run, "--format", "csv", "-o", scratch + "/no/such/dir/x.csv"}, "cannot write"},
      {{"export", run, "--format", "csv", "-o", scratch}, "cannot write"},
      {{"export", missing, "--format", "csv", "-o", csv}, "is not a directory"},
      {{"export", empty, "--format", "csv", "-o", csv}, "is not a gpumemprof run directory"},
      {{"export", foreign, "--format", "jsonl", "-o", csv}, "is not a gpumemprof run directory"},
      {{"export", corrupt, "--format", "perfetto", "-o", csv}, "is not a gpumemprof trace (bad magic)"},
      {{"export", stub, "--format", "telemetry-v2", "-o", csv}, "shorter than the 64-byte trace header"},
      // html
      {{"html"}, "no run directory given; usage: gpumemprof html DIR -o FILE"},
      {{"html", empty}, "-o FILE is required (the HTML file to write, '-' for stdout)"},
      {{"html", empty, "-o"}, "-o needs a file name ('-' for stdout)"},
      {{"html", empty, "-o", ""}, "-o needs a file name ('-' for stdout)"},
      {{"html", empty, "-o", html, "--bogus"},
       "unknown option '--bogus'; accepted: -o, --output, --since, --until, --help"},
      {{"html", empty, empty, "-o", html}, "one run directory expected, got '" + empty + "' too"},
      {{"html", corrupt, "-o", html}, "not a gpumemprof trace"},
      {{"html", run, "-o", scratch + "/no/such/dir/r.html"}, "cannot create " + scratch + "/no/such/dir/r.html"},
      // oom
      {{"oom"}, "no bundle or directory given"},
      {{"oom", "--frobnicate", "/tmp"}, "unknown option '--frobnicate'; accepted: --json, --help"},
      {{"oom", "/tmp", "/var"}, "one bundle or directory expected"},
      {{"oom", empty}, empty + " is an empty directory; expected an OOM bundle directory"},
      {{"oom", foreign + "/notes.txt"}, "notes.txt is not a directory; expected"},
      {{"oom", nameless_bundle}, nameless_bundle + "/metadata.json is missing"},
  };
  // Every command that reads a run directory, on a missing, an empty and a foreign one.
  for (const auto& args : run_commands(missing, scratch)) rows.emplace_back(args, missing + " is not a directory");
  for (const auto& args : oom_commands(missing)) rows.emplace_back(args, missing + " does not exist; expected");
  for (const std::string& d : {empty, foreign}) {
    for (const auto& args : run_commands(d, scratch)) {
      // check takes a job root too: it looked below.
      rows.emplace_back(args, args[0] == "check" ? d + " holds no gpumemprof run directory (none with a manifest.json "
                                                       "or trace.gmpt, 3 levels down)"
                                                 : d + " is not a gpumemprof run directory (no manifest.json and no "
                                                       "trace.gmpt)");
    }
  }
  for (const auto& args : oom_commands(empty)) rows.emplace_back(args, empty + " is an empty directory");
  for (const auto& args : oom_commands(foreign)) {
    rows.emplace_back(args, foreign + " is neither an OOM bundle (no metadata.json) nor a gpumemprof run directory");
  }

  for (const auto& [args, why] : rows) expect_refused(args, why, scratch);
}

// A field of the wrong type reads as absent: the command still does its job. One field per row, so
// a failure names it. The gate is the exception: a figure it reads that is not a count is
// unreadable input to check, never a 0 that passes.
TEST(HostileInput, FieldsOfTheWrongTypeReadAsAbsent) {
  Sandbox box;
  const std::string run = base_run(box);
  const std::string scratch = box.dir() + "/scratch";
  fs::create_directory(scratch);
  struct Row {
    std::string file, pointer;  // file relative to the run directory; "BUNDLE/" is the bundle's
    nlohmann::json value;
    bool gate = false;  // a figure check reads: unreadable there (docs/check.md), absent elsewhere
  };
  const nlohmann::json object = {{"x", 1}}, array = nlohmann::json::array({1}), text = "x", null = nullptr;
  const std::vector<Row> rows = {
      {"manifest.json", "/exe", null},
      {"manifest.json", "/exe", array},
      {"manifest.json", "/pid", text},
      {"manifest.json", "/pid", -1},
      {"manifest.json", "/argv", text},
      {"manifest.json", "/argv/0", object},
      {"manifest.json", "/cwd", array},
      {"manifest.json", "/host", null},
      {"manifest.json", "/rank", object},
      {"manifest.json", "/start_time_utc", 7},
      {"manifest.json", "/devices", text},
      {"manifest.json", "/devices/0", text},
      {"manifest.json", "/devices/0/ordinal", text},
      {"manifest.json", "/devices/0/ordinal", 1e300},
      {"manifest.json", "/devices/0/name", null},
      {"manifest.json", "/devices/0/total_bytes", text},
      {"manifest.json", "/config", array},
      {"manifest.json", "/config/oom_dir", 3},
      {"manifest.json", "/config/sample_ms", text},
      {"summary.json", "/clean_exit", text},
      {"summary.json", "/terminated_by_signal", object},
      {"summary.json", "/devices/0", text, true},
      {"summary.json", "/devices/0/device", text, true},
      {"summary.json", "/devices/0/name", array},
      {"summary.json", "/devices/0/allocated_bytes", text, true},
      {"summary.json", "/devices/0/allocated_bytes/peak", -5, true},
      {"summary.json", "/devices/0/by_kind", array, true},
      {"summary.json", "/events", array},
      {"summary.json", "/events/recorded", text},
      {"summary.json", "/events/lost", null},
      {"summary.json", "/events/unwritten", text},
      {"summary.json", "/events/trace_error", 5},
      {"summary.json", "/trace_events_written", object},
      {"summary.json", "/host_pinned_bytes", 3},
      {"summary.json", "/failed_allocations", object, true},
      {"summary.json", "/failed_allocations/0", text, true},
      {"summary.json", "/failed_allocations/0/api", 3},
      {"summary.json", "/failed_allocations/0/device", text, true},
      {"summary.json", "/alerts", array},
      {"summary.json", "/oom", text, true},
      {"summary.json", "/oom/failures", null, true},
      {"BUNDLE/manifest.json", "/pid", text},
      {"BUNDLE/manifest.json", "/created_at_utc", 5},
      {"BUNDLE/metadata.json", "/devices", text},
      {"BUNDLE/metadata.json", "/request/device", text},
      {"BUNDLE/metadata.json", "/largest_live/0", text},
      {"BUNDLE/environment.json", "/argv", object},
  };
  // Without attribution.jsonl nothing is symbolised: addr2line would take most of the time.
  fs::remove(run + "/attribution.jsonl");
  for (const Row& row : rows) {
    SCOPED_TRACE(row.file + " " + row.pointer + " = " + row.value.dump());
    const std::string dir = copy_of(box, run, "wrong");
    const bool in_bundle = row.file.rfind("BUNDLE/", 0) == 0;
    const std::string file = in_bundle ? only_bundle(dir) + "/" + row.file.substr(7) : dir + "/" + row.file;
    set_field(file, row.pointer, row.value);
    for (const Args& args : all_commands(dir, scratch)) {
      if (row.gate && args[0] == "check") {
        RunResult r = run_tool(args, kToolTimeoutS);
        EXPECT_EQ(r.exit_code, 2) << r.err;
        EXPECT_EQ(lines(r.err), 1u) << r.err;
        EXPECT_EQ(r.err.rfind("gpumemprof check: " + dir + "/summary.json: ", 0), 0u) << r.err;
      } else {
        expect_done(args);
      }
    }
    if (in_bundle) {
      for (const Args& args : oom_commands(only_bundle(dir))) expect_done(args);
    }
    fs::remove_all(dir);
  }
  // The one a reader asked for first: a null exe is "?".
  const std::string dir = copy_of(box, run, "null-exe");
  set_field(dir + "/manifest.json", "/exe", nullptr);
  EXPECT_NE(expect_done({"report", dir}).out.find("  process ? (pid "), std::string::npos);
}

// A deep line of attribution.jsonl is one unreadable line; a bundle's optional files that are
// FIFOs or nest too deep are notes, as any unreadable optional file is.
TEST(HostileInput, UnreadableOptionalPartsAreNotes) {
  Sandbox box;
  const std::string run = base_run(box);
  const std::string dir = copy_of(box, run, "optional");
  std::ofstream(dir + "/attribution.jsonl", std::ios::app) << kDeep << "\n";
  RunResult r = expect_done({"report", dir});
  EXPECT_NE(r.out.find("  note: attribution.jsonl: 1 unreadable lines skipped\n"), std::string::npos) << r.out;

  const std::string bundle = only_bundle(dir);
  make_fifo(bundle + "/allocations.json");
  write_file(bundle + "/environment.json", kDeep);
  r = expect_done({"oom", bundle});
  EXPECT_NE(r.out.find("  - allocations.json is a FIFO, not a regular file"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  - environment.json " + kTooDeep + "; ignored"), std::string::npos) << r.out;
}

// Paths need not be UTF-8; JSON output must be. What is not UTF-8 comes out as U+FFFD.
TEST(HostileInput, PathsThatAreNotUtf8ComeOutAsValidJson) {
  Sandbox box;
  const std::string run = base_run(box);
  const std::string dir = copy_of(box, run, "run-\xff\xfe");
  const std::string shown = box.dir() + "/run-\xEF\xBF\xBD\xEF\xBF\xBD";
  auto json_of = [](const Args& args) {
    RunResult r = expect_done(args);
    return nlohmann::json::parse(r.out, nullptr, false);
  };
  EXPECT_TRUE(json_of({"report", dir, "--json"}).is_object());
  const auto diff = json_of({"diff", dir, dir, "--json"});
  EXPECT_EQ(diff["a"], shown);
  EXPECT_EQ(diff["b"], shown);
  EXPECT_EQ(json_of({"oom", dir, "--json"})["source"]["path"], shown);
  EXPECT_EQ(json_of({"export", dir, "--format", "perfetto"})["otherData"]["run_directory"], shown);
  EXPECT_EQ(json_of({"oom", only_bundle(dir), "--json"})["bundles"][0]["bundle"]["path"].get<std::string>().rfind(shown, 0), 0u);
}

// Output that cannot be written is a failure, whichever command wrote it.
TEST(HostileInput, AFailedWriteToStdoutIsStatus2WithOneLine) {
  Sandbox box;
  const std::string run = base_run(box);
  for (const Args& args : std::vector<Args>{{"report", run},
                                            {"report", run, "--json"},
                                            {"oom", run},
                                            {"diff", run, run},
                                            {"export", run, "--format", "jsonl"},
                                            {"html", run, "-o", "-"},
                                            {"report", "--help"},
                                            {"--version"}}) {
    SCOPED_TRACE(joined(args));
    RunResult r = run_tool(args, kToolTimeoutS, "/dev/full");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    const std::string prefix = args[0] == "--version" ? "gpumemprof: " : "gpumemprof " + args[0] + ": ";
    EXPECT_EQ(r.err, prefix + "cannot write to stdout: No space left on device\n");
  }
}

// An export abandoned partway (input it cannot use) removes the partial file it wrote, and only that:
// never a device given as -o (as root, `-o /dev/null` once removed /dev/null).
TEST(HostileInput, AnAbandonedExportRemovesOnlyTheFileItWrote) {
  Sandbox box;
  const std::string run = base_run(box);
  const std::string file = box.dir() + "/partial.folded";
  RunResult r = run_tool({"export", run, "--format", "folded", "--since", "1h", "-o", file});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_FALSE(std::filesystem::exists(file));
  if (geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  const std::string null = box.dir() + "/null";
  ASSERT_EQ(mknod(null.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  r = run_tool({"export", run, "--format", "folded", "--since", "1h", "-o", null});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  struct stat st {};
  ASSERT_EQ(stat(null.c_str(), &st), 0) << "the device node was removed";
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// An output file that cannot be written is a failure with one line, never "wrote". A device such as
// /dev/full (here a node of the same device in the sandbox) is written in place: html used to write
// a temporary file and rename it over the device, which succeeded and replaced the device.
TEST(HostileInput, AFailedWriteToAnOutputFileIsStatus1WithOneLine) {
  if (geteuid() != 0) GTEST_SKIP() << "mknod needs root";
  Sandbox box;
  const std::string run = base_run(box);
  const std::string full = box.dir() + "/full";
  ASSERT_EQ(mknod(full.c_str(), S_IFCHR | 0666, makedev(1, 7)), 0);
  const std::vector<std::pair<Args, std::string>> rows = {
      {{"export", run, "--format", "jsonl", "-o", full},
       "gpumemprof export: writing " + full + " failed: No space left on device\n"},
      {{"html", run, "-o", full}, "gpumemprof html: cannot write " + full + ": No space left on device\n"},
  };
  for (const auto& [args, message] : rows) {
    SCOPED_TRACE(joined(args));
    RunResult r = run_tool(args, kToolTimeoutS);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, message);
    struct stat st {};
    ASSERT_EQ(lstat(full.c_str(), &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "the device was replaced";
  }
}

// Names from outside reach a terminal (docs/report.md, "Names from outside"): escape sequences in an
// executable's path, a range's and a mark's name are shown as '?' in text, and kept in JSON.
TEST(HostileInput, ControlSequencesInNamesAreShownAsQuestionMarks) {
  Sandbox box;
  const std::string exe = box.dir() + "/prog\x1b[2J";
  fs::copy_file(Paths::bin("prog_ops"), exe);
  const std::string range = "\x1b]0;owned\x07range", mark = "\x1b[31mred\xc2\x9b";
  RunResult r = box.run({exe, "push:" + range, "alloc:1M", "pop", "mark:" + mark, "free_last"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string dir = box.only_run_dir();
  r = run_tool({"report", dir});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char c : {'\x1b', '\x07'}) EXPECT_EQ(r.out.find(c), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\xc2\x9b"), std::string::npos) << r.out;
  for (const char* shown : {"?]0;owned?range", "?[31mred?"}) {
    EXPECT_NE(r.out.find(shown), std::string::npos) << shown << " in " << r.out;
  }
  EXPECT_NE(r.out.find(box.dir() + "/prog?[2J (pid "), std::string::npos) << r.out;
  // gpumemprof run's summary on stderr, by the same rule.
  r = box.run(run_args(box.dir() + "/runs", {exe, "alloc:1M"}), tool_env());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(box.dir() + "/prog?[2J (pid "), std::string::npos) << r.err;
  // JSON is data: the names as recorded.
  const auto doc = nlohmann::json::parse(run_tool({"report", dir, "--json"}).out);
  EXPECT_EQ(doc["analysis"]["ranges"][0]["name"], range);
  EXPECT_EQ(doc["analysis"]["marks"][0]["name"], mark);
}

// Bundles that cannot be read are skipped, the others explained, and the skipped ones summed up in
// one line: how many, and why the first was.
TEST(HostileInput, BrokenBundlesAreCountedInOneLine) {
  Sandbox box;
  const std::string run = base_run(box);
  const std::string good = only_bundle(run);
  for (int i = 7; i <= 9; ++i) {
    const std::string broken = run + "/oom/oom_dump_20990101T000000Z_1_cuda_" + std::to_string(i);
    fs::create_directory(broken);
    write_file(broken + "/metadata.json", "{");
  }
  for (const Args& args : oom_commands(run)) {
    SCOPED_TRACE(joined(args));
    RunResult r = run_tool(args, kToolTimeoutS);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(lines(r.err), 1u) << r.err;
    EXPECT_EQ(r.err.rfind("gpumemprof oom: skipped 3 of 4 bundles that cannot be read; the first: " + run +
                              "/oom/oom_dump_20990101T000000Z_1_cuda_7/metadata.json is not valid JSON (",
                          0),
              0u)
        << r.err;
    EXPECT_NE(r.out.find(good.substr(good.rfind('/') + 1)), std::string::npos) << r.out;
  }
}

}  // namespace
}  // namespace gmp::test
