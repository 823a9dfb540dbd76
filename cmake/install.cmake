# `cmake --install BUILD --prefix P` (and the packages, cmake/packaging.cmake), one layout:
#   bin/gpumemprof                                  the command (static: runs on any Linux)
#   lib/gpumemprof/libgpumemprof.so, libunwind.so.8 the shim and the unwinder it loads from beside itself
#   lib/gpumemprof/python/                          the Python bootstrap (docs/framework-bridge.md)
#   include/gpumemprof.h                            marks, ranges and pauses from C and C++
#   share/doc/gpumemprof/                           README.md, docs/ and libunwind8.copyright
#   share/man/man1/gpumemprof.1                     every command's --help (cmake/help_pages.py)
#   share/bash-completion/completions/gpumemprof    commands, options and export formats
# bin/ and GMP_INSTALL_SHIM_DIR (set in the top-level CMakeLists.txt, before the shim's own rules) are
# fixed rather than GNUInstallDirs' (lib/x86_64-linux-gnu under /usr on Debian): the installed
# `gpumemprof run` finds the shim at ../GMP_INSTALL_SHIM_DIR from its own directory.
target_compile_definitions(gpumemprof_cli PRIVATE GMP_INSTALL_SHIM_DIR="${GMP_INSTALL_SHIM_DIR}")
install(TARGETS gpumemprof_cli RUNTIME DESTINATION bin)
install(FILES ${CMAKE_SOURCE_DIR}/include/gpumemprof.h DESTINATION include)

set(GMP_INSTALL_DOC_DIR share/doc/gpumemprof)
install(FILES ${CMAKE_SOURCE_DIR}/README.md DESTINATION ${GMP_INSTALL_DOC_DIR})
# The bundled libunwind.so.8 (shim/CMakeLists.txt) goes with its licence (MIT/Expat): the notice of
# the distribution's package it was copied from, as libunwind8.copyright (in the .deb and tarball too).
if(LIBUNWIND_RUNTIME)
  find_file(LIBUNWIND_COPYRIGHT copyright PATHS /usr/share/doc/libunwind8 /usr/share/doc/libunwind NO_DEFAULT_PATH)
  if(LIBUNWIND_COPYRIGHT)
    install(FILES ${LIBUNWIND_COPYRIGHT} RENAME libunwind8.copyright DESTINATION ${GMP_INSTALL_DOC_DIR})
  else()
    message(WARNING "libunwind's copyright notice not found: the installed libunwind.so.8 goes without it")
  endif()
endif()
# docs/ as docs/, so that the README's links work where it is installed. docs/man is the man page's
# source, installed as the page itself.
install(DIRECTORY ${CMAKE_SOURCE_DIR}/docs DESTINATION ${GMP_INSTALL_DOC_DIR} PATTERN man EXCLUDE)

# The man page and the bash completion, written from the built command's own --help, so that
# neither can say something the command does not do.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
set(GMP_MAN_PAGE ${CMAKE_BINARY_DIR}/share/man/man1/gpumemprof.1)
set(GMP_COMPLETION ${CMAKE_BINARY_DIR}/share/bash-completion/completions/gpumemprof)
add_custom_command(OUTPUT ${GMP_MAN_PAGE} ${GMP_COMPLETION}
  COMMAND Python3::Interpreter ${CMAKE_SOURCE_DIR}/cmake/help_pages.py --tool $<TARGET_FILE:gpumemprof_cli>
    --man-template ${CMAKE_SOURCE_DIR}/docs/man/gpumemprof.1.in --man ${GMP_MAN_PAGE}
    --completion-template ${CMAKE_SOURCE_DIR}/scripts/completion/gpumemprof.bash.in --completion ${GMP_COMPLETION}
  DEPENDS gpumemprof_cli ${CMAKE_SOURCE_DIR}/cmake/help_pages.py ${CMAKE_SOURCE_DIR}/docs/man/gpumemprof.1.in
    ${CMAKE_SOURCE_DIR}/scripts/completion/gpumemprof.bash.in
  COMMENT "Writing the man page and the bash completion from gpumemprof --help"
  VERBATIM)
add_custom_target(gpumemprof_help_pages ALL DEPENDS ${GMP_MAN_PAGE} ${GMP_COMPLETION})
install(FILES ${GMP_MAN_PAGE} DESTINATION share/man/man1)
install(FILES ${GMP_COMPLETION} DESTINATION share/bash-completion/completions)
