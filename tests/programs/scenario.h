// The scenario shared by prog_cudart_style, prog_dlsym, prog_linked and prog_self_lookup.
#pragma once

#include "driver_table.h"

namespace gmp {

// Runs the scenario of scenario_expected.h on device 0. Returns 0 when every driver call gave
// the result the fake driver's rules predict, 1 otherwise (after printing what failed).
int run_scenario(const DriverTable& t);

}  // namespace gmp
