#include "export_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>

#include "json_text.h"
#include "output_streams.h"

namespace gmp::tool::exporter {

Output::~Output() {
  if (owned_ && file_ != nullptr) std::fclose(file_);
}

bool Output::open(const std::string& path, std::string& error) {
  if (path.empty() || path == "-") {
    stdout_carries_data();
    file_ = stdout;
    name_ = "stdout";
    return true;
  }
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    error = "cannot write " + path + ": " + std::strerror(errno);
    return false;
  }
  owned_ = true;
  name_ = path;
  struct stat st {};
  if (fstat(fileno(file_), &st) == 0 && S_ISREG(st.st_mode)) written_file_ = {st.st_dev, st.st_ino};
  return true;
}

void Output::flush() {
  if (!failed_ && !buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), file_) != buf_.size()) {
    failed_ = true;
    errno_ = errno;
  }
  buf_.clear();
}

bool Output::finish(std::string& error) {
  flush();
  if (!owned_) return true;  // stdout: main.cpp checks it
  if (!failed_ && std::fflush(file_) != 0) {
    failed_ = true;
    errno_ = errno;
  }
  if (std::fclose(file_) != 0 && !failed_) {
    failed_ = true;
    errno_ = errno;
  }
  file_ = nullptr;
  owned_ = false;
  if (failed_) error = "writing " + name_ + " failed: " + std::strerror(errno_);
  return !failed_;
}

void Output::abandon() {
  buf_.clear();
  if (!owned_) return;
  std::fclose(file_);
  file_ = nullptr;
  owned_ = false;
  // Only the regular file this export wrote, still at its path: never a device (-o /dev/null as
  // root) or whatever took the path's place meanwhile.
  struct stat st {};
  if (written_file_ && lstat(name_.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_dev == written_file_->first &&
      st.st_ino == written_file_->second) {
    unlink(name_.c_str());
  }
}

void append_u64(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_i64(std::string& out, int64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_hex(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v, 16);
  out += "0x";
  out.append(buf, r.ptr);
}

void append_micros(std::string& out, uint64_t ns) {
  append_u64(out, ns / 1000);
  const auto frac = static_cast<unsigned>(ns % 1000);
  out += '.';
  out += static_cast<char>('0' + frac / 100);
  out += static_cast<char>('0' + frac / 10 % 10);
  out += static_cast<char>('0' + frac % 10);
}

void append_json_string(std::string& out, std::string_view s) {
  // The common case, names and keys, is plain ASCII with nothing to escape: appended whole.
  // Anything else (escapes, UTF-8, bytes that are not UTF-8, as in a path) goes through the one
  // JSON encoder every tool output uses, which replaces invalid bytes with U+FFFD.
  const bool plain = std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u >= 0x20 && u < 0x80 && c != '"' && c != '\\';
  });
  if (plain) {
    out += '"';
    out.append(s.data(), s.size());
    out += '"';
    return;
  }
  out += json_text(nlohmann::json(std::string(s)));
}

void append_csv_field(std::string& out, std::string_view s) {
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out += s;
    return;
  }
  out += '"';
  for (const char c : s) {
    if (c == '"') out += '"';  // a quote inside a quoted field is doubled
    out += c;
  }
  out += '"';
}

JsonObject& JsonObject::key(std::string_view k) {
  if (!first_) out_ += ',';
  first_ = false;
  append_json_string(out_, k);
  out_ += ':';
  return *this;
}

}  // namespace gmp::tool::exporter
