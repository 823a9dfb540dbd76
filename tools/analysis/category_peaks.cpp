#include "category_peaks.h"

#include "run_analysis.h"

namespace gmp::analysis {

std::optional<RunCategoryPeaks> category_peaks(const std::string& dir, std::string& error) {
  Options options;
  options.timeline_buckets = 1;
  options.largest = 1;
  options.max_sites = 1;
  options.symbolize = false;
  options.source_lines = false;
  auto run = analyze_run(dir, options, error);
  if (!run) return std::nullopt;
  RunCategoryPeaks out;
  for (const auto& [ordinal, d] : run->devices) {
    if (!d.framework.attached) continue;
    out.decided = out.decided || d.categories_at_exit.decided;
    out.peaks[ordinal] = d.category_peaks;
  }
  if (!out.decided) out.why_undecided = undecided_reason(run->run.manifest.config.categories);
  return out;
}

}  // namespace gmp::analysis
