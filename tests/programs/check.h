// Result checking for the test programs: every driver call's result is compared with what the
// fake driver's rules (tests/fake_driver/README.md) say it must be; a mismatch throws CheckFailure
// with the call, the line and both results, and the program exits non-zero.
#pragma once

#include <cuda.h>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace gmp {

inline const char* cu_result_name(CUresult r) {
  switch (r) {
    case CUDA_SUCCESS: return "CUDA_SUCCESS";
    case CUDA_ERROR_INVALID_VALUE: return "CUDA_ERROR_INVALID_VALUE";
    case CUDA_ERROR_OUT_OF_MEMORY: return "CUDA_ERROR_OUT_OF_MEMORY";
    case CUDA_ERROR_NOT_INITIALIZED: return "CUDA_ERROR_NOT_INITIALIZED";
    case CUDA_ERROR_DEINITIALIZED: return "CUDA_ERROR_DEINITIALIZED";
    case CUDA_ERROR_NO_DEVICE: return "CUDA_ERROR_NO_DEVICE";
    case CUDA_ERROR_INVALID_DEVICE: return "CUDA_ERROR_INVALID_DEVICE";
    case CUDA_ERROR_INVALID_CONTEXT: return "CUDA_ERROR_INVALID_CONTEXT";
    case CUDA_ERROR_INVALID_HANDLE: return "CUDA_ERROR_INVALID_HANDLE";
    case CUDA_ERROR_NOT_FOUND: return "CUDA_ERROR_NOT_FOUND";
    case CUDA_ERROR_NOT_SUPPORTED: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return "CUDA_ERROR_(other)";
  }
}

struct CheckFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

inline void check_result(CUresult got, CUresult want, const char* what, const char* file,
                         int line) {
  if (got == want) return;
  throw CheckFailure(std::string(file) + ":" + std::to_string(line) + ": " + what + " returned " +
                     cu_result_name(got) + " (" + std::to_string(static_cast<int>(got)) +
                     "), expected " + cu_result_name(want));
}

inline void check_true(bool ok, const char* what, const char* file, int line,
                       const std::string& detail = {}) {
  if (ok) return;
  throw CheckFailure(std::string(file) + ":" + std::to_string(line) + ": check failed: " + what +
                     (detail.empty() ? "" : " (" + detail + ")"));
}

}  // namespace gmp

// CK(call): must return CUDA_SUCCESS. CK_EQ(call, code): must return `code`.
#define CK(call) ::gmp::check_result((call), CUDA_SUCCESS, #call, __FILE__, __LINE__)
#define CK_EQ(call, want) ::gmp::check_result((call), (want), #call, __FILE__, __LINE__)
// CHECK(cond) / CHECK_EQ(a, b) for plain values.
#define CHECK(cond) ::gmp::check_true(static_cast<bool>(cond), #cond, __FILE__, __LINE__)
#define CHECK_EQ(a, b)                                                                        \
  do {                                                                                        \
    const auto gmp_a_ = (a);                                                                  \
    const auto gmp_b_ = (b);                                                                  \
    ::gmp::check_true(gmp_a_ == gmp_b_, #a " == " #b, __FILE__, __LINE__,                     \
                      std::to_string(gmp_a_) + " vs " + std::to_string(gmp_b_));              \
  } while (0)
