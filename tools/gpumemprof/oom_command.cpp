// `gpumemprof oom BUNDLE_OR_DIR [--json]`: explains out-of-memory failures from their bundles
// (docs/oom-bundles.md). The argument is one bundle, a run directory (every bundle of the run,
// oldest first), or a directory of bundles (GPUMEMPROF_OOM_DIR). The explanation itself is in
// analysis/oom_facts.cpp, analysis/oom_advice.cpp and oom_render.cpp; this file finds the bundles
// and prints.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "attribution_reader.h"
#include "bytes_text.h"
#include "call_sites.h"
#include "command_args.h"
#include "commands.h"
#include "count_text.h"
#include "human_text.h"
#include "job_directory.h"
#include "job_view.h"
#include "json_text.h"
#include "oom_advice.h"
#include "oom_bundle_reader.h"
#include "oom_categories.h"
#include "oom_facts.h"
#include "oom_render.h"
#include "output_streams.h"
#include "run_directory_files.h"
#include "run_directory_reader.h"
#include "symbolizer.h"
#include "terminal_text.h"
#include "trace_format.h"
#include "trace_reader.h"

namespace gmp::tool {
namespace {

constexpr const char* kExpected =
    "expected an OOM bundle directory (oom_dump_..., with metadata.json), a gpumemprof run directory "
    "(manifest.json, trace.gmpt, oom/) or a directory of bundles";

enum class Source { Bundle, RunDirectory, BundleDirectory };

bool exists(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0;
}
bool is_dir(const std::string& p) {
  struct stat st {};
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool is_empty_dir(const std::string& p) {
  DIR* d = opendir(p.c_str());
  if (d == nullptr) return false;
  bool empty = true;
  while (dirent* e = readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) {
      empty = false;
      break;
    }
  }
  closedir(d);
  return empty;
}

// The uid owning `p`, when it can be examined.
std::optional<uid_t> owner_of(const std::string& p) {
  struct stat st {};
  if (stat(p.c_str(), &st) != 0) return std::nullopt;
  return st.st_uid;
}

std::string trim_slashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// What the run's summary says about out-of-memory failures.
struct RunOom {
  std::string path, exe;
  uint64_t pid = 0, failures = 0, bundles_written = 0, recovered = 0;
  bool summary_rebuilt = false;
  std::string rebuild_reason;
  std::vector<SummaryFailure> failed_oom;  // summary.json's failed requests with CUDA_ERROR_OUT_OF_MEMORY
};

// `oom ROOT` of a job: which process is explained (the first to run out) and the others that did.
struct JobPart {
  std::string root;
  size_t processes = 0;
  std::string explained;                                   // its label, "" when no process ran out
  std::vector<std::string> lines;                          // failed_first_lines()
  std::vector<std::pair<std::string, std::string>> others; // label, run directory
};

struct Result {
  Source source = Source::Bundle;
  std::string path;
  std::optional<JobPart> job;
  std::optional<RunOom> run;
  std::vector<analysis::OomExplanation> explained;
  std::vector<std::string> errors;  // bundles that could not be read
  std::vector<std::string> notes;
};

// Which bundles are the run's: `pid` 0 and no `owner` keep every bundle; else only those of that
// process, written by that user (the run directory's owner: a shared GPUMEMPROF_OOM_DIR also holds
// other users' bundles, of processes that may have had the same pid in another container).
void read_bundles(const std::vector<std::string>& paths, uint64_t pid, std::optional<uid_t> owner, Result& out) {
  std::vector<reader::OomBundle> bundles;
  for (const auto& p : paths) {
    if (owner && owner_of(p) != owner) continue;  // another user's bundle in a shared directory
    std::string error;
    auto b = reader::read_oom_bundle(p, error);
    if (!b) {
      out.errors.push_back(error);
      continue;
    }
    if (pid != 0 && b->pid && *b->pid != pid) continue;  // another process's bundle in a shared directory
    bundles.push_back(std::move(*b));
  }
  reader::sort_oom_bundles(bundles);
  for (const auto& b : bundles) out.explained.push_back(analysis::explain_oom(b));
}

// The stack ids an explanation shows: its largest holders', and a framework OOM's tensor sites.
std::vector<uint32_t> shown_stacks(const analysis::OomExplanation& x) {
  std::vector<uint64_t> wanted;
  for (const auto& a : x.top) wanted.push_back(a.stack_id);
  if (x.framework) {
    for (const auto& site : x.framework->sites) wanted.push_back(site.stack_id);
  }
  std::vector<uint32_t> ids;
  for (uint64_t id : wanted) {
    if (id != 0 && id <= UINT32_MAX) ids.push_back(static_cast<uint32_t>(id));
  }
  return ids;
}

// Names the call sites of the largest holders from the run's attribution.jsonl, when there is one:
// a bundle records stack ids only, the run directory holds what they mean. False with `error` when
// the file is there but cannot be read. A framework OOM's advice names its tensors' call sites: it
// is given again once they are named.
bool name_holder_sites(const std::string& run_dir, std::vector<analysis::OomExplanation>& explained,
                       std::string& error) {
  std::vector<uint32_t> ids;
  for (const auto& x : explained) {
    for (uint32_t id : shown_stacks(x)) ids.push_back(id);
  }
  if (ids.empty()) return true;
  const reader::Attribution attribution = reader::read_attribution(run_dir + "/" + kAttributionFile);
  error = attribution.error;
  if (!attribution.present) return error.empty();
  analysis::Symbolizer symbolizer(attribution);
  const analysis::StackTable stacks = symbolizer.symbolize(ids);
  for (auto& x : explained) {
    for (uint32_t id : shown_stacks(x)) x.sites[id] = analysis::site_label(id, stacks);
    if (x.framework) x.advice = analysis::oom_advice(x);
  }
  return true;
}

// A framework OOM's tensors by category, from the run's trace (oom_categories.h), when the run
// directory is there; its advice is given again with them. Nothing when the trace cannot be read:
// the bundle's own explanation stands.
void split_by_category(const std::string& run_dir, std::vector<analysis::OomExplanation>& explained) {
  if (std::none_of(explained.begin(), explained.end(), [](const auto& x) { return x.framework.has_value(); }) ||
      !reader::has_trace(run_dir)) {
    return;
  }
  std::string error;
  const auto run = reader::open_run_directory(run_dir, error);
  if (!run) return;
  const reader::Attribution attribution = reader::read_attribution(run_dir + "/" + kAttributionFile);
  for (auto& x : explained) {
    if (!x.framework) continue;
    x.categories = analysis::categories_at_oom(run_dir, attribution, x.request, error);
    x.categories_setting = run->manifest.config.categories;
    x.advice = analysis::oom_advice(x);
  }
}

std::string no_oom_text(const RunOom& run) {
  if (run.failures == 0) return "No out-of-memory failure in this run: nothing to explain.\n";
  std::string s = "The run had " + std::to_string(run.failures) +
                  " out-of-memory failure(s) but no bundle is left to explain: none was written (see gpumemprof.log in "
                  "the run directory; for example GPUMEMPROF_OOM_DIR was a symlink or not writable).\n";
  if (!run.failed_oom.empty()) s += "Failed requests (summary.json):\n";
  for (const auto& f : run.failed_oom) {
    s += "  " + printable(f.api.empty() ? "?" : f.api) + " of " + bytes_text(f.size) + " on device " +
         std::to_string(f.device) + ", " + human_duration_ns(f.at_ns) + " after profiling started\n";
  }
  return s;
}

void print_text(const Result& r) {
  std::string out;
  if (r.job) {
    const JobPart& j = *r.job;
    out += "gpumemprof oom: job " + printable(j.root) + " (" + counted(j.processes, "process") + ")\n";
    if (j.explained.empty()) out += "  no process ran out of memory: nothing to explain\n";
    for (const std::string& line : j.lines) out += "  " + printable(line) + "\n";
    if (!j.others.empty()) out += "  the others' own explanations:\n";
    for (const auto& [label, dir] : j.others) out += "    " + label + "  gpumemprof oom " + printable(dir) + "\n";
    if (j.explained.empty()) {
      std::fputs(out.c_str(), stdout);
      return;
    }
    out += "  explaining " + j.explained + ":\n\n";
  }
  if (r.run) {
    const RunOom& run = *r.run;
    out += "gpumemprof oom: run directory " + printable(run.path) + "\n";
    if (run.pid != 0 || !run.exe.empty()) {
      out += "  process " + std::to_string(run.pid) + (run.exe.empty() ? "" : " (" + printable(run.exe) + ")") + "\n";
    }
    out += "  out-of-memory failures " + std::to_string(run.failures) + ", bundles written " +
           std::to_string(run.bundles_written) + ", recovered episodes " + std::to_string(run.recovered) + "\n";
    if (run.summary_rebuilt) out += "  note: " + printable(run.rebuild_reason) + "; counts rebuilt from the trace\n";
  } else if (r.source == Source::BundleDirectory) {
    out += "gpumemprof oom: bundle directory " + printable(r.path) + "\n";
  }
  for (const auto& n : r.notes) out += "  note: " + printable(n) + "\n";
  if (r.source != Source::Bundle && !r.explained.empty()) {
    out += "  " + std::to_string(r.explained.size()) + (r.explained.size() == 1 ? " bundle" : " bundles") +
           ", oldest first\n";
  }
  if (r.run && r.explained.empty() && r.errors.empty()) out += "\n" + no_oom_text(*r.run);
  for (size_t i = 0; i < r.explained.size(); ++i) {
    if (r.source != Source::Bundle) {
      out += "\n=== bundle " + std::to_string(i + 1) + " of " + std::to_string(r.explained.size()) + " ===\n";
    }
    out += oom_explanation_text(r.explained[i]);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void print_json(const Result& r) {
  nlohmann::json out;
  const char* type = r.source == Source::Bundle         ? "bundle"
                     : r.source == Source::RunDirectory ? "run_directory"
                                                        : "bundle_directory";
  out["source"] = {{"path", r.path}, {"type", type}};
  if (r.job) {
    nlohmann::json others = nlohmann::json::array();
    for (const auto& [label, dir] : r.job->others) others.push_back({{"label", label}, {"path", dir}});
    out["job"] = {{"root", r.job->root},
                  {"processes", r.job->processes},
                  {"explained", r.job->explained.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.job->explained)},
                  {"others", others}};
    if (r.job->explained.empty()) out["source"] = {{"path", r.job->root}, {"type", "job"}};
  }
  if (r.run) {
    out["run"] = {{"pid", r.run->pid},
                  {"exe", r.run->exe},
                  {"oom_failures", r.run->failures},
                  {"bundles_written", r.run->bundles_written},
                  {"recovered", r.run->recovered},
                  {"summary_rebuilt", r.run->summary_rebuilt}};
  } else {
    out["run"] = nullptr;
  }
  nlohmann::json bundles = nlohmann::json::array();
  for (const auto& x : r.explained) bundles.push_back(oom_explanation_json(x));
  out["bundles"] = bundles;
  out["errors"] = r.errors;
  out["notes"] = r.notes;
  out["had_oom"] = !r.explained.empty() || (r.run && r.run->failures > 0);
  if (r.run && r.explained.empty() && r.errors.empty()) {
    std::string message = no_oom_text(*r.run);
    message = message.substr(0, message.find('\n'));
    out["message"] = message;
  }
  stdout_carries_data();
  std::printf("%s\n", json_text(out, 2).c_str());
}

int fail(const std::string& message) {
  std::fprintf(stderr, "gpumemprof oom: %s\n", message.c_str());
  return 2;
}

}  // namespace

int oom_main(int argc, char** argv) {
  PathArgs args;
  if (auto status = parse_path_args(kOomOptions, argc, argv, args)) return *status;
  if (args.paths.size() > 1) {
    return fail("one bundle or directory expected, got '" + args.paths[0] + "' and '" + args.paths[1] + "'");
  }
  std::string path = args.paths.empty() ? std::string() : args.paths[0];
  const bool json = args.json;
  if (path.empty())
    return fail("no bundle or directory given; usage: gpumemprof oom BUNDLE_OR_DIR [--json] (--help says more)");
  path = trim_slashes(path);
  if (!exists(path)) return fail(path + " does not exist; " + kExpected);
  if (!is_dir(path)) return fail(path + " is not a directory; " + kExpected);

  Result r;
  // A job's ROOT: the process that ran out of memory first is explained, the others named.
  if (!reader::looks_like_oom_bundle(path) && !reader::looks_like_run_directory(path) &&
      reader::list_oom_bundles(path).empty() && is_job_root(path)) {
    auto job = open_job("oom", path);
    if (!job) return 2;
    JobPart part{path, job->members.size(), "", failed_first_lines(*job), {}};
    std::optional<size_t> first;
    if (!job->ooms.empty()) first = job->ooms.front().member;
    for (size_t i = 0; i < job->members.size(); ++i) {
      const reader::JobMember& m = job->members[i];
      if (!m.run || m.run->figures.oom.failures == 0) continue;
      if (!first) first = i;  // none at a known time: the first in job order
      if (i != *first) part.others.push_back({analysis::member_label(m), m.path});
    }
    if (first) {
      part.explained = analysis::member_label(job->members[*first]);
      path = job->members[*first].path;
    }
    r.job = std::move(part);
    if (!first) {
      r.path = r.job->root;
      r.source = Source::RunDirectory;
      if (json) print_json(r);
      else print_text(r);
      return 0;
    }
  }
  r.path = path;
  const bool bundle_like = reader::looks_like_oom_bundle(path);
  const bool run_like = reader::has_trace(path) || exists(path + "/" + kManifestFile) ||
                        is_dir(path + "/" + kOomSubdirectory);
  if (bundle_like) {
    r.source = Source::Bundle;
    std::string error;
    auto b = reader::read_oom_bundle(path, error);
    if (!b) return fail(error);
    r.explained.push_back(analysis::explain_oom(*b));
    // The default place: <run dir>/oom/<bundle>.
    if (!name_holder_sites(path + "/../..", r.explained, error)) return fail(error);
    split_by_category(path + "/../..", r.explained);
  } else if (run_like) {
    r.source = Source::RunDirectory;
    std::string error;
    auto run = reader::open_run_directory(path, error);
    // The configured OOM directory and cwd, as the manifest holds them.
    std::vector<std::string> dirs = reader::run_oom_dirs(path, run ? run->manifest : ManifestRecord());
    std::vector<std::string> bundles;
    for (const auto& d : dirs) {
      for (auto& b : reader::list_oom_bundles(d)) bundles.push_back(std::move(b));
    }
    if (!run) {
      // A run directory's own files that are there but unreadable are an error, as for every
      // command; a directory holding bundles and nothing else is explained from the bundles.
      if (bundles.empty() || exists(path + "/" + kManifestFile) || reader::has_trace(path)) {
        return fail(bundles.empty() ? error + "; " + kExpected : error);
      }
      r.notes.push_back(error + "; explaining the bundles alone");
    } else {
      RunOom o;
      o.path = path;
      o.pid = run->manifest.pid.value_or(0);
      o.exe = run->manifest.exe;
      const Summary& s = run->figures;
      o.failures = s.oom.failures;
      o.bundles_written = s.oom.bundles_written;
      o.recovered = s.oom.recovered;
      o.summary_rebuilt = run->summary_rebuilt;
      o.rebuild_reason = run->rebuild_reason;
      for (const auto& f : s.failed_allocations) {
        if (f.error == kOutOfMemory && o.failed_oom.size() < 10) o.failed_oom.push_back(f);
      }
      r.run = std::move(o);
    }
    read_bundles(bundles, r.run ? r.run->pid : 0, owner_of(path), r);
    if (!name_holder_sites(path, r.explained, error)) return fail(error);
    split_by_category(path, r.explained);
    if (r.run && r.run->bundles_written > r.explained.size() + r.errors.size() && !r.explained.empty()) {
      r.notes.push_back(
          std::to_string(r.run->bundles_written) + " bundles were written and " +
          std::to_string(r.explained.size() + r.errors.size()) +
          " remain: retention (GPUMEMPROF_OOM_MAX_DUMPS, GPUMEMPROF_OOM_MAX_TOTAL_MB) removed the oldest");
    }
  } else if (!reader::list_oom_bundles(path).empty()) {
    r.source = Source::BundleDirectory;
    read_bundles(reader::list_oom_bundles(path), 0, std::nullopt, r);
  } else if (is_empty_dir(path)) {
    return fail(path + " is an empty directory; " + kExpected);
  } else {
    return fail(path + " is neither an OOM bundle (no metadata.json) nor a gpumemprof run directory (no manifest.json, "
                "trace.gmpt or oom/); " + kExpected);
  }

  if (json) print_json(r);
  else print_text(r);
  if (r.errors.empty()) return 0;
  // One line however many: the explanations above are what could be read (--json lists each error).
  const size_t total = r.errors.size() + r.explained.size();
  return fail(r.errors.size() == 1 && total == 1
                  ? r.errors.front()
                  : "skipped " + std::to_string(r.errors.size()) + " of " + std::to_string(total) +
                        " bundles that cannot be read; the first: " + r.errors.front());
}

}  // namespace gmp::tool
