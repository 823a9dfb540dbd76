// The page `gpumemprof html` writes: one self-contained HTML document (inline CSS and script, no
// network access) built from a run analysis. docs/html-report.md describes its sections.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "run_analysis.h"
#include "timeline_sets.h"

namespace gmp::tool {

// The data the page's script draws from, embedded as <script type="application/json" id="gmp-data">:
// {"schema": "gpumemprof-html/1", "run": {exe, pid, ...}, "summary": summary.json's figures,
//  "analysis": analysis_json(run, with_timeline = true), "explore": what the timeline shows for a
//  selected window (explore_json in html_report.cpp; docs/html-report.md, "The embedded data")}.
nlohmann::json html_report_data(const analysis::RunAnalysis& run, const analysis::TimelineSets& sets);

// The whole document.
std::string render_html_report(const analysis::RunAnalysis& run, const analysis::TimelineSets& sets);

// The page's inline style sheet and script: html/report.css and html/report.js, compiled in at
// build time (html/embed.cmake). Hand-written, no libraries, nothing fetched: the page must open
// from a file on a machine with no network. The script reads the embedded JSON (#gmp-data), draws
// one SVG timeline per device (zoom, pan, hover, NVTX ranges and marks) with what was live at the
// highest point of the selected window under it, and one flame graph (icicle) per device of what
// was live at its allocated peak, and finally sets <body data-rendered="ok"> (a script error sets
// data-error instead; tests check both).
extern const char* const kHtmlReportCss;
extern const char* const kHtmlReportScript;

}  // namespace gmp::tool
