// CHECK for programmer invariants (never for bad input, which gets an absl::Status).
// Debian 12's Abseil (20220623) predates absl/log, so fanout carries this small equivalent.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace fanout::base::internal {
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond) {
    stream_ << file << ":" << line << ": check failed: " << cond << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::fprintf(stderr, "%s\n", stream_.str().c_str());
    std::abort();
  }
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};
struct Voidify {
  void operator&(std::ostream&) {}
};
}  // namespace fanout::base::internal

#define FANOUT_CHECK(cond)                 \
  (cond) ? (void)0                         \
         : ::fanout::base::internal::Voidify() & \
               ::fanout::base::internal::CheckFailure(__FILE__, __LINE__, #cond).stream()

#ifdef NDEBUG
#define FANOUT_DCHECK(cond) \
  while (false) FANOUT_CHECK(cond)
#else
#define FANOUT_DCHECK(cond) FANOUT_CHECK(cond)
#endif
