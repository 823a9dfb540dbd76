#include "call_sites.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

namespace gmp::analysis {
namespace {

// A framework's own Python (torch/, jax/, jaxlib/ of an installed package): what runs under the
// line that asked for a tensor, never that line itself.
bool is_framework_python_file(std::string_view path) {
  for (std::string_view packages : {"/site-packages/", "/dist-packages/"}) {
    const size_t at = path.find(packages);
    if (at == std::string_view::npos) continue;
    const std::string_view package = path.substr(at + packages.size());
    return package.starts_with("torch/") || package.starts_with("jax/") || package.starts_with("jaxlib/");
  }
  return false;
}

// " from <caller>" for a user's Python site with a user caller below it, else "".
std::string caller_suffix(uint32_t id, const StackTable& stacks) {
  auto it = stacks.find(id);
  if (it == stacks.end() || it->second.empty()) return "";
  const CallStack& stack = it->second;
  const size_t site = site_frame(stack);
  if (!stack[site].python || is_library_python_file(stack[site].file)) return "";
  for (size_t i = site + 1; i < stack.size(); ++i) {
    if (stack[i].python && !is_library_python_file(stack[i].file)) return " from " + stack[i].label();
  }
  return "";
}

}  // namespace

size_t site_frame(const CallStack& stack) {
  // The user's own line first: model.cuda() allocates under torch/nn/modules/module.py, and the
  // answer users want is the line of train.py that called it.
  for (size_t i = 0; i < stack.size(); ++i) {
    if (stack[i].python && !is_library_python_file(stack[i].file)) return i;
  }
  // Else the line that called into the framework: a model library's such as transformers', where a
  // trainer's worker thread or a library's from_pretrained runs no user code.
  for (size_t i = 0; i < stack.size(); ++i) {
    if (stack[i].python && !is_framework_python_file(stack[i].file)) return i;
  }
  for (size_t i = 0; i < stack.size(); ++i) {
    if (stack[i].python) return i;
  }
  for (size_t i = 0; i < stack.size(); ++i) {
    // An address outside every module (JIT code, say) is nobody's runtime: it may be the answer.
    if (stack[i].module.empty() || !is_runtime_module(stack[i].module)) return i;
  }
  // Only runtime frames, as on PyTorch's autograd thread: the first framework frame past the
  // allocator says what the memory is for (an operator's output, cuBLAS's workspace).
  for (size_t i = 0; i < stack.size(); ++i) {
    if (is_framework_module(stack[i].module) && !stack[i].function.empty() &&
        !is_allocation_machinery(stack[i].function)) {
      return i;
    }
  }
  return 0;
}

std::string site_label(uint32_t id, const StackTable& stacks) {
  if (id == 0) return "(no stack captured)";
  auto it = stacks.find(id);
  if (it == stacks.end()) return "(stack " + std::to_string(id) + " not in attribution.jsonl)";
  if (it->second.empty()) return "(only profiler frames)";
  return it->second[site_frame(it->second)].label();
}

std::vector<CallSite> group_by_site(const std::unordered_map<uint32_t, Bytes>& by_stack, const StackTable& stacks,
                                    size_t max_sites) {
  // The callers of each site: one site per caller where there is more than one.
  std::map<std::string, std::set<std::string>> callers;
  for (const auto& [id, _] : by_stack) callers[site_label(id, stacks)].insert(caller_suffix(id, stacks));
  std::map<std::string, CallSite> sites;
  std::map<std::string, uint64_t> shown_bytes;  // bytes of the stack currently shown per site
  for (const auto& [id, b] : by_stack) {
    std::string label = site_label(id, stacks);
    if (callers[label].size() > 1) label += caller_suffix(id, stacks);
    CallSite& s = sites[label];
    s.label = label;
    s.bytes.bytes += b.bytes;
    s.bytes.count += b.count;
    ++s.stacks;
    uint64_t& best = shown_bytes[label];
    // The heaviest stack is shown; among equals the lowest id, so the choice is repeatable.
    if (s.stacks == 1 || b.bytes > best || (b.bytes == best && id < s.stack_id)) {
      best = b.bytes;
      s.stack_id = id;
      auto st = stacks.find(id);
      s.site_frame = st == stacks.end() ? 0 : site_frame(st->second);
    }
  }
  std::vector<CallSite> out;
  out.reserve(sites.size());
  for (auto& [_, s] : sites) out.push_back(std::move(s));
  std::sort(out.begin(), out.end(), [](const CallSite& a, const CallSite& b) {
    return a.bytes.bytes != b.bytes.bytes ? a.bytes.bytes > b.bytes.bytes : a.label < b.label;
  });
  if (out.size() > max_sites) out.resize(max_sites);
  return out;
}

std::string site_label_among(uint32_t id, const StackTable& stacks, const std::vector<CallSite>& sites) {
  const std::string label = site_label(id, stacks);
  const std::string suffix = caller_suffix(id, stacks);
  if (suffix.empty()) return label;
  for (const CallSite& s : sites) {
    if (s.label == label + suffix) return s.label;
  }
  return label;
}

}  // namespace gmp::analysis
