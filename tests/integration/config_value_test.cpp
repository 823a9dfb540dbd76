// A bad GPUMEMPROF_* value as the profiled program sees it: one stderr line whatever bytes the
// value holds, the default in force, the program's own exit status (docs/configuration.md).
#include <gtest/gtest.h>

#include "harness.h"

namespace gmp::test {
namespace {

TEST(ConfigValue, ANewlineInABadValueStaysOnOneStderrLine) {
  Sandbox box;
  RunResult r = box.run({Paths::bin("prog_ops"), "alloc:1M", "exit:7"}, {{"GPUMEMPROF_RING_EVENTS", "12\nfoo"}});
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_EQ(r.err,
            "gpumemprof: invalid GPUMEMPROF_RING_EVENTS='12\\nfoo': expected a power of two from 1024 to 67108864; "
            "using the default 1048576\n");
  EXPECT_EQ(read_json_file(box.only_run_dir() + "/manifest.json")["config"]["ring_events"], 1u << 20);
}

}  // namespace
}  // namespace gmp::test
