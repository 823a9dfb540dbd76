#include "command_options.h"

#include "human_text.h"

#include <cstring>

namespace gmp::tool {

const std::vector<Option> kLimitOptions = {
    {"--max-peak", nullptr, "SIZE",
     "fail when a device's peak allocated memory is over SIZE (40GiB, 512MiB, 1.5G,\n"
     "or a GPU's usable capacity by name: L4, A100-40GB, ...; docs/device-limit.md)"},
    {"--max-reserved", nullptr, "SIZE", "fail when a device's peak reserved memory is over SIZE"},
    {"--max-leak", nullptr, "SIZE", "fail when a process leaves more than SIZE allocated at exit (0: any leak)"},
    {"--max-graph-memory", nullptr, "SIZE",
     "fail when a device's CUDA graph memory (the graph memory pool's peak and\n"
     "PyTorch's private pools' peaks) is over SIZE"},
    {"--max-category", nullptr, "NAME=SIZE",
     "fail when a device's tensors of category NAME (parameters, gradients,\n"
     "optimizer_state, activations, temporaries, kv_cache, other) peaked over SIZE;\n"
     "repeatable; replays the trace (docs/check.md)"},
    {"--no-oom", nullptr, nullptr, "fail on any out-of-memory failure, recovered or not, the driver's or PyTorch's"},
    {"--baseline", nullptr, "DIR", "a run directory or a job root to compare with; needs --max-growth"},
    {"--max-growth", nullptr, "PERCENT",
     "fail when a device's peak allocated memory grew more than PERCENT over the\n"
     "same rank's and device's in the --baseline DIR"},
};

namespace {

const Option kJson = {"--json", nullptr, nullptr, "the same as one JSON object"};
const Option kSince = {"--since", nullptr, "T",
                       "from T into the run (a time since the profiler started: 1.5s, 250ms, 2m)"};
const Option kUntil = {"--until", nullptr, "T", "up to T into the run"};

constexpr size_t kNameColumn = 27;  // where descriptions start

}  // namespace

const CommandOptions kRunOptions = {
    "run",
    "run [options] -- CMD ARGS...",
    "profile CMD and the processes it starts; prints the next commands",
    "usage: gpumemprof run [options] -- COMMAND [ARGS...]\n"
    "  Runs COMMAND with libgpumemprof.so preloaded. Every process it starts that uses GPU memory\n"
    "  gets a run directory under ROOT: rank<R>.<exe>.<pid> for a rank of torchrun, mpirun or srun,\n"
    "  else <exe>.<pid>. At the end it prints how each process ended, what it used, and the commands to\n"
    "  read the results with (report, oom after an out-of-memory failure, html; a job's by its ROOT).\n"
    "  NVTX ranges and marks are recorded too: NVTX_INJECTION64_PATH is set to the shim, and a tool\n"
    "  it already named (Nsight Systems) is chained through GPUMEMPROF_NVTX_CHAIN and keeps working.\n"
    "  Every value is checked before COMMAND starts; a bad one is refused with status 2.\n",
    {{"options:",
      {{"--output", "-o", "ROOT", "where run directories go (default gpumemprof.<command>.<UTC time>)"},
       {"--warn-percent", nullptr, "N", "warning alert threshold, % of device memory, in (0, 100] (default 80)"},
       {"--critical-percent", nullptr, "N", "critical alert threshold, no lower than the warning's (default 95)"},
       {"--sample-ms", nullptr, "N", "NVML telemetry period in ms, 0 = off (default 100)"},
       {"--on-alert", nullptr, "'CMD ARGS'", "command started on every alert (no shell)"},
       {"--oom-dir", nullptr, "DIR", "where OOM bundles go (default <run dir>/oom)"},
       {"--log-level", nullptr, "LEVEL", "trace, debug, info, warn (default), error, critical, off"},
       {"--trace-max", nullptr, "SIZE",
        "disk the trace may take, 0 = unbounded (default 1GiB); past it the\n"
        "oldest events are dropped, the summary stays exact"},
       {"--metrics-dir", nullptr, "DIR",
        "each process keeps its figures in DIR as a Prometheus textfile\n"
        "(node_exporter's textfile collector; docs/metrics.md)"},
       {"--device-limit", nullptr, "LIMIT",
        "rehearse a smaller GPU: 24GiB, a GPU name (L4, A10, A100-40GB, A100-80GB,\n"
        "H100-80GB, H200, RTX-4090) or per device 0:24GiB,1:L4 (docs/device-limit.md)"},
       {"--live", nullptr, nullptr,
        "watch the command's processes while it runs, as gpumemprof top shows them;\n"
        "the command's output goes to a file named on screen (docs/live.md)"},
       {"--shim", nullptr, "PATH",
        "libgpumemprof.so to preload (default: ../" GMP_INSTALL_SHIM_DIR "/ from this\n"
        "program's directory, where it is installed, else ../lib/ in a build tree)"}}},
     {"memory limits, checked on every run directory under ROOT once the command ends (docs/check.md):",
      kLimitOptions}},
    "Exit status: the command's (a command killed by a signal kills gpumemprof with it); when it\n"
    "succeeded, 1 if a limit broke and 2 if the run directories could not be read; 2 for a bad\n"
    "command line.\n",
};

const CommandOptions kReportOptions = {
    "report",
    "report DIR [--json]",
    "how the process ended, peaks, what was live at the peak, leaks, OOMs",
    "usage: gpumemprof report DIR [--json] [--since T] [--until T]\n"
    "       gpumemprof report ROOT [--json]\n"
    "  Per device: peak allocated and reserved memory and when; what was live at the allocated peak, by\n"
    "  kind, by call site and the largest allocations; allocations live at exit (leaks); failed allocations\n"
    "  and OOM bundles; alerts; NVML's view of the process; lost events. Call sites come from the stacks\n"
    "  recorded by default (GPUMEMPROF_STACKS=0 turns them off). With ranges (NVTX or gpumemprof_range_push),\n"
    "  marks and pauses, a table of each (docs/attribution.md). DIR is a run directory written by\n"
    "  libgpumemprof.so. Without summary.json (a killed process) the figures are rebuilt from the trace.\n"
    "  Frames get file:line when addr2line is on PATH (GPUMEMPROF_ADDR2LINE=0 turns that off).\n"
    "  Where PyTorch's caching allocator was seen from inside (the framework bridge), both levels: tensors\n"
    "  (allocated) against PyTorch's cache (reserved), what is cached, pending and outside PyTorch, the tensors\n"
    "  live at their peak by call site, and tensors as leaks (docs/report.md).\n",
    {{"options:",
      {{"--json", nullptr, nullptr, "the same as one JSON object: summary.json's figures plus an \"analysis\" object"},
       {"--since", nullptr, "T",
        "the figures of the window from T (a time since the profiler started: 1.5s,\n"
        "250ms, 2m): peaks inside it, what was live at its end; summary.json's figures\n"
        "stay the whole run's"},
       kUntil}}},
    "  ROOT, a directory holding the run directories of a job (gpumemprof run -o ROOT -- torchrun ...): one row\n"
    "  per rank and device (host, peaks and when, OOMs, alerts, lost events), the spread of the peaks across\n"
    "  the ranks, which rank ran out of memory first, and each rank's own report command. Exit status 2 only\n"
    "  when none of its run directories can be read (docs/report.md, \"Jobs\").\n",
};

const CommandOptions kOomOptions = {
    "oom",
    "oom BUNDLE_OR_DIR [--json]",
    "explain an out-of-memory failure in plain words",
    "usage: gpumemprof oom BUNDLE_OR_DIR [--json]\n"
    "  Explains out-of-memory failures in plain words: what was requested, what this process held on\n"
    "  the device and in what, what the driver said was free, what other processes held, whether a\n"
    "  retry recovered, the largest live allocations, and what to try.\n"
    "  BUNDLE_OR_DIR: an OOM bundle directory (oom_dump_...), a run directory written by\n"
    "  libgpumemprof.so (every bundle of the run, oldest first), or a directory of bundles.\n"
    "  A job's ROOT (gpumemprof run -o ROOT): the rank that ran out of memory first is explained,\n"
    "  and the others that did are named with their own command.\n",
    {{"options:", {{"--json", nullptr, nullptr, "the same explanation, machine-readable"}}}},
    "",
};

const CommandOptions kExportOptions = {
    "export",
    "export DIR --format F [-o FILE]",
    "the trace as csv, jsonl, perfetto, telemetry-v2, folded or memory-viz",
    "usage: gpumemprof export DIR --format FORMAT [-o FILE] [--since T] [--until T] [--resolution D] [--min-size S]\n"
    "                         [--max-events N]\n"
    "       gpumemprof export ROOT --format perfetto [-o FILE] [--resolution D] [--min-size S]\n"
    "  Writes every event of DIR's trace in a machine format, streaming (memory stays bounded).\n"
    "  DIR is a run directory written by libgpumemprof.so. FORMAT:\n"
    "    csv           one row per trace event, with its device's allocated and reserved bytes after it\n"
    "    jsonl         the same, one JSON object per line\n"
    "    perfetto      Chrome trace-event JSON: per-device memory counters, OOM and alert markers;\n"
    "                  open it in https://ui.perfetto.dev (Open trace file)\n"
    "    telemetry-v2  TelemetryEvent v2 records (a JSON array) for the Python gpumemprof tools\n"
    "    folded        the call stacks of the memory live at each device's allocated peak, weighted by\n"
    "                  bytes, rooted at \"GPU N\" (from the stacks recorded by default): for flamegraph.pl,\n"
    "                  inferno, speedscope\n"
    "    memory-viz    a snapshot for PyTorch's memory viewer (a pickle): drop it on https://pytorch.org/memory_viz\n"
    "                  or run python -m torch.cuda._memory_viz trace_plot FILE -o trace.html\n",
    {{"options:",
      {{"--format", nullptr, "FORMAT", "one of csv, jsonl, perfetto, telemetry-v2, folded, memory-viz; required"},
       {"--output", "-o", "FILE", "write FILE instead of stdout ('-' is stdout)"},
       {"--world-size", nullptr, "N", "telemetry-v2: the job's world size (default: the manifest's, else rank + 1)"},
       {"--since", nullptr, "T",
        "only the events from T into the run (a time since the profiler started:\n"
        "1.5s, 250ms, 2m); the figures are exact, counters start at the state at T"},
       {"--until", nullptr, "T", "only the events up to T into the run"},
       {"--resolution", nullptr, "D",
        "perfetto, telemetry-v2: counter points thinned to buckets of D, keeping each\n"
        "bucket's first, last, highest and lowest (peaks stay exact); 0 keeps every\n"
        "change. Default: 0 up to 250000 trace events, else the window in 10000 buckets"},
       {"--min-size", nullptr, "S",
        "csv, jsonl: only allocations of at least S (1M, 512KiB) make rows; perfetto:\n"
        "each one is an instant event too; telemetry-v2: their records are never thinned"},
       {"--max-events", nullptr, "N",
        "memory-viz: at most N trace entries (default 500000, about what the viewer\n"
        "draws; 0: all): the latest ones, or if the allocated peak is older, those\n"
        "around it; the snapshot is the state at the last one kept"}}}},
    "  ROOT, a directory holding the run directories of a job: one perfetto file in which every rank is a\n"
    "  track group (process) of its own, in rank order, its times since the job's start so the ranks line up\n"
    "  on the wall clock; the other formats take one run directory.\n"
    "  Sizes are raw bytes. Every field is described in docs/exports.md.\n",
};

const CommandOptions kDiffOptions = {
    "diff",
    "diff DIR_A DIR_B [--json]",
    "what changed between two runs; --fail-if-peak-grows gates on it",
    "usage: gpumemprof diff DIR_A DIR_B [--json] [--fail-if-peak-grows PERCENT]\n"
    "  Compares two run directories: per device the allocated and reserved peaks, final figures and\n"
    "  counts (and the framework's, PyTorch's tensors and cache, when both runs have them); leaks,\n"
    "  OOMs and alerts; and the largest changes in what was live at the allocated peak,\n"
    "  by kind and by call site (sites are compared by their symbolised names, docs/attribution.md).\n"
    "  B is the new run: changes are B minus A. Runs of two different programs are compared with a\n"
    "  warning on stderr.\n"
    "  Two jobs' ROOTs: each process of B against A's in its place (rank by rank, unranked processes\n"
    "  in order), per device the allocated and reserved peaks, and each pair's own diff command.\n",
    {{"options:",
      {kJson,
       {"--fail-if-peak-grows", nullptr, "PERCENT",
        "exit 1 when a device's peak allocated memory in B is more than PERCENT\n"
        "over A's (10, 2.5%), as gpumemprof check --max-growth (docs/check.md)"}}}},
    "Exit status: 0; 1 when --fail-if-peak-grows broke (one line per device that grew too much);\n"
    "2 bad usage or unreadable input.\n",
};

const CommandOptions kHtmlOptions = {
    "html",
    "html DIR -o FILE",
    "a self-contained HTML report: timeline, peak breakdown, flame graph",
    "usage: gpumemprof html DIR -o FILE [--since T] [--until T]\n"
    "       gpumemprof html ROOT -o FILE\n"
    "  Writes a self-contained HTML report of the run directory DIR: per device a timeline of allocated,\n"
    "  reserved and NVML memory with alerts, OOMs, NVTX ranges and marks, to zoom into (drag) and select in:\n"
    "  what was live at the highest point of the selection, by kind, largest, call site and a flame graph;\n"
    "  leaks at exit, failed allocations and OOM bundles, alerts. One file, no network access; open it in\n"
    "  any browser. The figures are embedded as JSON (<script id=\"gmp-data\">).\n"
    "  See docs/html-report.md.\n",
    {{"options:",
      {{"--output", "-o", "FILE", "the file to write ('-' is stdout); required"},
       {"--since", nullptr, "T",
        "the report of the window from T (a time since the profiler started: 1.5s,\n"
        "250ms, 2m); summary.json's counts stay the whole run's, marked so"},
       kUntil}}},
    "  ROOT, a directory holding the run directories of a job: one page with a row per rank and device, bars\n"
    "  of their peaks, each rank's timeline on the job's clock, the spread across the ranks and which rank\n"
    "  ran out of memory first (the job view of gpumemprof report ROOT); each process's own page is\n"
    "  written beside it (job.html: job.rank0.html, ...) and linked\n",
};

const CommandOptions kCheckOptions = {
    "check",
    "check DIR_OR_ROOT LIMITS...",
    "a CI gate: exit 1 when a peak, leak or OOM limit broke",
    "usage: gpumemprof check DIR_OR_ROOT [--max-peak SIZE] [--max-reserved SIZE] [--max-leak SIZE]\n"
    "                        [--max-graph-memory SIZE] [--max-category NAME=SIZE] [--no-oom]\n"
    "                        [--baseline DIR --max-growth PERCENT]\n"
    "  A CI gate: checks memory limits on a run directory, or on every run directory of a job root (one per\n"
    "  rank or process, as gpumemprof run -o ROOT leaves them). Peaks are the driver level's, per device\n"
    "  (summary.json's allocated_bytes.peak and reserved_bytes.peak); under PyTorch they hold its segments,\n"
    "  so they bound its tensor-level figures, which are not checked apart. Live at exit is summary.json's\n"
    "  live_at_exit, per process: tensors still allocated and driver allocations outside PyTorch's cache\n"
    "  (the report's leaks). A process killed before writing summary.json is checked on the figures rebuilt\n"
    "  from its trace, with a note. Baseline processes are matched by rank when both record ranks, else by\n"
    "  position. docs/check.md says more.\n",
    {{"options:", kLimitOptions}},
    "Exit status: 0 every limit holds (one line: each limit, the highest figure and where it was); 1 a limit\n"
    "broke (one line each: the rank or pid, the device, the figure, the limit); 2 bad usage or unreadable input.\n",
};

const CommandOptions kTopOptions = {
    "top",
    "top [--once] [--json] [--root DIR]",
    "the GPU memory of the profiled processes running now, refreshed live",
    "usage: gpumemprof top [--interval SECONDS] [--root DIR] [--all] [--keep SECONDS]\n"
    "       gpumemprof top --once|--json [--root DIR] [--all] [--keep SECONDS]\n"
    "  Shows every profiled process of this user that is running now, one row per process and device\n"
    "  with PID, PROCESS (the script for Python), RANK, DEV, ALLOCATED, RESERVED, PEAK (the peak reserved),\n"
    "  TENSORS, CACHE and OUTSIDE (PyTorch's tensors, its cache, and what is reserved outside it; - without\n"
    "  the framework bridge), NVML USED/TOTAL (the device as nvidia-smi sees it), ALERTS, OOMS, AGE and\n"
    "  STATE (running, exited, killed, exec, dead). Processes that ended or died stay listed for --keep\n"
    "  SECONDS. The figures come from each process's live.bin, found through the registry\n"
    "  (GPUMEMPROF_LIVE_REGISTRY, default /tmp/gpumemprof-UID) or under --root DIR.\n"
    "  Keys: < > (or left, right) sort column, r reverse, up/down select, Enter the detail of a process\n"
    "  (history, largest allocations and their call sites, notices), Esc back, p pause, q quit.\n"
    "  When stdout is not a terminal, one table is printed, as with --once. See docs/live.md.\n",
    {{"options:",
      {{"--once", nullptr, nullptr, "print the table once, plainly, and exit"},
       {"--json", nullptr, nullptr, "print the figures once as one JSON document (exact bytes) and exit"},
       {"--interval", nullptr, "SECONDS", "refresh every SECONDS, 0.1 or more, decimals allowed (default 1)"},
       {"--root", nullptr, "DIR",
        "the processes of the run directories under DIR (a job's ROOT, 3 levels down)\n"
        "or of DIR itself, instead of the registry"},
       {"--all", nullptr, nullptr, "also the processes that ended or died longer ago than --keep"},
       {"--keep", nullptr, "SECONDS", "how long ended and dead processes stay listed (default 60)"}}}},
    "Exit status: 0; 2 for a bad command line, or (--once, --json) when the registry or DIR cannot be read.\n",
};

const std::vector<const CommandOptions*>& all_command_options() {
  static const std::vector<const CommandOptions*> all = {&kRunOptions,  &kReportOptions, &kOomOptions,  &kExportOptions,
                                                         &kDiffOptions, &kHtmlOptions,   &kCheckOptions,
                                                         &kTopOptions};
  return all;
}

namespace {

constexpr size_t kHelpWidth = 80;  // the help and the man page that pastes it, whatever the terminal

// The help laid out for kHelpWidth columns: a line that goes on from the one before (indented to
// where that one's text goes on; under a paragraph, unless that ends in a colon, which introduces
// a list) is joined to it, and every line is broken again where it is too long. Lines at the
// margin are left as they are.
std::string fold_help(const std::string& text) {
  std::vector<std::string> lines;
  size_t continues_at = 0;  // where the last line's text goes on; 0: nothing goes on
  bool paragraph = false;   // the last line is plain text, not a described name
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    const size_t indent = line.find_first_not_of(' ');
    if (continues_at != 0 && indent == continues_at && !(paragraph && lines.back().ends_with(':'))) {
      lines.back() += " " + line.substr(indent);
      continue;
    }
    lines.push_back(line);
    const LineLayout l = line_layout(line, kHelpWidth, 0);
    continues_at = indent == std::string::npos || indent == 0 ? 0 : l.indent;
    paragraph = l.head == indent;
  }
  std::string out;
  for (const std::string& line : lines) out += line + "\n";
  return fold_lines(out, kHelpWidth, 0);
}

}  // namespace

std::string help_text(const CommandOptions& command) {
  std::string text = command.usage;
  for (const OptionSection& section : command.sections) {
    text += std::string(section.heading) + "\n";
    for (const Option& o : section.options) {
      std::string left = std::string("  ") + (o.alias ? std::string(o.alias) + ", " : "") + o.name;
      if (o.value) left += std::string(" ") + o.value;
      // A name too long for its column has its description on the lines below.
      left += left.size() < kNameColumn - 1 ? std::string(kNameColumn - left.size(), ' ')
                                            : "\n" + std::string(kNameColumn, ' ');
      text += left;
      for (const char* c = o.help; *c; ++c) {
        text += *c == '\n' ? "\n" + std::string(kNameColumn, ' ') : std::string(1, *c);
      }
      text += "\n";
    }
  }
  return fold_help(text + command.after);
}

std::string top_level_help() {
  std::string text = "usage: gpumemprof COMMAND [ARGS]\n";
  for (const CommandOptions* c : all_command_options()) {
    std::string left = std::string("  ") + c->synopsis;
    text += left + std::string(left.size() < 40 ? 40 - left.size() : 1, ' ') + c->summary + "\n";
  }
  return fold_help(text +
                   "  --version, -V                         print the version\n"
                   "Each command has --help (or gpumemprof help COMMAND).\n"
                   "Exit status 2 means bad usage or unreadable input.\n");
}

std::string accepted_options(const CommandOptions& command) {
  std::string text;
  for (const OptionSection& section : command.sections) {
    for (const Option& o : section.options) text += (o.alias ? std::string(o.alias) + ", " : "") + o.name + ", ";
  }
  return text + "--help";
}

bool is_option(const char* arg, const char* name) {
  const size_t n = std::strlen(name);
  return std::strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

const Option* find_option(const CommandOptions& command, const char* arg) {
  for (const OptionSection& section : command.sections) {
    for (const Option& o : section.options) {
      // A flag takes no "=value".
      auto named = [&](const char* name) { return o.value ? is_option(arg, name) : !std::strcmp(arg, name); };
      if (named(o.name) || (o.alias && named(o.alias))) return &o;
    }
  }
  return nullptr;
}

std::optional<std::string> option_value(int argc, char** argv, int& i) {
  if (const char* eq = std::strchr(argv[i], '=')) return std::string(eq + 1);  // no option's name holds '='
  if (i + 1 >= argc) return std::nullopt;
  return std::string(argv[++i]);
}

}  // namespace gmp::tool
