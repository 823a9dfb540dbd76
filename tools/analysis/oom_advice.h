// What to try about one OOM, from its derived facts (oom_facts.h): pure rules, each giving an id
// (cannot_fit, recovered, fragmentation, other_processes, own_footprint, enough_free, shortfall,
// unknown_free, pinned_host) and a sentence. Unit-tested with crafted facts (tests/unit/oom_advice_test.cpp).
#pragma once

#include <vector>

#include "oom_facts.h"

namespace gmp::analysis {

// The advice for `x`, most decisive first; `x.advice` is not read.
std::vector<OomExplanation::Advice> oom_advice(const OomExplanation& x);

}  // namespace gmp::analysis
