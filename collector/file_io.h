// Small POSIX file helpers: the profiler writes with raw descriptors so that nothing is buffered
// in stdio (a forked child must never flush a copy of the parent's buffers) and writes survive a
// SIGKILL once write() has returned. Files are made in a directory held by descriptor
// (owned_dir.h), never by path, and nothing we open can block us: a FIFO planted under a name we
// use would otherwise stop the collector in open().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace gmp {

// RLIMIT_FSIZE's soft limit in bytes; UINT64_MAX when there is none.
uint64_t file_size_limit();
// Writes all of `data`, or nothing at all when it would cross RLIMIT_FSIZE (EFBIG: the kernel
// would otherwise send the program a SIGXFSZ that kills it).
bool write_all(int fd, const void* data, size_t size);

// Creates a new entry named `prefix` + six random characters in directory `dirfd` with `make(dirfd,
// name)` (an openat with O_CREAT | O_EXCL, a mkdirat, ...: a descriptor or 0 on success, -1 with
// errno), trying other names while one exists. Another user who can write into the directory
// cannot guess the name and take it first. Returns what `make` returned, `name` set; -1 with errno.
int create_unpredictable(int dirfd, const std::string& prefix, const std::function<int(int, const char*)>& make,
                         std::string& name);

// Writes `name` in directory `dirfd` atomically: a temporary file of an unpredictable name
// (".<name>.XXXXXX", exclusive, never through a symlink), renamed over `name`, with `mode` less
// the umask. False with errno set; no temporary is left.
bool write_file_atomic(int dirfd, const std::string& name, std::string_view content, mode_t mode = 0600);

}  // namespace gmp
