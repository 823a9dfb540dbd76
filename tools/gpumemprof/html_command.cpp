// `gpumemprof html DIR -o FILE`: one self-contained HTML page (charts, peak breakdown, leaks, OOMs,
// alerts) for a run directory; docs/html-report.md. The page is built in html_report.cpp.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "bytes_text.h"
#include "command_args.h"
#include "commands.h"
#include "output_streams.h"
#include "format.h"
#include "html_report.h"
#include "job_view.h"
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
  if (is_job_root(dir)) {
    if (!options.window.whole()) return window_refused("html", dir);
    auto job = open_job("html", dir);
    if (!job) return 2;
    page = render_job_html(*job);
  } else {
    reader::Progress progress("gpumemprof html");
    options.progress = &progress;
    options.timeline_buckets = kTimelineBuckets;
    options.fine_slices = kFineSlices;
    auto run = analysis::analyze_run(dir, options, error);
    if (!run) return usage_error(error);
    if (auto past = window_past_end(run->window, run->duration_ns)) return usage_error(*past);
    auto sets = analysis::timeline_sets(*run, options, analysis::SetsOptions{}, error);
    if (!sets) return usage_error(error);
    page = render_html_report(*run, *sets);
  }
  if (const int status = write_output(output, page, error)) {
    std::fprintf(stderr, "gpumemprof html: %s\n", error.c_str());
    return status;
  }
  if (output != "-") {
    std::fprintf(stderr, "gpumemprof html: wrote %s (%s); open it in a browser\n", output.c_str(),
                 bytes_text(page.size()).c_str());
  }
  return 0;
}

}  // namespace gmp::tool
