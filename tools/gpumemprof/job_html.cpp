// The page of `gpumemprof html ROOT` for a job (docs/html-report.md §Jobs): the job view's table
// with a bar of each row's peaks, the spread, which rank ran out of memory first, and each rank's
// own commands. Static: the bars are drawn here, so the page needs no script; the figures are
// embedded as JSON (#gmp-data, job_json()) like the single run's page.
#include <algorithm>

#include "html_escape.h"
#include "html_report.h"
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

}  // namespace

std::string render_job_html(const analysis::JobAnalysis& job) {
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
  for (const reader::JobMember& m : job.members) {
    if (!m.run) continue;
    const std::string label = analysis::member_label(m);
    std::string file = label;
    std::replace(file.begin(), file.end(), ' ', '-');
    out += "<tr><td>" + escape(label) + "</td><td><code>" + escape("gpumemprof report " + m.path) +
           "</code></td><td><code>" + escape("gpumemprof html " + m.path + " -o " + file + ".html") +
           "</code></td></tr>\n";
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
