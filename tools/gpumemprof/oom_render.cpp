#include "oom_render.h"

#include <cctype>
#include <cstdarg>
#include <cstdio>

#include "category_json.h"
#include "bytes_text.h"
#include "human_text.h"
#include "terminal_text.h"

namespace gmp::tool {
namespace {

uint64_t ms_to_ns(uint64_t ms) { return ms > UINT64_MAX / 1'000'000 ? UINT64_MAX : ms * 1'000'000; }

__attribute__((format(printf, 2, 3))) void appendf(std::string& out, const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof buf) {
    out.append(buf, static_cast<size_t>(n));
    return;
  }
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(ap, fmt);
  std::vsnprintf(big.data(), big.size(), fmt, ap);
  va_end(ap);
  big.pop_back();
  out += big;
}

std::string hb(uint64_t bytes) { return bytes_text(bytes); }
std::string u(uint64_t v) { return std::to_string(v); }

// A failure the rehearsal limit made (docs/device-limit.md): the smaller GPU's figures first, then
// what the real device had, which it did not run out of.
std::string device_limit_text(const OomDeviceLimit& l, std::optional<uint64_t> real_free) {
  std::string s = "  rehearsal limit (GPUMEMPROF_DEVICE_LIMIT): the device is limited to " + hb(l.limit) +
                  "; the process held " + hb(l.held) + " of it (" + hb(l.context) +
                  " context and modules, per NVML) and the call needed " + hb(l.requested) + " more: " +
                  hb(l.excess()) + " over the limit\n";
  if (real_free) {
    s += "  the real device had " + hb(*real_free) + " free" +
         (*real_free >= l.requested ? ", enough for the call: the limit made it fail\n" : ", not enough either\n");
  }
  return s;
}

nlohmann::json device_limit_json(const OomDeviceLimit& l) {
  return {{"limit_bytes", l.limit},         {"held_bytes", l.held},       {"context_bytes", l.context},
          {"requested_bytes", l.requested}, {"excess_bytes", l.excess()}};
}

const char* others_source_id(analysis::OomExplanation::OthersSource s) {
  switch (s) {
    case analysis::OomExplanation::OthersSource::NvmlProcessList:
      return "nvml_process_list";
    case analysis::OomExplanation::OthersSource::NvmlSample:
      return "nvml_sample";
    case analysis::OomExplanation::OthersSource::Estimate:
      return "estimate";
    default:
      return "unknown";
  }
}

std::string where_text(const analysis::OomExplanation& x) {
  if (x.host_pinned) return "pinned host memory";
  if (x.request.device < 0) return "an unknown device";
  std::string s = "device " + std::to_string(x.request.device);
  if (!x.device_name.empty()) s += " (" + printable(x.device_name) + ")";
  return s;
}

// A bundle's ages are whole milliseconds: said as such, never as microseconds they do not have.
std::string age_text(uint64_t ms) {
  if (ms == 0) return "under 1 ms";
  if (ms < 1000) return u(ms) + " ms";
  return human_duration_ns(ms_to_ns(ms));
}

std::string holder_line(size_t rank, const OomAllocation& a, const std::map<uint64_t, std::string>& sites) {
  std::string s;
  appendf(s, "    %2zu. %11s  %-8s %s", rank, hb(a.size).c_str(), printable(a.kind.empty() ? "?" : a.kind).c_str(),
          printable(a.api.empty() ? "?" : a.api).c_str());
  s += ", thread " + u(a.thread);
  if (a.age_ms) s += ", age " + age_text(*a.age_ms);
  if (auto site = sites.find(a.stack_id); site != sites.end()) {
    s += "\n          at " + fit_rest(printable(site->second), 13);
  } else if (a.stack_id != 0) {
    s += ", stack " + u(a.stack_id);
  }
  s += "\n";
  return s;
}

// A kind's current bytes.
uint64_t current(const DeviceStats& d, Kind k) { return d.kind(k).bytes.current; }

// PyTorch's message as it prints it, from the bundle's figures (the framework's own, from its OOM
// observer): a user can compare it character for character.
std::string pytorch_message(const analysis::OomExplanation& x) {
  const OomFramework& p = x.framework->figures;
  return "CUDA out of memory. Tried to allocate " + pytorch_size_text(p.requested) + ". GPU " +
         std::to_string(p.device) + " has a total capacity of " + pytorch_size_text(p.capacity) + " of which " +
         pytorch_size_text(p.free) + " is free. Including non-PyTorch memory, this process has " +
         pytorch_size_text(p.process_used) + " memory in use. Of the allocated memory " +
         pytorch_size_text(p.allocated) + " is allocated by PyTorch, and " +
         pytorch_size_text(x.framework->unallocated) + " is reserved by PyTorch but unallocated.";
}

const char* process_used_source(const OomFramework& p) {
  return p.process_used_from_nvml ? "NVML's latest sample of this process"
                                  : "capacity less free: no NVML sample, so other processes count too";
}

// The framework sections of a framework OOM's explanation: what failed, PyTorch's message and its
// figures, and gpumemprof's own count of the device at that moment.
void framework_text(const analysis::OomExplanation& x, std::string& out) {
  const analysis::OomExplanation::Framework& f = *x.framework;
  const OomFramework& p = f.figures;
  out += "\nWhat failed\n";
  {
    std::string s = "  PyTorch's caching allocator could not allocate " + pytorch_size_text(p.requested) + " (" +
                    u(p.requested) +
                    " bytes) on " + where_text(x) + "\n  thread " + u(x.request.thread);
    if (x.request.t_ns)
      s += ", " + human_duration_ns(*x.request.t_ns) + " after profiling started (the process's first GPU memory call)";
    out += s + "\n  PyTorch raised torch.OutOfMemoryError (torch.cuda.OutOfMemoryError)\n";
  }
  out += "\nPyTorch's message, from the figures it passed to its OOM observer\n";
  out += wrap(pytorch_message(x), "  ", "  ", output_width());
  const struct {
    const char* name;
    uint64_t bytes;
    const char* note;
  } rows[] = {
      {"tried to allocate", p.requested, ""},
      {"total capacity", p.capacity, ""},
      {"free", p.free, ""},
      {"this process has in use", p.process_used, process_used_source(p)},
      {"allocated by PyTorch", p.allocated, ""},
      {"reserved but unallocated", f.unallocated, ""},
      {"reserved by PyTorch", p.reserved, ""},
      {"non-PyTorch memory", p.non_pytorch, "in use less reserved: the CUDA context, other libraries"},
  };
  for (const auto& row : rows) {
    appendf(out, "    %-26s %12s  %s bytes%s%s%s\n", row.name, pytorch_size_text(row.bytes).c_str(),
            u(row.bytes).c_str(), *row.note ? "  (" : "", row.note, *row.note ? ")" : "");
  }
  const FrameworkStats& a = p.accounting;
  appendf(out, "\ngpumemprof's count of device %d inside PyTorch at that moment\n", p.device);
  appendf(out, "  tensors allocated %s (the sizes asked for; PyTorch counts its blocks), reserved %s, cached %s\n",
          hb(a.allocated.current).c_str(), hb(a.reserved.current).c_str(), hb(a.cached()).c_str());
  appendf(out, "  peaks so far: allocated %s, reserved %s; outside PyTorch's segments %s\n",
          hb(a.allocated.peak).c_str(), hb(a.reserved.peak).c_str(), hb(a.outside.current).c_str());
  appendf(out, "  live tensors on the device: %s (%s)\n", u(f.tensor_count).c_str(), hb(f.tensor_bytes).c_str());
  if (!x.categories) return;
  const analysis::CategorySplit& s = *x.categories;
  if (!s.decided) {
    out += wrap("tensors by category: not decided: " + analysis::undecided_reason(x.categories_setting), "  ", "    ",
                output_width());
    return;
  }
  out += "\nThe tensors by category at that moment" + (s.phase ? " (" + analysis::phase_text(*s.phase) + ")" : "") + "\n";
  for (TensorCategory category : analysis::kCategoryOrder) {
    const auto c = static_cast<size_t>(category);
    const analysis::CategoryFigures& fig = s.by_category[c];
    if (fig.total.count == 0) continue;
    appendf(out, "    %-16s %12s %5.1f%%  %s tensors\n", analysis::category_label(static_cast<TensorCategory>(c)).c_str(),
            hb(fig.total.bytes).c_str(), 100.0 * double(fig.total.bytes) / double(s.total.bytes), u(fig.total.count).c_str());
    if (!fig.largest.empty()) {
      out += "      largest: " + printable(fig.largest.front().name) + " (" + hb(fig.largest.front().bytes.bytes) + ")\n";
    }
  }
}

}  // namespace

std::string oom_explanation_text(const analysis::OomExplanation& x) {
  std::string out;
  const auto& r = x.request;
  appendf(out, "OOM bundle %s\n", printable(x.name).c_str());
  if (!x.path.empty()) appendf(out, "  in %s\n", printable(x.path).c_str());
  {
    std::string who = "  process";
    if (x.pid) who += " " + u(*x.pid);
    if (!x.exe.empty()) who += " (" + printable(x.exe) + ")";
    if (!x.created_at_utc.empty()) who += ", bundle written " + printable(x.created_at_utc);
    if (who != "  process") out += who + "\n";
  }

  // Fixed line breaks (no wrapping by width) around the figures that differ between runs.
  if (x.framework) {
    framework_text(x, out);
  } else {
    out += "\nWhat failed\n";
    std::string s = "  " + printable(r.api.empty() ? std::string("an allocation call") : r.api) + " asked for " +
                    hb(r.size) + " (" + u(r.size) + " bytes)";
    if (!r.kind.empty() && !x.host_pinned) s += " of " + printable(r.kind) + " memory";
    s += " on " + where_text(x) + "\n  ";
    if (!x.host_pinned) s += "stream " + u(r.stream) + ", ";
    s += "thread " + u(r.thread);
    if (r.t_ns)
      s += ", " + human_duration_ns(*r.t_ns) + " after profiling started (the process's first GPU memory call)";
    s += "\n  the driver returned " +
         (r.error_name.empty() ? (r.error ? "CUresult " + std::to_string(*r.error) : std::string("an error"))
                               : printable(r.error_name)) +
         "\n";
    out += s;
  }

  if (x.host_pinned) {
    out += "\nThis process at the failure\n";
    appendf(out, "  pinned host memory: %s\n", hb(x.host_pinned_bytes).c_str());
  } else if (x.device_figures_known) {
    const auto& d = x.held;
    const uint64_t linear = current(d, Kind::Linear), pool = current(d, Kind::Pool), vmm = current(d, Kind::Vmm),
                   array = current(d, Kind::Array), managed = current(d, Kind::Managed);
    appendf(out, "\nThis process on device %d at the failure\n", r.device);
    appendf(out, "  allocated %s, reserved %s (peaks so far: allocated %s, reserved %s)\n",
            hb(d.allocated.current).c_str(), hb(d.reserved.current).c_str(), hb(d.allocated.peak).c_str(),
            hb(d.reserved.peak).c_str());
    appendf(out, "    %-9s %-13s %s\n", "kind", "allocated", "reserved");
    appendf(out, "    %-9s %-13s %s\n", "linear", hb(linear).c_str(), hb(linear).c_str());
    {
      std::string s;
      appendf(s, "    %-9s %-13s %s", "pool", hb(pool).c_str(), hb(d.pool_reserved.current).c_str());
      if (x.pool_unused > 0) s += "  (" + hb(x.pool_unused) + " reserved but unused: trimming the pool releases it)";
      out += s + "\n";
    }
    {
      std::string s;
      appendf(s, "    %-9s %-13s %s", "vmm", hb(vmm).c_str(), hb(d.vmm_physical.current).c_str());
      if (x.vmm_unmapped > 0) s += "  (" + hb(x.vmm_unmapped) + " created but not mapped)";
      out += s + "\n";
    }
    appendf(out, "    %-9s %-13s %s\n", "array", hb(array).c_str(), hb(array).c_str());
    appendf(out, "    %-9s %-13s %s\n", "managed", hb(managed).c_str(),
            "-  (counted apart from allocated and reserved)");
    if (const uint64_t runtime = current(d, Kind::Runtime); runtime > 0) {
      appendf(out, "    %-9s %-13s %s  (the GPU runtime's own buffers)\n", "runtime", "-", hb(runtime).c_str());
    }
    {
      std::string s = "  live allocations: ";
      if (x.live_on_device)
        s += u(x.live_on_device->first) + " on this device (" + hb(x.live_on_device->second) + "), ";
      s += u(x.live_count) + " in the process (" + hb(x.live_bytes) + ")";
      out += s + "\n";
    }
    if (x.host_pinned_bytes > 0) appendf(out, "  pinned host memory: %s\n", hb(x.host_pinned_bytes).c_str());
  }

  if (!x.host_pinned) {
    out += "\nThe device\n";
    if (const auto& l = x.device_limit) out += device_limit_text(*l, x.free_bytes);
    if (x.free_bytes && x.total_bytes) {
      std::string s =
          "  free per the driver (cuMemGetInfo): " + hb(*x.free_bytes) + " of " + hb(*x.total_bytes) + " total";
      if (x.shortfall)
        s += "; the request was " + hb(*x.shortfall) + " more than that";
      else
        s += "; that is at least the request";
      out += s + "\n";
    } else if (x.total_bytes) {
      out += "  free: unknown (the driver was not asked); total " + hb(*x.total_bytes) + "\n";
    } else {
      out += "  free and total: unknown (the driver was not asked)\n";
    }
    switch (x.others_source) {
      case analysis::OomExplanation::OthersSource::NvmlProcessList: {
        std::string s = "  other processes: " + hb(x.others_bytes.value_or(0)) + " (NVML's process list)";
        out += s + "\n";
        for (const auto& [pid, used] : x.other_processes)
          appendf(out, "    pid %s  %s\n", u(pid).c_str(), hb(used).c_str());
        break;
      }
      case analysis::OomExplanation::OthersSource::NvmlSample:
        out += "  other processes: " + hb(x.others_bytes.value_or(0)) +
               ", per NVML's latest sample before the failure:\n    " + hb(x.others_basis_used) +
               " used on the device, " + hb(x.others_basis_own) + " of it by this process\n";
        break;
      case analysis::OomExplanation::OthersSource::Estimate:
        out += "  other processes: about " + hb(x.others_bytes.value_or(0)) +
               ", an estimate: " + hb(x.others_basis_used) + " in use per the driver\n    minus the " +
               hb(x.others_basis_own) + " this process reserved (it also counts this process's CUDA context)\n";
        break;
      default:
        out += "  other processes: unknown (no NVML figures and no driver figures in the bundle)\n";
        break;
    }
  }

  out += "\nOutcome\n";
  {
    const std::string failures = u(x.failures) + (x.failures == 1 ? " failed allocation" : " failed allocations");
    std::string s;
    if (x.recovered) {
      s = "  recovered: ";
      if (x.recovered_by) {
        s += "a later " + printable(x.recovered_by->api().empty() ? std::string("allocation") : x.recovered_by->api()) +
             " of " + hb(x.recovered_by->size()) + " succeeded";
        if (auto t = x.recovered_by->t_ns()) s += " (" + human_duration_ns(*t) + " after profiling started)";
      } else {
        s += "a later allocation of at least the requested size succeeded";
      }
      s += "\n  " + failures + " in this episode";
      if (x.episode > 0) s += " (episode " + u(x.episode) + ")";
    } else {
      s = "  not recovered: " + failures + " in this episode";
      if (x.episode > 0) s += " (episode " + u(x.episode) + ")";
      s += "\n  no later allocation of at least " + hb(r.size) + " succeeded";
    }
    out += s + "\n";
  }

  {
    const std::string where = x.host_pinned ? "pinned host memory" : "device " + std::to_string(r.device);
    const std::string from = x.framework           ? std::string(kOomTensorsFile)
                             : x.top_from_allocations ? std::string(kOomAllocationsFile)
                                                      : std::string(kOomMetadataFile) + "'s 20 largest";
    appendf(out, "\nLargest live %s on %s (%zu of %s, from %s)\n", x.framework ? "tensors" : "allocations",
            where.c_str(), x.top.size(), u(x.top_candidates).c_str(), from.c_str());
    if (x.top.empty()) out += "    none\n";
    for (size_t i = 0; i < x.top.size(); ++i) out += holder_line(i + 1, x.top[i], x.sites);
  }

  out += "\nWhat to try\n";
  for (const auto& a : x.advice) out += wrap(a.text, "  - ", "    ", output_width());

  if (!x.notes.empty()) {
    out += "\nNotes\n";
    for (const auto& n : x.notes) out += "  - " + printable(n) + "\n";
  }
  // Each fact is one line; one wider than the output goes on under its text, a little further in.
  return fold_lines(out, output_width(), 2);
}

nlohmann::json oom_explanation_json(const analysis::OomExplanation& x) {
  using json = nlohmann::json;
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  const auto& r = x.request;
  json out;
  out["bundle"] = {{"name", x.name},    {"path", x.path}, {"created_at_utc", x.created_at_utc},
                   {"pid", opt(x.pid)}, {"exe", x.exe},   {"episode", x.episode}};
  out["request"] = {{"api", r.api},
                    {"kind", r.kind},
                    {"size", r.size},
                    {"device", r.device},
                    {"device_name", x.device_name},
                    {"host_pinned", x.host_pinned},
                    {"stream", r.stream},
                    {"thread", r.thread},
                    {"t_ns", opt(r.t_ns)},
                    {"error", opt(r.error)},
                    {"error_name", r.error_name}};
  json process = {{"device", r.device}, {"device_figures_known", x.device_figures_known}};
  if (!x.host_pinned) {
    const auto& d = x.held;
    process["allocated_bytes"] = d.allocated.current;
    process["reserved_bytes"] = d.reserved.current;
    process["allocated_peak_bytes"] = d.allocated.peak;
    process["reserved_peak_bytes"] = d.reserved.peak;
    const uint64_t linear = current(d, Kind::Linear), array = current(d, Kind::Array);
    process["by_kind"] = {
        {"linear", {{"allocated", linear}, {"reserved", linear}}},
        {"pool",
         {{"allocated", current(d, Kind::Pool)},
          {"reserved", d.pool_reserved.current},
          {"reserved_unused", x.pool_unused}}},
        {"vmm",
         {{"mapped", current(d, Kind::Vmm)},
          {"physical", d.vmm_physical.current},
          {"physical_unmapped", x.vmm_unmapped}}},
        {"array", {{"allocated", array}, {"reserved", array}}},
        {"managed", {{"allocated", current(d, Kind::Managed)}}},
        {"runtime", {{"reserved", current(d, Kind::Runtime)}}},
    };
    process["reserved_unused_bytes"] = analysis::sat_add(x.pool_unused, x.vmm_unmapped);
  }
  process["live_on_device"] =
      x.live_on_device ? json{{"count", x.live_on_device->first}, {"bytes", x.live_on_device->second}} : json(nullptr);
  process["live_in_process"] = {{"count", x.live_count}, {"bytes", x.live_bytes}};
  process["host_pinned_bytes"] = x.host_pinned_bytes;
  out["process"] = process;
  out["device"] = {{"total_bytes", opt(x.total_bytes)},
                   {"free_bytes", opt(x.free_bytes)},
                   {"from_driver", x.total_from_driver},
                   {"shortfall_bytes", opt(x.shortfall)}};
  if (const auto& l = x.device_limit) out["device_limit"] = device_limit_json(*l);
  json procs = json::array();
  for (const auto& [pid, used] : x.other_processes) procs.push_back({{"pid", pid}, {"used_bytes", used}});
  out["other_processes"] = {{"bytes", opt(x.others_bytes)},
                            {"source", others_source_id(x.others_source)},
                            {"estimate", x.others_source == analysis::OomExplanation::OthersSource::Estimate},
                            {"processes", procs}};
  json recovered_by = nullptr;
  if (x.recovered_by) {
    recovered_by = {
        {"api", x.recovered_by->api()}, {"size", x.recovered_by->size()}, {"t_ns", opt(x.recovered_by->t_ns())}};
  }
  out["outcome"] = {
      {"recovered", x.recovered}, {"failures", x.failures}, {"episode", x.episode}, {"recovered_by", recovered_by}};
  json top = json::array();
  for (size_t i = 0; i < x.top.size(); ++i) {
    const auto& a = x.top[i];
    top.push_back({{"rank", i + 1},
                   {"size", a.size},
                   {"kind", a.kind},
                   {"api", a.api},
                   {"device", a.device},
                   {"thread", a.thread},
                   {"age_ms", opt(a.age_ms)},
                   {"stack_id", a.stack_id},
                   {"address", a.address}});
    auto site = x.sites.find(a.stack_id);
    top.back()["site"] = site != x.sites.end() ? json(site->second) : json(nullptr);
  }
  out["largest_live"] = top;
  out["largest_live_from"] = x.framework              ? kOomTensorsFile
                             : x.top_from_allocations ? kOomAllocationsFile
                                                      : kOomMetadataFile;
  out["largest_live_candidates"] = x.top_candidates;
  if (x.framework) {
    const analysis::OomExplanation::Framework& f = *x.framework;
    const OomFramework& p = f.figures;
    json sites = json::array();
    for (const auto& site : f.sites) {
      auto label = x.sites.find(site.stack_id);
      sites.push_back({{"stack_id", site.stack_id},
                       {"site", label != x.sites.end() ? json(label->second) : json(nullptr)},
                       {"bytes", site.bytes},
                       {"count", site.count}});
    }
    // The bundle's figures as metadata.json holds them, and what the explanation derives.
    json framework = to_json(p);
    framework["message"] = pytorch_message(x);
    framework["reserved_unallocated_bytes"] = f.unallocated;
    framework["live_tensors"] = {{"count", f.tensor_count}, {"bytes", f.tensor_bytes}};
    framework["tensor_sites"] = sites;
    framework["categories"] = x.categories ? analysis::category_split_json(*x.categories, x.categories_setting) : json();
    out["framework"] = framework;
  }
  json advice = json::array();
  for (const auto& a : x.advice) advice.push_back({{"id", a.id}, {"text", a.text}});
  out["advice"] = advice;
  out["notes"] = x.notes;
  return out;
}

}  // namespace gmp::tool
