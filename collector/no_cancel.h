// The calling thread's cancellation held off while we do our own I/O or wait for the collector on
// it. A program may pthread_cancel() a thread that is inside one of our wrappers; deferred
// cancellation would act at our open(), write() or nanosleep(), and the forced unwind would meet a
// noexcept frame of ours and call std::terminate. Held off, the request stays pending and acts at
// the program's next cancellation point, as it would have without us.
#pragma once

#include <pthread.h>

namespace gmp {

class NoCancel {
 public:
  NoCancel() { pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &saved_); }
  ~NoCancel() {
    int ignored;
    pthread_setcancelstate(saved_, &ignored);
  }
  NoCancel(const NoCancel&) = delete;
  NoCancel& operator=(const NoCancel&) = delete;

 private:
  int saved_ = PTHREAD_CANCEL_ENABLE;
};

}  // namespace gmp
