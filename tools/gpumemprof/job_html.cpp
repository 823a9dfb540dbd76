// The page of `gpumemprof html ROOT` for a job (docs/html-report.md §Jobs): the job view's table
// with a bar of each row's peaks, the spread, which rank ran out of memory first, and each rank's
// own commands. Static: the bars are drawn here, so the page needs no script; the figures are
// embedded as JSON (#gmp-data, job_json()) like the single run's page.
#include <algorithm>

#include "bytes_text.h"
#include "html_escape.h"
#include "html_report.h"
#include "human_text.h"
#include "job_view.h"

namespace gmp::tool {
namespace {

using html::escape;

constexpr int kBarWidth = 240;

// One row's peaks as two bars on the scale of the job's highest reserved peak.
std::string bars(const analysis::JobRow& r, uint64_t scale) {
  if (r.device < 0 || scale == 0) return {};
  auto width = [&](uint64_t bytes) { return std::to_string(bytes * kBarWidth / scale); };
  return "<svg class=\"peak-bars\" width=\"" + std::to_string(kBarWidth) +
         "\" height=\"18\" role=\"img\"><rect class=\"bar-reserved\" x=\"0\" y=\"1\" height=\"16\" width=\"" +
         width(r.reserved_peak) + "\" style=\"fill: var(--reserved); fill-opacity: .3\"/>" +
         "<rect class=\"bar-allocated\" x=\"0\" y=\"5\" height=\"8\" width=\"" + width(r.allocated_peak) +
         "\" style=\"fill: var(--allocated)\"/></svg>";
}

constexpr int kStripWidth = 720, kStripHeight = 44;

// One series of a strip: per pixel column the highest value of the buckets it covers, drawn as
// steps from the baseline, a closed shape per run of columns the process was running in.
std::string strip_path(const std::vector<uint64_t>& values, const std::vector<bool>& has, uint64_t top) {
  std::string d;
  auto y = [&](uint64_t v) { return std::to_string(kStripHeight - static_cast<int>(v * (kStripHeight - 2) / top)); };
  for (int px = 0; px < kStripWidth; ++px) {
    if (!has[px]) continue;
    d += "M" + std::to_string(px) + "," + std::to_string(kStripHeight);
    for (; px < kStripWidth && has[px]; ++px) d += "V" + y(values[px]) + "H" + std::to_string(px + 1);
    d += "V" + std::to_string(kStripHeight) + "Z";
  }
  return d;
}

// Every process's devices on the job's clock, a strip each on one scale (the job's highest
// reserved figure), so that the ranks' timelines compare at a glance; each process's own page
// has the full timeline.
std::string timelines_section(const analysis::JobAnalysis& job, const std::vector<JobMemberView>& views) {
  uint64_t end = 0, top = 0;
  for (size_t i = 0; i < views.size(); ++i) {
    for (const auto& [device, buckets] : views[i].timelines) {
      for (const analysis::TimelineBucket& b : buckets) top = std::max(top, std::max(b.reserved_max, b.allocated_max));
    }
    if (!views[i].timelines.empty()) end = std::max(end, job.job_time(i, views[i].end_ns));
  }
  if (top == 0 || end == 0) return {};
  std::string out = "<section id=\"timelines\">\n<h2>Timelines</h2>\n<p class=\"muted\">Each process's allocated (solid) "
                    "and reserved (light) memory on the job's clock, from its start to " +
                    escape(human_duration_ns(end)) + ", on one scale up to " + escape(bytes_text(top)) +
                    ": each column is the highest figure of its time.</p>\n<table class=\"job-timelines\">\n";
  for (size_t i = 0; i < views.size(); ++i) {
    for (const auto& [device, buckets] : views[i].timelines) {
      std::vector<uint64_t> allocated(kStripWidth, 0), reserved(kStripWidth, 0);
      std::vector<bool> has(kStripWidth, false);
      for (size_t k = 0; k < buckets.size(); ++k) {
        const uint64_t from = buckets[k].start_ns, to = k + 1 < buckets.size() ? buckets[k + 1].start_ns : views[i].end_ns;
        const uint64_t x0 = job.job_time(i, from) * kStripWidth / end;
        const uint64_t x1 = std::max(x0, (job.job_time(i, std::max(from, to)) * kStripWidth) / end);
        for (uint64_t px = x0; px <= x1 && px < static_cast<uint64_t>(kStripWidth); ++px) {
          allocated[px] = std::max(allocated[px], buckets[k].allocated_max);
          reserved[px] = std::max(reserved[px], buckets[k].reserved_max);
          has[px] = true;
        }
      }
      const std::string label = analysis::member_label(job.members[i]) + ", device " + std::to_string(device);
      out += "<tr><td>" + escape(label) + "</td><td><svg class=\"rank-timeline\" width=\"" + std::to_string(kStripWidth) +
             "\" height=\"" + std::to_string(kStripHeight) + "\" role=\"img\" aria-label=\"" + escape(label) + "\"><title>" +
             escape(label) + "</title><path class=\"strip-reserved\" style=\"fill: var(--reserved); fill-opacity: .3\" d=\"" +
             strip_path(reserved, has, top) + "\"/><path class=\"strip-allocated\" style=\"fill: var(--allocated)\" d=\"" +
             strip_path(allocated, has, top) + "\"/></svg></td></tr>\n";
    }
  }
  return out + "</table>\n</section>\n";
}

}  // namespace

std::string render_job_html(const analysis::JobAnalysis& job, const std::vector<JobMemberView>& views) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  out += "<title>" + escape("gpumemprof: job " + job.root) + "</title>\n<style>\n\n";
  out += kHtmlReportCss;
  out += "</style>\n</head>\n<body class=\"job\">\n<header>\n<h1>GPU memory of a job <span class=\"exe\">" +
         escape(job.root) + "</span></h1>\n";
  out += "<p>" + std::to_string(job.members.size()) + " run directories, " + std::to_string(job.opened) +
         " read. Times are since the job started (its first process's start).</p>\n";
  if (!job.left_out.empty()) out += "<p class=\"note\">" + escape(job.left_out) + ".</p>\n";
  out += "</header>\n";

  out += "<section id=\"processes\">\n<h2>Ranks and devices</h2>\n<table class=\"job-rows\">\n";
  const auto table = job_table(job);
  uint64_t scale = 0;
  for (const analysis::JobRow& r : job.rows) scale = std::max(scale, std::max(r.reserved_peak, r.allocated_peak));
  for (size_t i = 0; i < table.size(); ++i) {
    const char* cell = i == 0 ? "th" : "td";
    out += i == 0 ? "<thead><tr>" : "<tr>";
    for (const std::string& c : table[i]) out += std::string("<") + cell + ">" + escape(c) + "</" + cell + ">";
    out += i == 0 ? "<th>peaks (reserved behind allocated)</th></tr></thead>\n<tbody>\n"
                  : "<td>" + bars(job.rows[i - 1], scale) + "</td></tr>\n";
  }
  out += "</tbody></table>\n</section>\n";

  if (!job.spreads.empty()) {
    out += "<section id=\"spread\">\n<h2>Spread across the job</h2>\n<ul>\n";
    for (const analysis::Spread& s : job.spreads) out += "<li>" + escape(spread_line(job, s)) + "</li>\n";
    out += "</ul>\n</section>\n";
  }
  out += timelines_section(job, views);
  const std::vector<std::string> failed = failed_first_lines(job);
  if (!failed.empty()) {
    out += "<section id=\"failed-first\">\n<h2>Out of memory</h2>\n<p class=\"note bad\">" + escape(failed[0]) +
           "</p>\n";
    if (failed.size() > 1) {
      out += "<ul>\n";
      for (size_t i = 1; i < failed.size(); ++i) out += "<li>" + escape(failed[i]) + "</li>\n";
      out += "</ul>\n";
    }
    out += "</section>\n";
  }

  out += "<section id=\"members\">\n<h2>Each rank's own report</h2>\n<table class=\"members\">\n"
         "<thead><tr><th>process</th><th>report</th><th>page</th></tr></thead>\n<tbody>\n";
  for (size_t i = 0; i < job.members.size(); ++i) {
    const reader::JobMember& m = job.members[i];
    if (!m.run) continue;
    const std::string label = analysis::member_label(m);
    std::string file = label;
    std::replace(file.begin(), file.end(), ' ', '-');
    const std::string& page = views[i].page;
    out += "<tr><td>" + escape(label) + "</td><td><code>" + escape("gpumemprof report " + m.path) + "</code></td><td>" +
           (page.empty() ? "<code>" + escape("gpumemprof html " + m.path + " -o " + file + ".html") + "</code>"
                         : "<a class=\"rank-page\" href=\"" + escape(page) + "\">" + escape(page) + "</a>") +
           (views[i].error.empty() ? "" : " <span class=\"bad\">" + escape(views[i].error) + "</span>") + "</td></tr>\n";
  }
  out += "</tbody></table>\n";
  if (job.opened < job.members.size()) {
    out += "<h3>Not read</h3>\n<ul class=\"unread\">\n";
    for (const reader::JobMember& m : job.members) {
      if (!m.run) out += "<li class=\"bad\">" + escape(m.error) + "</li>\n";
    }
    out += "</ul>\n";
  }
  out += "</section>\n<footer>Written by gpumemprof " GPUMEMPROF_VERSION
         " from the run directories of a job. The figures are also embedded as JSON in the element "
         "<code>#gmp-data</code>; <code>gpumemprof report ROOT --json</code> prints them too.</footer>\n";
  out += "<script type=\"application/json\" id=\"gmp-data\">";
  out += html::script_json({{"schema", "gpumemprof-html-job/1"}, {"job", analysis::job_json(job)}});
  out += "</script>\n</body>\n</html>\n";
  return out;
}

}  // namespace gmp::tool
