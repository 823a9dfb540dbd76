// A directory held by descriptor, as the collector holds the directories it writes into
// (collector/owned_dir.h), for tests of the writers that work through one.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "owned_dir.h"

namespace gmp::test {

struct HeldDir {
  explicit HeldDir(const std::string& path) {
    std::string error;
    EXPECT_TRUE(dir.open(path, geteuid(), error, /*create=*/false)) << error;
  }
  OwnedDir dir;
};

}  // namespace gmp::test
