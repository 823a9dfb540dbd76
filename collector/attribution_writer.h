// attribution.jsonl (docs/attribution.md): the stacks, names and Python frames that events refer
// to by id, and the module map that lets the tools symbolise return addresses. Each record is
// written before the first event that needs it reaches the trace, so a reader always finds it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "event.h"
#include "owned_file.h"

namespace gmp {

class AttributionWriter {
 public:
  // Where the file goes, created at the first record; `dir` must outlive the writer.
  void set_file(const OwnedDir& dir, std::string name) {
    dir_ = &dir;
    name_ = std::move(name);
  }
  // No more records (the process is ending): the descriptor is given back.
  void close() {
    closed_ = true;
    file_.close();
  }

  // Writes what `e` refers to that is not in the file yet (stack, range or mark name, a tensor label's name).
  void note(const Event& e, uint64_t now_ns);
  uint64_t records() const { return records_; }

 private:
  struct Module {
    std::string path;
    uint64_t base, start, end;
    bool present;
  };

  void write_line(const nlohmann::json& record);  // to_json() of a record of attribution_records.h
  bool first_time(uint32_t id);
  void write_stack(uint32_t id, uint64_t now_ns);
  void write_name(uint32_t id);
  void write_pyframe(uint32_t id);
  void refresh_modules(uint64_t now_ns);

  const OwnedDir* dir_ = nullptr;
  std::string name_;
  OwnedFile file_;
  bool failed_ = false;
  bool closed_ = false;
  std::vector<bool> written_;  // by intern id
  std::vector<Module> modules_;
  unsigned long long adds_ = 0, subs_ = 0;  // the loader's counters at the last refresh
  uint64_t records_ = 0;
};

}  // namespace gmp
