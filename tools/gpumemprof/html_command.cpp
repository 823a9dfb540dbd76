// `gpumemprof html DIR -o FILE`: one self-contained HTML page (charts, peak breakdown, leaks, OOMs,
// alerts) for a run directory; docs/html-report.md. The page is built in html_report.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <string>

#include "bytes_text.h"
#include "command_args.h"
#include "commands.h"
#include "html_report.h"
#include "human_text.h"
#include "job_view.h"
#include "output_streams.h"
#include "run_analysis.h"
#include "timeline_sets.h"

namespace gmp::tool {
namespace {

// Time slices per device: enough for a zoom of about 2x on a screen-wide chart before slices are wider
// than pixels, each with what was live at its highest point (timeline_sets.h); docs/html-report.md
// gives the file size this makes.
constexpr size_t kTimelineBuckets = 2048;
// The finer level zooming re-slices from (fine_timeline.h): per device at most this many slices
// where something happened, as fine as that allows; docs/html-report.md gives what it adds.
constexpr size_t kFineSlices = 16384;

int usage_error(const std::string& what) {
  std::fprintf(stderr, "gpumemprof html: %s\n", what.c_str());
  return 2;
}

// Writes all of `text` to `f` and closes it; false with `error` naming `path` when any of it failed.
bool write_and_close(FILE* f, const std::string& path, const std::string& text, std::string& error) {
  const bool wrote = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int write_errno = errno;
  if (std::fclose(f) != 0 || !wrote) {
    error = "cannot write " + path + ": " + std::strerror(wrote ? errno : write_errno);
    return false;
  }
  return true;
}

// Writes `text` to `path` ("-": stdout, which main.cpp checks for every command) through a
// temporary file renamed into place, so a failed write never leaves a partial report. A path that
// is there and is no regular file (a device such as /dev/stdout or /dev/full, a FIFO) is written
// in place: renaming over it would replace the device, and its write errors would go unseen. 0
// when written, else the exit status (2: it cannot be created, 1: writing failed midway) with a
// one-line `error`.
int write_output(const std::string& path, const std::string& text, std::string& error) {
  if (path == "-") {
    stdout_carries_data();
    std::fwrite(text.data(), 1, text.size(), stdout);
    return 0;
  }
  struct stat st {};
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    FILE* f = std::fopen(path.c_str(), "wb");
    if (f == nullptr) {
      error = "cannot write " + path + ": " + std::strerror(errno);
      return 2;
    }
    return write_and_close(f, path, text, error) ? 0 : 1;
  }
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    error = "cannot create " + path + ": " + std::strerror(errno);
    return 2;
  }
  if (!write_and_close(f, path, text, error)) {
    unlink(tmp.c_str());
    return 1;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = "cannot create " + path + ": " + std::strerror(errno);
    unlink(tmp.c_str());
    return 2;
  }
  return 0;
}

// One run's page; nullopt with `error`. With `view`, what the job's page shows of it too.
std::optional<std::string> run_page(const std::string& dir, analysis::Options options, std::string& error,
                                    JobMemberView* view = nullptr) {
  reader::Progress progress("gpumemprof html");
  options.progress = &progress;
  options.timeline_buckets = kTimelineBuckets;
  options.fine_slices = kFineSlices;
  auto run = analysis::analyze_run(dir, options, error);
  if (!run) return std::nullopt;
  if (auto past = window_past_end(run->window, run->duration_ns)) {
    error = *past;
    return std::nullopt;
  }
  auto sets = analysis::timeline_sets(*run, options, analysis::SetsOptions{}, error);
  if (!sets) return std::nullopt;
  if (view != nullptr) {
    for (const auto& [ordinal, d] : run->devices) view->timelines[ordinal] = d.timeline;
    view->end_ns = run->duration_ns;
  }
  return render_html_report(*run, *sets);
}

// A job's page, and beside it (unless it goes to stdout) each process's own page, which it links:
// job.html, job.rank0.html, job.rank1.html, ... 0 when all were written, else the exit status.
int write_job_pages(const std::string& root, const std::string& output, std::string& page, std::string& error,
                    size_t& pages) {
  auto job = open_job("html", root);
  if (!job) return 2;
  std::vector<JobMemberView> views(job->members.size());
  const size_t slash = output.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : output.substr(0, slash + 1);
  std::string stem = output.substr(dir.size());
  if (stem.ends_with(".html")) stem.resize(stem.size() - 5);
  for (size_t i = 0; i < job->members.size(); ++i) {
    const reader::JobMember& m = job->members[i];
    if (!m.run) continue;
    auto member_page = run_page(m.path, analysis::Options{}, views[i].error, &views[i]);
    if (!member_page || output == "-") continue;
    std::string label = analysis::member_label(m);
    label.erase(std::remove(label.begin(), label.end(), ' '), label.end());
    const std::string name = stem + "." + label + ".html";
    if (const int status = write_output(dir + name, *member_page, error)) return status;
    views[i].page = name;
    ++pages;
  }
  page = render_job_html(*job, views);
  return 0;
}

}  // namespace

int html_main(int argc, char** argv) {
  std::string dir, output;
  bool have_output = false;
  analysis::Options options;
  if (auto status = take_window_args("html", argc, argv, options.window)) return *status;
  for (int i = 0; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(help_text(kHtmlOptions).c_str(), stdout);
      return 0;
    }
  }
  for (int i = 0; i < argc; ++i) {
    const char* arg = argv[i];
    const Option* o = find_option(kHtmlOptions, arg);
    if (o != nullptr && !std::strcmp(o->name, "--output")) {
      auto v = option_value(argc, argv, i);
      if (!v || v->empty()) return usage_error("-o needs a file name ('-' for stdout)");
      output = *v;
      have_output = true;
    } else if (arg[0] == '-' && arg[1] != '\0') {
      return usage_error(std::string("unknown option '") + arg + "'; accepted: " + accepted_options(kHtmlOptions));
    } else if (dir.empty()) {
      dir = arg;
    } else {
      return usage_error("one run directory expected, got '" + std::string(arg) + "' too");
    }
  }
  if (dir.empty()) return usage_error("no run directory given; usage: gpumemprof html DIR -o FILE");
  if (!have_output) return usage_error("-o FILE is required (the HTML file to write, '-' for stdout)");

  std::string error, page;
  size_t member_pages = 0;  // a job's processes' own pages, written beside its page
  if (is_job_root(dir)) {
    if (!options.window.whole()) return window_refused("html", dir);
    if (const int status = write_job_pages(dir, output, page, error, member_pages)) {
      if (!error.empty()) std::fprintf(stderr, "gpumemprof html: %s\n", error.c_str());
      return status;
    }
  } else {
    auto run = run_page(dir, options, error);
    if (!run) return usage_error(error);
    page = std::move(*run);
  }
  if (const int status = write_output(output, page, error)) {
    std::fprintf(stderr, "gpumemprof html: %s\n", error.c_str());
    return status;
  }
  if (output != "-") {
    const std::string beside =
        member_pages == 0 ? ""
        : member_pages == 1 ? " and 1 process's page beside it"
                            : " and " + std::to_string(member_pages) + " processes' pages beside it";
    std::fprintf(stderr, "gpumemprof html: wrote %s (%s)%s; open it in a browser\n", output.c_str(),
                 bytes_text(page.size()).c_str(), beside.c_str());
  }
  return 0;
}

}  // namespace gmp::tool
