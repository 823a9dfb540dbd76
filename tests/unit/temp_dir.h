// A directory under /tmp for one test, removed with everything in it when the test ends.
#pragma once

#include <cstdlib>
#include <string>

#include <stdlib.h>

namespace gmp::test {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/gmp-test-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path).c_str()); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

}  // namespace gmp::test
