#include "attribution_writer.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "file_io.h"
#include "intern_table.h"
#include "log.h"

namespace gmp {
namespace {

constexpr uint64_t kPythonFrameTag = 1ull << 63;  // as the shim writes Python frames (python_frames.h)

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string build_id_of(const dl_phdr_info* info) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
    const uint8_t* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const uint8_t* name = p + sizeof(ElfW(Nhdr));
      const uint8_t* desc = name + ((note->n_namesz + 3) & ~3u);
      if (desc + note->n_descsz > end) break;
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
        std::string out;
        char byte[3];
        for (uint32_t b = 0; b < note->n_descsz; ++b) {
          std::snprintf(byte, sizeof byte, "%02x", desc[b]);
          out += byte;
        }
        return out;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return "";
}

std::string executable_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string("[executable]");
}

}  // namespace

void AttributionWriter::write_line(const std::string& json) {
  if (failed_ || path_.empty()) return;
  if (!file_.is_open() && !file_.create(path_, /*exclusive=*/false)) {
    failed_ = true;
    log::error("cannot create {}: {}; stacks and range names are not saved", path_, std::strerror(errno));
    return;
  }
  // One write per record, so a killed process leaves whole lines and at most one partial last line.
  const std::string line = json + "\n";
  if (!file_.append(line.data(), line.size())) {
    failed_ = true;
    log::error("cannot write {}: {}; later stacks and range names are not saved", path_, std::strerror(errno));
    return;
  }
  ++records_;
}

bool AttributionWriter::first_time(uint32_t id) {
  if (id >= written_.size()) written_.resize(std::max<size_t>(id + 1, written_.size() * 2), false);
  if (written_[id]) return false;
  written_[id] = true;
  return true;
}

void AttributionWriter::note(const Event& e, uint64_t now_ns) {
  if (e.stack_id != 0 && first_time(e.stack_id)) write_stack(e.stack_id, now_ns);
  if ((e.op == Op::Mark || e.op == Op::RangePush) && e.address != 0 && e.address <= UINT32_MAX &&
      first_time(static_cast<uint32_t>(e.address))) {
    write_name(static_cast<uint32_t>(e.address));
  }
}

void AttributionWriter::write_stack(uint32_t id, uint64_t now_ns) {
  InternEntry entry;
  if (!intern_table().get(id, &entry) || entry.type != InternType::Stack) return;
  refresh_modules(now_ns);  // the stack's libraries are loaded now; note any new ones first
  nlohmann::json frames = nlohmann::json::array();
  for (uint32_t off = 0; off + sizeof(uint64_t) <= entry.length; off += sizeof(uint64_t)) {
    uint64_t f;
    std::memcpy(&f, entry.data + off, sizeof f);
    if (f & kPythonFrameTag) {
      const auto py = static_cast<uint32_t>(f & ~kPythonFrameTag);
      if (first_time(py)) write_pyframe(py);
      frames.push_back("py:" + std::to_string(py));
    } else {
      frames.push_back(hex(f));
    }
  }
  write_line(nlohmann::json{{"type", "stack"}, {"id", id}, {"frames", frames}}.dump());
}

void AttributionWriter::write_name(uint32_t id) {
  InternEntry entry;
  if (!intern_table().get(id, &entry) || entry.type != InternType::Name) return;
  const std::string name(reinterpret_cast<const char*>(entry.data), entry.length);
  write_line(nlohmann::json{{"type", "name"}, {"id", id}, {"name", name}}.dump(-1, ' ', false,
                                                                               nlohmann::json::error_handler_t::replace));
}

void AttributionWriter::write_pyframe(uint32_t id) {
  InternEntry entry;
  if (!intern_table().get(id, &entry) || entry.type != InternType::PyFrame) return;
  // file NUL function NUL line (4 bytes), as python_frames.cpp interns them.
  const char* text = reinterpret_cast<const char*>(entry.data);
  const size_t file_len = strnlen(text, entry.length);
  if (file_len + 1 + sizeof(int) > entry.length) return;
  const char* function = text + file_len + 1;
  const size_t function_len = strnlen(function, entry.length - file_len - 1 - sizeof(int));
  int line = 0;
  std::memcpy(&line, entry.data + entry.length - sizeof line, sizeof line);
  write_line(nlohmann::json{{"type", "pyframe"},
                            {"id", id},
                            {"file", std::string(text, file_len)},
                            {"function", std::string(function, function_len)},
                            {"line", line}}
                 .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void AttributionWriter::refresh_modules(uint64_t now_ns) {
  struct Scan {
    AttributionWriter* self;
    std::vector<Module> found;
    unsigned long long adds = 0, subs = 0;
    bool unchanged = false;
    uint64_t now_ns;
  } scan{this, {}, 0, 0, false, now_ns};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* arg) -> int {
        auto* s = static_cast<Scan*>(arg);
        if (s->found.empty() && size >= offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
          s->adds = info->dlpi_adds;
          s->subs = info->dlpi_subs;
          // The loader counts every load and unload: equal counters mean an unchanged module list.
          if (!s->self->modules_.empty() && s->adds == s->self->adds_ && s->subs == s->self->subs_) {
            s->unchanged = true;
            return 1;
          }
        }
        uint64_t start = UINT64_MAX, end = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD) continue;
          start = std::min<uint64_t>(start, info->dlpi_addr + ph.p_vaddr);
          end = std::max<uint64_t>(end, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        if (end == 0) return 0;
        std::string path = info->dlpi_name != nullptr && info->dlpi_name[0] != '\0' ? info->dlpi_name : "";
        if (path.empty()) path = s->found.empty() ? executable_path() : "[vdso]";
        Module m{path, info->dlpi_addr, start, end, true};
        bool known = false;
        for (Module& k : s->self->modules_) {
          if (k.present && k.base == m.base && k.path == m.path) known = true;
        }
        if (!known) {
          s->self->write_line(nlohmann::json{{"type", "module"},
                                             {"path", m.path},
                                             {"base", hex(m.base)},
                                             {"start", hex(m.start)},
                                             {"end", hex(m.end)},
                                             {"build_id", build_id_of(info)},
                                             {"seen_ns", s->now_ns}}
                                  .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
        }
        s->found.push_back(std::move(m));
        return 0;
      },
      &scan);
  if (scan.unchanged) return;
  for (Module& k : modules_) {
    if (!k.present) continue;
    bool still = false;
    for (const Module& f : scan.found) still = still || (f.base == k.base && f.path == k.path);
    if (!still) {
      k.present = false;
      write_line(nlohmann::json{{"type", "unloaded"}, {"path", k.path}, {"base", hex(k.base)}, {"unloaded_ns", now_ns}}.dump(
          -1, ' ', false, nlohmann::json::error_handler_t::replace));
    }
  }
  for (Module& f : scan.found) {
    bool known = false;
    for (const Module& k : modules_) known = known || (k.present && k.base == f.base && k.path == f.path);
    if (!known) modules_.push_back(std::move(f));
  }
  adds_ = scan.adds;
  subs_ = scan.subs;
}

}  // namespace gmp
