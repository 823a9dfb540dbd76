// `gpumemprof export DIR --format csv|jsonl|perfetto|telemetry-v2|folded|memory-viz [-o FILE]`: the run's
// trace in a machine format, streamed (docs/exports.md). This file is the command line; the formats
// live in export_table.cpp, export_perfetto.cpp, export_telemetry.cpp, export_folded.cpp and
// export_memory_viz.cpp.
#include <sys/stat.h>

#include <charconv>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "commands.h"
#include "export_formats.h"
#include "trace_format.h"

namespace gmp::tool {
namespace {

using namespace exporter;

constexpr const char* kUsage =
    "usage: gpumemprof export DIR --format FORMAT [-o FILE]\n"
    "  Writes every event of DIR's trace in a machine format, streaming (memory stays bounded).\n"
    "  DIR is a run directory written by libgpumemprof.so. FORMAT:\n"
    "    csv           one row per trace event, with its device's allocated and reserved bytes after it\n"
    "    jsonl         the same, one JSON object per line\n"
    "    perfetto      Chrome trace-event JSON: per-device memory counters, OOM and alert markers;\n"
    "                  open it in https://ui.perfetto.dev (Open trace file)\n"
    "    telemetry-v2  TelemetryEvent v2 records (a JSON array) for the Python gpumemprof tools\n"
    "    folded        the call stacks of the memory live at each device's allocated peak, weighted by\n"
    "                  bytes, rooted at \"GPU N\" (needs GPUMEMPROF_STACKS): for flamegraph.pl, inferno,\n"
    "                  speedscope\n"
    "    memory-viz    a snapshot for PyTorch's memory viewer (a pickle): drop it on https://pytorch.org/memory_viz\n"
    "                  or run python -m torch.cuda._memory_viz trace_plot FILE -o trace.html\n"
    "  -o, --output FILE   write FILE instead of stdout ('-' is stdout)\n"
    "  --world-size N      telemetry-v2: the job's world size (the manifest records only the rank)\n"
    "  Sizes are raw bytes. Every field is described in docs/exports.md.\n";

constexpr const char* kFormats = "csv, jsonl, perfetto, telemetry-v2, folded, memory-viz";

struct Format {
  const char* name;
  void (*write)(Context&);
};
constexpr Format kFormatTable[] = {
    {"csv", write_csv}, {"jsonl", write_jsonl}, {"perfetto", write_perfetto}, {"telemetry-v2", write_telemetry_v2},
    {"folded", write_folded}, {"memory-viz", write_memory_viz}};

struct Args {
  std::string dir, output;
  const Format* format = nullptr;
  std::optional<uint64_t> world_size;
  bool help = false;
};

int usage_error(const std::string& what) {
  std::fprintf(stderr, "gpumemprof export: %s\n", what.c_str());
  return 2;
}

// "--name value" or "--name=value": the value, advancing i past it; nullopt when it is missing.
std::optional<std::string> option_value(int argc, char** argv, int& i, const char* name) {
  const char* arg = argv[i];
  const size_t n = std::strlen(name);
  if (std::strncmp(arg, name, n) == 0 && arg[n] == '=') return std::string(arg + n + 1);
  if (i + 1 >= argc) return std::nullopt;
  return std::string(argv[++i]);
}

bool is_option(const char* arg, const char* name) {
  const size_t n = std::strlen(name);
  return std::strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

// Parses the command line; returns an exit status when it is done (help or an error).
std::optional<int> parse(int argc, char** argv, Args& a) {
  for (int i = 0; i < argc; ++i) {
    const char* arg = argv[i];
    if (!std::strcmp(arg, "--help") || !std::strcmp(arg, "-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (is_option(arg, "--format")) {
      auto v = option_value(argc, argv, i, "--format");
      if (!v) return usage_error(std::string("--format needs a value; accepted: ") + kFormats);
      for (const Format& f : kFormatTable) {
        if (*v == f.name) a.format = &f;
      }
      if (a.format == nullptr) return usage_error("unknown format '" + *v + "'; accepted: " + kFormats);
    } else if (is_option(arg, "-o") || is_option(arg, "--output")) {
      auto v = option_value(argc, argv, i, arg[1] == 'o' ? "-o" : "--output");
      if (!v || v->empty()) return usage_error("-o needs a file name ('-' for stdout)");
      a.output = *v;
    } else if (is_option(arg, "--world-size")) {
      auto v = option_value(argc, argv, i, "--world-size");
      uint64_t n = 0;
      const char* end = v ? v->data() + v->size() : nullptr;
      if (!v || std::from_chars(v->data(), end, n).ptr != end || v->empty() || n == 0) {
        return usage_error("--world-size needs a positive integer");
      }
      a.world_size = n;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return usage_error(std::string("unknown option '") + arg + "'; accepted: --format, -o, --world-size, --help");
    } else if (a.dir.empty()) {
      a.dir = arg;
    } else {
      return usage_error("one run directory expected, got '" + std::string(arg) + "' too");
    }
  }
  if (a.dir.empty()) {
    return usage_error(std::string("no run directory given; usage: gpumemprof export DIR --format ") +
                       "csv|jsonl|perfetto|telemetry-v2|folded|memory-viz [-o FILE]");
  }
  if (a.format == nullptr) return usage_error(std::string("--format is required; accepted: ") + kFormats);
  if (a.world_size && std::strcmp(a.format->name, "telemetry-v2") != 0) {
    return usage_error("--world-size applies to --format telemetry-v2 only");
  }
  return std::nullopt;
}

}  // namespace

int export_main(int argc, char** argv) {
  Args args;
  if (auto status = parse(argc, argv, args)) return *status;

  std::string error;
  auto run = reader::open_run_directory(args.dir, error);
  if (!run) return usage_error(error);
  if (!reader::has_trace(run->path)) {
    return usage_error(run->path + " has no trace.gmpt, so there are no events to export");
  }
  Replay replay;
  if (!replay.open(run->path, error)) return usage_error(error);

  Output out;
  Context ctx{*run, replay, out, {}, {}};
  if (std::strcmp(args.format->name, "telemetry-v2") == 0) {
    auto identity = telemetry_identity(run->manifest, args.world_size, ctx.notes, error);
    if (!identity) return usage_error(error);
    ctx.identity = *identity;
  }
  // Opened last, so that bad input never leaves an empty output file behind.
  if (!out.open(args.output, error)) return usage_error(error);

  args.format->write(ctx);
  // Input found unreadable partway: no partial export is left behind.
  if (replay.failed() || !ctx.error.empty()) {
    out.abandon();
    return usage_error(replay.failed() ? replay.error() : ctx.error);
  }
  if (!out.finish(error)) {
    std::fprintf(stderr, "gpumemprof export: %s\n", error.c_str());
    return 1;
  }
  if (replay.truncated_bytes() > 0) {
    std::fprintf(stderr,
                 "gpumemprof export: note: %s ends in a partial %llu-byte record (the process was killed "
                 "mid-write); exported the %llu whole events before it\n",
                 replay.trace_path().c_str(), static_cast<unsigned long long>(replay.truncated_bytes()),
                 static_cast<unsigned long long>(replay.events_read()));
  }
  for (const std::string& note : ctx.notes) std::fprintf(stderr, "gpumemprof export: note: %s\n", note.c_str());
  if (out.name() != "stdout") {
    const std::string what =
        !ctx.written.empty() ? ctx.written : std::to_string(replay.events_read()) + " trace events";
    std::fprintf(stderr, "gpumemprof export: wrote %s (%s, %s)\n", out.name().c_str(), args.format->name, what.c_str());
  }
  return 0;
}

}  // namespace gmp::tool
