// format/manifest_record.h: manifest.json written by to_json() reads back the same through
// from_json(); fields that are missing or of the wrong type read as their documented defaults.
#include <gtest/gtest.h>

#include "event.h"
#include "json_text.h"
#include "manifest_record.h"

namespace gmp {
namespace {

using nlohmann::json;

ManifestRecord sample_manifest() {
  ProcessInfo info;
  info.pid = 4242;
  info.ppid = 1;
  info.exe = "/usr/bin/python3";
  info.exe_name = "python3";
  info.argv = {"python3", "train.py"};
  info.host = "node7";
  info.rank = "3";
  info.job = {"torchrun", 3, 1, 8, "job-17"};
  info.cwd = "/work";
  info.start_realtime_ns = 1'700'000'000'000'000'000;
  info.start_monotonic_ns = 55;
  info.cuda_driver_version = 12040;
  ManifestRecord m = process_manifest(info);
  m.tool_version = "0.9.0";
  m.start_time_utc = "2023-11-14T22:13:20.000Z";
  m.config.output = "runs/%p";
  m.config.log_level = "warn";
  m.config.sample_ms = 100;
  m.config.warn_percent = 80;
  m.config.oom_dir = "/scratch/oom";
  m.config.metrics_dir = "/var/lib/node_exporter";
  m.config.metrics_interval_ms = 5000;
  m.config.device_limit = "L4";
  m.devices = {{0, "Fake CUDA Device 0", 1ull << 34}, {2, "Fake CUDA Device 2", 1ull << 30}};
  return m;
}

TEST(ManifestRecord, RoundTrips) {
  const ManifestRecord m = sample_manifest();
  ManifestRecord back;
  ASSERT_TRUE(from_json(json::parse(json_text(to_json(m), 2)), back));
  EXPECT_EQ(back, m);
}

TEST(ManifestRecord, Text) {
  const json j = to_json(sample_manifest());
  EXPECT_EQ(json_text(j),
            R"({"argv":["python3","train.py"],"config":{"categories":true,"critical_percent":0.0,"device_limit":"L4","enable":true,)"
            R"("fragmentation":0.0,"leak_bytes":0,"live":true,"live_registry":null,"log_level":"warn",)"
            R"("metrics_dir":"/var/lib/node_exporter","metrics_interval_ms":5000,)"
            R"("on_alert":null,"oom_dir":"/scratch/oom","oom_events":0,)"
            R"("oom_max_dumps":0,"oom_max_total_mb":0,"oom_wait_ms":0,"output":"runs/%p","python_stacks":true,)"
            R"("ring_events":0,"sample_ms":100,"stacks":0,"tensor_stacks":"python","trace_max":0,"warn_percent":80.0},"cuda_driver_version":12040,)"
            R"("cwd":"/work","devices":[{"name":"Fake CUDA Device 0","ordinal":0,"total_bytes":17179869184},)"
            R"({"name":"Fake CUDA Device 2","ordinal":2,"total_bytes":1073741824}],"exe":"/usr/bin/python3",)"
            R"("host":"node7","invocation":null,"job_id":"job-17","launcher":"torchrun","local_rank":1,"pid":4242,"ppid":1,"rank":3,)"
            R"("schema_version":1,)"
            R"("start_monotonic_ns":55,"start_realtime_ns":1700000000000000000,)"
            R"("start_time_utc":"2023-11-14T22:13:20.000Z","tool":"gpumemprof","tool_version":"0.9.0",)"
            R"("trace":{"event_size":64,"file":"trace.gmpt","version":4},"world_size":8})");
}

TEST(ManifestRecord, ProcessJsonHasTheManifestsProcessKeys) {
  ProcessInfo info;
  info.pid = 7;
  info.argv = {"a"};
  info.rank = "0";  // no launcher: the job's fields are null
  EXPECT_EQ(json_text(process_json(info)),
            R"({"argv":["a"],"cuda_driver_version":0,"cwd":"","exe":"","host":"","invocation":null,"job_id":null,"launcher":null,)"
            R"("local_rank":null,"pid":7,"ppid":0,"rank":null,"world_size":null})");
}

TEST(ManifestRecord, NotAnObjectReadsAsAbsent) {
  ManifestRecord m = sample_manifest();
  EXPECT_FALSE(from_json(json::array(), m));
  EXPECT_EQ(m, ManifestRecord{});
  EXPECT_FALSE(from_json(json(), m));
  EXPECT_TRUE(from_json(json::object(), m));
  EXPECT_EQ(m, ManifestRecord{});
}

TEST(ManifestRecord, WrongTypesReadAsDefaults) {
  ManifestRecord m;
  ASSERT_TRUE(from_json(json::parse(R"({"pid":"4242","ppid":-1,"exe":null,"argv":["a",1,"b",null],"cwd":5,
      "host":["h"],"rank":"3","local_rank":-1,"world_size":"8","launcher":5,"job_id":7,"cuda_driver_version":"12","start_time_utc":1,"start_realtime_ns":-5,
      "start_monotonic_ns":1.5,"tool_version":{},"config":"odd","devices":[{"ordinal":"0","name":5,
      "total_bytes":-1},{"ordinal":40000,"name":"x","total_bytes":7},"not a device",{"ordinal":-1}]})"),
                        m));
  EXPECT_EQ(m.pid, std::nullopt);
  EXPECT_EQ(m.ppid, 0u);
  EXPECT_EQ(m.exe, "");
  EXPECT_EQ(m.argv, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(m.cwd, "");
  EXPECT_EQ(m.host, "");
  EXPECT_EQ(m.rank, 3u);  // the decimal string of manifests before the launcher fields
  EXPECT_EQ(m.local_rank, std::nullopt);
  EXPECT_EQ(m.world_size, std::nullopt);
  EXPECT_EQ(m.launcher, "");
  EXPECT_EQ(m.job_id, "");
  EXPECT_EQ(m.cuda_driver_version, 0);
  EXPECT_EQ(m.start_time_utc, "");
  EXPECT_EQ(m.start_realtime_ns, 0u);
  EXPECT_EQ(m.start_monotonic_ns, 0u);
  EXPECT_EQ(m.tool_version, "");
  EXPECT_EQ(m.config, ConfigRecord{});  // "config" not an object
  ASSERT_EQ(m.devices.size(), 4u);
  EXPECT_EQ(m.devices[0], DeviceEntry{});
  EXPECT_EQ(m.devices[1], (DeviceEntry{std::nullopt, "x", 7}));
  EXPECT_EQ(m.devices[2], DeviceEntry{});
  EXPECT_EQ(m.devices[3], (DeviceEntry{-1, std::nullopt, std::nullopt}));

  ASSERT_TRUE(from_json(json::parse(R"({"argv":{"0":"a"},"rank":null,"devices":{}})"), m));
  EXPECT_EQ(m.argv, std::nullopt);
  EXPECT_EQ(m.rank, std::nullopt);
  for (const char* rank : {R"("-1")", R"("3a")", R"("")", R"(" 3")", "1.5", "true"}) {
    ASSERT_TRUE(from_json(json::parse(std::string(R"({"rank":)") + rank + "}"), m));
    EXPECT_EQ(m.rank, std::nullopt) << rank;
  }
  EXPECT_TRUE(m.devices.empty());
  EXPECT_EQ(m.config, ConfigRecord{});
}

TEST(ConfigRecord, WrongTypesReadAsDefaults) {
  const json j = json::parse(R"({"enable":false,"output":7,"log_level":"info","ring_events":-1,"stacks":"16",
      "python_stacks":0,"sample_ms":250,"warn_percent":"80","critical_percent":97.5,"fragmentation":null,
      "leak_bytes":1024,"on_alert":["x"],"oom_dir":"oom","oom_events":10,"oom_max_dumps":2.5,
      "oom_max_total_mb":64,"oom_wait_ms":true,"metrics_dir":false,"metrics_interval_ms":2000,
      "device_limit":"0:24GiB","tensor_stacks":3})");
  ConfigRecord want;
  want.enable = false;
  want.log_level = "info";
  want.sample_ms = 250;
  want.critical_percent = 97.5;
  want.leak_bytes = 1024;
  want.oom_dir = "oom";
  want.oom_events = 10;
  want.oom_max_total_mb = 64;
  want.metrics_interval_ms = 2000;
  want.device_limit = "0:24GiB";
  EXPECT_EQ(config_record_from_json(&j), want);
  const json not_object = json::array();
  EXPECT_EQ(config_record_from_json(&not_object), ConfigRecord{});
  EXPECT_EQ(config_record_from_json(nullptr), ConfigRecord{});
  const json written = to_json(want);
  EXPECT_EQ(config_record_from_json(&written), want);
}

}  // namespace
}  // namespace gmp
