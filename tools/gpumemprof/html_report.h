// The page `gpumemprof html` writes: one self-contained HTML document (inline CSS and script, no
// network access) built from a run analysis. docs/html-report.md describes its sections.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "run_analysis.h"

namespace gmp::tool {

// The data the page's script draws from, embedded as <script type="application/json" id="gmp-data">:
// {"schema": "gpumemprof-html/1", "run": {exe, pid, ...}, "summary": summary.json's figures,
//  "analysis": analysis_json(run, with_timeline = true)}.
nlohmann::json html_report_data(const analysis::RunAnalysis& run);

// The whole document.
std::string render_html_report(const analysis::RunAnalysis& run);

// Inline assets (html_assets.cpp).
extern const char* const kHtmlReportCss;
extern const char* const kHtmlReportScript;

}  // namespace gmp::tool
