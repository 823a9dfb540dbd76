# The glibc floor (glibc_floor.cpp): what runs on the user's machine loads on glibc 2.28 and newer.
#
#   gmp_glibc_floor(TARGET)   for a shared library or a dynamically linked executable
#
# links the C++ runtime statically (no libstdc++.so.6 or libgcc_s.so.1 of the build host is needed
# at run time) and pins every reference to a glibc symbol newer than the floor to its old version.
# tests/portability's glibc_floor test fails, naming the symbols, when a newer version creeps in
# (a new call in our code or in the static archives): give each a __wrap_ in glibc_floor.cpp and
# add its name to `wrapped` below. Applied on x86_64 only: elsewhere binaries need the build
# host's glibc, and the portability tests are not registered.
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  add_library(gmp_glibc_floor OBJECT ${CMAKE_CURRENT_LIST_DIR}/glibc_floor.cpp)
  add_library(gmp_glibc_floor_start OBJECT ${CMAKE_CURRENT_LIST_DIR}/glibc_floor_start.cpp)
  set_target_properties(gmp_glibc_floor gmp_glibc_floor_start PROPERTIES CXX_VISIBILITY_PRESET hidden)
  # Read by tests/portability.
  set_target_properties(gmp_glibc_floor PROPERTIES GMP_GLIBC_FLOOR 2.28)
else()
  message(STATUS "glibc floor: not applied on ${CMAKE_SYSTEM_PROCESSOR}; binaries need this host's glibc")
endif()

function(gmp_glibc_floor target)
  target_link_options(${target} PRIVATE -static-libstdc++ -static-libgcc)
  if(NOT TARGET gmp_glibc_floor)
    return()
  endif()
  # Each has a __wrap_ in glibc_floor.cpp.
  set(wrapped
    pthread_create pthread_join pthread_detach pthread_once pthread_key_create __pthread_key_create
    pthread_key_delete pthread_getspecific pthread_setspecific
    pthread_rwlock_rdlock pthread_rwlock_wrlock pthread_rwlock_unlock pthread_sigmask
    dlopen dlerror dlsym dlvsym dladdr dladdr1
    stat lstat fstat fstat64 fstatat fstatat64 __libc_single_threaded arc4random _dl_find_object)
  target_link_libraries(${target} PRIVATE gmp_glibc_floor)
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "EXECUTABLE")
    target_link_libraries(${target} PRIVATE gmp_glibc_floor_start)
    list(APPEND wrapped __libc_start_main)
  endif()
  list(TRANSFORM wrapped PREPEND "LINKER:--wrap=")
  # The old pthread and dl versions live in these two before glibc 2.34 (after, they are empty
  # placeholders): needed by name, even where the linker drops unused libraries by default.
  target_link_options(${target} PRIVATE ${wrapped}
    "SHELL:-Wl,--push-state,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2 -Wl,--pop-state")
endfunction()
