#include "oom_categories.h"

#include "trace_replay.h"

namespace gmp::analysis {
namespace {
// The framework's figures follow its failed request within PyTorch's retry (it frees its cache and
// asks once more): a replay that finds none this long after the request gives up.
constexpr uint64_t kFiguresWithinNs = 30'000'000'000ull;
}  // namespace

std::optional<CategorySplit> categories_at_oom(const std::string& run_dir, const reader::Attribution& attribution,
                                               const OomRequest& request, std::string& error) {
  if (!request.t_ns || request.device < 0) return std::nullopt;
  reader::TraceReplay trace;
  if (!trace.open(run_dir, error)) return std::nullopt;
  TensorCategories categories = replay_categories(attribution);
  const Accounting& acc = trace.accounting();
  if (!trace.begin_window()) {
    error = trace.error();
    return std::nullopt;
  }
  categories.start(acc);
  bool found = false;
  while (!found && trace.next()) {
    const Event& e = trace.event();
    const uint64_t at = trace.since_start(e.timestamp_ns);
    if (at > *request.t_ns + kFiguresWithinNs) break;
    categories.add(e, trace.index());
    found = e.op == Op::FrameworkOomFigures && e.device == request.device && at >= *request.t_ns;
  }
  if (!found) return std::nullopt;
  categories.finish(true);
  CategorySplit split = split_by_category(acc.live_tensors(), request.device, categories, attribution);
  split.phase = categories.phase();
  std::vector<uint32_t> ids;
  stack_ids(split, ids);
  name_items(split, Symbolizer(attribution).symbolize(ids), 3);
  return split;
}

}  // namespace gmp::analysis
