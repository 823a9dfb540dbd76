#include "elf_symbols.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "input_file.h"

namespace gmp::analysis {
namespace {

// A bounds-checked view of the mapped file.
struct View {
  const uint8_t* data;
  size_t size;

  template <typename T>
  const T* at(uint64_t offset, uint64_t count = 1) const {
    if (offset > size || count > (size - offset) / sizeof(T)) return nullptr;
    if (offset % alignof(T) != 0) return nullptr;  // mmap is page aligned; a corrupt offset may not be
    return reinterpret_cast<const T*>(data + offset);
  }
  // A NUL-terminated string at `offset` inside [table, table + table_size).
  std::string_view string(uint64_t table, uint64_t table_size, uint64_t offset) const {
    if (table > size || table_size > size - table || offset >= table_size) return {};
    const char* s = reinterpret_cast<const char*>(data + table + offset);
    const void* nul = std::memchr(s, '\0', table_size - offset);
    return nul == nullptr ? std::string_view() : std::string_view(s, static_cast<const char*>(nul) - s);
  }
};

std::string hex_bytes(const uint8_t* p, size_t n) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

// The GNU build id among the notes in [offset, offset + size), or "".
std::string build_id_in_notes(const View& v, uint64_t offset, uint64_t size) {
  if (offset > v.size || size > v.size - offset) return "";
  uint64_t p = offset;
  const uint64_t end = offset + size;
  while (p + sizeof(Elf64_Nhdr) <= end) {
    const auto* n = v.at<Elf64_Nhdr>(p);
    if (n == nullptr) return "";
    const uint64_t name = p + sizeof(Elf64_Nhdr);
    const uint64_t desc = name + ((uint64_t{n->n_namesz} + 3) & ~uint64_t{3});
    const uint64_t next = desc + ((uint64_t{n->n_descsz} + 3) & ~uint64_t{3});
    if (desc + n->n_descsz > end) return "";
    if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && std::memcmp(v.data + name, "GNU", 4) == 0) {
      return hex_bytes(v.data + desc, n->n_descsz);
    }
    p = next;
  }
  return "";
}

}  // namespace

std::unique_ptr<ElfSymbols> ElfSymbols::open(const std::string& path, std::string* why) {
  std::unique_ptr<ElfSymbols> elf(new ElfSymbols());
  if (!elf->load(path, true, why)) return nullptr;
  // A stripped file keeps only .dynsym (exported names); distributions ship the rest in a
  // separate debug file named by the build id.
  if (!elf->symtab_ && elf->build_id_.size() > 2) {
    const std::string debug =
        "/usr/lib/debug/.build-id/" + elf->build_id_.substr(0, 2) + "/" + elf->build_id_.substr(2) + ".debug";
    std::string ignored;
    if (access(debug.c_str(), R_OK) == 0 && elf->load(debug, false, &ignored)) elf->debug_file_ = debug;
  }
  elf->finish();
  return elf;
}

ElfSymbols::~ElfSymbols() {
  for (const Mapping& m : maps_) munmap(const_cast<uint8_t*>(m.data), m.size);
}

bool ElfSymbols::load(const std::string& path, bool main_file, std::string* why) {
  // The path comes from attribution.jsonl: a FIFO put in a library's place must not block us.
  reader::InputFile file;
  if (!file.open(path, reader::Holes::Allow)) {
    *why = file.error();
    return false;
  }
  if (file.size() < sizeof(Elf64_Ehdr)) {
    *why = "not an ELF file";
    return false;
  }
  const size_t size = file.size();
  void* p = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, file.fd(), 0);
  if (p == MAP_FAILED) {
    *why = std::strerror(errno);
    return false;
  }
  maps_.push_back({static_cast<const uint8_t*>(p), size});
  const View v{static_cast<const uint8_t*>(p), size};
  const auto* eh = v.at<Elf64_Ehdr>(0);
  if (std::memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
      eh->e_ident[EI_DATA] != ELFDATA2LSB) {
    *why = "not a little-endian ELF64 file";
    return false;
  }

  uint64_t shnum = eh->e_shnum;
  uint64_t shstrndx = eh->e_shstrndx;
  const Elf64_Shdr* first =
      eh->e_shoff != 0 && eh->e_shentsize == sizeof(Elf64_Shdr) ? v.at<Elf64_Shdr>(eh->e_shoff) : nullptr;
  if (first != nullptr && shnum == 0) shnum = first->sh_size;  // more than 0xff00 sections
  if (first != nullptr && shstrndx == SHN_XINDEX) shstrndx = first->sh_link;
  const Elf64_Shdr* sh = first != nullptr ? v.at<Elf64_Shdr>(eh->e_shoff, shnum) : nullptr;
  if (sh == nullptr) shnum = 0;

  if (main_file) {
    for (uint64_t i = 0; i < shnum && build_id_.empty(); ++i) {
      if (sh[i].sh_type == SHT_NOTE) build_id_ = build_id_in_notes(v, sh[i].sh_offset, sh[i].sh_size);
    }
    // Without section headers, the notes are still reachable through the program headers.
    const auto* ph = eh->e_phentsize == sizeof(Elf64_Phdr) ? v.at<Elf64_Phdr>(eh->e_phoff, eh->e_phnum) : nullptr;
    for (uint64_t i = 0; ph != nullptr && i < eh->e_phnum && build_id_.empty(); ++i) {
      if (ph[i].p_type == PT_NOTE) build_id_ = build_id_in_notes(v, ph[i].p_offset, ph[i].p_filesz);
    }
  }

  const Elf64_Shdr* names = shstrndx < shnum ? &sh[shstrndx] : nullptr;
  for (uint64_t i = 0; i < shnum; ++i) {
    const Elf64_Shdr& s = sh[i];
    if (names != nullptr && s.sh_type == SHT_PROGBITS &&
        v.string(names->sh_offset, names->sh_size, s.sh_name) == ".debug_line") {
      debug_lines_ = true;
    }
    if (s.sh_type != SHT_SYMTAB && s.sh_type != SHT_DYNSYM) continue;
    if (s.sh_entsize != sizeof(Elf64_Sym) || s.sh_link >= shnum) continue;
    const Elf64_Shdr& strtab = sh[s.sh_link];
    const uint64_t count = s.sh_size / sizeof(Elf64_Sym);
    const auto* syms = v.at<Elf64_Sym>(s.sh_offset, count);
    if (syms == nullptr) continue;
    if (s.sh_type == SHT_SYMTAB) symtab_ = true;
    for (uint64_t k = 0; k < count; ++k) {
      const Elf64_Sym& sym = syms[k];
      const int type = ELF64_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      std::string_view name = v.string(strtab.sh_offset, strtab.sh_size, sym.st_name);
      if (name.empty()) continue;
      const int bind = ELF64_ST_BIND(sym.st_info);
      const int rank = (bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 1 : 2) * 2 + (s.sh_type == SHT_SYMTAB ? 0 : 1);
      symbols_.push_back({sym.st_value, sym.st_size, name, rank});
    }
  }
  return true;
}

void ElfSymbols::finish() {
  std::sort(symbols_.begin(), symbols_.end(), [](const Symbol& a, const Symbol& b) {
    if (a.start != b.start) return a.start < b.start;
    if ((a.size != 0) != (b.size != 0)) return a.size != 0;  // a sized symbol says more
    return a.rank < b.rank;
  });
  symbols_.erase(std::unique(symbols_.begin(), symbols_.end(),
                             [](const Symbol& a, const Symbol& b) { return a.start == b.start; }),
                 symbols_.end());
}

std::optional<ElfSymbols::Function> ElfSymbols::function_at(uint64_t vaddr) const {
  auto it = std::upper_bound(symbols_.begin(), symbols_.end(), vaddr,
                             [](uint64_t a, const Symbol& s) { return a < s.start; });
  // The nearest symbol at or below vaddr; a few more back for functions that contain others
  // (a sized symbol ending below vaddr is not the answer, but may hide one that is).
  for (int back = 0; back < 8 && it != symbols_.begin(); ++back) {
    --it;
    if (it->size == 0) {
      if (back == 0) return Function{it->name, it->start};
      continue;
    }
    if (vaddr < it->start + it->size) return Function{it->name, it->start};
  }
  return std::nullopt;
}

}  // namespace gmp::analysis
