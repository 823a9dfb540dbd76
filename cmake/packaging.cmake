# `cpack` in the build directory: gpumemprof-VERSION-Linux.tar.gz (the install tree, any prefix) and
# gpumemprof_VERSION_ARCH.deb (under /usr), both from cmake/install.cmake's rules.
set(CPACK_GENERATOR TGZ DEB)
set(CPACK_PACKAGE_NAME gpumemprof)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU memory profiler for any CUDA program, with no code changes")
set(CPACK_PACKAGE_DESCRIPTION
  "Preload libgpumemprof.so (gpumemprof run -- CMD) and every CUDA allocation of the program is\n\
recorded: peaks and what was live at them, leaks, out-of-memory failures explained, alerts, call\n\
stacks, NVTX ranges and PyTorch's caching allocator from inside. The gpumemprof command reports on\n\
the run, compares runs, and exports to Perfetto, CSV, flame graphs and PyTorch's memory viewer.")
set(CPACK_PACKAGE_CONTACT "gpumemprof maintainers")
# Installed binaries lose their debug info (the build tree keeps it): the package is a few MB, not 100.
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# The command is static and the shim carries its C++ runtime (shim/glibc_floor.cmake), so glibc is
# the one dependency: the floor where it applies, else what dpkg-shlibdeps finds on this machine.
# The libunwind.so.8 copy beside the shim is optional: the shim dlopens it and falls back to the
# system's, then to glibc's backtrace(), where it cannot load (it needs liblzma5 and a newer glibc).
if(TARGET gmp_glibc_floor)
  get_target_property(GMP_GLIBC_FLOOR gmp_glibc_floor GMP_GLIBC_FLOOR)
  set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= ${GMP_GLIBC_FLOOR})")
else()
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
endif()
include(CPack)
