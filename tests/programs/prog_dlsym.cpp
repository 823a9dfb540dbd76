// Reaches the driver like PyTorch / JAX: dlopen("libcuda.so.1") and dlsym(h, exact_name) for
// every entry point (cuMemAlloc_v2, cuMemFree_v2, cuMemCreate, ...).
#include <cstdio>
#include <string>

#include "driver_loader.h"
#include "scenario.h"

int main() {
  DriverTable t;
  std::string error;
  if (!gmp::load_driver(gmp::LoadMode::Dlsym, t, &error)) {
    std::fprintf(stderr, "prog_dlsym: %s\n", error.c_str());
    return 1;
  }
  return gmp::run_scenario(t);
}
