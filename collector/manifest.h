// manifest.json of a run directory (format/manifest_record.h): who and what was profiled.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "config.h"
#include "manifest_record.h"
#include "process_info.h"

namespace gmp {

// `devices`: DeviceTable::entry() of each device used so far, in the order first used.
nlohmann::json manifest_json(const ProcessInfo& info, const Config& config, const std::vector<DeviceEntry>& devices);

}  // namespace gmp
