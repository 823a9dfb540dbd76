// Output for `gpumemprof export`: a buffered sink (stdout or a file) and the few text encoders the
// formats need. Exports are written by hand rather than through nlohmann::json because a trace
// can hold 10^7 events and building a JSON object per event would dominate the run time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <string_view>

namespace gmp::tool::exporter {

class Output {
 public:
  Output() = default;
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  // `path` empty or "-" means stdout. False with a one-line `error` when it cannot be opened.
  bool open(const std::string& path, std::string& error);
  // Formats append to this buffer and call written() after each record.
  std::string& buffer() { return buf_; }
  void written() {
    if (buf_.size() >= kFlushBytes) flush();
  }
  // Flushes and closes; false with `error` when any write to a file failed (disk full). Writes to
  // stdout are checked once for every command, at exit (main.cpp).
  bool finish(std::string& error);
  // Closes and removes a file that holds a partial export (the input turned out unreadable): only a
  // regular file, the one it opened.
  void abandon();
  const std::string& name() const { return name_; }

 private:
  static constexpr size_t kFlushBytes = 1 << 20;
  void flush();

  FILE* file_ = nullptr;
  bool owned_ = false;
  bool failed_ = false;
  int errno_ = 0;
  std::string name_;  // "stdout", or the file's path
  std::optional<std::pair<dev_t, ino_t>> written_file_;  // when the output is a regular file
  std::string buf_;
};

void append_u64(std::string& out, uint64_t v);
void append_i64(std::string& out, int64_t v);
void append_hex(std::string& out, uint64_t v);           // "0x1a2b"
void append_micros(std::string& out, uint64_t ns);       // ns as microseconds: "1234.567"
void append_json_string(std::string& out, std::string_view s);  // quoted, escaped, valid UTF-8
void append_csv_field(std::string& out, std::string_view s);    // RFC 4180: quoted only when needed

// One JSON object written in place: JsonObject o(out); o.u64("size", n); ...; o.close().
// key() alone starts a member whose value the caller writes (a nested JsonObject, say).
class JsonObject {
 public:
  explicit JsonObject(std::string& out) : out_(out) { out_ += '{'; }
  JsonObject& key(std::string_view k);
  JsonObject& u64(std::string_view k, uint64_t v) { key(k); append_u64(out_, v); return *this; }
  JsonObject& i64(std::string_view k, int64_t v) { key(k); append_i64(out_, v); return *this; }
  JsonObject& str(std::string_view k, std::string_view v) { key(k); append_json_string(out_, v); return *this; }
  JsonObject& boolean(std::string_view k, bool v) { key(k); out_ += v ? "true" : "false"; return *this; }
  JsonObject& null(std::string_view k) { key(k); out_ += "null"; return *this; }
  JsonObject& str_or_null(std::string_view k, std::string_view v) { return v.empty() ? null(k) : str(k, v); }
  void close() { out_ += '}'; }

 private:
  std::string& out_;
  bool first_ = true;
};

}  // namespace gmp::tool::exporter
