// Reaches the driver through the resolver's self-lookup: dlsym(h, "cuGetProcAddress") (old
// 4-argument export), ask it for "cuGetProcAddress" at version 12000, and resolve every entry
// point through the resolver that call returned (cuGetProcAddress_v2 on the real driver).
#include <cstdio>
#include <string>

#include "driver_loader.h"
#include "scenario.h"

int main() {
  DriverTable t;
  std::string error;
  if (!gmp::load_driver(gmp::LoadMode::SelfLookup, t, &error)) {
    std::fprintf(stderr, "prog_self_lookup: %s\n", error.c_str());
    return 1;
  }
  return gmp::run_scenario(t);
}
