#include "high_fd.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

namespace gmp {
namespace {

constexpr rlim_t kPreferred = 900;  // under the common soft limit of 1024
// Under a low limit, how far below its top we look for a free number: our own few descriptors
// sit there, and a program that filled the top itself is left alone.
constexpr int kTopSearch = 16;

}  // namespace

int move_high(int fd) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return fd;
  int high = -1;
  if (lim.rlim_cur > kPreferred) {
    high = fcntl(fd, F_DUPFD_CLOEXEC, static_cast<int>(kPreferred));
  } else {
    // F_DUPFD takes the lowest free number at or above its argument: asking from the last number
    // down finds the highest free one.
    const int top = static_cast<int>(lim.rlim_cur) - 1;
    for (int n = top; n > fd && n > top - kTopSearch && high < 0; --n) high = fcntl(fd, F_DUPFD_CLOEXEC, n);
  }
  if (high < 0) return fd;
  ::close(fd);
  return high;
}

}  // namespace gmp
