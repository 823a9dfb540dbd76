// The explanation of one OOM bundle as `gpumemprof oom` prints it: its facts and their advice
// (analysis/oom_facts.h) rendered as text or as JSON. Separate from the command's argument handling
// so the fuzzer links it (tests/fuzz/).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "oom_facts.h"

namespace gmp::tool {

std::string oom_explanation_text(const analysis::OomExplanation& x);
nlohmann::json oom_explanation_json(const analysis::OomExplanation& x);

}  // namespace gmp::tool
