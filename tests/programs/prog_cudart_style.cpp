// Reaches the driver like a static-cudart (nvcc default) binary: dlopen("libcuda.so.1"),
// dlsym(h, "cuGetProcAddress_v2"), then every entry point through cuGetProcAddress_v2, each base
// name asked with flags 0 and flags 2; stream-ordered calls use the `_ptsz` pointers.
#include <cstdio>
#include <string>

#include "driver_loader.h"
#include "scenario.h"

int main() {
  DriverTable t;
  std::string error;
  if (!gmp::load_driver(gmp::LoadMode::CudartStyle, t, &error)) {
    std::fprintf(stderr, "prog_cudart_style: %s\n", error.c_str());
    return 1;
  }
  return gmp::run_scenario(t);
}
