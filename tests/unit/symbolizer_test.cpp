// The symbolizer on real code: a library built with -g and without inlining (symbol_fixture.cpp)
// is dlopened, its call chain captures its own return addresses, and they must come back as the
// chain's function names, demangled, with file:line when addr2line is installed. Then the ways a
// file can fail us (stripped, replaced, missing) and the merge of Python frames.
#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "elf_symbols.h"
#include "source_lines.h"
#include "symbolizer.h"

namespace gmp::analysis {
namespace {

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// Module records for every object loaded in this process, as the collector writes them; the path
// of the object whose base is `replace_base` is swapped for `replace_path` (a copy on disk) and
// given `build_id`.
std::string module_lines(uint64_t replace_base = 0, const std::string& replace_path = "", const std::string& build_id = "") {
  struct Ctx {
    std::string out;
    uint64_t replace_base;
    std::string replace_path, build_id;
    bool first = true;
  } ctx{"", replace_base, replace_path, build_id};
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* arg) -> int {
        auto* c = static_cast<Ctx*>(arg);
        uint64_t start = UINT64_MAX, end = 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_LOAD) continue;
          start = std::min<uint64_t>(start, info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
          end = std::max<uint64_t>(end, info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + info->dlpi_phdr[i].p_memsz);
        }
        std::string path = info->dlpi_name ? info->dlpi_name : "";
        if (path.empty() && c->first) path = std::filesystem::read_symlink("/proc/self/exe");
        c->first = false;
        if (path.empty() || end == 0) return 0;
        std::string id;
        if (c->replace_base != 0 && info->dlpi_addr == c->replace_base) {
          path = c->replace_path;
          id = c->build_id;
        }
        c->out += nlohmann::json{{"type", "module"}, {"path", path}, {"base", hex(info->dlpi_addr)}, {"start", hex(start)},
                                 {"end", hex(end)}, {"build_id", id}}
                      .dump() +
                  "\n";
        return 0;
      },
      &ctx);
  return ctx.out;
}

using Chain = int (*)(void**, int);

struct Fixture {
  void* handle = nullptr;
  Chain chain = nullptr;
  uint64_t base = 0;
  Fixture() {
    handle = dlopen(GMP_SYMBOL_FIXTURE, RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) return;
    chain = reinterpret_cast<Chain>(dlsym(handle, "fixture_exported_level1"));
    Dl_info info{};
    if (chain != nullptr && dladdr(reinterpret_cast<void*>(chain), &info) != 0) {
      base = reinterpret_cast<uint64_t>(info.dli_fbase);
      // dli_fbase is where the file is mapped; the load bias is the same for a shared library
      // linked at address 0, which is how every shared library is linked.
    }
  }
  ~Fixture() {
    if (handle != nullptr) dlclose(handle);
  }
  // The chain's return addresses as a stack record (`entry`: another of the fixture's chains).
  std::string stack_line(uint32_t id, const char* entry = nullptr) const {
    void* frames[16];
    const Chain call = entry == nullptr ? chain : reinterpret_cast<Chain>(dlsym(handle, entry));
    const int n = call(frames, 16);
    nlohmann::json list = nlohmann::json::array();
    for (int i = 0; i < n; ++i) list.push_back(hex(reinterpret_cast<uint64_t>(frames[i])));
    return nlohmann::json{{"type", "stack"}, {"id", id}, {"frames", list}}.dump() + "\n";
  }
};

reader::Attribution parse(const std::string& text) {
  std::istringstream in(text);
  return reader::parse_attribution(in);
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// The stack from its first frame in `module` on. Under a sanitizer, backtrace() is intercepted
// and the interceptor is the innermost frame; the chain under test starts below it.
CallStack from_module(const CallStack& st, const std::string& module) {
  for (size_t i = 0; i < st.size(); ++i) {
    if (st[i].module == module) return CallStack(st.begin() + static_cast<long>(i), st.end());
  }
  return {};
}

// An inlined function is a frame of its own, named by its own function and line, in reports, flame
// graphs and folded stacks alike: not its caller's name again.
TEST(Symbolizer, AnInlinedFunctionIsAFrameOfItsOwn) {
  if (!addr2line_available()) GTEST_SKIP() << "no addr2line: inline chains need it";
  Fixture f;
  ASSERT_NE(f.chain, nullptr) << dlerror();
  const reader::Attribution a = parse(module_lines() + f.stack_line(1, "fixture_inlined_level1"));
  Symbolizer s(a, SymbolizerOptions{true});
  StackTable t = s.symbolize({1});
  const CallStack st = from_module(t[1], GMP_SYMBOL_FIXTURE);
  ASSERT_GE(st.size(), 2u);
  EXPECT_TRUE(starts_with(st[0].function, "fixture_ns::inlined_capture")) << st[0].label();
  EXPECT_TRUE(st[0].inlined);
  EXPECT_EQ(st[1].function, "fixture_inlined_level1") << st[1].label();
  EXPECT_FALSE(st[1].inlined);
  EXPECT_EQ(st[0].address, st[1].address) << "one return address, two frames";
  EXPECT_TRUE(starts_with(st[0].flame_name(), "fixture_ns::inlined_capture(void**, int) (symbol_fixture.cpp:"))
      << st[0].flame_name();
  EXPECT_TRUE(starts_with(st[1].flame_name(), "fixture_inlined_level1 (symbol_fixture.cpp:")) << st[1].flame_name();
}

TEST(Symbolizer, NamesTheFunctionsOfAKnownChain) {
  Fixture f;
  ASSERT_NE(f.chain, nullptr) << dlerror();
  const reader::Attribution a = parse(module_lines() + f.stack_line(1));
  for (bool lines : {false, true}) {
    Symbolizer s(a, SymbolizerOptions{lines});
    StackTable t = s.symbolize({1, 2});  // 2 is not in the file: left out
    EXPECT_EQ(t.count(2), 0u);
    ASSERT_EQ(t.count(1), 1u);
    const CallStack st = from_module(t[1], GMP_SYMBOL_FIXTURE);
    ASSERT_GE(st.size(), 4u);
    EXPECT_EQ(st[0].function.rfind("fixture_ns::Widget::capture(void**, int)", 0), 0u) << st[0].label();
    EXPECT_TRUE(starts_with(st[1].function, "fixture_static_level2")) << st[1].label();
    EXPECT_EQ(st[2].function, "fixture_exported_level1") << st[2].label();
    EXPECT_EQ(std::string(base_name(st[0].module)), std::string(base_name(GMP_SYMBOL_FIXTURE)));
    EXPECT_TRUE(starts_with(st[3].function, "gmp::analysis::")) << st[3].label();  // this test's body
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_TRUE(st[i].note.empty()) << st[i].label();
      EXPECT_FALSE(st[i].inlined);
      if (lines && addr2line_available()) {
        EXPECT_EQ(std::string(base_name(st[i].file)), "symbol_fixture.cpp") << st[i].label();
        EXPECT_GT(st[i].line, 10u) << st[i].label();
        EXPECT_NE(st[i].label().find("(symbol_fixture.cpp:"), std::string::npos) << st[i].label();
      } else {
        EXPECT_TRUE(st[i].file.empty());
        EXPECT_EQ(st[i].label(), st[i].function + " [" + std::string(base_name(GMP_SYMBOL_FIXTURE)) + "]");
      }
    }
  }
}

TEST(Symbolizer, ElfSymbolsReadsSymtabAndBuildId) {
  std::string why;
  auto elf = ElfSymbols::open(GMP_SYMBOL_FIXTURE, &why);
  ASSERT_NE(elf, nullptr) << why;
  EXPECT_TRUE(elf->has_symtab());
  EXPECT_TRUE(elf->has_debug_lines());
  EXPECT_GT(elf->symbol_count(), 3u);
  EXPECT_EQ(ElfSymbols::open("/nonexistent/libx.so", &why), nullptr);
  EXPECT_FALSE(why.empty());
  // A file that is not ELF, and one cut short after its header.
  char tmpl[] = "/tmp/gmp-elf-XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  const std::string text = "this is not an ELF file, just some text that is long enough for a header";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  EXPECT_EQ(ElfSymbols::open(tmpl, &why), nullptr);
  std::filesystem::copy_file(GMP_SYMBOL_FIXTURE, tmpl, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(tmpl, 200);
  auto cut = ElfSymbols::open(tmpl, &why);  // readable header, every section beyond the end
  ASSERT_NE(cut, nullptr);
  EXPECT_EQ(cut->symbol_count(), 0u);
  EXPECT_FALSE(cut->function_at(0x1000));
  std::remove(tmpl);
}

TEST(Symbolizer, ReplacedFileIsFlaggedNotMisnamed) {
  Fixture f;
  ASSERT_NE(f.chain, nullptr);
  const reader::Attribution a = parse(module_lines(f.base, GMP_SYMBOL_FIXTURE, "00112233445566778899") + f.stack_line(1));
  Symbolizer s(a);
  StackTable t = s.symbolize({1});
  const CallStack st = from_module(t[1], GMP_SYMBOL_FIXTURE);
  ASSERT_GE(st.size(), 3u);
  EXPECT_EQ(st[0].note, "[build-id mismatch]");
  EXPECT_TRUE(st[0].function.empty());
  char want[64];
  std::snprintf(want, sizeof want, "+0x%llx [build-id mismatch]", static_cast<unsigned long long>(st[0].offset));
  EXPECT_EQ(st[0].label(), std::string(base_name(GMP_SYMBOL_FIXTURE)) + want);
  EXPECT_EQ(st[0].offset, st[0].address - f.base);
}

TEST(Symbolizer, MissingAndStrippedFilesFallBack) {
  Fixture f;
  ASSERT_NE(f.chain, nullptr);
  {
    const reader::Attribution a = parse(module_lines(f.base, "/nonexistent/libgone.so") + f.stack_line(1));
    Symbolizer s(a);
    const CallStack st = from_module(s.symbolize({1})[1], "/nonexistent/libgone.so");
    ASSERT_GE(st.size(), 3u);
    EXPECT_EQ(st[0].note, "[file missing]");
    EXPECT_EQ(st[0].label().rfind("libgone.so+0x", 0), 0u) << st[0].label();
  }
  if (std::system("command -v objcopy >/dev/null 2>&1") != 0) GTEST_SKIP() << "objcopy (binutils) is not installed";
  char dir[] = "/tmp/gmp-strip-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string stripped = std::string(dir) + "/libstripped.so";
  ASSERT_EQ(std::system(("objcopy --strip-all " + std::string(GMP_SYMBOL_FIXTURE) + " " + stripped).c_str()), 0);
  const reader::Attribution a = parse(module_lines(f.base, stripped) + f.stack_line(1));
  Symbolizer s(a);
  const CallStack st = from_module(s.symbolize({1})[1], stripped);
  ASSERT_GE(st.size(), 3u);
  // .dynsym keeps the exported functions (the chain's entry, the class member); the static one is gone.
  EXPECT_EQ(st[2].function, "fixture_exported_level1");
  EXPECT_EQ(st[2].label(), "fixture_exported_level1 [libstripped.so]");
  EXPECT_EQ(st[1].label().rfind("libstripped.so+0x", 0), 0u) << st[1].label();
  std::filesystem::remove_all(dir);
}

TEST(Symbolizer, Demangles) {
  EXPECT_EQ(demangle("_ZN10fixture_ns6Widget7captureEPPvi"), "fixture_ns::Widget::capture(void**, int)");
  EXPECT_EQ(demangle("cuMemAlloc_v2"), "cuMemAlloc_v2");
  EXPECT_EQ(demangle("_Znot_really"), "_Znot_really");
}

TEST(Symbolizer, ParsesAddr2lineOutput) {
  const std::string out =
      "0x0000000000001139\n"
      "inner_inlined(int)\n"
      "/src/a.h:12\n"
      "outer(int)\n"
      "/src/a.cpp:40 (discriminator 3)\n"
      "0x0000000000002000\n"
      "??\n"
      "??:0\n";
  auto groups = parse_addr2line_output(out, 2);
  ASSERT_EQ(groups.size(), 2u);
  ASSERT_EQ(groups[0].size(), 2u);
  EXPECT_EQ(groups[0][0].function, "inner_inlined(int)");
  EXPECT_EQ(groups[0][0].file, "/src/a.h");
  EXPECT_EQ(groups[0][0].line, 12u);
  EXPECT_EQ(groups[0][1].line, 40u);
  EXPECT_TRUE(groups[1].empty());
  // Output that does not line up with the input is not trusted at all.
  auto bad = parse_addr2line_output(out, 3);
  ASSERT_EQ(bad.size(), 3u);
  EXPECT_TRUE(bad[0].empty());
}

// Files that do not exist, so every native frame is module+offset: what matters is which frames
// survive the merge and in which order.
TEST(Symbolizer, PythonFramesReplaceTheInterpreter) {
  const reader::Attribution a = parse(
      R"({"type":"module","path":"/opt/gmp/libgpumemprof.so","base":"0x10000","start":"0x10000","end":"0x20000","build_id":""})"
      "\n"
      R"({"type":"module","path":"/nonexistent/libc10_cuda.so","base":"0x100000","start":"0x100000","end":"0x200000","build_id":""})"
      "\n"
      R"({"type":"module","path":"/nonexistent/bin/python3.12","base":"0x400000","start":"0x400000","end":"0x500000","build_id":""})"
      "\n"
      R"({"type":"module","path":"/nonexistent/libc.so.6","base":"0x600000","start":"0x600000","end":"0x700000","build_id":""})"
      "\n"
      R"({"type":"pyframe","id":7,"file":"/work/model.py","function":"forward","line":42})"
      "\n"
      R"({"type":"pyframe","id":8,"file":"/work/train.py","function":"<module>","line":3})"
      "\n"
      R"({"type":"stack","id":1,"frames":["0x10010","0x10020","0x100100","0x100200","0x400100","0x400200","0x600100","py:7","py:8"]})"
      "\n"
      R"({"type":"stack","id":2,"frames":["0x10010","0x100100","0x400100","0x600100"]})"
      "\n"
      R"({"type":"stack","id":3,"frames":["0x10010","py:9"]})"
      "\n"
      R"({"type":"stack","id":4,"frames":["0x10010","0x10020"]})"
      "\n");
  Symbolizer s(a);
  StackTable t = s.symbolize({1, 2, 3, 4});
  std::vector<std::string> labels;
  for (const Frame& f : t[1]) labels.push_back(f.flame_name());
  EXPECT_EQ(labels, (std::vector<std::string>{"libc10_cuda.so+0x100", "libc10_cuda.so+0x200", "forward (model.py:42)",
                                              "<module> (train.py:3)"}));
  EXPECT_EQ(t[1][2].label(), "forward (model.py:42)");
  EXPECT_EQ(t[1][2].file, "/work/model.py");
  // Without Python frames the interpreter's native frames stay.
  labels.clear();
  for (const Frame& f : t[2]) labels.push_back(f.flame_name());
  EXPECT_EQ(labels, (std::vector<std::string>{"libc10_cuda.so+0x100", "python3.12+0x100", "libc.so.6+0x100"}));
  ASSERT_EQ(t[3].size(), 1u);
  EXPECT_EQ(t[3][0].note, "[unknown python frame]");
  EXPECT_TRUE(t[4].empty());  // nothing but the profiler's own frames
}

}  // namespace
}  // namespace gmp::analysis
