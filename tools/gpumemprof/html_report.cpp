// Builds the HTML report. The tables are written here, escaped, so they read without JavaScript;
// the charts are drawn by the inline script (html/report.js) from the embedded JSON.
#include "bytes_text.h"
#include "html_report.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <optional>
#include <string_view>
#include <vector>

#include "analysis_json.h"
#include "call_sites.h"
#include "command_args.h"
#include "framework_notes.h"
#include "html_escape.h"
#include "human_text.h"
#include "json_fields.h"
#include "process_facts.h"
#include "category_split.h"

namespace gmp::tool {
namespace {

using analysis::Marker;
using html::escape;

constexpr size_t kMaxRows = 200;  // per marker table; the embedded JSON has them all

std::string u64s(uint64_t v) { return std::to_string(v); }

// "1 allocation", "3 allocations".
std::string count_of(uint64_t n, const std::string& noun) { return u64s(n) + " " + noun + (n == 1 ? "" : "s"); }

std::string percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return {};
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return buf;
}

// Time since the profiler started, as the report and the chart's axis show it.
std::string at(uint64_t ns) { return human_duration_ns(ns); }


std::string name_of(Kind k) { return std::string(kind_name(k)); }

class Page {
 public:
  Page(const analysis::RunAnalysis& run, const analysis::TimelineSets& sets)
      : run_(run), sets_(sets), summary_(run.run.figures), manifest_(run.run.manifest),
        framework_(analysis::attached_framework(run)), fw_name_(analysis::framework_display_name(run)) {}

  std::string build() {
    out_ += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
    out_ += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
    out_ += "<title>" + escape("gpumemprof: " + analysis::program_title(manifest_) + pid_suffix()) + "</title>\n";
    // Records script errors where tests (and curious readers) can see them; kept apart from the
    // main script so that even a syntax error there is caught.
    out_ += "<script>window.onerror = function (message, source, line) {\n"
            "  var root = document.body || document.documentElement;\n"
            "  root.dataset.error = String(message) + \" (line \" + line + \")\";\n"
            "};</script>\n";
    out_ += "<style>\n\n";
    out_ += kHtmlReportCss;
    out_ += "</style>\n</head>\n<body>\n";
    header();
    nav();
    for (const auto& [ordinal, d] : run_.devices) device(d);
    flame_graph_section();
    leaks();
    failures();
    alerts();
    out_ += "<footer>Written by gpumemprof " GPUMEMPROF_VERSION
            " from a run directory. The figures are also embedded as JSON in the element "
            "<code>#gmp-data</code>; <code>gpumemprof report DIR --json</code> prints them too.</footer>\n";
    out_ += "<script type=\"application/json\" id=\"gmp-data\">";
    out_ += html::script_json(html_report_data(run_, sets_));
    out_ += "</script>\n<script>\n\n";
    out_ += kHtmlReportScript;
    out_ += "</script>\n</body>\n</html>\n";
    return std::move(out_);
  }

 private:
  std::string pid_suffix() const {
    const uint64_t pid = manifest_.pid.value_or(0);
    return pid ? " (pid " + u64s(pid) + ")" : std::string();
  }

  void fact(const char* term, const std::string& html_value) {
    out_ += "<dt>";
    out_ += term;
    out_ += "</dt><dd>" + html_value + "</dd>\n";
  }
  void note(const char* cls, const std::string& html_text) {
    out_ += "<p class=\"note ";
    out_ += cls;
    out_ += "\">" + html_text + "</p>\n";
  }
  void card(const std::string& label, const std::string& value, const std::string& sub, const char* cls = "") {
    out_ += "<div class=\"card ";
    out_ += cls;
    out_ += "\"><div class=\"card-label\">" + escape(label) + "</div><div class=\"card-value\">" + escape(value) +
            "</div><div class=\"card-sub\">" + escape(sub) + "</div></div>\n";
  }

  uint64_t failed_allocations() const {
    uint64_t total = 0;
    for (const auto& [_, d] : run_.devices) total += d.final_stats.failed_alloc_count;
    return std::max<uint64_t>(total, summary_.failed_allocations.size());
  }

  void header() {
    out_ += "<header>\n<h1>GPU memory report <span class=\"exe\">" + escape(analysis::program_title(manifest_)) +
            "</span></h1>\n";
    out_ += "<dl class=\"facts\">\n";
    fact("Ended", escape(end_.text()));
    const std::string& exe = manifest_.exe;
    fact("Executable",
         exe.empty() ? "<span class=\"muted\">unknown (no manifest.json)</span>" : "<code>" + escape(exe) + "</code>");
    {
      std::string line;
      for (const std::string& a : manifest_.argv.value_or(std::vector<std::string>())) {
        if (!line.empty()) line += ' ';
        line += a;
      }
      if (!line.empty()) fact("Command", "<code>" + escape(line) + "</code>");
    }
    if (const uint64_t pid = manifest_.pid.value_or(0)) {
      std::string v = u64s(pid);
      if (const uint64_t ppid = manifest_.ppid) v += " <span class=\"muted\">(parent " + u64s(ppid) + ")</span>";
      fact("PID", v);
    }
    std::string host = manifest_.host;
    if (manifest_.rank) {
      host += (host.empty() ? "" : ", ") + std::string("rank ") + u64s(*manifest_.rank);
      if (manifest_.world_size) host += " of " + u64s(*manifest_.world_size);
    }
    if (!host.empty()) fact("Host", escape(host));
    const std::string& started = manifest_.start_time_utc;
    if (!started.empty()) fact("Started", escape(started));
    fact("Duration", escape(at(run_.duration_ns)) +
                         " <span class=\"muted\">from the profiler's start to the last event; "
                         "all times below are since that start</span>");
    if (!run_.window.whole()) {
      fact("Window", "<strong class=\"window\">" + escape(window_text(run_.window)) +
                         "</strong> <span class=\"muted\">peaks, timelines, markers and live sets are this window's; "
                         "\"at exit\" means at its end; figures marked whole run are summary.json's</span>");
    }
    fact("Run directory", "<code>" + escape(run_.run.path) + "</code>");
    const reader::EventCounts& events = run_.run.events;
    const bool short_of_events = !events.final_flush || events.trace_incomplete() || events.lost > 0;
    fact("Events", (short_of_events ? "<strong class=\"bad\">" : std::string()) +
                       escape(reader::event_counts_line(events)) + (short_of_events ? "</strong>" : ""));
    out_ += "</dl>\n";

    if (run_.run.summary_rebuilt && events.final_flush) {
      note("warn", "<strong>Rebuilt from the trace:</strong> " + escape(run_.run.rebuild_reason) +
                       "; every figure here is rebuilt from the trace.");
    } else if (!run_.run.summary_rebuilt && !summary_.clean_exit) {
      std::string text = "<strong>Not a clean exit:</strong> summary.json was written ";
      const uint64_t sig = summary_.terminated_by_signal;
      text += sig == 0 ? "before an exec or on a fatal signal." : "on signal " + u64s(sig) + ".";
      note("warn", text);
    }
    for (const std::string& w : reader::event_count_warnings(events)) {
      note(events.final_flush && !events.trace_incomplete() ? "warn" : "bad", escape(w));
    }
    if (run_.truncated_bytes) {
      note("warn", "The trace ends in a partial record of " + u64s(run_.truncated_bytes) + " bytes (ignored).");
    }
    if (const std::string state = analysis::framework_state_line(run_); !state.empty()) {
      note(framework_ ? "framework-state" : "framework-state warn",
           "<strong>Framework:</strong> " + escape(state) + ".");
    }
    for (const std::string& n : analysis::hidden_memory_notes(run_)) note("framework-hidden warn", escape(n) + ".");
    if (run_.markers_dropped) {
      note("warn", u64s(run_.markers_dropped) +
                       " further alerts, failed allocations and OOM events were counted but not kept "
                       "(only the first " +
                       u64s(run_.markers.size()) + " are listed and drawn).");
    }

    out_ += "<div class=\"cards\">\n";
    for (const auto& [ordinal, d] : run_.devices) {
      card("Peak allocated, device " + std::to_string(ordinal), bytes_text(d.allocated_peak.bytes),
           "at " + at(d.allocated_peak.at_ns) +
               (d.final_stats.total_bytes
                    ? ", " + percent(d.allocated_peak.bytes, d.final_stats.total_bytes) + " of the device"
                    : ""));
    }
    for (const auto& [ordinal, d] : run_.devices) {
      if (!d.framework.attached) continue;
      card("Peak tensors, device " + std::to_string(ordinal), bytes_text(d.framework.allocated.peak),
           "at " + at(d.framework.allocated_peak_ns) + "; " + fw_name_ + " reserved at most " +
               bytes_text(d.framework.reserved.peak));
    }
    if (run_.devices.empty()) card("Device memory", "none", "no device memory was allocated");
    if (framework_) {
      const analysis::LiveSet& t = run_.tensor_leaks;
      card("Tensors live at exit", bytes_text(t.total.bytes), count_of(t.total.count, "tensor"),
           t.total.count ? "warn" : "");
    }
    card(framework_ ? "Live at exit outside " + fw_name_ : std::string("Live at exit"),
         bytes_text(run_.leaks.total.bytes), count_of(run_.leaks.total.count, "allocation"),
         run_.leaks.total.count ? "warn" : "");
    const uint64_t failed = failed_allocations();
    card("Failed allocations" + whole_run(), u64s(failed), count_of(summary_.oom.bundles_written, "OOM bundle"),
         failed ? "bad" : "");
    const uint64_t alerts = summary_.alerts.fired();
    card("Alerts" + whole_run(), u64s(alerts), alerts ? "fired" : "none fired", alerts ? "warn" : "");
    out_ += "</div>\n</header>\n";
  }

  // The label of summary.json's counts in a window's page, which are the whole run's.
  std::string whole_run() const { return run_.window.whole() ? "" : " (whole run)"; }

  void nav() {
    out_ += "<nav>";
    for (const auto& [ordinal, d] : run_.devices) {
      out_ += "<a href=\"#device-" + std::to_string(ordinal) + "\">Device " + std::to_string(ordinal) + "</a> ";
    }
    out_ +=
        "<a href=\"#leaks\">" + escape(end_.exited() ? std::string("Leaks") : leaks_title()) + "</a> <a href=\"#failures\">Failed allocations and OOM</a> <a "
        "href=\"#alerts\">Alerts</a>";
    out_ += "</nav>\n";
  }

  // A call site's label (docs/attribution.md, "Call sites"), its stack id in the tooltip.
  std::string site_cell(uint32_t stack_id) {
    if (stack_id == 0) return "<td class=\"site\"><span class=\"muted\">no stack</span></td>";
    return "<td class=\"site\" title=\"stack " + std::to_string(stack_id) + "\"><code>" +
           escape(analysis::site_label(stack_id, run_.stacks)) + "</code></td>";
  }

  void allocation_rows(const std::vector<LiveAllocation>& list, bool with_device) {
    out_ += "<table class=\"allocations\">\n<thead><tr><th class=\"num\">size</th><th>kind</th>";
    if (with_device) out_ += "<th class=\"num\">device</th>";
    out_ +=
        "<th>API</th><th class=\"num\">allocated at</th><th class=\"num\">thread</th><th>call "
        "site</th></tr></thead>\n<tbody>\n";
    for (const LiveAllocation& a : list) {
      out_ += "<tr><td class=\"num\">" + escape(bytes_text(a.size)) + "</td><td>" +
              escape(analysis::allocation_kind_label(a)) + "</td>";
      if (with_device) out_ += "<td class=\"num\">" + std::to_string(a.device) + "</td>";
      out_ += "<td><code>" + escape(std::string(api_name(a.api))) + "</code></td><td class=\"num\">" +
              escape(at(since(a.timestamp_ns, run_.start_ns))) + "</td><td class=\"num\">" +
              std::to_string(a.thread_id) + "</td>" + site_cell(a.stack_id) + "</tr>\n";
    }
    out_ += "</tbody></table>\n";
  }

  void by_kind_rows(const analysis::LiveSet& set) {
    out_ +=
        "<table class=\"by-kind\">\n<thead><tr><th>kind</th><th class=\"num\">bytes</th><th "
        "class=\"num\">allocations</th></tr></thead>\n<tbody>\n";
    for (int k = 1; k < kKindCount; ++k) {
      const analysis::Bytes& b = set.by_kind[k];
      if (b.count == 0) continue;
      out_ += "<tr><td>" + escape(name_of(static_cast<Kind>(k))) + "</td><td class=\"num\">" +
              escape(bytes_text(b.bytes)) + "</td><td class=\"num\">" + u64s(b.count) + "</td></tr>\n";
    }
    out_ += "</tbody></table>\n";
  }

  // The sites as the text report groups them: the site frame's label, what it holds, how many
  // distinct stacks reach it.
  void call_sites(const std::vector<analysis::CallSite>& sites) {
    if (sites.empty() || (sites.size() == 1 && sites[0].stack_id == 0)) return;
    out_ += "<h4>By call site</h4>\n<table class=\"sites\">\n<thead><tr><th>call site</th><th class=\"num\">bytes</th>"
            "<th class=\"num\">allocations</th><th class=\"num\">stacks</th></tr></thead>\n<tbody>\n";
    for (const analysis::CallSite& c : sites) {
      out_ += "<tr><td class=\"site\"" +
              (c.stack_id ? " title=\"largest stack: " + std::to_string(c.stack_id) + "\"" : std::string()) +
              "><code>" + escape(c.label) + "</code></td><td class=\"num\">" + escape(bytes_text(c.bytes.bytes)) +
              "</td><td class=\"num\">" + u64s(c.bytes.count) + "</td><td class=\"num\">" + u64s(c.stacks) +
              "</td></tr>\n";
    }
    out_ += "</tbody></table>\n";
  }

  // The tensors by category at the tensor peak (docs/framework-bridge.md §Categories), as the text
  // report lists them (report_categories.cpp): the categories that hold memory, and the phase.
  void categories_at_peak(const analysis::DeviceAnalysis& d) {
    const analysis::CategorySplit& split = d.categories_at_peak;
    if (split.total.count == 0) return;
    if (!split.decided) {
      out_ += "<p class=\"categories-undecided muted\">Tensors by category at the tensor peak: not decided: " +
              escape(analysis::undecided_reason(run_.run.manifest.config.categories)) + "</p>\n";
      return;
    }
    out_ += "<h3 class=\"categories-at-peak\">Tensors by category at the tensor peak";
    if (split.phase) {
      out_ += " <small class=\"categories-phase\">(" + escape(analysis::phase_text(*split.phase)) + ")</small>";
    }
    out_ += "</h3>\n<table class=\"categories\">\n<thead><tr><th>category</th><th class=\"num\">bytes</th>"
            "<th class=\"num\">share</th><th class=\"num\">tensors</th><th>largest</th></tr></thead>\n<tbody>\n";
    for (TensorCategory category : analysis::kCategoryOrder) {
      const auto c = static_cast<size_t>(category);
      const analysis::CategoryFigures& f = split.by_category[c];
      if (f.total.count == 0) continue;
      const std::string name(tensor_category_name(static_cast<TensorCategory>(c)));
      std::string largest = "<span class=\"muted\">-</span>";
      if (!f.largest.empty()) {
        const analysis::CategoryItem& top = f.largest.front();
        largest = "<code>" + escape(top.name) + "</code> (" + escape(bytes_text(top.bytes.bytes)) +
                  (top.bytes.count > 1 ? ", " + count_of(top.bytes.count, "tensor") : std::string()) + ")";
      }
      out_ += "<tr data-category=\"" + escape(name) + "\"><td><span class=\"key key-category key-category-" +
              escape(name) + "\"></span>" + escape(analysis::category_label(static_cast<TensorCategory>(c))) +
              "</td><td class=\"num\">" + escape(bytes_text(f.total.bytes)) + "</td><td class=\"num\">" +
              escape(percent(f.total.bytes, split.total.bytes)) + "</td><td class=\"num\">" + u64s(f.total.count) +
              "</td><td>" + largest + "</td></tr>\n";
    }
    out_ += "</tbody></table>\n";
  }

  // The framework level of a device (docs/report.md, "Two levels"): the figures as the text report
  // lists them, then the tensors live at the framework's allocated peak.
  void framework_level(const analysis::DeviceAnalysis& d) {
    const FrameworkStats& f = d.framework;
    out_ += "<h3 class=\"framework-level\">" + escape(fw_name_) + " level: tensors and " + escape(fw_name_) +
            "'s cache</h3>\n<table class=\"framework\">\n<thead><tr><th>figure</th><th class=\"num\">peak</th>"
            "<th class=\"num\">peak at</th><th class=\"num\">at exit</th><th>what it is</th></tr></thead>\n<tbody>\n";
    const auto cell = [](const std::optional<std::string>& v) {
      return "<td class=\"num\">" + (v ? escape(*v) : std::string("<span class=\"muted\">-</span>")) + "</td>";
    };
    const auto text = [](const std::optional<uint64_t>& b) { return b ? std::optional(bytes_text(*b)) : std::nullopt; };
    for (const analysis::FrameworkRow& r : analysis::framework_rows(run_, d)) {
      out_ += "<tr data-figure=\"" + escape(r.name) + "\"><td>" + escape(r.name) + "</td>" + cell(text(r.peak)) +
              cell(r.peak_at_ns ? std::optional(at(*r.peak_at_ns)) : std::nullopt) + cell(text(r.at_exit)) + "<td>" +
              escape(r.meaning) + "</td></tr>\n";
    }
    out_ += "</tbody></table>\n<p class=\"muted\">" + count_of(f.tensor_allocs, "tensor") + " allocated, " +
            u64s(f.tensor_frees) + " freed; " + count_of(f.segment_allocs, "segment") + " reserved, " +
            u64s(f.segment_frees) + " released; " + count_of(f.ooms, "OOM") + ".</p>\n";
    categories_at_peak(d);
    const analysis::LiveSet& live = d.tensors_at_peak;
    if (live.total.count == 0) return;
    out_ += "<h3 class=\"tensors-at-peak\">Tensors live at " + escape(fw_name_) + "'s allocated peak: " +
            count_of(live.total.count, "tensor") + ", " + escape(bytes_text(live.total.bytes)) + "</h3>\n";
    out_ += "<h4>Largest</h4>\n";
    allocation_rows(live.largest, false);
    call_sites(d.tensor_sites_at_peak);
  }

  void device(const analysis::DeviceAnalysis& d) {
    const DeviceStats& s = d.final_stats;
    const std::string id = std::to_string(d.device);
    out_ += "<section class=\"device\" id=\"device-" + id + "\" data-device=\"" + id + "\">\n";
    out_ += "<h2>Device " + id + " <span class=\"device-name\">" + escape(d.name.empty() ? "unnamed device" : d.name) +
            "</span>";
    if (s.total_bytes) out_ += " <small>" + escape(bytes_text(s.total_bytes)) + " total</small>";
    out_ += "</h2>\n<div class=\"cards\">\n";
    const auto of_device = [&](uint64_t b) {
      return s.total_bytes ? ", " + percent(b, s.total_bytes) + " of the device" : std::string();
    };
    card("Peak allocated", bytes_text(d.allocated_peak.bytes),
         "at " + at(d.allocated_peak.at_ns) + of_device(d.allocated_peak.bytes));
    card("Peak reserved", bytes_text(d.reserved_peak.bytes),
         "at " + at(d.reserved_peak.at_ns) + of_device(d.reserved_peak.bytes));
    card("At exit", bytes_text(s.allocated.current), "allocated; " + bytes_text(s.reserved.current) + " reserved");
    if (d.nvml_process_peak) {
      card("NVML: this process", bytes_text(d.nvml_process_peak), "at most, as the driver saw it (context included)");
    } else if (d.nvml_device_used_peak) {
      card("NVML: whole device", bytes_text(d.nvml_device_used_peak), "used at most, by all processes");
    }
    out_ += "</div>\n";

    // The chart: drawn by the script from the embedded timeline.
    out_ +=
        "<div class=\"legend\"><span class=\"key key-reserved\"></span>reserved <span class=\"key "
        "key-allocated\"></span>allocated";
    if (d.framework.attached) {
      out_ += " <span class=\"key key-tensors\"></span>" + escape(fw_name_) +
              " tensors (allocated) <span class=\"key key-framework-reserved\"></span>" + escape(fw_name_) +
              " reserved";
    }
    if (d.nvml_process_peak) out_ += " <span class=\"key key-nvml\"></span>NVML process usage";
    // The tensors stacked by category (report.js draws them from the timeline's tensor_categories):
    // the categories that ever held bytes, in the text report's order and names.
    if (d.categories_at_peak.decided || d.categories_at_exit.decided) {
      for (TensorCategory category : analysis::kCategoryOrder) {
        const auto c = static_cast<size_t>(category);
        if (d.category_peaks[c] == 0) continue;
        const std::string name(tensor_category_name(static_cast<TensorCategory>(c)));
        out_ += " <span class=\"key key-category key-category-" + escape(name) + "\" data-category=\"" + escape(name) +
                "\"></span>" + escape(analysis::category_label(static_cast<TensorCategory>(c)));
      }
    }
    // The device's total is drawn only when the view's figures come within a quarter of it (report.js
    // hides this key when it is not).
    if (s.total_bytes) out_ += "<span class=\"legend-total\"> <span class=\"key key-total\"></span>device total</span>";
    out_ += " <span class=\"key key-peak\"></span>the selection's highest point";
    out_ += " <span class=\"muted\">(the shade spans each time slice's lowest to highest value, so short peaks "
            "stay visible; the line is the value at each slice's end; vertical lines are alerts, failed "
            "allocations, OOM events and marks; bands under the chart are ranges)</span></div>\n";
    out_ += "<div class=\"chart\" data-device=\"" + id + "\" tabindex=\"0\">\n"
            "<noscript><p class=\"note\">The chart needs JavaScript; "
            "the tables do not.</p></noscript></div>\n";

    out_ += "<h3>At the allocated peak</h3>\n";
    out_ += "<p>Allocated memory peaked at <strong class=\"peak-allocated\">" +
            escape(bytes_text(d.allocated_peak.bytes)) + "</strong> at " + escape(at(d.allocated_peak.at_ns)) +
            "; reserved memory at <strong class=\"peak-reserved\">" +
            escape(bytes_text(d.reserved_peak.bytes)) + "</strong> at " + escape(at(d.reserved_peak.at_ns)) + ".</p>\n";
    out_ += "<table class=\"kinds\">\n<thead><tr><th>kind</th><th class=\"num\">at the allocated peak</th>"
            "<th class=\"num\">at the reserved peak</th><th class=\"num\">own peak</th><th class=\"num\">at exit</th>"
            "<th class=\"num\">allocations</th><th class=\"num\">frees</th></tr></thead>\n<tbody>\n";
    for (Kind k : {Kind::Linear, Kind::Pool, Kind::Vmm, Kind::Array, Kind::Managed}) {
      const KindStats& ks = s.kind(k);
      const size_t i = static_cast<size_t>(k);
      if (ks.allocs == 0 && ks.bytes.peak == 0 && d.allocated_peak.kind_bytes[i] == 0) continue;
      out_ += "<tr><td>" + escape(name_of(k)) + "</td><td class=\"num\">" +
              escape(bytes_text(d.allocated_peak.kind_bytes[i])) + "</td><td class=\"num\">" +
              escape(bytes_text(d.reserved_peak.kind_bytes[i])) + "</td><td class=\"num\">" +
              escape(bytes_text(ks.bytes.peak)) + "</td><td class=\"num\">" + escape(bytes_text(ks.bytes.current)) +
              "</td><td class=\"num\">" + u64s(ks.allocs) + "</td><td class=\"num\">" + u64s(ks.frees) + "</td></tr>\n";
    }
    out_ += "</tbody></table>\n";
    if (s.pool_reserved.peak > 0) {
      out_ += "<p>Stream-ordered pools reserved at most " + escape(bytes_text(s.pool_reserved.peak)) + ", " +
              escape(bytes_text(s.pool_reserved.current)) + " at exit.</p>\n";
    }
    if (s.vmm_physical.peak > 0) {
      out_ += "<p>VMM physical memory peaked at " + escape(bytes_text(s.vmm_physical.peak)) + ", " +
              escape(bytes_text(s.vmm_physical.current)) + " at exit.</p>\n";
    }

    const analysis::LiveSet& live = d.live_at_peak;
    if (live.total.count > 0) {
      out_ += "<h3>Live at the allocated peak: " + count_of(live.total.count, "allocation") + ", " +
              escape(bytes_text(live.total.bytes)) + "</h3>\n";
      by_kind_rows(live);
      out_ += "<h4>Largest</h4>\n";
      allocation_rows(live.largest, false);
      call_sites(d.sites_at_peak);
    }
    if (d.framework.attached) framework_level(d);
    if (d.nvml_process_peak > 0) {
      std::string text = "NVML saw this process use at most " + escape(bytes_text(d.nvml_process_peak)) +
                         " of the device; the tracked reserved peak is " + escape(bytes_text(d.reserved_peak.bytes));
      if (d.nvml_process_peak > d.reserved_peak.bytes) {
        text += ": " + escape(bytes_text(d.nvml_process_peak - d.reserved_peak.bytes)) +
                " more is the CUDA context, loaded modules and memory not allocated through the tracked calls";
      }
      note("", text + ".");
    } else if (d.nvml_device_used_peak > 0) {
      note("", "NVML saw the device used at most " + escape(bytes_text(d.nvml_device_used_peak)) +
                   " by all processes (this process's share was not reported).");
    }
    out_ += "<p class=\"muted\">On this device: " + count_of(s.alloc_count, "allocation") + ", " +
            count_of(s.free_count, "free") + ", " + count_of(s.failed_alloc_count, "failed allocation") + ".</p>\n";
    out_ += "</section>\n";
  }

  // The flame graph of the peak is drawn by the script (renderFlameGraph in html/report.js) from the
  // embedded "flame" trees; it shows the section, or says why there is no graph (no stacks recorded).
  // Without JavaScript the section stays hidden: the call-site tables above name the sites.
  void flame_graph_section() {
    out_ += "<section id=\"flame-graph\" class=\"flame-graph\" hidden>\n<h2>Flame graph of the peak</h2>\n"
            "<div class=\"flame-graph-body\"><p class=\"muted\">Drawing the flame graph...</p></div>\n</section>\n";
  }

  // "Leaks: live at exit" after an exit; what was live is no leak of a process that died.
  std::string leaks_title() const {
    if (end_.exited()) return "Leaks: live at exit";
    std::string t = end_.live_at_end();
    t[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(t[0])));
    return t;
  }

  void leaks() {
    const analysis::LiveSet& l = run_.leaks;
    out_ += "<section id=\"leaks\">\n<h2>" + escape(leaks_title()) + "</h2>\n";
    if (framework_) tensor_leaks();
    // Where the bridge attached, the driver-level list leaves out the framework's segments (its cache).
    const std::string where = framework_ ? " outside " + escape(fw_name_) + "'s cache" : "";
    if (l.total.count > 0) {
      out_ += "<p><strong class=\"leak-total\">" + count_of(l.total.count, "allocation") + ", " +
              escape(bytes_text(l.total.bytes)) + "</strong> of device memory" + where + " " +
              (l.total.count == 1 ? "was" : "were") +
              " still allocated when the process ended (or when the trace stops).</p>\n";
    } else {
      out_ += "<p><strong class=\"leak-total\">No leaks:</strong> no device memory" + where +
              " was left allocated.</p>\n";
    }
    if (l.total.count > 0) {
      by_kind_rows(l);
      out_ += "<h4>Largest</h4>\n";
      allocation_rows(l.largest, true);
      call_sites(run_.leak_sites);
    }
    const analysis::LiveSet& p = run_.pinned_at_exit;
    // A window's peak is its own; a whole run's summary.json's (a trace short of events understates it).
    const uint64_t pinned_peak = run_.window.whole() ? summary_.host_pinned_bytes.peak : run_.host_pinned.peak;
    if (pinned_peak == 0 && p.total.count == 0) {
      out_ += "<p class=\"muted\">No pinned host memory was allocated.</p>\n";
    } else {
      out_ += "<p>Pinned host memory: peak " + escape(bytes_text(pinned_peak)) + "; " +
              count_of(p.total.count, "allocation") + " of " + escape(bytes_text(p.total.bytes)) +
              " live at exit.</p>\n";
    }
    out_ += "</section>\n";
  }

  // The framework's tensors still allocated at exit (the leaks) and its cache (not a leak).
  void tensor_leaks() {
    const analysis::LiveSet& t = run_.tensor_leaks;
    if (t.total.count > 0) {
      out_ += "<p><strong class=\"tensor-leak-total\">" + count_of(t.total.count, "tensor") + " (" +
              escape(bytes_text(t.total.bytes)) + ")</strong> still allocated at exit.</p>\n<h4>Largest</h4>\n";
      allocation_rows(t.largest, true);
      call_sites(run_.tensor_leak_sites);
    } else {
      out_ += "<p><strong class=\"tensor-leak-total\">No tensor</strong> was still allocated at exit.</p>\n";
    }
    out_ += "<p class=\"framework-cached\">" + escape(fw_name_) + " held <strong>" +
            escape(bytes_text(framework_->cached_at_exit_bytes)) + "</strong> cached at exit in " +
            count_of(framework_->cached_at_exit_count, "segment") + " (its cache, not a leak).</p>\n";
  }

  // Rows of the markers `wanted` selects: time, device, what, then `extra` cells.
  template <typename Wanted, typename Extra>
  size_t marker_rows(Wanted wanted, const std::vector<const char*>& extra_heads, Extra extra) {
    size_t total = 0, shown = 0;
    for (const Marker& m : run_.markers) total += wanted(m);
    if (total == 0) return 0;
    out_ +=
        "<table class=\"markers\">\n<thead><tr><th class=\"num\">at</th><th class=\"num\">device</th><th>event</th>";
    for (const char* h : extra_heads) out_ += std::string("<th class=\"num\">") + h + "</th>";
    out_ += "</tr></thead>\n<tbody>\n";
    for (const Marker& m : run_.markers) {
      if (!wanted(m) || shown >= kMaxRows) continue;
      ++shown;
      out_ += "<tr><td class=\"num\">" + escape(at(m.at_ns)) + "</td><td class=\"num\">" +
              (m.device >= 0 ? std::to_string(m.device) : std::string("<span class=\"muted\">none</span>")) +
              "</td><td>" + escape(marker_label(m)) + "</td>" + extra(m) + "</tr>\n";
    }
    out_ += "</tbody></table>\n";
    if (total > shown) {
      out_ += "<p class=\"muted\">... and " + u64s(total - shown) +
              " more (in the embedded JSON and <code>gpumemprof report --json</code>).</p>\n";
    }
    return total;
  }

  void failures() {
    out_ += "<section id=\"failures\">\n<h2>Failed allocations and out-of-memory</h2>\n";
    const uint64_t failed = failed_allocations();
    const uint64_t bundles = summary_.oom.bundles_written;
    std::string oom;
    for (const std::string& part : oom_count_parts(summary_)) oom += "; " + escape(part);
    out_ += "<p><strong>" + count_of(failed, "failed allocation") + "</strong>" + whole_run() +
            (oom.empty() ? "; no out-of-memory failure" : oom) + ".</p>\n";
    marker_rows(
        [](const Marker& m) {
          return m.type == Marker::Type::AllocFailed || m.type == Marker::Type::OomBundle ||
                 m.type == Marker::Type::OomRecovered;
        },
        {}, [](const Marker&) { return std::string(); });
    if (bundles > 0) {
      out_ +=
          "<p class=\"hint\">Each OOM bundle explains its failure: what was live, how much was free, what to try. Run "
          "<code>gpumemprof oom " +
          escape(run_.run.path) + "</code></p>\n";
    }
    out_ += "</section>\n";
  }

  void alerts() {
    out_ += "<section id=\"alerts\">\n<h2>Alerts</h2>\n";
    const Summary::Alerts& a = summary_.alerts;
    const std::string counts = u64s(a.warning) + " warning, " + u64s(a.critical) + " critical, " +
                               u64s(a.fragmentation) + " fragmentation, " + u64s(a.growth) + " growth";
    out_ += "<p>Fired" + whole_run() + ": " + counts +
            ". Thresholds and hysteresis are described in docs/alerts.md.</p>\n";
    const size_t n = marker_rows(
        [](const Marker& m) {
          return m.type == Marker::Type::AlertFired || m.type == Marker::Type::AlertCleared ||
                 m.type == Marker::Type::Cleanup;  // the watchdog's, after a critical alert
        },
        {"allocated", "reserved", "threshold"}, [](const Marker& m) {
          if (m.type == Marker::Type::Cleanup) return std::string("<td></td><td></td><td></td>");
          return "<td class=\"num\">" + escape(bytes_text(m.size)) + "</td><td class=\"num\">" +
                 escape(bytes_text(m.reserved)) + "</td><td class=\"num\">" + escape(bytes_text(m.threshold)) + "</td>";
        });
    if (n == 0) out_ += "<p class=\"muted\">No alert fired.</p>\n";
    out_ += "</section>\n";
  }

  const analysis::RunAnalysis& run_;
  const analysis::ProcessEnd end_ = analysis::process_end(run_.run);
  const analysis::TimelineSets& sets_;
  const Summary& summary_;
  const ManifestRecord& manifest_;
  const Summary::Framework* framework_;  // the bridge attached: tensor-level figures exist
  const std::string fw_name_;
  std::string out_;
};

}  // namespace

// The timeline's selections (html/report.js, showSelection), in arrays for size: per device the set
// of each bucket; the allocations, stacks and frames the sets name, each once; the range bands.
nlohmann::json explore_json(const analysis::RunAnalysis& run, const analysis::TimelineSets& sets) {
  nlohmann::json allocations = nlohmann::json::array(), devices = nlohmann::json::array();
  std::map<std::pair<uint64_t, uint64_t>, size_t> allocation_at;  // (address, time) -> row
  std::map<uint32_t, bool> stack_ids;
  for (const auto& [ordinal, ds] : sets.devices) {
    nlohmann::json list = nlohmann::json::array();
    for (const analysis::BucketSet& b : ds.sets) {
      nlohmann::json kinds = nlohmann::json::array(), stacks = nlohmann::json::array(),
                     largest = nlohmann::json::array();
      for (const analysis::Bytes& k : b.by_kind) kinds.insert(kinds.end(), {k.bytes, k.count});
      for (const auto& [id, bytes] : b.stacks) {
        stacks.insert(stacks.end(), {id, bytes.bytes, bytes.count});
        stack_ids[id] = true;
      }
      for (const LiveAllocation& a : b.largest) {
        auto [it, added] = allocation_at.try_emplace({a.address, a.timestamp_ns}, allocations.size());
        if (added) {
          allocations.push_back({a.size, analysis::allocation_kind_label(a), std::string(api_name(a.api)),
                                 since(a.timestamp_ns, run.start_ns), a.thread_id, a.stack_id});
        }
        largest.push_back(it->second);
      }
      list.push_back({b.total.bytes, b.total.count, kinds, stacks, {b.other_stacks.bytes, b.other_stacks.count},
                      largest});
    }
    devices.push_back({{"device", ordinal}, {"of_bucket", ds.of_bucket}, {"sets", list}});
  }
  nlohmann::json frames = nlohmann::json::array(), stacks = nlohmann::json::object();
  std::map<std::pair<std::string, bool>, size_t> frame_at;
  for (const auto& [id, _] : stack_ids) {
    nlohmann::json path = nlohmann::json::array();
    if (auto it = sets.stacks.find(id); it != sets.stacks.end()) {
      for (auto f = it->second.rbegin(); f != it->second.rend(); ++f) {  // outermost first, as build_flame
        auto [at, added] = frame_at.try_emplace({f->flame_name(), f->python}, frames.size());
        if (added) frames.push_back({f->flame_name(), f->python});
        path.push_back(at->second);
      }
    }
    stacks[std::to_string(id)] = {{"site", analysis::site_label(id, sets.stacks)}, {"frames", path}};
  }
  nlohmann::json bands = nlohmann::json::array();
  for (const analysis::RangeBand& b : sets.bands) {
    bands.insert(bands.end(), {b.name, b.thread, b.depth, b.from_ns, b.to_ns, b.calls, b.open_at_end ? 1 : 0});
  }
  return {{"devices", devices},
          {"allocations", allocations},
          {"stacks", stacks},
          {"frames", frames},
          {"range_names", sets.range_names},
          {"bands", bands},
          {"bands_dropped", sets.bands_dropped}};
}

nlohmann::json html_report_data(const analysis::RunAnalysis& run, const analysis::TimelineSets& sets) {
  const ManifestRecord& m = run.run.manifest;
  nlohmann::json info = {
      {"run_dir", run.run.path},
      {"exe", m.exe},
      {"pid", m.pid.value_or(0)},
      {"host", m.host},
      {"rank", reader::or_null(m.rank)},
      {"start_time_utc", m.start_time_utc},
      {"duration_ns", run.duration_ns},
      {"rebuilt_from_trace", run.run.summary_rebuilt},
      {"rebuild_reason", run.run.summary_rebuilt ? nlohmann::json(run.run.rebuild_reason) : nlohmann::json()},
      {"events_lost", run.run.events.final_flush ? nlohmann::json(run.run.events.lost) : nlohmann::json()},
      {"tool_version", GPUMEMPROF_VERSION}};
  if (m.argv) info["argv"] = *m.argv;
  return {{"schema", "gpumemprof-html/1"},
          {"run", std::move(info)},
          {"summary", run.run.summary},
          {"analysis", analysis::analysis_json(run, true)},
          {"explore", explore_json(run, sets)}};
}

std::string render_html_report(const analysis::RunAnalysis& run, const analysis::TimelineSets& sets) {
  return Page(run, sets).build();
}

}  // namespace gmp::tool
