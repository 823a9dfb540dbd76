// Small POSIX file helpers: the profiler writes with raw descriptors so that nothing is buffered
// in stdio (a forked child must never flush a copy of the parent's buffers) and writes survive a
// SIGKILL once write() has returned.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace gmp {

// RLIMIT_FSIZE's soft limit in bytes; UINT64_MAX when there is none.
uint64_t file_size_limit();
// Writes all of `data`, or nothing at all when it would cross RLIMIT_FSIZE (EFBIG: the kernel
// would otherwise send the program a SIGXFSZ that kills it).
bool write_all(int fd, const void* data, size_t size);
// Writes `path` atomically (temporary file `path`.tmp + rename), with `mode` less the umask. False
// with errno set.
bool write_file_atomic(const std::string& path, std::string_view content, mode_t mode = 0600);

}  // namespace gmp
