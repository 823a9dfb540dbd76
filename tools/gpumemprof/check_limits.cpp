#include "check_limits.h"

#include <cctype>
#include <cstring>
#include <string_view>
#include <utility>

#include "check_figures.h"
#include "command_args.h"
#include "device_limit_spec.h"
#include "human_text.h"
#include "run_directory_files.h"
#include "value_text.h"

namespace gmp::tool {
namespace {

std::string prefix(const char* command) { return std::string("gpumemprof ") + command + ": "; }

// `runs` when every one was opened and its summary holds what a check reads; else nullopt after one
// line on stderr per directory that could not be read, or whose summary.json holds a figure that is
// not a count: a gate that skipped one, or read such a figure as 0, would pass on what it never saw.
std::optional<std::vector<reader::JobMember>> readable_runs(const char* command, const char* what,
                                                            std::optional<std::vector<reader::JobMember>> runs) {
  bool readable = true;
  for (const reader::JobMember& m : *runs) {
    // A summary rebuilt from the trace is ours; summary.json as read must hold counts.
    const std::optional<std::string> invalid =
        m.run && !m.run->summary_rebuilt ? analysis::invalid_figure(m.run->summary) : std::nullopt;
    if (m.run && !invalid) continue;
    const std::string error = m.run ? m.path + "/" + kSummaryFile + ": " + *invalid : m.error;
    std::fprintf(stderr, "%s%s%s\n", prefix(command).c_str(), what, error.c_str());
    readable = false;
  }
  if (!readable) return std::nullopt;
  return runs;
}

// Reads one run directory or a job root, as readable_runs() takes them.
std::optional<std::vector<reader::JobMember>> open_runs(const char* command, const char* what,
                                                        const std::string& path) {
  std::string error;
  std::optional<std::vector<reader::JobMember>> runs;
  if (reader::looks_like_run_directory(path)) {
    reader::JobMember m;
    m.path = path;
    m.run = reader::open_run_directory(path, m.error);
    runs.emplace().push_back(std::move(m));
  } else {
    std::string left_out;  // the root's earlier jobs: not checked, and said so
    runs = reader::open_job_directory(path, error, &left_out);
    if (runs && !left_out.empty()) say(prefix(command) + what + left_out, "", "  ", stderr);
  }
  if (!runs) {
    std::fprintf(stderr, "%s%s%s\n", prefix(command).c_str(), what, error.c_str());
    return std::nullopt;
  }
  return readable_runs(command, what, std::move(runs));
}

// The verdict on `runs` (nullopt: unreadable, already said) printed on `out`; the status to return.
int print_verdict(const char* command, const std::string& dir_or_root,
                  const std::optional<std::vector<reader::JobMember>>& runs, const analysis::Limits& limits,
                  FILE* out) {
  if (!runs) return 2;
  const std::string lead = prefix(command);
  std::string error;
  const auto verdict = analysis::evaluate_limits(*runs, limits, dir_or_root, error);
  if (!verdict) {
    std::fprintf(stderr, "%s%s\n", lead.c_str(), error.c_str());
    return 2;
  }
  for (const std::string& line : verdict->notes) std::fprintf(out, "%s%s\n", lead.c_str(), line.c_str());
  for (const std::string& line : verdict->broken) std::fprintf(out, "%s%s\n", lead.c_str(), line.c_str());
  if (!verdict->broken.empty()) return 1;
  std::fprintf(out, "%s%s\n", lead.c_str(), verdict->passed.c_str());
  return 0;
}

// One line for an option's missing or bad value: the option, the value and what is accepted.
void refuse(const char* command, const char* option, const std::optional<std::string>& value, const char* what,
            const char* accepted) {
  if (value) {
    std::fprintf(stderr, "%s%s '%s' is not %s; accepted: %s\n", prefix(command).c_str(), option, value->c_str(), what,
                 accepted);
  } else {
    std::fprintf(stderr, "%s%s needs a value; accepted: %s\n", prefix(command).c_str(), option, accepted);
  }
}

}  // namespace

// --max-category NAME=SIZE (activations=40GiB); repeatable, one per category.
bool take_category_arg(const char* command, int argc, char** argv, int& i, analysis::Limits& limits) {
  const auto v = option_value(argc, argv, i);
  std::string names;
  for (int c = 1; c < kTensorCategoryCount; ++c) {
    names += std::string(c == 1 ? "" : ", ") + std::string(tensor_category_name(static_cast<TensorCategory>(c)));
  }
  const std::string accepted = "NAME=SIZE, NAME one of " + names + " (activations=40GiB)";
  const size_t eq = v ? v->find('=') : std::string::npos;
  if (eq == std::string::npos) {
    refuse(command, "--max-category", v, "NAME=SIZE", accepted.c_str());
    return false;
  }
  std::string name = v->substr(0, eq);
  for (char& ch : name) ch = ch == '-' ? '_' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  std::optional<TensorCategory> category;
  for (int c = 1; c < kTensorCategoryCount; ++c) {
    if (tensor_category_name(static_cast<TensorCategory>(c)) == name) category = static_cast<TensorCategory>(c);
  }
  const auto size = parse_size(v->substr(eq + 1));
  if (!category || !size) {
    refuse(command, "--max-category", v, !category ? "a category and a size" : "NAME=SIZE with a size",
           (accepted + "; SIZE " + kSizeForm).c_str());
    return false;
  }
  limits.max_category[*category] = *size;
  return true;
}

bool take_growth_arg(const char* command, int argc, char** argv, int& i, analysis::Limits& limits) {
  const auto v = option_value(argc, argv, i);
  std::string_view number = v ? std::string_view(*v) : std::string_view();
  if (number.ends_with('%')) number.remove_suffix(1);
  limits.max_growth = parse_double(number);
  if (!limits.max_growth) {
    refuse(command, limits.growth_option, v, "a percentage", "a number, decimals allowed, an optional % (10, 2.5%)");
  }
  return limits.max_growth.has_value();
}

LimitArg take_limit_arg(const char* command, int argc, char** argv, int& i, analysis::Limits& limits) {
  if (!std::strcmp(argv[i], "--no-oom")) {
    limits.no_oom = true;
    return LimitArg::Taken;
  }
  for (auto [name, field] :
       {std::pair{"--max-peak", &limits.max_peak}, std::pair{"--max-reserved", &limits.max_reserved},
        std::pair{"--max-leak", &limits.max_leak}, std::pair{"--max-graph-memory", &limits.max_graph_memory}}) {
    if (!is_option(argv[i], name)) continue;
    const auto v = option_value(argc, argv, i);
    // --max-peak L4: will the job fit that GPU (docs/device-limit.md)?
    const bool gpu = field == &limits.max_peak;
    *field = v && gpu ? known_gpu_bytes(*v) : std::nullopt;
    if (v && !*field) *field = parse_size(*v);
    if (*field) return LimitArg::Taken;
    refuse(command, name, v, gpu ? "a size or a GPU name" : "a size",
           gpu ? (std::string(kSizeForm) + ", or a GPU name: " + known_gpu_names()).c_str() : kSizeForm);
    return LimitArg::Refused;
  }
  if (is_option(argv[i], "--max-growth")) {
    return take_growth_arg(command, argc, argv, i, limits) ? LimitArg::Taken : LimitArg::Refused;
  }
  if (is_option(argv[i], "--max-category")) {
    return take_category_arg(command, argc, argv, i, limits) ? LimitArg::Taken : LimitArg::Refused;
  }
  if (is_option(argv[i], "--baseline")) {
    const auto v = option_value(argc, argv, i);
    if (!v || v->empty()) {
      std::fprintf(stderr, "%s--baseline needs a run directory or a job root\n", prefix(command).c_str());
      return LimitArg::Refused;
    }
    limits.baseline_path = *v;
    return LimitArg::Taken;
  }
  return LimitArg::Other;
}

std::optional<int> prepare_limits(const char* command, analysis::Limits& limits) {
  if (limits.baseline_path.empty() != !limits.max_growth) {
    std::fprintf(stderr, "%s%s without %s; accepted: --baseline DIR --max-growth PERCENT, together\n",
                 prefix(command).c_str(), limits.max_growth ? "--max-growth" : "--baseline",
                 limits.max_growth ? "--baseline" : "--max-growth");
    return 2;
  }
  if (limits.baseline_path.empty()) return std::nullopt;
  auto runs = open_runs(command, "baseline: ", limits.baseline_path);
  if (!runs) return 2;
  limits.baseline = std::move(*runs);
  return std::nullopt;
}

int check_limits(const char* command, const std::string& dir_or_root, const analysis::Limits& limits, FILE* out) {
  return print_verdict(command, dir_or_root, open_runs(command, "", dir_or_root), limits, out);
}

int check_limits(const char* command, const std::string& where, const std::vector<reader::JobMember>& members,
                 const analysis::Limits& limits, FILE* out) {
  return print_verdict(command, where, readable_runs(command, "", members), limits, out);
}

}  // namespace gmp::tool
