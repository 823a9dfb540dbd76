// `gpumemprof top`'s detail of one process (docs/live.md, "Detail"): per device a sparkline of
// allocated and reserved over the last minutes, both levels' figures, the largest live
// allocations with their call sites, the latest notices, and the command to read the run after.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attribution_reader.h"
#include "live_reader.h"

namespace gmp::tool::top {

// The call sites of a run's stacks by id, from its attribution.jsonl (tools/analysis/call_sites.h's
// labels). The file grows while the process runs: it is read again only when it grew, and a label
// found is kept (a stack id never changes its stack).
class SiteLabels {
 public:
  // The labels of `ids` (one batch: one symbolization of the stacks not named yet).
  std::map<uint32_t, std::string> labels(const std::string& run_dir, const std::vector<uint32_t>& ids);

 private:
  struct Run {
    int64_t size = -1;  // attribution.jsonl's size when last read
    std::unique_ptr<reader::Attribution> attribution;
    std::map<uint32_t, std::string> labels;
  };
  std::map<std::string, Run> runs_;
};

// One line of sparkline: `values` (oldest first; nullopt: no sample that second) scaled to `max`,
// in ▁▂▃▄▅▆▇█, or in ASCII ("_.-=+*#@") when the terminal is not UTF-8. A second without a
// sample is a space; a sample of 0 the lowest block.
std::string sparkline(const std::vector<std::optional<uint64_t>>& values, uint64_t max, bool utf8);

// The detail's lines for `width` columns (each within it), at realtime `now_ns`.
std::vector<std::string> detail_lines(const reader::LiveProcess& p, uint64_t now_ns, size_t width, bool utf8,
                                      SiteLabels& sites);

}  // namespace gmp::tool::top
