// The one way the tools open a file they read: run-directory files (manifest.json, summary.json,
// trace.gmpt, attribution.jsonl), OOM bundle files and the ELF objects a stack names. A FIFO, a
// device, a socket or a directory in place of one of them would block the tool forever or feed it
// endless bytes, and a sparse file (`truncate -s 1T trace.gmpt`) would take hours to read; both
// are refused here, with one line naming the file, before anything is read.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gmp::reader {

// Holes: gpumemprof writes its files by appending, so a hole means the file is not one of them.
// ELF objects may legitimately be sparse (long zero padding on a filesystem that punches it out).
enum class Holes { Refuse, Allow };

// An open regular file, closed on destruction.
class InputFile {
 public:
  InputFile() = default;
  ~InputFile();
  InputFile(InputFile&& other) noexcept;
  InputFile& operator=(InputFile&& other) noexcept;
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Opens `path` for reading without blocking (O_NONBLOCK: a FIFO with no writer would hang a
  // plain open), then refuses anything fstat() does not call a regular file, and with
  // Holes::Refuse a file with a hole (lseek SEEK_HOLE; a filesystem that cannot tell reports
  // none, and the trace reader's run-of-zeros check is the fallback). Symbolic links are followed:
  // the check applies to what they point at. False with error() set; missing() when the file
  // does not exist.
  bool open(const std::string& path, Holes holes = Holes::Refuse);

  int fd() const { return fd_; }
  uint64_t size() const { return size_; }  // at open
  bool missing() const { return missing_; }
  const std::string& error() const { return error_; }  // one line, naming the file
  int release();  // hands the descriptor to the caller (fdopen, mmap), who then closes it

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
  bool missing_ = false;
  std::string error_;
};

// The whole text of `path`, read through InputFile. nullopt with `file.error()`'s line in `error`,
// and `missing` set when the file does not exist (which callers often accept).
std::optional<std::string> read_input_text(const std::string& path, std::string& error, bool* missing = nullptr);

}  // namespace gmp::reader
