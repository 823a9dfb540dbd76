#include "attribution_writer.h"

#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "attribution_records.h"
#include "file_io.h"
#include "intern_table.h"
#include "json_text.h"
#include "log.h"
#include "pyframe_entry.h"
#include "records.h"

namespace gmp {
namespace {

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

void AttributionWriter::write_line(const nlohmann::json& record) {
  if (failed_ || closed_ || dir_ == nullptr) return;
  if (!file_.is_open() && !file_.create(*dir_, name_, /*exclusive=*/false)) {
    failed_ = true;
    log::error("cannot create {}: {}; stacks and range names are not saved", dir_->shown(name_),
               std::strerror(errno));
    return;
  }
  // One write per record, so a killed process leaves whole lines and at most one partial last line.
  const std::string line = json_text(record) + "\n";
  if (!file_.append(line.data(), line.size())) {
    failed_ = true;
    log::error("cannot write {}: {}; later stacks and range names are not saved", file_.path(), std::strerror(errno));
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
  if (const uint32_t name = NameRecord::from_event(e).name_id;
      (e.op == Op::Mark || e.op == Op::RangePush) && name != 0 && first_time(name)) {
    write_name(name);
  }
  if (const uint32_t label = TensorLabelRecord::from_event(e).name_id;
      e.op == Op::TensorLabel && label != 0 && first_time(label)) {
    write_name(label);
  }
}

void AttributionWriter::write_stack(uint32_t id, uint64_t now_ns) {
  InternEntry entry;
  if (!intern_table().get(id, &entry) || entry.type != InternType::Stack) return;
  refresh_modules(now_ns);  // the stack's libraries are loaded now; note any new ones first
  StackLine stack{id, stack_frames(entry.data, entry.length)};
  for (const StackFrame& f : stack.frames) {  // a Python frame's record goes before the first stack that names it
    const auto py = static_cast<uint32_t>(f.value);
    if (f.python && first_time(py)) write_pyframe(py);
  }
  write_line(to_json(stack));
}

void AttributionWriter::write_name(uint32_t id) {
  InternEntry entry;
  if (!intern_table().get(id, &entry) || entry.type != InternType::Name) return;
  write_line(to_json(NameLine{id, std::string(reinterpret_cast<const char*>(entry.data), entry.length)}));
}

void AttributionWriter::write_pyframe(uint32_t id) {
  InternEntry entry;
  if (!intern_table().get(id, &entry) || entry.type != InternType::PyFrame) return;
  if (auto line = pyframe_from_entry(id, entry.data, entry.length)) write_line(to_json(*line));
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
          s->self->write_line(to_json(ModuleLine{m.path, m.base, m.start, m.end, build_id_of(info), s->now_ns}));
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
      write_line(to_json(UnloadedLine{k.path, k.base, now_ns}));
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
