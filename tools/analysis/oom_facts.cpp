#include "oom_facts.h"

#include <algorithm>

#include "oom_advice.h"

namespace gmp::analysis {
namespace {

using reader::OomBundle;

bool is_host_pinned(const std::string& kind) { return kind == kind_name(Kind::HostPinned); }

// The live allocations the top holders are chosen from: for a framework's OOM its tensors
// (tensors.json); else allocations.json when the bundle has it (every live allocation), else
// metadata.json's largest_live (the 20 largest of the process).
void choose_top(const OomBundle& b, OomExplanation& x) {
  const bool tensors = x.framework && b.tensors;
  const bool use_all = tensors || b.allocations.has_value();
  const std::vector<OomAllocation>& source = tensors ? *b.tensors : use_all ? *b.allocations : b.metadata.largest_live;
  std::vector<OomAllocation> mine;
  uint64_t count = 0, bytes = 0;
  for (const auto& a : source) {
    const bool here =
        x.host_pinned ? is_host_pinned(a.kind) : (a.device == x.request.device && !is_host_pinned(a.kind));
    if (!here) continue;
    mine.push_back(a);
    ++count;
    bytes = sat_add(bytes, a.size);
  }
  std::stable_sort(mine.begin(), mine.end(),
                   [](const OomAllocation& l, const OomAllocation& r) { return l.size > r.size; });
  if (mine.size() > OomExplanation::kTopHolders) mine.resize(OomExplanation::kTopHolders);
  x.top = std::move(mine);
  x.top_candidates = count;
  x.top_from_allocations = use_all;
  if (use_all && !tensors) x.live_on_device = std::make_pair(count, bytes);
}

// PyTorch's figures from the bundle, and its tensors on the device by call site.
void describe_framework(const OomBundle& b, OomExplanation& x) {
  OomExplanation::Framework f;
  f.figures = *b.metadata.framework;
  f.unallocated = sat_sub(f.figures.reserved, f.figures.allocated);
  std::map<uint64_t, OomExplanation::Framework::Site> by_stack;
  for (const auto& t : b.tensors.value_or(std::vector<OomAllocation>{})) {
    if (t.device != f.figures.device) continue;
    ++f.tensor_count;
    f.tensor_bytes = sat_add(f.tensor_bytes, t.size);
    auto& site = by_stack[t.stack_id];
    site.stack_id = t.stack_id;
    site.bytes = sat_add(site.bytes, t.size);
    ++site.count;
  }
  for (const auto& [_, site] : by_stack) f.sites.push_back(site);
  std::stable_sort(f.sites.begin(), f.sites.end(), [](const auto& l, const auto& r) { return l.bytes > r.bytes; });
  if (f.sites.size() > OomExplanation::Framework::kTopSites) f.sites.resize(OomExplanation::Framework::kTopSites);
  x.framework = std::move(f);
}

void choose_others(const OomBundle& b, OomExplanation& x) {
  if (x.host_pinned) return;
  const DeviceFigures* d = b.device_figures(x.request.device);
  if (d != nullptr && d->nvml_listed) {
    const DeviceStats::Telemetry& n = d->stats.nvml;
    if (d->nvml_processes && b.pid) {
      uint64_t others = 0, own = 0;
      for (const auto& [pid, used] : *d->nvml_processes) {
        if (pid == *b.pid) {
          own = sat_add(own, used);
        } else {
          others = sat_add(others, used);
          x.other_processes.emplace_back(pid, used);
        }
      }
      std::stable_sort(x.other_processes.begin(), x.other_processes.end(),
                       [](const auto& l, const auto& r) { return l.second > r.second; });
      x.others_source = OomExplanation::OthersSource::NvmlProcessList;
      x.others_bytes = others;
      x.others_basis_own = own;
      return;
    }
    if (n.process_known) {
      x.others_source = OomExplanation::OthersSource::NvmlSample;
      x.others_basis_used = n.device_used;
      x.others_basis_own = n.process_used;
      x.others_bytes = sat_sub(n.device_used, n.process_used);
      return;
    }
  }
  if (x.free_bytes && x.total_from_driver && x.total_bytes) {
    x.others_source = OomExplanation::OthersSource::Estimate;
    x.others_basis_used = sat_sub(*x.total_bytes, *x.free_bytes);
    x.others_basis_own = x.held.reserved.current;
    x.others_bytes = sat_sub(x.others_basis_used, x.others_basis_own);
  }
}

}  // namespace

OomExplanation explain_oom(const OomBundle& b) {
  const OomMetadata& m = b.metadata;
  OomExplanation x;
  x.name = b.name;
  x.path = b.path;
  x.created_at_utc = b.created_at_utc();
  x.exe = b.environment ? b.environment->exe : std::string();
  x.pid = b.pid;
  x.request = m.request;
  x.host_pinned = is_host_pinned(m.request.kind);
  x.notes = b.notes;

  if (!x.host_pinned) {
    if (const DeviceFigures* d = b.device_figures(m.request.device)) {
      x.device_figures_known = true;
      x.held = d->stats;
      x.device_name = d->name;
      x.pool_unused = sat_sub(d->stats.pool_reserved.current, d->stats.kind(Kind::Pool).bytes.current);
      x.vmm_unmapped = sat_sub(d->stats.vmm_physical.current, d->stats.kind(Kind::Vmm).bytes.current);
    } else {
      x.notes.push_back("metadata.json has no figures for device " + std::to_string(m.request.device) +
                        " (devices[]); what this process held there is unknown");
    }
  }
  x.host_pinned_bytes = m.host_pinned_bytes.current;
  x.live_count = m.live_count;
  x.live_bytes = m.live_bytes;

  if (!x.host_pinned) {
    if (m.driver_memory) {
      x.free_bytes = m.driver_memory->free;
      x.total_bytes = m.driver_memory->total;
      x.total_from_driver = true;
    } else if (x.device_figures_known && x.held.total_bytes > 0) {
      x.total_bytes = x.held.total_bytes;
    }
    if (x.free_bytes && *x.free_bytes < x.request.size) x.shortfall = x.request.size - *x.free_bytes;
    x.device_limit = m.device_limit;
  }
  choose_others(b, x);

  x.recovered = m.recovered;
  x.recovered_by = m.recovered_by;
  x.failures = m.failures;
  x.episode = m.episode;
  if (m.framework) describe_framework(b, x);
  choose_top(b, x);
  x.advice = oom_advice(x);
  return x;
}

}  // namespace gmp::analysis
