// libFuzzer target: live.bin as gpumemprof top reads it (format/live_file.h, tools/reader/live_reader.h,
// tools/gpumemprof/top_*.h). The input is a live file's bytes: read back through read_live_file from a
// file, its liveness judged, and rendered as top's table, JSON and detail. The magic, version and size
// are set so that every input reaches the renderers (a file without them is refused at the first
// check, which the first part also exercises with the raw bytes). Nothing may crash, hang or read out
// of bounds, whatever the counts, indices and texts say.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <memory>

#include "json_text.h"
#include "live_file.h"
#include "live_reader.h"
#include "top_detail.h"
#include "top_table.h"

namespace {

using gmp::live::LiveFile;

int file_of(const uint8_t* data, size_t size) {
  const int fd = memfd_create("live", MFD_CLOEXEC);
  if (fd >= 0 && size > 0 && write(fd, data, size) != static_cast<ssize_t>(size)) {
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = std::make_shared<LiveFile>();
  // The raw bytes, as the reader meets them.
  if (const int fd = file_of(data, size); fd >= 0) {
    gmp::live::read_live_file(fd, *f);
    close(fd);
  }
  // The same bytes made a live file of this version, rendered.
  std::memset(f.get(), 0, sizeof(LiveFile));
  std::memcpy(f.get(), data, size < sizeof(LiveFile) ? size : sizeof(LiveFile));
  std::memcpy(f->magic, gmp::live::kMagic, sizeof f->magic);
  f->version = gmp::live::kVersion;
  f->file_size = sizeof(LiveFile);
  f->seq &= ~1ull;
  const int fd = file_of(reinterpret_cast<const uint8_t*>(f.get()), sizeof(LiveFile));
  if (fd < 0) return 0;
  auto back = std::make_shared<LiveFile>();
  const bool read = gmp::live::read_live_file(fd, *back) == gmp::live::ReadResult::Ok;
  close(fd);
  if (!read) return 0;
  const uint64_t now = back->heartbeat_realtime_ns + 1'000'000'000;
  gmp::reader::ThisMachine here{"host", "boot", 1};
  gmp::reader::LiveScan scan;
  gmp::reader::LiveProcess p;
  p.run_dir = "/nonexistent/gpumemprof-fuzz";
  p.file = back;
  p.liveness = gmp::reader::liveness_of(*back, here, now);
  scan.processes.push_back(p);
  auto rows = gmp::tool::top::build_rows(scan, now);
  for (int column = 0; column < gmp::tool::top::kColumnCount; ++column) {
    gmp::tool::top::sort_rows(rows, column, column % 2 == 1);
  }
  for (size_t width : {size_t{20}, size_t{80}, size_t{400}}) gmp::tool::top::table_lines(rows, width);
  gmp::json_text(gmp::tool::top::scan_json(scan, now), 2);  // as top --json prints it
  gmp::tool::top::SiteLabels sites;
  for (bool utf8 : {true, false}) gmp::tool::top::detail_lines(p, now, 100, utf8, sites);
  return 0;
}
