// report_bench [--events N] [--rounds R] [--keep DIR] [--job RANKS]: how long `gpumemprof report` takes on a
// long trace, and how much memory it needs. Writes a synthetic run directory (allocation churn on two
// devices with a bounded live set, pools, samples and alerts, like a training job's), then runs the
// tool R times as a child process and reports the median wall time and the peak RSS (wait4).
// Both the normal case (summary.json present) and a killed run (summary rebuilt from the trace),
// a window of the run, then each export format once, with the size of what it wrote (written into
// the run directory and removed at once: a 10^7-event trace is 640 MB, its exports up to 8 GB).
// With --job RANKS: a job instead, RANKS rank directories of N events each under one root (N
// defaults to 10^5 there), and the job view of it (report, --json, html, perfetto export) timed.
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "accounting.h"
#include "summary.h"
#include "summary_builder.h"
#include "trace_format.h"

namespace {

using gmp::Event;
using gmp::Kind;
using gmp::Op;

struct Generator {
  FILE* out;
  gmp::Accounting acc;
  uint64_t ts = 1'000'000'000;
  uint64_t written = 0;

  void emit(Event e) {
    e.timestamp_ns = ts;
    ts += 1000;  // 1 µs apart: 10^7 events span 10 s
    acc.apply(e);
    fwrite(&e, sizeof e, 1, out);
    ++written;
  }
};

// Allocation churn: each step allocates and, once the live set is full, frees a random live one.
// `rank`: the run is that rank of a job (the manifest says so, and its process started `rank` ms
// after rank 0's), and its own random sequence.
void generate(const std::string& dir, uint64_t events, int rank = -1) {
  mkdir(dir.c_str(), 0700);
  Generator g{fopen((dir + "/trace.gmpt").c_str(), "wb")};
  const auto header = gmp::make_trace_header(4242, 0, g.ts);
  fwrite(&header, sizeof header, 1, g.out);
  for (int16_t d = 0; d < 2; ++d) {
    Event info{};
    info.op = Op::DeviceInfo;
    info.device = d;
    info.size = 80ull << 30;
    g.emit(info);
  }
  std::mt19937_64 rng(7 + std::max(rank, 0));
  constexpr size_t kLive = 20000;
  std::vector<Event> live;
  live.reserve(kLive);
  uint64_t next_address = 0x7f0000000000;
  const uint64_t pool = 0x1000;
  while (g.written < events) {
    Event a{};
    a.op = Op::Alloc;
    a.device = static_cast<int16_t>(rng() % 2);
    a.thread_id = 100 + static_cast<uint32_t>(rng() % 8);
    a.size = 512ull << (rng() % 17);  // 512 B .. 32 MiB
    a.address = next_address;
    next_address += (a.size + 511) & ~511ull;
    const bool pooled = rng() % 4 == 0;
    a.kind = pooled ? Kind::Pool : Kind::Linear;
    a.api = pooled ? gmp::Api::cuMemAllocAsync : gmp::Api::cuMemAlloc_v2;
    a.object = pooled ? pool + a.device : 0;
    a.stack_id = 1 + static_cast<uint32_t>(rng() % 500);
    g.emit(a);
    live.push_back(a);
    if (live.size() >= kLive) {
      const size_t i = rng() % live.size();
      Event f = live[i];
      live[i] = live.back();
      live.pop_back();
      f.op = Op::Free;
      f.api = f.kind == Kind::Pool ? gmp::Api::cuMemFreeAsync : gmp::Api::cuMemFree_v2;
      g.emit(f);
    }
    if (g.written % 1000 == 0) {
      Event s{};
      s.op = Op::Sample;
      s.device = 0;
      s.size = 40ull << 30;
      s.object = 80ull << 30;
      s.value = 30ull << 30;
      g.emit(s);
    }
  }
  fclose(g.out);
  const std::string job_fields =
      rank < 0 ? "" : R"("host": "node)" + std::to_string(rank / 8) + R"(", "rank": )" + std::to_string(rank) +
                          R"(, "launcher": "torchrun", "start_realtime_ns": )" +
                          std::to_string(1'800'000'000'000'000'000ull + rank * 1'000'000ull) + ", ";
  std::ofstream(dir + "/manifest.json") << R"({"schema_version": 1, "pid": )" << 4242 + std::max(rank, 0) << ", "
                                        << job_fields << R"("exe": "/synthetic/train",
    "devices": [{"ordinal": 0, "name": "Synthetic 0"}, {"ordinal": 1, "name": "Synthetic 1"}]})";
  gmp::SummaryContext ctx;
  ctx.start_monotonic_ns = header.start_monotonic_ns;
  std::ofstream(dir + "/summary.json") << to_json(gmp::build_summary(g.acc, ctx)).dump(2);
}

struct Measure {
  double seconds;
  long max_rss_kib;
  int status;
};

Measure run_tool(const std::vector<std::string>& args) {
  const auto start = std::chrono::steady_clock::now();
  std::fflush(stdout);  // or the child would print what is still buffered
  const pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout)) _exit(126);
    std::vector<char*> argv;
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage use{};
  wait4(pid, &status, 0, &use);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return {s, use.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)};
}

// One export into `dir`, timed, its size printed, the file removed.
void export_once(const std::string& tool, const std::string& dir, const std::vector<std::string>& options,
                 uint64_t events) {
  const std::string out = dir + "/export.out";
  std::vector<std::string> args = {tool, "export", dir, "-o", out};
  std::string what = "export";
  for (const std::string& o : options) {
    args.push_back(o);
    what += " " + o;
  }
  const Measure m = run_tool(args);
  struct stat st {};
  stat(out.c_str(), &st);
  unlink(out.c_str());
  if (m.status != 0) {
    std::fprintf(stderr, "report_bench: %s exited with %d\n", what.c_str(), m.status);
    std::exit(1);
  }
  std::printf("%-58s %8.2f s  %10.1f M events/s  peak RSS %6.1f MiB  %9.1f MB\n", what.c_str(), m.seconds,
              events / m.seconds / 1e6, m.max_rss_kib / 1024.0, st.st_size / 1e6);
}

void report(const char* what, const std::vector<std::string>& args, int rounds, uint64_t events) {
  std::vector<double> times;
  long rss = 0;
  for (int i = 0; i < rounds; ++i) {
    Measure m = run_tool(args);
    if (m.status != 0) {
      std::fprintf(stderr, "report_bench: %s exited with %d\n", what, m.status);
      std::exit(1);
    }
    times.push_back(m.seconds);
    rss = std::max(rss, m.max_rss_kib);
  }
  std::sort(times.begin(), times.end());
  const double median = times[times.size() / 2];
  std::printf("%-58s %8.2f s  %10.1f M events/s  peak RSS %6.1f MiB\n", what, median, events / median / 1e6,
              rss / 1024.0);
}

void remove_run(const std::string& dir) {
  for (const char* f : {"/trace.gmpt", "/manifest.json", "/summary.json"}) unlink((dir + f).c_str());
  rmdir(dir.c_str());
}

// The job view over `ranks` run directories of `events` events each, written under `root` and
// removed afterwards.
void bench_job(const std::string& root, int ranks, uint64_t events, int rounds) {
  mkdir(root.c_str(), 0700);
  std::vector<std::string> dirs;
  for (int r = 0; r < ranks; ++r) {
    dirs.push_back(root + "/rank" + std::to_string(r) + ".train." + std::to_string(4242 + r));
    generate(dirs.back(), events, r);
  }
  std::printf("job: %d ranks of %llu events each under %s (median of %d runs)\n", ranks, (unsigned long long)events,
              root.c_str(), rounds);
  const std::string tool = GMP_TOOL_PATH;
  const uint64_t all = events * static_cast<uint64_t>(ranks);
  report("report ROOT", {tool, "report", root}, rounds, all);
  report("report ROOT --json", {tool, "report", root, "--json"}, rounds, all);
  report("html ROOT", {tool, "html", root, "-o", "/dev/null"}, rounds, all);
  // A job the scheduler killed: no rank wrote its summary.json, each is rebuilt from its trace.
  for (const std::string& d : dirs) std::rename((d + "/summary.json").c_str(), (d + "/summary.json.bak").c_str());
  report("report ROOT (killed job: every summary rebuilt)", {tool, "report", root}, rounds, all);
  for (const std::string& d : dirs) std::rename((d + "/summary.json.bak").c_str(), (d + "/summary.json").c_str());
  export_once(tool, root, {"--format", "perfetto"}, all);
  for (const std::string& d : dirs) remove_run(d);
  rmdir(root.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<uint64_t> events_asked;
  int rounds = 3, ranks = 0;
  std::string dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--events")) events_asked = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--job")) ranks = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--keep")) dir = argv[i + 1];
    else {
      std::fprintf(stderr, "report_bench: unknown option '%s'; accepted: --events N, --rounds R, --keep DIR, "
                   "--job RANKS\n",
                   argv[i]);
      return 2;
    }
  }
  if (ranks > 0) {
    bench_job("/tmp/gpumemprof-job-bench-" + std::to_string(getpid()), ranks, events_asked.value_or(100'000), rounds);
    return 0;
  }
  const uint64_t events = events_asked.value_or(10'000'000);
  const bool keep = !dir.empty();
  if (!keep) dir = "/tmp/gpumemprof-report-bench-" + std::to_string(getpid());
  generate(dir, events);
  struct stat st {};
  stat((dir + "/trace.gmpt").c_str(), &st);
  std::printf("trace: %llu events, %.0f MiB, %s (median of %d runs)\n", (unsigned long long)events,
              st.st_size / 1048576.0, dir.c_str(), rounds);
  const std::string tool = GMP_TOOL_PATH;
  report("report (summary.json present)", {tool, "report", dir}, rounds, events);
  report("report --json", {tool, "report", dir, "--json"}, rounds, events);
  std::rename((dir + "/summary.json").c_str(), (dir + "/summary.json.bak").c_str());
  report("report (killed run: rebuilt)", {tool, "report", dir}, rounds, events);
  std::rename((dir + "/summary.json.bak").c_str(), (dir + "/summary.json").c_str());
  // The middle fifth of the run (events are 1 us apart from the start).
  const std::string since = std::to_string(events / 1000 * 2 / 5) + "ms";
  const std::string until = std::to_string(events / 1000 * 3 / 5) + "ms";
  report("report --since 2/5 --until 3/5", {tool, "report", dir, "--since", since, "--until", until}, rounds, events);
  const std::vector<std::vector<std::string>> exports = {
      {"--format", "perfetto"},
      {"--format", "perfetto", "--resolution", "0"},
      {"--format", "perfetto", "--min-size", "16M"},
      {"--format", "perfetto", "--since", since, "--until", until},
      {"--format", "telemetry-v2"},
      {"--format", "telemetry-v2", "--resolution", "0"},
      {"--format", "csv"},
      {"--format", "csv", "--min-size", "16M"},
      {"--format", "jsonl"},
  };
  for (const auto& options : exports) export_once(tool, dir, options, events);
  if (!keep) remove_run(dir);
  return 0;
}
