#include <gtest/gtest.h>

#include <map>
#include <string>

#include "config.h"

namespace gmp {
namespace {

Config parse(const std::map<std::string, std::string>& env) {
  return parse_config([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(Config, DefaultsFromTheContract) {
  Config c = parse({});
  EXPECT_TRUE(c.enable);
  EXPECT_EQ(c.output, "gpumemprof.%e.%p");
  EXPECT_EQ(c.log_level, LogLevel::Warn);
  EXPECT_EQ(c.ring_events, 1u << 20);
  EXPECT_EQ(c.sample_ms, 100u);
  EXPECT_EQ(c.warn_percent, 80);
  EXPECT_EQ(c.critical_percent, 95);
  EXPECT_DOUBLE_EQ(c.fragmentation, 0.3);
  EXPECT_EQ(c.leak_bytes, 100ull << 20);
  EXPECT_TRUE(c.oom_dir.empty());
  EXPECT_EQ(c.oom_events, 10000u);
  EXPECT_EQ(c.oom_max_dumps, 5u);
  EXPECT_EQ(c.oom_max_total_mb, 256u);
  EXPECT_TRUE(c.errors.empty());
}

TEST(Config, AcceptsValidValues) {
  Config c = parse({{"GPUMEMPROF_ENABLE", "off"},
                    {"GPUMEMPROF_OUTPUT", "/tmp/x.%p"},
                    {"GPUMEMPROF_LOG_LEVEL", "DEBUG"},
                    {"GPUMEMPROF_RING_EVENTS", "4096"},
                    {"GPUMEMPROF_STACKS", "8"},
                    {"GPUMEMPROF_PYTHON_STACKS", "off"},
                    {"GPUMEMPROF_SAMPLE_MS", "0"},
                    {"GPUMEMPROF_WARN_PERCENT", "70.5"},
                    {"GPUMEMPROF_CRITICAL_PERCENT", "90"},
                    {"GPUMEMPROF_FRAGMENTATION", "0.5"},
                    {"GPUMEMPROF_LEAK_BYTES", "1.5GiB"},
                    {"GPUMEMPROF_OOM_DIR", "/tmp/oom"},
                    {"GPUMEMPROF_OOM_EVENTS", "20"},
                    {"GPUMEMPROF_OOM_MAX_DUMPS", "2"},
                    {"GPUMEMPROF_OOM_MAX_TOTAL_MB", "64"}});
  EXPECT_TRUE(c.errors.empty()) << c.errors.front();
  EXPECT_FALSE(c.enable);
  EXPECT_EQ(c.output, "/tmp/x.%p");
  EXPECT_EQ(c.log_level, LogLevel::Debug);
  EXPECT_EQ(c.ring_events, 4096u);
  EXPECT_EQ(c.stacks, 8u);
  EXPECT_FALSE(c.python_stacks);
  EXPECT_EQ(c.sample_ms, 0u);
  EXPECT_DOUBLE_EQ(c.warn_percent, 70.5);
  EXPECT_EQ(c.leak_bytes, 1536ull << 20);
  EXPECT_EQ(c.oom_dir, "/tmp/oom");
  EXPECT_EQ(c.oom_max_total_mb, 64u);
}

TEST(Config, InvalidValueKeepsDefaultAndExplainsInOneLine) {
  Config c = parse({{"GPUMEMPROF_RING_EVENTS", "1000"}, {"GPUMEMPROF_LEAK_BYTES", "lots"}});
  EXPECT_EQ(c.ring_events, 1u << 20);
  EXPECT_EQ(c.leak_bytes, 100ull << 20);
  ASSERT_EQ(c.errors.size(), 2u);
  EXPECT_EQ(c.errors[0],
            "invalid GPUMEMPROF_RING_EVENTS='1000': expected a power of two from 1024 to 67108864; using the default "
            "1048576");
  EXPECT_NE(c.errors[1].find("GPUMEMPROF_LEAK_BYTES='lots'"), std::string::npos);
  for (const auto& e : c.errors) EXPECT_EQ(e.find('\n'), std::string::npos);
}

TEST(Config, RejectsEachMalformedKind) {
  for (const auto& [name, value] : std::map<std::string, std::string>{{"GPUMEMPROF_ENABLE", "maybe"},
                                                                       {"GPUMEMPROF_LOG_LEVEL", "loud"},
                                                                       {"GPUMEMPROF_STACKS", "-1"},
                                                                       {"GPUMEMPROF_SAMPLE_MS", "1e3"},
                                                                       {"GPUMEMPROF_WARN_PERCENT", "150"},
                                                                       {"GPUMEMPROF_FRAGMENTATION", "0"},
                                                                       {"GPUMEMPROF_OUTPUT", "  "},
                                                                       {"GPUMEMPROF_OOM_MAX_DUMPS", "0"}}) {
    Config c = parse({{name, value}});
    ASSERT_EQ(c.errors.size(), 1u) << name;
    EXPECT_NE(c.errors[0].find(name + "='" + value + "'"), std::string::npos) << c.errors[0];
  }
}

TEST(Config, CriticalBelowWarnFallsBackToBothDefaults) {
  Config c = parse({{"GPUMEMPROF_WARN_PERCENT", "90"}, {"GPUMEMPROF_CRITICAL_PERCENT", "50"}});
  EXPECT_EQ(c.warn_percent, 80);
  EXPECT_EQ(c.critical_percent, 95);
  EXPECT_EQ(c.errors.size(), 1u);
}

TEST(Config, ParseSize) {
  EXPECT_EQ(parse_size("123"), 123u);
  EXPECT_EQ(parse_size("4K"), 4096u);
  EXPECT_EQ(parse_size("4KiB"), 4096u);
  EXPECT_EQ(parse_size("100MiB"), 100ull << 20);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size(" 1.5 g "), 1536ull << 20);
  EXPECT_EQ(parse_size("1T"), 1ull << 40);
  EXPECT_FALSE(parse_size("").has_value());
  EXPECT_FALSE(parse_size("-1").has_value());
  EXPECT_FALSE(parse_size("12Q").has_value());
  EXPECT_FALSE(parse_size("0.5").has_value());  // not a whole number of bytes
}

}  // namespace
}  // namespace gmp
