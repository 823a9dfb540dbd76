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
  EXPECT_TRUE(c.metrics_dir.empty());
  EXPECT_EQ(c.metrics_interval_ms, 5000u);
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
                    {"GPUMEMPROF_OOM_MAX_TOTAL_MB", "64"},
                    {"GPUMEMPROF_METRICS_DIR", "/var/lib/prometheus/node-exporter"},
                    {"GPUMEMPROF_METRICS_INTERVAL_MS", "250"}});
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
  EXPECT_EQ(c.metrics_dir, "/var/lib/prometheus/node-exporter");
  EXPECT_EQ(c.metrics_interval_ms, 250u);
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
  EXPECT_EQ(parse_size("4kb"), 4096u);
  EXPECT_EQ(parse_size("100MiB"), 100ull << 20);
  EXPECT_EQ(parse_size("2G"), 2ull << 30);
  EXPECT_EQ(parse_size("1.5g"), 1536ull << 20);
  EXPECT_EQ(parse_size("1T"), 1ull << 40);
  EXPECT_EQ(parse_size("7b"), 7u);
  EXPECT_EQ(parse_size("18446744073709551615"), UINT64_MAX);  // exact: whole numbers are not rounded
  EXPECT_EQ(parse_size("16777215T"), (16777215ull << 40));
  for (const char* bad : {"", " 1G", "1G ", "1 G", "+1G", "-1", "1e3", "0x10", "G", "12Q", "1.G", ".5G",
                          "0.5",  // not a whole number of bytes
                          "18446744073709551616", "16777216T", "17179869184G"}) {
    EXPECT_FALSE(parse_size(bad).has_value()) << "'" << bad << "'";
  }
}

TEST(Config, ParseBool) {
  for (const char* yes : {"1", "true", "TRUE", "Yes", "on"}) EXPECT_EQ(parse_bool(yes), true) << yes;
  for (const char* no : {"0", "false", "No", "OFF"}) EXPECT_EQ(parse_bool(no), false) << no;
  for (const char* bad : {"", " 1", "1 ", "2", "y", "enabled", "0x1"}) {
    EXPECT_FALSE(parse_bool(bad).has_value()) << "'" << bad << "'";
  }
}

// Each kind of value: what is taken, and what is rejected (default kept, one line naming it).
// `key` and `taken`: the manifest's config entry and its value when the value is accepted; a
// null `key` marks a rejected value.
struct ValueCase {
  const char* variable;
  const char* value;
  const char* key;
  nlohmann::json taken;
};

TEST(Config, EveryKindOfValueIsStrict) {
  const ValueCase cases[] = {
      // integers: decimal digits only
      {"GPUMEMPROF_STACKS", "8", "stacks", 8},
      {"GPUMEMPROF_STACKS", "008", "stacks", 8},
      {"GPUMEMPROF_STACKS", " 5", nullptr, nullptr},
      {"GPUMEMPROF_STACKS", "5 ", nullptr, nullptr},
      {"GPUMEMPROF_STACKS", "\t5", nullptr, nullptr},
      {"GPUMEMPROF_STACKS", "5\n", nullptr, nullptr},
      {"GPUMEMPROF_STACKS", "+5", nullptr, nullptr},
      {"GPUMEMPROF_STACKS", "-1", nullptr, nullptr},
      {"GPUMEMPROF_STACKS", "0x10", nullptr, nullptr},
      {"GPUMEMPROF_STACKS", "5.0", nullptr, nullptr},
      {"GPUMEMPROF_STACKS", "", nullptr, nullptr},
      {"GPUMEMPROF_SAMPLE_MS", "1e3", nullptr, nullptr},
      {"GPUMEMPROF_OOM_EVENTS", "18446744073709551616", nullptr, nullptr},  // overflow
      {"GPUMEMPROF_RING_EVENTS", "4096", "ring_events", 4096},
      {"GPUMEMPROF_RING_EVENTS", " 4096", nullptr, nullptr},
      // numbers: decimal digits with at most one point between digits
      {"GPUMEMPROF_WARN_PERCENT", "70.5", "warn_percent", 70.5},
      {"GPUMEMPROF_WARN_PERCENT", "80", "warn_percent", 80.0},
      {"GPUMEMPROF_WARN_PERCENT", " 80", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", "80 ", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", "+80", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", "8e1", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", "80%", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", ".5", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", "5.", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", "inf", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", "nan", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", "0x50", nullptr, nullptr},
      {"GPUMEMPROF_WARN_PERCENT", "", nullptr, nullptr},
      {"GPUMEMPROF_FRAGMENTATION", "0.25", "fragmentation", 0.25},
      {"GPUMEMPROF_FRAGMENTATION", "-0.5", nullptr, nullptr},
      // sizes
      {"GPUMEMPROF_LEAK_BYTES", "512M", "leak_bytes", 512ull << 20},
      {"GPUMEMPROF_LEAK_BYTES", "512 M", nullptr, nullptr},
      {"GPUMEMPROF_LEAK_BYTES", " 512M", nullptr, nullptr},
      {"GPUMEMPROF_LEAK_BYTES", "0", nullptr, nullptr},
      // booleans and names: exact words in any case, nothing around them
      {"GPUMEMPROF_PYTHON_STACKS", "Off", "python_stacks", false},
      {"GPUMEMPROF_PYTHON_STACKS", " off", nullptr, nullptr},
      {"GPUMEMPROF_PYTHON_STACKS", "off ", nullptr, nullptr},
      {"GPUMEMPROF_LOG_LEVEL", "Warning", "log_level", "warn"},
      {"GPUMEMPROF_LOG_LEVEL", "info ", nullptr, nullptr},
      {"GPUMEMPROF_TENSOR_STACKS", "all", "tensor_stacks", "all"},
      {"GPUMEMPROF_TENSOR_STACKS", "Python", "tensor_stacks", "python"},
      {"GPUMEMPROF_TENSOR_STACKS", "native", nullptr, nullptr},
      {"GPUMEMPROF_TENSOR_STACKS", "", nullptr, nullptr},
      // paths: anything but nothing
      {"GPUMEMPROF_OUTPUT", " run.%p", "output", " run.%p"},
      {"GPUMEMPROF_OUTPUT", "", nullptr, nullptr},
      {"GPUMEMPROF_OUTPUT", " \t ", nullptr, nullptr},
      {"GPUMEMPROF_OOM_DIR", "", nullptr, nullptr},
      {"GPUMEMPROF_METRICS_DIR", " prom", "metrics_dir", " prom"},
      {"GPUMEMPROF_METRICS_DIR", "", nullptr, nullptr},
      {"GPUMEMPROF_METRICS_DIR", "  ", nullptr, nullptr},
      // the metrics interval: 100 ms to an hour
      {"GPUMEMPROF_METRICS_INTERVAL_MS", "100", "metrics_interval_ms", 100},
      {"GPUMEMPROF_METRICS_INTERVAL_MS", "3600000", "metrics_interval_ms", 3600000},
      {"GPUMEMPROF_METRICS_INTERVAL_MS", "99", nullptr, nullptr},
      {"GPUMEMPROF_METRICS_INTERVAL_MS", "3600001", nullptr, nullptr},
      {"GPUMEMPROF_METRICS_INTERVAL_MS", "5s", nullptr, nullptr},
  };
  const Config defaults = parse({});
  for (const ValueCase& k : cases) {
    const Config c = parse({{k.variable, k.value}});
    const std::string what = std::string(k.variable) + "='" + k.value + "'";
    if (k.key != nullptr) {
      EXPECT_TRUE(c.errors.empty()) << what;
      EXPECT_EQ(to_json(config_record(c))[k.key], k.taken) << what;
      continue;
    }
    EXPECT_EQ(config_record(c), config_record(defaults)) << what;
    ASSERT_EQ(c.errors.size(), 1u) << what;
    EXPECT_EQ(c.errors[0].find(std::string("invalid ") + k.variable + "='"), 0u) << c.errors[0];
    EXPECT_EQ(c.errors[0].find('\n'), std::string::npos) << c.errors[0];
  }
}

TEST(Config, ABadValueIsEchoedOnOneLineEscapedAndCapped) {
  struct Echo {
    std::string value, shown;
  };
  const Echo cases[] = {
      {"12\nfoo", "12\\nfoo"},
      {"a\tb\rc", "a\\tb\\rc"},
      {"x\x01\x7f\xe9\xff", "x\\x01\\x7f\\xe9\\xff"},
      {"it's", "it\\'s"},
      {"back\\slash", "back\\\\slash"},
      {std::string(100, 'z'), std::string(64, 'z') + "..."},
      {std::string(63, 'z') + "\n", std::string(63, 'z') + "\\n"},
  };
  for (const Echo& e : cases) {
    const Config c = parse({{"GPUMEMPROF_RING_EVENTS", e.value}});
    ASSERT_EQ(c.errors.size(), 1u);
    EXPECT_EQ(c.errors[0], "invalid GPUMEMPROF_RING_EVENTS='" + e.shown +
                               "': expected a power of two from 1024 to 67108864; using the default 1048576");
  }
}

}  // namespace
}  // namespace gmp
