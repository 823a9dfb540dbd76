// `gpumemprof export DIR --format csv|jsonl|perfetto|telemetry-v2|folded|memory-viz [-o FILE]`: the run's
// trace in a machine format, streamed (docs/exports.md). This file is the command line; the formats
// live in export_table.cpp, export_perfetto.cpp, export_telemetry.cpp, export_folded.cpp and
// export_memory_viz.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "command_args.h"
#include "commands.h"
#include "export_formats.h"
#include "human_text.h"
#include "job_view.h"
#include "trace_format.h"
#include "value_text.h"

namespace gmp::tool {
namespace {

using namespace exporter;

// What a format reads: the command's replay of the window (a stream), or passes of its own.
struct Format {
  const char* name;
  void (*write)(Context&);
  bool streams, thinned, sized;  // reads ctx.replay; takes --resolution; takes --min-size
  bool binary;                    // never written to a terminal
};
constexpr Format kFormatTable[] = {{"csv", write_csv, true, false, true, false},
                                   {"jsonl", write_jsonl, true, false, true, false},
                                   {"perfetto", write_perfetto, true, true, true, false},
                                   {"telemetry-v2", write_telemetry_v2, true, true, true, false},
                                   {"folded", write_folded, false, false, false, false},
                                   {"memory-viz", write_memory_viz, false, false, false, true}};

struct Args {
  std::string dir, output;
  const Format* format = nullptr;
  std::optional<uint64_t> world_size;
  reader::Window window;
  std::optional<uint64_t> resolution_ns, min_size, max_entries;
};

int usage_error(const std::string& what) {
  std::fprintf(stderr, "gpumemprof export: %s\n", what.c_str());
  return 2;
}

// Parses the command line; returns an exit status when it is done (help or an error).
std::optional<int> parse(int argc, char** argv, Args& a) {
  if (auto status = take_window_args("export", argc, argv, a.window)) return status;
  for (int i = 0; i < argc; ++i) {
    const char* arg = argv[i];
    if (!std::strcmp(arg, "--help") || !std::strcmp(arg, "-h")) {
      std::fputs(help_text(kExportOptions).c_str(), stdout);
      return 0;
    }
  }
  for (int i = 0; i < argc; ++i) {
    const char* arg = argv[i];
    const Option* o = find_option(kExportOptions, arg);
    const std::string name = o != nullptr ? o->name : "";
    if (o == nullptr && arg[0] == '-' && arg[1] != '\0') {
      return usage_error(std::string("unknown option '") + arg + "'; accepted: " + accepted_options(kExportOptions));
    }
    if (name == "--format") {
      auto v = option_value(argc, argv, i);
      if (!v) return usage_error(std::string("--format needs a value; accepted: ") + kExportFormats);
      for (const Format& f : kFormatTable) {
        if (*v == f.name) a.format = &f;
      }
      if (a.format == nullptr) return usage_error("unknown format '" + *v + "'; accepted: " + kExportFormats);
    } else if (name == "--output") {
      auto v = option_value(argc, argv, i);
      if (!v || v->empty()) return usage_error("-o needs a file name ('-' for stdout)");
      a.output = *v;
    } else if (name == "--world-size") {
      auto v = option_value(argc, argv, i);
      const auto n = v ? parse_uint(*v) : std::nullopt;
      if (!n || *n == 0) return usage_error("--world-size needs a positive integer");
      a.world_size = n;
    } else if (name == "--resolution") {
      auto v = option_value(argc, argv, i);
      a.resolution_ns = v && *v == "0" ? std::optional<uint64_t>(0) : v ? parse_duration_ns(*v) : std::nullopt;
      if (!a.resolution_ns) {
        return usage_error("--resolution '" + v.value_or("") + "' is not a duration; accepted: 0 (every change) or " +
                           kDurationForm);
      }
    } else if (name == "--max-events") {
      auto v = option_value(argc, argv, i);
      a.max_entries = v ? parse_uint(*v) : std::nullopt;
      if (!a.max_entries) {
        return usage_error("--max-events '" + v.value_or("") + "' is not a count; accepted: 0 (all) or a positive integer");
      }
    } else if (name == "--min-size") {
      auto v = option_value(argc, argv, i);
      a.min_size = v ? parse_byte_size(*v) : std::nullopt;
      if (!a.min_size) return usage_error("--min-size '" + v.value_or("") + "' is not a size; accepted: " + kSizeForm);
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
  if (a.format == nullptr) return usage_error(std::string("--format is required; accepted: ") + kExportFormats);
  if (a.world_size && std::strcmp(a.format->name, "telemetry-v2") != 0) {
    return usage_error("--world-size applies to --format telemetry-v2 only");
  }
  if (a.resolution_ns && !a.format->thinned) {
    return usage_error("--resolution applies to perfetto and telemetry-v2 only");
  }
  if (a.min_size && !a.format->sized) {
    return usage_error("--min-size applies to csv, jsonl, perfetto and telemetry-v2 only");
  }
  if (a.max_entries && std::strcmp(a.format->name, "memory-viz") != 0) {
    return usage_error("--max-events applies to --format memory-viz only");
  }
  if (a.format->binary && (a.output.empty() || a.output == "-") && isatty(STDOUT_FILENO)) {
    return usage_error(std::string("--format ") + a.format->name +
                       " writes a binary pickle and stdout is a terminal; give -o FILE or redirect stdout");
  }
  return std::nullopt;
}

// A job's ROOT (docs/exports.md §Jobs): perfetto only, over the whole of each run.
int export_job(const Args& args) {
  if (std::strcmp(args.format->name, "perfetto") != 0) {
    return usage_error(args.dir + " holds the run directories of a job, which exports as --format perfetto only; " +
                       args.format->name + " takes one run directory");
  }
  if (!args.window.whole()) return window_refused("export", args.dir);
  auto job = open_job("export", args.dir);
  if (!job) return 2;
  return export_job_perfetto(*job, {args.output, args.resolution_ns, args.min_size});
}

}  // namespace

int export_main(int argc, char** argv) {
  Args args;
  if (auto status = parse(argc, argv, args)) return *status;
  if (is_job_root(args.dir)) return export_job(args);

  std::string error;
  reader::Progress progress("gpumemprof export");
  auto run = reader::open_run_directory(args.dir, error, &progress);
  if (!run) return usage_error(error);
  if (!reader::has_trace(run->path)) {
    return usage_error(run->path + " has no trace.gmpt, so there are no events to export");
  }
  Replay replay;
  if (!replay.open(run->path, args.window, &progress, error)) return usage_error(error);
  if (args.format->streams) progress.expect(replay.records_in_file());

  Output out;
  Context ctx{*run, replay, out};
  ctx.progress = &progress;
  ctx.min_size = args.min_size;
  if (args.max_entries) ctx.max_entries = *args.max_entries;
  if (args.format->thinned) set_resolution(ctx, args.resolution_ns);
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
