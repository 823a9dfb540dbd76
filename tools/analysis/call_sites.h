// Call sites: stacks grouped by the frame that best answers "who allocated this" (docs/attribution.md,
// "Reading"). The site is the innermost Python frame of the user's own code when the stack has one
// (for PyTorch that is the model's line, not the caching allocator nor torch/nn's Python), else the
// innermost Python frame outside the framework's own package (torch/, jax/, jaxlib/: a model
// library's line), else the innermost Python frame, else the innermost native frame outside the CUDA
// libraries, framework allocators and C runtime (is_runtime_module), else the innermost framework
// frame that is not allocation machinery (is_allocation_machinery), else the innermost frame.
// A user's Python site reached from several user callers (a thin helper wrapping the allocation)
// is told apart by its caller, the next user frame: "alloc (train.py:15) from step (train.py:40)".
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "bytes.h"
#include "symbolizer.h"

namespace gmp::analysis {

struct CallSite {
  std::string label;      // the site frame's label(), or a placeholder such as "(no stack captured)"
  Bytes bytes;            // everything allocated from here that the set holds
  uint32_t stack_id = 0;  // the stack holding the most bytes here: the one reports show
  size_t site_frame = 0;  // the site's index in that stack
  size_t stacks = 0;      // distinct stacks grouped here
};

// Index of the site frame in `stack`; 0 for an empty stack.
size_t site_frame(const CallStack& stack);
// The site label of stack `id`: "(no stack captured)" for 0, "(stack N not in attribution.jsonl)"
// when `stacks` lacks it, "(only profiler frames)" when nothing was left after dropping the shim.
std::string site_label(uint32_t id, const StackTable& stacks);

// `by_stack` grouped by site label, most bytes first (ties by label), at most `max_sites`; a site
// whose stacks come from more than one user caller is one site per caller.
std::vector<CallSite> group_by_site(const std::unordered_map<uint32_t, Bytes>& by_stack, const StackTable& stacks,
                                    size_t max_sites);
// The label of stack `id` among `sites` (group_by_site's): with its caller where its site was
// split by caller, else site_label().
std::string site_label_among(uint32_t id, const StackTable& stacks, const std::vector<CallSite>& sites);

}  // namespace gmp::analysis
