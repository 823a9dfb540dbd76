// libFuzzer target: every JSON the collector writes from outside data, fed arbitrary bytes through
// the functions the collector itself uses: manifest.json (process: exe, argv, cwd, host, rank;
// configuration: output template, alert command, OOM directory; device names), an OOM bundle's
// environment.json (process and redacted environment), the attribution.jsonl records that carry
// names and paths, and the alert JSON handed to GPUMEMPROF_ON_ALERT.
//
// The input, split at NUL bytes, gives the strings (those from argv, environ and C APIs never hold
// a NUL); the whole input is also a name, a module path and a raw Python frame entry. Each JSON
// text must come without an exception and parse back; a string that was valid UTF-8 must come
// back unchanged.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "alert_actions.h"
#include "attribution_records.h"
#include "device_table.h"
#include "json_text.h"
#include "json_views.h"
#include "manifest.h"
#include "oom_bundle.h"
#include "pyframe_entry.h"
#include "redact.h"

namespace {

std::vector<std::string> split_at_nul(const std::string& input) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t nul; (nul = input.find('\0', start)) != std::string::npos; start = nul + 1) parts.push_back(input.substr(start, nul - start));
  parts.push_back(input.substr(start));
  return parts;
}

bool is_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();  // the strict handler throws on invalid UTF-8
    return true;
  } catch (const nlohmann::json::type_error&) {
    return false;
  }
}

nlohmann::json parse_back(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) {
    std::fprintf(stderr, "not valid JSON: %s\n", text.c_str());
    std::abort();
  }
  return j;
}

// `written` holds `original` at `field`: unchanged when it was UTF-8.
void expect_kept(const nlohmann::json& written, const char* field, const std::string& original) {
  if (is_utf8(original) && written.at(field).get<std::string>() != original) {
    std::fprintf(stderr, "%s changed on the way through JSON\n", field);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::vector<std::string> parts = split_at_nul(input);
  auto part = [&parts](size_t i) { return parts[i % parts.size()]; };

  gmp::ProcessInfo info;
  info.exe = part(0);
  info.exe_name = part(0).substr(part(0).rfind('/') + 1);
  info.argv = parts;
  info.cwd = part(1);
  info.host = part(2);
  info.rank = part(3);
  gmp::Config config;
  config.output = part(4);
  config.on_alert = part(5);
  config.oom_dir = part(6);
  gmp::DeviceTable devices;
  const std::string device_name = part(7).substr(0, sizeof devices.entries[0].name - 1);
  std::memcpy(devices.entries[0].name, device_name.c_str(), device_name.size() + 1);

  const nlohmann::json manifest =
      parse_back(gmp::json_text(gmp::manifest_json(info, config, {devices.entry(0)}), 2));
  expect_kept(manifest, "exe", info.exe);
  expect_kept(manifest, "cwd", info.cwd);
  expect_kept(manifest, "host", info.host);
  expect_kept(manifest["config"], "output", config.output);
  expect_kept(manifest["devices"][0], "name", device_name);

  // environ as given (entries without '=' are skipped), and each part as a value.
  std::vector<std::string> entries = parts;
  for (size_t i = 0; i < parts.size(); ++i) entries.push_back("V" + std::to_string(i) + "=" + parts[i]);
  std::vector<char*> envp;
  for (std::string& e : entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  nlohmann::json environment = gmp::process_json(info);
  environment["environment"] = gmp::redacted_environment(envp.data());
  const nlohmann::json env_back = parse_back(gmp::json_text(environment, 2));
  // Values are redacted (redact.h) before they are written: what must survive is the redacted form.
  expect_kept(env_back["environment"], "V0", gmp::redact_env_value("V0", parts[0]));

  expect_kept(parse_back(gmp::json_text(to_json(gmp::NameLine{1, input}))), "name", input);
  if (auto frame = gmp::pyframe_from_entry(2, data, static_cast<uint32_t>(size))) {
    parse_back(gmp::json_text(to_json(*frame)));
  }
  expect_kept(parse_back(gmp::json_text(to_json(gmp::ModuleLine{input, 1, 2, 3, part(1), 4}))), "path", input);
  expect_kept(parse_back(gmp::json_text(to_json(gmp::UnloadedLine{input, 1, 2}))), "path", input);
  gmp::StackLine stack{3, {}};
  for (size_t i = 0; i + sizeof(uint64_t) <= size; i += sizeof(uint64_t)) {
    uint64_t word = 0;
    std::memcpy(&word, data + i, sizeof word);
    stack.frames.push_back(gmp::StackFrame::from_word(word));
  }
  parse_back(gmp::json_text(to_json(stack)));

  gmp::Alert alert{};
  alert.type = static_cast<gmp::AlertType>(1 + size % 4);
  alert.fired = size % 2 == 0;
  alert.allocated = size;
  alert.total = 1ull << 30;
  const nlohmann::json alert_back = parse_back(gmp::json_text(gmp::alert_json(alert, device_name, info, part(8), config)));
  expect_kept(alert_back, "run_dir", part(8));
  return 0;
}
