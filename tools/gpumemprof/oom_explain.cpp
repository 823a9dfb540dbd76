#include "oom_explain.h"

#include <algorithm>
#include <cctype>
#include <cstdarg>
#include <cstdio>

#include "bytes_text.h"
#include "format.h"

namespace gmp::tool {
namespace {

using reader::OomAllocation;
using reader::OomBundle;

uint64_t sat_add(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }
uint64_t sat_sub(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
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

// `text` as lines of at most `width` columns (words longer than that stand alone), the first
// prefixed with `first`, the others with `rest`.
// A size's unit stays on the line of its number ("1.00 GiB" never breaks).
bool is_unit(const std::string& word) {
  for (const char* unit : {"B", "KiB", "MiB", "GiB", "TiB"}) {
    const size_t n = std::char_traits<char>::length(unit);
    if (word.compare(0, n, unit) == 0 && (word.size() == n || !std::isalpha(static_cast<unsigned char>(word[n])))) {
      return true;
    }
  }
  return false;
}

std::string wrap(const std::string& text, const std::string& first, const std::string& rest, size_t width = 100) {
  std::vector<std::string> words;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (!words.empty() && is_unit(word)) words.back() += " " + word;
    else words.push_back(std::move(word));
  }
  std::string out, line = first;
  bool empty = true;
  for (const std::string& word : words) {
    if (!empty && line.size() + 1 + word.size() > width) {
      out += line + "\n";
      line = rest;
      empty = true;
    }
    if (!empty) line += ' ';
    line += word;
    empty = false;
  }
  return out + line + "\n";
}

std::string hb(uint64_t bytes) { return bytes_text(bytes); }
std::string u(uint64_t v) { return std::to_string(v); }

bool is_host_pinned(const std::string& kind) { return kind == "host_pinned"; }

const char* others_source_id(OomExplanation::OthersSource s) {
  switch (s) {
    case OomExplanation::OthersSource::NvmlProcessList: return "nvml_process_list";
    case OomExplanation::OthersSource::NvmlSample: return "nvml_sample";
    case OomExplanation::OthersSource::Estimate: return "estimate";
    default: return "unknown";
  }
}

// The live allocations the top holders are chosen from: allocations.json when the bundle has it
// (every live allocation), else metadata.json's largest_live (the 20 largest of the process).
void choose_top(const OomBundle& b, OomExplanation& x) {
  const bool use_all = b.has_allocations;
  const std::vector<OomAllocation>& source = use_all ? b.allocations : b.largest_live;
  std::vector<OomAllocation> mine;
  uint64_t count = 0, bytes = 0;
  for (const auto& a : source) {
    const bool here = x.host_pinned ? is_host_pinned(a.kind) : (a.device == x.request.device && !is_host_pinned(a.kind));
    if (!here) continue;
    mine.push_back(a);
    ++count;
    bytes = sat_add(bytes, a.size);
  }
  std::stable_sort(mine.begin(), mine.end(), [](const OomAllocation& l, const OomAllocation& r) { return l.size > r.size; });
  if (mine.size() > OomExplanation::kTopHolders) mine.resize(OomExplanation::kTopHolders);
  x.top = std::move(mine);
  x.top_candidates = count;
  x.top_from_allocations = use_all;
  if (use_all) x.live_on_device = std::make_pair(count, bytes);
}

void choose_others(const OomBundle& b, OomExplanation& x) {
  if (x.host_pinned) return;
  const reader::OomDeviceFigures* d = b.device_figures(x.request.device);
  if (d != nullptr && d->nvml) {
    const auto& n = *d->nvml;
    if (n.has_process_list && b.pid) {
      uint64_t others = 0, own = 0;
      for (const auto& [pid, used] : n.processes) {
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
    if (n.process_used) {
      x.others_source = OomExplanation::OthersSource::NvmlSample;
      x.others_basis_used = n.device_used;
      x.others_basis_own = *n.process_used;
      x.others_bytes = sat_sub(n.device_used, *n.process_used);
      return;
    }
  }
  if (x.free_bytes && x.total_from_driver && x.total_bytes) {
    x.others_source = OomExplanation::OthersSource::Estimate;
    x.others_basis_used = sat_sub(*x.total_bytes, *x.free_bytes);
    x.others_basis_own = x.held.reserved;
    x.others_bytes = sat_sub(x.others_basis_used, x.others_basis_own);
  }
}

void advise(OomExplanation& x) {
  auto add = [&](const char* id, std::string text) { x.advice.push_back({id, std::move(text)}); };
  const uint64_t req = x.request.size;
  if (x.host_pinned) {
    add("pinned_host",
        "Pinned host memory is page-locked RAM: check the host's free memory and the locked-memory limit (ulimit -l), "
        "or pin less (smaller prefetch buffers, pin_memory=False). This process held " + hb(x.host_pinned_bytes) +
            " of pinned memory.");
    if (x.recovered) add("recovered", "A later pinned allocation of at least the requested size succeeded, so the program went on.");
    return;
  }
  const uint64_t total = x.total_bytes.value_or(0);
  if (total > 0 && req > total) {
    add("cannot_fit", "The request (" + hb(req) + ") is larger than the device's total memory (" + hb(total) +
                          "): it cannot fit on this device at all. Split the work (smaller batch, sharding, "
                          "activation checkpointing) or use a device with more memory.");
    return;
  }
  if (x.recovered) {
    add("recovered", "A later allocation of at least the requested size succeeded (the caller freed memory and retried), "
                     "so the program went on; act only if this repeats, each episode costs a failed call and a retry.");
  }
  const uint64_t slack = sat_add(x.pool_unused, x.vmm_unmapped);
  const uint64_t reserved = x.held.reserved;
  bool explained = false;
  if (slack > 0 && ((x.shortfall && slack >= *x.shortfall) || slack >= reserved / 4)) {
    std::string what;
    if (x.pool_unused > 0) what = hb(x.pool_unused) + " pool memory reserved but not allocated";
    if (x.vmm_unmapped > 0) what += std::string(what.empty() ? "" : ", ") + hb(x.vmm_unmapped) + " VMM memory created but not mapped";
    const bool enough = x.shortfall && slack >= *x.shortfall;
    add("fragmentation", "This process reserved " + hb(slack) + " more than it had allocated (" + what +
                             "): memory held by caching or fragmentation" +
                             (enough ? ", enough to have made room for the request" : "") +
                             ". Trim the pools (cudaMemPoolTrimTo, a lower release threshold, torch.cuda.empty_cache()), "
                             "and with PyTorch set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to reduce fragmentation.");
    explained = enough;
  }
  // What this process had in use (its reservation less what trimming would release): with the
  // request, more than the device has means no trimming or other process can make room.
  const uint64_t in_use = sat_sub(reserved, slack);
  const bool too_big_alone = total > 0 && sat_add(in_use, req) > total;
  if (x.others_bytes && *x.others_bytes > 0) {
    const uint64_t others = *x.others_bytes;
    const bool would_fit = !too_big_alone && x.free_bytes && sat_add(*x.free_bytes, others) >= req;
    if (would_fit || (total > 0 && others >= total / 10)) {
      const bool estimate = x.others_source == OomExplanation::OthersSource::Estimate;
      add("other_processes",
          std::string(estimate ? "Other processes (or memory this process allocated outside the calls gpumemprof sees) held about "
                               : "Other processes held ") +
              hb(others) + " on this device" + (would_fit ? "; without them the request would have fit" : "") +
              ". Check what else runs on the GPU (nvidia-smi), or give this job a GPU of its own (CUDA_VISIBLE_DEVICES).");
      explained = explained || would_fit;
    }
  }
  if (too_big_alone) {
    add("own_footprint", "This process itself had " + hb(in_use) + " in use of the device's " + hb(total) +
                             ", so with the request it needs more than the device has: free what is no longer needed "
                             "before this point, lower the batch size, or use smaller data types.");
    explained = true;
  }
  if (x.free_bytes && *x.free_bytes >= req) {
    add("enough_free", "The driver reported " + hb(*x.free_bytes) +
                           " free, at least the request: the failure came from a limit (a pool's maximum size), from "
                           "fragmentation of the device's memory, or from memory that was freed only after the check.");
    explained = true;
  }
  if (!explained && !x.recovered) {
    if (x.shortfall) {
      add("shortfall", "The device had " + hb(x.free_bytes.value_or(0)) + " free, " + hb(*x.shortfall) +
                           " less than the request: free that much before this allocation or make the request smaller.");
    } else if (!x.free_bytes) {
      add("unknown_free", "The bundle does not say how much memory was free (the driver was not asked); compare the "
                          "request with what this process held above.");
    }
  }
}

std::string where_text(const OomExplanation& x) {
  if (x.host_pinned) return "pinned host memory";
  if (x.request.device < 0) return "an unknown device";
  std::string s = "device " + std::to_string(x.request.device);
  if (!x.device_name.empty()) s += " (" + printable(x.device_name) + ")";
  return s;
}

std::string holder_line(size_t rank, const OomAllocation& a, const std::map<uint64_t, std::string>& sites) {
  std::string s;
  appendf(s, "    %2zu. %11s  %-8s %s", rank, hb(a.size).c_str(), printable(a.kind.empty() ? "?" : a.kind).c_str(),
          printable(a.api.empty() ? "?" : a.api).c_str());
  s += ", thread " + u(a.thread);
  if (a.age_ms) s += ", age " + human_duration_ns(ms_to_ns(*a.age_ms));
  if (auto site = sites.find(a.stack_id); site != sites.end()) {
    s += "\n          at " + printable(site->second);
  } else if (a.stack_id != 0) {
    s += ", stack " + u(a.stack_id);
  }
  s += "\n";
  return s;
}

}  // namespace

std::string printable(const std::string& s) {
  std::string out = s;
  for (char& c : out) {
    const unsigned char uc = static_cast<unsigned char>(c);
    if (uc < 0x20 || uc == 0x7f) c = '?';
  }
  return out;
}

OomExplanation explain_oom(const OomBundle& b) {
  OomExplanation x;
  x.name = b.name;
  x.path = b.path;
  x.created_at_utc = b.created_at_utc;
  x.exe = b.exe;
  x.pid = b.pid;
  x.request = b.request;
  x.host_pinned = is_host_pinned(b.request.kind);
  x.notes = b.notes;

  if (!x.host_pinned) {
    if (const reader::OomDeviceFigures* d = b.device_figures(b.request.device)) {
      x.device_figures_known = true;
      x.held = *d;
      x.device_name = d->name;
      x.pool_unused = sat_sub(d->pool_reserved, d->pool);
      x.vmm_unmapped = sat_sub(d->vmm_physical, d->vmm);
    } else {
      x.notes.push_back("metadata.json has no figures for device " + std::to_string(b.request.device) +
                        " (devices[]); what this process held there is unknown");
    }
  }
  x.host_pinned_bytes = b.host_pinned_current;
  x.live_count = b.live_count;
  x.live_bytes = b.live_bytes;

  if (!x.host_pinned) {
    if (b.driver_memory) {
      x.free_bytes = b.driver_memory->free;
      x.total_bytes = b.driver_memory->total;
      x.total_from_driver = true;
    } else if (x.device_figures_known && x.held.total_bytes > 0) {
      x.total_bytes = x.held.total_bytes;
    }
    if (x.free_bytes && *x.free_bytes < x.request.size) x.shortfall = x.request.size - *x.free_bytes;
  }
  choose_others(b, x);

  x.recovered = b.recovered;
  x.recovered_by = b.recovered_by;
  x.failures = b.failures;
  x.episode = b.episode;
  choose_top(b, x);
  advise(x);
  return x;
}

std::string oom_explanation_text(const OomExplanation& x) {
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
  out += "\nWhat failed\n";
  {
    std::string s = "  " + printable(r.api.empty() ? std::string("an allocation call") : r.api) + " asked for " + hb(r.size) +
                    " (" + u(r.size) + " bytes)";
    if (!r.kind.empty() && !x.host_pinned) s += " of " + printable(r.kind) + " memory";
    s += " on " + where_text(x) + "\n  ";
    if (!x.host_pinned) s += "stream " + u(r.stream) + ", ";
    s += "thread " + u(r.thread);
    if (r.t_ns) s += ", " + human_duration_ns(*r.t_ns) + " after profiling started (the process's first GPU memory call)";
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
    appendf(out, "\nThis process on device %d at the failure\n", r.device);
    appendf(out, "  allocated %s, reserved %s (peaks so far: allocated %s, reserved %s)\n", hb(d.allocated).c_str(),
            hb(d.reserved).c_str(), hb(d.allocated_peak).c_str(), hb(d.reserved_peak).c_str());
    appendf(out, "    %-9s %-13s %s\n", "kind", "allocated", "reserved");
    appendf(out, "    %-9s %-13s %s\n", "linear", hb(d.linear).c_str(), hb(d.linear).c_str());
    {
      std::string s;
      appendf(s, "    %-9s %-13s %s", "pool", hb(d.pool).c_str(), hb(d.pool_reserved).c_str());
      if (x.pool_unused > 0) s += "  (" + hb(x.pool_unused) + " reserved but unused: trimming the pool releases it)";
      out += s + "\n";
    }
    {
      std::string s;
      appendf(s, "    %-9s %-13s %s", "vmm", hb(d.vmm).c_str(), hb(d.vmm_physical).c_str());
      if (x.vmm_unmapped > 0) s += "  (" + hb(x.vmm_unmapped) + " created but not mapped)";
      out += s + "\n";
    }
    appendf(out, "    %-9s %-13s %s\n", "array", hb(d.array).c_str(), hb(d.array).c_str());
    appendf(out, "    %-9s %-13s %s\n", "managed", hb(d.managed).c_str(), "-  (counted apart from allocated and reserved)");
    {
      std::string s = "  live allocations: ";
      if (x.live_on_device) s += u(x.live_on_device->first) + " on this device (" + hb(x.live_on_device->second) + "), ";
      s += u(x.live_count) + " in the process (" + hb(x.live_bytes) + ")";
      out += s + "\n";
    }
    if (x.host_pinned_bytes > 0) appendf(out, "  pinned host memory: %s\n", hb(x.host_pinned_bytes).c_str());
  }

  if (!x.host_pinned) {
    out += "\nThe device\n";
    if (x.free_bytes && x.total_bytes) {
      std::string s = "  free per the driver (cuMemGetInfo): " + hb(*x.free_bytes) + " of " + hb(*x.total_bytes) + " total";
      if (x.shortfall) s += "; the request was " + hb(*x.shortfall) + " more than that";
      else s += "; that is at least the request";
      out += s + "\n";
    } else if (x.total_bytes) {
      out += "  free: unknown (the driver was not asked); total " + hb(*x.total_bytes) + "\n";
    } else {
      out += "  free and total: unknown (the driver was not asked)\n";
    }
    switch (x.others_source) {
      case OomExplanation::OthersSource::NvmlProcessList: {
        std::string s = "  other processes: " + hb(x.others_bytes.value_or(0)) + " (NVML's process list)";
        out += s + "\n";
        for (const auto& [pid, used] : x.other_processes) appendf(out, "    pid %s  %s\n", u(pid).c_str(), hb(used).c_str());
        break;
      }
      case OomExplanation::OthersSource::NvmlSample:
        out += "  other processes: " + hb(x.others_bytes.value_or(0)) + ", per NVML's latest sample before the failure:\n    " +
               hb(x.others_basis_used) + " used on the device, " + hb(x.others_basis_own) + " of it by this process\n";
        break;
      case OomExplanation::OthersSource::Estimate:
        out += "  other processes: about " + hb(x.others_bytes.value_or(0)) + ", an estimate: " + hb(x.others_basis_used) +
               " in use per the driver\n    minus the " + hb(x.others_basis_own) +
               " this process reserved (it also counts this process's CUDA context)\n";
        break;
      default: out += "  other processes: unknown (no NVML figures and no driver figures in the bundle)\n"; break;
    }
  }

  out += "\nOutcome\n";
  {
    const std::string failures = u(x.failures) + (x.failures == 1 ? " failed allocation" : " failed allocations");
    std::string s;
    if (x.recovered) {
      s = "  recovered: ";
      if (x.recovered_by) {
        s += "a later " + printable(x.recovered_by->api.empty() ? std::string("allocation") : x.recovered_by->api) + " of " +
             hb(x.recovered_by->size) + " succeeded";
        if (x.recovered_by->t_ns) s += " (" + human_duration_ns(*x.recovered_by->t_ns) + " after profiling started)";
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
    const char* from = x.top_from_allocations ? "allocations.json" : "metadata.json's 20 largest";
    appendf(out, "\nLargest live allocations on %s (%zu of %s, from %s)\n", where.c_str(), x.top.size(),
            u(x.top_candidates).c_str(), from);
    if (x.top.empty()) out += "    none\n";
    for (size_t i = 0; i < x.top.size(); ++i) out += holder_line(i + 1, x.top[i], x.sites);
  }

  out += "\nWhat to try\n";
  for (const auto& a : x.advice) out += wrap(a.text, "  - ", "    ");

  if (!x.notes.empty()) {
    out += "\nNotes\n";
    for (const auto& n : x.notes) out += "  - " + printable(n) + "\n";
  }
  return out;
}

nlohmann::json oom_explanation_json(const OomExplanation& x) {
  using json = nlohmann::json;
  auto opt = [](const auto& v) { return v ? json(*v) : json(nullptr); };
  const auto& r = x.request;
  json out;
  out["bundle"] = {{"name", x.name},      {"path", x.path}, {"created_at_utc", x.created_at_utc},
                   {"pid", opt(x.pid)},   {"exe", x.exe},   {"episode", x.episode}};
  out["request"] = {{"api", r.api},          {"kind", r.kind},     {"size", r.size},
                    {"device", r.device},    {"device_name", x.device_name},
                    {"host_pinned", x.host_pinned},
                    {"stream", r.stream},    {"thread", r.thread}, {"t_ns", opt(r.t_ns)},
                    {"error", opt(r.error)}, {"error_name", r.error_name}};
  json process = {{"device", r.device}, {"device_figures_known", x.device_figures_known}};
  if (!x.host_pinned) {
    const auto& d = x.held;
    process["allocated_bytes"] = d.allocated;
    process["reserved_bytes"] = d.reserved;
    process["allocated_peak_bytes"] = d.allocated_peak;
    process["reserved_peak_bytes"] = d.reserved_peak;
    process["by_kind"] = {
        {"linear", {{"allocated", d.linear}, {"reserved", d.linear}}},
        {"pool", {{"allocated", d.pool}, {"reserved", d.pool_reserved}, {"reserved_unused", x.pool_unused}}},
        {"vmm", {{"mapped", d.vmm}, {"physical", d.vmm_physical}, {"physical_unmapped", x.vmm_unmapped}}},
        {"array", {{"allocated", d.array}, {"reserved", d.array}}},
        {"managed", {{"allocated", d.managed}}},
    };
    process["reserved_unused_bytes"] = sat_add(x.pool_unused, x.vmm_unmapped);
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
  json procs = json::array();
  for (const auto& [pid, used] : x.other_processes) procs.push_back({{"pid", pid}, {"used_bytes", used}});
  out["other_processes"] = {{"bytes", opt(x.others_bytes)},
                            {"source", others_source_id(x.others_source)},
                            {"estimate", x.others_source == OomExplanation::OthersSource::Estimate},
                            {"processes", procs}};
  json recovered_by = nullptr;
  if (x.recovered_by) {
    recovered_by = {{"api", x.recovered_by->api}, {"size", x.recovered_by->size}, {"t_ns", opt(x.recovered_by->t_ns)}};
  }
  out["outcome"] = {{"recovered", x.recovered}, {"failures", x.failures}, {"episode", x.episode}, {"recovered_by", recovered_by}};
  json top = json::array();
  for (size_t i = 0; i < x.top.size(); ++i) {
    const auto& a = x.top[i];
    top.push_back({{"rank", i + 1},       {"size", a.size},         {"kind", a.kind},        {"api", a.api},
                   {"device", a.device},  {"thread", a.thread},     {"age_ms", opt(a.age_ms)}, {"stack_id", a.stack_id},
                   {"address", a.address}});
    auto site = x.sites.find(a.stack_id);
    top.back()["site"] = site != x.sites.end() ? json(site->second) : json(nullptr);
  }
  out["largest_live"] = top;
  out["largest_live_from"] = x.top_from_allocations ? "allocations.json" : "metadata.json";
  out["largest_live_candidates"] = x.top_candidates;
  json advice = json::array();
  for (const auto& a : x.advice) advice.push_back({{"id", a.id}, {"text", a.text}});
  out["advice"] = advice;
  out["notes"] = x.notes;
  return out;
}

}  // namespace gmp::tool
