#include "symbolizer.h"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <map>
#include <set>

#include "elf_symbols.h"
#include "source_lines.h"

namespace gmp::analysis {
namespace {

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

}  // namespace

std::string_view base_name(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

bool is_profiler_module(std::string_view path) { return starts_with(base_name(path), "libgpumemprof"); }

bool is_interpreter_module(std::string_view path) {
  const std::string_view b = base_name(path);
  return starts_with(b, "python") || starts_with(b, "libpython");
}

namespace {

bool has_prefix_in(std::string_view path, std::initializer_list<std::string_view> prefixes) {
  const std::string_view b = base_name(path);
  for (std::string_view p : prefixes) {
    if (starts_with(b, p)) return true;
  }
  return false;
}

}  // namespace

bool is_framework_module(std::string_view path) {
  // PyTorch's caching allocator and dispatch live in c10 and libtorch, XLA's (JAX) in jaxlib.
  return has_prefix_in(path, {"libc10", "libtorch", "xla_extension", "libxla"});
}

bool is_runtime_module(std::string_view path) {
  return is_framework_module(path) ||
         has_prefix_in(path, {// The CUDA driver, runtime and math/communication libraries.
                              "libcuda.", "libcudart", "libcublas", "libcudnn", "libnccl", "libcufft", "libcurand",
                              "libcusparse", "libcusolver", "libnvrtc", "libnvJitLink", "libnvToolsExt", "libcupti",
                              "libnvidia-",
                              // The C and C++ runtime and the loader.
                              "libc.so", "libc-", "libstdc++", "libgcc_s", "libpthread", "libdl.", "ld-linux",
                              "libunwind"});
}

bool is_allocation_machinery(std::string_view function) {
  std::string lower(function);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return lower.find("alloc") != std::string::npos || lower.find("::empty") != std::string::npos ||
         lower.find("empty_") != std::string::npos;
}

bool is_library_python_file(std::string_view path) {
  if (starts_with(path, "<")) return true;  // "<frozen importlib._bootstrap>", "<string>"
  if (path.find("/site-packages/") != std::string_view::npos ||
      path.find("/dist-packages/") != std::string_view::npos) {
    return true;
  }
  // The standard library: .../lib/python3.12/<module>.py, also 3.13t (a venv or checkout is not under it).
  for (size_t lib = path.find("/lib/python"); lib != std::string_view::npos; lib = path.find("/lib/python", lib + 1)) {
    size_t i = lib + 11;
    if (i >= path.size() || path[i] < '0' || path[i] > '9') continue;
    while (i < path.size() && ((path[i] >= '0' && path[i] <= '9') || path[i] == '.' || path[i] == 't')) ++i;
    if (i < path.size() && path[i] == '/') return true;
  }
  return false;
}

std::string demangle(std::string_view name) {
  if (!starts_with(name, "_Z")) return std::string(name);
  const std::string mangled(name);
  int status = 0;
  char* out = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  if (out == nullptr || status != 0) {
    std::free(out);
    return mangled;
  }
  std::string result(out);
  std::free(out);
  return result;
}

namespace {
// "(model.py:42)", "(a.cpp)" when the line is unknown.
std::string where(const std::string& file, uint32_t line) {
  std::string s = " (" + std::string(base_name(file));
  if (line != 0) s += ":" + std::to_string(line);
  return s + ")";
}
}  // namespace

std::string Frame::label() const {
  std::string s;
  if (python) {
    s = flame_name();
  } else if (!function.empty()) {
    s = function + (file.empty() ? " [" + std::string(base_name(module)) + "]" : where(file, line));
  } else {
    s = flame_name();
  }
  if (!note.empty()) s += " " + note;
  return s;
}

std::string Frame::flame_name() const {
  if (python) return (function.empty() ? std::string("?") : function) + where(file, line);
  if (!function.empty()) return file.empty() ? function : function + where(file, line);
  if (!module.empty()) return std::string(base_name(module)) + "+" + hex(offset);
  return hex(address);
}

struct Symbolizer::File {
  std::unique_ptr<ElfSymbols> elf;
  std::string problem;  // why elf is null
};

Symbolizer::Symbolizer(const reader::Attribution& attribution, SymbolizerOptions options)
    : attribution_(attribution), options_(options) {}

Symbolizer::~Symbolizer() = default;

Symbolizer::File& Symbolizer::file(const std::string& path) {
  auto it = files_.find(path);
  if (it != files_.end()) return *it->second;
  auto f = std::make_unique<File>();
  f->elf = ElfSymbols::open(path, &f->problem);
  return *files_.emplace(path, std::move(f)).first->second;
}

StackTable Symbolizer::symbolize(const std::vector<uint32_t>& ids) {
  // A return address points after the call; the call itself is one byte earlier, which keeps a
  // call that ends a function (a noreturn callee) inside its own function and line.
  auto lookup_vaddr = [](uint64_t addr, const reader::ModuleRecord& m) {
    return addr > m.base ? addr - m.base - 1 : 0;
  };
  auto usable = [](const reader::ModuleRecord& m, File& f) {
    if (f.elf == nullptr) return false;
    // An object replaced on disk since the run: its symbols would name the wrong functions.
    return m.build_id.empty() || m.build_id == f.elf->build_id();
  };

  // Pass 1: the addresses each file needs lines for.
  std::map<std::string, std::set<uint64_t>> wanted;
  for (uint32_t id : ids) {
    const reader::StackRecord* rec = attribution_.stack(id);
    if (rec == nullptr) continue;
    for (const reader::StackFrame& sf : rec->frames) {
      if (sf.python) continue;
      const reader::ModuleRecord* m = attribution_.module_at(sf.value, rec->seq);
      if (m == nullptr || is_profiler_module(m->path)) continue;
      File& f = file(m->path);
      if (options_.source_lines && usable(*m, f) && f.elf->has_debug_lines()) {
        wanted[m->path].insert(lookup_vaddr(sf.value, *m));
      }
    }
  }
  // Pass 2: one addr2line per file.
  std::map<std::string, std::map<uint64_t, std::vector<SourceLine>>> lines;
  for (const auto& [path, addrs] : wanted) {
    const std::vector<uint64_t> list(addrs.begin(), addrs.end());
    auto resolved = resolve_source_lines(path, list);
    auto& out = lines[path];
    for (size_t i = 0; i < list.size(); ++i) out[list[i]] = std::move(resolved[i]);
  }

  // Pass 3: the frames.
  StackTable table;
  for (uint32_t id : ids) {
    const reader::StackRecord* rec = attribution_.stack(id);
    if (rec == nullptr || table.count(id)) continue;
    CallStack native, python;
    size_t interpreter = SIZE_MAX;  // index in `native` of the first interpreter frame
    for (const reader::StackFrame& sf : rec->frames) {
      if (sf.python) {
        Frame f;
        f.python = true;
        if (const reader::PyFrameRecord* py = attribution_.pyframe(static_cast<uint32_t>(sf.value))) {
          f.function = py->function;
          f.file = py->file;
          f.line = py->line > 0 ? static_cast<uint32_t>(py->line) : 0;
        } else {
          f.note = "[unknown python frame]";
        }
        python.push_back(std::move(f));
        continue;
      }
      Frame f;
      f.address = sf.value;
      const reader::ModuleRecord* m = attribution_.module_at(sf.value, rec->seq);
      if (m == nullptr) {
        native.push_back(std::move(f));
        continue;
      }
      if (is_profiler_module(m->path)) continue;
      if (interpreter == SIZE_MAX && is_interpreter_module(m->path)) interpreter = native.size();
      f.module = m->path;
      f.offset = sf.value - m->base;
      File& file_ref = file(m->path);
      if (file_ref.elf == nullptr) {
        f.note = "[file missing]";
        native.push_back(std::move(f));
        continue;
      }
      if (!usable(*m, file_ref)) {
        f.note = "[build-id mismatch]";
        native.push_back(std::move(f));
        continue;
      }
      const uint64_t vaddr = lookup_vaddr(sf.value, *m);
      if (auto fn = file_ref.elf->function_at(vaddr)) f.function = demangle(fn->name);
      const std::vector<SourceLine>* src = nullptr;
      if (auto lf = lines.find(m->path); lf != lines.end()) {
        if (auto la = lf->second.find(vaddr); la != lf->second.end() && !la->second.empty()) src = &la->second;
      }
      if (src == nullptr) {
        native.push_back(std::move(f));
        continue;
      }
      // addr2line -i: the innermost inlined function first, the function the code lies in last.
      for (size_t i = 0; i < src->size(); ++i) {
        Frame g = f;
        const bool outer = i + 1 == src->size();
        if (!(*src)[i].function.empty()) g.function = (*src)[i].function;
        else if (!outer) g.function.clear();
        g.file = (*src)[i].file;
        g.line = (*src)[i].line;
        g.inlined = !outer;
        native.push_back(std::move(g));
      }
    }
    // Python frames stand for the interpreter's native frames (and everything outside them).
    if (!python.empty() && interpreter != SIZE_MAX) native.resize(interpreter);
    for (Frame& f : python) native.push_back(std::move(f));
    table.emplace(id, std::move(native));
  }
  return table;
}

}  // namespace gmp::analysis
