// libFuzzer target: the trace reader, the accounting replay and the tensor categories on arbitrary bytes.
//
// Each input is written as <tmp>/trace.gmpt twice: as given (so the header checks themselves are
// fuzzed), then behind a valid 64-byte header (so the fuzzer reaches the events without having to
// find the magic; an input that already starts with a header has it replaced). Each time the run
// directory is opened (no summary.json: the summary is rebuilt from the trace), the trace is read
// to the end with TraceReader and replayed through gmp::Accounting, and the summary is built and
// serialised. A third time the input follows a segment header whose checkpoint takes the input's
// first bytes (their number from the first two), so the checkpoint decoder
// (model/accounting_checkpoint.cpp) is fuzzed through TraceReader::seed(). Built by tests/fuzz/build.sh.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "accounting.h"
#include "category_json.h"
#include "category_levels.h"
#include "run_directory_reader.h"
#include "summary.h"
#include "summary_builder.h"
#include "trace_format.h"
#include "trace_reader.h"

namespace {

const std::string& work_dir() {
  static const std::string dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/gmp-fuzz-trace-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) std::abort();
    // A manifest naming two devices, so the rebuilt summary carries names.
    const std::string manifest =
        R"({"schema_version": 1, "tool": "gpumemprof", "pid": 1, "exe": "/bin/fuzz",
            "devices": [{"ordinal": 0, "name": "Fuzz 0", "total_bytes": 1073741824},
                        {"ordinal": 1, "name": "Fuzz 1", "total_bytes": 1073741824}]})";
    const std::string path = tmpl + "/manifest.json";
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || write(fd, manifest.data(), manifest.size()) != static_cast<ssize_t>(manifest.size())) std::abort();
    close(fd);
    return tmpl;
  }();
  static const bool cleanup = std::atexit([] {
    for (const char* f : {"/trace.gmpt", "/manifest.json"}) unlink((work_dir() + f).c_str());
    rmdir(work_dir().c_str());
  }) == 0;
  (void)cleanup;
  return dir;
}

void write_trace(const std::string& path, const void* prefix, size_t prefix_size, const uint8_t* data, size_t size) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) std::abort();
  if (prefix_size != 0 && write(fd, prefix, prefix_size) != static_cast<ssize_t>(prefix_size)) std::abort();
  if (size != 0 && write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  close(fd);
}

void exercise(const std::string& dir) {
  const std::string trace_path = dir + "/trace.gmpt";
  std::string error;
  if (auto run = gmp::reader::open_run_directory(dir, error)) {
    (void)run->summary.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }

  gmp::reader::TraceReader trace;
  gmp::Accounting acc;
  if (!trace.open(trace_path) || !trace.seed(acc)) return;
  // The tensor categories over the same events (labels, phases and tensors of any value), then
  // their levels in a second replay and the split of what is live at the end; and the collector's
  // live categorizer with a peak marked now and then.
  const gmp::reader::Attribution attribution;
  gmp::TensorCategories categories = gmp::analysis::replay_categories(attribution);
  gmp::TensorCategories live(gmp::TensorCategories::Use::Live, {});
  categories.start(acc);
  std::vector<gmp::Event> events;
  gmp::Event e;
  for (uint64_t i = 1; trace.next(e); ++i) {
    acc.apply(e);
    categories.add(e, i);
    live.add(e);
    if (i % 7 == 0) live.mark_peak(e.device);
    if (events.size() < 100000) events.push_back(e);
  }
  for (const auto& [ordinal, _] : acc.devices()) {
    (void)live.now(ordinal);
    (void)live.at_peak(ordinal);
  }
  categories.finish(true);
  gmp::analysis::CategoryLevels levels(categories);
  for (const gmp::Event& ev : events) levels.add(ev);
  for (const auto& [ordinal, _] : acc.devices()) {
    gmp::analysis::CategorySplit split = gmp::analysis::split_by_category(acc.live_tensors(), ordinal, categories, attribution);
    gmp::analysis::name_items(split, {}, 3);
    (void)gmp::analysis::category_split_json(split, true).dump();
  }
  (void)acc.live_allocations();
  (void)acc.live_at_exit();
  gmp::SummaryContext ctx;
  ctx.clean_exit = false;
  ctx.start_monotonic_ns = trace.header().start_monotonic_ns;
  (void)to_json(gmp::build_summary(acc, ctx)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& dir = work_dir();
  const std::string trace_path = dir + "/trace.gmpt";

  write_trace(trace_path, nullptr, 0, data, size);
  exercise(dir);

  const gmp::TraceHeader header = gmp::make_trace_header(1234, 1'000'000'000, 5'000);
  if (size >= sizeof header && std::memcmp(data, gmp::kTraceMagic, sizeof gmp::kTraceMagic) == 0) {
    data += sizeof header;
    size -= sizeof header;
  }
  write_trace(trace_path, &header, sizeof header, data, size);
  exercise(dir);

  if (size >= 2) {
    gmp::TraceHeader segment = gmp::make_trace_header(1234, 1'000'000'000, 5'000);
    segment.segment = 3;
    segment.first_event = 1000;
    segment.checkpoint_size = std::min<uint32_t>(static_cast<uint32_t>(data[0] | data[1] << 8), size - 2);
    write_trace(trace_path, &segment, sizeof segment, data + 2, size - 2);
    exercise(dir);
  }
  return 0;
}
