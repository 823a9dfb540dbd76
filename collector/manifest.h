// manifest.json of a run directory (docs/run-directory.md): who and what was profiled.
#pragma once

#include <nlohmann/json.hpp>

#include "config.h"
#include "process_info.h"

namespace gmp {

// `devices`: DeviceTable::entry_json() of each device used so far, in the order first used.
nlohmann::json manifest_json(const ProcessInfo& info, const Config& config, const nlohmann::json& devices);

}  // namespace gmp
