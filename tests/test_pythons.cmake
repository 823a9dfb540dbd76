# The CPython interpreters the Python-frame tests run with: python3 from PATH, plus every 3.9 to
# 3.13 found under pyenv (this project's dev and CI machines have pyenv's 3.10-3.13), so the frame
# reader's layouts are checked on each version it claims. Sets:
#   GMP_TEST_PYTHONS      list of interpreter paths of CPython 3.10-3.13 (at most one per minor)
#   GMP_TEST_OLD_PYTHON   a CPython older than 3.10, for "no layout: native frames only", or empty
set(GMP_TEST_PYTHONS)
set(GMP_TEST_OLD_PYTHON "")
set(_gmp_seen_minors)
set(_gmp_root "$ENV{PYENV_ROOT}")
if(NOT _gmp_root)
  set(_gmp_root "$ENV{HOME}/.pyenv")
endif()
find_program(_gmp_path_python python3)
file(GLOB _gmp_pyenv LIST_DIRECTORIES false "${_gmp_root}/versions/3.*/bin/python3")
foreach(candidate ${_gmp_path_python} ${_gmp_pyenv})
  # The interpreter's own path (not a pyenv shim) and its minor version, or nothing if it fails.
  execute_process(COMMAND ${candidate} -c "import sys, platform; print(platform.python_implementation(), sys.version_info[1], sys.executable)"
                  OUTPUT_VARIABLE _gmp_out RESULT_VARIABLE _gmp_rc ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT _gmp_rc EQUAL 0 OR NOT _gmp_out MATCHES "^CPython ([0-9]+) (.+)$")
    continue()
  endif()
  set(_gmp_minor ${CMAKE_MATCH_1})
  set(_gmp_exe ${CMAKE_MATCH_2})
  if(_gmp_minor IN_LIST _gmp_seen_minors)
    continue()
  endif()
  list(APPEND _gmp_seen_minors ${_gmp_minor})
  if(_gmp_minor GREATER_EQUAL 10 AND _gmp_minor LESS_EQUAL 13)
    list(APPEND GMP_TEST_PYTHONS ${_gmp_exe})
  elseif(_gmp_minor LESS 10 AND _gmp_minor GREATER_EQUAL 6 AND NOT GMP_TEST_OLD_PYTHON)
    set(GMP_TEST_OLD_PYTHON ${_gmp_exe})
  endif()
endforeach()
message(STATUS "Python-frame tests: ${GMP_TEST_PYTHONS}; older: ${GMP_TEST_OLD_PYTHON}")
